"""Fidelity of PodTopologySpread (filter skew, minDomains, policies, scoring) against kube-scheduler 1.32.

Layouts follow upstream's podtopologyspread/filtering_test.go and scoring_test.go (nodes node-a/b in
zone1, node-x/y in zone2; pods labelled foo); the expected values are hand-computed from the formulas:
skew = matching pods in the node's domain + self match - global minimum; score = Σ count·log(size+2)
+ (maxSkew-1), normalised as 100·(max+min-s)/max.
"""

from __future__ import annotations

import math

from test_plugins_common import place, pod, run_filter, run_score, table

from batkube_py.scheduler.plugins import PodTopologySpread
from batkube_py.scheduler.plugins.podtopologyspread import REASON, REASON_MISSING_LABEL

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}


def cluster():
    return table(
        {ZONE: "zone1"},
        {ZONE: "zone1"},
        {ZONE: "zone2"},
        {ZONE: "zone2"},
        names=["node-a", "node-b", "node-x", "node-y"],
    )


def spread(key=ZONE, skew=1, when="DoNotSchedule", **extra):
    return {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when, "labelSelector": FOO, **extra}


def test_skew_filter_zone_3_1():
    nodes = cluster()
    for i, n in enumerate((0, 0, 1, 2)):
        place(nodes, n, f"e{i}", labels={"foo": ""})
    p = pod("p", labels={"foo": ""}, topologySpreadConstraints=[spread()])
    # zone1 holds 3, zone2 1 (global min): zone1 3+1-1 = 3 > 1, zone2 1+1-1 = 1
    assert run_filter(PodTopologySpread(), p, nodes) == ([False, False, True, True], {REASON: 2})
    # maxSkew 3 lets zone1 through
    p = pod("q", labels={"foo": ""}, topologySpreadConstraints=[spread(skew=3)])
    assert run_filter(PodTopologySpread(), p, nodes)[0] == [True, True, True, True]
    # a pod that does not match its own selector adds 0: zone1 3-1 = 2 > 1 still, zone2 0
    p = pod("r", labels={"bar": ""}, topologySpreadConstraints=[spread()])
    assert run_filter(PodTopologySpread(), p, nodes)[0] == [False, False, True, True]


def test_hostname_and_zone_together_and_missing_label():
    nodes = table({ZONE: "zone1"}, {ZONE: "zone1"}, {}, names=["node-a", "node-b", "node-c"])
    place(nodes, 0, "e0", labels={"foo": ""})
    p = pod("p", labels={"foo": ""}, topologySpreadConstraints=[spread(), spread(key=HOST)])
    ok, reasons = run_filter(PodTopologySpread(), p, nodes)
    # node-c lacks the zone label; node-a: host skew 1+1-0 = 2 > 1
    assert ok == [False, True, False]
    assert reasons == {REASON: 1, REASON_MISSING_LABEL: 1}


def test_min_domains_makes_global_minimum_zero():
    nodes = cluster()
    place(nodes, 0, "e0", labels={"foo": ""})
    place(nodes, 2, "e1", labels={"foo": ""})
    p = pod("p", labels={"foo": ""}, topologySpreadConstraints=[spread()])
    assert run_filter(PodTopologySpread(), p, nodes)[0] == [True, True, True, True]  # 1+1-1 = 1
    p = pod("q", labels={"foo": ""}, topologySpreadConstraints=[spread(minDomains=3)])
    assert run_filter(PodTopologySpread(), p, nodes)[0] == [
        False,
        False,
        False,
        False,
    ]  # 2 domains < 3: 1+1-0


def test_node_affinity_policy_excludes_nodes_from_counts():
    nodes = table({ZONE: "zone1", "pool": "a"}, {ZONE: "zone2", "pool": "b"}, {ZONE: "zone3", "pool": "a"})
    place(nodes, 0, "e0", labels={"foo": ""})
    sel = {"pool": "a"}
    # Honor (default): zone2 is not a domain, min over zone1 (1) and zone3 (0) is 0 → zone1 1+1-0 = 2 > 1
    p = pod("p", labels={"foo": ""}, nodeSelector=sel, topologySpreadConstraints=[spread()])
    assert run_filter(PodTopologySpread(), p, nodes)[0] == [False, True, True]
    # Ignore: same here, but the counts would include zone2
    p = pod(
        "q",
        labels={"foo": ""},
        nodeSelector=sel,
        topologySpreadConstraints=[spread(nodeAffinityPolicy="Ignore")],
    )
    assert run_filter(PodTopologySpread(), p, nodes)[0] == [False, True, True]


def test_taints_policy_honor():
    nodes = table({ZONE: "zone1"}, {ZONE: "zone2", "taints": "x=y:NoSchedule"})
    place(nodes, 0, "e0", labels={"foo": ""})
    # Ignore (default): zone2 is a domain with 0 → zone1 skew 2 > 1
    p = pod("p", labels={"foo": ""}, topologySpreadConstraints=[spread()])
    assert run_filter(PodTopologySpread(), p, nodes)[0] == [False, True]
    # Honor: the tainted node is not counted, zone1 is the only domain → min 1, skew 1
    p = pod("q", labels={"foo": ""}, topologySpreadConstraints=[spread(nodeTaintsPolicy="Honor")])
    assert run_filter(PodTopologySpread(), p, nodes)[0] == [True, True]


def test_soft_constraint_score_hostname():
    nodes = cluster()
    for n, k in ((0, 3), (1, 2), (2, 1)):
        for j in range(k):
            place(nodes, n, f"e{n}{j}", labels={"foo": ""})
    p = pod("p", labels={"foo": ""}, topologySpreadConstraints=[spread(key=HOST, when="ScheduleAnyway")])
    w = math.log(4 + 2)
    raw = [round(c * w) for c in (3, 2, 1, 0)]  # 5, 4, 2, 0
    assert raw == [5, 4, 2, 0]
    assert run_score(PodTopologySpread(), p, nodes) == [100 * (5 + 0 - s) // 5 for s in raw]  # 0, 20, 60, 100


def test_soft_constraint_score_zone_counts_all_nodes_and_ignores_unlabelled():
    nodes = table({ZONE: "zone1"}, {ZONE: "zone1"}, {ZONE: "zone2"}, {}, names=["a", "b", "x", "c"])
    for i in range(3):
        place(nodes, 0, f"e{i}", labels={"foo": ""})
    place(nodes, 2, "f", labels={"foo": ""})
    p = pod("p", labels={"foo": ""}, topologySpreadConstraints=[spread(when="ScheduleAnyway", skew=2)])
    # candidates b, x, c: c lacks the key (ignored → 0); 2 zones → weight log 4; zone1 3·1.386+1 = 5.16 → 5,
    # zone2 1.386+1 = 2.39 → 2; normalised: b 100·(5+2-5)/5 = 40, x 100·(5+2-2)/5 = 100
    assert run_score(PodTopologySpread(), p, nodes, idx=[1, 2, 3]) == [40, 100, 0]


def test_system_defaults_need_an_owner_selector():
    nodes = cluster()
    place(nodes, 0, "e0", labels={"app": "web"})
    p = pod("p", labels={"app": "web"})
    plugin = PodTopologySpread()
    assert plugin.constraints(p, "ScheduleAnyway") == []  # ownerless pods: upstream drops the defaults
    assert run_score(plugin, p, nodes) == [0, 0, 0, 0]
    labels = PodTopologySpread(default_selector="PodLabels")
    cons = labels.constraints(p, "ScheduleAnyway")
    assert [(c.key, c.max_skew) for c in cons] == [(HOST, 3), (ZONE, 5)]
    # hostname (4 candidates): node-a 1·log 6+2 = 3.79, others 2; zone (2 domains): zone1 1·log 4+4 = 5.39,
    # zone2 4 → node-a 4+5.39 = 9.39 → 9, node-b 2+5.39 = 7.39 → 7, x/y 2+4 = 6 → normalised 100·(15-s)/9
    assert run_score(labels, p, nodes) == [100 * (9 + 6 - s) // 9 for s in (9, 7, 6, 6)]
