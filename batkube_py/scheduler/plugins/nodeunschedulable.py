"""NodeUnschedulable: cordoned (or, here, Batsim-unavailable) nodes take no new pods."""

from __future__ import annotations

import numpy as np

from batkube_py.scheduler.framework import (
    NODE_ADD,
    NODE_TAINT,
    PASS,
    CycleState,
    FilterResult,
    NodeChange,
    Plugin,
)
from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.snapshot import NodeTable

REASON = "node(s) were unschedulable"


class NodeUnschedulable(Plugin):
    name = "NodeUnschedulable"
    filters = True
    reads = "node"

    hinted_events = frozenset({NODE_TAINT})

    def events_to_register(self) -> frozenset[str]:
        return frozenset({NODE_ADD, NODE_TAINT})

    def queueing_hint(self, pod: PodInfo, event: str, obj: NodeChange) -> bool:
        """Only a node turning schedulable (or added schedulable) can help."""
        return obj.new_schedulable and obj.old_schedulable is not True

    def feasible_mask(self, state: CycleState, pod: PodInfo, nodes: NodeTable) -> np.ndarray | None:
        return None if nodes.all_schedulable else nodes.schedulable

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> FilterResult:
        if nodes.all_schedulable:
            return PASS
        ok = nodes.schedulable[idx]
        bad = int(idx.size - ok.sum())
        return FilterResult(ok, {REASON: bad} if bad else {})
