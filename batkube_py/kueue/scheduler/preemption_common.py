"""What classical and fair-sharing preemption share: Kueue's pkg/scheduler/preemption/common (ordering,
preemption policy) and the parts of preemption.go both strategies call (workloadFits, fillBackWorkloads,
restoreSnapshot)."""

from __future__ import annotations

from dataclasses import dataclass

from batkube_py.kueue.cache import resource_node as rn
from batkube_py.kueue.cache.snapshot import Snapshot
from batkube_py.kueue.workload import Workload

IN_CQ, RECLAIM, RECLAIM_WHILE_BORROWING, FAIR_SHARING = (
    "InClusterQueue",
    "InCohortReclamation",
    "InCohortReclaimWhileBorrowing",
    "InCohortFairSharing",
)


@dataclass(frozen=True)
class Target:
    workload: Workload
    reason: str


def ordering_key(wl: Workload, cq: str) -> tuple:
    """CandidatesOrdering: already evicted first, other ClusterQueues first, lower priority first, the
    most recently admitted first (Kueue's last tie, a random UID, is the twin's name order)."""
    return (not wl.evicted, wl.cluster_queue == cq, wl.priority, -(wl.admitted_at or 0.0), -wl.admission_seq,
            wl.name)  # fmt: skip


def satisfies_policy(policy: str, preemptor: Workload, candidate: Workload) -> bool:
    """SatisfiesPreemptionPolicy (the negation of priorityTooHighToPreempt)."""
    if policy == "LowerPriority":
        return preemptor.priority > candidate.priority
    if policy == "LowerOrNewerEqualPriority":
        newer = preemptor.priority == candidate.priority and preemptor.timestamp < candidate.timestamp
        return preemptor.priority > candidate.priority or newer
    return policy == "Any"


class PreemptionCtx:
    """preemptionCtx: the preemptor, its ClusterQueue in the snapshot, the flavor-resources that need
    preemption and what it requests."""

    def __init__(self, snap: Snapshot, wl: Workload, frs: set[rn.FR], requests: dict[rn.FR, int]):
        self.snap, self.wl, self.frs, self.requests = snap, wl, frs, requests
        self.spec = snap.specs[wl.cluster_queue]
        self.node = snap.cqs[wl.cluster_queue]

    def fits(self, borrow: bool) -> bool:
        """workloadFits."""
        for fr, v in self.requests.items():
            if not borrow and rn.borrowing_with(self.node, fr, v):
                return False
            if v > rn.available(self.node, fr):
                return False
        return True

    def fill_back(self, targets: list[Target], borrow: bool) -> list[Target]:
        """fillBackWorkloads: put back, last removed first, the targets the preemptor does not need."""
        for i in range(len(targets) - 2, -1, -1):
            self.snap.add_workload(targets[i].workload)
            if self.fits(borrow):
                targets[i] = targets[-1]
                targets.pop()
            else:
                self.snap.remove_workload(targets[i].workload)
        return targets

    def restore(self, targets: list[Target]) -> None:
        for t in targets:
            self.snap.add_workload(t.workload)
