"""Nominated pods and DefaultPreemption's bookkeeping, against kube-scheduler 1.32.

Upstream: framework/runtime/framework.go RunFilterPluginsWithNominatedPods / addGENominatedPods,
schedule_one.go evaluateNominatedNode, framework/preemption/preemption.go (Preempt, prepareCandidate,
SelectVictimsOnNode through the filters with nominated pods), defaultpreemption PodEligibleToPreemptOthers.
"""

from __future__ import annotations

import random

from test_plugins_common import pod, table

from batkube_py.cluster.embedded import EmbeddedCluster
from batkube_py.scheduler.podinfo import PodInfo

ANTI_X = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
        ]
    }
}


def cluster(*specs: dict) -> EmbeddedCluster:
    return EmbeddedCluster(table(*specs).nodes, seed=0)


def submit(c: EmbeddedCluster, name: str, now: float = 0.0, **job) -> PodInfo:
    c.add_pod(pod(name, **job).pod, name, now)
    return c.pods[name]


def run_on(c: EmbeddedCluster, node: int, name: str, **job) -> PodInfo:
    """A pod already running on `node` (placed directly: the test picks the node)."""
    info = pod(name, **job)
    c.pods[name] = info
    info.node = node
    c.nodes.assume(node, info)
    c._running += 1
    return info


def nominated(c: EmbeddedCluster, name: str, node: int, **job) -> PodInfo:
    """A pending preemptor nominated to `node`, parked in the queue as after its PostFilter."""
    info = pod(name, **job)
    c.pods[name] = info
    c.nodes.nominate(info, node)
    return info


def placed(c: EmbeddedCluster, now: float = 0.0) -> dict[str, str]:
    return {b.pod: b.node for b in c.schedule(now)}


# ---- filtering with nominated pods --------------------------------------------------------------------


def test_nominated_pods_of_equal_or_higher_priority_take_their_room_in_filtering():
    c = cluster({"cpu": "2"}, {"cpu": "1"})
    nominated(c, "pre", 0, cpu="2", priority=5)
    low = submit(c, "low", cpu="1", priority=1)  # n0's room is promised to "pre": only n1 is left
    assert placed(c) == {"low": "n1"}
    submit(c, "eq", cpu="1", priority=5)  # same priority as "pre": n0 still promised, n1 full
    assert placed(c) == {}
    assert c.pods["eq"].rejected_by == {"NodeResourcesFit"} and low.node == 1
    submit(c, "top", cpu="2", priority=9)  # "pre" has a lower priority: not counted for "top"
    assert placed(c) == {"top": "n0"}


def test_nominated_pods_count_for_every_filter_not_only_resources():
    """addGENominatedPods puts the pod itself on the node copy: anti-affinity sees its labels."""
    c = cluster({"cpu": "4"}, {"cpu": "1"})
    nominated(c, "pre", 0, cpu="1", priority=5, labels={"app": "x"})
    submit(c, "q", cpu="1", priority=1, affinity=ANTI_X)
    assert placed(c) == {"q": "n1"}


def test_a_node_must_also_pass_without_its_nominated_pods():
    """The second pass: required affinity met only by a nominated pod does not hold."""
    aff = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    c = cluster({"cpu": "4"}, {"cpu": "4"})
    nominated(c, "pre", 0, cpu="1", priority=5, labels={"app": "x"})
    q = submit(c, "q", cpu="1", priority=1, affinity=aff)
    assert placed(c) == {}
    assert "InterPodAffinity" in q.rejected_by


def test_nominated_pods_count_in_filtering_not_in_scoring():
    # LeastAllocated without "pre": n0 (8 cpu) 87, n1 (4 cpu) 75 → n0. Counting "pre"'s 4 cpu there
    # would make it 37 and send "q" to n1.
    c = cluster({"cpu": "8", "memory": "8Gi"}, {"cpu": "4", "memory": "8Gi"})
    nominated(c, "pre", 0, cpu="4", priority=5)
    submit(c, "q", cpu="1", priority=1)
    assert placed(c) == {"q": "n0"}


def test_a_preemptor_takes_its_nominated_node_when_it_fits_without_scoring():
    c = cluster({"cpu": "8", "memory": "8Gi"}, {"cpu": "2", "memory": "8Gi"})
    p = submit(c, "pre", cpu="1", priority=5)
    c.nodes.nominate(p, 1)  # n0 would score higher
    assert placed(c) == {"pre": "n1"}
    assert c.nodes.nominated == {} and p.nominated_node is None


# ---- preemption ---------------------------------------------------------------------------------------


def test_victims_already_terminating_remain_candidates_and_are_not_evicted_twice():
    c = cluster({"cpu": "1"}, {"cpu": "1"})
    run_on(c, 0, "l0", cpu="1", priority=1).terminating = True  # an earlier victim, not yet gone
    run_on(c, 1, "l1", cpu="1", priority=3)
    hi = submit(c, "hi", cpu="1", priority=10)
    assert placed(c) == {}
    # n0's victim (priority 1) beats n1's (priority 3); it is already leaving: nothing new to evict
    assert hi.nominated_node == 0 and c.take_evictions() == []


def test_the_dry_run_counts_pods_nominated_with_equal_or_higher_priority():
    c = cluster({"cpu": "1"}, {"cpu": "1"})
    run_on(c, 0, "l0", cpu="1", priority=1).terminating = True
    run_on(c, 1, "l1", cpu="1", priority=3)
    nominated(c, "first", 0, cpu="1", priority=10)  # n0 is promised to a pod of the same priority
    second = submit(c, "second", cpu="1", priority=10)
    assert placed(c) == {}
    assert second.nominated_node == 1
    assert [e.pod for e in c.take_evictions()] == ["l1"]


def test_a_new_preemption_clears_lower_priority_nominations_on_its_node():
    c = cluster({"cpu": "1"})
    run_on(c, 0, "l0", cpu="1", priority=1).terminating = True
    mid = nominated(c, "mid", 0, cpu="1", priority=5)
    top = submit(c, "top", cpu="1", priority=10)
    assert placed(c) == {}
    assert top.nominated_node == 0 and mid.nominated_node is None
    assert c.nodes.nominated == {0: {"top": top}}


def test_a_preemptor_whose_preemption_cannot_help_drops_its_nomination():
    c = cluster({"cpu": "1"})
    run_on(c, 0, "h", cpu="1", priority=10)  # nothing below the preemptor's priority to evict
    p = submit(c, "pre", cpu="1", priority=5)
    c.nodes.nominate(p, 0)
    assert placed(c) == {}
    assert p.nominated_node is None and c.nodes.nominated == {}


def test_a_preemptor_waiting_for_its_victims_keeps_its_nomination():
    c = cluster({"cpu": "1"}, {"cpu": "1"})
    run_on(c, 0, "l0", cpu="1", priority=1)
    run_on(c, 1, "l1", cpu="1", priority=1)
    p = submit(c, "pre", cpu="1", priority=5)
    assert placed(c) == {} and p.nominated_node is not None
    first = p.nominated_node
    assert len(c.take_evictions()) == 1
    c.queue.remove("pre")
    c.queue.add(p)
    assert placed(c, 1.0) == {}
    assert p.nominated_node == first and c.take_evictions() == []  # PodEligibleToPreemptOthers: no


def test_dry_runs_leave_affinity_bookkeeping_intact():
    c = cluster({"cpu": "1"}, {"cpu": "1"})
    run_on(c, 0, "x", cpu="1", priority=1, labels={"app": "x"}, affinity=ANTI_X)
    run_on(c, 1, "y", cpu="1", priority=9)
    submit(c, "hi", cpu="1", priority=5)
    placed(c)  # preemption's dry run takes "x" off n0 and puts it back
    assert c.nodes.anti_affinity_pods == {"x": 0} and c.nodes.affinity_pods == {"x": 0}


def test_nominated_for_follows_every_nomination_change():
    """The per-priority answer is kept between nominations: it must still be addGENominatedPods's."""
    rng = random.Random(3)
    nodes = table(*({"cpu": "4"} for _ in range(4)))
    pods = [pod(f"p{k}", priority=rng.randint(0, 3)) for k in range(8)]
    seen_self = 0
    for _ in range(200):
        nodes.nominate(rng.choice(pods), rng.choice([None, 0, 1, 2, 3]))
        for p in rng.sample(pods, 3):
            want = {}
            for i, on in nodes.nominated.items():
                if keep := [q for q in on.values() if q is not p and q.priority >= p.priority]:
                    want[i] = keep
            assert nodes.nominated_for(p) == want
            seen_self += p.nominated_node is not None
    assert seen_self > 0
