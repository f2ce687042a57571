"""Shared matching and normalisation, with kube-scheduler's semantics (component-helpers, apimachinery).

Node-side matching is vectorised: a node selector requirement becomes one numpy comparison over the
factorised label column (NodeTable.label_codes), so a term costs microseconds at 1,000 nodes. Pod-side
matching (label selectors against the few pods on a node) stays plain Python: upstream does the same
walk, and it only runs for pods that carry affinity or spread constraints.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
from kubernetes import client

from batkube_py.scheduler.framework import MAX_NODE_SCORE
from batkube_py.scheduler.goint import parse_int64
from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.snapshot import NodeTable

NAME_FIELD = "metadata.name"
DO_NOT_SCHEDULE_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


# ---- scores ------------------------------------------------------------------------------------------


def trunc_div(a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
    """Go's integer division (truncates toward zero); numpy's // floors, which differs for negatives."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def default_normalize(scores: np.ndarray, reverse: bool = False) -> np.ndarray:
    """helper.DefaultNormalizeScore: scale to 0..100 by the maximum (int64), optionally reversed."""
    top = int(scores.max(initial=0))
    if top == 0:
        return np.full(scores.size, MAX_NODE_SCORE if reverse else 0, dtype=np.int64)
    out = MAX_NODE_SCORE * scores.astype(np.int64) // top
    return MAX_NODE_SCORE - out if reverse else out


# ---- taints ------------------------------------------------------------------------------------------


def tolerates(t: client.V1Toleration, taint: client.V1Taint) -> bool:
    """v1.Toleration.ToleratesTaint: empty effect/key match any; operator Exists ignores the value."""
    if t.effect and t.effect != taint.effect:
        return False
    if t.key and t.key != taint.key:
        return False
    op = t.operator or "Equal"
    if op == "Exists":
        return True
    return op == "Equal" and (t.value or "") == (taint.value or "")


def first_untolerated(
    taints: Iterable[client.V1Taint], tolerations: list[client.V1Toleration], effects: frozenset[str]
) -> client.V1Taint | None:
    for taint in taints:
        if taint.effect in effects and not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def untolerated_mask(pod: PodInfo, nodes: NodeTable, effects: frozenset[str] = DO_NOT_SCHEDULE_EFFECTS):
    """Per node, whether some taint with one of `effects` is not tolerated (False everywhere if untainted)."""
    if not nodes.any_tainted:
        return np.zeros(len(nodes), dtype=bool)
    sig, sigs = nodes.taint_signatures()
    tolerations = pod.pod.spec.tolerations or []
    bad = np.array([first_untolerated(s, tolerations, effects) is not None for s in sigs], dtype=bool)
    return bad[sig]


# ---- node selectors ------------------------------------------------------------------------------------


def requirement_mask(nodes: NodeTable, key: str, op: str, values: list[str] | None) -> np.ndarray | None:
    """One NodeSelectorRequirement over all nodes; None if the requirement is invalid (matches nothing)."""
    values = values or []
    codes, table = nodes.label_codes(key)
    if op in ("In", "NotIn"):
        if not values:
            return None
        wanted = np.array([table[v] for v in values if v in table], dtype=np.int64)
        hit = np.isin(codes, wanted) if wanted.size else np.zeros(codes.size, dtype=bool)
        return hit if op == "In" else ~hit
    if op in ("Exists", "DoesNotExist"):
        if values:
            return None
        return codes >= 0 if op == "Exists" else codes < 0
    if op in ("Gt", "Lt"):
        bound = parse_int64(values[0]) if len(values) == 1 else None
        if bound is None:
            return None
        per_value = np.zeros(len(table) + 1, dtype=bool)  # last slot: absent label (code -1)
        for v, c in table.items():
            n = parse_int64(v)
            per_value[c] = n is not None and (n > bound if op == "Gt" else n < bound)
        return per_value[codes]
    return None


def field_mask(nodes: NodeTable, op: str, values: list[str] | None) -> np.ndarray | None:
    """A matchFields requirement: only metadata.name with In/NotIn exists upstream."""
    if op not in ("In", "NotIn") or not values:
        return None
    hit = np.zeros(len(nodes), dtype=bool)
    hit[[nodes.index[v] for v in values if v in nodes.index]] = True
    return hit if op == "In" else ~hit


def term_mask(nodes: NodeTable, term: client.V1NodeSelectorTerm) -> np.ndarray:
    """A NodeSelectorTerm: its requirements ANDed; an empty or invalid term selects no node."""
    exprs = term.match_expressions or []
    fields = term.match_fields or []
    if not exprs and not fields:
        return np.zeros(len(nodes), dtype=bool)
    ok = np.ones(len(nodes), dtype=bool)
    for r in exprs:
        m = requirement_mask(nodes, r.key, r.operator, r.values)
        if m is None:
            return np.zeros(len(nodes), dtype=bool)
        ok &= m
    for r in fields:
        m = field_mask(nodes, r.operator, r.values) if r.key == NAME_FIELD else None
        if m is None:
            return np.zeros(len(nodes), dtype=bool)
        ok &= m
    return ok


def terms_mask(nodes: NodeTable, terms: list[client.V1NodeSelectorTerm]) -> np.ndarray:
    """NodeSelectorTerms are ORed."""
    ok = np.zeros(len(nodes), dtype=bool)
    for t in terms:
        ok |= term_mask(nodes, t)
    return ok


def required_node_affinity(pod: PodInfo, nodes: NodeTable) -> np.ndarray | None:
    """nodeaffinity.GetRequiredNodeAffinity(pod).Match over all nodes (nodeSelector AND required terms).

    None when the pod has neither; cached on the pod until node labels change.
    """
    hit = pod.cache.get("required_node_affinity")
    if hit is not None and hit[0] == nodes.labels_version and hit[1] is nodes:
        return hit[2]
    spec = pod.pod.spec
    na = spec.affinity.node_affinity if spec.affinity is not None else None
    required = na.required_during_scheduling_ignored_during_execution if na is not None else None
    mask = None
    if spec.node_selector:
        mask = np.ones(len(nodes), dtype=bool)
        for k, v in spec.node_selector.items():
            codes, table = nodes.label_codes(k)
            mask &= codes == table.get(v, -2)
    if required is not None:
        terms = terms_mask(nodes, required.node_selector_terms or [])
        mask = terms if mask is None else mask & terms
    pod.cache["required_node_affinity"] = (nodes.labels_version, nodes, mask)
    return mask


# ---- label selectors (pods) ----------------------------------------------------------------------------


@dataclass(frozen=True)
class LabelSelector:
    """metav1.LabelSelectorAsSelector: nil selects nothing, {} everything (`empty`)."""

    requirements: tuple[tuple[str, str, frozenset[str]], ...]
    nothing: bool = False

    @property
    def empty(self) -> bool:
        return not self.nothing and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        for key, op, values in self.requirements:
            v = labels.get(key)
            if op == "In":
                if v is None or v not in values:
                    return False
            elif op == "NotIn":
                if v is not None and v in values:
                    return False
            elif op == "Exists":
                if v is None:
                    return False
            elif op == "DoesNotExist":
                if v is not None:
                    return False
            else:
                return False
        return True

    def with_labels(self, extra: Mapping[str, str]) -> LabelSelector:
        """Selector AND key=value for each pair (matchLabelKeys)."""
        reqs = self.requirements + tuple((k, "In", frozenset({v})) for k, v in sorted(extra.items()))
        return LabelSelector(reqs, self.nothing)


NOTHING = LabelSelector((), nothing=True)


def label_selector(sel: client.V1LabelSelector | dict | None) -> LabelSelector:
    if sel is None:
        return NOTHING
    if isinstance(sel, dict):
        match_labels = sel.get("matchLabels") or {}
        raw = sel.get("matchExpressions") or []
        exprs = [(e.get("key"), e.get("operator"), e.get("values")) for e in raw]
    else:
        match_labels = sel.match_labels or {}
        exprs = [(e.key, e.operator, e.values) for e in sel.match_expressions or []]
    reqs = [(k, "In", frozenset({v})) for k, v in sorted(match_labels.items())]
    reqs += [(k, op, frozenset(vs or [])) for k, op, vs in exprs]
    return LabelSelector(tuple(reqs))


def namespace_labels(namespace: str) -> dict[str, str]:
    """Namespaces are not modelled: each carries only the label the apiserver always sets on one."""
    return {"kubernetes.io/metadata.name": namespace}
