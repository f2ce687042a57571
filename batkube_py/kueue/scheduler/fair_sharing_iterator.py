"""The order of a cycle's entries under fair sharing: Kueue's pkg/scheduler/fair_sharing_iterator.go.

Each pop takes a ClusterQueue that still has an entry; without a cohort its entry comes next. Otherwise a
tournament runs over its whole cohort tree, on the snapshot as the cycle has changed it so far: every
entry's share is computed with its own usage added, at every level from its ClusterQueue to the root; each
cohort then nominates the best of its children's nominees, and the root's nominee comes next. Better is:
not borrowing at that level on the flavors it asks for (FairSharingPrioritizeNonBorrowing), then the lower
weighted share, then the higher priority (PrioritySortingWithinCohort), then the older queue-order
timestamp. Kueue walks its ClusterQueues and a cohort's children as Go maps and sets; the twin in name
order, which only matters between entries equal on all of these (the real setup's timestamps never are).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from batkube_py.kueue.cache import fair_sharing as fs
from batkube_py.kueue.cache.resource_node import FR, Node, add_usage, remove_usage
from batkube_py.kueue.cache.snapshot import Snapshot

if TYPE_CHECKING:
    from batkube_py.kueue.scheduler.scheduler import Entry


class _Comparer:
    """entryComparer: the shares an entry's ClusterQueue and ancestors would have with it admitted, keyed
    by (the cohort where they are compared, workload)."""

    def __init__(self) -> None:
        self.drs: dict[tuple[str, str], fs.DRS] = {}
        self.requested: dict[str, dict[FR, int]] = {}

    def compute(self, root: Node, entries: dict[str, Entry]) -> None:
        """computeDRS."""
        self.drs, self.requested = {}, {}
        for cq in root.subtree_cqs():
            e = entries.get(cq.name)
            if e is None:
                continue
            usage = e.assignment.usage
            for fr, v in usage.items():
                add_usage(cq, fr, v)
            self.requested[e.wl.name] = usage
            share = fs.dominant_resource_share(cq)
            for ancestor in cq.path_to_root():
                self.drs[(ancestor.name, e.wl.name)] = share
                share = fs.dominant_resource_share(ancestor)
            for fr, v in usage.items():
                remove_usage(cq, fr, v)

    def less(self, a: Entry, b: Entry, cohort: str) -> bool:
        da, db = self.drs[(cohort, a.wl.name)], self.drs[(cohort, b.wl.name)]
        a_borrows = da.borrowing_on(self.requested[a.wl.name])
        b_borrows = db.borrowing_on(self.requested[b.wl.name])
        if a_borrows != b_borrows:
            return not a_borrows
        if c := fs.compare(da, db):
            return c < 0
        if a.wl.priority != b.wl.priority:
            return a.wl.priority > b.wl.priority
        return (a.wl.timestamp, a.wl.seq) < (b.wl.timestamp, b.wl.seq)


def _tournament(cohort: Node, cmp: _Comparer, entries: dict[str, Entry]) -> Entry | None:
    """runTournament: the cohort's nominee among its child cohorts' nominees and its ClusterQueues'
    entries."""
    candidates = [c for child in cohort.child_cohorts if (c := _tournament(child, cmp, entries)) is not None]
    candidates += [entries[cq.name] for cq in cohort.child_cqs if cq.name in entries]
    if not candidates:
        return None
    best = candidates[0]
    for current in candidates[1:]:
        if cmp.less(current, best, cohort.name):
            best = current
    return best


def fair_sharing_order(entries: list[Entry], snap: Snapshot) -> Iterator[Entry]:
    """The entries one by one, each chosen on the snapshot as the entries before it left it."""
    remaining = {e.wl.cluster_queue: e for e in sorted(entries, key=lambda e: e.wl.cluster_queue)}
    cmp = _Comparer()
    while remaining:
        node = snap.cqs[next(iter(remaining))]
        if node.parent is None:
            yield remaining.pop(node.name)
            continue
        root = node.root()
        cmp.compute(root, remaining)
        winner = _tournament(root, cmp, remaining)
        assert winner is not None
        del remaining[winner.wl.cluster_queue]
        yield winner
