"""The node Gantt: each node a lane whose height is its allocatable cpu, its running pods stacked by cpu
request, so that the stack's height at every instant is exactly the cpu allocated on the node.

A pod cannot keep one vertical position for its whole life and still give that picture: with first-fit
lanes, pods ending inside a stack leave holes too small for the next, larger pod, which then went on top,
above the capacity line of a node that was never over-allocated (a peak of 4.0 cpu on 4-cpu nodes drawn
as 5). Here a pod keeps its position while it can; at an instant where the stack would rise above the
capacity although the allocation does not (or, on an over-allocated node, above the allocation itself),
the node's running pods are compacted, so one pod may be drawn as several segments. Intervals are
half-open, [bind, finish): a pod ending at t and one starting at t never overlap, as in
:func:`metrics.over_allocation`. The part of a stack above the capacity line is drawn in red, and the
intervals that sweep finds over-allocated are hatched, so the two can be checked against each other.
"""

from __future__ import annotations

from collections import defaultdict

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from batkube_py.analysis.gantt import LARGE, _rects, add_rects  # noqa: E402
from batkube_py.analysis.metrics import natural_key  # noqa: E402

WITHIN, ABOVE = "tab:blue", "tab:red"
SEGMENT_COLUMNS = ["pod", "node", "start", "end", "offset", "size", "capacity"]


def _first_fit(active: dict[int, list[float]], size: np.ndarray, h: float) -> float:
    pos = 0.0
    for p, (off, _) in sorted(active.items(), key=lambda kv: kv[1][0]):
        if off - pos >= h - 1e-12:
            return pos
        pos = max(pos, off + size[p])
    return pos


def pack_node(start: np.ndarray, end: np.ndarray, size: np.ndarray, cap: float) -> list[tuple]:
    """Segments (pod index, start, end, offset) of one node's pods; see the module docstring."""
    eps = 1e-9 * max(abs(cap), 1.0) if np.isfinite(cap) else 0.0
    starts: dict[float, list[int]] = defaultdict(list)
    ends: dict[float, list[int]] = defaultdict(list)
    for i in np.lexsort((-size, start)):
        if end[i] > start[i]:  # a zero-length pod holds nothing
            starts[start[i]].append(int(i))
            ends[end[i]].append(int(i))
    active: dict[int, list[float]] = {}  # pod -> [offset, start of its current segment]
    segments: list[tuple] = []

    def close(p: int, t: float) -> None:
        off, t0 = active[p]
        if t > t0:
            segments.append((p, t0, t, off))

    for t in sorted(starts.keys() | ends.keys()):
        for p in ends.get(t, ()):
            close(p, t)
            del active[p]
        for p in starts.get(t, ()):
            active[p] = [_first_fit(active, size, size[p]), t]
        if not active:
            continue
        used = sum(size[p] for p in active)
        top = max(off + size[p] for p, (off, _) in active.items())
        if (used <= cap + eps and top > cap + eps) or (used > cap + eps and top > used + eps):
            pos = 0.0
            for p in sorted(active, key=lambda q: active[q][0]):
                close(p, t)
                active[p] = [pos, t]
                pos += size[p]
    for p in list(active):  # open intervals cannot happen with finite ends; kept for safety of inputs
        close(p, max(end[p], active[p][1]))
    return segments


def node_segments(pods: pd.DataFrame, nodes: pd.DataFrame) -> pd.DataFrame:
    """Every drawn rectangle of the node Gantt: pod row, node, start, end, offset and size in cpu."""
    cap = dict(zip(nodes["node"], nodes["cpu"].to_numpy(dtype=float), strict=True))
    pods = pods[pods["node"].isin(cap.keys())]
    start = pods["bind_time"].to_numpy(dtype=float)
    end = pods["finish_time"].to_numpy(dtype=float)
    size = pods["cpu_request"].fillna(0.0).to_numpy(dtype=float)
    rows: list[np.ndarray] = []  # positions in pods
    parts: list[np.ndarray] = []  # start, end, offset
    names: list[str] = []
    for node, idx in pods.groupby("node", sort=False).indices.items():
        segs = pack_node(start[idx], end[idx], size[idx], cap[node])
        if segs:
            a = np.array(segs, dtype=float)
            rows.append(idx[a[:, 0].astype(int)])
            parts.append(a[:, 1:])
            names += [node] * len(a)
    if not parts:
        return pd.DataFrame(columns=SEGMENT_COLUMNS)
    pos, a = np.concatenate(rows), np.concatenate(parts)
    caps = np.array([cap[n] for n in names])
    return pd.DataFrame(
        {"pod": pods.index.to_numpy()[pos], "node": names, "start": a[:, 0], "end": a[:, 1],
         "offset": a[:, 2], "size": size[pos], "capacity": caps}
    )  # fmt: skip


def split_at_capacity(seg: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The parts of the segments below the capacity line and above it (offsets and sizes in cpu)."""
    top = seg["offset"] + seg["size"]
    below = seg.assign(size=np.minimum(top, seg["capacity"]) - seg["offset"])
    above = seg.assign(
        offset=np.maximum(seg["offset"], seg["capacity"]),
        size=top - np.maximum(seg["offset"], seg["capacity"]),
    )
    return below[below["size"] > 0], above[above["size"] > 0]


def plot_node_gantt(
    ax: Axes,
    pods: pd.DataFrame,
    nodes: pd.DataFrame,
    over: pd.DataFrame,
    title: str = "Node Gantt (pods stacked by cpu request)",
) -> None:
    """Each node a lane of height 1 = its allocatable cpu; blue = allocated within it, red = above it."""
    nodes = nodes.sort_values("node", key=lambda col: col.map(natural_key)).reset_index(drop=True)
    lane = pd.Series(np.arange(len(nodes)), index=nodes["node"])
    seg = node_segments(pods, nodes)
    seg = seg[seg["capacity"] > 0]
    rel_top = (seg["offset"] + seg["size"]) / seg["capacity"]
    pitch = max(1.0, float(rel_top.max()) if len(seg) else 1.0) + 0.25
    edges = len(seg) <= 300
    below, above = split_at_capacity(seg)
    for part, colour in ((below, WITHIN), (above, ABOVE)):
        base = part["node"].map(lane).to_numpy() * pitch
        cap = part["capacity"].to_numpy()
        verts = _rects(
            part["start"].to_numpy(), part["end"].to_numpy(), base + part["offset"] / cap, part["size"] / cap
        )
        add_rects(ax, verts, np.zeros(len(part), dtype=int), colour, 1, alpha=0.8, edges=edges)
    handles = [Patch(facecolor=WITHIN, alpha=0.8, label="cpu requested by running pods")]
    if len(above):
        handles.append(Patch(facecolor=ABOVE, alpha=0.8, label="requested above allocatable cpu"))
    if len(over):
        ob = over["node"].map(lane).to_numpy() * pitch
        ratio = over["used"].to_numpy() / over["capacity"].to_numpy()
        verts = _rects(over["start"].to_numpy(), over["end"].to_numpy(), ob + 1.0, ratio - 1.0)
        few = len(over) <= LARGE
        ax.add_collection(
            PolyCollection(
                verts,
                facecolors="none",
                edgecolors="darkred",
                hatch="//" if few else None,
                linewidths=0.5,
                rasterized=not few,
            )
        )
        handles.append(Patch(facecolor="none", edgecolor="darkred", hatch="//", label="over-allocated"))
    t0 = float(np.nanmin(pods["bind_time"], initial=0.0)) if len(pods) else 0.0
    t1 = float(np.nanmax(pods["finish_time"], initial=1.0)) if len(pods) else 1.0
    lanes = np.arange(len(nodes)) * pitch
    if len(nodes) <= 40:  # capacity lines; with more lanes they would merge into a black block
        ax.hlines(lanes + 1.0, t0, t1, colors="black", linestyles="dashed", linewidths=0.6)
        handles.append(
            Line2D([], [], color="black", linestyle="dashed", linewidth=0.6, label="allocatable cpu")
        )
    ax.set_xlim(t0, t1 if t1 > t0 else t0 + 1)
    ax.set_ylim(-0.1, max(len(nodes), 1) * pitch)
    if len(nodes) <= 40:
        names = [f"{n} ({c:g} cpu)" for n, c in zip(nodes["node"], nodes["cpu"], strict=True)]
        ax.set_yticks(lanes + 0.5, names, fontsize="small")
        ax.set_ylabel("node (height: allocatable cpu)")
    else:
        ax.set_ylabel(f"{len(nodes)} nodes (height: allocatable cpu)")
        ax.set_yticks([])
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="x-small")
    ax.set_xlabel("time (s)")
    ax.set_title(title)
    ax.grid(True, axis="x")
