"""One run, executed wherever the executor puts it (a local pool process or a Dask worker).

The run is a `batkube run` child process rather than a function call: each run gets a fresh interpreter
(logging handlers, ZeroMQ context, control-plane session). Its CPU and memory figures are the ones the
run measured itself (summary.json: the adapter's own, Batsim's own; see :mod:`batkube_py.runs.usage`), not
wait4's on the child: Linux hands a child the peak RSS of the process that started it, so every run
started from this pool reported the pool worker's ~138 MiB.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from batkube_py.experiments.plan import Task
from batkube_py.runs.batsim import stop_process

RESULT = "result.json"
USAGE_KEYS = ("adapter_cpu_seconds", "adapter_peak_rss_mib", "batsim_cpu_seconds", "batsim_peak_rss_mib")


def finished(task: Task) -> dict[str, Any] | None:
    """The stored result if this exact run (same key) already finished in a way worth keeping."""
    path = task.out / RESULT
    try:
        res = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    if res.get("key") != task.key:
        return None
    if res.get("status") == "ok" or (task.failures_expected and res.get("status") == "failed"):
        return res
    return None


def _summary(out: Path) -> dict[str, Any]:
    try:
        return json.loads((out / "summary.json").read_text())
    except (OSError, json.JSONDecodeError):
        return {}


# Set when the runner is being stopped: runs waited for in pool threads stop their child and return.
STOP = threading.Event()


class RunStopped(RuntimeError):
    pass


def _wait(proc: subprocess.Popen, deadline: float | None) -> tuple[int, Any, bool]:
    """Waits for the run; past the deadline, TERM then KILL its group."""
    term_sent: float | None = None
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            return status, usage, term_sent is not None
        if STOP.is_set():
            raise RunStopped("the experiment runner was stopped")
        now = time.perf_counter()
        if deadline is not None and now > deadline and term_sent is None:
            term_sent = now
            os.killpg(proc.pid, signal.SIGTERM)
        elif term_sent is not None and now > term_sent + 10:
            os.killpg(proc.pid, signal.SIGKILL)
        time.sleep(0.05)


def _succeeded(out: Path) -> dict[str, Any] | None:
    try:
        res = json.loads((out / RESULT).read_text())
    except (OSError, ValueError):
        return None
    return res if isinstance(res, dict) and res.get("status") == "ok" else None


def execute(task: Task) -> dict[str, Any]:
    """Runs the task in a clean directory; returns (and stores) status, wall time, peak RSS, summary.

    A successful run already in the directory (made with other options) is replaced only by a
    successful one: the new attempt runs beside it (`rep0.rerun`) and a failure there leaves it alone."""
    previous = _succeeded(task.out)
    work = task.out.with_name(task.out.name + ".rerun") if previous else task.out
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    result = _execute(task, work)
    if previous is None:
        return result
    if result["status"] == "ok":
        shutil.rmtree(task.out)
        work.rename(task.out)
        return result
    failed = task.out.with_name(task.out.name + ".failed")
    if failed.exists():
        shutil.rmtree(failed)
    work.rename(failed)
    return {**previous, "note": f"a re-run failed ({result['error']}); kept the earlier successful run, "
            f"the failed attempt is in {failed}"}  # fmt: skip


def _execute(task: Task, out: Path) -> dict[str, Any]:
    argv = (*task.argv[:-1], str(out)) if out != task.out else task.argv  # argv ends with -o DIR
    start = time.perf_counter()
    with open(out / "experiment.log", "wb") as log:
        proc = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
        try:
            status, _, timed_out = _wait(proc, None if task.timeout is None else start + task.timeout)
        except BaseException:
            # the runner itself is stopped (SIGTERM, Ctrl-C): the run is in a session of its own, so
            # nothing reaches it unless we pass it on; it then stops its private control plane
            stop_process(proc, grace=10.0, group=True)
            raise
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    summary = _summary(out)
    error = summary.get("error")
    if timed_out:
        error = f"killed after {task.timeout:g} s (run_timeout)"
    elif proc.returncode != 0 and not error:
        tail = (out / "experiment.log").read_text(errors="replace").strip().splitlines()[-3:]
        error = f"exit code {proc.returncode}: {' | '.join(tail)}"
    result = {
        "key": task.key,
        "task": task.name,
        "status": "ok" if proc.returncode == 0 and not error else "failed",
        "exit_code": proc.returncode,
        "error": error,
        "wall_seconds": round(wall, 3),
        **{k: summary.get(k) for k in USAGE_KEYS},
        "makespan": summary.get("makespan"),
        "mean_waiting_time": summary.get("mean_waiting_time"),
        "argv": list(task.argv),
    }
    (out / RESULT).write_text(json.dumps(result, indent=1) + "\n")
    return result
