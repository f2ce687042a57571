"""Periods of a trace with a given mean utilisation, found by evalys and checked independently.

evalys' ``Workload.extract_periods_with_given_utilisation`` does the search (the thesis used it; keeping it
keeps results comparable), but around it this module:

- builds the evalys ``Workload`` from our own parse, because ``Workload.from_csv`` drops the first job;
- supplies ``MaxProcs``/``TimeZoneString`` when the header lacks them (evalys raises AttributeError);
- treats a missing wait (-1) as 0 — evalys would start those jobs a second before their submission;
- restores numpy's global random state, which evalys reseeds;
- re-measures each period's utilisation with plain numpy and drops periods that disagree;
- writes the *original* rows (the evalys frame went through float/cleanup round trips);
- writes a real epoch in ``UnixStartTime`` (evalys writes the period start in trace seconds);
- with ``change-submit-times``, fixes the wait so that start times do not move (evalys keeps the old wait).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from swf_tools.errors import SwfError, SwfHeaderError
from swf_tools.stats import mean_utilisation, utilisation_jobs
from swf_tools.swf import HeaderEntry, SwfHeader, SwfTrace

Merge = Literal["none", "basic", "change-submit-times"]
EVALYS_CONVERSION = "Workload extracted using Evalys: https://github.com/oar-team/evalys"
_ROW = "_swf_tools_row"


@dataclass(frozen=True)
class Period:
    begin: float
    end: float
    utilisation: float  # measured here, not evalys' figure
    evalys_utilisation: float
    nb_jobs: int  # jobs submitted inside [begin, end)


@dataclass
class PeriodSearch:
    periods: list[Period]
    candidates: int
    rejected_by_check: int
    max_procs: int


MAX_CANDIDATES = 100_000  # periods evalys would examine one by one (each a pandas slice)


def _max_procs(trace: SwfTrace, override: int | None) -> int:
    if override is not None:
        return override
    value = trace.max_procs
    if value is None or value <= 0:
        raise SwfHeaderError(f"{trace.path}: no usable 'MaxProcs' header, needed to turn the load into a "
                             "utilisation; pass --max-procs N")
    return value


def _evalys_workload(trace: SwfTrace, max_procs: int):  # -> evalys.workload.Workload
    from evalys.workload import Workload

    frame = utilisation_jobs(trace.jobs).copy()
    frame["waiting_time"] = frame["waiting_time"].clip(lower=0)
    frame[_ROW] = np.flatnonzero(trace.jobs["status"].to_numpy() <= 1)
    timezone = trace.header.value("TimeZoneString") or "UTC"
    return Workload(frame, MaxProcs=str(max_procs), TimeZoneString=timezone,
                    UnixStartTime=str(trace.header.integer("UnixStartTime", trace.path) or 0))


def find_periods(trace: SwfTrace, period_seconds: float, utilisation: float, variation: float = 0.01,
                 seed: int | None = None, max_procs: int | None = None,
                 tolerance: float = 1e-6) -> PeriodSearch:
    from evalys.metrics import load_mean

    procs = _max_procs(trace, max_procs)
    submit = trace.jobs["submission_time"].to_numpy(dtype=float)
    span = float(np.nanmax(submit) - np.nanmin(submit)) if submit.size else 0.0
    if span / period_seconds > MAX_CANDIDATES:
        raise SwfError(f"{trace.path}: a {period_seconds:g} s period cuts this {span:.0f} s trace into "
                       f"more than {MAX_CANDIDATES:,} candidates; use a longer --period")
    workload = _evalys_workload(trace, procs)
    hours = period_seconds / 3600.0
    state = np.random.get_state()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # evalys' pandas FutureWarnings are not the user's concern
            found = workload.extract_periods_with_given_utilisation(
                hours, utilisation, variation=variation, randomize_starting_times=seed is not None,
                random_seed=seed or 0)
            util = workload.utilisation
            evalys_values = [load_mean(util, begin=w.ExtractBegin, end=w.ExtractEnd) / procs for w in found]
    finally:
        np.random.set_state(state)
    counted = utilisation_jobs(trace.jobs)
    periods: list[Period] = []
    rejected = 0
    seen: set[float] = set()
    for extracted, evalys_value in zip(found, evalys_values, strict=True):
        begin, end = float(extracted.ExtractBegin), float(extracted.ExtractEnd)
        if begin in seen:  # evalys' random starts can repeat
            continue
        seen.add(begin)
        measured = mean_utilisation(counted, begin, end, procs)
        if abs(measured - utilisation) > variation + tolerance:
            rejected += 1
            continue
        nb_jobs = int(((submit >= begin) & (submit < end)).sum())
        periods.append(Period(begin, end, measured, float(evalys_value), nb_jobs))
    candidates = _candidate_count(workload, hours, seed)
    return PeriodSearch(periods, candidates, rejected, procs)


def measure_period(trace: SwfTrace, begin: float, end: float, max_procs: int | None = None) -> Period:
    """A period given by its bounds (a published extract's window), measured as find_periods measures the
    ones it finds, so that the header written with it states the period's real utilisation."""
    procs = _max_procs(trace, max_procs)
    utilisation = mean_utilisation(utilisation_jobs(trace.jobs), begin, end, procs)
    submit = trace.jobs["submission_time"].to_numpy(dtype=float)
    nb_jobs = int(((submit >= begin) & (submit < end)).sum())
    return Period(begin, end, utilisation, float("nan"), nb_jobs)


def _candidate_count(workload, hours: float, seed: int | None) -> int:
    """How many periods evalys examined (it skips its first and last candidate), for the user's report."""
    if seed is not None:
        return 48
    index = workload.utilisation.index
    return max(len(np.arange(min(index), max(index), 3600 * hours)) - 2, 0)


def extract_period(trace: SwfTrace, period: Period, merge: Merge = "none", rebase: bool = False,
                   utilisation_asked: tuple[float, float] | None = None) -> tuple[SwfHeader, pd.DataFrame]:
    """The jobs of one period, as evalys' ``cut_workload`` selects them, and an evalys-style header."""
    from evalys.utils import cut_workload

    frame = trace.jobs.copy()
    frame[_ROW] = np.arange(len(frame))
    clean = frame.copy()
    clean["waiting_time"] = clean["waiting_time"].clip(lower=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parts = cut_workload(clean, period.begin, period.end)
    selected = [parts["workload"]]
    if merge != "none":
        selected = [parts["running"], parts["queue"], parts["workload"]]
    rows = np.concatenate([part[_ROW].to_numpy() for part in selected]).astype(np.int64)
    out = trace.jobs.iloc[rows].copy()
    if merge == "change-submit-times":
        _change_submit_times(out, parts, period.begin)
    if rebase:
        out["submission_time"] -= period.begin
    out = out.sort_values(["submission_time", "jobID"], kind="stable").reset_index(drop=True)
    return _header(trace, period, rebase, utilisation_asked), out


def _change_submit_times(out: pd.DataFrame, parts: dict[str, pd.DataFrame], begin: float) -> None:
    """Running jobs are resubmitted at their start, queued ones at the period start, start times kept."""
    running = set(parts["running"][_ROW].tolist())
    queued = set(parts["queue"][_ROW].tolist())
    for label, frame_rows in (("running", running), ("queue", queued)):
        mask = out.index.isin(list(frame_rows))
        wait = out.loc[mask, "waiting_time"].clip(lower=0)
        start = out.loc[mask, "submission_time"] + wait
        new_submit = start if label == "running" else pd.Series(begin, index=start.index)
        known = out.loc[mask, "waiting_time"] >= 0
        out.loc[mask, "waiting_time"] = np.where(known, start - new_submit, -1)
        out.loc[mask, "submission_time"] = new_submit


def _header(trace: SwfTrace, period: Period, rebase: bool,
            asked: tuple[float, float] | None) -> SwfHeader:
    source_epoch = trace.header.integer("UnixStartTime", trace.path) or 0
    header = SwfHeader()
    header.set("Conversion", EVALYS_CONVERSION)
    header.set("UnixStartTime", str(int(source_epoch + (period.begin if rebase else 0))))
    timezone = trace.header.value("TimeZoneString")
    if timezone:
        header.set("TimeZoneString", timezone)
    max_procs = trace.header.value("MaxProcs")
    if max_procs:
        header.set("MaxProcs", max_procs)
    hours = (period.end - period.begin) / 3600
    note = (f"swf-tools extract from {trace.path.name}: period [{period.begin:.15g}, {period.end:.15g}) s "
            f"of the source ({hours:g} h), mean utilisation {period.utilisation:.4f}")
    if asked:
        note += f" (asked {asked[0]:g} ± {asked[1]:g})"
    if rebase:
        note += "; submit times rebased to the period start"
    header.entries.append(HeaderEntry("Note", note, 0))
    return header
