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

from batkube_py.scheduler.framework import CycleState, Profile
from batkube_py.scheduler.plugins.interpodaffinity import InterPodAffinity
from batkube_py.scheduler.plugins.noderesources import NodeResourcesFit
from batkube_py.scheduler.plugins.podtopologyspread import PodTopologySpread
from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.snapshot import NodeTable

# PreFilters that read other pods but whose Skip cannot be undone by taking pods off a node: spreading
# skips on the pod's own constraints, InterPodAffinity when no assigned pod's anti-affinity matches it.
_SKIP_STAYS = (InterPodAffinity, PodTopologySpread)


class RequestsDryRun:
    """selectVictimsOnNode for one preemptor, on the room left per resource that the fit check reads."""

    def __init__(self, pod: PodInfo, nodes: NodeTable, state: CycleState, fit: NodeResourcesFit):
        self.pod, self.nodes, self.nominated = pod, nodes, state.nominated
        ok = None
        for plugin in state.filters:
            if plugin.reads == "node" and (mask := plugin.feasible_mask(state, pod, nodes)) is not None:
                ok = mask if ok is None else ok & mask
        self.candidates = nodes.all if ok is None else ok.nonzero()[0]
        self.cpu, self.mem, self.ext = pod.milli_cpu > 0, pod.memory > 0, fit.checked_extended(pod)
        # rooms[d][i]: what node i would have left of resource d with the pod on it; it fits if all >= 0
        rooms = [(nodes.free_pods - 1).tolist()]
        if self.cpu:
            rooms.append((nodes.free_cpu - pod.milli_cpu).tolist())
        if self.mem:
            room = (nodes.free_mem - pod.memory).tolist()
            for i in (~nodes.mem_limited).nonzero()[0].tolist():
                room[i] = math.inf  # a node that models no memory never lacks it
            rooms.append(room)
        for r in self.ext:
            if r not in nodes.alloc_ext:
                self.candidates = self.candidates[:0]  # no node offers it: no removal makes room
                break
            rooms.append((nodes.alloc_ext[r] - nodes.req_ext[r] - pod.extended[r]).tolist())
        self.rooms = rooms

    def usage(self, p: PodInfo) -> list[int]:
        u = [1]
        if self.cpu:
            u.append(p.milli_cpu)
        if self.mem:
            u.append(p.memory)
        u.extend(p.extended.get(r, 0) for r in self.ext)
        return u

    def victims_on(self, i: int, reprieve_order) -> list[PodInfo] | None:
        """The general dry run's answer for node i, reached without touching the node."""
        lower = [p for p in self.nodes.pods_on[i].values() if p.priority < self.pod.priority]
        if not lower:
            return None
        room = [col[i] for col in self.rooms]
        for p in self.nominated.get(i, ()):
            room = [r - x for r, x in zip(room, self.usage(p), strict=True)]
        for p in lower:
            room = [r + x for r, x in zip(room, self.usage(p), strict=True)]
        if min(room) < 0:
            return None
        victims = []
        for p in reprieve_order(lower):
            after = [r - x for r, x in zip(room, self.usage(p), strict=True)]
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
