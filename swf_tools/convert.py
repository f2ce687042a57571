"""SWF trace → Batsim delay workload for batkube.

Reproduces the thesis' ``swf-to-json.go`` (cpu from allocated processors, normalised then floored at 1m and
rounded to 3 decimals, delay trimmed, subtimes rebased) with two deliberate fixes: profiles are shared per
distinct (delay, cpu, memory) rather than per runtime — the Go code silently gave later jobs the cpu of the
first job with the same runtime — and the "leave 100m free" hand edit is an option, ``cpu_headroom``.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd

from swf_tools import queues
from swf_tools.errors import ConversionError
from swf_tools.swf import STATUS_CANCELLED, SwfTrace
from swf_tools.units import format_memory_kib
from swf_tools.workload import BatsimWorkload, DelayProfile, Job

MemorySource = Literal["none", "used", "requested"]
NormalizeAgainst = Literal["max-job", "max-procs"]

SKIP_CANCELLED = "cancelled (status 5)"
SKIP_ZERO_RUNTIME = "zero runtime"
SKIP_NEGATIVE_RUNTIME = "negative or missing runtime"
SKIP_NO_PROCS = "no processor count"
SKIP_NO_SUBMIT = "missing submit time"
SKIP_BEFORE_FROM_TIME = "submitted before --jobs-from-time"


@dataclass(frozen=True)
class ConvertOptions:
    normalize_cpu: float | None = None
    uniform_cpu: float | None = None
    normalize_against: NormalizeAgainst = "max-job"
    cpu_headroom: float = 0.0
    min_cpu: float = 0.001
    cpu_decimals: int = 3
    max_duration: float | None = None
    memory_from: MemorySource = "none"
    normalize_memory_kib: int | None = None
    scheduler: str = "default"
    walltime_factor: float | None = None
    keep_ids: bool = True
    jobs_from_time: float | None = None
    nb_res: int = 1
    cores_per_node: float | None = None  # keep node counts: a job on P procs is ceil(P / this) pods
    one_pod_per_node: bool = False
    group_policy: str = "gang"  # or "basic": a group's pods bind one by one (batkube's groupPolicy)
    queue_from: str | None = None  # an SWF field (queues.SOURCES) naming each job's LocalQueue
    cluster_queue_from: str | None = None  # the field naming the ClusterQueues (default: queue_from)
    queueing_strategy: str = "BestEffortFIFO"
    quota_cores: int | None = None  # the platform's cores, shared out as the ClusterQueues' quotas
    fair_sharing: bool = False  # queues.FAIR_SHARING_RULE

    def validate(self) -> None:
        """Reject contradictory options up front, before any work, with the option names in the message."""
        if self.normalize_cpu is not None and self.uniform_cpu is not None:
            raise ConversionError("--normalize-cpu and --uniform-cpu are mutually exclusive")
        if self.normalize_cpu is not None and not self.normalize_cpu > 0:
            raise ConversionError(f"--normalize-cpu must be > 0, got {self.normalize_cpu}")
        if self.uniform_cpu is not None and not self.uniform_cpu > 0:
            raise ConversionError(f"--uniform-cpu must be > 0, got {self.uniform_cpu}")
        if self.cpu_headroom:
            if self.normalize_cpu is None:
                raise ConversionError("--cpu-headroom caps cpu at N - H and so needs --normalize-cpu N")
            if not 0 <= self.cpu_headroom < self.normalize_cpu:
                raise ConversionError(f"--cpu-headroom must be in [0, {self.normalize_cpu}), "
                                      f"got {self.cpu_headroom}")
        quantum = 10.0 ** -self.cpu_decimals
        if self.min_cpu < quantum - 1e-12:
            raise ConversionError(f"--min-cpu must be at least {quantum:g} (cpu is rounded to "
                                  f"{self.cpu_decimals} decimals; Kubernetes' smallest cpu is 1m)")
        if self.cpu_cap is not None and self.min_cpu > self.cpu_cap + 1e-12:
            raise ConversionError(f"--min-cpu {self.min_cpu} exceeds the cpu cap {self.cpu_cap}")
        if self.max_duration is not None and not self.max_duration > 0:
            raise ConversionError(f"--max-duration must be > 0, got {self.max_duration}")
        if self.walltime_factor is not None and not self.walltime_factor >= 1:
            raise ConversionError(f"--walltime-factor must be >= 1 (a walltime below the delay kills the "
                                  f"job), got {self.walltime_factor}")
        if self.normalize_memory_kib is not None and self.memory_from == "none":
            raise ConversionError("--normalize-memory needs --memory-from used|requested")
        if self.cores_per_node is not None:
            if not self.cores_per_node > 0:
                raise ConversionError(f"--cores-per-node must be > 0, got {self.cores_per_node}")
            if self.normalize_cpu is not None or self.uniform_cpu is not None or self.cpu_headroom:
                raise ConversionError("keeping node counts (--cores-per-node/--platform) gives each pod its "
                                      "share of the job's processors: no --normalize-cpu, --uniform-cpu "
                                      "or --cpu-headroom")
        elif self.one_pod_per_node or self.group_policy != "gang":
            flag = "--one-pod-per-node" if self.one_pod_per_node else "--group-policy basic"
            raise ConversionError(f"{flag} needs node counts kept (--cores-per-node or --platform)")
        if self.nb_res < 1:
            raise ConversionError(f"--nb-res must be >= 1, got {self.nb_res}")
        self._validate_queues()

    def _validate_queues(self) -> None:
        if self.queue_from is None:
            if self.cluster_queue_from is not None or self.quota_cores is not None or self.fair_sharing:
                given = {"--cluster-queue-from": self.cluster_queue_from is not None,
                         "--quota-cores": self.quota_cores is not None, "--fair-sharing": self.fair_sharing}
                flag = next(f for f, on in given.items() if on)
                raise ConversionError(f"{flag} needs --queue-from")
            return
        for flag, value in (("--queue-from", self.queue_from),
                            ("--cluster-queue-from", self.cluster_queue_from)):
            if value is not None and value not in queues.SOURCES:
                raise ConversionError(f"{flag}: expected one of {', '.join(queues.SOURCES)}, got {value!r}")
        if self.queueing_strategy not in queues.STRATEGIES:
            raise ConversionError(f"--queueing-strategy: expected one of {', '.join(queues.STRATEGIES)}, "
                                  f"got {self.queueing_strategy!r}")
        if self.quota_cores is None or self.quota_cores < 1:
            raise ConversionError("--queue-from shares the platform's cores out as quotas: pass --platform "
                                  "or --quota-cores N (N >= 1)")
        if self.memory_from != "none":
            raise ConversionError("--queue-from writes cpu quotas only, and Kueue admits no job asking for a "
                                  "resource its ClusterQueue does not cover: drop --memory-from")

    @property
    def cpu_cap(self) -> float | None:
        """Largest cpu a job may ask for; floored to the rounding grid so rounding can never exceed it."""
        if self.normalize_cpu is None:
            return None
        scale = 10**self.cpu_decimals
        return math.floor((self.normalize_cpu - self.cpu_headroom) * scale + 1e-9) / scale


@dataclass
class ConvertReport:
    total: int
    kept: int
    skipped: Counter[str] = field(default_factory=Counter)
    without_memory: int = 0
    cpu_reference: float | None = None
    trimmed: int = 0
    capped: int = 0
    groups: int = 0  # jobs kept on several nodes (res > 1)
    queue_plan: queues.QueuePlan | None = None  # --queue-from: the jobs' LocalQueues and the quotas

    @property
    def nb_skipped(self) -> int:
        return sum(self.skipped.values())


def _round_half_up(values: np.ndarray, decimals: int) -> np.ndarray:
    """Go's math.Round (half away from zero), not numpy's banker's rounding: 0.1875 must give 0.188."""
    scale = 10.0**decimals
    return np.floor(values * scale + 0.5) / scale


def _skip_reasons(jobs: pd.DataFrame, options: ConvertOptions) -> np.ndarray:
    """One reason per job, or "" when kept; the first applicable reason wins so counts add up exactly."""
    runtime = jobs["execution_time"].to_numpy()
    procs = _procs(jobs)
    submit = jobs["submission_time"].to_numpy()
    rules: list[tuple[np.ndarray, str]] = [
        (jobs["status"].to_numpy() == STATUS_CANCELLED, SKIP_CANCELLED),
        (runtime == 0, SKIP_ZERO_RUNTIME),
        (runtime < 0, SKIP_NEGATIVE_RUNTIME),
        (procs <= 0, SKIP_NO_PROCS),
        (submit < 0, SKIP_NO_SUBMIT),
    ]
    if options.jobs_from_time is not None:
        rules.append((submit < options.jobs_from_time, SKIP_BEFORE_FROM_TIME))
    reasons = np.full(len(jobs), "", dtype=object)
    for mask, reason in reversed(rules):
        reasons[mask] = reason
    return reasons


def _groups(procs: np.ndarray, options: ConvertOptions) -> tuple[np.ndarray, np.ndarray]:
    """(pods per job, processors per pod): ceil(P / cores per node) pods, each P / pods processors,
    never more than a node's cores (its cpu request, rounded up to the grid, is capped there too)."""
    cores = float(options.cores_per_node)  # type: ignore[arg-type]
    res = np.maximum(np.ceil(procs / cores - 1e-9), 1).astype(np.int64)
    return res, np.minimum(procs / res, cores)


def _procs(jobs: pd.DataFrame) -> np.ndarray:
    """Allocated processors, falling back to requested ones when the log lacks allocations (-1)."""
    alloc = jobs["proc_alloc"].to_numpy()
    return np.where(alloc > 0, alloc, jobs["proc_req"].to_numpy())


def _cpu(procs: np.ndarray, trace: SwfTrace, options: ConvertOptions, report: ConvertReport) -> np.ndarray:
    if options.uniform_cpu is not None:
        cpu = np.full(len(procs), options.uniform_cpu, dtype=np.float64)
    elif options.normalize_cpu is not None:
        if options.normalize_against == "max-procs":
            reference = trace.max_procs
            if reference is None:
                raise ConversionError(f"{trace.path}: --normalize-against max-procs needs a MaxProcs header")
            if len(procs) and procs.max() > reference:
                raise ConversionError(f"{trace.path}: a job uses {procs.max():g} processors, more than "
                                      f"MaxProcs {reference}; use --normalize-against max-job")
        else:
            reference = float(procs.max()) if len(procs) else 1.0
        report.cpu_reference = float(reference)
        cpu = options.normalize_cpu * procs / reference
    else:
        cpu = procs.astype(np.float64)
    cpu = _round_half_up(np.maximum(cpu, options.min_cpu), options.cpu_decimals)
    cap = options.cpu_cap if options.cores_per_node is None else options.cores_per_node
    if cap is not None:
        report.capped = int((cpu > cap).sum())
        cpu = np.minimum(cpu, cap)
    return cpu


def _memory(kept: pd.DataFrame, procs: np.ndarray, options: ConvertOptions,
            report: ConvertReport) -> list[str | None]:
    """SWF memory fields are KB per processor; a pod needs the job's total, optionally normalised."""
    if options.memory_from == "none":
        return [None] * len(kept)
    column = "mem_used" if options.memory_from == "used" else "mem_req"
    per_proc = kept[column].to_numpy()
    present = per_proc > 0
    report.without_memory = int((~present).sum())
    total = np.where(present, per_proc * procs, 0.0)
    if options.normalize_memory_kib is not None and present.any():
        total = options.normalize_memory_kib * total / total[present].max()
    kib = np.maximum(np.ceil(total), 1).astype(np.int64)
    return [format_memory_kib(int(k)) if ok else None for k, ok in zip(kib, present, strict=True)]


def _number_token(value: float) -> str:
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    return text.replace(".", "p")


def profile_name(delay: float, cpu: float | None, memory: str | None) -> str:
    """Readable and injective in (delay, cpu, memory), and a valid container name for batkube's pods."""
    name = f"delay{_number_token(delay)}"
    if cpu is not None:
        name += f"-cpu{_number_token(cpu * 1000)}m"
    if memory is not None:
        name += f"-mem{memory.lower()}"
    return name


def convert(trace: SwfTrace, options: ConvertOptions) -> tuple[BatsimWorkload, ConvertReport]:
    options.validate()
    jobs = trace.jobs
    reasons = _skip_reasons(jobs, options)
    keep = reasons == ""
    report = ConvertReport(total=len(jobs), kept=int(keep.sum()),
                           skipped=Counter(r for r in reasons[~keep].tolist()))
    kept = jobs[keep]
    lines = trace.lines[keep]
    if report.kept == 0:
        details = ", ".join(f"{n} {r}" for r, n in report.skipped.most_common())
        raise ConversionError(f"{trace.path}: no job left to convert ({details})")

    procs = _procs(kept)
    res = np.ones(len(procs), dtype=np.int64)
    if options.cores_per_node is not None:
        res, procs = _groups(procs, options)
        report.groups = int((res > 1).sum())
    cpu = _cpu(procs, trace, options, report)
    runtime = kept["execution_time"].to_numpy()
    delay = runtime if options.max_duration is None else np.minimum(runtime, options.max_duration)
    report.trimmed = int((delay < runtime).sum())
    submit = kept["submission_time"].to_numpy()
    subtime = submit - submit.min()
    memory = _memory(kept, procs, options, report)
    ids = _job_ids(kept, lines, trace, options)
    walltime = None
    if options.walltime_factor is not None:
        # rounded up: a walltime even a millisecond below the delay gets the job killed by Batsim
        walltime = np.ceil(delay * options.walltime_factor * 1000 - 1e-6) / 1000

    if options.queue_from is not None:
        report.queue_plan = queues.plan(
            queues.names(kept, options.queue_from),
            queues.names(kept, options.cluster_queue_from or options.queue_from),
            cpu * res * delay, int(options.quota_cores), options.queueing_strategy,  # type: ignore[arg-type]
            options.fair_sharing)
    profiles: dict[str, DelayProfile] = {}
    out_jobs: list[Job] = []
    order = np.argsort(subtime, kind="stable")
    for i in order.tolist():
        d, c, m = float(delay[i]), float(cpu[i]), memory[i]
        name = profile_name(d, c, m)
        if name not in profiles:
            profiles[name] = DelayProfile(delay=d, cpu=c, memory=m, scheduler=options.scheduler,
                                          onePodPerNode=options.one_pod_per_node or None,
                                          groupPolicy="basic" if options.group_policy == "basic" else None)
        out_jobs.append(Job(id=ids[i], subtime=float(subtime[i]), profile=name, res=int(res[i]),
                            walltime=None if walltime is None else float(max(walltime[i], d, 0.001)),
                            queue=report.queue_plan.job_queues[i] if report.queue_plan else None))
    workload = BatsimWorkload(nb_res=options.nb_res, jobs=out_jobs, profiles=profiles)
    return workload, report


def _job_ids(kept: pd.DataFrame, lines: np.ndarray, trace: SwfTrace, options: ConvertOptions) -> list[str]:
    """SWF job numbers are integers, so never contain Batsim's "w0"; only duplicates force renumbering."""
    if not options.keep_ids:
        return [str(i) for i in range(len(kept))]
    numbers = kept["jobID"].to_numpy()
    duplicated = pd.Series(numbers).duplicated(keep=False).to_numpy()
    if duplicated.any():
        first = numbers[duplicated][0]
        where = ", ".join(f"line {n}" for n in lines[numbers == first][:5])
        raise ConversionError(f"{trace.path}: job number {first} appears more than once ({where}); "
                              "Batsim needs unique ids — pass --renumber")
    return [str(int(n)) for n in numbers]
