"""Node scores kept across the members of one pod-group cycle.

The group cycle (groupcycle.py) runs the whole pod cycle once per member, and a group's members ask for
the same resources. For a scoring plugin whose score on a node reads only that node and the pod's
requests, and whose NormalizeScore does nothing (NodeResourcesFit's strategies and
BalancedAllocation), a member's scores equal the previous member's everywhere except on the node that
member was assumed on. Scoring every node once and re-scoring only the nodes that changed gives each
member the scores its own cycle would compute, in a fraction of the time: upstream's algorithm, PreScore
and its Skip included, runs unchanged around it.
"""

from __future__ import annotations

import numpy as np

from batkube_py.scheduler.framework import CycleState, Plugin
from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.snapshot import NodeTable

NODE_LOCAL = frozenset({"NodeResourcesFit", "NodeResourcesBalancedAllocation"})


def requests(pod: PodInfo) -> tuple:
    return pod.milli_cpu, pod.memory, tuple(sorted(pod.extended.items()))


class ScoreCache:
    """Each node-local plugin's score on every node for pods asking for `requests(pod)`."""

    def __init__(self, pod: PodInfo):
        self.key = requests(pod)
        self._columns: dict[str, np.ndarray] = {}
        self._dirty: dict[str, set[int]] = {}

    @staticmethod
    def usable(members: list[PodInfo]) -> bool:
        """Worth it and exact: several members asking for the same resources."""
        return len(members) > 1 and len({requests(m) for m in members}) == 1

    def scorer(self, plugin: Plugin, pod: PodInfo):
        """What stands for plugin.score for this pod: the kept columns when they apply."""
        if (
            plugin.name in NODE_LOCAL
            and type(plugin).normalize is Plugin.normalize
            and requests(pod) == self.key
        ):
            return lambda state, pod, nodes, idx: self._score(plugin, state, pod, nodes, idx)
        return plugin.score

    def _score(self, plugin: Plugin, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray):
        column = self._columns.get(plugin.name)
        if column is None:
            column = self._columns[plugin.name] = plugin.score(state, pod, nodes, nodes.all)
            self._dirty[plugin.name] = set()
        dirty = self._dirty[plugin.name]
        if dirty:
            at = np.fromiter(sorted(dirty), dtype=np.int64, count=len(dirty))
            column[at] = plugin.score(state, pod, nodes, at)
            dirty.clear()
        return column[idx]

    def changed(self, node: int) -> None:
        """A pod was assumed on (or released from) `node`."""
        for dirty in self._dirty.values():
            dirty.add(node)
