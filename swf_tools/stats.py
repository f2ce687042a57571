"""Trace statistics, computed directly with numpy so they can double-check evalys' numbers."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from swf_tools.swf import SwfTrace


def job_intervals(jobs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, procs) of the jobs that occupied processors.

    A missing wait (-1, as in the NASA trace whose submit times *are* start times) counts as 0; evalys would
    start such jobs one second before their submission.  Jobs without runtime or allocation do not count.
    """
    wait = jobs["waiting_time"].to_numpy()
    runtime = jobs["execution_time"].to_numpy()
    procs = jobs["proc_alloc"].to_numpy()
    ok = (runtime >= 0) & (procs > 0) & (jobs["submission_time"].to_numpy() >= 0)
    start = jobs["submission_time"].to_numpy()[ok] + np.maximum(wait[ok], 0)
    return start, start + runtime[ok], procs[ok]


def utilisation_jobs(jobs: pd.DataFrame) -> pd.DataFrame:
    """The rows that count for utilisation, as evalys' reader keeps them (status <= 1, i.e. no partial
    checkpoint records and no cancelled jobs; -1, unknown, included)."""
    return jobs[jobs["status"].to_numpy() <= 1]


def mean_utilisation(jobs: pd.DataFrame, begin: float, end: float, max_procs: int) -> float:
    """Processor-time used inside [begin, end) over the processor-time available."""
    if end <= begin or max_procs <= 0:
        raise ValueError("empty period or no processors")
    start, stop, procs = job_intervals(jobs)
    overlap = np.clip(np.minimum(stop, end) - np.maximum(start, begin), 0, None)
    return float((overlap * procs).sum() / ((end - begin) * max_procs))


@dataclass
class TraceInfo:
    path: str
    jobs: int
    malformed: int
    first_submit: float
    last_end: float
    max_procs_header: int | None
    max_procs_used: int
    utilisation: float | None
    status: dict[str, int] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    runtime_quantiles: dict[str, float] = field(default_factory=dict)
    zero_runtime: int = 0
    missing_runtime: int = 0
    header: dict[str, str] = field(default_factory=dict)

    @property
    def span(self) -> float:
        return self.last_end - self.first_submit


_STATUS_NAMES = {-1: "unknown (-1)", 0: "failed (0)", 1: "completed (1)", 2: "partial (2)",
                 3: "partial, last (3)", 4: "partial, failed (4)", 5: "cancelled (5)"}


def _size_buckets(procs: np.ndarray) -> dict[str, int]:
    """Power-of-two buckets: parallel job sizes cluster on powers of two, so these read well."""
    out: dict[str, int] = {}
    missing = int((procs <= 0).sum())
    if missing:
        out["missing"] = missing
    sizes = procs[procs > 0]
    if not len(sizes):
        return out
    upper = 1
    low = 1
    while low <= sizes.max():
        count = int(((sizes >= low) & (sizes <= upper)).sum())
        if count:
            out[str(low) if low == upper else f"{low}-{upper}"] = count
        low, upper = upper + 1, upper * 2
    return out


def trace_info(trace: SwfTrace, max_procs: int | None = None) -> TraceInfo:
    jobs = trace.jobs
    start, stop, procs = job_intervals(utilisation_jobs(jobs))
    header_procs = trace.max_procs
    used = int(jobs["proc_alloc"].max()) if len(jobs) else 0
    capacity = max_procs or header_procs
    submit = jobs["submission_time"].to_numpy()
    first = float(submit[submit >= 0].min()) if (submit >= 0).any() else 0.0
    last = float(stop.max()) if len(stop) else first
    util = None
    if capacity and last > first:
        util = float((procs * (stop - start)).sum() / (capacity * (last - first)))
    runtime = jobs["execution_time"].to_numpy()
    valid = runtime[runtime > 0]
    quantiles = {}
    if len(valid):
        for label, q in (("min", 0.0), ("p25", 0.25), ("median", 0.5), ("p75", 0.75), ("p95", 0.95),
                         ("max", 1.0)):
            quantiles[label] = float(np.quantile(valid, q))
        quantiles["mean"] = float(valid.mean())
    status = jobs["status"].astype(int).value_counts().sort_index()
    keys = ("Computer", "Installation", "UnixStartTime", "TimeZoneString", "StartTime", "MaxNodes",
            "MaxProcs")
    header = {k: v for k in keys if (v := trace.header.value(k)) is not None}
    return TraceInfo(
        path=str(trace.path), jobs=len(jobs), malformed=len(trace.malformed), first_submit=first,
        last_end=last, max_procs_header=header_procs, max_procs_used=used, utilisation=util,
        status={_STATUS_NAMES.get(int(k), str(k)): int(v) for k, v in status.items()},
        sizes=_size_buckets(np.where(jobs["proc_alloc"] > 0, jobs["proc_alloc"], jobs["proc_req"])),
        runtime_quantiles=quantiles, zero_runtime=int((runtime == 0).sum()),
        missing_runtime=int((runtime < 0).sum()), header=header,
    )
