"""The Kueue twin (batkube_py/kueue) against hand-computed expectations from Kueue v0.17.0's algorithm:
queue order, BestEffortFIFO and StrictFIFO, quotas, cohorts with borrowing and lending limits, flavor
fungibility and node labels, each preemption policy and the candidates' order. cpu in cores."""

from __future__ import annotations

import pytest
from kueue_support import Driver, cohort, config, cq, flavor

F = {"f": {"cpu": 4}}


def one_cq(tmp_path, strategy="BestEffortFIFO", **spec):
    return Driver(config(tmp_path, flavor("f"), cq("q", F, queueingStrategy=strategy, **spec)))


def test_quota_admits_in_priority_then_submission_order(tmp_path):
    d = one_cq(tmp_path)
    d.submit("late", "q", 2, t=5)
    d.submit("early", "q", 2, t=1)
    d.submit("urgent", "q", 3, t=9, priority=10)
    # one head per cycle: urgent (3 of 4), then early does not fit (2 > 1) and goes inadmissible, late neither
    assert d.run() == (["urgent"], [])
    assert d.usage("q") == {"f/cpu": 3000}
    assert d.twin.workloads["early"].message.startswith(
        "couldn't assign flavors to pod set main: insufficient unused"
    )


def test_best_effort_fifo_lets_a_smaller_later_workload_past_a_blocked_head(tmp_path):
    d = one_cq(tmp_path)
    d.submit("a", "q", 3, t=0)
    d.submit("b", "q", 2, t=1)  # does not fit beside a: inadmissible
    d.submit("c", "q", 1, t=2)  # fits: admitted although b is older
    assert d.run() == (["a", "c"], [])
    assert "b" in d.twin.queues.queues["q"].inadmissible


def test_strict_fifo_head_blocks_every_later_workload(tmp_path):
    d = one_cq(tmp_path, "StrictFIFO")
    d.submit("a", "q", 3, t=0)
    d.submit("b", "q", 2, t=1)
    d.submit("c", "q", 1, t=2)
    assert d.run() == (["a"], [])
    assert d.run(5) == ([], [])  # still blocked: nothing changed
    d.finish("a")
    assert d.run(10) == (["b", "c"], [])


def test_best_effort_inadmissible_workloads_wait_for_a_requeue_trigger(tmp_path):
    d = one_cq(tmp_path)
    d.submit("a", "q", 4, t=0)
    d.submit("b", "q", 2, t=1)
    assert d.run() == (["a"], [])
    assert d.run(3) == ([], [])  # b stays in the inadmissible set
    d.finish("a")  # quota freed: the ClusterQueue's inadmissible workloads go back to the heap
    assert d.run(4) == (["b"], [])


def test_a_workload_larger_than_any_quota_is_never_admitted(tmp_path):
    d = one_cq(tmp_path)
    d.submit("huge", "q", 5)
    assert d.run() == ([], [])
    assert "maximum capacity" in d.twin.workloads["huge"].message


def cohort_pair(tmp_path, a_quota=None, b_quota=None, **a_spec):
    a_quota = a_quota or {"nominalQuota": 4}
    b_quota = b_quota or {"nominalQuota": 4}
    return Driver(
        config(
            tmp_path,
            flavor("f"),
            cq("a", {"f": {"cpu": a_quota}}, "co", **a_spec),
            cq("b", {"f": {"cpu": b_quota}}, "co"),
        )
    )


def test_borrowing_from_the_cohort_up_to_its_unused_quota(tmp_path):
    d = cohort_pair(tmp_path)
    d.submit("a1", "a", 6)  # 4 own + 2 of b's
    assert d.run() == (["a1"], [])
    d.submit("b1", "b", 3)  # b has 2 left
    d.submit("b2", "b", 2, t=1)
    assert d.run(1) == (["b2"], [])
    assert d.twin.cache.cohorts["co"].usage == {("f", "cpu"): 8000}


def test_borrowing_limit_caps_what_a_queue_takes_from_its_cohort(tmp_path):
    d = cohort_pair(tmp_path, a_quota={"nominalQuota": 4, "borrowingLimit": 1})
    d.submit("a1", "a", 6)  # 4 + at most 1
    d.submit("a2", "a", 5, t=1)
    assert d.run() == (["a2"], [])
    assert "current podset request (6) > maximum capacity (5)" in d.twin.workloads["a1"].message


def test_lending_limit_keeps_part_of_a_queue_to_itself(tmp_path):
    d = cohort_pair(tmp_path, b_quota={"nominalQuota": 4, "lendingLimit": 1})
    d.submit("a1", "a", 6)  # b lends only 1: a may use 5
    d.submit("a2", "a", 5, t=1)
    assert d.run() == (["a2"], [])
    d.submit("b1", "b", 3, t=2)  # b's 3 kept for itself are still free
    assert d.run(2) == (["b1"], [])


def test_hierarchical_cohorts_lend_across_levels(tmp_path):
    cfg = config(
        tmp_path,
        flavor("f"),
        cohort("root"),
        cohort("left", "root"),
        cohort("right", "root"),
        cq("a", {"f": {"cpu": 2}}, "left"),
        cq("b", {"f": {"cpu": 2}}, "right"),
    )
    d = Driver(cfg)
    d.submit("a1", "a", 4)  # a's 2 plus b's 2, through the root
    assert d.run() == (["a1"], [])
    # without lending limits all usage is stored up the tree, against the root's 4
    assert d.twin.cache.cohorts["root"].usage == d.twin.cache.cohorts["root"].subtree == {("f", "cpu"): 4000}
    d.submit("b1", "b", 1, t=1)
    assert d.run(1) == ([], [])


def test_within_cluster_queue_lower_priority_preempts_only_lower_priorities(tmp_path):
    d = one_cq(tmp_path, preemption={"withinClusterQueue": "LowerPriority"})
    d.submit("low", "q", 3, t=0, priority=1)
    d.submit("same", "q", 1, t=1, priority=5)
    assert d.run() == (["same", "low"], [])  # higher priority first
    d.submit("high", "q", 3, t=2, priority=5)  # needs 3: evicting low (1 < 5) suffices, same is not lower
    assert d.reasons(2) == [("low", "InClusterQueue")]
    # a plain pod's quota comes back at its eviction (Kueue's job framework): high is admitted at once and
    # low's Workload waits in the queue until its pod is gone
    assert d.twin.workloads["high"].usage is not None and d.twin.workloads["low"].stopping
    d.finish("low")
    assert d.run(3) == ([], [])


def test_within_cluster_queue_lower_or_newer_equal_priority_preempts_newer_equals(tmp_path):
    d = one_cq(tmp_path, preemption={"withinClusterQueue": "LowerOrNewerEqualPriority"})
    d.submit("x", "q", 2, t=0)
    d.submit("older", "q", 3, t=1)  # inadmissible beside x
    d.submit("newer", "q", 2, t=2)
    assert d.run() == (["x", "newer"], [])
    d.finish("x")  # older is retried: 2 free, needs 3, newer is equal priority and newer: a victim
    assert d.reasons(3) == [("newer", "InClusterQueue")]


@pytest.mark.parametrize("policy, victims", [("Never", []), ("LowerPriority", []), ("Any", ["a1"])])
def test_reclaim_within_cohort_takes_back_lent_quota_per_policy(tmp_path, policy, victims):
    d = Driver(
        config(
            tmp_path,
            flavor("f"),
            cq("a", {"f": {"cpu": 4}}, "co"),
            cq("b", {"f": {"cpu": 4}}, "co", preemption={"reclaimWithinCohort": policy}),
        )
    )
    d.submit("a1", "a", 6)  # borrowing 2 of b's
    assert d.run() == (["a1"], [])
    d.submit("b1", "b", 4, t=1)  # within b's nominal quota; a1 has the same priority
    # a plain pod's quota comes back at its eviction: b1 is admitted at once where a1 was its victim
    assert d.run(1) == (["b1"] if victims else [], victims)


def test_reclaim_lower_priority_takes_only_lower_priority_borrowers(tmp_path):
    d = Driver(
        config(
            tmp_path,
            flavor("f"),
            cq("a", {"f": {"cpu": 4}}, "co"),
            cq("b", {"f": {"cpu": 4}}, "co", preemption={"reclaimWithinCohort": "LowerPriority"}),
        )
    )
    d.submit("a1", "a", 3, priority=0)
    d.submit("a2", "a", 3, t=1, priority=0)
    assert d.run() == (["a1", "a2"], [])
    d.submit("b1", "b", 3, t=2, priority=9)
    # a borrows 2; the most recently admitted of equal priority goes first, and one victim frees enough
    assert d.reasons(2) == [("a2", "InCohortReclamation")]


def test_borrow_within_cohort_lets_a_borrowing_preemptor_evict_lower_priorities(tmp_path):
    def run(bwc):
        preemption = {"reclaimWithinCohort": "LowerPriority", "borrowWithinCohort": {"policy": bwc}}
        d = cohort_pair(tmp_path, {"nominalQuota": 2}, {"nominalQuota": 2}, preemption=preemption)
        d.submit("b1", "b", 3, priority=1)  # b borrows 1
        assert d.run() == (["b1"], [])
        d.submit("a1", "a", 3, t=1, priority=9)  # needs 3 > its nominal 2: must borrow while preempting
        return d.reasons(1)

    assert run("LowerPriority") == [("b1", "InCohortReclaimWhileBorrowing")]
    assert run("Never") == []


def test_borrow_within_cohort_respects_the_max_priority_threshold(tmp_path):
    preemption = {
        "reclaimWithinCohort": "LowerPriority",
        "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 0},
    }
    d = cohort_pair(tmp_path, {"nominalQuota": 2}, {"nominalQuota": 2}, preemption=preemption)
    d.submit("b1", "b", 3, priority=1)  # above the threshold: only preemptible without borrowing
    assert d.run() == (["b1"], [])
    d.submit("a1", "a", 3, t=1, priority=9)
    assert d.reasons(1) == []


def test_candidates_from_other_queues_go_before_the_preemptors_own(tmp_path):
    spec = {"preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "LowerPriority"}}
    d = Driver(
        config(
            tmp_path, flavor("f"), cq("a", {"f": {"cpu": 4}}, "co", **spec), cq("b", {"f": {"cpu": 4}}, "co")
        )
    )
    d.submit("own", "a", 2, priority=0)
    d.submit("b1", "b", 6, t=1, priority=0)  # b borrows 2 of a's
    assert d.run() == (["own", "b1"], [])
    d.submit("hp", "a", 2, t=2, priority=5)
    assert d.reasons(2) == [("b1", "InCohortReclamation")]


def test_fungibility_takes_the_next_flavor_when_the_first_cannot_hold_it(tmp_path):
    quotas = {"small": {"cpu": 2}, "big": {"cpu": 8}}
    d = Driver(config(tmp_path, flavor("small"), flavor("big"), cq("q", quotas)))
    d.submit("w", "q", 3)
    assert d.run() == (["w"], [])
    assert d.flavors("w") == {"cpu": "big"}


@pytest.mark.parametrize("when_can_borrow, chosen", [("MayStopSearch", "f1"), ("TryNextFlavor", "f2")])
def test_when_can_borrow_decides_between_borrowing_and_the_next_flavor(tmp_path, when_can_borrow, chosen):
    quotas = {"f1": {"cpu": 2}, "f2": {"cpu": 4}}
    d = Driver(
        config(
            tmp_path,
            flavor("f1"),
            flavor("f2"),
            cq("a", quotas, "co", flavorFungibility={"whenCanBorrow": when_can_borrow}),
            cq("b", {"f1": {"cpu": 4}, "f2": {"cpu": 0}}, "co"),
        )
    )
    d.submit("w", "a", 3)  # f1: fits only by borrowing b's f1; f2: fits in a's own quota
    assert d.run() == (["w"], [])
    assert d.flavors("w") == {"cpu": chosen}


def test_a_flavor_whose_node_labels_the_pod_excludes_is_skipped(tmp_path):
    quotas = {"amd": {"cpu": 4}, "arm": {"cpu": 4}}
    d = Driver(
        config(
            tmp_path,
            flavor("amd", nodeLabels={"arch": "amd64"}),
            flavor("arm", nodeLabels={"arch": "arm64"}),
            cq("q", quotas),
        )
    )
    d.submit("w", "q", 1, node_selector={"arch": "arm64", "unrelated": "x"})  # only the group's keys count
    assert d.run() == (["w"], [])
    assert d.flavors("w") == {"cpu": "arm"}


def test_a_flavor_taint_the_pod_does_not_tolerate_is_skipped(tmp_path):
    taint = {"key": "spot", "value": "true", "effect": "NoSchedule"}
    quotas = {"spot": {"cpu": 4}, "on-demand": {"cpu": 4}}
    d = Driver(config(tmp_path, flavor("spot", nodeTaints=[taint]), flavor("on-demand"), cq("q", quotas)))
    d.submit("w", "q", 1)
    assert d.run() == (["w"], [])
    assert d.flavors("w") == {"cpu": "on-demand"}


@pytest.mark.parametrize("strategy, admitted", [("StrictFIFO", []), ("BestEffortFIFO", ["b2"])])
def test_a_preemptor_without_candidates_reserves_its_quota_for_the_cycle(tmp_path, strategy, admitted):
    d = Driver(
        config(
            tmp_path,
            flavor("f"),
            cq("a", {"f": {"cpu": 4}}, "co", queueingStrategy=strategy),
            cq("b", {"f": {"cpu": 4}}, "co"),
        )
    )
    d.submit("b1", "b", 6)  # borrows 2 of a's
    assert d.run() == (["b1"], [])
    d.submit("a2", "a", 4, t=1)  # within a's nominal 4, but 2 are lent and reclaimWithinCohort is Never
    d.submit("b2", "b", 1, t=1)  # fits the cohort's last 2, by borrowing
    # a2 sorts first (no borrowing), finds no candidate and reserves its 4: b2 no longer fits this cycle.
    # StrictFIFO retries a2 every cycle, so b2 waits; BestEffortFIFO parks a2 and b2 gets in next cycle.
    assert d.run(1) == (admitted, [])
    if not admitted:
        assert d.twin.workloads["b2"].message == "Workload no longer fits after processing another workload"


def test_a_workload_requesting_nothing_is_admitted_without_quota(tmp_path):
    d = one_cq(tmp_path)
    d.submit("a", "q", 4)
    wl = d.submit("besteffort", "q", 0, t=1)
    wl.per_pod.clear()  # a BestEffort pod: no request at all
    assert d.run() == (["a", "besteffort"], [])
    assert d.usage("q") == {"f/cpu": 4000} and d.flavors("besteffort") == {}


def test_a_resource_the_cluster_queue_does_not_cover_is_no_fit(tmp_path):
    d = one_cq(tmp_path)
    wl = d.submit("gpu", "q", 1)
    wl.per_pod["nvidia.com/gpu"] = 1
    assert d.run() == ([], [])
    assert "resource nvidia.com/gpu unavailable in ClusterQueue" in wl.message


def test_a_cluster_queue_covering_pods_counts_them(tmp_path):
    d = Driver(config(tmp_path, flavor("f"), cq("q", {"f": {"cpu": 8, "pods": 2}})))
    for i in range(3):
        d.submit(f"w{i}", "q", 1, t=i)
    assert d.run() == (["w0", "w1"], [])
    assert d.usage("q") == {"f/cpu": 2000, "f/pods": 2}
