"""Cluster fragmentation (free cores no pending pod group can use), on a case computed by hand.

Three nodes of 2 cores. Pod A (1 cpu) runs on node-0 over [0, 10). Group G (3 pods × 2 cpu) is submitted
at 0 and bound at 10 (one pod per node, until 20). Group H (2 pods × 1 cpu) is submitted at 2, bound at 4
on node-1 (both pods), done at 8.

- [0, 2): free 1 + 2 + 2 = 5; G would need 3 nodes with 2 free cores, it has 2: nothing usable, 5 × 2 = 10.
- [2, 4): H (1-cpu pods, 5 slots ≥ 2) fits: every node has room for one of its pods, 0 fragmented.
- [4, 8): H holds node-1: free 1 + 0 + 2 = 3, G has 1 slot: 3 × 4 = 12.
- [8, 10): free 5 again, only G waits: 5 × 2 = 10.
- [10, 20): nothing waits: 0.
So 32 core-seconds over a span of 20 s (mean 1.6 cores), out of 10 + 10 + 12 + 10 = 42 free core-seconds
while some group waited (32 / 42).
"""

from __future__ import annotations

import pandas as pd
import pytest

from batkube_py.adapter import fragmentation
from batkube_py.adapter.outputs import PodRecord
from batkube_py.analysis.report import compute_metrics

NODES = {"node-0": 2.0, "node-1": 2.0, "node-2": 2.0}


def _records() -> list[PodRecord]:
    a = PodRecord(
        "w!a",
        "w-a",
        "node-0",
        0,
        1.0,
        submit_time=0.0,
        bind_time=0.0,
        start_time=0.0,
        finish_time=10.0,
        state="Succeeded",
    )
    g = PodRecord(
        "w!g",
        "w-g",
        "node-0 node-1 node-2",
        "0-2",
        2.0,
        submit_time=0.0,
        bind_time=10.0,
        start_time=10.0,
        finish_time=20.0,
        state="Succeeded",
        group="w-g",
        group_size=3,
        members=(("w-g-0", "node-0", 0), ("w-g-1", "node-1", 1), ("w-g-2", "node-2", 2)),
    )
    h = PodRecord(
        "w!h",
        "w-h",
        "node-1",
        "1",
        1.0,
        submit_time=2.0,
        bind_time=4.0,
        start_time=4.0,
        finish_time=8.0,
        state="Succeeded",
        group="w-h",
        group_size=2,
        members=(("w-h-0", "node-1", 1), ("w-h-1", "node-1", 1)),
    )
    return [a, g, h]


def _frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = []
    for r in _records():
        for pod, node, _ in r.members or ((r.pod, r.node, 0),):
            rows.append(
                {
                    "job_id": r.job_id,
                    "pod": pod,
                    "node": node,
                    "cpu_request": r.cpu_request,
                    "submit_time": r.submit_time,
                    "bind_time": r.bind_time,
                    "start_time": r.start_time,
                    "finish_time": r.finish_time,
                    "state": r.state,
                    "group": r.group or None,
                    "group_size": r.group_size,
                }
            )
    nodes = pd.DataFrame({"node": list(NODES), "cpu": list(NODES.values())})
    return pd.DataFrame(rows), nodes


EXPECTED = {"fragmented_core_seconds": 32.0, "mean_fragmented_cores": 1.6, "fragmentation": 32.0 / 42.0}


def test_from_records_matches_the_hand_computed_case():
    got = fragmentation.from_records(_records(), NODES)
    assert got == pytest.approx(EXPECTED)


def test_from_pods_csv_frames_matches_the_hand_computed_case():
    got = fragmentation.from_frames(*_frames())
    assert got == pytest.approx(EXPECTED)


def test_no_waiting_group_is_no_fragmentation():
    records = [r for r in _records() if not r.group]
    got = fragmentation.from_records(records, NODES)
    assert got == {"fragmented_core_seconds": 0.0, "mean_fragmented_cores": 0.0, "fragmentation": None}


def test_analysis_reports_it(tmp_path):
    pods, nodes = _frames()
    run = type("Run", (), {})()
    jobs = pd.DataFrame(
        {
            "job_id": ["w!a", "w!g", "w!h"],
            "submission_time": [0.0, 0.0, 2.0],
            "starting_time": [0.0, 10.0, 4.0],
            "finish_time": [10.0, 20.0, 8.0],
            "waiting_time": [0.0, 10.0, 2.0],
            "turnaround_time": [10.0, 20.0, 6.0],
            "execution_time": [10.0, 10.0, 4.0],
            "stretch": [1.0, 2.0, 1.5],
            "state": ["succeeded"] * 3,
        }
    )
    run.jobs, run.pods, run.nodes, run.nb_resources = jobs, pods, nodes, 0
    run.decisions = run.rejected = run.summary = None
    run.notes = []
    metrics = compute_metrics(run)
    assert {k: metrics[k] for k in EXPECTED} == pytest.approx(EXPECTED)
