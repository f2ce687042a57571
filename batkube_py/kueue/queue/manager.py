"""The queues of every ClusterQueue: Kueue's pkg/cache/queue/manager.go.

Heads pops one workload from each ClusterQueue (Kueue walks a map; the twin walks names in order, which
only matters between entries the cycle then finds equal). When quota is freed in a cohort tree, every
ClusterQueue of that tree gets its inadmissible workloads back (the requeuer, with the batch period 0
of the real setup: at once).
"""

from __future__ import annotations

from collections.abc import Callable

from batkube_py.kueue.queue.cluster_queue import ClusterQueueQueue
from batkube_py.kueue.workload import Workload


class Manager:
    def __init__(self, strategies: dict[str, str], same_tree: Callable[[str], list[str]]):
        self.queues = {name: ClusterQueueQueue(name, s) for name, s in sorted(strategies.items())}
        self._same_tree = same_tree

    def add(self, wl: Workload) -> None:
        self.queues[wl.cluster_queue].push(wl)

    def delete(self, wl: Workload) -> None:
        self.queues[wl.cluster_queue].delete(wl.name)

    def heads(self) -> list[Workload]:
        return [wl for q in self.queues.values() if (wl := q.pop()) is not None]

    def requeue(self, wl: Workload, reason: str) -> bool:
        return self.queues[wl.cluster_queue].requeue(wl, reason)

    def queue_inadmissible(self, cq: str) -> int:
        """QueueInadmissibleWorkloads for cq's cohort tree: quota was freed there."""
        return sum(self.queues[name].queue_inadmissible() for name in self._same_tree(cq))

    def has_heads(self) -> bool:
        return any(q.active for q in self.queues.values())

    def pending(self) -> int:
        return sum(len(q) for q in self.queues.values())

    def pending_in(self, cq: str) -> int:
        return len(self.queues[cq])
