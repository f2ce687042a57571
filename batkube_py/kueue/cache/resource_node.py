"""Quotas and usage of ClusterQueues and Cohorts: Kueue's pkg/cache/scheduler/resource_node.go.

A node is a ClusterQueue (a leaf) or a Cohort. Per flavor-resource `fr` = (flavor, resource), a
ClusterQueue's SubtreeQuota is its nominal quota; a Cohort's is its own nominal plus, from each child,
what the child may lend (its SubtreeQuota minus its localQuota, the part its lending limit keeps).
Usage is charged to the node first and only the excess over its local quota goes up to the parent.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

FR = tuple[str, str]  # (flavor, resource)


@dataclass(frozen=True)
class Quota:
    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(eq=False)
class Node:
    name: str
    is_cq: bool
    parent: Node | None = None
    quotas: dict[FR, Quota] = field(default_factory=dict)
    subtree: dict[FR, int] = field(default_factory=dict)
    usage: dict[FR, int] = field(default_factory=dict)
    child_cohorts: list[Node] = field(default_factory=list)
    child_cqs: list[Node] = field(default_factory=list)
    weight: float = 1.0  # spec.fairSharing.weight

    def path_to_root(self) -> Iterator[Node]:
        """The ancestors, parent first (PathParentToRoot)."""
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def root(self) -> Node:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def subtree_cqs(self) -> Iterator[Node]:
        if self.is_cq:
            yield self
            return
        for c in self.child_cohorts:
            yield from c.subtree_cqs()
        yield from self.child_cqs


def local_quota(node: Node, fr: FR) -> int:
    q = node.quotas.get(fr)
    if q is not None and q.lending_limit is not None:
        return max(0, node.subtree.get(fr, 0) - q.lending_limit)
    return 0


def local_available(node: Node, fr: FR) -> int:
    return max(0, local_quota(node, fr) - node.usage.get(fr, 0))


def available(node: Node, fr: FR) -> int:
    """What the node may still use of fr: its own unused local quota, plus what its parent has left,
    capped by its borrowing limit. Negative when over-admitted."""
    if node.parent is None:
        return node.subtree.get(fr, 0) - node.usage.get(fr, 0)
    parent_available = available(node.parent, fr)
    q = node.quotas.get(fr)
    if q is not None and q.borrowing_limit is not None:
        local = local_quota(node, fr)
        stored = node.subtree.get(fr, 0) - local
        used = max(0, node.usage.get(fr, 0) - local)
        parent_available = min(stored - used + q.borrowing_limit, parent_available)
    return local_available(node, fr) + parent_available


def potential_available(node: Node, fr: FR) -> int:
    """The most the node could ever use of fr (no usage anywhere), within its borrowing limit."""
    if node.parent is None:
        return node.subtree.get(fr, 0)
    out = local_quota(node, fr) + potential_available(node.parent, fr)
    q = node.quotas.get(fr)
    if q is not None and q.borrowing_limit is not None:
        out = min(node.subtree.get(fr, 0) + q.borrowing_limit, out)
    return out


def add_usage(node: Node, fr: FR, val: int) -> None:
    local = local_available(node, fr)
    node.usage[fr] = node.usage.get(fr, 0) + val
    if node.parent is not None and val > local:
        add_usage(node.parent, fr, val - local)


def remove_usage(node: Node, fr: FR, val: int) -> None:
    stored_in_parent = node.usage.get(fr, 0) - local_quota(node, fr)
    node.usage[fr] = node.usage.get(fr, 0) - val
    if stored_in_parent <= 0 or node.parent is None:
        return
    remove_usage(node.parent, fr, min(val, stored_in_parent))


def borrowing_with(node: Node, fr: FR, val: int) -> bool:
    """Whether using val more of fr takes the node over its (subtree) quota."""
    return node.usage.get(fr, 0) + val > node.subtree.get(fr, 0)


def borrowing(node: Node, fr: FR) -> bool:
    return borrowing_with(node, fr, 0)


def within_nominal(node: Node, frs: Iterable[FR]) -> bool:
    """IsWithinNominalInResources."""
    return all(node.usage.get(fr, 0) <= node.subtree.get(fr, 0) for fr in frs)


def fits_in_quota(node: Node, requests: dict[FR, int]) -> tuple[bool, dict[FR, int]]:
    """QuantitiesFitInQuota: whether requests fit this node's quota, and what remains for its parent."""
    fits = True
    remaining = {}
    for fr, v in requests.items():
        if node.usage.get(fr, 0) + v > node.subtree.get(fr, 0):
            fits = False
        remaining[fr] = max(0, v - local_available(node, fr))
    return fits, remaining


def node_height(cohort: Node) -> int:
    """getNodeHeight: the distance to the furthest leaf (a cohort of ClusterQueues only: 1)."""
    height = min(len(cohort.child_cohorts) + len(cohort.child_cqs), 1)
    for child in cohort.child_cohorts:
        height = max(height, node_height(child) + 1)
    return height


def lowest_subtree_that_fits(cq: Node, fr: FR, val: int) -> tuple[int, bool]:
    """FindHeightOfLowestSubtreeThatFits: the borrowing level of using val more of fr (0: within the
    ClusterQueue's own quota), and whether that subtree is smaller than the whole cohort tree."""
    if not (borrowing_with(cq, fr, val) and cq.parent is not None):
        return 0, cq.parent is not None
    remaining = val - local_available(cq, fr)
    tracking = cq
    for tracking in cq.path_to_root():
        if not borrowing_with(tracking, fr, remaining):
            return node_height(tracking), tracking.parent is not None
        remaining -= local_available(tracking, fr)
    return node_height(tracking), tracking.parent is not None


def update_tree(root: Node) -> None:
    """SubtreeQuota of every node under root, bottom-up (updateCohortResourceNode); usage is not
    touched: trees are built before any workload is admitted."""
    if root.is_cq:
        root.subtree = {fr: q.nominal for fr, q in root.quotas.items()}
        return
    root.subtree = {fr: q.nominal for fr, q in root.quotas.items()}
    for child in [*root.child_cohorts, *root.child_cqs]:
        update_tree(child)
        for fr, sub in child.subtree.items():
            root.subtree[fr] = root.subtree.get(fr, 0) + sub - local_quota(child, fr)
