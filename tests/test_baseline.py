"""`batkube baseline run easy`: pybatsim 3.2.1's EASY backfilling as Batsim's decision process, from the
managed venv, on the double; walltimes derived or refused; an experiment variant running it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from batkube_py.cli.app import main as batkube
from batkube_py.experiments import plan, spec
from batkube_py.runs import RunError, baseline

ROOT = Path(__file__).resolve().parents[1]
SPACED = ROOT / "workloads" / "spaced_200_delay170.json"
PLATFORM = ROOT / "platforms" / "cluster_16x1core.xml"


@pytest.fixture(scope="module")
def pybatsim() -> Path:
    """The managed venv: built from the package registry once (cached); a clone offline skips, CI fails."""
    try:
        return baseline.build(log=lambda *a, **k: None)
    except RunError as exc:
        why = f"needs pybatsim {baseline.VERSION} from the package registry (offline?): {exc}"
        if os.environ.get("CI") == "true" or os.environ.get("BATKUBE_REQUIRE_SHARED") == "1":
            pytest.fail(why, pytrace=False)
        pytest.skip(why)


def _workload(tmp_path: Path, walltime: float | None) -> Path:
    doc = json.loads(SPACED.read_text())
    for job in doc["jobs"]:
        job.pop("walltime", None)
        if walltime is not None:
            job["walltime"] = walltime
    path = tmp_path / "w.json"
    path.write_text(json.dumps(doc))
    return path


def test_walltimes_are_refused_when_missing_and_derived_above_the_delay(tmp_path: Path):
    bare = _workload(tmp_path, None)
    with pytest.raises(RunError, match="job '1': field 'walltime': expected a positive number"):
        baseline.check_walltimes(bare)
    with pytest.raises(RunError, match="must be above 1"):
        baseline.with_walltimes(bare, 1.0, tmp_path / "x.json")
    derived = baseline.with_walltimes(bare, 1.01, tmp_path / "x.json")
    assert {j["walltime"] for j in json.loads(derived.read_text())["jobs"]} == {171.7}
    baseline.check_walltimes(derived)


def test_easy_on_the_spaced_workload_is_the_fcfs_schedule_of_identical_jobs(tmp_path: Path, pybatsim):
    """200 jobs of 170 s every 10 s on 16 hosts: with identical jobs EASY is FCFS, job i starting at
    max(10 i, start(i - 16) + 170); Batsim adds a few ms per decision."""
    result = CliRunner().invoke(batkube, ["baseline", "run", "easy", "-p", str(PLATFORM), "-w", str(SPACED),
                                          "-o", str(tmp_path / "run"), "--batsim", "double"])  # fmt: skip
    assert result.exit_code == 0, result.output
    start: list[float] = []
    for i in range(200):
        start.append(max(10.0 * i, start[i - 16] + 170 if i >= 16 else 0.0))
    waits = [s - 10.0 * i for i, s in enumerate(start)]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["decision_process"] == "pybatsim 3.2.1 easyBackfill"
    assert summary["batsim"] == "the Batsim 4.2.1 double" and summary["jobs_succeeded"] == 200
    assert summary["makespan"] == pytest.approx(start[-1] + 170, abs=0.1)  # 2280.0
    assert summary["mean_waiting_time"] == pytest.approx(sum(waits) / 200, abs=0.1)  # 57.6
    assert summary["max_waiting_time"] == pytest.approx(max(waits), abs=0.1)  # 120.0
    # `batkube compare` takes it as a run
    result = CliRunner().invoke(batkube, ["compare", str(tmp_path / "run"), "-q", "-m", "makespan"])
    assert result.exit_code == 0 and "2280.0" in result.output, result.output


def test_walltime_factor_in_a_copy_and_said_in_the_summary(tmp_path: Path, pybatsim):
    result = CliRunner().invoke(batkube, ["baseline", "run", "easy", "-p", str(PLATFORM), "-w",
                                          str(_workload(tmp_path, None)), "-o", str(tmp_path / "r"),
                                          "--batsim", "double"])  # fmt: skip
    assert result.exit_code != 0 and "--walltime-factor" in result.output
    result = CliRunner().invoke(batkube, ["baseline", "run", "easy", "-p", str(PLATFORM), "-w",
                                          str(_workload(tmp_path, None)), "-o", str(tmp_path / "r"),
                                          "--batsim", "double", "--walltime-factor", "1.01"])  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert "delay x 1.01" in summary["walltimes"] and summary["jobs_killed"] == 0


def test_an_experiment_variant_runs_the_baseline_with_its_args(tmp_path: Path):
    doc = {"name": "b", "cases": [{"name": "c", "platform": str(PLATFORM), "workload": str(SPACED)}],
           "variants": [{"name": "k8s"},
                        {"name": "easy", "baseline": "easy", "run_args": ["--walltime-factor", "2"]}]}
    (tmp_path / "b.yaml").write_text(json.dumps(doc))
    exp = spec.load(tmp_path / "b.yaml")
    tasks = {t.variant: t for t in plan.plan(exp, tmp_path, tmp_path / "out", batsim="double")}
    argv = tasks["easy"].argv
    assert argv[3:6] == ("baseline", "run", "easy") and "--walltime-factor" in argv
    assert "--backend" not in argv
    assert tasks["k8s"].argv[3] == "run"
    doc["variants"][1]["queues"] = "q.yaml"
    (tmp_path / "b.yaml").write_text(json.dumps(doc))
    with pytest.raises(spec.SpecError, match="a baseline runs without batkube: no queues"):
        spec.load(tmp_path / "b.yaml")
