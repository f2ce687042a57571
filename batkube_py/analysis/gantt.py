"""Gantt charts: evalys' job Gantt (resource axis) and batkube's node Gantt (pods stacked by cpu).

The job Gantt answers "which job ran where and when" in Batsim's terms; under compute sharing its
rectangles overlap and the thesis's darker "overlap" areas were the only hint of over-allocation. The node
Gantt makes that explicit: each node is a lane whose height is its allocatable cpu, pods are stacked by
their cpu request, and whatever rises above the lane's capacity line is over-allocation (shaded red from
the exact per-node sweep of :func:`metrics.over_allocation`, not from rectangle positions).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from evalys.jobset import JobSet  # noqa: E402
from evalys.visu import legacy  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.collections import PathCollection, PolyCollection  # noqa: E402
from matplotlib.path import Path  # noqa: E402
from procset import ProcSet  # noqa: E402

from batkube_py.analysis.metrics import expand_allocations  # noqa: E402

EVALYS_MAX_JOBS = 2000
"""Above this, the job Gantt is drawn without evalys, which adds one patch and label per job (minutes)."""
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


def make_jobset(jobs: pd.DataFrame, nb_resources: int | None) -> JobSet:
    """An evalys JobSet whose resource bounds come from the platform, not from the jobs seen.

    evalys guesses bounds from min..max of allocations (too few machines when some stay idle) and fails
    outright when no job has an allocation; ``map_unique_numbers`` needs ``workload_name`` with the short id.
    """
    wl, _, short = jobs["job_id"].str.rpartition("!").T.to_numpy()
    df = pd.DataFrame(
        {
            "job_id": short,
            "workload_name": np.where(wl == "", "w0", wl),
            "submission_time": jobs["submission_time"].to_numpy(),
            "starting_time": jobs["starting_time"].to_numpy(),
            "execution_time": jobs["execution_time"].to_numpy(),
            "finish_time": jobs["finish_time"].to_numpy(),
            "waiting_time": jobs["waiting_time"].to_numpy(),
            "requested_number_of_resources": jobs["requested_number_of_resources"].to_numpy(),
            "allocated_resources": [
                ProcSet.from_str(a) if a else ProcSet() for a in jobs["allocated_resources"]
            ],
        }
    )
    if nb_resources:
        bounds = (0, nb_resources - 1)
    else:
        ids = expand_allocations(jobs["allocated_resources"])
        bounds = (int(ids.min()), int(ids.max())) if len(ids) else (0, 0)
    return JobSet(df, resource_bounds=bounds)


def plot_job_gantt(ax: Axes, jobs: pd.DataFrame, nb_resources: int | None, title: str = "Job Gantt") -> str:
    """Draw the job Gantt; returns which renderer was used ("evalys" or "fast")."""
    started = jobs[jobs["starting_time"].notna()]
    if len(started) <= EVALYS_MAX_JOBS:
        js = make_jobset(started, nb_resources)
        legacy.plot_gantt(js, ax=ax, title=title, labels=len(started) <= 60)
        how = "evalys"
    else:
        res = expand_allocations(started["allocated_resources"])
        sub = started.loc[res.index]
        verts = _rects(
            sub["starting_time"].to_numpy(),
            sub["finish_time"].to_numpy(),
            res.to_numpy(dtype=float),
            np.full(len(res), 0.9),
        )
        add_rects(ax, verts, res.index.to_numpy(), "viridis", 8, alpha=0.4, edges=False)
        top = nb_resources if nb_resources else int(res.max()) + 1
        ax.set_xlim(jobs["submission_time"].min(), started["finish_time"].max())
        ax.set_ylim(-1, top + 1)
        ax.grid(True)
        ax.set_title(title)
        ax.set_ylabel("Machines")
        how = "fast"
    ax.set_xlabel("time (s)")
    return how


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
    order = "resource_id" if "resource_id" in nodes and nodes["resource_id"].notna().all() else "node"
    nodes = nodes.sort_values(order).reset_index(drop=True)
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
