"""Experiments by name from the package (a wheel has no experiments/ folder and no ../shared): the YAMLs
are package data, their inputs are generated or fetched by name, and the thesis's reference runs, when
not at hand, are replaced by its published figures with a note, never a failed report."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner
from shared_support import requires_shared

from batkube_py.analysis import compare as cmp
from batkube_py.cli.app import main
from batkube_py.experiments import spec, thesis
from batkube_py.inputs import datasets

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
needs_shared = requires_shared("reference")
NAMES = ["burst", "gangs", "kit", "queues", "racks", "scale", "spaced", "sweeps", "table41"]


def cli(*args: object) -> tuple[int, str]:
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r.exit_code, r.output


def test_the_experiments_are_package_data_and_the_clone_paths_point_at_them() -> None:
    assert list(spec.packaged()) == NAMES
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "files/*.yaml" in data["batkube_py.experiments"]
    for name, path in spec.packaged().items():
        assert (ROOT / "experiments" / f"{name}.yaml").resolve() == path.resolve()
        code = [line.split("#")[0] for line in path.read_text().splitlines()]
        assert not any("../" in line for line in code), f"{name}: a path relative to a checkout"
    code, output = cli("experiment", "list")
    assert code == 0 and all(f"{n} " in output for n in NAMES)
    code, output = cli("experiment", "run", "nope")
    assert code != 0 and "nope: no such experiment file, nor a packaged experiment" in output


@needs_shared
def test_every_packaged_experiment_validates_by_name() -> None:
    code, output = cli("experiment", "check", *NAMES)
    assert code == 0, output
    assert output.count("configuration(s)") == len(NAMES)


@needs_shared
def test_burst_by_name_without_the_reference_runs_shows_the_published_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The offline folder holds only the platform: no emulated or Batkube run of the thesis."""
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(datasets.path("platform_graphene_16nodes.xml"), data)
    monkeypatch.setenv("BATKUBE_DATA_DIR", str(data))
    monkeypatch.setenv("BATKUBE_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out"
    code, output = cli("experiment", "run", "burst", "-o", out, "--variant", "embedded", "-r", "1",
                       "--batsim", "double", "--no-progress")  # fmt: skip
    assert code == 0, output
    row = next(line for line in output.splitlines() if line.startswith("| burst"))
    assert "2210.3 / 979.3" in row
    assert "2467.2 ± 26.8 / 1076.7 ± 10.0 (published, 10 runs)" in row
    assert "2214.8 ± 0.5 / 970.1 ± 12.3 (published, 20 runs)" in row
    assert "reference 'emulated k3s' not available" in output
    report = (out / "report.md").read_text()
    assert thesis.CITATION in report and "Table 4.1" in report


def test_a_missing_reference_without_published_figures_says_so(tmp_path: Path) -> None:
    f = tmp_path / "e.yaml"
    f.write_text(
        f"name: e\ncases: [{{name: c, platform: {ROOT / 'platforms' / 'cluster_16x1core.xml'}, "
        f"workload: {ROOT / 'workloads' / 'burst_200_delay170.json'}, "
        "references: [{label: theirs, runs: ['nowhere/*_jobs.csv']}]}]\nvariants: [{name: v}]\n"
    )
    code, output = cli("experiment", "run", f, "-o", tmp_path / "o", "--batsim", "double", "--no-progress")
    assert code == 0, output
    row = next(line for line in output.splitlines() if line.startswith("| c |"))
    assert row == "| c | 2210.3 / 979.4 | reference not available |"  # the twin as kube-scheduler 1.37.2
    assert "reference 'theirs' not available" in output


@needs_shared
def test_the_reference_globs_pick_the_runs_the_thesis_aggregated() -> None:
    """deviation.r (oar-team/batkube-test) reads simu_0..19 (20 Batkube runs) and 0..9 (10 emulated runs)
    per workload: the globs pick exactly those, as thesis.TABLE_4_1's run counts say."""
    for name in ("burst", "spaced", "kit"):
        case = spec.load(spec.locate(name)).cases[0]
        for ref in case.references:
            paths = [p for pattern in ref.runs for p in cmp.expand(pattern)]
            assert len(paths) == thesis.TABLE_4_1[ref.published].runs, (name, ref.label)
