"""Figures of one run, written as PNG and SVG with the headless Agg backend.

Each figure is a function drawing on fresh axes, so tests and ``compare`` can reuse them; :func:`save`
writes both formats and closes the figure (long analyses would otherwise keep every figure in memory).
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from batkube_py.analysis import metrics as m  # noqa: E402
from batkube_py.analysis.gantt import plot_job_gantt  # noqa: E402
from batkube_py.analysis.loading import Run  # noqa: E402
from batkube_py.analysis.node_gantt import plot_node_gantt  # noqa: E402

FIGSIZE = (10.0, 6.0)
DPI = 100
FORMATS = ("png", "svg")


def save(fig: Figure, outdir: Path, stem: str) -> list[Path]:
    outdir.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in FORMATS:
        path = outdir / f"{stem}.{fmt}"
        fig.savefig(path, format=fmt, dpi=DPI)
        paths.append(path)
    plt.close(fig)
    return paths


def _steps(ax, series: pd.DataFrame, scale: float = 1.0, **kw) -> None:
    """A count over time as seen at the end of each simulated instant (see :data:`metrics.INSTANT`),
    without spikes narrower than a pixel (:func:`metrics.without_blips`)."""
    series = m.plotted(series)
    if len(series):
        ax.step(series["time"], series["value"] / scale, where="post", **kw)


def utilisation_figure(run: Run, t1: float) -> Figure:
    """cpu utilisation (or running jobs when capacities are unknown) and queue length over time."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=FIGSIZE, sharex=True)
    jobs = run.jobs
    if run.pods is not None and run.nodes is not None:
        pods = m.bound_pods(run.pods, t1)
        series = m.step_series(pods["bind_time"], pods["finish_time"], pods["cpu_request"])
        _steps(top, series, float(run.nodes["cpu"].sum()) / 100.0, color="tab:blue", label="requested cpu")
        top.axhline(100.0, color="black", linestyle="--", linewidth=0.8, label="capacity")
        top.set_ylabel("cpu utilisation (%)")
        top.legend(loc="upper right", fontsize="small")
    else:
        ran = jobs[jobs["starting_time"].notna()]
        running = m.step_series(ran["starting_time"], ran["finish_time"], np.ones(len(ran)))
        _steps(top, running, color="tab:blue")
        top.set_ylabel("running jobs")
        top.yaxis.set_major_locator(MaxNLocator(integer=True))
        top.set_title(
            "cpu capacities unknown (no nodes.csv / --platform): running jobs shown", fontsize="small"
        )
    _steps(bottom, m.queue_series(jobs), color="tab:orange")
    bottom.set_ylabel("queued jobs")
    bottom.yaxis.set_major_locator(MaxNLocator(integer=True))
    bottom.set_xlabel("time (s)")
    for ax in (top, bottom):
        ax.grid(True)
    fig.suptitle("Utilisation and queue length")
    fig.tight_layout()
    return fig


def waiting_histogram(
    waits: dict[str, pd.Series], nbins: int = 40
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Shared bin edges and, per label, the fraction of that label's jobs in each bin.

    Fractions, not counts: a group of 20 repetitions pooled must not look twice as tall as one of 10.
    """
    finite = {label: w.dropna().to_numpy(dtype=float) for label, w in waits.items()}
    hi = max((w.max() for w in finite.values() if len(w)), default=1.0)
    bins = np.linspace(0.0, hi if hi > 0 else 1.0, nbins + 1)
    return bins, {label: np.histogram(w, bins)[0] / max(len(w), 1) for label, w in finite.items()}


def short_label(label: str, width: int = 28) -> str:
    """Long labels wrapped onto lines, so that legends and tick labels do not run into each other."""
    return textwrap.fill(label, width)


def waiting_figure(waits: dict[str, pd.Series], title: str = "Waiting time distribution") -> Figure:
    """Histogram (fraction of jobs per bin) and empirical CDF of waiting times; one curve per label."""
    fig, (hist, ecdf) = plt.subplots(1, 2, figsize=FIGSIZE)
    bins, fractions = waiting_histogram(waits)
    for label, w in waits.items():
        n = int(w.notna().sum())
        name = short_label(f"{label} ({n} jobs)")
        hist.stairs(fractions[label], bins, fill=len(waits) == 1, alpha=0.5 if len(waits) == 1 else 0.9,
                    linewidth=1.5, label=name)  # fmt: skip
        xs = np.sort(w.dropna().to_numpy())
        ecdf.step(xs, np.arange(1, len(xs) + 1) / max(len(xs), 1), where="post", label=name)
    hist.set_xlabel("waiting time (s)")
    hist.set_ylabel(f"fraction of jobs per {bins[1] - bins[0]:.3g}-s bin")
    ecdf.set_xlabel("waiting time (s)")
    ecdf.set_ylabel("fraction of jobs")
    for ax in (hist, ecdf):
        ax.grid(True)
    if len(waits) > 1:  # one legend, where the CDFs leave room (below them, on the right)
        ecdf.legend(fontsize="small", loc="lower right")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def reasons_figure(reasons: dict[str, int]) -> Figure:
    fig, ax = plt.subplots(figsize=FIGSIZE)
    names = list(reasons)[::-1]
    bars = ax.barh([short_label(n, 45) for n in names], [reasons[n] for n in names], color="tab:red")
    ax.bar_label(bars, padding=3)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("unschedulable attempts")
    ax.set_title("Unschedulable reasons")
    fig.tight_layout()
    return fig


def job_gantt_figure(run: Run) -> Figure:
    fig, ax = plt.subplots(figsize=FIGSIZE)
    names = None
    if run.nodes is not None and "resource_id" in run.nodes and run.nodes["resource_id"].notna().all():
        names = dict(zip(run.nodes["resource_id"].astype(int), run.nodes["node"], strict=True))
    plot_job_gantt(ax, run.jobs, run.nb_resources, names)
    fig.tight_layout()
    return fig


def node_gantt_figure(run: Run, t1: float, figsize: tuple[float, float] = FIGSIZE) -> Figure:
    assert run.pods is not None and run.nodes is not None
    pods = m.bound_pods(run.pods, t1)
    fig, ax = plt.subplots(figsize=figsize)
    plot_node_gantt(ax, pods, run.nodes, m.over_allocation(pods, run.nodes))
    fig.tight_layout()
    return fig


def render_all(
    run: Run, metrics: dict, outdir: Path, step: Callable[[str], None] = lambda _: None
) -> list[Path]:
    """Write every figure that the run's data supports; ``step`` reports progress by name."""
    t1 = metrics.get("makespan") or 0.0
    paths: list[Path] = []
    step("job Gantt")
    fig = job_gantt_figure(run)
    if run.nb_resources is None:
        run.notes.append("job Gantt resource bounds guessed from allocations (no nodes/platform)")
    if (run.jobs["starting_time"].notna() & (run.jobs["allocated_resources"] == "")).any():
        run.notes.append("some started jobs have no allocated_resources and are absent from the job Gantt")
    paths += save(fig, outdir, "job_gantt")
    if run.pods is not None and run.nodes is not None:
        step("node Gantt")
        paths += save(node_gantt_figure(run, t1), outdir, "node_gantt")
    step("utilisation")
    paths += save(utilisation_figure(run, t1), outdir, "utilisation")
    step("waiting times")
    started = run.jobs[run.jobs["state"] != "rejected"]
    paths += save(waiting_figure({run.name: started["waiting_time"]}), outdir, "waiting_time")
    if metrics.get("unschedulable_reasons"):
        step("unschedulable reasons")
        paths += save(reasons_figure(metrics["unschedulable_reasons"]), outdir, "unschedulable_reasons")
    return paths
