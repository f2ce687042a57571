"""Preemption (DefaultPreemption → KILL_JOB → resubmission) and node failures, end to end."""

import csv
import json
from pathlib import Path

import pytest
from test_scheduler import nodes, pod

from batkube_py.cluster.embedded import EmbeddedCluster
from batkube_py.inputs.platforms import cluster_platform
from batkube_py.runs.run import RunConfig, run
from batkube_py.scheduler.podinfo import pod_info
from batkube_py.scheduler.preemption import preempt

ROOT = Path(__file__).resolve().parents[1]
DOUBLE = str(ROOT / "tests" / "batsim_double" / "batsim")


def test_victims_are_the_fewest_least_important_pods():
    c = EmbeddedCluster(nodes({"cpu": "4"}, {"cpu": "4"}), seed=0)
    placed = {0: [("a", "2", 1), ("b", "2", 5)], 1: [("c", "1", 1), ("d", "1", 2), ("e", "2", 3)]}
    for i, specs in placed.items():
        for k, (name, cpu, prio) in enumerate(specs):
            info = pod_info(pod(name, cpu, priority=prio), name, 0.0, 10 * i + k)
            info.node = i
            c.nodes.assume(i, info)
    high = pod_info(pod("h", "2", priority=10), "h", 1.0, 99)
    found = preempt(c.profiles["default-scheduler"], high, c.nodes)
    # n0: evicting a (priority 1) suffices; n1 needs c+d (highest victim 2) or e (3): n0 wins
    assert found.node == 0 and [v.name for v in found.victims] == ["a"]
    high5 = pod_info(pod("h5", "3", priority=4), "h5", 1.0, 98)
    found = preempt(c.profiles["default-scheduler"], high5, c.nodes)
    # n0 can only free a (b has priority 5 > 4): 2 cpu < 3; n1: c, d, e all below 4 → reprieve e (most
    # important) first: c+d free 2 < 3, so e stays a victim; then d: c+e free 3 → d is reprieved
    assert found.node == 1 and sorted(v.name for v in found.victims) == ["c", "e"]
    assert c.nodes.over_allocated() == 0 and len(c.nodes.pods_on[0]) + len(c.nodes.pods_on[1]) == 5


def test_never_policy_and_equal_priority_do_not_preempt():
    c = EmbeddedCluster(nodes({"cpu": "1"}), seed=0)
    c.add_pod(pod("a", "1", priority=5), "a", 0.0)
    c.schedule(0.0)
    same = pod_info(pod("s", "1", priority=5), "s", 1.0, 9)
    assert preempt(c.profiles["default-scheduler"], same, c.nodes) is None
    never = pod("n", "1", priority=9)
    never.spec.preemption_policy = "Never"
    assert preempt(c.profiles["default-scheduler"], pod_info(never, "n", 1.0, 10), c.nodes) is None


def _run(tmp_path, jobs, profiles, platform_nodes, cores, extra=(), kube_version="1.37"):
    (tmp_path / "p.xml").write_text(cluster_platform(platform_nodes, cores))
    (tmp_path / "w.json").write_text(
        json.dumps({"nb_res": platform_nodes, "jobs": jobs, "profiles": profiles})
    )
    cfg = RunConfig(tmp_path / "p.xml", tmp_path / "w.json", tmp_path / "out", batsim=DOUBLE, progress=False,
                    batsim_args=tuple(extra), kube_version=kube_version)  # fmt: skip
    summary = run(cfg)
    rows = list(csv.DictReader((tmp_path / "out" / "pods.csv").open()))
    return summary, {r["job_id"]: r for r in rows}


@pytest.mark.parametrize("version", ["1.32", "1.37"])
def test_preemption_kills_victims_and_resubmits_them(tmp_path, version):
    jobs = [{"id": f"l{i}", "subtime": 0, "res": 1, "profile": "low"} for i in range(4)]
    jobs.append({"id": "hi", "subtime": 5, "res": 1, "profile": "high", "priority": 100})
    profiles = {
        "low": {"type": "delay", "delay": 100, "cpu": "1"},
        "high": {"type": "delay", "delay": 10, "cpu": "2"},
    }
    summary, pods = _run(tmp_path, jobs, profiles, 2, "2", kube_version=version)
    assert summary["error"] is None, summary["error"]
    assert summary["jobs_preempted"] == 2 and summary["jobs_resubmitted"] == 2
    assert summary["jobs_total"] == 7 and summary["jobs_succeeded"] == 5 and summary["jobs_killed"] == 2
    killed = [r for r in pods.values() if r["state"] == "Killed"]
    assert all("preempted by w0-hi" in r["reason"] and "resubmitted as" in r["reason"] for r in killed)
    high = pods["w0!hi"]
    if version == "1.32":  # failed at 5.0012, it waits out its 1-s backoff, flushed on the next 1-s tick
        assert 6 < float(high["start_time"]) < 7.1 and high["node"] == killed[0]["node"]
    else:  # the victims' deletion moves it to backoffQ, and an idle scheduler pops it at once
        assert 5 < float(high["start_time"]) < 5.1 and high["node"] == killed[0]["node"]
    again = [r for j, r in pods.items() if "#r1" in j]
    assert len(again) == 2 and all(r["state"] == "Succeeded" for r in again)
    assert all(float(r["start_time"]) >= float(high["finish_time"]) for r in again)
    assert summary["over_allocations"] == 0


def test_node_failure_kills_its_pods_and_they_run_again(tmp_path):
    events = tmp_path / "events.txt"
    events.write_text(
        '{"timestamp": 10, "type": "machine_unavailable", "resources": "0"}\n'
        '{"timestamp": 50, "type": "machine_available", "resources": "0"}\n'
    )
    jobs = [{"id": x, "subtime": 0, "res": 1, "profile": "p"} for x in ("a", "b")]
    summary, pods = _run(tmp_path, jobs, {"p": {"type": "delay", "delay": 100, "cpu": "1"}}, 2, "1",
                         ["--events", str(events)])  # fmt: skip
    assert summary["error"] is None, summary["error"]
    assert summary["jobs_node_failures"] == 1 and summary["jobs_resubmitted"] == 1
    failed = [r for r in pods.values() if r["state"] == "Killed"]
    assert len(failed) == 1 and "failed (machine unavailable)" in failed[0]["reason"]
    again = next(r for j, r in pods.items() if "#r1" in j)
    assert again["state"] == "Succeeded" and 50 <= float(again["start_time"]) < 51
    assert abs(summary["makespan"] - 150) < 1
