"""The Kueue twin on what follows a preemption of a plain pod: Kueue v0.17.0's job framework clears the
victim's quota reservation at once (a plain pod is never active) and queues its Workload again, with its
creation time, until its pod is gone; meanwhile that Workload may preempt and be admitted again
(pkg/controller/jobframework/reconciler.go, step 6). Found by the Kueue parity suite
(tests/kueue_parity_cases.py, preempted-pod-requeued): the real Kueue killed a newer job there."""

from __future__ import annotations

from kueue_support import Driver, config, cq, flavor, wpc

PRIORITIES = [wpc("low", 10), wpc("high", 1000)]


def two_flavors(tmp_path, policy: str = "LowerOrNewerEqualPriority"):
    return Driver(config(tmp_path, flavor("f1"), flavor("f2"), *PRIORITIES,
                         cq("cq", {"f1": {"cpu": 1}, "f2": {"cpu": 1}},
                            preemption={"withinClusterQueue": policy})))  # fmt: skip


def test_a_preempted_plain_pods_workload_comes_back_and_preempts_a_newer_one(tmp_path):
    d = two_flavors(tmp_path)
    d.submit("x", "cq", 1, t=0, priority=10)
    d.run(0)
    d.submit("y", "cq", 1, t=1, priority=10)
    d.run(1)
    assert (d.flavors("x"), d.flavors("y")) == ({"cpu": "f1"}, {"cpu": "f2"})
    d.submit("h", "cq", 1, t=10, priority=1000)
    admitted, preempted = d.run(10)
    # h takes x's f1; x's Workload, queued again and older than y, takes y's f2 while x's pod stops (an
    # admission that starts nothing: not among the decisions)
    assert preempted == ["x", "y"] and admitted == ["h"]
    x = d.twin.workloads["x"]
    assert x.stopping and x.usage is not None and d.flavors("x") == {"cpu": "f2"}
    # y, queued again too, is newer than x: it cannot preempt it back
    assert d.twin.workloads["y"].usage is None and d.twin.workloads["y"].stopping
    # x's pod is gone: its Workload's second admission frees f2 for y
    d.finish("x")
    assert d.run(10) == ([], []) and d.twin.workloads["y"].usage is not None


def test_under_lower_priority_the_requeued_victim_waits(tmp_path):
    d = two_flavors(tmp_path, "LowerPriority")
    d.submit("x", "cq", 1, t=0, priority=10)
    d.submit("y", "cq", 1, t=1, priority=10)
    d.run(1)
    d.submit("h", "cq", 1, t=10, priority=1000)
    admitted, preempted = d.run(10)
    assert preempted == ["x"] and admitted == ["h"]
    assert d.twin.workloads["x"].usage is None and d.usage("cq") == {"f1/cpu": 1000, "f2/cpu": 1000}


def test_a_pod_group_keeps_its_quota_until_its_pods_stop(tmp_path):
    queue = cq("cq", {"f": {"cpu": 1}}, preemption={"withinClusterQueue": "LowerPriority"})
    d = Driver(config(tmp_path, flavor("f"), *PRIORITIES, queue))
    d.submit("g", "cq", 0.5, t=0, priority=10, pods=2)
    d.run(0)
    d.submit("h", "cq", 1, t=10, priority=1000)
    admitted, preempted = d.run(10)
    assert preempted == ["g"] and admitted == []
    assert d.twin.workloads["g"].evicted and not d.twin.workloads["g"].stopping
