"""Gantt charts: the job Gantt (Batsim resources, co-located jobs in lanes) and the node Gantt (pods
stacked by cpu).

The job Gantt answers "which job ran where and when" in Batsim's terms. Under compute sharing jobs share
a resource: evalys draws them on top of each other (the thesis's darker "overlap" areas, with overlapping
labels), so each resource row is split into lanes, one per job running there at the same time. The node
Gantt shows the cpu: each node is a lane whose height is its allocatable cpu, pods are stacked by
their cpu request, and whatever rises above the lane's capacity line is over-allocation (shaded red from
the exact per-node sweep of :func:`metrics.over_allocation`, not from rectangle positions).
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

    Small sets get one PolyCollection (edges, per-rectangle colours). Large ones get one compound path
    per colour, which Agg fills in C: 100k rectangles as a collection cost seconds per saved file.
    """
    steps = np.linspace(0, 1, ncolors) if cmap == "viridis" else np.arange(ncolors)
    palette = matplotlib.colormaps[cmap](steps)
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


def _label_jobs(ax: Axes, jobs: pd.DataFrame, lanes: pd.DataFrame, y0, height, span: float) -> None:
    """Job ids inside their rectangles, only where the text fits (no overlapping labels)."""
    if not len(lanes) or len(lanes) > 400 or span <= 0:
        return
    width_px = ax.figure.get_figwidth() * ax.figure.dpi * ax.get_position().width
    row_px = ax.figure.get_figheight() * ax.figure.dpi * ax.get_position().height / ax.get_ylim()[1]
    short = jobs["job_id"].str.rpartition("!")[2]
    for k, (job, start, end) in enumerate(lanes[["job", "start", "end"]].itertuples(index=False)):
        text = short.at[job]
        fits_x = (end - start) / span * width_px >= 7 * len(text) + 4
        if fits_x and height[k] * row_px >= 9:
            ax.text((start + end) / 2, y0[k] + height[k] / 2, text, ha="center", va="center", fontsize=7)


def stack_offsets(start: np.ndarray, end: np.ndarray, size: np.ndarray) -> np.ndarray:
    """First-fit vertical offsets so that pods running at the same time on one node do not overlap.

    Pods keep one offset for their whole life (readable lanes); a pod that finds no gap goes on top, so
    over-allocated pods rise above the capacity line.
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


def plot_node_gantt(
    ax: Axes,
    pods: pd.DataFrame,
    nodes: pd.DataFrame,
    over: pd.DataFrame,
    title: str = "Node Gantt (pods stacked by cpu request)",
) -> None:
    """Each node a lane of height 1 = its allocatable cpu; pods stacked by cpu/capacity."""
    nodes = nodes.sort_values("node", key=lambda col: col.map(natural_key)).reset_index(drop=True)
    lane = pd.Series(np.arange(len(nodes)), index=nodes["node"])
    cap = pd.Series(nodes["cpu"].to_numpy(dtype=float), index=nodes["node"]).replace(0, np.nan)
    pods = pods[pods["node"].isin(lane.index)].reset_index(drop=True)
    offs = np.zeros(len(pods))
    for _, idx in pods.groupby("node", sort=False).indices.items():
        p = pods.iloc[idx]
        offs[idx] = stack_offsets(
            p["bind_time"].to_numpy(), p["finish_time"].to_numpy(), p["cpu_request"].to_numpy(dtype=float)
        )
    pcap = pods["node"].map(cap).to_numpy()
    y_rel, h_rel = offs / pcap, pods["cpu_request"].to_numpy(dtype=float) / pcap
    peak = np.nanmax(y_rel + h_rel, initial=1.0)
    pitch = max(1.0, float(peak)) + 0.25
    base = pods["node"].map(lane).to_numpy() * pitch
    verts = _rects(pods["bind_time"].to_numpy(), pods["finish_time"].to_numpy(), base + y_rel, h_rel)
    add_rects(ax, verts, np.arange(len(pods)), "tab20", 20, alpha=0.8, edges=True)
    if len(over):
        ob = over["node"].map(lane).to_numpy() * pitch
        ratio = over["used"].to_numpy() / over["capacity"].to_numpy()
        verts = _rects(over["start"].to_numpy(), over["end"].to_numpy(), ob + 1.0, ratio - 1.0)
        few = len(over) <= LARGE
        ax.add_collection(
            PolyCollection(
                verts,
                facecolors="red",
                edgecolors="darkred" if few else "none",
                alpha=0.35,
                hatch="//" if few else None,
                linewidths=0.5,
                rasterized=not few,
                label="over-allocated",
            )
        )
        ax.legend(loc="upper right", fontsize="small")
    t0 = float(np.nanmin(pods["bind_time"], initial=0.0)) if len(pods) else 0.0
    t1 = float(np.nanmax(pods["finish_time"], initial=1.0)) if len(pods) else 1.0
    lanes = np.arange(len(nodes)) * pitch
    if len(nodes) <= 40:  # capacity lines; with more lanes they would merge into a black block
        ax.hlines(lanes + 1.0, t0, t1, colors="black", linestyles="dashed", linewidths=0.6)
    ax.set_xlim(t0, t1 if t1 > t0 else t0 + 1)
    ax.set_ylim(-0.1, len(nodes) * pitch)
    if len(nodes) <= 40:
        names = [f"{n} ({c:g} cpu)" for n, c in zip(nodes["node"], nodes["cpu"], strict=True)]
        ax.set_yticks(lanes + 0.5, names, fontsize="small")
    else:
        ax.set_ylabel(f"{len(nodes)} nodes")
        ax.set_yticks([])
    ax.set_xlabel("time (s)")
    ax.set_title(title)
    ax.grid(True, axis="x")
