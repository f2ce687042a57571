"""TaintToleration: NoSchedule/NoExecute taints filter, PreferNoSchedule taints score (weight 3 by default).

Nodes are grouped by their taint list (NodeTable.taint_signatures), so tolerations are checked once per
distinct list; an untainted cluster costs one flag test per cycle.
"""

from __future__ import annotations

import numpy as np

from batkube_py.scheduler.framework import (
    NODE_ADD,
    NODE_TAINT,
    PASS,
    SKIP,
    CycleState,
    FilterResult,
    NodeChange,
    Plugin,
)
from batkube_py.scheduler.plugins.helpers import (
    DO_NOT_SCHEDULE_EFFECTS,
    default_normalize,
    first_untolerated,
    tolerates,
)
from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.snapshot import NodeTable

_KEY = "TaintToleration"


def untolerated_reason(taint) -> str:
    """Upstream formats the taint as {key: value}, an empty value printing as nothing."""
    return f"node(s) had untolerated taint {{{taint.key}: {taint.value or ''}}}"


def _tolerated(taint, tolerations) -> bool:
    return any(tolerates(t, taint) for t in tolerations)


class TaintToleration(Plugin):
    name = "TaintToleration"
    filters = True
    reads = "node"
    scores = True

    hinted_events = frozenset({NODE_TAINT})

    def events_to_register(self) -> frozenset[str]:
        return frozenset({NODE_ADD, NODE_TAINT})

    def queueing_hint(self, pod: PodInfo, event: str, obj: NodeChange) -> bool:
        """Only a node whose NoSchedule/NoExecute taints went from untolerated to tolerated can help
        (cordoning and uncordoning leave the taints as they were)."""
        tolerations = pod.pod.spec.tolerations or []
        was = obj.old_schedulable is None or (
            first_untolerated(obj.old_taints, tolerations, DO_NOT_SCHEDULE_EFFECTS) is not None
        )
        return was and first_untolerated(obj.new_taints, tolerations, DO_NOT_SCHEDULE_EFFECTS) is None

    def feasible_mask(self, state: CycleState, pod: PodInfo, nodes: NodeTable) -> np.ndarray | None:
        return None if not nodes.any_tainted else super().feasible_mask(state, pod, nodes)

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> FilterResult:
        if not nodes.any_tainted or not nodes.tainted[idx].any():
            return PASS
        sig, sigs = nodes.taint_signatures()
        tolerations = pod.pod.spec.tolerations or []
        reasons_by_sig = [first_untolerated(s, tolerations, DO_NOT_SCHEDULE_EFFECTS) for s in sigs]
        bad_sig = np.array([t is not None for t in reasons_by_sig], dtype=bool)
        node_sig = sig[idx]
        bad = bad_sig[node_sig]
        reasons: dict[str, int] = {}
        if bad.any():
            counts = np.bincount(node_sig[bad], minlength=len(sigs))
            for j in np.flatnonzero(counts):
                r = untolerated_reason(reasons_by_sig[j])
                reasons[r] = reasons.get(r, 0) + int(counts[j])
        return FilterResult(~bad, reasons)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> str | None:
        """Only tolerations with effect PreferNoSchedule or none count, as upstream's PreScore keeps."""
        if not nodes.any_tainted or not nodes.tainted[idx].any():
            state[_KEY] = None
            return SKIP
        sig, sigs = nodes.taint_signatures()
        prefer = [t for t in pod.pod.spec.tolerations or [] if t.effect in (None, "", "PreferNoSchedule")]
        per_sig = np.array(
            [
                sum(1 for taint in s if taint.effect == "PreferNoSchedule" and not _tolerated(taint, prefer))
                for s in sigs
            ],
            dtype=np.int64,
        )
        state[_KEY] = per_sig[sig[idx]]
        return None

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> np.ndarray:
        if _KEY not in state:
            self.pre_score(state, pod, nodes, idx)
        counts = state[_KEY]
        return np.zeros(idx.size, dtype=np.int64) if counts is None else counts

    def normalize(self, state: CycleState, scores: np.ndarray) -> np.ndarray:
        """Fewer intolerable taints is better: DefaultNormalizeScore reversed."""
        return default_normalize(scores, reverse=True)
