"""InterPodAffinity: required (anti-)affinity filters, preferred terms score (weight 2).

Semantics of kube-scheduler 1.32 (interpodaffinity/filtering.go, scoring.go): counts are kept per
topology pair (label key, value) over the pods already assigned; existing pods' required anti-affinity
is honoured symmetrically; a pod whose required affinity matches no pod anywhere may still land on a
node carrying the topology keys when it matches its own terms (the first pod of a group); an existing
pod's required affinity attracts matching pods with hardPodAffinityWeight.

The plugin costs nothing when neither the pod nor any assigned pod carries pod (anti-)affinity: the
NodeTable keeps the assigned pods that do, and both PreFilter and PreScore skip on empty sets.
Namespaces are not modelled as objects: a namespaceSelector is matched against the only label every
namespace has, kubernetes.io/metadata.name.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from kubernetes import client

from batkube_py.scheduler.framework import (
    NODE_ADD,
    NODE_LABEL,
    PASS,
    POD_ADD,
    POD_DELETE,
    SKIP,
    CycleState,
    FilterResult,
    Plugin,
)
from batkube_py.scheduler.pluginargs import InterPodAffinityArgs
from batkube_py.scheduler.plugins.helpers import NOTHING, LabelSelector, label_selector, namespace_labels
from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.snapshot import NodeTable

REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI = "node(s) didn't satisfy existing pods anti-affinity rules"
_FILTER, _SCORE = "InterPodAffinity/filter", "InterPodAffinity/score"


@dataclass(frozen=True)
class Term:
    selector: LabelSelector
    namespaces: frozenset[str]
    ns_selector: LabelSelector
    key: str
    weight: int = 0

    def matches(self, pod: PodInfo, ns_labels: dict[str, str] | None = None) -> bool:
        """AffinityTerm.Matches: the pod's namespace is selected and its labels match."""
        if ns_labels is None:
            ns_labels = namespace_labels(pod.namespace)
        if pod.namespace in self.namespaces or self.ns_selector.matches(ns_labels):
            return self.selector.matches(pod.labels)
        return False


def _matches_all(terms: tuple[Term, ...], pod: PodInfo) -> bool:
    """podMatchesAllAffinityTerms, as the hints call it: no namespace labels, no terms → False."""
    return bool(terms) and all(t.matches(pod, {}) for t in terms)


@dataclass(frozen=True)
class Terms:
    req_aff: tuple[Term, ...]
    req_anti: tuple[Term, ...]
    pref_aff: tuple[Term, ...]
    pref_anti: tuple[Term, ...]


NO_TERMS = Terms((), (), (), ())


def _term(owner: PodInfo, t: client.V1PodAffinityTerm, weight: int = 0) -> Term:
    if not t.namespaces and t.namespace_selector is None:
        namespaces = frozenset({owner.namespace})
    else:
        namespaces = frozenset(t.namespaces or [])
    ns_sel = label_selector(t.namespace_selector) if t.namespace_selector is not None else NOTHING
    return Term(label_selector(t.label_selector), namespaces, ns_sel, t.topology_key, weight)


def terms_of(pod: PodInfo) -> Terms:
    """The pod's affinity terms, parsed once (framework.NewPodInfo does the same per pod)."""
    hit = pod.cache.get("InterPodAffinity/terms")
    if hit is not None:
        return hit
    a = pod.pod.spec.affinity
    aff = a.pod_affinity if a is not None else None
    anti = a.pod_anti_affinity if a is not None else None
    if aff is None and anti is None:
        pod.cache["InterPodAffinity/terms"] = NO_TERMS
        return NO_TERMS

    def req(x):
        return (
            tuple(_term(pod, t) for t in (x.required_during_scheduling_ignored_during_execution or []))
            if x
            else ()
        )

    def pref(x):
        items = (x.preferred_during_scheduling_ignored_during_execution or []) if x else []
        return tuple(_term(pod, w.pod_affinity_term, int(w.weight)) for w in items)

    terms = pod.cache["InterPodAffinity/terms"] = Terms(req(aff), req(anti), pref(aff), pref(anti))
    return terms


def _pair_array(
    nodes: NodeTable, key: str, counts: dict[tuple[str, str], int]
) -> tuple[np.ndarray, np.ndarray]:
    """(codes, per-code count) for one topology key, so a node's count is arr[codes[i]]."""
    codes, table = nodes.label_codes(key)
    arr = np.zeros(len(table) + 1, dtype=np.int64)  # last slot: nodes without the key
    for value, c in table.items():
        arr[c] = counts.get((key, value), 0)
    return codes, arr


class InterPodAffinity(Plugin):
    name = "InterPodAffinity"
    filters = True
    scores = True

    def __init__(
        self, hard_pod_affinity_weight: int = 1, ignore_preferred_terms_of_existing_pods: bool = False
    ):
        self.hard_weight = hard_pod_affinity_weight
        self.ignore_existing_preferred = ignore_preferred_terms_of_existing_pods

    @classmethod
    def from_args(cls, args: InterPodAffinityArgs | None) -> InterPodAffinity:
        if args is None:
            return cls()
        return cls(args.hardPodAffinityWeight, args.ignorePreferredTermsOfExistingPods)

    hinted_events = frozenset({POD_ADD, POD_DELETE})

    def events_to_register(self) -> frozenset[str]:
        return frozenset({POD_ADD, POD_DELETE, NODE_ADD, NODE_LABEL})

    def queueing_hint(self, pod: PodInfo, event: str, obj: PodInfo) -> bool:
        """An assigned pod added helps if it matches all the pod's required affinity terms; one deleted
        helps if it matches all its required anti-affinity terms. Upstream (1.32) asks nothing else: a
        pod kept out only by an existing pod's anti-affinity waits for another event or the flush."""
        terms = terms_of(pod)
        return _matches_all(terms.req_aff if event == POD_ADD else terms.req_anti, obj)

    # ---- filter --------------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable) -> str | None:
        terms = terms_of(pod)
        existing: dict[tuple[str, str], int] = defaultdict(int)
        for name, i in nodes.anti_affinity_pods.items():
            labels = nodes.labels[i]
            for t in terms_of(nodes.pods_on[i][name]).req_anti:
                if t.key in labels and t.matches(pod):
                    existing[(t.key, labels[t.key])] += 1
        if not existing and not terms.req_aff and not terms.req_anti:
            state[_FILTER] = None
            return SKIP
        aff: dict[tuple[str, str], int] = defaultdict(int)
        anti: dict[tuple[str, str], int] = defaultdict(int)
        if terms.req_aff or terms.req_anti:
            for i in np.flatnonzero(nodes.pod_count):
                labels = nodes.labels[i]
                for p in nodes.pods_on[i].values():
                    if terms.req_aff and all(t.matches(p) for t in terms.req_aff):
                        for t in terms.req_aff:
                            if t.key in labels:
                                aff[(t.key, labels[t.key])] += 1
                    for t in terms.req_anti:
                        if t.key in labels and t.matches(p):
                            anti[(t.key, labels[t.key])] += 1
        state[_FILTER] = (terms, dict(existing), dict(aff), dict(anti))
        return None

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> FilterResult:
        if _FILTER not in state:
            self.pre_filter(state, pod, nodes)
        s = state[_FILTER]
        if s is None:
            return PASS
        terms, existing, aff, anti = s
        # Required affinity: every term's key on the node and a matching pod in its domain, or the
        # "first pod of the group" exception.
        has_keys = np.ones(idx.size, dtype=bool)
        exist = np.ones(idx.size, dtype=bool)
        for t in terms.req_aff:
            codes, arr = _pair_array(nodes, t.key, aff)
            c = codes[idx]
            has_keys &= c >= 0
            exist &= arr[c] > 0
        if terms.req_aff and not aff and all(t.matches(pod) for t in terms.req_aff):
            exist[:] = True
        aff_bad = ~(has_keys & exist)
        anti_bad = np.zeros(idx.size, dtype=bool)
        if anti:
            for t in terms.req_anti:
                codes, arr = _pair_array(nodes, t.key, anti)
                anti_bad |= arr[codes[idx]] > 0
        anti_bad &= ~aff_bad
        existing_bad = np.zeros(idx.size, dtype=bool)
        for key in {k for k, _ in existing}:
            codes, arr = _pair_array(nodes, key, existing)
            existing_bad |= arr[codes[idx]] > 0
        existing_bad &= ~aff_bad & ~anti_bad
        reasons = {}
        for reason, bad in (
            (REASON_AFFINITY, aff_bad),
            (REASON_ANTI, anti_bad),
            (REASON_EXISTING_ANTI, existing_bad),
        ):
            if (n := int(bad.sum())) > 0:
                reasons[reason] = n
        return FilterResult(~(aff_bad | anti_bad | existing_bad), reasons)

    # ---- score ---------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> str | None:
        terms = terms_of(pod)
        has_constraints = bool(terms.pref_aff or terms.pref_anti)
        state[_SCORE] = None
        nothing_to_match = self.ignore_existing_preferred or not nodes.affinity_pods
        if idx.size == 0 or (not has_constraints and nothing_to_match):
            return SKIP
        topo: dict[tuple[str, str], int] = defaultdict(int)

        def add(ts, other: PodInfo, labels: dict[str, str], sign: int, weight: int | None = None) -> None:
            for t in ts:
                if t.key in labels and t.matches(other):
                    topo[(t.key, labels[t.key])] += sign * (t.weight if weight is None else weight)

        if has_constraints:
            existing = [(i, p) for i in np.flatnonzero(nodes.pod_count) for p in nodes.pods_on[i].values()]
        else:
            existing = [(i, nodes.pods_on[i][name]) for name, i in nodes.affinity_pods.items()]
        for i, p in existing:
            labels = nodes.labels[i]
            if not labels:
                continue
            add(terms.pref_aff, p, labels, 1)
            add(terms.pref_anti, p, labels, -1)
            theirs = terms_of(p)
            if self.hard_weight > 0:
                add(theirs.req_aff, pod, labels, 1, self.hard_weight)
            add(theirs.pref_aff, pod, labels, 1)
            add(theirs.pref_anti, pod, labels, -1)
        if not topo:
            return SKIP
        scores = np.zeros(idx.size, dtype=np.int64)
        for key in {k for k, _ in topo}:
            codes, arr = _pair_array(nodes, key, topo)
            scores += arr[codes[idx]]
        state[_SCORE] = scores
        return None

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> np.ndarray:
        if _SCORE not in state:
            self.pre_score(state, pod, nodes, idx)
        s = state[_SCORE]
        return np.zeros(idx.size, dtype=np.int64) if s is None else s

    def normalize(self, state: CycleState, scores: np.ndarray) -> np.ndarray:
        """Min-max to 0..100 in float64, truncated, as upstream's NormalizeScore."""
        if state.get(_SCORE) is None:
            return scores
        lo, hi = int(scores.min()), int(scores.max())
        if hi - lo <= 0:
            return np.zeros(scores.size, dtype=np.int64)
        return (100.0 * ((scores - lo) / float(hi - lo))).astype(np.int64)
