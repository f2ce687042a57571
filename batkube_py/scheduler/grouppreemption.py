"""PodGroupPostFilter (DefaultPreemption for pod groups, 1.37.2 framework/preemption/podgrouppreemption.go).

A group that failed its cycle may preempt across the whole cluster with the group's priority: every
lower-priority pod is taken off, the group algorithm is run once more, and if it places the group the
victims are reprieved greedily, most important first (the twin has no PodDisruptionBudgets, so none
comes first for violating one): a victim put back stays only if every proposed assignment, re-filtered
in pod order with the earlier ones assumed, still passes. Each member is nominated to its proposed node;
the victims are evicted. A group some member of which waits for a victim still terminating on its
nominated node keeps its nominations and preempts nothing more (isOngoingPreemption).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from batkube_py.scheduler.framework import CycleState, Profile
from batkube_py.scheduler.groupcycle import GroupResult
from batkube_py.scheduler.plugins import gangscheduling as gs
from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.preemption import start_second
from batkube_py.scheduler.snapshot import NodeTable


@dataclass
class GroupPreemption:
    nominations: list[tuple[PodInfo, int]]
    victims: list[PodInfo]


def ongoing(members: list[PodInfo], nodes: NodeTable, priority: int) -> bool:
    held = {m.nominated_node for m in members if m.nominated_node is not None}
    return any(p.terminating and p.priority < priority for i in held for p in nodes.pods_on[i].values())


def _all_pass(profile: Profile, proposal: list[tuple[PodInfo, int]], nodes: NodeTable) -> bool:
    assumed: list[tuple[PodInfo, int]] = []
    try:
        for pod, i in proposal:
            state = CycleState()
            if profile.pre_filter(state, pod, nodes) is not None or not profile.passes(state, pod, nodes, i):
                return False
            nodes.assume(i, pod)
            assumed.append((pod, i))
        return True
    finally:
        for pod, i in reversed(assumed):
            nodes.release(i, pod)


def preempt_group(
    profile: Profile,
    members: list[PodInfo],
    nodes: NodeTable,
    priority: int,
    algorithm: Callable[[], GroupResult],
) -> GroupPreemption | None:
    """Victims and nominations that let the group run, or None. `algorithm` runs the group's algorithm
    on `nodes` as they are when it is called."""
    if profile.preemption is None or any(m.pod.spec.preemption_policy == "Never" for m in members):
        return None
    lowest = nodes.lowest_priority()
    if lowest is None or lowest >= priority:
        return None
    lower = [p for on in nodes.pods_on for p in on.values() if p.priority < priority]
    if not lower:
        return None
    for p in lower:
        nodes.take_off(p.node, p)
    try:
        result = algorithm()
        if result.status != gs.SUCCESS:
            return None
        victims = []
        for p in sorted(lower, key=lambda v: (-v.priority, start_second(v), v.seq)):
            nodes.restore(p.node, p)
            if not _all_pass(profile, result.placed, nodes):
                nodes.take_off(p.node, p)
                victims.append(p)
        return GroupPreemption(result.placed, victims)
    finally:
        for p in lower:
            if p.name not in nodes.pods_on[p.node]:
                nodes.restore(p.node, p)
