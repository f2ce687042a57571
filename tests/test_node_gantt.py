"""The node Gantt draws exactly the allocation: at every instant a node's stack is as high as the cpu its
running pods request, nothing rises above the capacity line unless the over-allocation sweep
(:func:`metrics.over_allocation`) finds the node over-allocated there, and then by exactly as much."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.collections import PolyCollection

from batkube_py.analysis import metrics as m
from batkube_py.analysis.gantt import stack_offsets
from batkube_py.analysis.node_gantt import ABOVE, WITHIN, node_segments, plot_node_gantt, split_at_capacity

NODES = pd.DataFrame({"node": ["node-0", "node-1"], "resource_id": [0, 1], "cpu": [4.0, 4.0]})


def _pods(rows: list[tuple[str, float, float, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["node", "bind_time", "finish_time", "cpu_request"])


# Four 1-cpu pods fill node-0; the 2nd and 4th end at 5 and a 2-cpu pod starts at 5: the allocation never
# exceeds 4 cpu, but the two freed cpus are not adjacent in first-fit lanes.
FRAGMENTED = _pods(
    [
        ("node-0", 0, 10, 1),
        ("node-0", 0, 5, 1),
        ("node-0", 0, 10, 1),
        ("node-0", 0, 5, 1),
        ("node-0", 5, 10, 2),
        ("node-1", 0, 3, 4),  # ends at 3 exactly when the next starts: no overlap
        ("node-1", 3, 6, 4),
    ]
)
# The same plus a 1-cpu pod on node-0 from 7 to 9: 5 cpu on 4 between 7 and 9, and 4 again after.
OVER = pd.concat([FRAGMENTED, _pods([("node-0", 7, 9, 1)])], ignore_index=True)


def _check_exact(pods: pd.DataFrame, nodes: pd.DataFrame) -> None:
    seg = node_segments(pods, nodes)
    over = m.over_allocation(pods, nodes)
    for node, cap in zip(nodes["node"], nodes["cpu"], strict=True):
        p, s = pods[pods["node"] == node], seg[seg["node"] == node]
        times = np.unique(np.r_[p["bind_time"], p["finish_time"]])
        for a, b in zip(times[:-1], times[1:], strict=True):
            mid = (a + b) / 2
            used = p.loc[(p["bind_time"] <= mid) & (p["finish_time"] > mid), "cpu_request"].sum()
            live = s[(s["start"] <= mid) & (s["end"] > mid)]
            assert live["size"].sum() == np.float64(used)
            # no two live segments overlap vertically
            iv = live.sort_values("offset")[["offset", "size"]].to_numpy()
            assert all(iv[k, 0] + iv[k, 1] <= iv[k + 1, 0] + 1e-9 for k in range(len(iv) - 1))
            top = float((live["offset"] + live["size"]).max()) if len(live) else 0.0
            o = over[(over["node"] == node) & (over["start"] <= mid) & (over["end"] > mid)]
            if used > cap + 1e-9:
                assert len(o) == 1 and o["used"].iloc[0] == used and top == used
            else:
                assert o.empty and top <= cap + 1e-9
        # each pod's segments tile its interval
        for k, row in p.iterrows():
            mine = s[s["pod"] == k].sort_values("start")
            if row["finish_time"] > row["bind_time"]:
                assert (
                    mine["start"].iloc[0] == row["bind_time"] and mine["end"].iloc[-1] == row["finish_time"]
                )
                assert (mine["end"].to_numpy()[:-1] == mine["start"].to_numpy()[1:]).all()


def test_first_fit_lanes_would_draw_a_pod_above_a_node_never_over_allocated() -> None:
    """The defect: one offset per pod puts the 2-cpu pod at 4..6 on a 4-cpu node."""
    p = FRAGMENTED[FRAGMENTED["node"] == "node-0"]
    offs = stack_offsets(p["bind_time"].to_numpy(), p["finish_time"].to_numpy(), p["cpu_request"].to_numpy())
    assert offs[4] + 2 > 4 and m.over_allocation(FRAGMENTED, NODES).empty


def test_without_over_allocation_nothing_is_drawn_above_capacity() -> None:
    assert m.over_allocation(FRAGMENTED, NODES).empty
    _check_exact(FRAGMENTED, NODES)
    below, above = split_at_capacity(node_segments(FRAGMENTED, NODES))
    assert above.empty


def test_with_over_allocation_the_red_part_is_the_sweep_s_excess() -> None:
    over = m.over_allocation(OVER, NODES)
    assert over[["node", "start", "end", "used"]].values.tolist() == [["node-0", 7.0, 9.0, 5.0]]
    _check_exact(OVER, NODES)
    _, above = split_at_capacity(node_segments(OVER, NODES))
    red_area = ((above["end"] - above["start"]) * above["size"]).sum()
    assert red_area == ((over["end"] - over["start"]) * (over["used"] - over["capacity"])).sum() == 2.0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["node-0", "node-1"]),
            st.integers(0, 20),
            st.integers(0, 10),
            st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0]),
        ),
        max_size=25,
    )
)
def test_random_allocations_are_drawn_exactly(rows) -> None:
    pods = _pods([(n, float(s), float(s + d), c) for n, s, d, c in rows])
    _check_exact(pods, NODES)


def _drawn(ax, colour: str) -> list[np.ndarray]:
    rgba = np.array(plt.matplotlib.colors.to_rgba(colour))[:3]
    out = []
    for c in ax.collections:
        if isinstance(c, PolyCollection) and len(c.get_facecolors()):
            if np.allclose(c.get_facecolors()[0][:3], rgba):
                out += [p.vertices for p in c.get_paths()]
    return out


def test_figure_colours_legend_and_labels() -> None:
    for pods, red in ((FRAGMENTED, False), (OVER, True)):
        fig, ax = plt.subplots()
        plot_node_gantt(ax, pods, NODES, m.over_allocation(pods, NODES))
        blue = _drawn(ax, WITHIN)
        pitch = ax.get_ylim()[1] / 2
        assert all(v[:, 1].max() % pitch <= 1.0 + 1e-9 for v in blue)  # blue stays under each capacity line
        assert bool(_drawn(ax, ABOVE)) is red
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert "cpu requested by running pods" in labels and "allocatable cpu" in labels
        assert ("over-allocated" in labels) is red
        assert "allocatable cpu" in ax.get_ylabel() and ax.get_xlabel() == "time (s)"
        plt.close(fig)
