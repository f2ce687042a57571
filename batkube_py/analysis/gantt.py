"""The job Gantt: Batsim resources as rows, co-located jobs in lanes.

It answers "which job ran where and when" in Batsim's terms. Under compute sharing jobs share a resource:
evalys draws them on top of each other (the thesis's darker "overlap" areas, with overlapping labels), so
each resource row is split into lanes, one per job running there at the same time. The node Gantt, which
shows cpu allocation, is in :mod:`batkube_py.analysis.node_gantt`.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.collections import PathCollection, PolyCollection  # noqa: E402
from matplotlib.path import Path  # noqa: E402

from batkube_py.analysis.metrics import expand_allocations, natural_key  # noqa: E402

LARGE = 2000
"""Above this many rectangles, draw compound paths (see :func:`add_rects`)."""


def _rects(x0: np.ndarray, x1: np.ndarray, y0: np.ndarray, h: np.ndarray) -> np.ndarray:
    return np.stack([np.c_[x0, y0], np.c_[x1, y0], np.c_[x1, y0 + h], np.c_[x0, y0 + h]], axis=1)


def add_rects(
    ax: Axes, verts: np.ndarray, color_idx: np.ndarray, cmap: str, ncolors: int, alpha: float, edges: bool
) -> None:
    """Draw many rectangles cheaply.

    ``cmap`` is a colormap's name, or a colour's for rectangles of one colour. Small sets get one
    PolyCollection (edges, per-rectangle colours). Large ones get one compound path per colour, which
    Agg fills in C: 100k rectangles as a collection cost seconds per saved file.
    """
    if cmap in matplotlib.colormaps:
        steps = np.linspace(0, 1, ncolors) if cmap == "viridis" else np.arange(ncolors)
        palette = matplotlib.colormaps[cmap](steps)
    else:  # one colour by name
        palette = np.array([matplotlib.colors.to_rgba(cmap)] * ncolors)
    if len(verts) <= LARGE:
        ax.add_collection(
            PolyCollection(
                verts,
                facecolors=palette[color_idx % ncolors],
                alpha=alpha,
                edgecolors="black" if edges else "none",
                linewidths=0.4,
            )
        )
        return
    codes_one = [Path.MOVETO, Path.LINETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY]
    for c in range(ncolors):
        sel = verts[color_idx % ncolors == c]
        if not len(sel):
            continue
        closed = np.concatenate([sel, sel[:, :1]], axis=1).reshape(-1, 2)
        path = Path(closed, np.tile(codes_one, len(sel)))
        coll = PathCollection(
            [path], facecolors=[palette[c]], edgecolors="none", alpha=alpha, rasterized=True
        )
        ax.add_collection(coll, autolim=False)  # add_patch computes limits per Bézier segment: too slow


def job_lanes(jobs: pd.DataFrame) -> pd.DataFrame:
    """One row per (started job, resource) with its lane on that resource and the resource's lane count.

    Under compute sharing several jobs run on one resource at once; each gets a lane of its own (first
    fit, kept for its whole life) instead of being drawn over the others.
    """
    started = jobs[jobs["starting_time"].notna() & (jobs["allocated_resources"] != "")]
    res = expand_allocations(started["allocated_resources"])
    out = pd.DataFrame(
        {
            "job": res.index.to_numpy(),
            "resource": res.to_numpy(),
            "start": started.loc[res.index, "starting_time"].to_numpy(),
            "end": started.loc[res.index, "finish_time"].to_numpy(),
        }
    )
    out["end"] = out["end"].fillna(out["start"])
    out["lane"] = 0.0
    for _, idx in out.groupby("resource", sort=False).indices.items():
        sub = out.iloc[idx]
        out.iloc[idx, out.columns.get_loc("lane")] = stack_offsets(
            sub["start"].to_numpy(), sub["end"].to_numpy(), np.ones(len(idx))
        )
    out["lanes"] = out.groupby("resource")["lane"].transform("max") + 1
    return out


def resource_rows(nb_resources: int | None, used: np.ndarray, names: dict[int, str] | None) -> list[int]:
    """The resource ids shown, bottom to top: every platform resource (idle ones too), named ones in
    natural name order (node-2 before node-10) rather than Batsim's lexicographic ids."""
    ids = range(nb_resources) if nb_resources else range(int(used.max(initial=-1)) + 1)
    if names:
        return sorted(ids, key=lambda i: natural_key(names.get(i, f"~{i:09d}")))
    return list(ids)


def plot_job_gantt(
    ax: Axes,
    jobs: pd.DataFrame,
    nb_resources: int | None,
    names: dict[int, str] | None = None,
    title: str = "Job Gantt (jobs sharing a node in lanes)",
) -> None:
    """Each Batsim resource a row; jobs running on it at the same time split the row into lanes."""
    lanes = job_lanes(jobs)
    rows = resource_rows(nb_resources, lanes["resource"].to_numpy(), names)
    row_of = {r: i for i, r in enumerate(rows)}
    lanes = lanes[lanes["resource"].isin(row_of)]
    height = 0.9 / lanes["lanes"].to_numpy()
    y0 = lanes["resource"].map(row_of).to_numpy() + 0.05 + lanes["lane"].to_numpy() * height
    verts = _rects(lanes["start"].to_numpy(), lanes["end"].to_numpy(), y0, height)
    color = lanes["job"].to_numpy()
    add_rects(ax, verts, color, "tab20", 20, alpha=0.85, edges=len(lanes) <= 300)
    _join_hosts(ax, lanes, y0, height)
    t0 = float(jobs["submission_time"].min()) if len(jobs) else 0.0
    t1 = float(lanes["end"].max()) if len(lanes) else t0 + 1.0
    ax.set_xlim(t0, t1 if t1 > t0 else t0 + 1.0)
    ax.set_ylim(0, max(len(rows), 1))
    _label_jobs(ax, jobs, lanes, y0, height, t1 - t0)
    if len(rows) <= 40:
        labels = [names.get(r, str(r)) if names else str(r) for r in rows]
        ax.set_yticks(np.arange(len(rows)) + 0.5, labels, fontsize="small")
        ax.set_ylabel("node" if names else "Batsim resource id")
    else:
        ax.set_yticks([])
        ax.set_ylabel(f"{len(rows)} nodes" if names else f"{len(rows)} Batsim resources")
    ax.set_xlabel("time (s)")
    ax.set_title(title)
    ax.grid(True, axis="x")


def _join_hosts(ax: Axes, lanes: pd.DataFrame, y0: np.ndarray, height: np.ndarray) -> None:
    """A multi-host job (a gang) is one job: a line at its start joins its hosts' rectangles, so a
    reader does not take them for several jobs of the same colour."""
    multi = lanes["job"].duplicated(keep=False).to_numpy()
    if not multi.any() or len(lanes) > 20 * LARGE:
        return
    spans = pd.DataFrame({"job": lanes["job"].to_numpy()[multi], "start": lanes["start"].to_numpy()[multi],
                          "lo": y0[multi], "hi": (y0 + height)[multi]}).groupby("job")  # fmt: skip
    lo, hi, start = spans["lo"].min(), spans["hi"].max(), spans["start"].first()
    palette = matplotlib.colormaps["tab20"](np.arange(20))
    ax.vlines(start.to_numpy(), lo.to_numpy(), hi.to_numpy(), colors=palette[start.index.to_numpy() % 20],
              linewidths=2.0, gid="gang-hosts")  # fmt: skip


def _label_jobs(ax: Axes, jobs: pd.DataFrame, lanes: pd.DataFrame, y0, height, span: float) -> None:
    """Job ids inside their rectangles, only where the text fits (no overlapping labels); a job on
    several hosts is labelled once."""
    if not len(lanes) or len(lanes) > 400 or span <= 0:
        return
    first = ~pd.Series(lanes["job"].to_numpy()).duplicated().to_numpy()
    width_px = ax.figure.get_figwidth() * ax.figure.dpi * ax.get_position().width
    row_px = ax.figure.get_figheight() * ax.figure.dpi * ax.get_position().height / ax.get_ylim()[1]
    short = jobs["job_id"].str.rpartition("!")[2]
    for k, (job, start, end) in enumerate(lanes[["job", "start", "end"]].itertuples(index=False)):
        if not first[k]:
            continue
        text = short.at[job]
        fits_x = (end - start) / span * width_px >= 7 * len(text) + 4
        if fits_x and height[k] * row_px >= 9:
            ax.text((start + end) / 2, y0[k] + height[k] / 2, text, ha="center", va="center", fontsize=7)


def stack_offsets(start: np.ndarray, end: np.ndarray, size: np.ndarray) -> np.ndarray:
    """First-fit vertical offsets so that intervals overlapping in time do not overlap in space.

    Each interval keeps one offset for its whole life (readable lanes); one that finds no gap goes on
    top. Used for the job Gantt's lanes; the node Gantt cannot use it for cpu, because fragmentation
    would push pods above a capacity they do not exceed (see :mod:`node_gantt`).
    """
    order = np.lexsort((-size, start))
    offsets = np.zeros(len(start))
    active: list[tuple[float, float, float]] = []  # (offset, size, end)
    for i in order:
        s, h = start[i], size[i]
        active = sorted((a for a in active if a[2] > s), key=lambda a: a[0])
        pos = 0.0
        for off, sz, _ in active:
            if off - pos >= h - 1e-12:
                break
            pos = max(pos, off + sz)
        offsets[i] = pos
        active.append((pos, h, end[i]))
    return offsets
