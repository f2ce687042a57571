"""CPU and peak-memory figures are each process's own: Batsim's from its own pid (not every child the
adapter's process ever reaped, not the peak RSS Linux hands a child from the process that started it),
the adapter's from its own run. Linux only: the figures come from wait4 and /proc."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from batkube_py.runs.usage import AdapterUsage, ChildUsage, vm_hwm_mib

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux's /proc")

ROOT = Path(__file__).resolve().parents[1]
BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n"
HOLD = "b = bytearray({mib} << 20)\nb[::4096] = b'x' * len(b[::4096])\nimport time; time.sleep(0.6)\n"


def _run_child(code: str) -> ChildUsage:
    proc = subprocess.Popen([sys.executable, "-c", code])
    usage = ChildUsage(proc)
    assert usage.wait(timeout=60) == 0
    return usage


def test_a_child_does_not_report_the_peak_memory_of_the_process_that_started_it() -> None:
    ballast = bytearray(300 << 20)
    ballast[::4096] = b"x" * len(ballast[::4096])  # this process now holds 300 MiB more
    usage = _run_child("import time; time.sleep(0.5)")
    assert usage.usage is not None
    assert usage.usage.ru_maxrss / 1024 > 300  # what wait4 alone says: our peak, inherited
    rss = usage.figures()["batsim_peak_rss_mib"]
    assert rss is not None and rss < 60, rss  # a sleeping Python interpreter
    del ballast


def test_a_child_s_own_large_peak_is_measured() -> None:
    rss = _run_child(HOLD.format(mib=200)).figures()["batsim_peak_rss_mib"]
    assert rss is not None and 200 <= rss < 280, rss


def test_cpu_is_the_child_s_own_not_every_reaped_child_s() -> None:
    subprocess.run([sys.executable, "-c", BURN.format(s=1.0)], check=True)  # RUSAGE_CHILDREN grows by 1 s
    cpu = _run_child(BURN.format(s=0.3)).figures()["batsim_cpu_seconds"]
    assert cpu is not None and 0.3 <= cpu < 0.8, cpu


def test_alive_leaves_an_exited_child_for_wait() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    usage = ChildUsage(proc)
    deadline = time.monotonic() + 30
    while usage.alive():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert usage.alive() is False and proc.returncode is None  # not reaped yet
    assert usage.poll() == 3 and proc.returncode == 3 and usage.usage is not None


def test_adapter_cpu_is_its_own_delta_and_its_peak_its_own_address_space() -> None:
    t = time.process_time()
    while time.process_time() - t < 0.3:
        pass
    usage = AdapterUsage()
    figures = usage.figures()
    assert figures["adapter_cpu_seconds"] < 0.2  # the 0.3 s before the run started are not counted
    assert figures["adapter_peak_rss_mib"] == pytest.approx(vm_hwm_mib(), abs=1.0)


def test_batkube_run_in_a_shell_that_ran_a_heavy_command_first(tmp_path: Path) -> None:
    """`sh -c 'pip install … && batkube run …'` execs batkube in the shell that waited for pip: pip's
    CPU and memory must not be reported as Batsim's, nor its memory as the adapter's."""
    heavy = BURN.format(s=1.5) + HOLD.format(mib=400)
    run = (
        f"{sys.executable} -m batkube_py.cli.app run -p {ROOT}/platforms/cluster_16x1core.xml "
        f"-w {ROOT}/workloads/spaced_200_delay170.json -o {tmp_path}/run --batsim double --no-progress"
    )
    script = f"{sys.executable} -c {_quote(heavy)} && exec {run}"
    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["batsim_cpu_seconds"] < 1.5 and summary["batsim_peak_rss_mib"] < 400, summary
    assert summary["adapter_peak_rss_mib"] < 400 and summary["adapter_cpu_seconds"] > 0, summary


def _quote(code: str) -> str:
    return "'" + code.replace("'", "'\"'\"'") + "'"
