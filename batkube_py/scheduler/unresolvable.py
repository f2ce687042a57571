"""Which nodes a failed cycle left UnschedulableAndUnresolvable: preemption's potential nodes are the others.

1.37 (framework/preemption/preemption.go, findCandidates): the potential nodes are those whose status in
the failed cycle's diagnosis is Unschedulable (NodesForStatusCode); a node's status is the one of the
first filter that rejected it (with its nominated pods first, RunFilterPluginsWithNominatedPods). Their
number sets the random offset's range and numCandidates, so a node ruled out for good must not be
counted. UnschedulableAndUnresolvable in 1.37.2: NodeName, NodeUnschedulable, TaintToleration and
NodeAffinity whenever they reject; NodeResourcesFit when some request exceeds the node's whole
allocatable (fit.go, fitsRequest); PodTopologySpread when the node lacks a constraint's topology key;
InterPodAffinity when the pod's own affinity is not met (anti-affinity is resolvable); a PreFilter that
rejects the pod rules out every node. Every other rejection (a custom plugin's too) is Unschedulable.
"""

from __future__ import annotations

import numpy as np

from batkube_py.scheduler import nominated
from batkube_py.scheduler.framework import CycleState, FilterResult, Profile
from batkube_py.scheduler.plugins.interpodaffinity import REASON_AFFINITY
from batkube_py.scheduler.plugins.podtopologyspread import REASON_MISSING_LABEL
from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.snapshot import NodeTable

ALWAYS = frozenset({"NodeName", "NodeUnschedulable", "TaintToleration", "NodeAffinity"})
BY_REASON = {
    "PodTopologySpread": frozenset({REASON_MISSING_LABEL}),
    "InterPodAffinity": frozenset({REASON_AFFINITY}),  # both give a mask per reason
}
FIT = "NodeResourcesFit"


def beyond_allocatable(profile: Profile, pod: PodInfo, nodes: NodeTable) -> np.ndarray:
    """Per node, whether some resource the pod requests exceeds the node's whole allocatable."""
    out = np.zeros(len(nodes), dtype=bool)
    fit = next((p for p in profile.filters if p.name == FIT), None)
    if fit is None:
        return out
    if pod.milli_cpu > 0:
        out |= nodes.alloc_cpu < pod.milli_cpu
    if pod.memory > 0:
        out |= nodes.mem_limited & (nodes.alloc_mem < pod.memory)
    for r in fit.checked_extended(pod):
        out |= nodes.alloc_ext[r] < pod.extended[r] if r in nodes.alloc_ext else True
    return out


def _level(name: str, given: np.ndarray, result: FilterResult, too_big: np.ndarray) -> np.ndarray:
    """Which of the nodes this filter rejected (among `given`) it rejected for good (their indices)."""
    rejected = given if result.feasible is None else given[~result.feasible]
    if name in ALWAYS:
        return rejected
    if name == FIT:
        return rejected[too_big[rejected]]
    hard = BY_REASON.get(name, frozenset()) & result.reasons.keys()
    if not hard:
        return rejected[:0]
    if result.masks is None:  # one reason, so every rejected node's
        return rejected
    bad = np.zeros(given.size, dtype=bool)
    for reason in hard:
        bad |= result.masks[reason]
    return given[bad]


def _ruled_out(levels: list, too_big: np.ndarray) -> list[int]:
    return [i for name, given, result in levels for i in _level(name, given, result, too_big).tolist()]


def unresolvable(profile: Profile, pod: PodInfo, nodes: NodeTable) -> np.ndarray:
    """Per node, whether the failed cycle's diagnosis marks it UnschedulableAndUnresolvable for `pod`."""
    state = CycleState()
    if profile.pre_filter(state, pod, nodes) is not None:
        return np.ones(len(nodes), dtype=bool)
    too_big = beyond_allocatable(profile, pod, nodes)
    with_nominated = dict(state.nominated)
    state.nominated = {}
    _, _, _, levels = profile._filter_chain(state, pod, nodes, nodes.all)
    out = np.zeros(len(nodes), dtype=bool)
    out[_ruled_out(levels, too_big)] = True
    state.nominated = with_nominated
    for i in with_nominated:  # a node that fails with its nominated pods takes that status
        kept, _, _, levels = nominated.chain_with(profile, state, pod, nodes, np.array([i]))
        if kept.size == 0:
            out[i] = i in _ruled_out(levels, too_big)
    return out
