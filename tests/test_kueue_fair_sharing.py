"""Fair sharing in the Kueue twin against hand-computed expectations from Kueue v0.17.0's algorithm
(pkg/cache/scheduler/fair_sharing.go, pkg/scheduler/fair_sharing_iterator.go,
pkg/scheduler/preemption/fairsharing): dominant resource shares with weights, the order of a cycle's
heads, and the victims of each preemption strategy. cpu in cores; shares in thousandths."""

from __future__ import annotations

import math

import pytest
from kueue_support import Driver, cohort, config, cq, flavor

from batkube_py.kueue.cache import fair_sharing as fs

FS = ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]


def conf(strategies=FS) -> dict:
    return {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
            "fairSharing": {"preemptionStrategies": strategies}}  # fmt: skip


def weighted(w) -> dict:
    return {"fairSharing": {"weight": w}}


def drs(d: Driver, name: str) -> fs.DRS:
    snap = d.twin.cache.snapshot()
    nodes = {n.name: n for c in snap.cqs.values() for n in (c, *c.path_to_root())}
    node = nodes[name]
    return fs.dominant_resource_share(node)


def test_dominant_resource_share_is_the_largest_borrowed_ratio_over_the_weight(tmp_path):
    # cohort of 16 cores and 16Gi: a (4 cores, 4Gi) and a lender of 12 cores, 12Gi
    res = {"cpu": 4, "memory": "4Gi"}
    d = Driver(config(tmp_path, flavor("f"), cq("a", {"f": res}, "co", **weighted("500m")),
                      cq("l", {"f": {"cpu": 12, "memory": "12Gi"}}, "co"), conf()))  # fmt: skip
    assert drs(d, "a") == fs.DRS(weight=0.5)  # nothing used: no share
    d.submit("x", "a", 6)  # 6 cores: 2 borrowed of the 16 the cohort can lend → 125
    d.twin.workloads["x"].per_pod["memory"] = 12 * 2**30  # and 12Gi: 8Gi borrowed of 16Gi → 500
    assert d.run() == (["x"], [])
    share = drs(d, "a")
    assert (share.ratio, share.resource, share.borrowing) == (500.0, "memory", True)
    assert share.weighted() == 1000.0  # weight 0.5 doubles it
    assert sorted(share.borrowed) == [("f", "cpu"), ("f", "memory")]
    assert drs(d, "l") == fs.DRS()  # within its quota
    assert drs(d, "co") == fs.DRS()  # the root: no parent, no share


def test_a_zero_weight_that_borrows_sorts_after_every_weighted_share():
    zero = fs.DRS(weight=0.0, ratio=1.0, borrowing=True)
    heavy = fs.DRS(weight=1.0, ratio=1000.0, borrowing=True)
    assert zero.weighted() == math.inf
    assert fs.compare(zero, heavy) == 1 and fs.compare(heavy, zero) == -1
    assert fs.compare(fs.DRS(weight=0.0), heavy) == -1  # weight 0 without borrowing: share 0
    assert fs.compare(zero, fs.DRS(weight=0.0, ratio=2.0, borrowing=True)) == -1  # by unweighted ratio


def two_teams(tmp_path, weight_b, fair=True) -> Driver:
    """a and b with 2 cores each and a lender of 7: 11 cores in the cohort; ten 1-core jobs each, a's
    first."""
    b = cq("b", {"f": {"cpu": 2}}, "co", **weighted(weight_b))
    docs = [flavor("f"), cq("a", {"f": {"cpu": 2}}, "co"), b, cq("l", {"f": {"cpu": 7}}, "co")]
    d = Driver(config(tmp_path, *docs, *([conf()] if fair else [])))
    for team in "ab":
        for i in range(10):
            d.submit(f"{team}{i}", team, 1)
    return d


@pytest.mark.parametrize("weight_b, fair, last", [(2, True, "b5"), (1, True, "a5"), (2, False, "a5")])
def test_the_heads_order_follows_the_weighted_share(tmp_path, weight_b, fair, last):
    # Each cycle takes a's and b's heads; both fit while two cores are idle: 5 cycles, 10 cores. In the 6th,
    # one core is left: with a5, a would borrow 4 of 11 cores (363.6); with b5, b too, but over its weight
    # 2: 181.8, so b5 comes first and takes it, and a5 no longer fits. With equal weights, or without fair
    # sharing (the classical order: same borrowing level and priority), the older head a5 takes it.
    d = two_teams(tmp_path, weight_b, fair)
    admitted, _ = d.run()
    assert len(admitted) == 11 and admitted[-1] == last
    assert {n for n in admitted if n[1] == "5"} == {last}


def test_each_freed_core_goes_to_the_lower_share_with_the_head(tmp_path):
    # from the 11 cores above (a 5, b 6), a0 then b0 end: both times a with a5 would borrow 3 of 11 (272.7)
    # and b with its head 5 (454.5, over weight 2: 227.3): b6 then b7 are admitted
    d = two_teams(tmp_path, 2)
    d.run()
    for t, done in ((10, "a0"), (20, "b0")):
        d.finish(done)
        admitted, _ = d.run(t)
        assert admitted == [{"a0": "b6", "b0": "b7"}[done]]
    assert d.usage("a") == {"f/cpu": 4000} and d.usage("b") == {"f/cpu": 7000}


def test_fair_sharing_preemption_within_nominal_reclaims_from_the_highest_share(tmp_path):
    # b borrows 4 of a's idle 4 cores; a's two jobs are within its nominal quota: they take b's most recently
    # admitted workloads without a strategy (FairSharingPreemptWithinNominal), reason InCohortReclamation
    docs = [flavor("f"), cq("a", {"f": {"cpu": 4}}, "co", preemption={"reclaimWithinCohort": "Any"}),
            cq("b", {"f": {"cpu": 4}}, "co"), conf()]  # fmt: skip
    d = Driver(config(tmp_path, *docs))
    for i in range(8):
        d.submit(f"b{i}", "b", 1)
    assert len(d.run()[0]) == 8
    d.submit("a0", "a", 1, t=10)
    d.submit("a1", "a", 1, t=10)
    # one head per ClusterQueue and cycle: a0 evicts b7; a plain pod's quota comes back at its eviction
    # (Kueue v0.17.0), so a0 is admitted in the next cycle of the instant, then a1 takes b6 the same way
    out = d.twin.run(10)
    assert [(t.workload.name, t.reason) for t in out.preempted] == [
        ("b7", "InCohortReclamation"),
        ("b6", "InCohortReclamation"),
    ]
    assert [w.name for w in out.admitted] == ["a0", "a1"]


def over_nominal(tmp_path, strategies=FS, weight_b=1, big=5) -> Driver:
    """a and b with 2 cores each and an idle lender of 4 (8 cores): a runs 2 jobs of 1 core, b one of `big`
    cores; then a3 (2 cores) comes, a would borrow 2."""
    docs = [flavor("f"), cq("a", {"f": {"cpu": 2}}, "co", preemption={"reclaimWithinCohort": "Any"}),
            cq("b", {"f": {"cpu": 2}}, "co", **weighted(weight_b)), cq("l", {"f": {"cpu": 4}}, "co"),
            conf(strategies)]  # fmt: skip
    d = Driver(config(tmp_path, *docs))
    d.submit("a1", "a", 1)
    d.submit("a2", "a", 1)
    d.submit("big", "b", big)
    assert sorted(d.run()[0]) == ["a1", "a2", "big"]
    d.submit("a3", "a", 2, t=10)
    return d


def test_less_than_initial_share_preempts_what_less_than_or_equal_to_final_share_refuses(tmp_path):
    # a with a3: 4 cores, 2 borrowed of 8: 250. b: 3 borrowed: 375. S1 compares 250 with b's share without
    # big (0): refused; S2 compares 250 with 375: big is preempted (InCohortFairSharing)
    assert over_nominal(tmp_path).reasons(10) == [("big", "InCohortFairSharing")]
    (tmp_path / "s2").mkdir()
    d = over_nominal(tmp_path / "s2", ["LessThanInitialShare"])
    assert d.reasons(10) == [("big", "InCohortFairSharing")]


def test_less_than_or_equal_to_final_share_alone_preempts_nothing_here(tmp_path):
    d = over_nominal(tmp_path, ["LessThanOrEqualToFinalShare"])
    assert d.run(10) == ([], [])
    assert "insufficient unused quota" in d.twin.workloads["a3"].message


def small_jobs(tmp_path, lender: int, b_jobs: int, strategies=FS) -> Driver:
    """a and b with 2 cores each and an idle lender: a runs 2 jobs of 1 core, b `b_jobs`."""
    docs = [flavor("f"), cq("a", {"f": {"cpu": 2}}, "co", preemption={"reclaimWithinCohort": "Any"}),
            cq("b", {"f": {"cpu": 2}}, "co"), cq("l", {"f": {"cpu": lender}}, "co"),
            conf(strategies)]  # fmt: skip
    d = Driver(config(tmp_path, *docs))
    for name, team in (("a1", "a"), ("a2", "a"), *((f"b{i}", "b") for i in range(b_jobs))):
        d.submit(name, team, 1)
    assert len(d.run()[0]) == 2 + b_jobs
    return d


@pytest.mark.parametrize("strategies", [FS, ["LessThanInitialShare"]])
def test_the_target_queue_gives_its_newest_workloads_while_its_share_stays_higher(tmp_path, strategies):
    # 8 cores, full: b borrows 4 (500). a with a3 (2 cores) borrows 2: 250. b without b5: 375 ≥ 250, taken
    # (not enough alone); then b at 375 without b4: 250 ≥ 250, taken: a3 fits. S2 alone: 250 < 500, then
    # 250 < 375: the same two.
    d = small_jobs(tmp_path, 4, 6, strategies)
    d.submit("a3", "a", 2, t=10)
    assert d.reasons(10) == [("b5", "InCohortFairSharing"), ("b4", "InCohortFairSharing")]


def test_equal_shares_are_fair_and_nothing_is_preempted(tmp_path):
    # 6 cores, full: a with a3 (2 cores) borrows 2 of 6 (333.3), b borrows 2 (333.3). S1: b without any of its
    # jobs 166.7 < 333.3, refused; S2: 333.3 < 333.3 refused.
    d = small_jobs(tmp_path, 2, 4)
    d.submit("a3", "a", 2, t=10)
    assert d.run(10) == ([], [])
    # a 1-core job instead: a borrows 1 (166.7) ≤ b without b3 (166.7): taken by S1
    (tmp_path / "one").mkdir()
    d = small_jobs(tmp_path / "one", 2, 4)
    d.submit("a4", "a", 1, t=10)
    assert d.reasons(10) == [("b3", "InCohortFairSharing")]


def test_a_heavier_target_is_not_preempted(tmp_path):
    # b's weight 4 brings its share to 375 / 4 = 93.75, below a's 250: neither strategy preempts
    d = over_nominal(tmp_path, weight_b=4)
    assert d.run(10) == ([], [])


def test_hierarchical_tournament_compares_cohorts_at_the_root(tmp_path):
    # root with child cohorts x (CQ x1) and y (CQs y1, y2), each CQ 1 core, and a lender of 4 at the root: 7
    # cores. x1, y1 and y2 run 2 jobs each: x borrows 1 at the root (1000/7 = 142.9), y 2 (285.7); one core
    # is left. Heads y1c then x1c: in y, y1c meets no rival; at the root x with x1c would borrow 2 (285.7),
    # y with y1c 3 (428.6): x1c wins although it came last, and y1c no longer fits
    docs = [flavor("f"), cohort("root"), cohort("x", "root"), cohort("y", "root"),
            cq("x1", {"f": {"cpu": 1}}, "x"), cq("y1", {"f": {"cpu": 1}}, "y"),
            cq("y2", {"f": {"cpu": 1}}, "y"), cq("lend", {"f": {"cpu": 4}}, "root"), conf()]  # fmt: skip
    d = Driver(config(tmp_path, *docs))
    for name, q in (("y1a", "y1"), ("y1b", "y1"), ("y2a", "y2"), ("y2b", "y2"), ("x1a", "x1"), ("x1b", "x1")):
        d.submit(name, q, 1)
    assert sorted(d.run()[0]) == ["x1a", "x1b", "y1a", "y1b", "y2a", "y2b"]
    d.submit("y1c", "y1", 1, t=1)
    d.submit("x1c", "x1", 1, t=2)
    assert drs(d, "x").ratio == pytest.approx(1000 / 7) and drs(d, "y").ratio == pytest.approx(2000 / 7)
    assert d.run(3) == (["x1c"], [])
    # without fair sharing the older head y1c would have been first
    (tmp_path / "classical").mkdir()
    d = Driver(config(tmp_path / "classical", *docs[:-1]))
    for name, q in (("y1a", "y1"), ("y1b", "y1"), ("y2a", "y2"), ("y2b", "y2"), ("x1a", "x1"), ("x1b", "x1")):
        d.submit(name, q, 1)
    d.run()
    d.submit("y1c", "y1", 1, t=1)
    d.submit("x1c", "x1", 1, t=2)
    assert d.run(3) == (["y1c"], [])
