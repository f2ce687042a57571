"""Fidelity of InterPodAffinity against kube-scheduler 1.32 (interpodaffinity/filtering.go, scoring.go).

Scenarios follow upstream's filtering_test.go / scoring_test.go (nodes labelled region / zone, existing
pods labelled security: S1 / S2); expected values are hand-computed from the formulas: required terms
count matching pods per topology pair, existing pods' required anti-affinity is symmetric, preferred
terms add ±weight per pair, existing pods' required affinity adds hardPodAffinityWeight, and scores are
min-max normalised to 0..100 in float64 then truncated.
"""

from __future__ import annotations

from test_plugins_common import place, pod, run_filter, run_score, table

from batkube_py.scheduler.plugins import InterPodAffinity
from batkube_py.scheduler.plugins.interpodaffinity import REASON_AFFINITY, REASON_ANTI, REASON_EXISTING_ANTI

S1 = {"matchExpressions": [{"key": "security", "operator": "In", "values": ["S1"]}]}


def term(key="region", selector=S1, **extra):
    return {"labelSelector": selector, "topologyKey": key, **extra}


def nodes3():
    return table(
        {"region": "r1", "zone": "z1"}, {"region": "r1", "zone": "z2"}, {"region": "r2", "zone": "z3"}
    )


def test_required_affinity_and_first_pod_exception():
    nodes = nodes3()
    aff = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term()]}}
    # no S1 pod anywhere and the pod is not S1 itself: nowhere
    ok, reasons = run_filter(InterPodAffinity(), pod("p", affinity=aff), nodes)
    assert ok == [False, False, False] and reasons == {REASON_AFFINITY: 3}
    # ...but a pod matching its own terms may start the group anywhere the key exists
    assert run_filter(InterPodAffinity(), pod("q", labels={"security": "S1"}, affinity=aff), nodes)[0] == [
        True,
        True,
        True,
    ]
    place(nodes, 1, "e", labels={"security": "S1"})
    assert run_filter(InterPodAffinity(), pod("r", affinity=aff), nodes)[0] == [True, True, False]
    # once a matching pod exists, the exception no longer applies
    assert run_filter(InterPodAffinity(), pod("s", labels={"security": "S1"}, affinity=aff), nodes)[0] == [
        True,
        True,
        False,
    ]


def test_required_anti_affinity_and_existing_symmetry():
    nodes = nodes3()
    place(nodes, 0, "e", labels={"security": "S1"})
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(key="zone")]}}
    ok, reasons = run_filter(InterPodAffinity(), pod("p", affinity=anti), nodes)
    assert ok == [False, True, True] and reasons == {REASON_ANTI: 1}
    # an existing pod that refuses S2 pods in its region
    s2 = {"matchExpressions": [{"key": "security", "operator": "In", "values": ["S2"]}]}
    place(
        nodes,
        2,
        "guard",
        affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(selector=s2)]}},
    )
    ok, reasons = run_filter(InterPodAffinity(), pod("q", labels={"security": "S2"}), nodes)
    assert ok == [True, True, False] and reasons == {REASON_EXISTING_ANTI: 1}
    assert run_filter(InterPodAffinity(), pod("r", labels={"security": "S3"}), nodes)[0] == [True, True, True]


def test_namespaces_limit_matching():
    nodes = nodes3()
    place(nodes, 0, "e", labels={"security": "S1"})  # in namespace "default"
    anti = {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(namespaces=["other"])]}
    }
    assert run_filter(InterPodAffinity(), pod("p", affinity=anti), nodes)[0] == [True, True, True]
    sel = {"matchLabels": {"kubernetes.io/metadata.name": "default"}}
    anti = {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(namespaceSelector=sel)]}
    }
    assert run_filter(InterPodAffinity(), pod("q", affinity=anti), nodes)[0] == [False, False, True]


def test_preferred_affinity_and_anti_affinity_scores():
    nodes = table({"region": "China"}, {"region": "India"}, {"az": "az1"})
    place(nodes, 0, "e", labels={"security": "S1"})
    pref = {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "podAffinityTerm": term()}]
        }
    }
    # upstream "pods in nodes that match topology key get a high score": China 5, others 0 → 100, 0, 0
    assert run_score(InterPodAffinity(), pod("p", affinity=pref), nodes) == [100, 0, 0]
    anti = {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "podAffinityTerm": term()}]
        }
    }
    # China -5, others 0 → min-max: 0, 100, 100
    assert run_score(InterPodAffinity(), pod("q", affinity=anti), nodes) == [0, 100, 100]
    both = {
        **pref,
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 2, "podAffinityTerm": term(key="az", selector={"matchLabels": {"x": "y"}})}
            ]
        },
    }
    place(nodes, 2, "f", labels={"x": "y"})
    # China +5, az1 -2, India 0 → (s+2)/7: 100, 28, 0
    assert run_score(InterPodAffinity(), pod("r", affinity=both), nodes) == [100, 28, 0]


def test_existing_pods_terms_score_the_incoming_pod():
    nodes = table({"region": "r1"}, {"region": "r1"}, {"region": "r2"})
    s2 = {"matchLabels": {"security": "S2"}}
    req = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(selector=s2)]}}
    place(nodes, 0, "e", labels={"security": "S1"}, affinity=req)
    p = pod("p", labels={"security": "S2"})
    # hardPodAffinityWeight 1: r1 +1 → 100, 100, 0; weight 0 turns it off (every node 0)
    assert run_score(InterPodAffinity(), p, nodes) == [100, 100, 0]
    assert run_score(InterPodAffinity(hard_pod_affinity_weight=0), p, nodes) == [0, 0, 0]
    pref = {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 7, "podAffinityTerm": term(selector=s2)}
            ]
        }
    }
    place(nodes, 2, "f", affinity=pref)
    # r1 +1, r2 -7 → 100, 100, 0
    assert run_score(InterPodAffinity(), p, nodes) == [100, 100, 0]


def test_nothing_to_do_is_skipped():
    nodes = nodes3()
    place(nodes, 0, "e", labels={"security": "S1"})
    assert nodes.affinity_pods == {} and nodes.anti_affinity_pods == {}
    assert run_filter(InterPodAffinity(), pod("p"), nodes) == ([True, True, True], {})
    assert run_score(InterPodAffinity(), pod("p"), nodes) == [0, 0, 0]
