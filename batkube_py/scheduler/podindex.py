"""Per-node counts of assigned pods, kept current as pods come and go, so a cycle reads numpy columns.

InterPodAffinity and PodTopologySpread ask at every cycle how many assigned pods on each node match
some selector (or carry some affinity term); walking every pod in Python made a cycle O(assigned pods).
The NodeTable stamps a node whenever a pod enters or leaves it (assume, release, nominated pods,
preemption's dry runs all do), and a count is brought up to date when it is read by walking only the
nodes stamped since its last read: one node per cycle in steady state. Counts are per node, so a change
of node labels needs nothing here; domains are summed from the current labels by the caller.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable
from typing import Protocol

import numpy as np

from batkube_py.scheduler.podinfo import PodInfo

CAPACITY = 128
"""Predicates kept: matchLabelKeys gives every pod its own selector, so the registry must not grow
with the pods; one evicted is simply counted afresh on its next read."""


class Predicate(Protocol):
    def __hash__(self) -> int: ...

    def __call__(self, pod: PodInfo) -> bool: ...


class _Carried:
    """Per distinct term, per node, how many times the node's pods carry it."""

    def __init__(self) -> None:
        self.arrays: dict[Hashable, np.ndarray] = {}
        self.totals: dict[Hashable, int] = {}
        self.per_node: dict[int, Counter] = {}
        self.seen = -1


class PodIndex:
    def __init__(self, pods_on: list[dict[str, PodInfo]], capacity: int = CAPACITY):
        self._pods_on = pods_on
        self._stamp = np.zeros(len(pods_on), dtype=np.int64)
        self._clock = 0
        self._capacity = capacity
        self._counts: OrderedDict[Predicate, list] = OrderedDict()  # predicate → [counts, clock read]
        self._carried: dict[Callable, _Carried] = {}

    def touch(self, i: int) -> None:
        """A pod entered or left node i."""
        self._clock += 1
        self._stamp[i] = self._clock

    def _stale(self, seen: int) -> list[int]:
        return np.flatnonzero(self._stamp > seen).tolist()

    def count(self, pred: Predicate) -> np.ndarray:
        """Per node, the assigned pods for which pred(pod) holds; live, valid until the next pod change."""
        entry = self._counts.get(pred)
        if entry is None:
            entry = self._counts[pred] = [np.zeros(len(self._pods_on), dtype=np.int64), -1]
            if len(self._counts) > self._capacity:
                self._counts.popitem(last=False)
        else:
            self._counts.move_to_end(pred)
        counts, seen = entry
        if seen < self._clock:
            pods_on = self._pods_on
            for i in self._stale(seen):
                counts[i] = sum(map(pred, pods_on[i].values()))
            entry[1] = self._clock
        return counts

    def carried(self, terms_of: Callable[[PodInfo], tuple[Hashable, ...]]) -> dict[Hashable, np.ndarray]:
        """Per distinct term some assigned pod carries (`terms_of(pod)`), per node, how many times the
        node's pods carry it; terms no pod carries any more are dropped. Live, as `count`."""
        c = self._carried.get(terms_of)
        if c is None:
            c = self._carried[terms_of] = _Carried()
        if c.seen < self._clock:
            for i in self._stale(c.seen):
                self._recarry(c, i, Counter(t for p in self._pods_on[i].values() for t in terms_of(p)))
            c.seen = self._clock
        return c.arrays

    def _recarry(self, c: _Carried, i: int, new: Counter) -> None:
        old = c.per_node.pop(i, None) or Counter()
        if new:
            c.per_node[i] = new
        for t in (*old, *(t for t in new if t not in old)):  # a fixed order: dict order stays stable
            d = new[t] - old[t]
            if d == 0:
                continue
            arr = c.arrays.get(t)
            if arr is None:
                arr = c.arrays[t] = np.zeros(len(self._pods_on), dtype=np.int64)
                c.totals[t] = 0
            arr[i] += d
            c.totals[t] += d
            if c.totals[t] == 0:
                del c.arrays[t], c.totals[t]
