"""A scheduler that is not kube-scheduler (examples/python_scheduler.py) under `--sync settle`, on a mixed
workload: every job runs, none is given up while nodes sit idle.

It used to lose half of them: the example answers every pod event by patching PodScheduled=False on each
pending pod that does not fit (no-op patches, so no pod event), and only then binds; settle read the
silence after a completion as "settled" because every pending pod still carried its old mark, so at the
last completions the run gave the pending pods up ("0/4 nodes are available: Insufficient cpu") while
the scheduler was about to bind them (sync.py SettlePolicy._owed).
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from apiserver_support import ROOT, run_cli, start

from batkube_py.inputs.platforms import cluster_platform


@pytest.fixture(scope="module")
def controlplane(tmp_path_factory):
    cp = start(tmp_path_factory.mktemp("cp"))
    yield cp
    cp.down(remove=True)


def mixed(path: Path, n: int = 40) -> Path:
    """Jobs of 0.5 to 4 cpu on 4-cpu nodes, 30 to 200 s long, one every 3 s: pods wait, nodes free up
    at many instants and several pods fit the room a completion makes."""
    profiles, jobs = {}, []
    for i in range(n):
        cpu, delay = [1, 2, 3, 4, 0.5][i % 5], [60, 120, 45, 200, 90, 30][i % 6]
        name = f"p{cpu}_{delay}"
        profiles[name] = {"type": "delay", "delay": delay, "cpu": str(cpu), "scheduler": "python-scheduler"}
        jobs.append({"id": str(i + 1), "subtime": i * 3, "res": 1, "walltime": 10000, "profile": name})
    path.write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": profiles}))
    return path


def test_the_example_scheduler_runs_every_job_of_a_mixed_workload(controlplane, tmp_path: Path):
    platform = tmp_path / "p.xml"
    platform.write_text(cluster_platform(4, "4"))
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "examples" / "python_scheduler.py"), "--kubeconfig",
         str(controlplane.state().kubeconfig)],
        stdout=subprocess.DEVNULL, stderr=open(tmp_path / "sched.log", "wb"),
    )  # fmt: skip
    try:
        code, output, s = run_cli(
            tmp_path / "run", mixed(tmp_path / "w.json"), "--controlplane-dir", str(controlplane.dir),
            "--scheduler-name", "python-scheduler", platform=platform,
        )  # fmt: skip
    finally:
        proc.terminate()
        proc.wait(10)
    assert code == 0, output + (tmp_path / "sched.log").read_text()
    assert s["jobs_rejected"] == 0 and s["jobs_unfinished"] == 0, s
    assert s["jobs_succeeded"] == 40 and s["over_allocations"] == 0
    assert (tmp_path / "run" / "rejected.csv").read_text().count("\n") == 1  # the header alone
    with open(tmp_path / "run" / "pods.csv") as f:
        assert {p["state"] for p in csv.DictReader(f)} == {"Succeeded"}
