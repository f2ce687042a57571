"""Shared simulation state: jobs, machines, outgoing event buffer, logging.

Kept separate from the actors so that the server handlers, the protocol reader and
the exporter all see one consistent picture, as Batsim's BatsimContext does.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from . import jsonfmt
from .batching import RandomBatching
from .errors import BatsimAbort
from .export import JobsTracer
from .kernel import Kernel
from .machines import Machines
from .simplatform import Platform
from .workload import Job, Workload

LEVELS = {"DEBUG": 10, "INFO": 20, "WARNING": 30, "ERROR": 40, "CRITICAL": 50}
# configure_batsim_logging_output (batsim.cpp): the categories -v/-q set; others keep SimGrid's INFO.
VERBOSITY_CATEGORIES = frozenset((
    "workload", "job_submitter", "redis", "jobs", "machines", "pstate", "workflow", "jobs_execution",
    "server", "export", "profiles", "machine_range", "events", "event_submitter", "protocol", "network",
    "ipp", "task_execution"))
VERBOSITY_THRESHOLD = {"quiet": 40, "network-only": 40, "information": 20, "debug": 10}


def threshold(category: str, verbosity: str) -> int:
    """Lowest level logged for a category: `batsim` always INFO, `network` INFO in network-only."""
    if category in VERBOSITY_CATEGORIES and not (category == "network" and verbosity == "network-only"):
        return VERBOSITY_THRESHOLD[verbosity]
    return 20


@dataclass
class Options:
    compute_sharing: bool = False
    storage_sharing: bool = True
    forward_profiles: bool = False
    dynamic_jobs: bool = False
    ack_dynamic_jobs: bool = False
    profile_reuse: bool = False
    sched_config: str = ""
    forward_unknown_events: bool = False
    redis: tuple[str, int, str] = ("127.0.0.1", 6379, "default")  # hostname, port, prefix (config only)
    trace_machine_states: bool = True  # --disable-machine-state-tracing: no <prefix>_machine_states.csv
    trace_schedule: bool = True  # --disable-schedule-tracing: no <prefix>_schedule.trace
    verbosity: str = "information"  # quiet | network-only | information | debug
    log_stream: TextIO | None = None


@dataclass
class Counters:
    submitted: int = 0
    completed: int = 0
    running: int = 0
    waiters: int = 0
    killers: int = 0
    job_submitters_expected: int = 0
    job_submitters_finished: int = 0
    event_submitters_expected: int = 0
    event_submitters_finished: int = 0


@dataclass
class Context:
    k: Kernel
    platform: Platform
    machines: Machines
    workloads: list[Workload]
    options: Options
    tracer: JobsTracer
    jobs: dict[str, Job] = field(default_factory=dict)
    events: list[str] = field(default_factory=list)
    counters: Counters = field(default_factory=Counters)
    job_actors: dict[str, Any] = field(default_factory=dict)
    current_label: Callable[[], str] | None = None
    end_sent: bool = False
    ack_received: bool = False
    sched_ready: bool = False
    registration_finished: bool = False
    dynamic_workloads: dict[str, Workload] = field(default_factory=dict)
    met: set[str] = field(default_factory=set)  # every job id ever registered (Batsim's Jobs::_jobs_met)
    to_delete: list[str] = field(default_factory=list)  # completed jobs dropped after the next send
    batching: RandomBatching | None = None  # tests only: batching.py
    unit: int = 0  # the server handler call that appended an event (batching.py keeps them whole)
    units: list[int] = field(default_factory=list)

    # --- outgoing protocol events ----------------------------------------------------------
    def append(self, etype: str, data_json: str) -> None:
        self.events.append(f'{{"timestamp":{self.k.now:f},"type":"{etype}","data":{data_json}}}')
        if self.batching is not None:
            self.units.append(self.unit)

    def flush_message(self) -> str:
        events, self.events, now = self.events, [], f"{self.k.now:f}"
        if self.batching is not None:
            units, self.units = self.units, []
            events, self.events, self.units = self.batching.arrange(events, units, now)
        return f'{{"now":{now},"events":[{",".join(events)}]}}'

    def job(self, jid: str) -> Job:
        """`Workloads::job_at`: completed jobs are deleted from memory once a message was sent."""
        job = self.jobs.get(jid)
        if job is None:
            raise BatsimAbort(f"Cannot get job '{jid}': it does not exist", "../src/jobs.cpp:243")
        return job

    def completed(self, job: Job) -> None:
        self.tracer.write_job(job)
        self.to_delete.append(job.id)

    def notify(self, ntype: str, extra: dict[str, Any] | None = None) -> None:
        self.append("NOTIFY", jsonfmt.dumps({"type": ntype, **(extra or {})}))

    # --- logging ---------------------------------------------------------------------------
    def log(self, category: str, message: str, level: str = "INFO") -> None:
        stream = self.options.log_stream
        if stream is None:
            return
        if LEVELS[level] < threshold(category, self.options.verbosity):
            return
        label = self.current_label() if self.current_label and self.k.current is not None else ""
        prefix = f"[{label} {self.k.now:f}]" if label else f"[{self.k.now:f}]"
        stream.write(f"{prefix} [{category}/{level}] {message}\n")

    def log_raw(self, line: str) -> None:
        if self.options.log_stream is not None:
            self.options.log_stream.write(line + "\n")


def default_stream() -> TextIO:
    return sys.stderr
