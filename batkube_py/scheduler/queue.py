"""The scheduling queue: an active heap sorted like PrioritySort, and parked unschedulable pods.

A pod that fits nowhere is parked, not retried, so it never blocks the pods behind it (no head-of-line
blocking). Upstream moves every parked pod back to the active queue on a cluster event its rejecting
plugin registered for (NodeResourcesFit: a pod deleted, a node added or changed) and retries them all.
Here only the parked pods that fit one of the nodes that event changed are moved: a pod that fitted
no node before cannot fit an unchanged node now, so retrying it would fail and, since every parked pod
is retried in queue order on such an event, would leave the queue order as it was. The outcome is
kube-scheduler's, without thousands of doomed cycles per completion.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

import numpy as np

from batkube_py.scheduler.plugins.noderesources import fits
from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.snapshot import NodeTable


class _Parked:
    """Parked pods with their requests as columns, for one vectorised "could it fit now?" per event."""

    def __init__(self) -> None:
        self.pods: list[PodInfo | None] = []
        self.slot: dict[str, int] = {}
        self.cpu = np.zeros(0, dtype=np.int64)
        self.mem = np.zeros(0, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.slot)

    def __iter__(self) -> Iterator[PodInfo]:
        return (p for p in self.pods if p is not None)

    def add(self, pod: PodInfo) -> None:
        if len(self.pods) == self.cpu.size:
            grow = max(64, self.cpu.size)
            self.cpu = np.concatenate([self.cpu, np.zeros(grow, dtype=np.int64)])
            self.mem = np.concatenate([self.mem, np.zeros(grow, dtype=np.int64)])
        i = len(self.pods)
        self.pods.append(pod)
        self.slot[pod.name] = i
        self.cpu[i] = pod.milli_cpu
        self.mem[i] = pod.memory

    def remove(self, name: str) -> PodInfo:
        i = self.slot.pop(name)
        pod = self.pods[i]
        self.pods[i] = None
        if len(self.pods) > 1024 and len(self.slot) * 2 < len(self.pods):
            self._compact()
        assert pod is not None
        return pod

    def _compact(self) -> None:
        alive = [p for p in self.pods if p is not None]
        self.pods, self.slot = [], {}
        self.cpu = np.zeros(max(64, 2 * len(alive)), dtype=np.int64)
        self.mem = np.zeros_like(self.cpu)
        for p in alive:
            self.add(p)

    def fitting(self, nodes: NodeTable, changed: np.ndarray) -> list[str]:
        n = len(self.pods)
        if n == 0 or changed.size == 0:
            return []
        free_cpu, free_mem, free_pods = nodes.free(changed)
        ok = fits(
            self.cpu[:n, None],
            self.mem[:n, None],
            free_cpu[None, :],
            free_mem[None, :],
            free_pods[None, :],
            nodes.mem_limited[changed][None, :],
        )
        ok &= nodes.schedulable[changed][None, :]
        hits = np.flatnonzero(ok.any(axis=1))
        return [p.name for i in hits if (p := self.pods[i]) is not None]


class SchedulingQueue:
    def __init__(self) -> None:
        self._active: list[tuple[tuple[int, float, int], PodInfo]] = []
        self._parked = _Parked()

    def __len__(self) -> int:
        return len(self._active) + len(self._parked)

    def add(self, pod: PodInfo) -> None:
        heapq.heappush(self._active, (pod.sort_key, pod))

    def pop(self) -> PodInfo | None:
        return heapq.heappop(self._active)[1] if self._active else None

    def park(self, pod: PodInfo) -> None:
        self._parked.add(pod)

    def parked(self) -> list[PodInfo]:
        return sorted(self._parked, key=lambda p: p.sort_key)

    def remove_parked(self, name: str) -> PodInfo:
        return self._parked.remove(name)

    def move_on_node_change(self, nodes: NodeTable, changed: np.ndarray) -> int:
        """Requeue the parked pods that one of the `changed` nodes can now hold."""
        names = self._parked.fitting(nodes, changed)
        for name in names:
            self.add(self._parked.remove(name))
        return len(names)
