"""Preemption's potential nodes in 1.37.2 (framework/preemption/preemption.go findCandidates,
NodesForStatusCode(Unschedulable)): nodes the failed cycle marked UnschedulableAndUnresolvable are left
out, whichever filter did it, so numCandidates and the random offset's range match upstream's."""

from __future__ import annotations

import numpy as np
import pytest
from test_kube137 import cluster
from test_nominated import run_on
from test_plugins_common import pod

from batkube_py.scheduler.preemption import potential_nodes, preempt

TAINT = {"taints": "dedicated=gpu:NoSchedule"}


def full(c, lo: int = 0):
    for i in range(len(c.nodes)):
        run_on(c, i, f"v{i}", cpu=f"{c.nodes.alloc_cpu[i]}m", priority=lo)


def test_150_nodes_100_of_them_tainted_leave_50_potential_nodes_and_50_candidates():
    """Before: every node whose allocatable holds the request counted (150): numCandidates
    min(150, max(15, 100)) = 100 and the offset drawn over 150; upstream: 50 and 50."""
    c = cluster("1.37", *([{"cpu": "2", **TAINT}] * 100 + [{"cpu": "2"}] * 50), seed=7)
    full(c)
    profile = c.profiles["default-scheduler"]
    hi = pod("hi", cpu="2", priority=10)
    assert potential_nodes(profile, hi, c.nodes).tolist() == list(range(100, 150))
    expected = np.random.default_rng(np.random.SeedSequence([7, 0])).integers(50)
    found = preempt(profile, hi, c.nodes)
    assert found is not None and found.node == 100 + expected  # all tie: the first from the offset
    assert c.nodes.names[found.node] == f"n{100 + expected}"


@pytest.mark.parametrize(
    ("spec", "job", "ruled_out"),
    [
        ({"cordon": True}, {}, True),  # NodeUnschedulable
        ({"tier": "1"}, {"nodeSelector": {"tier": "2"}}, True),  # NodeAffinity
        (TAINT, {}, True),  # TaintToleration
        ({"cpu": "1"}, {}, True),  # NodeResourcesFit: 2 cpu above the whole allocatable
        ({}, {}, False),  # NodeResourcesFit: short now, victims would make room
    ],
)
def test_which_filters_rule_a_node_out(spec, job, ruled_out):
    node = {"cpu": "2", "tier": "2", **{k: v for k, v in spec.items() if k != "cordon"}}
    c = cluster("1.37", node, {"cpu": "2", "tier": "2"})
    full(c)
    if spec.get("cordon"):
        c.set_nodes_schedulable(["n0"], False, 0.0)
    hi = pod("hi", cpu="2", priority=10, **job)
    assert potential_nodes(c.profiles["default-scheduler"], hi, c.nodes).tolist() == (
        [1] if ruled_out else [0, 1]
    )


SPREAD = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
          "labelSelector": {"matchLabels": {"app": "web"}}}  # fmt: skip


def test_spread_rules_out_a_node_without_the_key_but_not_a_skewed_one():
    """Filters run in order and a node's status is its first rejection's: n0 has room (NodeResourcesFit
    passes) but lacks the key: unresolvable; n1 is full (Unschedulable) whatever the spread says."""
    c = cluster("1.37", {"cpu": "2"}, {"cpu": "2", "zone": "a"}, {"cpu": "2", "zone": "b"})
    run_on(c, 1, "v1", cpu="2", priority=0, labels={"app": "web"})
    run_on(c, 2, "v2", cpu="1", priority=0, labels={"app": "web"})
    run_on(c, 2, "w2", cpu="1", priority=0, labels={"app": "web"})
    hi = pod("hi", cpu="2", priority=10, labels={"app": "web"}, topologySpreadConstraints=[SPREAD])
    assert potential_nodes(c.profiles["default-scheduler"], hi, c.nodes).tolist() == [1, 2]


def _affinity(kind: str) -> dict:
    term = {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def test_unmet_pod_affinity_rules_a_node_out_anti_affinity_does_not():
    c = cluster("1.37", {"cpu": "2"}, {"cpu": "2"})
    run_on(c, 0, "db", cpu="1", priority=0, labels={"app": "db"})
    run_on(c, 0, "v0", cpu="1", priority=0)
    profile = c.profiles["default-scheduler"]
    near = pod("near", cpu="2", priority=10, affinity=_affinity("podAffinity"))
    assert potential_nodes(profile, near, c.nodes).tolist() == [0]  # n1 has room but no db pod
    run_on(c, 1, "v1", cpu="2", priority=0)
    run_on(c, 1, "db1", cpu="0", priority=0, labels={"app": "db"})
    away = pod("away", cpu="1", priority=10, affinity=_affinity("podAntiAffinity"))
    c.nodes.release(0, c.pods["v0"])  # n0 has room: only the db pod's anti-affinity keeps "away" out
    assert potential_nodes(profile, away, c.nodes).tolist() == [0, 1]  # anti-affinity: Unschedulable


def test_132_keeps_every_node():
    c = cluster("1.32", {"cpu": "2", **TAINT}, {"cpu": "2"})
    full(c)
    hi = pod("hi", cpu="2", priority=10)
    assert potential_nodes(c.profiles["default-scheduler"], hi, c.nodes).tolist() == [0, 1]
