"""`batkube experiment run` end to end against the Batsim test double (embedded backend): the CI
acceptance of the thesis's burst / spaced / KIT experiments, resume, and spec errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from shared_support import shared

from batkube_py.cli.app import main
from batkube_py.experiments import spec

ROOT = Path(__file__).resolve().parents[1]
DOUBLE = str(ROOT / "tests" / "batsim_double" / "batsim")
EXPERIMENTS = ROOT / "experiments"


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["experiment", "run", *args, "--no-progress"], catch_exceptions=False)
    return result.exit_code, result.output


def embedded(name: str, out: Path, *extra: str) -> tuple[int, str]:
    shared("reference")  # the thesis's platforms and reference runs (BATKUBE_DATA_DIR, conftest.py)
    return run(str(EXPERIMENTS / f"{name}.yaml"), "--out", str(out), "--batsim", DOUBLE, "--repetitions", "1",
               "--variant", "embedded", "--variant", "embedded-k3s", "-j", "2", *extra)  # fmt: skip


def test_burst_end_to_end_and_resume(tmp_path: Path) -> None:
    code, output = embedded("burst", tmp_path)
    assert code == 0, output
    row = next(line for line in output.splitlines() if line.startswith("| burst"))
    # the ideal 2210.0 / 979.2 plus 0.02 s per decision instant (docs/protocol.md)
    assert "2210.3 / 979.3" in row
    assert "2467.2 ± 26.8 / 1076.7 ± 10.0" in row  # emulated k3s, the thesis's Table 4.1
    for f in ("table.md", "report.md", "runs.csv", "burst/comparison.md", "burst/compare_bars.png"):
        assert (tmp_path / f).is_file(), f
    result = tmp_path / "runs/burst/embedded/rep0/result.json"
    assert json.loads(result.read_text())["status"] == "ok"
    before = result.stat().st_mtime_ns
    code, _ = embedded("burst", tmp_path)
    assert code == 0
    assert result.stat().st_mtime_ns == before, "a finished run was redone instead of resumed"


def test_spaced_end_to_end(tmp_path: Path) -> None:
    code, output = embedded("spaced", tmp_path)
    assert code == 0, output
    row = next(line for line in output.splitlines() if line.startswith("| spaced"))
    assert "2280.3 / 57.7" in row
    assert "2468.3 ± 4.9 / 146.0 ± 1.6" in row


def test_kit_regenerated_from_swf(tmp_path: Path) -> None:
    code, output = embedded("kit", tmp_path)
    assert code == 0, output
    assert "32556.2 / 2884.3" in output  # the one emulated KIT run
    made = json.loads((tmp_path / "inputs/KIT_10h_80.json").read_text())
    ref = json.loads(shared("reference", "workloads", "KIT_10h_80.json").read_text())

    def jobs(doc: dict) -> list[tuple]:
        p = doc["profiles"]
        return sorted((j["id"], j["subtime"], p[j["profile"]]["delay"], float(p[j["profile"]]["cpu"]))
                      for j in doc["jobs"])  # fmt: skip

    assert jobs(made) == jobs(ref)


def test_dask_local_cluster(tmp_path: Path) -> None:
    shared("reference")
    burst = str(EXPERIMENTS / "burst.yaml")
    code, output = run(burst, "--out", str(tmp_path), "--batsim", DOUBLE, "--repetitions", "2",
                       "--variant", "embedded", "--executor", "dask", "-j", "2")  # fmt: skip
    assert code == 0, output
    assert "2210.3 ± 0.0 / 979.3 ± 0.0" in output
    assert len(list((tmp_path / "runs/burst/embedded").glob("rep*/result.json"))) == 2


def test_spec_errors_name_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: x\ncases: [{name: c, platform: p.xml, workload: w.json}]\n"
        "variants: [{name: v, backend: embedded}, {name: w, backend: apiserver, sync: {timeout_value: -1}}]\n"
    )
    with pytest.raises(spec.SpecError) as err:
        spec.load(bad)
    assert str(bad) in str(err.value) and "variants.1.sync.timeout_value" in str(err.value)
    bad.write_text(
        "name: x\ncases: [{name: c, platform: '${nope}/p.xml', workload: w.json}]\nvariants: [{name: v}]\n"
    )
    with pytest.raises(spec.SpecError, match=r"cases.0.platform: unknown variable \$\{nope\}"):
        spec.load(bad)


def test_missing_input_and_unknown_variant(tmp_path: Path) -> None:
    f = tmp_path / "e.yaml"
    f.write_text(
        "name: e\ncases: [{name: c, platform: nowhere.xml, workload: w.json}]\nvariants: [{name: v}]\n"
    )
    code, output = run(str(f), "--out", str(tmp_path / "o"))
    assert code != 0 and "cases.c.platform" in output and "nowhere.xml does not exist" in output
    shared("reference")
    code, output = run(str(EXPERIMENTS / "burst.yaml"), "--out", str(tmp_path / "o"), "--variant", "nope")
    assert code != 0 and "unknown variant(s) nope" in output


def test_apiserver_variants_need_the_control_plane(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from batkube_py.controlplane import build

    shared("reference")
    monkeypatch.setattr(build, "find_binaries", lambda: None)
    code, output = run(str(EXPERIMENTS / "burst.yaml"), "--out", str(tmp_path), "--batsim", DOUBLE)
    assert code != 0
    assert "apiserver" in output and "batkube controlplane build" in output and "--variant" in output
    assert not (tmp_path / "runs").exists(), "nothing may run when part of the campaign cannot"


def test_sigterm_stops_the_run_in_progress(tmp_path: Path) -> None:
    """A stopped runner must not leave its current run (and a real backend's control plane) behind: the
    run lives in a session of its own, so the runner passes the signal on."""
    import os
    import signal
    import subprocess
    import sys
    import time

    pidfile = tmp_path / "batsim.pid"
    fake = tmp_path / "batsim"
    fake.write_text(f"#!/bin/sh\necho $$ > {pidfile}\nexec sleep 300\n")
    fake.chmod(0o755)
    f = tmp_path / "e.yaml"
    f.write_text(
        f"name: e\ncases: [{{name: c, platform: {ROOT / 'platforms' / 'cluster_16x1core.xml'}, "
        f"workload: {ROOT / 'workloads' / 'burst_200_delay170.json'}}}]\nvariants: [{{name: v}}]\n"
    )
    runner = subprocess.Popen(
        [sys.executable, "-m", "batkube_py.cli", "experiment", "run", str(f), "--out", str(tmp_path / "o"),
         "--batsim", str(fake), "-j", "1", "--no-progress"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.1)
    batsim_pid = int(pidfile.read_text())
    runner.send_signal(signal.SIGTERM)
    assert runner.wait(timeout=30) != 0
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            os.kill(batsim_pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(batsim_pid, signal.SIGKILL)
        pytest.fail("the run's Batsim outlived the stopped experiment runner")
