"""The scheduling cycle: Kueue's pkg/scheduler/scheduler.go (schedule, nominate, processEntry,
makeClassicalIterator, requeueAndUpdate).

One cycle takes the head of every ClusterQueue, computes each one's assignment on a snapshot (flavors,
then preemption targets if it must preempt), orders them (no borrowing first, then higher priority,
then older; with fair sharing, the tournament of fair_sharing_iterator.py) and walks them: an entry that
still fits is admitted, or issues its preemptions and waits; one that needs preemption but found no
target reserves what it would take (unless its ClusterQueue can always reclaim), so later entries of the
cycle cannot take it. Entries not admitted are requeued.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from batkube_py.kueue.cache.snapshot import Cache, Snapshot
from batkube_py.kueue.queue import cluster_queue as cqq
from batkube_py.kueue.queue.manager import Manager
from batkube_py.kueue.scheduler import preemption
from batkube_py.kueue.scheduler.fair_sharing_iterator import fair_sharing_order
from batkube_py.kueue.scheduler.flavorassigner import Assignment, FlavorAssigner
from batkube_py.kueue.scheduler.modes import FIT, NO_FIT, PREEMPT
from batkube_py.kueue.workload import Workload

NOMINATED, SKIPPED, ASSUMED, NOT_NOMINATED = "nominated", "skipped", "assumed", ""


@dataclass
class Entry:
    wl: Workload
    assignment: Assignment
    targets: list[preemption.Target] = field(default_factory=list)
    status: str = NOT_NOMINATED
    reason: str = cqq.GENERIC  # RequeueReason
    message: str = ""

    @property
    def order(self) -> tuple:
        """makeClassicalIterator: lower borrowing level, higher priority, older (Kueue's sort is unstable
        there; the twin keeps submission order)."""
        return (self.assignment.borrowing, -self.wl.priority, self.wl.timestamp, self.wl.seq)


@dataclass
class CycleResult:
    admitted: list[Workload] = field(default_factory=list)
    preempted: list[preemption.Target] = field(default_factory=list)  # newly evicted this cycle
    entries: list[Entry] = field(default_factory=list)
    moved_inadmissible: int = 0


def assignments(wl: Workload, snap: Snapshot) -> tuple[Assignment, list[preemption.Target]]:
    """getAssignments: the flavor assignment and, if it must preempt, the targets (empty if none)."""
    a = FlavorAssigner(wl, snap).assign()
    if a.mode == PREEMPT:
        return a, preemption.get_targets(snap, wl, a.needs_preemption(), a.usage)
    return a, []


def can_always_reclaim(snap: Snapshot, cq: str) -> bool:
    """CanAlwaysReclaim: reclaimWithinCohort Any (a ClusterQueue without a cohort has nothing to reserve
    against)."""
    return snap.specs[cq].preemption.reclaim_within_cohort == "Any"


def reserve(entry: Entry, snap: Snapshot) -> dict:
    """quotaResourcesToReserve for an entry that must preempt but found no target: up to its nominal
    quota, or its borrowing limit when the assignment borrows."""
    node = snap.cqs[entry.wl.cluster_queue]
    out = {}
    for fr, v in entry.assignment.usage.items():
        q = node.quotas[fr]
        used = node.usage.get(fr, 0)
        if entry.assignment.borrowing > 0:
            out[fr] = v if q.borrowing_limit is None else min(v, q.nominal + q.borrowing_limit - used)
        else:
            out[fr] = max(0, min(v, q.nominal - used))
    return out


class Scheduler:
    def __init__(self, cache: Cache, queues: Manager):
        self.cache, self.queues = cache, queues
        self._admissions = 0

    def schedule(self, now: float) -> CycleResult:
        """One cycle."""
        result = CycleResult()
        heads = self.queues.heads()
        if not heads:
            return result
        snap = self.cache.snapshot()
        entries = [Entry(wl, *assignments(wl, snap)) for wl in heads]
        for e in entries:
            e.wl.last_tried = e.assignment.last_tried
            e.message = e.assignment.message
        if snap.fair_sharing:
            order: Iterable[Entry] = fair_sharing_order(entries, snap)
        else:
            order = sorted(entries, key=lambda e: e.order)
        preempted: dict[str, Workload] = {}
        for e in order:
            self._process(e, snap, preempted, result, now)
        result.entries = entries
        for e in entries:
            if e.status != ASSUMED:
                if e.status != NOT_NOMINATED and e.reason == cqq.GENERIC:
                    e.reason = cqq.FAILED_AFTER_NOMINATION
                e.wl.message = e.message
                if not self.queues.requeue(e.wl, e.reason):
                    result.moved_inadmissible += 1
        return result

    def _process(self, e: Entry, snap: Snapshot, preempted: dict, result: CycleResult, now: float) -> None:
        cq = e.wl.cluster_queue
        mode = e.assignment.mode
        if mode == NO_FIT:
            e.reason = cqq.NO_FIT
            return
        if mode == PREEMPT and not e.targets:
            e.reason = cqq.NO_CANDIDATES
            if not can_always_reclaim(snap, cq):
                snap.add_usage(cq, reserve(e, snap), e.assignment.tas)
            return
        if any(t.workload.name in preempted for t in e.targets):
            self._skip(e, "Workload has overlapping preemption targets with another workload")
            return
        revert = snap.simulate_removal([*preempted.values(), *(t.workload for t in e.targets)])
        fits = snap.fits(cq, e.assignment.usage, e.assignment.tas)
        revert()
        if not fits:
            self._skip(e, "Workload no longer fits after processing another workload")
            return
        preempted.update((t.workload.name, t.workload) for t in e.targets)
        snap.add_usage(cq, e.assignment.usage, e.assignment.tas)
        if mode == PREEMPT:
            e.wl.last_tried = None
            fresh = [t for t in e.targets if not t.workload.evicted]
            for t in fresh:
                t.workload.evicted = True
            result.preempted.extend(fresh)
            e.reason = cqq.PENDING_PREEMPTION
            e.message += f". Pending the preemption of {len(e.targets)} workload(s)"
            return
        e.status = ASSUMED
        self._admit(e.wl, e.assignment, now)
        result.admitted.append(e.wl)

    def _skip(self, e: Entry, why: str) -> None:
        e.status, e.message = SKIPPED, why
        e.wl.last_tried = None

    def _admit(self, wl: Workload, a: Assignment, now: float) -> None:
        self._admissions += 1
        wl.usage = dict(a.usage)
        wl.flavors = {r: f for r, (f, _, _) in a.flavors.items()}
        wl.frs = frozenset((f, r) for r, f in wl.flavors.items())
        wl.tas = a.tas
        wl.admitted_at, wl.admission_seq, wl.message = now, self._admissions, ""
        self.queues.delete(wl)
        self.cache.admit(wl)


__all__ = ["FIT", "Scheduler", "CycleResult"]
