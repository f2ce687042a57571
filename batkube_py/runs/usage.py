"""CPU time and peak memory of a run's own processes: the adapter, and the Batsim it started.

Why not getrusage(RUSAGE_CHILDREN) and ru_maxrss: the children figure sums every child the process ever
reaped, before its exec too (`sh -c 'pip install … && batkube run …'` execs batkube in the shell that
ran pip, so pip's minutes and megabytes were reported as Batsim's), and Linux carries a process's peak RSS
across fork and exec (a child started from a 138 MiB process reports at least 138 MiB, whatever it did).
So Batsim's CPU comes from os.wait4 on Batsim's pid alone (CPU time starts at zero at fork), its peak
memory from its own address space (VmHWM in /proc, sampled until it exits, unless wait4's figure is
higher than anything it could have inherited), and the adapter's from the delta of its own usage over the
run and its own VmHWM (its address space is new since exec).
"""

from __future__ import annotations

import os
import resource
import subprocess
import threading
import time
from pathlib import Path

SAMPLE_SECONDS = 0.1


def vm_hwm_mib(pid: int | str = "self") -> float | None:
    """Peak resident set of a live process's current address space (Linux), MiB; None if unknown."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return None


def _self_maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu(u: resource.struct_rusage) -> float:
    return u.ru_utime + u.ru_stime


class AdapterUsage:
    """The adapter's CPU seconds from its creation on, and its own peak RSS."""

    def __init__(self) -> None:
        self._cpu0 = _cpu(resource.getrusage(resource.RUSAGE_SELF))

    def figures(self) -> dict[str, float]:
        cpu = _cpu(resource.getrusage(resource.RUSAGE_SELF)) - self._cpu0
        rss = vm_hwm_mib()
        return {
            "adapter_cpu_seconds": round(cpu, 3),
            "adapter_peak_rss_mib": round(rss if rss is not None else _self_maxrss_mib(), 1),
        }


class ChildUsage:
    """Watches one child (Batsim) without letting anything else reap it, then reaps it with wait4.

    Use :meth:`alive` instead of ``Popen.poll`` (which would reap the child and lose its usage) and
    :meth:`wait` instead of ``Popen.wait``; both set ``proc.returncode`` once the child is reaped.
    """

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.inherited_mib = _self_maxrss_mib()  # the most a child can carry over from us
        self.sampled_mib: float | None = None
        self.usage: resource.struct_rusage | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="batsim-usage", daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.is_set():
            hwm = vm_hwm_mib(self.proc.pid)
            if hwm is not None:
                self.sampled_mib = max(hwm, self.sampled_mib or 0.0)
            self._stop.wait(SAMPLE_SECONDS)

    def alive(self) -> bool:
        """True while the child runs; an exited child is left for :meth:`wait` (WNOWAIT)."""
        if self.proc.returncode is not None:
            return False
        try:
            info = os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return False
        if info is None:
            return True
        hwm = vm_hwm_mib(self.proc.pid)  # a zombie has no address space left: usually None
        if hwm is not None:
            self.sampled_mib = max(hwm, self.sampled_mib or 0.0)
        return False

    def poll(self) -> int | None:
        """The exit code if the child has ended (reaping it), else None."""
        return self.wait(timeout=0.0, poll=True)

    def wait(self, timeout: float | None = None, poll: bool = False) -> int | None:
        """Reaps the child with wait4; raises subprocess.TimeoutExpired unless ``poll``."""
        if self.proc.returncode is not None:
            return self.proc.returncode
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: no figures
                self.proc.returncode = self.proc.returncode if self.proc.returncode is not None else -1
                self._stop.set()
                return self.proc.returncode
            if pid:
                self.usage = usage
                self.proc.returncode = os.waitstatus_to_exitcode(status)
                self._stop.set()
                return self.proc.returncode
            if deadline is not None and time.monotonic() >= deadline:
                if poll:
                    return None
                raise subprocess.TimeoutExpired(self.proc.args, timeout or 0.0)
            time.sleep(0.01)

    def figures(self, prefix: str = "batsim") -> dict[str, float | None]:
        """The child's own CPU seconds and peak RSS (None when they could not be measured)."""
        self._stop.set()
        if self.usage is None:
            return {f"{prefix}_cpu_seconds": None, f"{prefix}_peak_rss_mib": None}
        reported = self.usage.ru_maxrss / 1024
        rss = reported if reported > self.inherited_mib + 1.0 else self.sampled_mib
        return {
            f"{prefix}_cpu_seconds": round(_cpu(self.usage), 3),
            f"{prefix}_peak_rss_mib": None if rss is None else round(rss, 1),
        }
