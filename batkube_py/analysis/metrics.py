"""Scheduling metrics as pure, vectorised functions over the frames of :mod:`loading`.

Definitions (also in ``batkube analyze --help``):

* Means/percentiles over *started* jobs (rejected ones have no wait). This is what the thesis tables and
  ``evalys``' ``js.df.waiting_time.mean()`` report. Batsim's out_schedule.csv instead divides the sums by
  all jobs, rejected included; those values are reported too, prefixed ``batsim_``, and equal
  out_schedule.csv's ``mean_*`` exactly.
* ``slowdown`` is Batsim's (turnaround / execution = the ``stretch`` column); ``bounded_slowdown`` is
  max(1, turnaround / max(execution, tau)) with tau = 10 s by default.
* cpu utilisation is requested cpu of bound pods over the nodes' allocatable cpu, time-weighted over
  [first submission, makespan]. It can exceed 1 when nodes are over-allocated; that is the point of
  showing it. evalys' machine count is not used: with compute sharing it counts co-located jobs twice.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

EPS = 1e-9


def _f(value: object) -> float | None:
    """JSON-friendly float: NaN becomes None."""
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if np.isnan(v) else v


def clock_note(metrics: dict, summary: dict | None, partial: bool) -> str | None:
    """Why analyze's waits differ from summary.json's: two clocks of one run. Batsim's out_jobs.csv times
    a job on the platform (it starts once the EXECUTE_JOB message has crossed the platform's network);
    the adapter's pods.csv and summary.json time its messages (EXECUTE_JOB sent, JOB_COMPLETED read)."""
    ours = metrics.get("mean_waiting_time")
    theirs = (summary or {}).get("mean_waiting_time")
    if partial or ours is None or theirs is None or abs(ours - theirs) < 1e-9:
        return None
    return (f"waits and times here are Batsim's (out_jobs.csv: each job on the platform); summary.json's "
            f"mean_waiting_time {theirs:.6g} is the adapter's (pods.csv: EXECUTE_JOB sent, JOB_COMPLETED "
            f"read), {ours - theirs:+.3g} s a job apart")  # fmt: skip


def job_metrics(jobs: pd.DataFrame, bsld_tau: float = 10.0) -> dict[str, float | int | None]:
    """Job-level metrics from out_jobs.csv alone (works for any Batsim or thesis run)."""
    started = jobs[jobs["starting_time"].notna() & (jobs["state"] != "rejected")]
    n_all = len(jobs)
    wait = started["waiting_time"]
    turn = started["turnaround_time"]
    execution = started["execution_time"]
    bsld = np.maximum(1.0, turn / np.maximum(execution, bsld_tau))
    stretch = started["stretch"]
    finished = started["finish_time"].notna()
    t0 = jobs["submission_time"].min()
    makespan = started["finish_time"].max()
    span = makespan - t0 if n_all else np.nan
    counts = jobs["state"].value_counts()
    return {
        "jobs_total": n_all,
        "jobs_succeeded": int(counts.get("succeeded", 0)),
        "jobs_failed": int(counts.get("failed", 0)),
        "jobs_killed": int(counts.get("killed", 0)),
        "jobs_rejected": int(counts.get("rejected", 0)),
        "makespan": _f(makespan),
        "mean_waiting_time": _f(wait.mean()),
        "median_waiting_time": _f(wait.median()),
        "p95_waiting_time": _f(wait.quantile(0.95)) if len(wait) else None,
        "max_waiting_time": _f(wait.max()),
        "mean_turnaround_time": _f(turn.mean()),
        "max_turnaround_time": _f(turn.max()),
        "mean_slowdown": _f(stretch.mean()),
        "max_slowdown": _f(stretch.max()),
        "mean_bounded_slowdown": _f(bsld.mean()),
        "max_bounded_slowdown": _f(bsld.max()),
        "throughput_jobs_per_hour": _f(finished.sum() / span * 3600.0) if span and span > 0 else None,
        "batsim_mean_waiting_time": _f(wait.sum() / n_all) if n_all else None,
        "batsim_mean_turnaround_time": _f(turn.sum() / n_all) if n_all else None,
        "batsim_mean_slowdown": _f(stretch.sum() / n_all) if n_all else None,
    }


def step_series(start: np.ndarray, end: np.ndarray, weight: np.ndarray) -> pd.DataFrame:
    """Sum of ``weight`` over intervals [start, end) as a step function: value holds from ``time`` on.

    Ends sort before starts at equal times so back-to-back intervals do not count as overlapping.
    """
    start, end, weight = (np.asarray(a, dtype=float) for a in (start, end, weight))
    times = np.concatenate([start, end])
    deltas = np.concatenate([weight, -weight])
    order = np.lexsort((deltas, times))
    times, values = times[order], np.cumsum(deltas[order])
    last = np.append(times[1:] != times[:-1], True)
    values = values[last]
    values[np.abs(values) < EPS] = 0.0
    return pd.DataFrame({"time": times[last], "value": values})


INSTANT = 0.1
"""Events closer than this (s) belong to one simulated instant. Batsim's clock runs on by a fraction of a
millisecond per message, so a completion and the start it allows land milliseconds apart: sampled at
every event, a plot shows states that last a few ms (running drops to 0 at each completion, the queue of a
spaced workload is a comb of 1-ms spikes) and that no simulated process could observe."""


def instant_ends(series: pd.DataFrame, resolution: float = INSTANT) -> pd.DataFrame:
    """A step series sampled at the end of each simulated instant, for plots.

    An instant is a chain of events each less than ``resolution`` after the previous one; it is shown as
    one step at its first event to the value after its last. Metrics keep the exact series.
    """
    if len(series) < 2:
        return series.reset_index(drop=True)
    t = series["time"].to_numpy()
    gap = np.diff(t) >= resolution
    first, last = np.insert(gap, 0, True), np.append(gap, True)
    return pd.DataFrame({"time": t[first], "value": series["value"].to_numpy()[last]})


def natural_key(text: object) -> list[object]:
    """Sort key putting node-2 before node-10 (and run_2 before run_10)."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(text))]


PIXELS = 1000
"""A figure's series drop spikes shorter than its time span over this: about one pixel wide."""


def without_blips(series: pd.DataFrame, min_duration: float) -> pd.DataFrame:
    """The step series without its blips: a state shorter than `min_duration` above (or below) both the
    states around it is not drawn. Batsim's clock drifts by a fraction of a millisecond per message, so over
    a long run a completion and the start it allows drift apart past any fixed instant (0.11 s at 700 s
    of a spaced workload): each submission then draws a spike no wider than a pixel, a comb. Ramps and
    plateaus, however short their steps, are kept; metrics keep the exact series."""
    for _ in range(8):
        t, v = series["time"].to_numpy(), series["value"].to_numpy()
        if len(t) < 3:
            break
        cur, before, after = v[1:-1], v[:-2], v[2:]
        short = (t[2:] - t[1:-1]) < min_duration
        blip = short & (((cur > before) & (cur > after)) | ((cur < before) & (cur < after)))
        if not blip.any():
            break
        keep = np.concatenate(([True], ~blip, [True]))
        t, v = t[keep], v[keep]
        fresh = np.concatenate(([True], v[1:] != v[:-1]))  # a value repeated after a blip is one step
        series = pd.DataFrame({"time": t[fresh], "value": v[fresh]})
    return series.reset_index(drop=True)


def plotted(series: pd.DataFrame) -> pd.DataFrame:
    """What a figure draws of a step series: instant ends (:func:`instant_ends`), without blips."""
    series = instant_ends(series)
    if len(series) < 3:
        return series
    span = float(series["time"].iloc[-1] - series["time"].iloc[0])
    return without_blips(series, span / PIXELS)


def queue_series(jobs: pd.DataFrame) -> pd.DataFrame:
    """Number of submitted, not yet started jobs over time (rejected jobs never queue)."""
    queued = jobs[jobs["state"] != "rejected"]
    start = queued["starting_time"].fillna(queued["finish_time"]).fillna(np.inf)
    return step_series(queued["submission_time"].to_numpy(), start.to_numpy(), np.ones(len(queued)))


def bound_pods(pods: pd.DataFrame, run_end: float) -> pd.DataFrame:
    """Pods that ran on a node, with open intervals closed at the end of the run."""
    bound = pods[pods["bind_time"].notna() & pods["node"].notna() & (pods["node"] != "")].copy()
    bound["finish_time"] = bound["finish_time"].fillna(run_end)
    return bound


def interval_mean(start: pd.Series, end: pd.Series, weight: pd.Series, t0: float, t1: float) -> float:
    """Time-weighted mean over [t0, t1] of the summed weights of [start, end) intervals."""
    if not t1 > t0:
        return float("nan")
    overlap = (np.minimum(end, t1) - np.maximum(start, t0)).clip(lower=0)
    return float((overlap * weight).sum() / (t1 - t0))


def cpu_utilisation(pods: pd.DataFrame, nodes: pd.DataFrame, t0: float, t1: float) -> dict[str, float | None]:
    capacity = float(nodes["cpu"].sum())
    if capacity <= 0:
        return {"cpu_utilisation": None, "cpu_utilisation_peak": None}
    mean = interval_mean(pods["bind_time"], pods["finish_time"], pods["cpu_request"], t0, t1)
    series = step_series(pods["bind_time"], pods["finish_time"], pods["cpu_request"])
    peak = series["value"].max() if len(series) else 0.0
    return {"cpu_utilisation": _f(mean / capacity), "cpu_utilisation_peak": _f(peak / capacity)}


def host_utilisation(jobs: pd.DataFrame, nb_resources: int, t0: float, t1: float) -> float | None:
    """Fraction of host-time with at least one job running, each host counted once even when shared.

    This is what evalys' ``mean_utilisation() / MaxProcs`` means to measure; evalys sums co-located jobs.
    """
    started = jobs[jobs["starting_time"].notna() & (jobs["allocated_resources"] != "")]
    if nb_resources <= 0 or not t1 > t0 or started.empty:
        return None
    res = expand_allocations(started["allocated_resources"])
    sub = started.loc[res.index]
    ev = pd.DataFrame(
        {
            "host": np.concatenate([res.to_numpy(), res.to_numpy()]),
            "time": np.concatenate([sub["starting_time"].clip(t0, t1), sub["finish_time"].clip(t0, t1)]),
            "delta": np.concatenate([np.ones(len(sub)), -np.ones(len(sub))]),
        }
    ).sort_values(["host", "time", "delta"], kind="mergesort")
    count = ev.groupby("host")["delta"].cumsum().to_numpy()
    nxt = ev.groupby("host")["time"].shift(-1).to_numpy()
    busy = np.nansum(np.where(count > 0, nxt - ev["time"].to_numpy(), 0.0))
    return _f(busy / (nb_resources * (t1 - t0)))


def expand_allocations(alloc: pd.Series) -> pd.Series:
    """Batsim interval sets → one row per (job index, resource id). Plain ids take a fast path."""
    simple = pd.to_numeric(alloc, errors="coerce")
    out = [simple[simple.notna()]]
    for idx, text in alloc[simple.isna() & (alloc != "")].items():
        bounds = [part.split("-") for part in text.split()]
        ids = [r for b in bounds for r in range(int(b[0]), int(b[-1]) + 1)]
        out.append(pd.Series(ids, index=[idx] * len(ids), dtype=float))
    return pd.concat(out).astype(int).sort_index(kind="mergesort")


def over_allocation(
    pods: pd.DataFrame, nodes: pd.DataFrame, request: str = "cpu_request", capacity: str = "cpu"
) -> pd.DataFrame:
    """Per-node intervals where the summed ``request`` of running pods exceeds the node's ``capacity``.

    Returns one row per over-allocated step (node, start, end, used, capacity); consecutive rows of a node
    form an episode. Vectorised: one sort and a grouped cumsum, no per-pod loop.
    """
    cols = ["node", "start", "end", "used", "capacity"]
    cap = nodes.set_index("node")[capacity]
    pods = pods[pods["node"].isin(cap.index)]
    if pods.empty:
        return pd.DataFrame(columns=cols)
    w = pods[request].fillna(0.0).to_numpy() if request != "count" else np.ones(len(pods))
    ev = pd.DataFrame(
        {
            "node": np.concatenate([pods["node"].to_numpy(), pods["node"].to_numpy()]),
            "time": np.concatenate([pods["bind_time"].to_numpy(), pods["finish_time"].to_numpy()]),
            "delta": np.concatenate([w, -w]),
        }
    ).sort_values(["node", "time", "delta"], kind="mergesort")
    ev["used"] = ev.groupby("node", sort=False)["delta"].cumsum()
    ev = ev.groupby(["node", "time"], sort=False).tail(1)
    ev["end"] = ev.groupby("node", sort=False)["time"].shift(-1)
    ev["capacity"] = ev["node"].map(cap).to_numpy()
    over = ev[(ev["used"] > ev["capacity"] + EPS) & ev["end"].notna()]
    return over.rename(columns={"time": "start"})[cols].reset_index(drop=True)


def over_allocation_summary(over: pd.DataFrame, prefix: str) -> dict[str, float | int | None]:
    """Episodes (a node entering over-allocation), node-seconds spent over, and the worst ratio."""
    if over.empty:
        return {
            f"{prefix}_over_allocations": 0,
            f"{prefix}_over_allocated_node_seconds": 0.0,
            f"{prefix}_max_overcommit": None,
        }
    prev_end = over.groupby("node", sort=False)["end"].shift(1)
    episodes = int(((prev_end != over["start"]) | prev_end.isna()).sum())
    ratio = over["used"] / over["capacity"].replace(0, np.nan)
    return {
        f"{prefix}_over_allocations": episodes,
        f"{prefix}_over_allocated_node_seconds": _f((over["end"] - over["start"]).sum()),
        f"{prefix}_max_overcommit": _f(ratio.max()),
    }


def unschedulable_reasons(decisions: pd.DataFrame) -> dict[str, int]:
    """How many unschedulable attempts each reason appeared in (most frequent first)."""
    failed = decisions[decisions["result"] == "unschedulable"]["reasons"].dropna()
    counts: dict[str, int] = {}
    for reasons in failed:
        for reason in reasons if isinstance(reasons, dict) else {}:
            counts[reason] = counts.get(reason, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
