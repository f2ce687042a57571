"""End-to-end over real ZeroMQ: fcfs_baseline.py (REP) against the double (REQ).

Expected figures are real Batsim 4.2.1's on the same inputs (tolerance +-1 s).
"""

from __future__ import annotations

import csv
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from shared_support import need, shared

TESTS = Path(__file__).resolve().parent
SHARED = TESTS.parent.parent / "shared"
REF = SHARED / "reference"


@pytest.fixture(autouse=True)
def _needs_shared() -> None:
    shared("bench", "fcfs_baseline.py")
BATSIM = TESTS / "batsim_double" / "batsim"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_pair(platform: Path, workload: Path, out_dir: Path, timeout: float = 120) -> dict[str, str]:
    port = _free_port()
    endpoint = f"tcp://127.0.0.1:{port}"
    dp = subprocess.Popen([sys.executable, str(SHARED / "bench" / "fcfs_baseline.py"), "--no-log",
                           "--endpoint", endpoint], stderr=subprocess.PIPE)
    try:
        res = subprocess.run([str(BATSIM), "-p", str(platform), "-w", str(workload), "-e",
                              str(out_dir / "out"), "-s", endpoint, "-q", "--max-wait", "60"],
                             capture_output=True, text=True, timeout=timeout)
        assert res.returncode == 0, res.stderr[-2000:]
        dp.wait(timeout=30)
    finally:
        if dp.poll() is None:
            dp.kill()
    with open(out_dir / "out_schedule.csv") as f:
        return next(csv.DictReader(f))


@pytest.mark.parametrize(("workload", "makespan", "mean_wait"),
                         [("200_delay170.json", 2210.0, 979.2), ("spaced_200_delay170.json", 2280.0, 57.6)])
def test_fcfs_on_graphene(workload: str, makespan: float, mean_wait: float, tmp_path: Path) -> None:
    need(REF / "platforms" / "platform_graphene_16nodes.xml", REF / "workloads" / workload)
    sched = run_pair(REF / "platforms" / "platform_graphene_16nodes.xml", REF / "workloads" / workload,
                     tmp_path)
    assert float(sched["makespan"]) == pytest.approx(makespan, abs=1.0)
    assert float(sched["mean_waiting_time"]) == pytest.approx(mean_wait, abs=1.0)
    assert int(sched["nb_jobs"]) == 200


def test_python_m_entry_point(tmp_path: Path) -> None:
    case = SHARED / "batsim" / "transcripts" / "a_4hosts_6delays"
    need(case)
    port = _free_port()
    endpoint = f"tcp://127.0.0.1:{port}"
    dp = subprocess.Popen([sys.executable, str(SHARED / "bench" / "fcfs_baseline.py"), "--no-log",
                           "--endpoint", endpoint], stderr=subprocess.PIPE)
    try:
        res = subprocess.run([sys.executable, "-m", "batkube_py.batsim_double", "-p",
                              str(case / "platform.xml"), "-w",
                              str(case / "workload.json"), "-e", str(tmp_path / "out"), "-s", endpoint],
                             capture_output=True, text=True, timeout=60,
                             cwd=str(TESTS))
        dp.wait(timeout=30)
    finally:
        if dp.poll() is None:
            dp.kill()
    assert res.returncode == 0, res.stderr[-2000:]
    assert "[server/INFO] Simulation is finished!" in res.stderr
    ref = (case / "out" / "out_jobs.csv").read_text()
    assert (tmp_path / "out_jobs.csv").read_text() == ref
