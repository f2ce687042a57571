"""Preemption under fair sharing: Kueue's pkg/scheduler/preemption/fairsharing (ordering.go, target.go,
strategy.go, least_common_ancestor.go) and preemption.go's fairPreemptions.

Candidates are the preemptor's ClusterQueue's workloads its withinClusterQueue policy allows, and the
workloads, allowed by reclaimWithinCohort, of every ClusterQueue of its cohort tree that borrows on a
flavor-resource needing preemption; all sorted by CandidatesOrdering. With the preemptor's usage added,
the ClusterQueue to take a workload from is found from the root down, always in the child with the
highest share (children neither borrowing nor on the preemptor's path are pruned). From its own
ClusterQueue, or while it stays within its nominal quota (FairSharingPreemptWithinNominal), the preemptor
takes the next candidate. Otherwise a strategy compares shares at the two children of the least common
ancestor: LessThanOrEqualToFinalShare takes a workload if the preemptor's side, with it, would have a
share no higher than the target's side without that workload; LessThanInitialShare if strictly lower than
the target's side now. The second strategy retries, one workload per ClusterQueue, the candidates the
first turned down. Once the preemptor fits, the targets it does not need are put back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from batkube_py.kueue.cache import fair_sharing as fs
from batkube_py.kueue.cache import resource_node as rn
from batkube_py.kueue.scheduler.preemption_common import (
    FAIR_SHARING,
    IN_CQ,
    RECLAIM,
    PreemptionCtx,
    Target,
    ordering_key,
    satisfies_policy,
)
from batkube_py.kueue.workload import Workload

FINAL, INITIAL = "LessThanOrEqualToFinalShare", "LessThanInitialShare"
Strategy = Callable[[fs.DRS, fs.DRS, fs.DRS], bool]  # (preemptor new, target old, target new)
STRATEGIES: dict[str, Strategy] = {
    FINAL: lambda new, _old, target_new: fs.compare(new, target_new) <= 0,
    INITIAL: lambda new, target_old, _new: fs.compare(new, target_old) < 0,
}


def _almost_lca(cq: rn.Node, lca: rn.Node) -> rn.Node:
    """getAlmostLCA: the node on cq's path whose parent is lca."""
    node = cq
    while node.parent is not lca:
        assert node.parent is not None
        node = node.parent
    return node


class TargetOrdering:
    """TargetClusterQueueOrdering: which ClusterQueue the next victim comes from."""

    def __init__(self, ctx: PreemptionCtx, candidates: list[Workload]):
        self.ctx = ctx
        self.preemptor = ctx.node
        self.ancestors = {id(a) for a in ctx.node.path_to_root()}
        self.targets: dict[str, list[Workload]] = {}
        for c in candidates:
            self.targets.setdefault(c.cluster_queue, []).append(c)
        self.pruned_cqs: set[str] = set()
        self.pruned_cohorts: set[str] = set()

    def has_workload(self, cq: rn.Node) -> bool:
        return bool(self.targets.get(cq.name))

    def pop(self, cq: rn.Node) -> Workload:
        return self.targets[cq.name].pop(0)

    def drop(self, cq: rn.Node) -> None:
        self.pruned_cqs.add(cq.name)

    def __iter__(self) -> Iterator[rn.Node]:
        """Iter: re-evaluated after each victim, on the snapshot as it then is."""
        if self.preemptor.parent is None:
            while self.has_workload(self.preemptor):
                yield self.preemptor
            return  # Kueue v0.17.0 goes on to dereference the missing cohort here
        root = self.preemptor.root()
        while root.name not in self.pruned_cohorts:
            target = self._next(root)
            if target is not None:
                yield target

    def _next(self, cohort: rn.Node) -> rn.Node | None:
        """nextTarget."""
        best_cq, best_cq_drs = None, fs.NEGATIVE
        for cq in cohort.child_cqs:
            if cq.name in self.pruned_cqs:
                continue
            drs = fs.dominant_resource_share(cq)
            c = fs.compare(drs, best_cq_drs)
            if (not drs.borrowing and cq is not self.preemptor) or not self.has_workload(cq):
                self.pruned_cqs.add(cq.name)
            elif c == 0 and best_cq is not None:
                cq_key = ordering_key(self.targets[cq.name][0], self.preemptor.name)
                if cq_key < ordering_key(self.targets[best_cq.name][0], self.preemptor.name):
                    best_cq = cq
            elif c == 1:
                best_cq, best_cq_drs = cq, drs
        best_cohort, best_cohort_drs = None, fs.NEGATIVE
        for child in cohort.child_cohorts:
            if child.name in self.pruned_cohorts:
                continue
            drs = fs.dominant_resource_share(child)
            if not drs.borrowing and id(child) not in self.ancestors:
                self.pruned_cohorts.add(child.name)
            elif fs.compare(drs, best_cohort_drs) >= 0:
                best_cohort, best_cohort_drs = child, drs
        if best_cohort is None and best_cq is None:
            self.pruned_cohorts.add(cohort.name)
            return None
        if best_cohort is not None and fs.compare(best_cohort_drs, best_cq_drs) >= 0:
            return self._next(best_cohort)
        return best_cq

    def shares(self, target: rn.Node) -> tuple[fs.DRS, fs.DRS]:
        """ComputeShares: (preemptor's side, target's side) below their least common ancestor."""
        lca = next(a for a in target.path_to_root() if id(a) in self.ancestors)
        preemptor_side, target_side = _almost_lca(self.preemptor, lca), _almost_lca(target, lca)
        return fs.dominant_resource_share(preemptor_side), fs.dominant_resource_share(target_side)

    def share_after_removal(self, target: rn.Node, wl: Workload) -> fs.DRS:
        """ComputeTargetShareAfterRemoval."""
        usage = wl.usage or {}
        for fr, v in usage.items():
            rn.remove_usage(target, fr, v)
        drs = self.shares(target)[1]
        for fr, v in usage.items():
            rn.add_usage(target, fr, v)
        return drs


def find_candidates(ctx: PreemptionCtx) -> list[Workload]:
    """findCandidates."""
    p, wl, frs = ctx.spec.preemption, ctx.wl, ctx.frs

    def allowed(cq: str, policy: str) -> list[Workload]:
        return [w for w in ctx.snap.workloads[cq].values()
                if satisfies_policy(policy, wl, w) and not frs.isdisjoint(w.frs)]  # fmt: skip

    out = allowed(wl.cluster_queue, p.within_cluster_queue) if p.within_cluster_queue != "Never" else []
    if ctx.node.parent is not None and p.reclaim_within_cohort != "Never":
        for cq in ctx.node.root().subtree_cqs():
            if cq is not ctx.node and any(rn.borrowing(cq, fr) for fr in frs):
                out += allowed(cq.name, p.reclaim_within_cohort)
    return out


def _fits(ctx: PreemptionCtx) -> bool:
    """workloadFitsForFairSharing: the preemptor's usage, added for the shares, taken out to check."""
    for fr, v in ctx.requests.items():
        rn.remove_usage(ctx.node, fr, v)
    fits = ctx.fits(True)
    for fr, v in ctx.requests.items():
        rn.add_usage(ctx.node, fr, v)
    return fits


def _take(ctx: PreemptionCtx, targets: list[Target], wl: Workload, reason: str) -> bool:
    ctx.snap.remove_workload(wl)
    targets.append(Target(wl, reason))
    return _fits(ctx)


def _first(ctx: PreemptionCtx, candidates: list[Workload], strategy: Strategy):
    """runFirstFsStrategy: (fits, targets, candidates to retry)."""
    ordering = TargetOrdering(ctx, candidates)
    targets: list[Target] = []
    retry: list[Workload] = []
    within_nominal = not any(rn.borrowing(ctx.node, fr) for fr in ctx.frs)
    for cq in ordering:
        if cq is ctx.node or within_nominal:
            if _take(ctx, targets, ordering.pop(cq), IN_CQ if cq is ctx.node else RECLAIM):
                return True, targets, []
            continue
        new, old = ordering.shares(cq)
        while ordering.has_workload(cq):
            wl = ordering.pop(cq)
            if strategy(new, old, ordering.share_after_removal(cq, wl)):
                if _take(ctx, targets, wl, FAIR_SHARING):
                    return True, targets, []
                break
            retry.append(wl)
    return False, targets, retry


def _second(ctx: PreemptionCtx, retry: list[Workload], targets: list[Target]) -> bool:
    """runSecondFsStrategy: LessThanInitialShare, one workload per ClusterQueue."""
    ordering = TargetOrdering(ctx, retry)
    for cq in ordering:
        new, old = ordering.shares(cq)
        if STRATEGIES[INITIAL](new, old, old) and _take(ctx, targets, ordering.pop(cq), FAIR_SHARING):
            return True
        ordering.drop(cq)
    return False


def fair_preemptions(ctx: PreemptionCtx, strategies: tuple[str, ...]) -> list[Target]:
    """fairPreemptions: the workloads to evict so that the preemptor fits, or none."""
    candidates = find_candidates(ctx)
    if not candidates:
        return []
    candidates.sort(key=lambda w: ordering_key(w, ctx.wl.cluster_queue))
    for fr, v in ctx.requests.items():
        rn.add_usage(ctx.node, fr, v)
    fits, targets, retry = _first(ctx, candidates, STRATEGIES[strategies[0]])
    if not fits and len(strategies) > 1:
        fits = _second(ctx, retry, targets)
    for fr, v in ctx.requests.items():
        rn.remove_usage(ctx.node, fr, v)
    if not fits:
        ctx.restore(targets)
        return []
    targets = ctx.fill_back(targets, True)
    ctx.restore(targets)
    return targets
