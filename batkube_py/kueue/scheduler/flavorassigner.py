"""Flavor assignment: Kueue's pkg/scheduler/flavorassigner/flavorassigner.go, for one PodSet.

For each resource group the workload needs, the ClusterQueue's flavors are walked in their order from
where the last attempt stopped (flavor fungibility). A flavor whose taints the pod does not tolerate, or
whose node labels its nodeSelector / required node affinity (on the group's label keys) excludes, is
skipped; otherwise each resource gets a mode: fit, preempt or reclaim (the preemption oracle found
targets), no candidates, or no fit, with a borrowing level. whenCanBorrow / whenCanPreempt decide whether
to stop at a flavor or look further; the best flavor seen is kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubernetes import client

from batkube_py.kueue.cache import resource_node as rn
from batkube_py.kueue.cache.snapshot import ClusterQueueSpec, Flavor, ResourceGroup, Snapshot
from batkube_py.kueue.cache.tas import requirement_ok
from batkube_py.kueue.scheduler import preemption, tas_flavorassigner
from batkube_py.kueue.scheduler.modes import FIT, NO_FIT, PREEMPT
from batkube_py.kueue.workload import TASUsage, Workload
from batkube_py.quantities import kueue_text
from batkube_py.scheduler.plugins.helpers import DO_NOT_SCHEDULE_EFFECTS, first_untolerated

P_NO_FIT, P_NO_CANDIDATES, P_PREEMPT, P_RECLAIM, P_FIT = range(5)
_ORACLE = {"NoCandidates": P_NO_CANDIDATES, "Preempt": P_PREEMPT, "Reclaim": P_RECLAIM}
WORST, BEST = (P_NO_FIT, 1 << 30), (P_FIT, 0)
# how Kueue's "Flavors considered" names a flavor's representative mode (its PreemptionPossibility if any)
MODE_NAMES = {P_NO_FIT: "NoFit", P_NO_CANDIDATES: "NoCandidates", P_PREEMPT: "Preempt", P_RECLAIM: "Reclaim",
              P_FIT: "Fit"}  # fmt: skip


@dataclass
class Assignment:
    """One workload's flavors: resource → (flavor, mode, borrowing level)."""

    flavors: dict[str, tuple[str, int, int]] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    last_tried: dict[str, int] = field(default_factory=dict)
    usage: dict[rn.FR, int] = field(default_factory=dict)
    tas: TASUsage | None = None  # the topology placement on its TAS flavor (topologyAssignment)
    # FlavorAssignmentAttempts: each flavor tried, as (flavor, mode, borrowing level, its reasons)
    considered: list[tuple[str, str, int, tuple[str, ...]]] = field(default_factory=list)

    failed: bool = False  # a resource group found no flavor (or a resource has none)

    @property
    def mode(self) -> int:
        """RepresentativeMode: nothing requested fits; a group without a flavor is no fit."""
        if self.failed:
            return NO_FIT
        if not self.reasons:
            return FIT
        return min(m for _, m, _ in self.flavors.values())

    @property
    def borrowing(self) -> int:
        return max((b for *_, b in self.flavors.values()), default=0)

    def needs_preemption(self) -> set[rn.FR]:
        return {(f, r) for r, (f, m, _) in self.flavors.items() if m == PREEMPT}

    @property
    def message(self) -> str:
        return (
            ""
            if self.mode == FIT
            else "couldn't assign flavors to pod set main: " + ", ".join(sorted(self.reasons))
        )


def is_preferred(a: tuple[int, int], b: tuple[int, int], preference: str | None) -> bool:
    """Whether granular mode a = (preemption mode, borrowing level) beats b."""
    if a[0] == P_NO_FIT:
        return False
    if b[0] == P_NO_FIT:
        return True
    if preference == "PreemptionOverBorrowing":
        return a[1] < b[1] if a[1] != b[1] else a[0] > b[0]
    return a[0] > b[0] if a[0] != b[0] else a[1] < b[1]


def should_try_next(mode: tuple[int, int], spec: ClusterQueueSpec) -> bool:
    if mode[0] in (P_NO_FIT, P_NO_CANDIDATES):
        return True
    f = spec.fungibility
    if mode[0] in (P_PREEMPT, P_RECLAIM) and f.when_can_preempt == "TryNextFlavor":
        return True
    return mode[1] > 0 and f.when_can_borrow == "TryNextFlavor"


def selector_matches(pod: client.V1Pod, keys: frozenset[str], labels: dict[str, str]) -> bool:
    """flavorSelector: the pod's nodeSelector and required node affinity, on `keys` only."""
    spec = pod.spec
    if any(labels.get(k) != v for k, v in (spec.node_selector or {}).items() if k in keys):
        return False
    na = spec.affinity.node_affinity if spec.affinity is not None else None
    required = na.required_during_scheduling_ignored_during_execution if na is not None else None
    if required is None:
        return True
    terms = []
    for term in required.node_selector_terms or []:
        exprs = [e for e in term.match_expressions or [] if e.key in keys]
        if not exprs:
            return True  # a term left empty matches any flavor
        terms.append(exprs)
    return not terms or any(all(requirement_ok(labels, e) for e in exprs) for exprs in terms)


def flavor_problem(pod: client.V1Pod, flavor: Flavor | None, group: ResourceGroup, name: str) -> str | None:
    if flavor is None:
        return f"flavor {name} not found"
    tolerations = [*(pod.spec.tolerations or []), *flavor.tolerations]
    taint = first_untolerated(list(flavor.taints), tolerations, DO_NOT_SCHEDULE_EFFECTS)
    if taint is not None:
        return f"untolerated taint {taint.key} in flavor {name}"
    if not selector_matches(pod, group.label_keys, flavor.node_labels):
        return f"flavor {name} doesn't match node affinity"
    return None


class FlavorAssigner:
    def __init__(self, wl: Workload, snap: Snapshot):
        self.wl, self.snap = wl, snap
        self.spec = snap.specs[wl.cluster_queue]
        self.node = snap.cqs[wl.cluster_queue]

    def assign(self) -> Assignment:
        out = Assignment()
        requests = self.wl.requests(self.spec.covers_pods)
        for res in sorted(requests, key=_resource_order(self.spec)):
            if res in out.flavors:
                continue
            group = self.spec.group_of(res)
            if group is None:
                if requests[res] == 0:
                    continue
                return Assignment(reasons=[f"resource {res} unavailable in ClusterQueue"], failed=True)
            flavors, reasons, tried, considered = self._find(
                group, {r: requests[r] for r in group.covered if r in requests}
            )
            out.reasons += reasons
            out.considered += considered
            if not flavors:
                return Assignment(reasons=out.reasons, failed=True, considered=out.considered)
            out.flavors.update(flavors)
            out.last_tried.update({r: tried for r in flavors})
        for res, (flavor, _, _) in out.flavors.items():
            out.usage[(flavor, res)] = out.usage.get((flavor, res), 0) + requests[res]
        tas_flavorassigner.place(out, self.wl, self.spec, self.snap)
        return out

    def _find(self, group: ResourceGroup, requests: dict[str, int]) -> tuple[dict, list[str], int, list]:
        """findFlavorForPodSets: (resource → (flavor, mode, borrow), reasons, LastTriedFlavorIdx, the
        flavors considered)."""
        reasons: list[str] = []
        considered: list[tuple[str, str, int, tuple[str, ...]]] = []
        best: dict = {}
        best_mode = WORST
        preference = self.spec.fungibility.preference
        start = min((self.wl.next_flavor(r) for r in requests), default=0)
        attempted = -1
        for idx in range(start, len(group.flavors)):
            attempted = idx
            name = group.flavors[idx]
            flavor = self.snap.flavors.get(name)
            why = flavor and tas_flavorassigner.flavor_problem(self.wl, self.spec, flavor, group, self.snap)
            if (why := why or flavor_problem(self.wl.template, flavor, group, name)) is not None:
                reasons.append(why)
                considered.append((name, "NoFit", 0, (why,)))
                continue
            assignments = {}
            first = len(reasons)
            rep = BEST
            for res, val in requests.items():
                pmode, borrow, why = self._fits_quota((name, res), val)
                if why:
                    reasons.append(why)
                if is_preferred(rep, (pmode, borrow), preference):
                    rep = (pmode, borrow)
                if rep[0] == P_NO_FIT:
                    continue
                assignments[res] = (name, FIT if pmode == P_FIT else PREEMPT, borrow)
            considered.append((name, MODE_NAMES[rep[0]], rep[1], tuple(sorted(reasons[first:]))))
            if not should_try_next(rep, self.spec):
                best, best_mode = assignments, rep
                break
            if is_preferred(rep, best_mode, preference):
                best, best_mode = assignments, rep
        tried = -1 if attempted == len(group.flavors) - 1 else attempted
        return best, ([] if best_mode[0] == P_FIT else reasons), tried, considered

    def _fits_quota(self, fr: rn.FR, val: int) -> tuple[int, int, str]:
        """fitsResourceQuota: (preemption mode, borrowing level, reason if it does not fit now)."""
        flavor, res = fr
        avail = rn.available(self.node, fr)
        cap = rn.potential_available(self.node, fr)
        if val > cap:
            return (
                P_NO_FIT,
                0,
                f"insufficient quota for {res} in flavor {flavor}, previously considered podsets requests "
                f"(0) + current podset request ({kueue_text(res, val)}) > maximum capacity "
                f"({kueue_text(res, cap)})",
            )
        borrow, may_reclaim = rn.lowest_subtree_that_fits(self.node, fr, val)
        if val <= avail:
            return P_FIT, borrow, ""
        short = kueue_text(res, val - avail)
        why = f"insufficient unused quota for {res} in flavor {flavor}, {short} more needed"
        if self.node.quotas[fr].nominal >= val or may_reclaim or self._can_preempt_while_borrowing():
            possibility, borrow_after = preemption.simulate(self.snap, self.wl, fr, val)
            return _ORACLE[possibility], borrow_after, why
        return P_NO_FIT, borrow, why


    def _can_preempt_while_borrowing(self) -> bool:
        p = self.spec.preemption
        if p.borrow_within_cohort.policy != "Never":
            return True
        return bool(self.snap.fair_sharing) and p.reclaim_within_cohort != "Never"


def _resource_order(spec: ClusterQueueSpec):
    order = {r: i for i, r in enumerate(spec.resources)}
    return lambda r: (order.get(r, len(order)), r)
