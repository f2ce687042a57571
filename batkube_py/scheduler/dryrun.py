"""Preemption's dry run as integer arithmetic, when taking pods off a node can only change its resource fit.

The general dry run (preemption.py) takes pods off a node and runs PreFilter and the filter chain again
after each change, ~5 times per node on hundreds of nodes. When the pod has no required (anti-)affinity
and no DoNotSchedule spread constraint, no assigned pod's required anti-affinity matches it, and every
other filter reads only the node, the outcome of each of those runs is known without running it: the
node-only filters do not change, and NodeResourcesFit passes exactly when the node's requests, less the
pods taken off, plus the pods nominated there, leave room for the pod. `requests_dry_run` returns None
when that does not hold, and the general dry run decides.
"""

from __future__ import annotations

import math
from operator import attrgetter

import numpy as np

from batkube_py.scheduler.framework import CycleState, Profile
from batkube_py.scheduler.plugins.interpodaffinity import InterPodAffinity
from batkube_py.scheduler.plugins.noderesources import NodeResourcesFit
from batkube_py.scheduler.plugins.podtopologyspread import PodTopologySpread
from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.snapshot import NodeTable, extended_of, one_pod

# PreFilters that read other pods but whose Skip cannot be undone by taking pods off a node: spreading
# skips on the pod's own constraints, InterPodAffinity when no assigned pod's anti-affinity matches it.
_SKIP_STAYS = (InterPodAffinity, PodTopologySpread)


class RequestsDryRun:
    """selectVictimsOnNode for one preemptor, on the room left per resource that the fit check reads."""

    def __init__(self, pod: PodInfo, nodes: NodeTable, state: CycleState, fit: NodeResourcesFit):
        self.pod, self.nodes = pod, nodes
        ok = np.ones(len(nodes), dtype=bool)
        for plugin in state.filters:
            if plugin.reads == "node" and (mask := plugin.feasible_mask(state, pod, nodes)) is not None:
                ok &= mask
        # per resource the fit check reads: (what is free, allocatable, what the pod asks, use of a pod)
        dims = [(nodes.free_pods, nodes.alloc_pods, 1, one_pod)]
        if pod.milli_cpu > 0:
            dims.append((nodes.free_cpu, nodes.alloc_cpu, pod.milli_cpu, attrgetter("milli_cpu")))
        if pod.memory > 0:
            dims.append((nodes.free_mem, nodes.alloc_mem, pod.memory, attrgetter("memory")))
        for r in fit.checked_extended(pod):
            if r not in nodes.alloc_ext:
                ok[:] = False  # no node offers it: no removal makes room
                break
            alloc, use = nodes.alloc_ext[r], extended_of(r)
            dims.append((alloc - nodes.req_ext[r], alloc, pod.extended[r], use))
        on = np.fromiter(state.nominated, dtype=np.int64, count=len(state.nominated))
        self.rooms, self.uses = [], []
        for free, alloc, need, use in dims:
            # what each node would have left with the pod and the pods nominated there on it
            taken = np.fromiter((sum(map(use, ps)) for ps in state.nominated.values()), np.int64, on.size)
            room, best = free - need, alloc - need  # best: had the node no pods at all
            room[on] -= taken
            best[on] -= taken
            room = room.tolist()
            if free is nodes.free_mem:  # a node that models no memory never lacks it
                best[~nodes.mem_limited] = 0
                for i in (~nodes.mem_limited).nonzero()[0].tolist():
                    room[i] = math.inf
            ok &= best >= 0  # no room even with every pod gone: no victims can make it
            self.rooms.append(room)
            self.uses.append(use)
        self.candidates = ok.nonzero()[0]

    def victims_on(self, i: int, reprieve_order) -> list[PodInfo] | None:
        """The general dry run's answer for node i, reached without touching the node."""
        lower = [p for p in self.nodes.pods_on[i].values() if p.priority < self.pod.priority]
        if not lower:
            return None
        room = [col[i] + sum(map(use, lower)) for col, use in zip(self.rooms, self.uses, strict=True)]
        if min(room) < 0:
            return None
        victims = []
        for p in reprieve_order(lower):
            after = [r - use(p) for r, use in zip(room, self.uses, strict=True)]
            if min(after) >= 0:
                room = after
            else:
                victims.append(p)
        return victims


def requests_dry_run(profile: Profile, pod: PodInfo, nodes: NodeTable) -> RequestsDryRun | None:
    state = CycleState()
    if profile.pre_filter(state, pod, nodes) is not None:
        return None
    for plugin in profile._pre_filtering:
        if plugin.reads != "node" and (plugin in state.filters or not isinstance(plugin, _SKIP_STAYS)):
            return None
    rest = [p for p in state.filters if p.reads != "node"]
    if len(rest) != 1 or type(rest[0]) is not NodeResourcesFit:
        return None
    return RequestsDryRun(pod, nodes, state, rest[0])
