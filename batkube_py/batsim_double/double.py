"""BatsimDouble: a transport-free Batsim 4.2.1 peer driven message by message.

Tests feed recorded decision-process replies through `on_reply` and compare what
comes out with the recorded Batsim messages; the zmq front-end (cli.py) is a thin
loop around the same object, so both paths exercise identical logic.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TextIO

from .actors import event_submitter, job_submitter
from .batching import RandomBatching
from .context import LEVELS, Context, Options, threshold
from .errors import BatsimAbort, BatsimCrash, BatsimRuntimeError
from .events import load_events
from .export import JobsTracer
from .kernel import Kernel
from .machines import Machines
from .server import server_process
from .simplatform import Platform, PlatformError
from .workload import load_workload

DEADLOCK = ("./src/kernel/EngineImpl.cpp:718: [ker_engine/CRITICAL] Oops! Deadlock detected, some "
            "activities are still around but will never complete. This usually happens when the user code "
            "is not perfectly "
            "clean.")


CRASHED = 128 + 11  # the exit status of a process killed by SIGSEGV, as a shell reports it


@dataclass
class Outcome:
    """How the run ended. `status` is one of running, finished, aborted, deadlock, crashed."""

    status: str = "running"
    exit_code: int | None = None
    message: str = ""
    time: float = 0.0


class BatsimDouble:
    def __init__(self, platform_path: str, workload_paths: list[str] | str, *, compute_sharing: bool = False,
                 forward_profiles: bool = False, dynamic_jobs: bool = False,
                 ack_dynamic_jobs: bool = False, profile_reuse: bool = False,
                 events_path: str | list[str] | None = None, export_prefix: str | None = None,
                 master_host: str = "master_host", log_stream: TextIO | None = None,
                 verbosity: str = "information", mmax: int = 0, mmax_workload: bool = False,
                 roles: dict[str, str] | None = None, options: Options | None = None,
                 batching: RandomBatching | None = None) -> None:
        """`options` carries the remaining command-line settings (cli.py); explicit arguments win;
        `batching` is a test aid (batching.py), never Batsim's."""
        if isinstance(workload_paths, str):
            workload_paths = [workload_paths]
        events_paths = [events_path] if isinstance(events_path, str) else list(events_path or [])
        self.outcome = Outcome()
        self.export_prefix = export_prefix
        self._log_stream = log_stream
        self._sched_wall = 0.0
        self._t_sent = 0.0
        self._t_start = time.perf_counter()
        options = replace(options or Options(), compute_sharing=compute_sharing,
                          forward_profiles=forward_profiles, dynamic_jobs=dynamic_jobs,
                          ack_dynamic_jobs=ack_dynamic_jobs, profile_reuse=profile_reuse,
                          verbosity=verbosity, log_stream=log_stream)
        self.kernel: Kernel | None = None
        self._init_error: BatsimAbort | None = None
        log = _startup_log(log_stream, verbosity)
        log("batsim", "Batsim version: 4.2.1")  # "Workload 'w0' corresponds..." is the CLI's
        try:  # Batsim loads the workloads and events before SimGrid reads the platform
            workloads = [load_workload(path, f"w{i}", log) for i, path in enumerate(workload_paths)]
            event_lists = [load_events(path, options.forward_unknown_events) for path in events_paths]
        except BatsimAbort as exc:
            self._init_error = exc
            return
        self.platform = Platform(platform_path)
        pf = self.platform
        self.kernel = Kernel(pf.route, pf.surf_precision, pf.maxmin_precision)
        self.ctx = Context(self.kernel, self.platform, None, workloads, options, JobsTracer())  # type: ignore
        self.ctx.current_label = self._label
        self.ctx.batching = batching
        limit = machine_limit(mmax, mmax_workload, [wl.nb_res for wl in workloads])
        if limit != -1:
            self.ctx.log("batsim", f"The maximum number of machines to use is {limit}.")
        try:
            self.ctx.machines = Machines(self.platform, master_host, roles, limit)
        except PlatformError as exc:
            self._init_error = BatsimAbort(str(exc), "./src/xbt/exception.cpp:48")
            return
        except BatsimAbort as exc:
            self._init_error = exc
            return
        self.ctx.log("machines", f"The machines have been created successfully. There are "
                     f"{self.ctx.machines.nb_compute} computing machines.")
        for wl in workloads:
            for job in wl.jobs:
                self.ctx.jobs[job.id] = job
                self.ctx.met.add(job.id)
        self.ctx.counters.job_submitters_expected = len(workloads)
        self.ctx.counters.event_submitters_expected = len(event_lists)
        master = self.ctx.machines.master
        for i, wl in enumerate(workloads):
            self.kernel.spawn(f"workload_submitter_{wl.name}", master, job_submitter(self.ctx, i))
            self.ctx.log("batsim", f"The process 'workload_submitter_{wl.name}' has been created.")
        for i, events in enumerate(event_lists):
            self.kernel.spawn(f"event_submitter_we{i}", master, event_submitter(self.ctx, f"we{i}", events))
            self.ctx.log("batsim", f"The process 'event_submitter_we{i}' has been created.")
        self.kernel.spawn("server", master, server_process(self.ctx))
        self.ctx.log("batsim", "The process 'server' has been created.")
        if export_prefix:
            _write(f"{export_prefix}_jobs.csv", "")
            if options.trace_machine_states:
                _write(f"{export_prefix}_machine_states.csv", "")  # machine_states.py: empty on an abort

    # --- driving -------------------------------------------------------------------------
    def start(self) -> str | None:
        """First message (SIMULATION_BEGINS); None if Batsim would die before sending it."""
        if self._init_error is not None:
            exc = self._init_error
            self._abort(exc, uncaught=exc.where == "./src/xbt/exception.cpp:48")
            return None
        return self._run(lambda: self.kernel.run())

    def on_reply(self, raw: str) -> str | None:
        """Apply a decision-process reply; return Batsim's next message or None when done."""
        if self.outcome.status != "running":
            return None
        self._sched_wall += time.perf_counter() - self._t_sent
        return self._run(lambda: self.kernel.resume_external(raw))

    @property
    def exit_code(self) -> int | None:
        return self.outcome.exit_code

    @property
    def now(self) -> float:
        return self.kernel.now if self.kernel is not None else 0.0

    def _run(self, step: Any) -> str | None:
        try:
            text = step()
        except BatsimAbort as exc:
            self._abort(exc)
            return None
        except BatsimRuntimeError as exc:
            self._runtime_error(exc)
            return None
        except BatsimCrash as exc:  # the process dies at once: no output file is written
            if self._log_stream is not None:
                self._log_stream.write(exc.message + "\n")
            self.outcome = Outcome("crashed", CRASHED, exc.message, self.now)
            return None
        if text is not None:
            self._t_sent = time.perf_counter()
            return text
        if self.ctx.ack_received:
            self.outcome = Outcome("finished", 0, "", self.kernel.now)
        else:
            self.ctx.log_raw(f"[{self.kernel.now:f}] {DEADLOCK}")
            self.outcome = Outcome("deadlock", 0, "Oops! Deadlock detected", self.kernel.now)
        self._finalize()
        return None

    # --- endings -------------------------------------------------------------------------
    def _label(self) -> str:
        a = self.kernel.current if self.kernel is not None else None
        return f"{a.host}:{a.name}:({a.pid})" if a is not None else ""

    def _abort(self, exc: BatsimAbort, uncaught: bool = False) -> None:
        where = f"{exc.where}: " if exc.where else ""
        exception = exc.exception or ("std::invalid_argument" if uncaught else "")
        cat = "xbt_exception" if exception else "root"
        now = self.now
        prefix = f"[{self._label()} {now:f}]" if self._label() else f"[{now:f}]"
        text = f"Uncaught exception {exception}: {exc.message}" if exception else exc.message
        if self._log_stream is not None and exc.exception.startswith("simgrid::"):
            self._log_stream.write(f"{prefix} [ker_context/INFO] Actor killed by an uncaught exception "
                                   f"{exc.exception.split()[0]}\n")  # fmt: skip
        if self._log_stream is not None:
            line = exc.message if exc.raw else f"{prefix} {where}[{cat}/CRITICAL] {text}"
            self._log_stream.write(line + "\n")
        self.outcome = Outcome("aborted", 134, exc.message, now)

    def _runtime_error(self, exc: BatsimRuntimeError) -> None:
        self.ctx.log("network", f"Runtime error received: {exc.message}")
        self.ctx.log("network", "Flushing output files...")
        self._finalize()
        self.ctx.log("network", "Output files flushed. Aborting execution now.")
        self.ctx.log_raw(f"[{self._label()} {self.kernel.now:f}] ./src/xbt/exception.cpp:48: "
                         "[xbt_exception/CRITICAL] Uncaught exception std::runtime_error: Execution aborted "
                         "(connection broken)")
        self.outcome = Outcome("aborted", 134, exc.message, self.kernel.now)

    def schedule_values(self) -> dict[str, str]:
        m = self.ctx.machines
        return self.ctx.tracer.schedule_values(m.nb_compute, m.time_computing, m.time_idle, self._sched_wall,
                                               time.perf_counter() - self._t_start)

    def jobs_csv(self) -> str:
        return self.ctx.tracer.jobs_csv()

    def _finalize(self) -> None:
        self.kernel.current = None
        tr = self.ctx.tracer
        values = self.schedule_values()
        self.ctx.log("export", f"jobs={tr.nb_jobs}, finished={tr.finished}, success={tr.success}, "
                     f"killed={tr.killed}, success_rate={values['success_rate']}")
        self.ctx.log("export", "makespan={makespan}, scheduling_time={scheduling_time}, mean_waiting_time="
                     "{mean_waiting_time}, mean_turnaround_time={mean_turnaround_time}, mean_slowdown="
                     "{mean_slowdown}, max_waiting_time={max_waiting_time}, max_turnaround_time="
                     "{max_turnaround_time}, max_slowdown={max_slowdown}".format(**values))
        if self.export_prefix:
            _write(f"{self.export_prefix}_jobs.csv", tr.jobs_csv())
            _write(f"{self.export_prefix}_schedule.csv", tr.schedule_csv(values))
            if self.ctx.options.trace_machine_states:
                _write(f"{self.export_prefix}_machine_states.csv", self.ctx.machines.states.csv())


def _startup_log(stream: TextIO | None, verbosity: str) -> Callable[[str, str], None]:
    """Batsim's INFO log before the simulation exists (loading the workloads), at simulated time 0."""

    def log(category: str, message: str) -> None:
        if stream is not None and LEVELS["INFO"] >= threshold(category, verbosity):
            stream.write(f"[0.000000] [{category}/INFO] {message}\n")

    return log


def _write(path: str, text: str) -> None:
    d = os.path.dirname(path)
    if d and not os.path.isdir(d):
        raise FileNotFoundError(f"export directory '{d}' does not exist")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def machine_limit(mmax: int, mmax_workload: bool, nb_res: list[int]) -> int:
    """How many compute machines Batsim keeps (load_workloads_and_workflows); -1 for all of them."""
    largest = max(nb_res, default=-1)
    if mmax_workload and mmax > 0:
        return min(mmax, largest)
    if mmax_workload:
        return largest
    return mmax if mmax > 0 else -1
