"""Sync-parameter sweeps drawn like the thesis's figures 4.2–4.6: makespan, mean waiting time, wall
duration and success rate against the swept parameter, with the original Batkube's published sweep on
the same axes and the non-swept groups of the case (the default paced policy, the emulated cluster)
as horizontal lines — the point of the figure is how far a wall-clock policy strays from them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from batkube_py.analysis.figures import save  # noqa: E402
from batkube_py.experiments.plan import Task, resolve  # noqa: E402
from batkube_py.experiments.spec import SweepReference, Variant  # noqa: E402

PANELS = (
    ("makespan", "makespan (s)"),
    ("mean_waiting_time", "mean waiting time (s)"),
    ("wall_seconds", "wall duration of a run (s)"),
    ("success", "success rate"),
)


def points(tasks: list[Task], results: dict[Path, dict[str, Any]]) -> pd.DataFrame:
    """One row per swept value: success rate, and means / sds of the metrics over the successful runs."""
    rows = []
    for t in tasks:
        r = results.get(t.out, {})
        if "status" not in r:
            continue
        ok = r["status"] == "ok"
        rows.append(
            {
                "value": t.value,
                "success": float(ok),
                "wall_seconds": r.get("wall_seconds"),
                "makespan": r.get("makespan") if ok else None,
                "mean_waiting_time": r.get("mean_waiting_time") if ok else None,
            }
        )
    df = pd.DataFrame(rows, columns=["value", "success", "wall_seconds", "makespan", "mean_waiting_time"])
    df = df.astype(float)
    g = df.groupby("value")
    out = g.mean().add_suffix("_mean").join(g.std(ddof=0).add_suffix("_sd")).join(g.size().rename("runs"))
    return out.reset_index()


def reference_points(ref: SweepReference, base: Path) -> pd.DataFrame:
    df = pd.read_csv(resolve(ref.csv, base))
    df["value"] = df[ref.x_column].astype(float) * ref.x_scale
    if "exit_code" in df:
        df["success"] = (df["exit_code"] == 0).astype(float)
    if "duration" in df:
        df["wall_seconds"] = df["duration"]
    keep = [c for c in ("makespan", "mean_waiting_time", "wall_seconds", "success") if c in df]
    return df.groupby("value")[keep].mean().add_suffix("_mean").reset_index()


def figure(
    variant: Variant,
    case: str,
    ours: pd.DataFrame,
    refs: dict[str, pd.DataFrame],
    baselines: dict[str, list[dict]],
):
    assert variant.sweep is not None
    param = variant.sweep.parameter
    fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharex=True)
    for ax, (key, label) in zip(axes.flat, PANELS, strict=True):
        ax.errorbar(
            ours["value"] * 1000,
            ours[f"{key}_mean"],
            yerr=ours.get(f"{key}_sd"),
            marker="o",
            markersize=3,
            capsize=2,
            label=f"batkube-py {variant.title}",
        )
        for name, df in refs.items():
            if f"{key}_mean" in df:
                ax.plot(
                    df["value"] * 1000,
                    df[f"{key}_mean"],
                    marker="x",
                    markersize=3,
                    linestyle="--",
                    label=name,
                )
        if key in ("makespan", "mean_waiting_time"):
            for name, mets in baselines.items():
                vals = [m_[key] for m_ in mets if m_.get(key) is not None]
                if vals:
                    ax.axhline(float(np.mean(vals)), linestyle=":", linewidth=1, color="grey")
                    ax.annotate(
                        name,
                        (0.01, float(np.mean(vals))),
                        xycoords=("axes fraction", "data"),
                        fontsize="x-small",
                        color="grey",
                        va="bottom",
                    )
        lo, hi = (
            np.nanmin(ours[f"{key}_mean"].to_numpy(dtype=float), initial=np.inf),
            np.nanmax(
                [
                    np.nanmax(d[f"{key}_mean"].to_numpy(dtype=float), initial=0)
                    for d in [ours, *refs.values()]
                    if f"{key}_mean" in d
                ],
                initial=0,
            ),
        )
        if key != "success" and np.isfinite(lo) and lo > 0 and hi / lo > 20:
            ax.set_yscale("log")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.4)
        if variant.sweep.log_x:
            ax.set_xscale("log")
    for ax in axes[1]:
        ax.set_xlabel(f"{param.replace('_', ' ')} (ms)")
    axes[0][0].legend(fontsize="small")
    fig.suptitle(f"{case}: {param.replace('_', ' ')} sweep")
    fig.tight_layout()
    return fig


def write(
    variant: Variant,
    case: str,
    tasks: list[Task],
    results: dict,
    refs: list[SweepReference],
    base: Path,
    baselines: dict[str, list[dict]],
    outdir: Path,
) -> list[Path]:
    outdir.mkdir(parents=True, exist_ok=True)
    ours = points(tasks, results)
    stem = f"{case}_{variant.name}"
    ours.to_csv(outdir / f"{stem}.csv", index=False, float_format="%.6g")
    if ours.empty:
        return [outdir / f"{stem}.csv"]
    ref_points = {r.label: reference_points(r, base) for r in refs}
    return [outdir / f"{stem}.csv", *save(figure(variant, case, ours, ref_points, baselines), outdir, stem)]
