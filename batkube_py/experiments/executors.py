"""Where runs execute: a local process pool (default), or a Dask distributed cluster for sweeps that
outgrow one machine.

Dask rather than Ray: a run is an opaque, independent subprocess, so all we need is "run this function
on some worker and give me the result" — `distributed` does that with a pure-Python wheel, a local
cluster that starts in a second (what CI tests), and the usual ways to reach many machines
(`dask scheduler` / `dask worker` over SSH, dask-jobqueue on SLURM/OAR/PBS — the clusters Batsim users
have — dask-kubernetes). Ray would bring a large binary runtime and its own object store for no
benefit here. Workers must see the same paths (a shared filesystem), as for any Batsim campaign.

Runs marked exclusive (timing-sensitive: the real scheduler's wall-clock sync policies) run one at a
time after the others, so that concurrent runs do not steal their CPU and bias what they measure.
"""

from __future__ import annotations

import importlib.util
import logging
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, Protocol

from batkube_py.experiments.plan import Task
from batkube_py.experiments.worker import STOP, execute

Done = Callable[[Task, dict[str, Any]], None]


def safe_execute(task: Task) -> dict[str, Any]:
    """A crash of the run machinery becomes a failed result instead of losing the whole campaign."""
    try:
        return execute(task)
    except Exception as exc:  # noqa: BLE001 - reported per run, with its traceback
        return {
            "key": task.key,
            "task": task.name,
            "status": "failed",
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(),
        }


class Executor(Protocol):
    def run(self, tasks: list[Task], on_done: Done) -> None: ...


def _split(tasks: list[Task]) -> tuple[list[Task], list[Task]]:
    return [t for t in tasks if not t.exclusive], [t for t in tasks if t.exclusive]


class LocalPool:
    def __init__(self, jobs: int) -> None:
        self.jobs = max(1, jobs)

    def run(self, tasks: list[Task], on_done: Done) -> None:
        """Threads, not processes: each run is a child process already, and a thread can stop its child
        when the runner is stopped (SIGTERM, Ctrl-C), which a pool process never hears of."""
        shared, exclusive = _split(tasks)
        STOP.clear()
        if shared:
            with ThreadPoolExecutor(max_workers=min(self.jobs, len(shared))) as pool:
                futures = {pool.submit(safe_execute, t): t for t in shared}
                try:
                    for fut in as_completed(futures):
                        on_done(futures[fut], fut.result())
                except BaseException:
                    STOP.set()
                    raise
        for t in exclusive:
            on_done(t, safe_execute(t))


class DaskCluster:
    """`address` is a running scheduler (tcp://host:8786); None starts a LocalCluster of `jobs` workers."""

    def __init__(self, address: str | None, jobs: int) -> None:
        self.address = address
        self.jobs = max(1, jobs)

    def run(self, tasks: list[Task], on_done: Done) -> None:
        from distributed import Client, LocalCluster
        from distributed import as_completed as dask_completed

        logging.getLogger("distributed").setLevel(logging.WARNING)
        cluster = None
        if self.address is None:
            cluster = LocalCluster(
                n_workers=self.jobs, threads_per_worker=1, processes=True, dashboard_address=None
            )
        client = Client(self.address or cluster)
        try:
            shared, exclusive = _split(tasks)
            futures = {client.submit(safe_execute, t, pure=False): t for t in shared}
            for fut in dask_completed(list(futures)):
                on_done(futures[fut], fut.result())
            for t in exclusive:
                on_done(t, client.submit(safe_execute, t, pure=False).result())
        finally:
            client.close()
            if cluster is not None:
                cluster.close()


class ExecutorUnavailable(RuntimeError):
    """The executor asked for needs an optional extra that is not installed."""


def make_executor(kind: str, jobs: int, address: str | None = None) -> Executor:
    if kind == "dask" or address is not None:
        if importlib.util.find_spec("distributed") is None:
            raise ExecutorUnavailable(
                "the dask executor needs Dask's `distributed`, an optional extra: "
                "pip install 'batkube-py[distributed]' (or run without --executor dask / --address)"
            )
        return DaskCluster(address, jobs)
    return LocalPool(jobs)
