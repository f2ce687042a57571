"""The pod-group scheduling cycle (kube-scheduler 1.37.2, schedule_one_podgroup.go), on the twin's snapshot.

The default algorithm tries the group's queued pods in member order, each through the full pod cycle
(PreFilter, Filter with the nominated node first, Score, host pick; no PostFilter), and assumes each
pod that fits into the snapshot so the next ones see it. GangScheduling's PlacementFeasible stops it as
soon as minCount is out of reach; a final Wait is Unschedulable, and Success also needs one pod placed
in this cycle. Every assumption is reverted afterwards: the caller assumes the result for real.

With a topology constraint (TopologyAwareWorkloadScheduling, §5.8) the algorithm runs once per domain
(one value of the constraint's node label; nodes without it are never used; only the bound members'
domain once some are bound), each on the snapshot fenced to that domain, and the feasible placements
are scored by PodGroupPodsCount plus NodeResourcesFit's MostAllocated over the placement (weight 1 each,
each normalised to 0-100), ties broken at random.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from batkube_py.scheduler.framework import MAX_NODE_SCORE, Decision, Profile
from batkube_py.scheduler.plugins import gangscheduling as gs
from batkube_py.scheduler.plugins.noderesources import fits
from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.snapshot import NodeTable


@dataclass
class GroupResult:
    status: str  # gangscheduling.SUCCESS or UNSCHEDULABLE
    placed: list[tuple[PodInfo, int]] = field(default_factory=list)  # (pod, node index), in member order
    failures: dict[str, Decision] = field(default_factory=dict)  # pods that fit nowhere, their FitError
    message: str = ""


def default_algorithm(
    profile: Profile, members: list[PodInfo], nodes: NodeTable, bound: int, min_count: int
) -> GroupResult:
    """podGroupSchedulingDefaultAlgorithm: every assumption reverted on return."""
    status = gs.placement_feasible(bound, len(members), min_count)
    placed: list[tuple[PodInfo, int]] = []
    failures: dict[str, Decision] = {}
    nominations: list[tuple[PodInfo, int]] = []
    try:
        for k, pod in enumerate(members):
            if status == gs.UNSCHEDULABLE:
                break
            decision = profile.schedule_one(pod, nodes)
            if decision.node is None:
                failures[pod.name] = decision
            else:
                if pod.nominated_node is not None:  # assumed: no longer counted as nominated
                    nominations.append((pod, pod.nominated_node))
                    nodes.nominate(pod, None)
                nodes.assume(decision.node, pod)
                placed.append((pod, decision.node))
            status = gs.placement_feasible(bound + len(placed), len(members) - k - 1, min_count)
    finally:
        for pod, i in reversed(placed):
            nodes.release(i, pod)
        for pod, i in nominations:
            nodes.nominate(pod, i)
    if status == gs.WAIT or not placed:
        status = gs.UNSCHEDULABLE
    message = "" if status == gs.SUCCESS else _unschedulable_message(len(placed), failures, bound, min_count)
    return GroupResult(status, placed if status == gs.SUCCESS else [], failures, message)


def _unschedulable_message(fit: int, failures: dict[str, Decision], bound: int, want: int) -> str:
    first = next((d for d in failures.values()), None)
    detail = ""
    if first is not None:
        reasons = ", ".join(f"{k} {r}" for r, k in sorted(first.reasons.items()))
        detail = f"; pod {first.pod.name} fits no node ({reasons})" if reasons else ""
    return f"pod group is unschedulable: {bound + fit} of minCount {want} pods could be placed{detail}"


def first_stops_it(members: list[PodInfo], nodes: NodeTable, bound: int, min_count: int) -> bool:
    """Whether the default algorithm would end at its first member, found fitting nowhere: no node has
    room for its requests (other filters and nominated pods only take room away), and without it minCount
    is out of reach. Such a cycle draws no tie-break and leaves the start index where it was (every node
    examined), so skipping it changes nothing but the time it takes; a group waiting for resources fails
    this way on most of its retries."""
    if bound + len(members) - 1 >= min_count:
        return False
    pod = members[0]
    room = fits(pod.milli_cpu, pod.memory, nodes.free_cpu, nodes.free_mem, nodes.free_pods, nodes.mem_limited)
    return not room.any()


def no_room_message(pod: PodInfo, min_count: int) -> str:
    return (
        f"pod group is unschedulable: 0 of minCount {min_count} pods could be placed; pod {pod.name} fits "
        "no node (no node has room for its requests)"
    )


def domains(nodes: NodeTable, key: str, bound_nodes: list[int]) -> dict[str, np.ndarray]:
    """TopologyPlacementGenerator: the nodes of each value of `key`; only the bound members' domain once
    some members are bound (an empty dict if they span several)."""
    values: dict[str, list[int]] = {}
    for i, labels in enumerate(nodes.labels):
        if key in labels:
            values.setdefault(labels[key], []).append(i)
    if bound_nodes:
        held = {nodes.labels[i].get(key) for i in bound_nodes}
        if len(held) != 1 or None in held:
            return {}
        values = {v: values[v] for v in held}
    return {v: np.array(ix, dtype=np.int64) for v, ix in sorted(values.items())}


def _fenced(nodes: NodeTable, inside: np.ndarray):
    """The nodes outside a placement made unschedulable for the time of one evaluation
    (AssumePlacement restricts the snapshot); returns the undo."""
    outside = np.ones(len(nodes), dtype=bool)
    outside[inside] = False
    changed = [int(i) for i in np.flatnonzero(outside & nodes.schedulable)]
    for i in changed:
        nodes.set_schedulable(i, False)

    def undo() -> None:
        for i in changed:
            nodes.set_schedulable(i, True)

    return undo


def _most_allocated(nodes: NodeTable, inside: np.ndarray, placed: list[tuple[PodInfo, int]]) -> int:
    """NodeResourcesFit.ScorePlacement: MostAllocated (cpu and memory, weight 1 each) over the placement."""
    cpu = nodes.req_cpu[inside].sum() + sum(p.milli_cpu for p, _ in placed)
    mem = nodes.req_mem[inside].sum() + sum(p.memory for p, _ in placed)
    scores = []
    for used, cap in ((cpu, nodes.alloc_cpu[inside].sum()), (mem, nodes.alloc_mem[inside].sum())):
        if cap > 0:
            scores.append(min(int(used * MAX_NODE_SCORE // cap), MAX_NODE_SCORE))
    return sum(scores) // len(scores) if scores else 0


def placement_algorithm(
    profile: Profile,
    members: list[PodInfo],
    nodes: NodeTable,
    bound: list[int],
    min_count: int,
    key: str,
) -> GroupResult:
    """podGroupSchedulingPlacementAlgorithm: one default algorithm per domain, the best placement kept."""
    options = domains(nodes, key, bound)
    if not options:
        return GroupResult(gs.UNSCHEDULABLE, message="no feasible placements found")
    feasible: list[tuple[str, np.ndarray, GroupResult]] = []
    last = None
    for value, inside in options.items():
        undo = _fenced(nodes, inside)
        try:
            result = default_algorithm(profile, members, nodes, len(bound), min_count)
        finally:
            undo()
        last = result
        if result.status == gs.SUCCESS:
            feasible.append((value, inside, result))
    if not feasible:
        message = f"0/{len(options)} placements are available"
        if last is not None and last.message:
            message += f" ({key}); last: {last.message}"
        return GroupResult(gs.UNSCHEDULABLE, failures=last.failures if last else {}, message=message)
    if len(feasible) == 1:
        return feasible[0][2]
    counts = np.array([len(bound) + len(r.placed) for _, _, r in feasible], dtype=np.int64)
    total = counts * MAX_NODE_SCORE // counts.max()
    total = total + np.array([_most_allocated(nodes, ix, r.placed) for _, ix, r in feasible])
    best = np.flatnonzero(total == total.max())
    pick = int(best[0]) if best.size == 1 else int(best[profile.rng.integers(best.size)])
    return feasible[pick][2]
