"""QueueingHints (on by default in kube-scheduler 1.32): a parked pod moves only when a plugin that
rejected it hints that the event can help (the plugins' isSchedulableAfter* functions)."""

from __future__ import annotations

import pytest
from test_kube137 import cluster as _cluster
from test_nominated import cluster, nominated, placed, run_on, submit

from batkube_py.cluster.embedded import EmbeddedCluster


def versioned(version: str, *specs: dict) -> EmbeddedCluster:
    """Serial filtering: the hints are the subject, not the tie among nodes a drawn filter order breaks."""
    return _cluster(version, *specs, parallelism=1)


def anti(app: str) -> dict:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def parked_since(c: EmbeddedCluster, name: str) -> float | None:
    """The queue timestamp of a parked pod (a retry, even one failed without a cycle, refreshes it)."""
    q = c.queue._parked
    return float(q.col["ts"][q.slot[name]]) if name in q.slot else None


def test_a_deleted_pod_helps_anti_affinity_only_if_it_matches_all_the_terms():
    c = cluster({"cpu": "4"})
    run_on(c, 0, "x", cpu="1", labels={"app": "x"})
    run_on(c, 0, "y", cpu="1", labels={"app": "y"})
    q = submit(c, "q", cpu="1", affinity=anti("x"))
    assert placed(c) == {} and q.rejected_by == {"InterPodAffinity"}
    c.delete_pod("y", 20.0)
    assert placed(c, 20.0) == {} and parked_since(c, "q") == 0.0  # not even retried
    c.delete_pod("x", 30.0)
    assert placed(c, 30.0) == {"q": "n0"}


def anti2(a: str, b: str) -> dict:
    """Two required anti-affinity terms: away from app=a on the node, and from app=b in the zone."""
    terms = [{"labelSelector": {"matchLabels": {"app": a}}, "topologyKey": "kubernetes.io/hostname"},
             {"labelSelector": {"matchLabels": {"app": b}}, "topologyKey": "zone"}]  # fmt: skip
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms}}


@pytest.mark.parametrize("version", ["1.32", "1.37"])
def test_a_deleted_pod_matching_one_of_several_anti_affinity_terms(version):
    """1.37.2 (isSchedulableAfterAssignedPodChange) requeues when the deleted pod matches ANY of the
    pod's required anti-affinity terms; 1.32 only when it matches all of them."""
    c = versioned(version, {"cpu": "4", "zone": "a"}, {"cpu": "4", "zone": "a"})
    run_on(c, 0, "x", cpu="1", labels={"app": "x"})
    run_on(c, 1, "y", cpu="1", labels={"app": "y"})
    q = submit(c, "q", cpu="1", affinity=anti2("x", "y"))
    assert placed(c) == {} and q.rejected_by == {"InterPodAffinity"}
    c.delete_pod("x", 20.0)  # matches the hostname term only; y still keeps q out of the zone
    assert placed(c, 20.0) == {}
    assert parked_since(c, "q") == (0.0 if version == "1.32" else 20.0)  # 1.37: retried, failed again
    c.delete_pod("y", 30.0)  # matches the zone term only
    if version == "1.37":
        assert placed(c, 30.0) == {"q": "n0"}
        return
    assert placed(c, 30.0) == {} and parked_since(c, "q") == 0.0
    assert placed(c, 330.0) != {}  # 1.32: only the leftover flush retries it


@pytest.mark.parametrize("version", ["1.32", "1.37"])
def test_an_existing_pods_anti_affinity_is_hinted_in_137_only(version):
    """1.32's hint looks only at the pod's own anti-affinity terms, so the pod waits for the leftover
    flush; 1.37.2's also asks whether the pod matches the deleted pod's terms."""
    c = versioned(version, {"cpu": "4"})
    run_on(c, 0, "x", cpu="1", labels={"app": "x"}, affinity=anti("q"))
    q = submit(c, "q", cpu="1", labels={"app": "q"})
    assert placed(c) == {} and q.rejected_by == {"InterPodAffinity"}
    c.delete_pod("x", 20.0)
    if version == "1.37":
        assert placed(c, 20.0) == {"q": "n0"}
        return
    assert placed(c, 20.0) == {} and parked_since(c, "q") == 0.0
    assert placed(c, 330.0) == {"q": "n0"}  # the 30-s flush of pods parked for more than 5 min


def test_an_added_pod_helps_affinity_only_if_it_matches_all_the_terms():
    term = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
    aff = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    c = cluster({"cpu": "4"})
    q = submit(c, "q", cpu="1", affinity=aff)
    assert placed(c) == {} and q.rejected_by == {"InterPodAffinity"}
    submit(c, "z", 20.0, cpu="1", labels={"app": "z"})
    assert placed(c, 20.0) == {"z": "n0"} and parked_since(c, "q") == 0.0
    submit(c, "x", 30.0, cpu="1", labels={"app": "x"})
    assert placed(c, 30.0) == {"x": "n0", "q": "n0"}


def test_cordoning_wakes_nobody_and_uncordoning_wakes_pods_node_unschedulable_rejected():
    c = cluster({"cpu": "1"}, {"cpu": "1"}, {"cpu": "1"})
    run_on(c, 1, "r", cpu="1")
    run_on(c, 2, "s", cpu="1")
    c.set_nodes_schedulable(["n0"], False, 0.0)
    p = submit(c, "p", cpu="1")
    assert placed(c) == {} and p.rejected_by == {"NodeUnschedulable", "NodeResourcesFit"}
    # NodeResourcesFit registers no taint update and NodeUnschedulable's hint wants a node made
    # schedulable: cordoning n1 moves nothing (with hints off, p would be retried and fail again)
    c.set_nodes_schedulable(["n1"], False, 20.0)
    assert placed(c, 20.0) == {} and parked_since(c, "p") == 0.0
    c.set_nodes_schedulable(["n0"], True, 30.0)
    assert placed(c, 30.0) == {"p": "n0"}


def test_a_pod_rejected_for_resources_is_woken_by_any_assigned_pod_deleted():
    c = cluster({"cpu": "1"}, {"cpu": "1"})
    run_on(c, 0, "r", cpu="1", labels={"app": "r"})
    run_on(c, 1, "s", cpu="1")
    p = submit(c, "p", cpu="1")
    assert placed(c) == {} and p.rejected_by == {"NodeResourcesFit"}
    c.delete_pod("s", 20.0)
    assert placed(c, 20.0) == {"p": "n1"}


@pytest.mark.parametrize("priority", [1, 9])
def test_a_deleted_nominee_is_asked_about_by_the_hints(priority):
    """1.37.2: deleting an unbound pod with a nominatedNodeName moves lower-or-equal priority pods with
    AssignedPodDelete, and the hints read the nominee as assigned (InterPodAffinity skips only a pod
    with neither nodeName nor nominatedNodeName): a pod its labels kept out by anti-affinity is
    retried at once; one of higher priority never counted the nominee and is not moved."""
    c = versioned("1.37", {"cpu": "4", "zone": "a"})
    nominated(c, "pre", 0, cpu="1", priority=5, labels={"app": "x"})
    run_on(c, 0, "blocker", cpu="1", labels={"app": "b"})
    q = submit(c, "q", cpu="1", priority=priority, affinity=anti2("x", "b"))
    assert placed(c) == {} and q.rejected_by == {"InterPodAffinity"}
    c.delete_pod("pre", 20.0)  # matches one of q's terms: blocker still keeps q out
    assert placed(c, 20.0) == {}
    assert parked_since(c, "q") == (20.0 if priority <= 5 else 0.0)
