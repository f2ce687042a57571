"""Per-queue waits and Jain's fairness index (analysis/tenants.py), in `batkube compare` and in an
experiment with a Kueue variant (`queues:`), on runs of the double."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from batkube_py.analysis import tenants
from batkube_py.analysis.commands import compare
from batkube_py.cli.app import main as batkube
from batkube_py.inputs.platforms import cluster_platform
from swf_tools.cli import main as swf_tools

TRACE = Path(__file__).parent / "fixtures" / "swf" / "tenants.swf"


def _jobs(waits: dict[str, float]) -> pd.DataFrame:
    return pd.DataFrame({
        "job_id": [f"w0!{j}" for j in waits], "starting_time": [1.0] * len(waits), "state": "succeeded",
        "waiting_time": list(waits.values()), "execution_time": 100.0,
        "turnaround_time": [w + 100.0 for w in waits.values()],
    })  # fmt: skip


def test_jain_and_per_queue_waits_by_hand():
    # LocalQueues a (jobs 1, 2), b (3), c (4); a and b in ClusterQueue X, c in Y
    tenancy = pd.DataFrame({"queue": ["a", "a", "b", "c"], "cluster_queue": ["X", "X", "X", "Y"]},
                           index=["1", "2", "3", "4"])  # fmt: skip
    out = tenants.tenant_metrics(_jobs({"1": 0.0, "2": 10.0, "3": 30.0, "4": 20.0}), tenancy)
    # mean waits a 5, b 30, c 20: (55)^2 / (3 * (25 + 900 + 400)) = 3025 / 3975
    assert out["jain_mean_waiting_time[queue]"] == pytest.approx(3025 / 3975)
    assert out["worst_mean_waiting_time[queue]"] == 30.0
    assert (out["mean_waiting_time[queue=a]"], out["max_waiting_time[queue=a]"]) == (5.0, 10.0)
    # X: 40/3 mean, 30 max; Y: 20. (100/3)^2 / (2 * (1600/9 + 400)) = 10000 / 10400
    assert out["jain_mean_waiting_time[cluster_queue]"] == pytest.approx(10000 / 10400)
    assert out["mean_waiting_time[cluster_queue=X]"] == pytest.approx(40 / 3)
    assert out["max_waiting_time[cluster_queue=Y]"] == 20.0
    # bounded slowdowns (w + 100) / 100: a 1.05, b 1.3, c 1.2
    expected = 3.55**2 / (3 * (1.05**2 + 1.3**2 + 1.2**2))
    assert out["jain_mean_bounded_slowdown[queue]"] == pytest.approx(expected)
    assert tenants.jain([0.0, 0.0]) == 1.0 and tenants.jain([5.0, 0.0, 0.0, 0.0]) == 0.25


def _runs(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    (tmp_path / "p.xml").write_text(cluster_platform(2, "4"))  # 8 cores: the 5 jobs queue
    workload = tmp_path / "w.json"
    result = CliRunner().invoke(swf_tools, ["convert", str(TRACE), "-o", str(workload), "--platform",
                                            str(tmp_path / "p.xml"), "--queue-from", "user",
                                            "--cluster-queue-from", "group", "--queueing-strategy",
                                            "StrictFIFO"])  # fmt: skip
    assert result.exit_code == 0, result.output
    queues = tmp_path / "w.queues.yaml"
    runs = []
    for name, extra in (("bare", []), ("kueue", ["--queues", str(queues)])):
        out = tmp_path / name
        args = ["run", "-p", str(tmp_path / "p.xml"), "-w", str(workload), "--batsim", "double",
                "-o", str(out), "--no-progress", *extra]  # fmt: skip
        result = CliRunner().invoke(batkube, args)
        assert result.exit_code == 0, result.output
        runs.append(out)
    return workload, queues, runs[0], runs[1]


def _table(args: list[str]) -> dict[str, dict[str, str]]:
    result = CliRunner().invoke(compare, [*args, "-f", "csv", "-q"])
    assert result.exit_code == 0, result.output
    return {row["metric"]: row for row in csv.DictReader(io.StringIO(result.output))}


def test_compare_cuts_a_run_without_kueue_by_the_workloads_queues(tmp_path: Path):
    workload, queues, bare, kueue = _runs(tmp_path)
    table = _table([str(bare), str(kueue), "-l", "bare,kueue", "--workload", str(workload), "--queues",
                    str(queues)])  # fmt: skip
    for key in ("jain_mean_waiting_time[cluster_queue]", "jain_mean_waiting_time[queue]",
                "mean_waiting_time[cluster_queue=group-2]", "max_waiting_time[queue=user-4-group-1]"):
        assert table[key]["bare_n"] == "1" and table[key]["kueue_n"] == "1", key
    # the bare run's figures are its own jobs' waits, cut by the workload: recompute user-3's from out_jobs
    jobs = pd.read_csv(bare / "out_jobs.csv", dtype={"job_id": str})
    wait3 = float(jobs.loc[jobs["job_id"] == "3", "waiting_time"].iloc[0])
    assert float(table["mean_waiting_time[queue=user-3]"]["bare_mean"]) == pytest.approx(wait3)
    # without --workload, the Kueue run's own pods.csv gives the same cut; the bare run has none
    own = _table([str(bare), str(kueue), "-l", "bare,kueue"])
    assert own["jain_mean_waiting_time[queue]"]["bare_n"] == "0"
    for key in ("jain_mean_waiting_time[queue]", "mean_waiting_time[cluster_queue=group-1]"):
        assert float(own[key]["kueue_mean"]) == pytest.approx(float(table[key]["kueue_mean"]))


def test_compare_refuses_queues_without_workload(tmp_path: Path):
    result = CliRunner().invoke(compare, [str(tmp_path), "--queues", str(TRACE)])
    assert result.exit_code != 0 and "give --workload too" in result.output


def test_experiment_variant_queues_and_per_queue_table(tmp_path: Path):
    (tmp_path / "t.swf").write_text(TRACE.read_text())
    convert = ["swf-tools", "convert", "t.swf", "--cores-per-node", "4", "--queue-from", "user",
               "--cluster-queue-from", "group", "--quota-cores", "8"]  # fmt: skip
    platform = ["batkube", "platform", "--nodes", "2", "--cores", "4", "-o", "{output}"]
    spec = {
        "name": "q", "table": {"per_queue": True},
        "cases": [{"name": "c", "platform": {"command": platform, "file": "p.xml"},
                   "workload": {"command": [*convert, "-o", "{output}"], "file": "w.json"}}],
        "variants": [{"name": "bare"}, {"name": "strict", "queues": {"command": [
            *convert, "--queueing-strategy", "StrictFIFO", "-o", "{output}.json", "--queues-out", "{output}"],
            "file": "strict.yaml"}}],
    }  # fmt: skip
    (tmp_path / "q.yaml").write_text(json.dumps(spec))
    out = tmp_path / "out"
    result = CliRunner().invoke(batkube, ["experiment", "run", str(tmp_path / "q.yaml"), "--out", str(out),
                                          "--batsim", "double", "-j", "1"])  # fmt: skip
    assert result.exit_code == 0, result.output
    argv = json.loads((out / "runs" / "c" / "strict" / "rep0" / "result.json").read_text())["argv"]
    assert argv[argv.index("--queues") + 1] == str(out / "inputs" / "strict.yaml")
    comparison = (out / "c" / "comparison.md").read_text()
    for row in ("| jain_mean_waiting_time[queue] |", "| mean_waiting_time[cluster_queue=group-1] |"):
        line = next(x for x in comparison.splitlines() if x.startswith(row))
        assert "—" not in line.split("|")[2:4], line  # both variants have the figure
