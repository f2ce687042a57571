"""Preemption: Kueue's pkg/scheduler/preemption (preemption.go: getTargets, classicalPreemptions,
classical/hierarchical_preemption.go, classical/candidate_generator.go, preemption_oracle.go); fair
sharing's strategies are in fairsharing.py.

Candidates are admitted workloads using a flavor-resource that needs preemption: from the preemptor's
ClusterQueue (withinClusterQueue) and from ClusterQueues of its cohort tree above their quota
(reclaimWithinCohort, borrowWithinCohort). They are removed one by one, in CandidatesOrdering, until the
preemptor fits; then those not needed are added back, last removed first.
"""

from __future__ import annotations

from dataclasses import dataclass

from batkube_py.kueue.cache import resource_node as rn
from batkube_py.kueue.cache.snapshot import Snapshot
from batkube_py.kueue.scheduler.fairsharing import fair_preemptions
from batkube_py.kueue.scheduler.preemption_common import (
    IN_CQ,
    RECLAIM,
    RECLAIM_WHILE_BORROWING,
    PreemptionCtx,
    Target,
    ordering_key,
    satisfies_policy,
)
from batkube_py.kueue.workload import Workload

NEVER, WITHIN_CQ, HIERARCHICAL, WITHOUT_BORROWING, WHILE_BORROWING = range(5)
_REASON = {WITHIN_CQ: IN_CQ, HIERARCHICAL: RECLAIM, WITHOUT_BORROWING: RECLAIM,
           WHILE_BORROWING: RECLAIM_WHILE_BORROWING}  # fmt: skip


@dataclass
class _Candidate:
    wl: Workload
    lca: rn.Node | None
    variant: int


class _Context(PreemptionCtx):
    def __init__(self, snap: Snapshot, wl: Workload, frs: set[rn.FR], requests: dict[rn.FR, int]):
        super().__init__(snap, wl, frs, requests)
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

    def under_nominal(self) -> bool:
        return all(self.node.usage.get(fr, 0) < self.node.quotas[fr].nominal for fr in self.frs)


def get_targets(snap: Snapshot, wl: Workload, frs: set[rn.FR], requests: dict[rn.FR, int]) -> list[Target]:
    """getTargets: the workloads to evict so that wl fits (none if it cannot), by fair sharing's
    strategies when it is on, else classically."""
    if snap.fair_sharing:
        return fair_preemptions(PreemptionCtx(snap, wl, frs, requests), snap.fair_sharing)
    return classical_preemptions(_Context(snap, wl, frs, requests))


def classical_preemptions(ctx: _Context) -> list[Target]:
    """classicalPreemptions: the minimal set of workloads to evict so that wl fits, or none."""
    snap = ctx.snap
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
                targets = ctx.fill_back(targets, borrow)
                ctx.restore(targets)
                return targets
        ctx.restore(targets)
    return []


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
