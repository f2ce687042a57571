"""What the figures show, checked on their data: instants, fractions, lanes, node order, the dot plot and
the compare table's number formats."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PolyCollection

from batkube_py.analysis import metrics as m
from batkube_py.analysis.compare import Group, aggregate, load_groups, plan_groups, wide_table
from batkube_py.analysis.compare_figures import dots_figure, overlay_timeseries
from batkube_py.analysis.figures import (
    job_gantt_figure,
    utilisation_figure,
    waiting_figure,
    waiting_histogram,
)
from batkube_py.analysis.gantt import job_lanes, resource_rows
from batkube_py.analysis.loading import Run, load_run
from batkube_py.analysis.node_gantt import plot_node_gantt

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tests" / "fixtures" / "analysis" / "tiny_run"


def _jobs(rows: list[tuple[str, float, float, float, str]]) -> pd.DataFrame:
    return pd.DataFrame(
        rows, columns=["job_id", "submission_time", "starting_time", "finish_time", "allocated_resources"]
    ).assign(state="succeeded")


def test_running_count_has_no_dip_where_a_job_ends_and_the_next_starts() -> None:
    """Batsim puts the start a few ms after the completion that allowed it: one instant, no drop."""
    start = np.array([0.0, 0.0, 170.0046, 170.0292])
    end = np.array([170.003, 170.0036, 340.0, 340.0])
    exact = m.step_series(start, end, np.ones(4))
    assert exact["value"].min() == 0.0 and exact["value"].iloc[:-1].min() < 2  # the raw series dips
    shown = m.instant_ends(exact)
    assert shown["value"].tolist() == [2.0, 2.0, 0.0]
    assert shown["time"].tolist() == [0.0, 170.003, 340.0]


def test_queue_of_a_spaced_workload_is_not_a_comb_of_spikes() -> None:
    jobs = _jobs([(f"w0!{i}", 10.0 * i, 10.0 * i + 0.0024, 10.0 * i + 5, "0") for i in range(20)])
    exact = m.queue_series(jobs)
    assert exact["value"].max() == 1.0  # 2.4-ms spikes in the exact series
    assert m.instant_ends(exact)["value"].max() == 0.0
    late = _jobs([("w0!1", 0.0, 1.0, 2.0, "0")])  # a real 1-s wait is kept
    assert m.instant_ends(m.queue_series(late))["value"].tolist() == [1.0, 0.0]


def test_overlay_and_utilisation_draw_the_instant_series() -> None:
    jobs = _jobs([(f"w0!{i}", 10.0 * i, 10.0 * i + 0.0024, 10.0 * i + 5, "0") for i in range(20)])
    run = Run(source=Path("spaced"), jobs=jobs)
    for fig in (overlay_timeseries([Group("spaced", [run])]), utilisation_figure(run, 200.0)):
        queued = fig.axes[1].lines[0].get_ydata()
        plt.close(fig)
        assert max(queued) == 0.0


def test_histogram_is_per_group_fraction_not_pooled_count() -> None:
    ten = [pd.Series(np.random.default_rng(k).exponential(100, 50)) for k in range(10)]
    bins, frac = waiting_histogram({"ten": pd.concat(ten), "twenty": pd.concat(ten + ten)})
    assert np.array_equal(frac["ten"], frac["twenty"]) and frac["ten"].sum() == pytest.approx(1.0)
    fig = waiting_figure({"ten": pd.concat(ten), "twenty": pd.concat(ten + ten)})
    heights = [p.get_path().vertices[:, 1].max() for p in fig.axes[0].patches]
    plt.close(fig)
    assert heights[0] == heights[1] == pytest.approx(frac["ten"].max())


def test_natural_node_order() -> None:
    names = ["node-10", "node-2", "node-1", "node-0", "node-11"]
    assert sorted(names, key=m.natural_key) == ["node-0", "node-1", "node-2", "node-10", "node-11"]
    ids = {i: n for i, n in enumerate(sorted(names))}  # Batsim numbers hosts lexicographically
    assert [ids[r] for r in resource_rows(5, np.array([0]), ids)] == sorted(names, key=m.natural_key)
    nodes = pd.DataFrame({"node": names, "resource_id": range(5), "cpu": 1.0})
    fig, ax = plt.subplots()
    empty = pd.DataFrame(columns=["node", "start", "end", "used", "capacity"])
    pods = pd.DataFrame(columns=["node", "bind_time", "finish_time", "cpu_request"])
    plot_node_gantt(ax, pods, nodes, empty)
    labels = [t.get_text().split()[0] for t in ax.get_yticklabels()]
    plt.close(fig)
    assert labels == ["node-0", "node-1", "node-2", "node-10", "node-11"]


def test_colocated_jobs_get_lanes_and_every_platform_resource_a_row() -> None:
    jobs = _jobs(
        [("w0!1", 0, 0, 10, "0"), ("w0!2", 0, 0, 20, "0"), ("w0!3", 0, 10, 30, "0"), ("w0!4", 0, 0, 5, "1")]
    )
    lanes = job_lanes(jobs).set_index("job")
    assert lanes.loc[[0, 1, 2], "lanes"].tolist() == [2, 2, 2] and lanes.at[3, "lanes"] == 1
    assert lanes.at[0, "lane"] != lanes.at[1, "lane"] and lanes.at[2, "lane"] == lanes.at[0, "lane"]
    run = load_run(TINY)
    run.nb_resources = 16
    fig = job_gantt_figure(run)
    ax = fig.axes[0]
    rects = [p for c in ax.collections if isinstance(c, PolyCollection) for p in c.get_paths()]
    boxes = [
        (r.vertices[:, 0].min(), r.vertices[:, 0].max(), r.vertices[:, 1].min(), r.vertices[:, 1].max())
        for r in rects
    ]
    plt.close(fig)
    assert ax.get_ylim() == (0.0, 16.0)
    for i, a in enumerate(boxes):  # no two rectangles overlap
        for b in boxes[i + 1 :]:
            assert a[1] <= b[0] or b[1] <= a[0] or a[3] <= b[2] or b[3] <= a[2], (a, b)


def test_dot_plot_axis_fits_the_data_and_prints_values() -> None:
    agg = pd.DataFrame(
        {
            "metric": ["makespan"] * 2 + ["mean_waiting_time"] * 2,
            "group": ["a label long enough to need wrapping", "b"] * 2,
            "n": [1, 20, 1, 20],
            "mean": [2210.0, 2214.8, 979.2, 970.1],
            "sd": [0.0, 0.5, 0.0, 12.3],
        }
    )
    fig = dots_figure(agg)
    ax = fig.axes[0]
    lo, hi = ax.get_xlim()
    texts = [t.get_text() for t in ax.texts]
    ticks = [t.get_text() for t in ax.get_yticklabels()]
    xlabel = ax.get_xlabel()
    plt.close(fig)
    assert 2200 < lo < 2210 and 2215.3 < hi < 2230  # a 5-s difference fills the axis
    assert texts == ["2210.0 s", "2214.8 ± 0.5 s"] and xlabel == "s (axis not from 0)"
    assert "\n" in ticks[0]


def test_compare_table_counts_are_integers_and_utilisation_has_digits() -> None:
    groups = load_groups(plan_groups([str(TINY)], ["tiny"], [("two", str(TINY)), ("two", str(TINY))]))
    wide = wide_table(aggregate(groups)).set_index("metric")
    assert wide.at["jobs_total", "tiny"] == "7" and wide.at["jobs_total", "two"] == "7 ± 0"
    assert wide.at["cpu_over_allocations", "two"] == "1 ± 0"
    util = wide.at["cpu_utilisation", "tiny"]
    assert len(util.split(".")[1]) == 3


def test_a_gang_is_drawn_as_one_job_joined_across_its_hosts_and_labelled_once() -> None:
    from batkube_py.analysis.gantt import plot_job_gantt

    jobs = _jobs([("w0!1", 0, 0, 100, "0-1 3"), ("w0!2", 0, 0, 100, "2")])
    fig, ax = plt.subplots(figsize=(8, 4))
    plot_job_gantt(ax, jobs, 4)
    joins = [c for c in ax.collections if c.get_gid() == "gang-hosts"]
    labels = [t.get_text() for t in ax.texts]
    plt.close(fig)
    assert len(joins) == 1
    (segment,) = joins[0].get_segments()  # one line, for the one job on several hosts
    assert segment[0, 0] == segment[1, 0] == 0.0  # at the job's start
    ys = sorted(segment[:, 1])
    assert ys[0] < 0.1 and ys[1] > 3.9  # from its lowest host (row 0) to its highest (row 3)
    assert sorted(labels) == ["1", "2"]  # the gang once, the single job once
