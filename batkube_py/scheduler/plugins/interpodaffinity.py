"""InterPodAffinity: required (anti-)affinity filters, preferred terms score (weight 2).

Semantics of kube-scheduler 1.32 (interpodaffinity/filtering.go, scoring.go): counts are kept per
topology pair (label key, value) over the pods already assigned; existing pods' required anti-affinity
is honoured symmetrically; a pod whose required affinity matches no pod anywhere may still land on a
node carrying the topology keys when it matches its own terms (the first pod of a group); an existing
pod's required affinity attracts matching pods with hardPodAffinityWeight.

The plugin costs nothing when neither the pod nor any assigned pod carries pod (anti-)affinity: the
NodeTable keeps the assigned pods that do, and both PreFilter and PreScore skip on empty sets. Otherwise
no cycle walks the assigned pods: the NodeTable's pod index (podindex.py) keeps, per node, how many
match each of the pod's terms and how many carry each distinct term, and a topology pair's count is
those columns summed over the nodes of the pair.
Namespaces are not modelled as objects: a namespaceSelector is matched against the only label every
namespace has, kubernetes.io/metadata.name.
"""

from __future__ import annotations

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
_FILTER, _SCORE, _SCORING = "InterPodAffinity/filter", "InterPodAffinity/score", "InterPodAffinity/scoring"


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


def _matches_any(terms: tuple[Term, ...], pod: PodInfo) -> bool:
    """podMatchesAnyAffinityTerms, as the hints call it: no namespace labels."""
    return any(t.matches(pod, {}) for t in terms)


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


@dataclass(frozen=True)
class _MatchingAll:
    """An assigned pod counted for these terms (the pod index's predicate): it matches every one."""

    terms: tuple[Term, ...]

    def __call__(self, pod: PodInfo) -> bool:
        ns_labels = namespace_labels(pod.namespace)
        return all(t.matches(pod, ns_labels) for t in self.terms)


def _required_anti(pod: PodInfo) -> tuple[Term, ...]:
    return terms_of(pod).req_anti


def _scoring(pod: PodInfo) -> tuple[tuple[int, Term], ...]:
    """The terms by which an assigned pod scores incoming pods, each with its sign (0: hard affinity)."""
    hit = pod.cache.get(_SCORING)
    if hit is None:
        t = terms_of(pod)
        hit = pod.cache[_SCORING] = (
            *((0, x) for x in t.req_aff),
            *((1, x) for x in t.pref_aff),
            *((-1, x) for x in t.pref_anti),
        )
    return hit


def _by_domain(nodes: NodeTable, key: str, per_node: np.ndarray) -> np.ndarray:
    """Per node, `per_node` summed over the nodes sharing its value of `key` (0 where it lacks the key):
    upstream's counts per topology pair, read back at each node."""
    codes, table = nodes.label_codes(key)
    has = codes >= 0
    dom = np.bincount(codes[has], weights=per_node[has], minlength=len(table) + 1)  # last slot: no key
    return dom.astype(np.int64)[codes]


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
        """An assigned pod added helps if it matches all the pod's required affinity terms. One deleted
        helps, in 1.32, if it matches all the pod's required anti-affinity terms; in 1.37.2 if it matches
        any of them, or if the pod matches any of the deleted pod's (plugin.go,
        isSchedulableAfterAssignedPodChange): a pod kept out by an existing pod's anti-affinity is
        retried when that pod goes."""
        terms = terms_of(pod)
        if event == POD_ADD:
            return _matches_all(terms.req_aff, obj)
        if self.kube_version == "1.32":
            return _matches_all(terms.req_anti, obj)
        return _matches_any(terms.req_anti, obj) or _matches_any(terms_of(obj).req_anti, pod)

    # ---- filter --------------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable) -> str | None:
        """Per node, whether each required rule fails: (affinity, anti-affinity, existing anti-affinity),
        each counted only where the ones before it pass, as upstream reports the first failure."""
        terms = terms_of(pod)
        index = nodes.pod_index
        existing = None  # most cycles: no assigned pod with required anti-affinity, nothing to allocate
        if nodes.anti_affinity_pods:
            for t, carried in index.carried(_required_anti).items():
                if t.matches(pod):
                    hit = _by_domain(nodes, t.key, carried) > 0
                    existing = hit if existing is None else existing | hit
        if not terms.req_aff and not terms.req_anti and (existing is None or not existing.any()):
            state[_FILTER] = None
            return SKIP
        if existing is None:
            existing = np.zeros(len(nodes), dtype=bool)
        aff_ok = np.ones(len(nodes), dtype=bool)
        if terms.req_aff:
            # Every term's key on the node and, in each term's domain, a pod matching all the terms;
            # or, if no such pod is anywhere, the "first pod of the group" exception.
            matched = index.count(_MatchingAll(terms.req_aff))
            exist = np.ones(len(nodes), dtype=bool)
            anywhere = False
            for t in terms.req_aff:
                aff_ok &= nodes.label_codes(t.key)[0] >= 0
                dom = _by_domain(nodes, t.key, matched)
                exist &= dom > 0
                anywhere = anywhere or bool(dom.any())
            if anywhere or not all(t.matches(pod) for t in terms.req_aff):
                aff_ok &= exist
        anti_bad = np.zeros(len(nodes), dtype=bool)
        for t in terms.req_anti:
            anti_bad |= _by_domain(nodes, t.key, index.count(_MatchingAll((t,)))) > 0
        anti_bad &= aff_ok
        state[_FILTER] = (~aff_ok, anti_bad, existing & aff_ok & ~anti_bad)
        return None

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> FilterResult:
        if _FILTER not in state:
            self.pre_filter(state, pod, nodes)
        s = state[_FILTER]
        if s is None:
            return PASS
        aff_bad, anti_bad, existing_bad = (bad[idx] for bad in s)
        reasons, masks = {}, {}
        for reason, bad in (
            (REASON_AFFINITY, aff_bad),
            (REASON_ANTI, anti_bad),
            (REASON_EXISTING_ANTI, existing_bad),
        ):
            if (n := int(bad.sum())) > 0:
                reasons[reason], masks[reason] = n, bad
        return FilterResult(~(aff_bad | anti_bad | existing_bad), reasons, masks)

    # ---- score ---------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> str | None:
        terms = terms_of(pod)
        has_constraints = bool(terms.pref_aff or terms.pref_anti)
        state[_SCORE] = None
        nothing_to_match = self.ignore_existing_preferred or not nodes.affinity_pods
        if idx.size == 0 or (not has_constraints and nothing_to_match):
            return SKIP
        scores = np.zeros(len(nodes), dtype=np.int64)
        touched = False  # upstream skips when no pair was counted at all, whatever the sums

        def add(key: str, per_node: np.ndarray, weight: int) -> None:
            nonlocal touched
            counts = _by_domain(nodes, key, per_node)
            if counts.any():
                touched = True
                scores[:] += weight * counts

        for sign, ts in ((1, terms.pref_aff), (-1, terms.pref_anti)):
            for t in ts:
                add(t.key, nodes.pod_index.count(_MatchingAll((t,))), sign * t.weight)
        if nodes.affinity_pods:
            for (sign, t), carried in nodes.pod_index.carried(_scoring).items():
                if sign == 0 and self.hard_weight <= 0:
                    continue
                if t.matches(pod):
                    add(t.key, carried, self.hard_weight if sign == 0 else sign * t.weight)
        if not touched:
            return SKIP
        state[_SCORE] = scores[idx]
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
