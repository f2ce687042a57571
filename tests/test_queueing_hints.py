"""QueueingHints (on by default in kube-scheduler 1.32): a parked pod moves only when a plugin that
rejected it hints that the event can help (the plugins' isSchedulableAfter* functions)."""

from __future__ import annotations

from test_nominated import cluster, placed, run_on, submit

from batkube_py.cluster.embedded import EmbeddedCluster


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


def test_an_existing_pods_anti_affinity_is_not_hinted_and_waits_for_the_flush():
    """Upstream 1.32's hint looks only at the pod's own anti-affinity terms."""
    c = cluster({"cpu": "4"})
    run_on(c, 0, "x", cpu="1", labels={"app": "x"}, affinity=anti("q"))
    q = submit(c, "q", cpu="1", labels={"app": "q"})
    assert placed(c) == {} and q.rejected_by == {"InterPodAffinity"}
    c.delete_pod("x", 20.0)
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
