"""One ClusterQueue's pending workloads: Kueue's pkg/cache/queue/cluster_queue.go.

A heap ordered by priority, then queue-order timestamp (then submission order, where Kueue breaks
ties by a random UID), and the inadmissible set of BestEffortFIFO: workloads that failed for want of
quota wait there, out of the heap, until something that may free quota moves them back
(QueueInadmissibleWorkloads). StrictFIFO requeues every failed head at once, so it stays the head.
"""

from __future__ import annotations

import heapq

from batkube_py.kueue.workload import Workload

STRICT, BEST_EFFORT = "StrictFIFO", "BestEffortFIFO"

# RequeueReason values that put a BestEffortFIFO workload straight back into the heap
FAILED_AFTER_NOMINATION = "FailedAfterNomination"
PENDING_PREEMPTION = "PendingPreemption"
NO_FIT = "NoFit"
NO_CANDIDATES = "PreemptionNoCandidates"
GENERIC = ""
_IMMEDIATE = frozenset({FAILED_AFTER_NOMINATION, PENDING_PREEMPTION})


class ClusterQueueQueue:
    def __init__(self, name: str, strategy: str):
        self.name = name
        self.strategy = strategy
        self._heap: list[tuple[tuple, Workload]] = []
        self.active: dict[str, Workload] = {}  # in the heap (entries of other objects are stale)
        self.inadmissible: dict[str, Workload] = {}
        # BestEffortFIFO: the head that issued preemptions sorts first until it is deleted (admitted)
        self.sticky: str | None = None

    def __len__(self) -> int:
        return len(self.active) + len(self.inadmissible)

    def push(self, wl: Workload) -> None:
        self.inadmissible.pop(wl.name, None)
        self.active[wl.name] = wl
        heapq.heappush(self._heap, (wl.key, wl))

    def pop(self) -> Workload | None:
        """The head: the sticky workload if still queued, else the heap's first."""
        if self.sticky is not None and (wl := self.active.get(self.sticky)) is not None:
            del self.active[wl.name]
            return wl
        while self._heap:
            _, wl = heapq.heappop(self._heap)
            if self.active.get(wl.name) is wl:
                del self.active[wl.name]
                return wl
        return None

    def delete(self, name: str) -> None:
        self.active.pop(name, None)
        self.inadmissible.pop(name, None)
        if self.sticky == name:
            self.sticky = None

    def requeue(self, wl: Workload, reason: str) -> bool:
        """RequeueIfNotPresent after a failed attempt; True if it went back into the heap."""
        if self.strategy == STRICT or reason in _IMMEDIATE or wl.pending_flavors():
            if reason == PENDING_PREEMPTION and self.strategy == BEST_EFFORT:
                self.sticky = wl.name
            self.push(wl)
            return True
        self.inadmissible[wl.name] = wl
        return False

    def queue_inadmissible(self) -> int:
        """Move every inadmissible workload back into the heap."""
        moved = list(self.inadmissible.values())
        for wl in moved:
            self.push(wl)
        return len(moved)

    def pending(self) -> list[Workload]:
        return sorted([*self.active.values(), *self.inadmissible.values()], key=lambda w: w.key)
