"""What the command line and the README tell a new user matches what exists: the experiment commands,
the packaged experiments, the Go release the control plane needs, and which steps need the internet."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from batkube_py.cli.app import main
from batkube_py.controlplane import build
from batkube_py.experiments import spec
from batkube_py.inputs import datasets

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r.exit_code, r.output


def test_experiment_help_names_only_commands_that_exist() -> None:
    code, text = cli("experiment", "--help")
    assert code == 0
    commands = set(re.findall(r"^  (\w+)\s", text.split("Commands:")[1], re.M))
    assert commands == {"check", "list", "run"}
    summary = text.split("Options:")[0]
    assert not re.findall(r"\b(resume|tabulate|plot)\b", summary), summary
    assert all(c in summary for c in commands)


def test_experiment_run_help_names_every_packaged_experiment() -> None:
    code, text = cli("experiment", "run", "--help")
    assert code == 0
    flat = " ".join(text.split())
    for name in spec.packaged():
        assert re.search(rf"\b{name}\b", flat), name
    assert "gangs" in flat and "racks" in flat


def _go_requirements() -> list[tuple[str, str]]:
    files = [ROOT / "README.md", *ROOT.glob("docs/**/*.md"), *ROOT.glob("batkube_py/**/*.py"),
             *ROOT.glob(".ci/*"), *ROOT.glob("tests/*.py")]  # fmt: skip
    found = []
    for f in files:
        if f.is_file() and f.name != Path(__file__).name:
            for v in re.findall(r"\bGo (?:>=|≥) ?(\d+\.\d+)", f.read_text(errors="replace")):
                found.append((str(f.relative_to(ROOT)), v))
    return found


def test_one_go_release_is_required_everywhere_and_it_is_the_modules_own() -> None:
    found = _go_requirements()
    assert {f for f, _ in found} >= {"README.md", "docs/concepts/backends.md", "docs/tutorials/thesis.md"}
    assert {v for _, v in found} == {build.GO_MIN}, found
    gomod = (build.GOBUILD / f"kube-{build.DEFAULT_KUBE_VERSION}" / "go.mod").read_text()
    assert re.search(r"^go (\d+\.\d+)", gomod, re.M)[1] == build.GO_MIN
    code, text = cli("controlplane", "build", "--help")
    assert code == 0 and f"Go >= {build.GO_MIN}" in " ".join(text.split())


def _tour_steps() -> dict[int, str]:
    readme = (ROOT / "README.md").read_text()
    tour = readme.split("## A 5-minute tour")[1].split("\n## ")[0]
    return {int(n): body for n, body in re.findall(r"^(\d+)\. (.*?)(?=^\d+\. |\Z)", tour, re.M | re.S)}


def test_the_tour_says_which_steps_need_the_internet() -> None:
    steps = _tour_steps()
    assert len(steps) >= 10
    online = {n for n, body in steps.items()
              if re.search(r"curl |controlplane build|experiment run", body)}  # fmt: skip
    assert {5, 7, 10} <= online
    for n in online:
        assert "internet" in steps[n], f"tour step {n} downloads but does not say it needs the internet"


def test_the_tour_writes_its_inputs_into_the_ignored_tour_folder() -> None:
    for n, body in _tour_steps().items():
        for out in re.findall(r"(?:-o|>) (\S+\.(?:xml|json|swf))", body):
            assert out.startswith("tour/"), f"tour step {n} writes {out} into the clone's root"
    assert "/tour/" in (ROOT / ".gitignore").read_text().split()


@pytest.fixture
def no_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BATKUBE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("BATKUBE_DATA_DIR", raising=False)
    monkeypatch.delenv("BATKUBE_OFFLINE", raising=False)
    return tmp_path


def _entry(output: str, name: str) -> str:
    return re.search(rf"^{name} .*?(?=^\S|\Z)", output, re.M | re.S)[0]


def test_experiment_list_describes_each_and_says_which_download(no_data: Path, monkeypatch) -> None:
    code, out = cli("experiment", "list")
    assert code == 0
    burst = _entry(out, "burst")
    assert "all submitted at t = 0" in burst
    assert "platform_graphene_16nodes.xml: downloaded on the first run" in burst
    assert "KIT-10-80.swf: cut from KIT-FH2-2016-1.swf, downloaded on the first run" in _entry(out, "kit")
    assert "no download" in _entry(out, "racks")
    online = r"need the internet once .*: burst, gangs, kit, queues, scale, spaced, sweeps, table41$"
    assert re.search(online, out, re.M)
    # a copy in BATKUBE_DATA_DIR (checksum waived here: not the real platform) is said to be there
    ds = datasets.DATASETS["platform_graphene_16nodes.xml"]
    monkeypatch.setitem(datasets.DATASETS, ds.name, ds.model_copy(update={"sha256": None}))
    (no_data / "data").mkdir()
    (no_data / "data" / ds.name).write_text("<platform/>")
    monkeypatch.setenv("BATKUBE_DATA_DIR", str(no_data / "data"))
    monkeypatch.setenv("BATKUBE_OFFLINE", "1")
    code, out = cli("experiment", "list")
    assert "platform_graphene_16nodes.xml: in BATKUBE_DATA_DIR" in _entry(out, "burst")
    assert "NASA-iPSC-1993-3.1-cln.swf: MISSING: not here and BATKUBE_OFFLINE=1" in _entry(out, "gangs")
    assert not re.search(r"^need the internet.*\bburst\b", out, re.M)


def test_experiment_check_and_run_errors_name_the_experiment(no_data: Path, monkeypatch) -> None:
    monkeypatch.setenv("BATKUBE_OFFLINE", "1")
    code, out = cli("experiment", "check", "racks", "burst", "gangs")
    assert code == 1
    assert "racks: 3 case(s)" in out
    burst = r"^burst: cases\.0\.platform: platform_graphene_16nodes\.xml: BATKUBE_OFFLINE=1"
    assert re.search(burst, out, re.M)
    assert re.search(r"^gangs: vars\.trace: NASA-iPSC-1993-3\.1-cln\.swf: BATKUBE_OFFLINE=1", out, re.M)
    code, out = cli("experiment", "run", "burst", "-o", str(no_data / "exp"), "--batsim", "double")
    assert code == 1 and "Error: burst: cases.0.platform: platform_graphene_16nodes.xml" in out
