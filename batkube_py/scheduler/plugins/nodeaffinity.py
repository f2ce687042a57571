"""NodeAffinity: nodeSelector and required node affinity filter; preferred terms score (weight 2).

The plugin's `addedAffinity` argument (NodeAffinityArgs) is enforced on every pod of the profile on top
of the pod's own affinity, with its own failure reason, as upstream. Masks are computed over all nodes
once per pod and cached on the PodInfo until node labels change, so retries cost an index lookup.
"""

from __future__ import annotations

import numpy as np
from kubernetes import client

from batkube_py import kubeapi
from batkube_py.scheduler.framework import NODE_ADD, NODE_LABEL, PASS, SKIP, CycleState, FilterResult, Plugin
from batkube_py.scheduler.pluginargs import NodeAffinityArgs
from batkube_py.scheduler.plugins.helpers import (
    default_normalize,
    required_node_affinity,
    term_mask,
    terms_mask,
)
from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.snapshot import NodeTable

REASON_POD = "node(s) didn't match Pod's node affinity/selector"
REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
REASON_CONFLICT = "pod affinity terms conflict"
_KEY = "NodeAffinity"


def _preferred(pod: PodInfo) -> list[client.V1PreferredSchedulingTerm]:
    a = pod.pod.spec.affinity
    na = a.node_affinity if a is not None else None
    return list(na.preferred_during_scheduling_ignored_during_execution or []) if na is not None else []


class NodeAffinity(Plugin):
    name = "NodeAffinity"
    filters = True
    reads = "node"
    scores = True

    def __init__(self, added_affinity: client.V1NodeAffinity | None = None):
        self.added_affinity = added_affinity
        req = added_affinity.required_during_scheduling_ignored_during_execution if added_affinity else None
        self._added_required = list(req.node_selector_terms or []) if req is not None else None
        pref = added_affinity.preferred_during_scheduling_ignored_during_execution if added_affinity else None
        self._added_preferred = list(pref or [])
        self._added_cache: tuple[int, NodeTable, np.ndarray] | None = None

    @classmethod
    def from_args(cls, args: NodeAffinityArgs | None) -> NodeAffinity:
        added = args.addedAffinity if args is not None else None
        return cls(kubeapi.model(added, "V1NodeAffinity") if added else None)

    def events_to_register(self) -> frozenset[str]:
        return frozenset({NODE_ADD, NODE_LABEL})

    def _added_mask(self, nodes: NodeTable) -> np.ndarray | None:
        if self._added_required is None:
            return None
        c = self._added_cache
        if c is None or c[0] != nodes.labels_version or c[1] is not nodes:
            c = self._added_cache = (nodes.labels_version, nodes, terms_mask(nodes, self._added_required))
        return c[2]

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable) -> str | None:
        """Terms that each pin metadata.name with In but to disjoint sets can match no node at all; SKIP
        when neither the pod nor the plugin's args require anything of nodes."""
        a = pod.pod.spec.affinity
        na = a.node_affinity if a is not None else None
        req = na.required_during_scheduling_ignored_during_execution if na is not None else None
        if req is None:
            return SKIP if self._added_required is None and not pod.pod.spec.node_selector else None
        names: set[str] | None = None
        for t in req.node_selector_terms or []:
            term_names: set[str] | None = None
            for r in t.match_fields or []:
                if r.key == "metadata.name" and r.operator == "In":
                    s = set(r.values or [])
                    term_names = s if term_names is None else term_names & s
            if term_names is None:
                return None
            names = term_names if names is None else names | term_names
        if names is not None and not names:
            return REASON_CONFLICT
        return None

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> FilterResult:
        added = self._added_mask(nodes)
        own = required_node_affinity(pod, nodes)
        if added is None and own is None:
            return PASS
        ok = np.ones(idx.size, dtype=bool)
        reasons: dict[str, int] = {}
        if added is not None:
            ok = added[idx]
            if (n := int(idx.size - ok.sum())) > 0:
                reasons[REASON_ENFORCED] = n
        if own is not None:
            own_ok = own[idx]
            if (n := int((ok & ~own_ok).sum())) > 0:
                reasons[REASON_POD] = n
            ok = ok & own_ok
        return FilterResult(ok, reasons)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> str | None:
        """Σ weight of matching preferred terms (the pod's and addedAffinity's); None means Skip."""
        terms = [t for t in _preferred(pod) + self._added_preferred if t.weight]
        if not terms:
            state[_KEY] = None
            return SKIP
        key = f"{_KEY}/{id(self)}"  # addedAffinity is per plugin instance
        hit = pod.cache.get(key)
        if hit is None or hit[0] != nodes.labels_version or hit[1] is not nodes:
            total = np.zeros(len(nodes), dtype=np.int64)
            for t in terms:
                total += np.where(term_mask(nodes, t.preference), int(t.weight), 0)
            hit = pod.cache[key] = (nodes.labels_version, nodes, total)
        state[_KEY] = hit[2][idx]
        return None

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> np.ndarray:
        if _KEY not in state:
            self.pre_score(state, pod, nodes, idx)
        s = state[_KEY]
        return np.zeros(idx.size, dtype=np.int64) if s is None else s

    def normalize(self, state: CycleState, scores: np.ndarray) -> np.ndarray:
        if state.get(_KEY) is None:
            return scores  # skipped at PreScore: upstream never normalises, every node scores 0
        return default_normalize(scores)
