"""The twin's node order is kube-scheduler 1.37.2's snapshot list: its node tree (backend/cache/
node_tree.go) lists nodes zone by zone in round robin, and filtering, the heap-root tie-break and
preemption's offset all walk that list."""

from __future__ import annotations

from test_kube137 import cluster
from test_nominated import placed, submit
from test_plugins_common import table

from batkube_py.scheduler.nodetree import interleave, zone_key

ZONE = "topology.kubernetes.io/zone"


def test_zone_key_is_get_zone_key():
    """component-helpers GetZoneKey: the beta labels win, region and zone joined by ':\\x00:'."""
    assert zone_key({}) == zone_key(None) == zone_key({"zone": "a"}) == ""
    assert zone_key({ZONE: "a"}) == ":\x00:a"
    assert zone_key({ZONE: "a", "failure-domain.beta.kubernetes.io/zone": "b"}) == ":\x00:b"
    assert zone_key({"topology.kubernetes.io/region": "r", ZONE: "a"}) == "r:\x00:a"
    assert zone_key({"topology.kubernetes.io/region": "r"}) == "r:\x00:"


def test_interleave_is_round_robin_over_zones_in_order_of_first_node():
    keys = ["a", "a", "a", "b", "c", "c"]
    assert [f"{keys[i]}{sum(k == keys[i] for k in keys[:i])}" for i in interleave(keys)] == [
        "a0", "b0", "c0", "a1", "c1", "a2"
    ]  # fmt: skip
    assert interleave(["b", "a", "b", "a"]) == [0, 1, 2, 3]
    assert interleave(["", "", ""]) == [0, 1, 2]  # no zones: the order nodes were added in
    assert interleave([]) == []


def test_the_twin_lays_zoned_nodes_out_in_node_tree_order():
    specs = [{ZONE: "a"}, {ZONE: "a"}, {ZONE: "b"}, {}, {ZONE: "b"}]
    t = cluster("1.37", *specs).nodes
    assert t.names == ["n0", "n2", "n3", "n1", "n4"]  # zones a, b, "" in turn
    assert [t.index[n] for n in ("n0", "n1", "n2", "n3", "n4")] == [0, 3, 1, 2, 4]
    assert cluster("1.37", *[{"zone": z} for z in "aabb"]).nodes.names == ["n0", "n1", "n2", "n3"]
    assert table(*specs).names == ["n0", "n1", "n2", "n3", "n4"]  # a bare table keeps the given order


def test_score_ties_break_over_the_interleaved_order():
    """Two zones of two nodes added a0 a1 b0 b1: the tree lists a0 b0 a1 b1. The first pod takes a0;
    the second ties on the three others, and the heap root over the feasible list in tree order is b0
    (n2), where the platform's order would have given a1 (n1)."""
    c = cluster("1.37", *[{"cpu": "4", "memory": "8Gi", ZONE: z} for z in "aabb"], parallelism=1)
    submit(c, "p0", cpu="1", memory="1Gi")
    assert placed(c) == {"p0": "n0"}
    submit(c, "p1", cpu="1", memory="1Gi")
    assert placed(c) == {"p1": "n2"}
