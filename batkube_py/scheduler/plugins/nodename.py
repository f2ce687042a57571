"""NodeName: a pod that names its node (spec.nodeName) fits only there."""

from __future__ import annotations

import numpy as np

from batkube_py.scheduler.framework import NODE_ADD, PASS, CycleState, FilterResult, Plugin
from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.snapshot import NodeTable

REASON = "node(s) didn't match the requested node name"


class NodeName(Plugin):
    name = "NodeName"
    filters = True
    reads = "node"

    def events_to_register(self) -> frozenset[str]:
        return frozenset({NODE_ADD})

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> FilterResult:
        wanted = pod.pod.spec.node_name
        if not wanted:
            return PASS
        ok = idx == nodes.index.get(wanted, -1)
        bad = int(idx.size - ok.sum())
        return FilterResult(ok, {REASON: bad} if bad else {})
