"""Classical preemption: Kueue's pkg/scheduler/preemption (preemption.go: classicalPreemptions,
classical/hierarchical_preemption.go, classical/candidate_generator.go, common/ordering.go,
preemption_oracle.go).

Candidates are admitted workloads using a flavor-resource that needs preemption: from the preemptor's
ClusterQueue (withinClusterQueue) and from ClusterQueues of its cohort tree above their quota
(reclaimWithinCohort, borrowWithinCohort). They are removed one by one, in CandidatesOrdering, until the
preemptor fits; then those not needed are added back, last removed first.
"""

from __future__ import annotations

from dataclasses import dataclass

from batkube_py.kueue.cache import resource_node as rn
from batkube_py.kueue.cache.snapshot import Snapshot
from batkube_py.kueue.workload import Workload

IN_CQ, RECLAIM, RECLAIM_WHILE_BORROWING = (
    "InClusterQueue",
    "InCohortReclamation",
    "InCohortReclaimWhileBorrowing",
)
NEVER, WITHIN_CQ, HIERARCHICAL, WITHOUT_BORROWING, WHILE_BORROWING = range(5)
_REASON = {WITHIN_CQ: IN_CQ, HIERARCHICAL: RECLAIM, WITHOUT_BORROWING: RECLAIM,
           WHILE_BORROWING: RECLAIM_WHILE_BORROWING}  # fmt: skip


@dataclass(frozen=True)
class Target:
    workload: Workload
    reason: str


@dataclass
class _Candidate:
    wl: Workload
    lca: rn.Node | None
    variant: int


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


class _Context:
    def __init__(self, snap: Snapshot, wl: Workload, frs: set[rn.FR], requests: dict[rn.FR, int]):
        self.snap, self.wl, self.frs, self.requests = snap, wl, frs, requests
        self.spec = snap.specs[wl.cluster_queue]
        self.node = snap.cqs[wl.cluster_queue]
        bwc = self.spec.preemption.borrow_within_cohort
        self.borrow_forbidden = bwc.policy == "Never"
        self.threshold = bwc.max_priority_threshold

    def variant(self, cand: Workload, advantage: bool) -> int:
        """classifyPreemptionVariant for a candidate that uses the resources and satisfies the policy."""
        if cand.cluster_queue == self.wl.cluster_queue:
            return WITHIN_CQ
        if advantage:
            return HIERARCHICAL
        if self.borrow_forbidden or cand.priority >= self.wl.priority:
            return WITHOUT_BORROWING
        if self.threshold is not None and cand.priority > self.threshold:
            return WITHOUT_BORROWING
        return WHILE_BORROWING

    def from_cq(self, node: rn.Node, lca: rn.Node | None, advantage: bool) -> list[_Candidate]:
        p = self.spec.preemption
        policy = p.within_cluster_queue if node.name == self.wl.cluster_queue else p.reclaim_within_cohort
        if policy == "Never":
            return []
        admitted = self.snap.workloads[node.name].values()
        if policy == "LowerPriority":  # the common case, without a call per admitted workload
            below = self.wl.priority
            eligible = [wl for wl in admitted if wl.priority < below]
        else:
            eligible = [wl for wl in admitted if satisfies_policy(policy, self.wl, wl)]
        using = [wl for wl in eligible if not self.frs.isdisjoint(wl.frs)]
        return [_Candidate(wl, lca, self.variant(wl, advantage)) for wl in using]

    def in_subtree(self, current: rn.Node, root: rn.Node, skip: rn.Node | None, adv: bool, out: list) -> None:
        for child in current.child_cohorts:
            if child is skip or rn.within_nominal(child, self.frs):
                continue
            self.in_subtree(child, root, skip, adv, out)
        for child in current.child_cqs:
            if child is not self.node and not rn.within_nominal(child, self.frs):
                out.extend(self.from_cq(child, root, adv))

    def candidates(self) -> tuple[list[_Candidate], bool, bool]:
        """The ordered candidates, and whether none is from another queue / for hierarchical reclaim."""
        same = (
            []
            if self.spec.preemption.within_cluster_queue == "Never"
            else self.from_cq(self.node, None, False)
        )
        hierarchy: list[_Candidate] = []
        by_priority: list[_Candidate] = []
        if self.node.parent is not None and self.spec.preemption.reclaim_within_cohort != "Never":
            advantage, remaining = rn.fits_in_quota(self.node, self.requests)
            previous = None
            for root in self.node.path_to_root():
                self.in_subtree(root, root, previous, advantage, hierarchy if advantage else by_priority)
                fits, remaining = rn.fits_in_quota(root, remaining)
                advantage = advantage or fits
                previous = root
        cq = self.wl.cluster_queue
        lists = [sorted(x, key=lambda c: ordering_key(c.wl, cq)) for x in (hierarchy, by_priority, same)]
        ordered = [c for lst in lists for c in lst if c.wl.evicted] + [
            c for lst in lists for c in lst if not c.wl.evicted
        ]
        return ordered, not hierarchy and not by_priority, not hierarchy

    def valid(self, cand: _Candidate, borrow: bool) -> bool:
        if cand.wl.cluster_queue == self.wl.cluster_queue:
            return True
        if borrow and cand.variant == WITHOUT_BORROWING:
            return False
        node = self.snap.cqs[cand.wl.cluster_queue]
        if rn.within_nominal(node, self.frs):
            return False
        for ancestor in node.path_to_root():
            if ancestor is cand.lca:
                break
            if rn.within_nominal(ancestor, self.frs):
                return False
        return True

    def fits(self, borrow: bool) -> bool:
        for fr, v in self.requests.items():
            if not borrow and rn.borrowing_with(self.node, fr, v):
                return False
            if v > rn.available(self.node, fr):
                return False
        return True

    def under_nominal(self) -> bool:
        return all(self.node.usage.get(fr, 0) < self.node.quotas[fr].nominal for fr in self.frs)


def get_targets(snap: Snapshot, wl: Workload, frs: set[rn.FR], requests: dict[rn.FR, int]) -> list[Target]:
    """classicalPreemptions: the minimal set of workloads to evict so that wl fits, or none."""
    ctx = _Context(snap, wl, frs, requests)
    ordered, none_other, none_hierarchical = ctx.candidates()
    if none_other or (ctx.borrow_forbidden and not ctx.under_nominal()):
        attempts = [True]
    elif ctx.borrow_forbidden and none_hierarchical:
        attempts = [False, True]
    else:
        attempts = [True, False]
    for borrow in attempts:
        targets: list[Target] = []
        for cand in ordered:
            if not ctx.valid(cand, borrow):
                continue
            snap.remove_workload(cand.wl)
            targets.append(Target(cand.wl, _REASON[cand.variant]))
            if ctx.fits(borrow):
                targets = _fill_back(ctx, targets, borrow)
                _restore(snap, targets)
                return targets
        _restore(snap, targets)
    return []


def _fill_back(ctx: _Context, targets: list[Target], borrow: bool) -> list[Target]:
    for i in range(len(targets) - 2, -1, -1):
        ctx.snap.add_workload(targets[i].workload)
        if ctx.fits(borrow):
            targets[i] = targets[-1]
            targets.pop()
        else:
            ctx.snap.remove_workload(targets[i].workload)
    return targets


def _restore(snap: Snapshot, targets: list[Target]) -> None:
    for t in targets:
        snap.add_workload(t.workload)


def simulate(snap: Snapshot, wl: Workload, fr: rn.FR, val: int) -> tuple[str, int]:
    """The preemption oracle for one flavor-resource: ("NoCandidates" | "Preempt" | "Reclaim", borrowing
    level once the targets are gone)."""
    node = snap.cqs[wl.cluster_queue]
    targets = get_targets(snap, wl, {fr}, {fr: val})
    if not targets:
        return "NoCandidates", rn.lowest_subtree_that_fits(node, fr, val)[0]
    revert = snap.simulate_removal(t.workload for t in targets)
    borrow = rn.lowest_subtree_that_fits(node, fr, val)[0]
    revert()
    same = any(t.workload.cluster_queue == wl.cluster_queue for t in targets)
    return ("Preempt" if same else "Reclaim"), borrow
