"""One run's metric report: completes a run with platform data, computes every metric, writes json/csv.

Kept apart from :mod:`metrics` (pure formulas) because this is where the fallbacks live: which source
gives node capacities (nodes.csv, else ``--platform``, else none) and which notes the user must see.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np

from batkube_py.adapter import fragmentation
from batkube_py.analysis import metrics as m
from batkube_py.analysis.loading import Run
from batkube_py.analysis.platform import pods_from_jobs, read_platform, read_workload_cpu


def attach_platform(run: Run, platform: Path | None, workload: Path | None) -> Run:
    """Give a plain Batsim run nodes (from the platform XML) and pseudo-pods (from its jobs)."""
    if platform is not None and run.nodes is None:
        run.nodes = read_platform(platform)
        run.nb_resources = len(run.nodes)
        run.notes.append(f"node capacities from {platform}")
    if run.pods is None and run.nodes is not None:
        cpu = read_workload_cpu(workload) if workload is not None else None
        run.pods = pods_from_jobs(run.jobs, run.nodes, cpu)
        if cpu is None:
            run.notes.append("no pods.csv and no --workload: each job assumed to request 1 cpu")
        else:
            run.notes.append(f"pod cpu requests from the profiles of {workload}")
    return run


def compute_metrics(run: Run, bsld_tau: float = 10.0) -> dict:
    """All metrics of a run as a flat dict (plus ``unschedulable_reasons`` and ``notes``)."""
    jobs = run.jobs
    out: dict = m.job_metrics(jobs, bsld_tau)
    t0 = float(jobs["submission_time"].min()) if len(jobs) else 0.0
    t1 = out["makespan"] if out["makespan"] is not None else t0
    if run.pods is not None and len(run.pods):
        counts = run.pods["state"].fillna("").str.lower().value_counts()
        out["pods_pending"] = int(counts.get("pending", 0))
    if run.nb_resources:
        out["host_utilisation"] = m.host_utilisation(jobs, run.nb_resources, t0, t1)
    else:
        out["host_utilisation"] = None
    if run.pods is not None and run.nodes is not None:
        pods = m.bound_pods(run.pods, t1)
        out.update(m.cpu_utilisation(pods, run.nodes, t0, t1))
        out.update(m.over_allocation_summary(m.over_allocation(pods, run.nodes), "cpu"))
        if "memory_request" in pods and "memory" in run.nodes and run.nodes["memory"].notna().all():
            over = m.over_allocation(pods, run.nodes, "memory_request", "memory")
            out.update(m.over_allocation_summary(over, "memory"))
        if "pods" in run.nodes and run.nodes["pods"].notna().all():
            out.update(m.over_allocation_summary(m.over_allocation(pods, run.nodes, "count", "pods"), "pods"))
        if {"group", "group_size"} <= set(run.pods.columns):
            out.update(fragmentation.from_frames(run.pods, run.nodes))
    else:
        out["cpu_utilisation"] = None
        run.notes.append(
            "cpu utilisation and over-allocation not computed: no pods.csv/nodes.csv; "
            "pass --platform (and --workload) for a plain Batsim run"
        )
    if run.decisions is not None and len(run.decisions):
        out["unschedulable_reasons"] = m.unschedulable_reasons(run.decisions)
    if run.rejected is not None and len(run.rejected):
        counts = run.rejected["field"].fillna("").value_counts()
        out["rejection_fields"] = {str(k): int(v) for k, v in counts.items()}
    summary_over = (run.summary or {}).get("over_allocations")
    if summary_over is not None and out.get("cpu_over_allocations") not in (None, summary_over):
        run.notes.append(
            f"summary.json reports over_allocations={summary_over}, the per-node cpu sweep "
            f"finds {out['cpu_over_allocations']} episode(s)"
        )
    out["notes"] = list(dict.fromkeys(run.notes))
    return out


def check_against_schedule(metrics: dict, schedule: dict) -> dict[str, tuple[float, float]]:
    """Metrics differing from out_schedule.csv beyond its 6-decimal rounding: {name: (ours, Batsim's)}."""
    pairs = {
        "makespan": "makespan",
        "max_waiting_time": "max_waiting_time",
        "max_turnaround_time": "max_turnaround_time",
        "max_slowdown": "max_slowdown",
        "batsim_mean_waiting_time": "mean_waiting_time",
        "batsim_mean_turnaround_time": "mean_turnaround_time",
        "batsim_mean_slowdown": "mean_slowdown",
        "jobs_total": "nb_jobs",
        "jobs_rejected": "nb_jobs_rejected",
        "jobs_succeeded": "nb_jobs_success",
        "jobs_killed": "nb_jobs_killed",
    }
    bad = {}
    for ours, theirs in pairs.items():
        a, b = metrics.get(ours), schedule.get(theirs)
        if a is None or b is None or isinstance(b, str):
            continue
        if not math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=2e-6):
            bad[ours] = (float(a), float(b))
    return bad


def _scalar_rows(metrics: dict) -> list[tuple[str, object]]:
    rows: list[tuple[str, object]] = []
    for key, value in metrics.items():
        if key == "unschedulable_reasons":
            rows += [(f"unschedulable_reason[{r}]", n) for r, n in value.items()]
        elif key == "rejection_fields":
            rows += [(f"rejected_field[{r}]", n) for r, n in value.items()]
        elif key != "notes":
            rows.append((key, "" if value is None else value))
    return rows


def write_metrics(metrics: dict, outdir: Path) -> list[Path]:
    outdir.mkdir(parents=True, exist_ok=True)
    json_path, csv_path = outdir / "metrics.json", outdir / "metrics.csv"
    clean = {k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in metrics.items()}
    json_path.write_text(json.dumps(clean, indent=2) + "\n", encoding="utf-8")
    with csv_path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["metric", "value"])
        writer.writerows(_scalar_rows(clean))
    return [json_path, csv_path]
