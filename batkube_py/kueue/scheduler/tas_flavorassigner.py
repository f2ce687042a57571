"""Topology-aware scheduling in flavor assignment: Kueue's pkg/scheduler/flavorassigner/tas_flavorassigner.go
and the TAS end of FlavorAssigner.Assign (and of the scheduler's updateAssignmentForTAS).

A workload asks for TAS explicitly (a podset-*-topology annotation) or implicitly (its ClusterQueue's
flavors are all TAS flavors: unconstrained, on the lowest level). While walking flavors, a TAS request
skips flavors without a topology (when they give a resource the pod requests) and TAS flavors without
the requested level; a workload without a request skips TAS flavors. Once the flavors are chosen, the
topology is placed on the TAS flavor: an assignment that fits quota but not the topology needs
preemption, and one that would not fit even on empty nodes does not fit at all. A workload that must
preempt carries the placement it would have on empty nodes: with no victims, the cycle reserves it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from batkube_py.kueue.cache.snapshot import ClusterQueueSpec, Flavor, ResourceGroup, Snapshot
from batkube_py.kueue.scheduler.modes import FIT, NO_FIT, PREEMPT
from batkube_py.kueue.workload import TASUsage, Workload

if TYPE_CHECKING:
    from batkube_py.kueue.scheduler.flavorassigner import Assignment


def requested(wl: Workload, spec: ClusterQueueSpec) -> bool:
    """isTASRequested: explicitly, or implied by a TAS-only ClusterQueue."""
    return wl.topology is not None or spec.tas_only


def flavor_problem(wl: Workload, spec: ClusterQueueSpec, flavor: Flavor, group: ResourceGroup,
                   snap: Snapshot) -> str | None:  # fmt: skip
    """checkPodSetAndFlavorMatchForTAS."""
    name = flavor.name
    if not requested(wl, spec):
        return None if flavor.topology is None else f'Flavor "{name}" supports only TopologyAwareScheduling'
    if wl.topology is None:  # implied: every flavor of the ClusterQueue is a TAS flavor
        return None
    if flavor.topology is None:
        if not set(group.covered) & set(wl.per_pod):
            return None
        return f'Flavor "{name}" does not support TopologyAwareScheduling'
    if not snap.tas[name].has_level(wl.topology):
        return f'Flavor "{name}" does not contain the requested level'
    return None


def place(a: Assignment, wl: Workload, spec: ClusterQueueSpec, snap: Snapshot) -> None:
    """The topology placement of an assignment whose flavors fit or must preempt (mode updated)."""
    if a.mode == NO_FIT or not requested(wl, spec):
        return
    tas_flavors = sorted({f for f, _, _ in a.flavors.values() if snap.flavors[f].topology is not None})
    if len(tas_flavors) != 1:
        a.reasons.append("no TAS flavor assigned" if not tas_flavors
                         else f"more than one TAS flavor assigned: {', '.join(tas_flavors)}")  # fmt: skip
        a.failed = True
        return
    flavor = tas_flavors[0]
    topology = snap.tas[flavor]
    if a.mode == FIT:
        found, why = topology.find(wl.topology, wl.per_pod, wl.count, wl.template)
        if found is not None:
            a.tas = TASUsage(flavor, found, _per_pod(a, flavor, wl.count))
            return
        a.reasons.append(why)
        _set_mode(a, PREEMPT)
    found, _ = topology.find(wl.topology, wl.per_pod, wl.count, wl.template, simulate_empty=True)
    if found is None:
        _set_mode(a, NO_FIT)
        return
    _set_mode(a, PREEMPT)
    a.tas = TASUsage(flavor, found, _per_pod(a, flavor, wl.count))


def _set_mode(a: Assignment, mode: int) -> None:
    """PodSetAssignment.updateMode: every flavor of the PodSet."""
    a.flavors = {r: (f, mode, b) for r, (f, _, b) in a.flavors.items()}


def _per_pod(a: Assignment, flavor: str, count: int) -> dict[str, int]:
    """ComputeTASNetUsage's single-pod requests: the quota usage on the TAS flavor, per pod."""
    return {r: v // count for (f, r), v in a.usage.items() if f == flavor}
