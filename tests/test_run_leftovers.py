"""What a user finds after a run (issue 37 item 9): no stale lock file, no empty directory from a run
that failed before writing, a pointer to rejected.csv on the console, the simulator named in
summary.json, and `analyze` saying whose clock its waits are on when summary.json's differ."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from shared_support import shared

from batkube_py.runs import rundir

ROOT = Path(__file__).resolve().parents[1]
PLATFORM = ROOT / "platforms" / "cluster_16x1core.xml"
WORKLOAD = {
    "nb_res": 1,
    "jobs": [{"id": "1", "subtime": 0, "res": 1, "profile": "p"}, {"id": "2", "subtime": 1, "res": 1,
             "profile": "big"}],
    "profiles": {"p": {"type": "delay", "delay": 5, "cpu": "1"}, "big": {"type": "delay", "delay": 5,
                 "cpu": "100"}},
}  # fmt: skip


def _cli(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "batkube_py.cli", *args], capture_output=True, text=True,
                          timeout=180, cwd=tmp, env=env)  # fmt: skip


def _run(tmp: Path, out: str, batsim: str = "double") -> subprocess.CompletedProcess:
    w = tmp / "w.json"
    w.write_text(json.dumps(WORKLOAD))
    return _cli(tmp, "run", "-p", str(PLATFORM), "-w", str(w), "-o", str(tmp / out), "--batsim", batsim,
                "--no-progress")  # fmt: skip


def test_a_run_leaves_no_lock_and_points_to_rejected_csv(tmp_path: Path) -> None:
    r = _run(tmp_path, "o")
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "o" / rundir.LOCK).exists()
    assert (f"batkube: 1 job(s) rejected: see {tmp_path / 'o' / 'rejected.csv'} (first: job w0!2, requests = "
            "cpu=100, expected requests a node can hold") in r.stderr  # fmt: skip
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["simulator"] == "Batsim 4.2.1 double (batkube-py)"
    assert summary["simulator_command"].endswith("-m batkube_py.batsim_double")
    assert summary["times_from"].startswith("pods.csv")


def test_real_batsim_is_named_with_its_version(tmp_path: Path) -> None:
    batsim = shared("batsim", "real-4.2.1", "bin", "batsim")
    r = _run(tmp_path, "real", str(batsim))
    assert r.returncode == 0, r.stderr
    summary = json.loads((tmp_path / "real" / "summary.json").read_text())
    assert summary["simulator"] == "real Batsim 4.2.1" and summary["simulator_command"] == str(batsim)


def test_a_claim_that_wrote_nothing_leaves_no_directory(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), rundir.claimed(tmp_path / "new" / "run", {}):
        assert (tmp_path / "new" / "run" / rundir.LOCK).exists()
        raise RuntimeError("failed before writing")
    assert not (tmp_path / "new" / "run").exists() and (tmp_path / "new").is_dir()
    (tmp_path / "kept").mkdir()
    with rundir.claimed(tmp_path / "kept", {}):
        pass
    assert (tmp_path / "kept").is_dir()  # a directory the user made stays
    with rundir.claimed(tmp_path / "wrote", {}):
        (tmp_path / "wrote" / "batkube.log").write_text("x")
    assert os.listdir(tmp_path / "wrote") == ["batkube.log"]


def test_analyze_says_whose_clock_its_waits_are_on(tmp_path: Path) -> None:
    w = tmp_path / "w.json"
    w.write_text((ROOT / "workloads" / "spaced_200_delay170.json").read_text())
    r = _cli(tmp_path, "run", "-p", str(PLATFORM), "-w", str(w), "-o", "sp", "--batsim", "double")
    assert r.returncode == 0, r.stderr
    ours = json.loads((tmp_path / "sp" / "summary.json").read_text())["mean_waiting_time"]
    a = _cli(tmp_path, "analyze", "sp", "--no-figures")
    assert a.returncode == 0, a.stderr
    theirs = json.loads((tmp_path / "sp" / "analysis" / "metrics.json").read_text())["mean_waiting_time"]
    assert theirs != ours
    note = ("note: waits and times here are Batsim's (out_jobs.csv: each job on the platform); summary.json"
            f"'s mean_waiting_time {ours:.6g} is the adapter's (pods.csv: EXECUTE_JOB sent, JOB_COMPLETED "
            "read)")
    assert note in a.stdout
