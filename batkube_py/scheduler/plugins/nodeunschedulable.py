"""NodeUnschedulable: cordoned (or, here, Batsim-unavailable) nodes take no new pods."""

from __future__ import annotations

import numpy as np

from batkube_py.scheduler.framework import FilterResult
from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.snapshot import NodeTable

REASON = "node(s) were unschedulable"


class NodeUnschedulable:
    name = "NodeUnschedulable"

    def filter(self, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> FilterResult:
        ok = nodes.schedulable[idx]
        bad = int(idx.size - ok.sum())
        return FilterResult(ok, {REASON: bad} if bad else {})
