"""A preempted job of every profile type is resubmitted and runs again on real Batsim 4.2.1, and the run
ends as it does on the double.

Real Batsim died (SIGSEGV) at the EXECUTE_JOB of a resubmitted `composed` job: the adapter registered a
copy of the profile, and Batsim 4.2.1 resolves a composed profile's members only when it loads a
workload. `batkube run` now passes --enable-profile-reuse and the resubmitted job names the killed job's
own profile (adapter/disruption.py).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from batsim_messages import CONFIG, begins, decided, host, message, reply_events, submitted
from shared_support import real_batsim

from batkube_py.adapter.decision import DecisionProcess
from batkube_py.cluster.embedded import EmbeddedCluster
from batkube_py.inputs.platforms import cluster_platform
from batkube_py.runs.run import RunConfig, run

pytestmark = pytest.mark.timeout(300)
DOUBLE = str(Path(__file__).resolve().parent / "batsim_double" / "batsim")
WORK = 1e11  # flops: 100 s on the platform's 1-Gflop/s hosts
LOW = {
    "delay": {"type": "delay", "delay": 100},
    "composed": {"type": "composed", "seq": ["half", "inner"]},
    "parallel": {"type": "parallel", "cpu": [WORK, WORK], "com": [0, 1e6, 1e6, 0]},
    "parallel_homogeneous": {"type": "parallel_homogeneous", "cpu": WORK, "com": 1e6},
    "parallel_homogeneous_total": {"type": "parallel_homogeneous_total", "cpu": 2 * WORK, "com": 0},
}
SUBS = {
    "half": {"type": "delay", "delay": 50},
    "inner": {"type": "composed", "seq": ["quarter"], "repeat": 2},
    "quarter": {"type": "delay", "delay": 25},
}


def _inputs(tmp_path: Path, kind: str) -> tuple[Path, Path]:
    """Two 2-core hosts; a low-priority job of `kind` on both (a pod group of two for the parallel
    types) until a high-priority job needs a whole host at t=5."""
    res = 2 if kind.startswith("parallel") else 1
    low = {**LOW[kind], ("cpu" if kind == "delay" or kind == "composed" else "cpu_req"): "2"}
    jobs = [{"id": "low", "subtime": 0, "res": res, "profile": "low"}]
    if res == 1:
        jobs.append({"id": "other", "subtime": 0, "res": 1, "profile": "half", "cpu": "2", "priority": 50})
    jobs.append({"id": "hi", "subtime": 5, "res": 1, "profile": "high", "priority": 100})
    profiles = {"low": low, "high": {"type": "delay", "delay": 10, "cpu": "2"}, **SUBS}
    (tmp_path / "p.xml").write_text(cluster_platform(2, "2"))
    (tmp_path / "w.json").write_text(json.dumps({"nb_res": 2, "jobs": jobs, "profiles": profiles}))
    return tmp_path / "p.xml", tmp_path / "w.json"


def _run(tmp_path: Path, batsim: str, kind: str) -> tuple[dict, list[dict]]:
    platform, workload = _inputs(tmp_path, kind)
    out = tmp_path / Path(batsim).name
    summary = run(RunConfig(platform, workload, out, batsim=batsim, progress=False))
    return summary, list(csv.DictReader((out / "pods.csv").open()))


@pytest.mark.parametrize("kind", LOW)
def test_a_preempted_job_of_each_profile_type_runs_again_on_real_batsim(tmp_path, kind):
    batsim = real_batsim()
    summary, pods = _run(tmp_path, str(batsim), kind)
    assert summary["error"] is None and summary["batsim_exit_code"] == 0, summary["error"]
    assert summary["jobs_preempted"] == 1 and summary["jobs_resubmitted"] == 1
    again = next(r for r in pods if r["job_id"] == "w0!low#r1")
    assert again["state"] == "Succeeded" and float(again["finish_time"]) > 100
    double_summary, double_pods = _run(tmp_path, DOUBLE, kind)
    assert double_pods == pods
    assert double_summary["makespan"] == summary["makespan"]


def _process(reuse: bool) -> DecisionProcess:
    p = DecisionProcess(lambda nodes: EmbeddedCluster(nodes, seed=0))
    config = {**CONFIG, "dynamic-jobs-enabled": True, "dynamic-jobs-acknowledged": True,
              "profile-reuse-enabled": reuse}  # fmt: skip
    start = begins([host(0, core="2")], {"c": {"type": "composed", "seq": ["d"], "cpu": "2"}, **{
        "d": {"type": "delay", "delay": 100}, "h": {"type": "delay", "delay": 5, "cpu": "2"}}})  # fmt: skip
    start["data"]["config"] = config
    p.handle(message(0.0, start))
    assert decided(p, message(1.0, submitted(1.0, "w0!1", "c")))[0][0] == "EXECUTE_JOB"
    kill = decided(p, message(2.0, submitted(2.0, "w0!2", "h", priority=9)))
    assert ("KILL_JOB", {"job_ids": ["w0!1"]}) in kill
    return p


@pytest.mark.parametrize("reuse", [True, False], ids=["profile-reuse", "no-profile-reuse"])
def test_a_killed_composed_job_names_its_own_profile_or_is_not_resubmitted(reuse):
    p = _process(reuse)
    killed = {"timestamp": 2.1, "type": "JOB_KILLED", "data": {"job_ids": ["w0!1"], "job_progress": {}}}
    out = reply_events(p.handle(message(2.1, killed)))
    kinds = [kind for kind, _ in out]
    assert "REGISTER_PROFILE" not in kinds  # Batsim 4.2.1 cannot run a registered composed profile
    if reuse:
        job = next(data["job"] for kind, data in out if kind == "REGISTER_JOB")
        assert job["id"] == "w0!1#r1" and job["profile"] == "c"
    else:
        assert "REGISTER_JOB" not in kinds
        assert "composed profile again only with --enable-profile-reuse" in p.records["w0!1"].reason
