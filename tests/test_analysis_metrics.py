"""Metrics of batkube_py.analysis: against Batsim's own out_schedule.csv, the tiny fixture and brute force."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shared_support import requires_shared, shared_cases

from batkube_py.analysis import metrics as m
from batkube_py.analysis.loading import AnalysisError, load_run, read_jobs
from batkube_py.analysis.platform import parse_quantity, read_platform, read_workload_cpu
from batkube_py.analysis.report import attach_platform, check_against_schedule, compute_metrics

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
TINY = ROOT / "tests" / "fixtures" / "analysis" / "tiny_run"
TRANSCRIPTS = SHARED / "batsim" / "transcripts"
needs_shared = requires_shared("batsim", "transcripts")


def _batsim_out_dirs() -> list[Path]:
    if not TRANSCRIPTS.exists():
        return shared_cases(("batsim", "transcripts"))
    return sorted(
        p
        for p in TRANSCRIPTS.glob("*/out")
        if (p / "out_schedule.csv").exists() and (p / "out_jobs.csv").stat().st_size > 0
    )


@needs_shared
@pytest.mark.parametrize("out_dir", _batsim_out_dirs(), ids=lambda p: p.parent.name)
def test_metrics_equal_batsim_out_schedule(out_dir: Path) -> None:
    run = load_run(out_dir)
    metrics = compute_metrics(run)
    assert run.schedule is not None
    assert check_against_schedule(metrics, run.schedule) == {}
    assert metrics["makespan"] == pytest.approx(float(run.schedule["makespan"]), abs=1e-6)
    assert metrics["batsim_mean_waiting_time"] == pytest.approx(
        float(run.schedule["mean_waiting_time"]), abs=1e-6
    )


@needs_shared
def test_rejected_jobs_mean_definitions() -> None:
    """Batsim divides by all jobs (5), we also report the mean over the 4 started ones."""
    run = load_run(TRANSCRIPTS / "b_extra_fields_multires" / "out")
    metrics = compute_metrics(run)
    assert metrics["jobs_rejected"] == 1
    assert metrics["batsim_mean_waiting_time"] == pytest.approx(6.8044)
    assert metrics["mean_waiting_time"] == pytest.approx(6.8044 * 5 / 4)


@needs_shared
def test_walltime_reached_counts_as_killed() -> None:
    metrics = compute_metrics(load_run(TRANSCRIPTS / "a_4hosts_6delays" / "out"))
    assert metrics["jobs_killed"] == 1 and metrics["jobs_succeeded"] == 5


def test_tiny_fixture_metrics() -> None:
    run = load_run(TINY)
    metrics = compute_metrics(run)
    assert check_against_schedule(metrics, run.schedule) == {}
    assert metrics["makespan"] == 20.0
    assert metrics["jobs_total"] == 7 and metrics["jobs_rejected"] == 1 and metrics["jobs_killed"] == 1
    assert metrics["mean_waiting_time"] == pytest.approx(17 / 6)
    assert metrics["max_waiting_time"] == 8.0
    # node-a (2 cpu) runs 1 + 1 + 0.5 cpu during [5, 10): one episode, 5 node-seconds, 125 %
    assert metrics["cpu_over_allocations"] == 1
    assert metrics["cpu_over_allocated_node_seconds"] == pytest.approx(5.0)
    assert metrics["cpu_max_overcommit"] == pytest.approx(1.25)
    # cpu-seconds: 10 + 20 + 10 + 5 + 4.5 + 2.5 = 52 over 3 cpu x 20 s
    assert metrics["cpu_utilisation"] == pytest.approx(52 / 60)
    assert metrics["unschedulable_reasons"] == {"Insufficient cpu": 3, "node(s) had untolerated taint": 1}
    assert metrics["rejection_fields"] == {"cpu": 1}
    assert metrics["notes"] == []  # summary.json's over_allocations (1) agrees
    # bounded slowdown, tau 10: job 7 turnaround 11 over max(5, 10) -> 1.1; job 5 -> 17/10
    assert metrics["max_bounded_slowdown"] == pytest.approx(1.7)


def test_bounded_slowdown_tau() -> None:
    jobs = read_jobs(TINY / "out_jobs.csv")
    assert m.job_metrics(jobs, bsld_tau=1.0)["max_bounded_slowdown"] == pytest.approx(2.2)


def test_step_series_back_to_back_is_not_overlap() -> None:
    s = m.step_series(np.array([0.0, 10.0]), np.array([10.0, 20.0]), np.array([1.0, 1.0]))
    assert s["value"].max() == 1.0
    assert list(s["time"]) == [0.0, 10.0, 20.0]


def test_expand_allocations() -> None:
    alloc = pd.Series(["3", "0-2 5", "", "7"])
    out = m.expand_allocations(alloc)
    assert list(out.index) == [0, 1, 1, 1, 1, 3]
    assert list(out) == [3, 0, 1, 2, 5, 7]


def _brute_over(pods: pd.DataFrame, cap: float) -> float:
    """Node-seconds over capacity, sampled at every elementary interval midpoint."""
    times = np.unique(np.r_[pods["bind_time"], pods["finish_time"]])
    total = 0.0
    for a, b in zip(times[:-1], times[1:], strict=True):
        mid = (a + b) / 2
        used = pods.loc[(pods["bind_time"] <= mid) & (pods["finish_time"] > mid), "cpu_request"].sum()
        total += (b - a) if used > cap + 1e-9 else 0.0
    return total


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 20),
            st.integers(1, 10),
            st.sampled_from([0.5, 1.0, 1.5]),
            st.sampled_from(["a", "b"]),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_over_allocation_matches_brute_force(spec: list[tuple[int, int, float, str]]) -> None:
    pods = pd.DataFrame(
        {
            "bind_time": [float(s) for s, *_ in spec],
            "finish_time": [float(s + d) for s, d, *_ in spec],
            "cpu_request": [c for *_, c, _ in spec],
            "node": [n for *_, n in spec],
        }
    )
    nodes = pd.DataFrame({"node": ["a", "b"], "cpu": [2.0, 2.0]})
    over = m.over_allocation(pods, nodes)
    for node in ("a", "b"):
        got = (over.loc[over["node"] == node, "end"] - over.loc[over["node"] == node, "start"]).sum()
        assert got == pytest.approx(_brute_over(pods[pods["node"] == node], 2.0))


def test_queue_series_excludes_rejected() -> None:
    q = m.queue_series(read_jobs(TINY / "out_jobs.csv"))
    # job 4 waits [2,5), job 5 [3,11), job 7 [6,12); rejected job 6 never queues
    at = lambda t: q.loc[q["time"] <= t, "value"].iloc[-1]  # noqa: E731
    assert at(4.0) == 2 and at(5.5) == 1 and at(6.5) == 2 and at(12.0) == 0


def test_missing_column_names_file_and_column(tmp_path: Path) -> None:
    bad = tmp_path / "out_jobs.csv"
    bad.write_text("job_id,submission_time,finish_time\n1,0,1\n")
    with pytest.raises(AnalysisError, match=r"out_jobs.csv: missing column\(s\) starting_time"):
        read_jobs(bad)


def test_non_numeric_value_is_reported(tmp_path: Path) -> None:
    bad = tmp_path / "out_jobs.csv"
    bad.write_text("job_id,submission_time,starting_time,finish_time,final_state\n1,zero,0,1,REJECTED\n")
    with pytest.raises(AnalysisError, match="'submission_time' row 2: 'zero' is not a number"):
        read_jobs(bad)


def test_parse_quantity() -> None:
    assert parse_quantity("500m") == 0.5
    assert parse_quantity("4Gi") == 4 * 2**30
    assert parse_quantity(3) == 3.0
    with pytest.raises(ValueError):
        parse_quantity("lots")


@needs_shared
def test_platform_ids_are_lexicographic_and_master_hidden() -> None:
    nodes = read_platform(SHARED / "reference" / "platforms" / "platform_graphene_16nodes.xml")
    assert len(nodes) == 16  # graphene-0 has role master
    assert list(nodes["node"][:3]) == [f"graphene-{i}.nancy.grid5000.fr" for i in (1, 10, 11)]
    assert (nodes["cpu"] == 1).all()
    e = read_platform(TRANSCRIPTS / "e_host_properties" / "platform.xml")
    assert list(e["node"]) == ["node-a", "node-b", "node-c"]
    assert list(e["cpu"]) == [4.0, 8.0, 1.0]


@needs_shared
def test_plain_batsim_run_with_platform_and_workload() -> None:
    case = TRANSCRIPTS / "e_host_properties"
    run = attach_platform(load_run(case / "out"), case / "platform.xml", case / "workload.json")
    metrics = compute_metrics(run)
    assert read_workload_cpu(case / "workload.json")["w0!job-a"] == 1.5
    # job-a 1.5 cpu x 10 s + job-b 2 x 7.5 + job-c 1.5 x 10 over 13 cpu x 27.5001 s
    assert metrics["cpu_utilisation"] == pytest.approx(45 / (13 * 27.5001), rel=1e-6)
    assert metrics["cpu_over_allocations"] == 0


@needs_shared
def test_plain_batsim_run_without_platform_notes_missing_cpu() -> None:
    metrics = compute_metrics(load_run(TRANSCRIPTS / "c_compute_sharing" / "out"))
    assert metrics["cpu_utilisation"] is None
    assert any("cpu utilisation" in n for n in metrics["notes"])
    # 4 hosts from out_schedule.csv; sharing on host 0 is counted once
    assert 0 < metrics["host_utilisation"] <= 1
