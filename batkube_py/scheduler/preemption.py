"""DefaultPreemption (PostFilter): make room for a pod by evicting pods of lower priority.

As upstream (framework/preemption/preemption.go, plugins/defaultpreemption): candidates are found by a
dry run on nodes taken from a random offset, until max(10 % of nodes, 100) candidates; on each node
every lower-priority pod is removed, the pod must then pass every filter, and the removed pods are
reprieved one by one, most important first, while the pod still fits. The node is chosen by: lowest
highest-victim priority, then lowest priority sum, then fewest victims, then the latest start of the
highest-priority victims, then the first candidate. The preemptor is nominated to that node; the
victims leave once Batsim reports them killed. When only resource fit can change as pods come off a
node, dryrun.py reaches the same victims by arithmetic instead of running the filters again.
PodDisruptionBudgets play no part: the twin has none, so no candidate violates one.

1.37: nodes the failed cycle marked UnschedulableAndUnresolvable (unresolvable.py: a taint, node
affinity, a request above the whole allocatable, ...) are not potential nodes: their number sets the
random offset and how many candidates are wanted. They never had victims to offer, so only those two
numbers change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import numpy as np

from batkube_py.scheduler.dryrun import requests_dry_run
from batkube_py.scheduler.framework import CycleState, Profile
from batkube_py.scheduler.gosort import sort_slice
from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.snapshot import NodeTable
from batkube_py.scheduler.unresolvable import unresolvable

# Upstream adds MaxInt32 + 1 to each priority before summing, so that more victims never look cheaper.
_PRIORITY_OFFSET = 2**31


@dataclass
class Preemption:
    node: int
    victims: list[PodInfo]


def start_second(pod: PodInfo) -> int:
    """The pod's status.startTime as the scheduler reads it: a metav1.Time, whole seconds."""
    return math.floor(pod.bound_at)


def _more_important(a: PodInfo, b: PodInfo) -> bool:
    """MoreImportantVictim for single pods: higher priority, then an earlier start."""
    return a.priority > b.priority or (a.priority == b.priority and start_second(a) < start_second(b))


def more_important_first(nodes: NodeTable, pods: list[PodInfo]) -> list[PodInfo]:
    """The reprieve order: the pods in their node's cache order (NodeTable.order, GetPods), sorted as
    Go's sort.Slice sorts them (gosort.py: stable up to 12, otherwise equals may move)."""
    return sort_slice(sorted(pods, key=nodes.rank), _more_important)


def _fits_on(profile: Profile, pod: PodInfo, nodes: NodeTable, i: int) -> bool:
    """RunFilterPluginsWithNominatedPods on node i: pods nominated there with priority >= the pod's
    count, so a node already promised to another preemptor is not promised twice."""
    state = CycleState()
    if profile.pre_filter(state, pod, nodes) is not None:
        return False
    return profile.passes(state, pod, nodes, i)


def _victims_on(profile: Profile, pod: PodInfo, nodes: NodeTable, i: int) -> list[PodInfo] | None:
    """selectVictimsOnNode: the fewest, least important pods whose removal lets `pod` fit on node i.

    Pods already terminating (victims of an earlier preemption) are candidates like any other, as
    upstream, where they stay on the node until they are gone.
    """
    lower = [p for p in nodes.pods_on[i].values() if p.priority < pod.priority]
    if not lower:
        return None
    for p in lower:
        nodes.take_off(i, p)
    victims: list[PodInfo] = []
    try:
        if not _fits_on(profile, pod, nodes, i):
            return None
        for p in more_important_first(nodes, lower):
            nodes.restore(i, p)
            if not _fits_on(profile, pod, nodes, i):
                nodes.take_off(i, p)
                victims.append(p)
        return victims
    finally:
        for p in lower:
            if p.name not in nodes.pods_on[i]:
                nodes.restore(i, p)


def _rank(victims: list[PodInfo]) -> tuple:
    top = max(v.priority for v in victims)
    earliest_top = min(start_second(v) for v in victims if v.priority == top)
    return (top, sum(v.priority + _PRIORITY_OFFSET for v in victims), len(victims), -earliest_top)


def _dry_run(profile: Profile, pod: PodInfo, nodes: NodeTable, fast: bool):
    """(nodes that can be candidates, victims per node): the arithmetic dry run when it applies."""
    dry = requests_dry_run(profile, pod, nodes) if fast else None
    if dry is None:
        return nodes.all, lambda i: _victims_on(profile, pod, nodes, i)
    return dry.candidates, lambda i: dry.victims_on(i, partial(more_important_first, nodes))


def preempt(profile: Profile, pod: PodInfo, nodes: NodeTable, fast: bool = True) -> Preemption | None:
    """Where `pod` could run after evicting lower-priority pods, or None (no node, or not allowed).
    `fast=False` forces the general dry run (tests compare the two)."""
    args = profile.preemption
    if args is None or pod.pod.spec.preemption_policy == "Never" or len(nodes) == 0:
        return None
    lowest = nodes.lowest_priority()
    if lowest is None or lowest >= pod.priority:
        return None
    potential = potential_nodes(profile, pod, nodes)
    n = potential.size
    if n == 0:
        return None
    want = min(n, max(n * args.min_candidate_nodes_percentage // 100, args.min_candidate_nodes_absolute))
    offset = int(profile.rng.integers(n))
    candidates, victims_on = _dry_run(profile, pod, nodes, fast)
    if n < len(nodes):
        candidates = candidates[np.isin(candidates, potential)]
    pos = np.searchsorted(potential, candidates)  # each candidate's place among the potential nodes
    start = int(np.searchsorted(pos, offset))
    best: tuple | None = None
    found = 0
    for i, p in zip([*candidates[start:].tolist(), *candidates[:start].tolist()],
                    [*pos[start:].tolist(), *pos[:start].tolist()], strict=True):  # fmt: skip
        victims = victims_on(i)
        if not victims:
            continue
        key = (_rank(victims), (p - offset) % n)
        if best is None or key < best[0]:
            best = (key, i, victims)
        found += 1
        if found >= want:
            break
    if best is None:
        return None
    return Preemption(best[1], best[2])


def potential_nodes(profile: Profile, pod: PodInfo, nodes: NodeTable) -> np.ndarray:
    """The nodes preemption may look at, in index order: every node in 1.32 (the twin's reading); in
    1.37 those the failed cycle did not mark UnschedulableAndUnresolvable (unresolvable.py)."""
    if profile.kube_version == "1.32":
        return nodes.all
    return nodes.all[~unresolvable(profile, pod, nodes)]


def nominable(profile: Profile, pod: PodInfo, nodes: NodeTable, fast: bool = True) -> list[int]:
    """Every node upstream's preemption could nominate for `pod`. It ranks only the first `want`
    candidates from a random offset (with `parallelism: 1`; cyclically, in node order), so beyond `want`
    candidates a node the others outrank can still win: it must rank best in some run of `want`
    consecutive candidates. `want` grows with the potential nodes, at least the candidates; the fewest
    candidates give the shortest runs, so this accepts whatever upstream's count of potential nodes."""
    args = profile.preemption
    candidates, victims_on = _dry_run(profile, pod, nodes, fast)
    ranked = [(_rank(v), i) for i in candidates.tolist() if (v := victims_on(i))]
    m = len(ranked)
    if args is None or m == 0:
        return []
    want = min(m, max(m * args.min_candidate_nodes_percentage // 100, args.min_candidate_nodes_absolute))
    keys = [key for key, _ in ranked]
    if want >= m:
        best = min(keys)
        return [i for key, i in ranked if key == best]
    out = []
    for j, (key, i) in enumerate(ranked):
        run, left, right = 1, j - 1, j + 1  # the candidates around j that do not outrank it
        while run < want and keys[left % m] >= key:
            run, left = run + 1, left - 1
        while run < want and keys[right % m] >= key:
            run, right = run + 1, right + 1
        if run >= want:
            out.append(i)
    return out
