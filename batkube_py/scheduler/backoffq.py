"""backoffQ and the backoff settings, on the simulated clock (backend/queue/backoff_queue.go).

1.32 keeps one heap ordered by expiry (Timestamp + backoff of Attempts), flushed to activeQ by a 1-s
loop. 1.37 (SchedulerPopFromBackoffQ) truncates each expiry to its 1-s ordering window, keeps two heaps
— entities rejected by plugins, ordered by window then as activeQ orders them (priority, timestamp),
and entities that failed with an error, ordered by expiry — and lets Pop take the head of the first
heap at once when activeQ is empty (active_queue.go, unlockedPop); the error heap is never popped early.
The flush ticks on whole seconds in both versions here: the twin's loop starts at time 0.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.versions import DEFAULT_KUBE_VERSION, KubeVersion, backoff_duration, retryable_at


@dataclass(frozen=True)
class QueueConfig:
    pod_initial_backoff: float = 1.0
    pod_max_backoff: float = 10.0
    max_in_unschedulable: float = 300.0  # DefaultPodMaxInUnschedulablePodsDuration
    unschedulable_flush_period: float = 30.0
    backoff_flush_period: float = 1.0
    kube_version: KubeVersion = DEFAULT_KUBE_VERSION

    def backoff(self, count: int, size: int = 1) -> float:
        return backoff_duration(count, size, self.pod_initial_backoff, self.pod_max_backoff)

    def retry_at(self, count: int, failed_at: float, size: int = 1) -> float:
        """When an entity that failed at `failed_at` with backoff counter `count` stops backing off."""
        return retryable_at(self.kube_version, failed_at, self.backoff(count, size))

    def retry_at_many(self, counts: np.ndarray, failed_at: float) -> np.ndarray:
        """retry_at for pods (size 1) whose counters are all ≥ 1, as one vector operation."""
        if self.pod_max_backoff <= 0:
            return np.full(counts.size, failed_at)
        d = np.minimum(self.pod_initial_backoff * 2.0 ** (counts - 1), self.pod_max_backoff)
        if self.kube_version == "1.32":
            return failed_at + d
        return np.floor(np.round(failed_at + d, 9)) + 1.0


@lru_cache(maxsize=4096)  # asked for the same backoff expiries on every pop while pods back off
def tick(t: float, period: float) -> float:
    """The first tick of a periodic loop (started at t=0) at or after t."""
    return math.ceil(round(t / period, 9)) * period


class BackoffQ:
    def __init__(self, config: QueueConfig):
        self.period = config.backoff_flush_period
        self.two_heaps = config.kube_version != "1.32"
        self.heap: list[tuple[float, tuple, PodInfo]] = []
        self.errors: list[tuple[float, tuple, PodInfo]] = []

    def __len__(self) -> int:
        return len(self.heap) + len(self.errors)

    def push(self, pod: PodInfo, error: bool = False) -> None:
        """`error`: the entity failed with no rejecting plugin (1.37's error heap)."""
        if not self.two_heaps:
            heapq.heappush(self.heap, (pod.backoff_until, (pod.seq,), pod))
        elif error:
            heapq.heappush(self.errors, (pod.backoff_until, (pod.seq,), pod))
        else:
            heapq.heappush(self.heap, (pod.backoff_until, (-pod.priority, pod.timestamp, pod.seq), pod))

    def flush(self, now: float, into) -> None:
        """popAllBackoffCompleted on the last tick at or before `now`: every entity done backing off."""
        for heap in (self.heap, self.errors):
            while heap and tick(heap[0][0], self.period) <= now:
                into(heapq.heappop(heap)[-1])

    def pop_early(self) -> PodInfo | None:
        """1.37: the head of the (non-error) heap, expired or not, for a Pop that found activeQ empty."""
        if self.two_heaps and self.heap:
            return heapq.heappop(self.heap)[-1]
        return None

    def next_tick(self) -> float | None:
        heads = [h[0][0] for h in (self.heap, self.errors) if h]
        return tick(min(heads), self.period) if heads else None

    def remove(self, name: str) -> PodInfo | None:
        for heap in (self.heap, self.errors):
            for k, item in enumerate(heap):
                if item[-1].name == name:
                    heap[k] = heap[-1]
                    heap.pop()
                    heapq.heapify(heap)
                    return item[-1]
        return None

    def pods(self) -> list[PodInfo]:
        return [p for h in (self.heap, self.errors) for _, _, p in h]
