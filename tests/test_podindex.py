"""The pod index (scheduler/podindex.py) against brute force, and the plugins that read it against the
walk over every assigned pod they did before it.

Seeded random clusters go through random sequences of assume, release, nominated pods added and
removed, node label changes and preemption dry runs; after each step the counts must equal a fresh
walk, and InterPodAffinity's and PodTopologySpread's Filter and Score must equal the reference.
"""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from test_plugins_common import pod, table

from batkube_py.scheduler.config import build_profiles, default_config
from batkube_py.scheduler.framework import SKIP, CycleState, Plugin, Profile
from batkube_py.scheduler.plugins import InterPodAffinity, PodTopologySpread, podtopologyspread
from batkube_py.scheduler.plugins.interpodaffinity import (
    REASON_AFFINITY,
    REASON_ANTI,
    REASON_EXISTING_ANTI,
    _MatchingAll,
    _required_anti,
    _scoring,
    terms_of,
)
from batkube_py.scheduler.plugins.podtopologyspread import _Selected
from batkube_py.scheduler.podindex import PodIndex
from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.preemption import preempt
from batkube_py.scheduler.snapshot import NodeTable

ZONE, HOST, RACK = "topology.kubernetes.io/zone", "kubernetes.io/hostname", "rack"

# ---- random clusters and pods ---------------------------------------------------------------------------


def node_labels(rng: random.Random) -> dict[str, str]:
    labels = {ZONE: f"z{rng.randrange(3)}"}
    if rng.random() < 0.7:
        labels[RACK] = f"r{rng.randrange(4)}"
    return labels


def random_nodes(rng: random.Random, n: int) -> NodeTable:
    nodes = table(*({"cpu": "64", "pods": "50", **node_labels(rng)} for _ in range(n)))
    nodes.pod_index = PodIndex(nodes.pods_on, capacity=4)  # small: evictions happen
    return nodes


def selector(rng: random.Random) -> dict:
    if rng.random() < 0.5:
        return {"matchLabels": {"color": rng.choice("abc")}}
    op = rng.choice(["In", "NotIn", "Exists", "DoesNotExist"])
    expr = {"key": rng.choice(["color", "app"]), "operator": op}
    if op in ("In", "NotIn"):
        expr["values"] = rng.sample(["a", "b", "c", "x", "y"], 2)
    return {"matchExpressions": [expr]}


def term(rng: random.Random) -> dict:
    t = {"labelSelector": selector(rng), "topologyKey": rng.choice([ZONE, HOST, RACK])}
    r = rng.random()
    if r < 0.15:
        t["namespaces"] = ["other"]
    elif r < 0.25:
        t["namespaceSelector"] = {
            "matchLabels": {"kubernetes.io/metadata.name": rng.choice(["default", "other"])}
        }
    return t


def affinity(rng: random.Random) -> dict | None:
    out = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        part = {}
        if rng.random() < 0.35:
            part["requiredDuringSchedulingIgnoredDuringExecution"] = [
                term(rng) for _ in range(rng.randint(1, 2))
            ]
        if rng.random() < 0.35:
            part["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randint(1, 9), "podAffinityTerm": term(rng)} for _ in range(rng.randint(1, 2))
            ]
        if part:
            out[kind] = part
    return out or None


def spread(rng: random.Random) -> list[dict] | None:
    if rng.random() < 0.5:
        return None
    out = []
    for _ in range(rng.randint(1, 2)):
        c = {
            "maxSkew": rng.randint(1, 3),
            "topologyKey": rng.choice([ZONE, HOST, RACK]),
            "whenUnsatisfiable": rng.choice(["DoNotSchedule", "ScheduleAnyway"]),
            "labelSelector": selector(rng),
        }
        if rng.random() < 0.3:
            c["matchLabelKeys"] = ["app"]
        if rng.random() < 0.2:
            c["minDomains"] = rng.randint(1, 5)
        out.append(c)
    return out


def random_pod(rng: random.Random, name: str, priority: int = 0) -> PodInfo:
    labels = {"color": rng.choice("abc")}
    if rng.random() < 0.5:
        labels["app"] = rng.choice("xy")
    job = {"cpu": "100m", "labels": labels, "priority": priority}
    if (a := affinity(rng)) is not None:
        job["affinity"] = a
    if (s := spread(rng)) is not None:
        job["topologySpreadConstraints"] = s
    info = pod(name, **job)
    if rng.random() < 0.3:
        info.namespace = "other"
    return info


# ---- brute force ----------------------------------------------------------------------------------------


def brute_count(nodes: NodeTable, pred) -> list[int]:
    return [sum(1 for p in on.values() if pred(p)) for on in nodes.pods_on]


def brute_carried(nodes: NodeTable, of) -> dict:
    out: dict = {}
    for i, on in enumerate(nodes.pods_on):
        for t, k in Counter(t for p in on.values() for t in of(p)).items():
            out.setdefault(t, [0] * len(nodes))[i] += k
    return out


def predicates(p: PodInfo) -> list:
    """What the plugins would ask the index for, scheduling p."""
    terms = terms_of(p)
    out = [_MatchingAll((t,)) for t in (*terms.req_anti, *terms.pref_aff, *terms.pref_anti)]
    if terms.req_aff:
        out.append(_MatchingAll(terms.req_aff))
    sel = podtopologyspread.label_selector({"matchLabels": {"color": p.labels["color"]}})
    return [*out, _Selected(p.namespace, sel), _Selected("other", sel)]


def assert_index_exact(nodes: NodeTable, preds: list) -> None:
    for pred in preds:
        assert nodes.pod_index.count(pred).tolist() == brute_count(nodes, pred), pred
    for of in (_required_anti, _scoring):
        got = {t: a.tolist() for t, a in nodes.pod_index.carried(of).items()}
        assert got == brute_carried(nodes, of)


# ---- the plugins as they were: every assigned pod walked each cycle (reference) --------------------------


def ref_interpod_filter(pod: PodInfo, nodes: NodeTable, idx: np.ndarray):
    """(None: skipped | feasible mask over idx, reasons)."""
    terms = terms_of(pod)
    existing: Counter = Counter()
    for name, i in nodes.anti_affinity_pods.items():
        labels = nodes.labels[i]
        for t in terms_of(nodes.pods_on[i][name]).req_anti:
            if t.key in labels and t.matches(pod):
                existing[(t.key, labels[t.key])] += 1
    if not existing and not terms.req_aff and not terms.req_anti:
        return None, {}
    aff: Counter = Counter()
    anti: Counter = Counter()
    for i, on in enumerate(nodes.pods_on):
        labels = nodes.labels[i]
        for p in on.values():
            if terms.req_aff and all(t.matches(p) for t in terms.req_aff):
                for t in terms.req_aff:
                    if t.key in labels:
                        aff[(t.key, labels[t.key])] += 1
            for t in terms.req_anti:
                if t.key in labels and t.matches(p):
                    anti[(t.key, labels[t.key])] += 1

    def pair(i: int, key: str, counts: Counter) -> int:
        return counts[(key, nodes.labels[i][key])] if key in nodes.labels[i] else 0

    first = bool(terms.req_aff) and not aff and all(t.matches(pod) for t in terms.req_aff)
    ok, reasons = [], Counter()
    for i in idx.tolist():
        if not all(t.key in nodes.labels[i] and (first or pair(i, t.key, aff) > 0) for t in terms.req_aff):
            reasons[REASON_AFFINITY] += 1
        elif any(pair(i, t.key, anti) > 0 for t in terms.req_anti):
            reasons[REASON_ANTI] += 1
        elif any(pair(i, key, existing) > 0 for key, _ in existing):
            reasons[REASON_EXISTING_ANTI] += 1
        else:
            ok.append(True)
            continue
        ok.append(False)
    return np.array(ok, dtype=bool), dict(reasons)


def ref_interpod_score(plugin: InterPodAffinity, pod: PodInfo, nodes: NodeTable, idx: np.ndarray):
    """Raw scores over idx, or None when PreScore skips."""
    terms = terms_of(pod)
    has_constraints = bool(terms.pref_aff or terms.pref_anti)
    nothing_to_match = plugin.ignore_existing_preferred or not nodes.affinity_pods
    if idx.size == 0 or (not has_constraints and nothing_to_match):
        return None
    topo: Counter = Counter()

    def add(ts, other: PodInfo, labels: dict, weight) -> None:
        for t in ts:
            if t.key in labels and t.matches(other):
                topo[(t.key, labels[t.key])] += weight(t)

    for i, on in enumerate(nodes.pods_on):
        labels = nodes.labels[i]
        for p in on.values():
            if not has_constraints and not p.has_pod_affinity:
                continue
            add(terms.pref_aff, p, labels, lambda t: t.weight)
            add(terms.pref_anti, p, labels, lambda t: -t.weight)
            theirs = terms_of(p)
            if plugin.hard_weight > 0:
                add(theirs.req_aff, pod, labels, lambda t: plugin.hard_weight)
            add(theirs.pref_aff, pod, labels, lambda t: t.weight)
            add(theirs.pref_anti, pod, labels, lambda t: -t.weight)
    if not topo:
        return None
    keys = {k for k, _ in topo}
    return [sum(topo[(k, nodes.labels[i][k])] for k in keys if k in nodes.labels[i]) for i in idx.tolist()]


def interpod_outputs(plugin: InterPodAffinity, p: PodInfo, nodes: NodeTable, idx: np.ndarray):
    state = CycleState()
    skipped = plugin.pre_filter(state, p, nodes) == SKIP
    res = None if skipped else plugin.filter(state, p, nodes, idx)
    filt = (None, {}) if skipped else (res.feasible, res.reasons)
    if plugin.pre_score(state, p, nodes, idx) == SKIP:
        return filt, None
    return filt, plugin.score(state, p, nodes, idx).tolist()


def spread_outputs(plugin: PodTopologySpread, p: PodInfo, nodes: NodeTable, idx: np.ndarray):
    state = CycleState()
    out = []
    if plugin.pre_filter(state, p, nodes) != SKIP:
        res = plugin.filter(state, p, nodes, idx)
        out += [res.feasible.tolist(), res.reasons]
    if plugin.pre_score(state, p, nodes, idx) != SKIP:
        raw = plugin.score(state, p, nodes, idx)
        out += [raw.tolist(), plugin.normalize(state, raw).tolist()]
    return out


def brute_match_counts(nodes: NodeTable, selector, namespace: str) -> np.ndarray:
    if selector.empty or selector.nothing:
        return np.zeros(len(nodes), dtype=np.int64)
    return np.array(brute_count(nodes, _Selected(namespace, selector)), dtype=np.int64)


SPREADS = [
    PodTopologySpread(),
    PodTopologySpread(
        [{"maxSkew": 2, "topologyKey": RACK, "whenUnsatisfiable": "DoNotSchedule"}],
        system_defaulted=False,
        default_selector="PodLabels",
    ),
]
INTERPODS = [InterPodAffinity(), InterPodAffinity(3, True), InterPodAffinity(0)]


def assert_plugins_exact(rng: random.Random, nodes: NodeTable, monkeypatch: pytest.MonkeyPatch) -> int:
    """Every plugin variant on a random incoming pod equals its reference; how many outputs were not
    trivial (a filter that rejected something or a score that was computed)."""
    p = random_pod(rng, f"in{rng.random()}")
    subset = np.array(sorted(rng.sample(range(len(nodes)), rng.randint(1, len(nodes)))), dtype=np.int64)
    busy = 0
    for idx in (nodes.all, subset):
        for plugin in INTERPODS:
            (feasible, reasons), raw = interpod_outputs(plugin, p, nodes, idx)
            ref_feasible, ref_reasons = ref_interpod_filter(p, nodes, idx)
            assert (feasible is None) == (ref_feasible is None)
            if feasible is not None:
                assert feasible.tolist() == ref_feasible.tolist() and reasons == ref_reasons
            assert raw == ref_interpod_score(plugin, p, nodes, idx)
            busy += bool(reasons) + (raw is not None and any(raw))
        for plugin in SPREADS:
            got = spread_outputs(plugin, p, nodes, idx)
            with monkeypatch.context() as m:
                m.setattr(podtopologyspread, "match_counts", brute_match_counts)
                assert got == spread_outputs(plugin, p, nodes, idx)
    return busy


# ---- tests -------------------------------------------------------------------------------------------------


class IndexChecker(Plugin):
    """A PreFilter that checks the index against brute force: preemption's dry runs call it with
    victims taken off and put back."""

    name = "IndexChecker"

    def __init__(self, preds: list):
        self.preds, self.calls = preds, 0

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable) -> str | None:
        assert_index_exact(nodes, self.preds)
        self.calls += 1
        return None


def checked_profile(seed: int, checker: IndexChecker) -> Profile:
    base = build_profiles(default_config(), seed)[0]
    return Profile(
        base.scheduler_name,
        base.filters,
        base.scorers,
        np.random.default_rng(seed),
        pre_filters=[checker, *base.pre_filters],
    )


@pytest.mark.parametrize("seed", range(8))
def test_index_and_plugins_match_brute_force_through_random_changes(seed, monkeypatch):
    rng = random.Random(seed)
    nodes = random_nodes(rng, 10)
    placed: list[PodInfo] = []
    preds: list = []
    checker = IndexChecker(preds)
    profile = checked_profile(seed, checker)
    seen = Counter()
    for step in range(120):
        op = rng.random()
        if op < 0.45 or len(placed) < 3:
            p = random_pod(rng, f"p{step}", priority=rng.randint(0, 2))
            p.node = rng.randrange(len(nodes))
            nodes.assume(p.node, p)
            placed.append(p)
            if rng.random() < 0.3:
                preds.extend(predicates(p))
            seen["assume"] += 1
        elif op < 0.6:
            p = placed.pop(rng.randrange(len(placed)))
            nodes.release(p.node, p)
            seen["release"] += 1
        elif op < 0.7:
            i = rng.randrange(len(nodes))
            extra = [random_pod(rng, f"n{step}-{k}") for k in range(rng.randint(1, 3))]
            nodes.add_nominated(i, extra)
            assert_index_exact(nodes, preds + predicates(extra[0]))
            seen["busy"] += assert_plugins_exact(rng, nodes, monkeypatch)
            nodes.remove_nominated(i, extra)
            seen["nominated"] += 1
        elif op < 0.8:
            i = rng.randrange(len(nodes))
            nodes.set_labels(i, {**node_labels(rng), HOST: nodes.labels[i][HOST]})
            seen["labels"] += 1
        else:
            before = [dict(on) for on in nodes.pods_on]
            calls = checker.calls
            preempt(profile, random_pod(rng, f"h{step}", priority=5), nodes)
            assert nodes.pods_on == before
            seen["dry runs"] += checker.calls > calls
        chosen = rng.sample(preds, min(len(preds), 6))  # some predicates left stale for a few steps
        assert_index_exact(nodes, chosen)
        if step % 3 == 0:
            seen["busy"] += assert_plugins_exact(rng, nodes, monkeypatch)
    assert_index_exact(nodes, preds)
    assert min(seen[k] for k in ("assume", "release", "nominated", "labels", "dry runs")) > 0, seen
    assert seen["busy"] > 0, seen  # the comparisons were not all between skipped plugins


def test_evicted_predicates_are_recounted():
    nodes = table({ZONE: "a"}, {ZONE: "b"})
    nodes.pod_index = PodIndex(nodes.pods_on, capacity=1)
    sel = podtopologyspread.label_selector({"matchLabels": {"color": "a"}})
    first, second = _Selected("default", sel), _Selected("other", sel)
    p = pod("p", labels={"color": "a"})
    nodes.assume(1, p)
    assert nodes.pod_index.count(first).tolist() == [0, 1]
    assert nodes.pod_index.count(second).tolist() == [0, 0]  # evicts `first`
    nodes.release(1, p)
    nodes.assume(0, p)
    assert nodes.pod_index.count(first).tolist() == [1, 0]


def test_terms_no_pod_carries_any_more_are_dropped():
    nodes = table({ZONE: "a"}, {ZONE: "b"})
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {}, "topologyKey": ZONE}]
        }
    }
    p = pod("p", affinity=anti)
    nodes.assume(0, p)
    carried = nodes.pod_index.carried(_required_anti)
    assert [a.tolist() for a in carried.values()] == [[1, 0]]
    nodes.release(0, p)
    assert nodes.pod_index.carried(_required_anti) == {}
