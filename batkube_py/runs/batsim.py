"""Batsim beside the adapter: which simulator to start (real Batsim or the packaged double), its command
line, and stopping it (or the run) on a signal without losing what was computed."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from batkube_py.runs import RunError

if TYPE_CHECKING:
    from batkube_py.runs.run import RunConfig

DOUBLE = "double"  # --batsim double: the packaged Batsim 4.2.1 double (batsim-double)


def find_batsim(batsim: str | None) -> list[str]:
    """The command that starts Batsim: the one given, else `batsim` on PATH, else the packaged double.

    Users without real Batsim (it is not installable from the package registries) still get a run, and
    are told which simulator produced it."""
    if batsim == DOUBLE or (batsim is None and shutil.which("batsim") is None):
        if batsim is None:
            sys.stderr.write(
                "batkube: no `batsim` on PATH, simulating with batkube-py's Batsim 4.2.1 double "
                "(batsim-double; see docs/batsim_double.md)\n"
            )
        return [sys.executable, "-m", "batkube_py.batsim_double"]
    path = shutil.which(batsim or "batsim")
    if path is None:
        raise RunError(f"--batsim {batsim!r} is not an executable (or pass --batsim double)")
    return [str(Path(path).resolve())]


def describe(cmd: list[str], stderr: Path) -> dict[str, str]:
    """Which simulator ran, for summary.json: the packaged double (also behind an executable that is a
    Python script starting it, as `batsim-double` is), else a real Batsim and the version its log states
    (never by running it again: an executable that is not Batsim could do anything with `--version`)."""
    double = cmd[1:] == ["-m", "batkube_py.batsim_double"]
    if not double:
        try:
            with open(cmd[0], "rb") as f:
                double = b"batkube_py.batsim_double" in f.read(4096)
        except OSError:
            pass
    if double:
        return {"simulator": "Batsim 4.2.1 double (batkube-py)", "simulator_command": " ".join(cmd)}
    try:
        with open(stderr, "rb") as f:
            found = _VERSION.search(f.read(1 << 16))
    except OSError:
        found = None
    version = found[1].decode(errors="replace") if found else "(version not in its log)"
    return {"simulator": f"real Batsim {version}", "simulator_command": " ".join(cmd)}


_VERSION = re.compile(rb"\[batsim/INFO\] Batsim version: (\S+)")


_VERBOSITY = ("-q", "--quiet", "-v", "--verbosity")


def quiet_flag(cfg: RunConfig) -> list[str]:
    """`-q` unless the user asked for Batsim's log: real Batsim logging every message of the 10,000-job
    bench took 109 s instead of 95.6 s (and wrote 14 MB of batsim.stderr)."""
    given = any(a.split("=", 1)[0] in _VERBOSITY for a in cfg.batsim_args)
    return [] if cfg.batsim_log or given else ["-q"]


def batsim_command(batsim: list[str], cfg: RunConfig, endpoint: str, export: Path) -> list[str]:
    """How `batkube run` starts Batsim (benchmarks/adapter_overhead.py starts it the same way)."""
    return [
        *batsim, "-p", str(cfg.platform.resolve()), "-w", str(cfg.workload.resolve()),
        "-e", str(export.resolve()), "-s", endpoint, "--enable-compute-sharing",
        "--enable-dynamic-jobs", "--acknowledge-dynamic-jobs", "--enable-profile-reuse", *quiet_flag(cfg),
        *cfg.batsim_args,
    ]  # fmt: skip


def stop_process(
    proc: subprocess.Popen, grace: float = 5.0, group: bool = False, wait: Callable | None = None
) -> None:
    """SIGTERM, then SIGKILL after `grace` s; `group` for a child started in a session of its own;
    `wait` reaps it instead of Popen.wait (ChildUsage.wait keeps the child's resource usage)."""
    wait = wait or proc.wait
    if not group and proc.poll() is not None:
        return  # (a group may outlive its leader)
    send = (lambda sig: os.killpg(proc.pid, sig)) if group else proc.send_signal
    try:
        send(signal.SIGTERM)
        wait(timeout=grace)
    except subprocess.TimeoutExpired:
        send(signal.SIGKILL)
        wait()
    except ProcessLookupError:
        pass


def exit_on_sigterm() -> None:
    """SIGTERM (a job scheduler, an experiment runner) unwinds like Ctrl-C, so that cleanups run: a
    private control plane is stopped, a run in progress is stopped with its runner."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP during a run: handled like Ctrl-C, so Batsim is stopped and outputs are kept."""


def interrupt_on_sigterm() -> None:
    def handler(signum, _frame):
        raise Terminated(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGHUP, handler)


_LAST_WORDS = ("[root/CRITICAL] ", "[xbt_exception/CRITICAL] Uncaught exception ", "Assertion `",
               "Segmentation fault")  # fmt: skip


def last_words(stderr: Path) -> str:
    """What Batsim said as it died (its abort line, an uncaught exception, a library assertion, a crash),
    for the console: a workload Batsim refuses is named there, not only in batsim.stderr."""
    try:
        lines = stderr.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    for line in reversed(lines):
        for mark in _LAST_WORDS:
            if mark in line:
                return line[line.index(mark):].removeprefix("[root/CRITICAL] ").strip()
    return ""

