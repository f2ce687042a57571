"""Figures of ``batkube compare``: running/queued jobs of every repetition, and the key metrics per group
as dots with ± sd bars on axes fitted to the data (the differences between setups are often a few
seconds out of thousands: bars from 0 hide them), each value printed."""

from __future__ import annotations

from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from batkube_py.analysis import metrics as m  # noqa: E402
from batkube_py.analysis.figures import FIGSIZE, short_label  # noqa: E402

if TYPE_CHECKING:
    from batkube_py.analysis.compare import Group

COUNTS = ("jobs_", "pods_pending", "_over_allocations")
RATIOS = ("utilisation", "overcommit", "jain_")


def unit(metric: str) -> str:
    """The unit a metric is expressed in, for axis labels and the printed values."""
    if metric.startswith("jain_"):
        return "index"
    if metric == "makespan" or metric.endswith(("_time", "_seconds")):
        return "s"
    if metric.startswith("throughput"):
        return "jobs/h"
    if any(k in metric for k in COUNTS):
        return "pods" if metric.startswith("pods_") else "jobs" if metric.startswith("jobs_") else "episodes"
    if any(k in metric for k in RATIOS):
        return "fraction of capacity"
    return "ratio" if "slowdown" in metric else ""


def decimals(metric: str, digits: int, values: np.ndarray) -> int:
    """Counts as integers (unless averaged over runs to a fraction); utilisations with at least 3."""
    if any(k in metric for k in COUNTS):
        finite = values[np.isfinite(values)]
        return 0 if np.allclose(finite, np.round(finite)) else max(digits, 1)
    if any(k in metric for k in RATIOS):
        return max(digits, 3)
    return digits


def overlay_timeseries(groups: list[Group]) -> Figure:
    """Running and queued jobs at the end of each simulated instant, every repetition drawn thin."""
    fig, (run_ax, queue_ax) = plt.subplots(2, 1, figsize=FIGSIZE, sharex=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, g in enumerate(groups):
        color = colors[i % len(colors)]
        alpha = 0.9 if len(g.runs) == 1 else 0.45
        for j, run in enumerate(g.runs):
            ran = run.jobs[run.jobs["starting_time"].notna()]
            series = (
                m.step_series(ran["starting_time"], ran["finish_time"], np.ones(len(ran))),
                m.queue_series(run.jobs),
            )
            label = short_label(f"{g.label} ({len(g.runs)} runs)") if j == 0 else None
            for ax, s in zip((run_ax, queue_ax), series, strict=True):
                s = m.plotted(s)
                ax.step(s["time"], s["value"], where="post", color=color, alpha=alpha, lw=0.8, label=label)
    run_ax.set_ylabel("running jobs")
    queue_ax.set_ylabel("queued jobs")
    queue_ax.set_xlabel("time (s)")
    run_ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: no data hidden
    for ax in (run_ax, queue_ax):
        ax.grid(True)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    fig.suptitle("Running and queued jobs (all repetitions)")
    fig.tight_layout()
    return fig


def _limits(lo: float, hi: float) -> tuple[float, float]:
    """Around the data, with room for the printed values; never a zero-width axis, nor below 0 for
    values that cannot be negative."""
    pad = max((hi - lo) * 0.3, abs(hi) * 0.002, 1e-9)
    return (lo - pad if lo - pad >= 0 or lo < 0 else 0.0), hi + pad


def dots_figure(
    agg: pd.DataFrame, digits: int = 1, keys: tuple[str, ...] = ("makespan", "mean_waiting_time")
) -> Figure:
    """Key metrics per group: mean as a dot, ± population sd as a bar, the value printed above it."""
    keys = tuple(k for k in keys if k in set(agg["metric"]))
    fig, axes = plt.subplots(1, max(len(keys), 1), figsize=FIGSIZE, squeeze=False, sharey=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, key in zip(axes[0], keys, strict=False):
        sub = agg[agg["metric"] == key].reset_index(drop=True)
        mean, sd = sub["mean"].to_numpy(dtype=float), sub["sd"].fillna(0).to_numpy(dtype=float)
        y = np.arange(len(sub))[::-1]
        for k in range(len(sub)):
            ax.errorbar(mean[k], y[k], xerr=sd[k], fmt="o", color=colors[k % len(colors)], capsize=5, ms=7)
        d = decimals(key, digits, mean)
        u = unit(key)
        for k in range(len(sub)):
            text = f"{mean[k]:.{d}f}" + (f" ± {sd[k]:.{d}f}" if sub.at[k, "n"] > 1 else "") + f" {u}"
            ax.annotate(text, (mean[k], y[k]), xytext=(0, 9), textcoords="offset points", ha="center",
                        fontsize="small")  # fmt: skip
        finite = np.isfinite(mean)
        if finite.any():
            lo, hi = _limits(float((mean - sd)[finite].min()), float((mean + sd)[finite].max()))
            ax.set_xlim(lo, hi)
            zero = " (axis not from 0)" if lo > 0 else ""
            ax.set_xlabel(f"{u}{zero}")
        ax.set_ylim(-0.7, len(sub) - 0.3)
        ax.set_yticks(y, [short_label(str(g), 22) for g in sub["group"]])
        ax.set_title(key.replace("_", " "))
        ax.grid(True, axis="x")
    fig.suptitle("Mean ± sd over repetitions")
    fig.tight_layout()
    return fig
