"""Dominant resource share: Kueue's pkg/cache/scheduler/fair_sharing.go.

A node (ClusterQueue or Cohort) that uses more than its subtree quota borrows. Per resource name, what it
borrows over all flavors is set against what the cohort tree could lend it (the parent's potential
available quota, summed over the flavors of that resource); the largest ratio, in thousandths, is the
node's dominant resource share, divided by its fair-sharing weight to compare nodes. A node without a
parent has share 0; a weight of 0 makes any borrowing sort after every weighted share.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from batkube_py.kueue.cache.resource_node import FR, Node, potential_available


@dataclass(frozen=True)
class DRS:
    weight: float = 1.0
    ratio: float = 0.0  # unweighted, in thousandths of the lendable quota
    resource: str = ""  # the dominant resource
    borrowing: bool = False
    borrowed: tuple[FR, ...] = ()  # the flavor-resources it borrows on

    def is_zero(self) -> bool:
        return self.ratio == 0

    def weighted(self) -> float:
        """PreciseWeightedShare."""
        if self.is_zero():
            return 0.0
        if self.weight == 0:
            return math.inf
        return self.ratio / self.weight

    def zero_weight_borrows(self) -> bool:
        return self.weight == 0 and not self.is_zero()

    def borrowing_on(self, requested: dict[FR, int]) -> bool:
        """IsBorrowingOn: borrowing on a flavor-resource the workload asks for."""
        return any(requested.get(fr, 0) > 0 for fr in self.borrowed)


NEGATIVE = DRS(ratio=-1.0)  # NegativeDRS: below any share, the start of a search for the highest


def compare(a: DRS, b: DRS) -> int:
    """CompareDRS: -1 when a is the fairer to schedule (lower share), 1 when it is the one to preempt from."""
    if a.zero_weight_borrows() and b.zero_weight_borrows():
        return (a.ratio > b.ratio) - (a.ratio < b.ratio)
    if a.zero_weight_borrows():
        return 1
    if b.zero_weight_borrows():
        return -1
    x, y = a.weighted(), b.weighted()
    return (x > y) - (x < y)


def lendable(parent: Node) -> dict[str, int]:
    """calculateLendable: per resource name, what parent could ever provide over every flavor the tree
    knows."""
    out: dict[str, int] = {}
    for fr in parent.root().subtree:
        out[fr[1]] = out.get(fr[1], 0) + potential_available(parent, fr)
    return out


def dominant_resource_share(node: Node, extra: dict[FR, int] | None = None) -> DRS:
    """The node's share, with `extra` usage added."""
    if node.parent is None:
        return DRS(weight=node.weight)
    extra = extra or {}
    borrowed: dict[str, int] = {}
    frs = []
    for fr, quota in node.subtree.items():
        amount = extra.get(fr, 0) + node.usage.get(fr, 0) - quota
        if amount > 0:
            borrowed[fr[1]] = borrowed.get(fr[1], 0) + amount
            frs.append(fr)
    if not borrowed:
        return DRS(weight=node.weight)
    can_lend = lendable(node.parent)
    ratio, dominant = 0.0, ""
    for name, amount in borrowed.items():
        if (lr := can_lend.get(name, 0)) > 0:
            r = float(amount) * 1000.0 / float(lr)
            if r > ratio or (r == ratio and name < dominant):
                ratio, dominant = r, name
    return DRS(node.weight, ratio, dominant, True, tuple(frs))
