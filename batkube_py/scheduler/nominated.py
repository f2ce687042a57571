"""RunFilterPluginsWithNominatedPods: the filters on nodes with the pods nominated there added.

A preemptor waits on its nominated node for its victims to leave; until then pods of lower or equal
priority must see it there, so upstream filters such a node twice, with the nominated pods and without.
When every filter reads no more than the node and its pods' requests (`Plugin.reads`), a node's verdict
cannot depend on what sits on other nodes: all the nominated nodes are then filtered in one pass, with
all their nominated pods added at once, instead of one pass per node.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.snapshot import NodeTable

if TYPE_CHECKING:
    from batkube_py.scheduler.framework import CycleState, Plugin, Profile


def node_local(filters: list[Plugin]) -> bool:
    return all(p.reads != "cluster" for p in filters)


def _chain_with(profile: Profile, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray):
    """_filter_chain on `idx` with each node's nominated pods on it.

    The PreFilter states are computed afresh with the pods there, which is what upstream's
    PreFilterExtensions.AddPod does to a copy of the cycle state; skipped plugins stay skipped.
    """
    with_them = type(state)()
    with_them.filters, with_them.nominated = state.filters, {}
    added = [(i, state.nominated[i]) for i in idx.tolist()]
    for i, pods in added:
        nodes.add_nominated(i, pods)
    try:
        return profile._filter_chain(with_them, pod, nodes, idx)
    finally:
        for i, pods in added:
            nodes.remove_nominated(i, pods)


def _one(profile: Profile, state: CycleState, pod: PodInfo, nodes: NodeTable, i: int):
    """(passes, reasons, rejecting plugins) of node i: with its nominated pods, then without them."""
    one = np.array([i])
    if state.nominated.get(i):
        kept, reasons, rejected, _ = _chain_with(profile, state, pod, nodes, one)
        if kept.size == 0:
            return False, reasons, rejected
    kept, reasons, rejected, _ = profile._filter_chain(state, pod, nodes, one)
    return kept.size == 1, reasons, rejected


def passes(profile: Profile, state: CycleState, pod: PodInfo, nodes: NodeTable, i: int) -> bool:
    return _one(profile, state, pod, nodes, i)[0]


def fail_with_nominated(profile: Profile, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray):
    """Which of the nominated nodes `idx` fail once their nominated pods are added (bool per node)."""
    if idx.size > 1 and node_local(state.filters):
        return ~np.isin(idx, _chain_with(profile, state, pod, nodes, idx)[0])
    bad = [_chain_with(profile, state, pod, nodes, np.array([i]))[0].size == 0 for i in idx.tolist()]
    return np.array(bad, dtype=bool)


def filter_nodes(profile: Profile, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray):
    """_filter_chain with the nominated pods on their nodes: such a node passes if the filters pass
    with those pods and again without them; if it fails with them, their reasons are its reasons.
    No per-filter levels then (None)."""
    on_nominated = np.isin(idx, np.fromiter(state.nominated, dtype=np.int64))
    kept, reasons, rejected, _ = profile._filter_chain(state, pod, nodes, idx[~on_nominated])
    feasible = set(kept.tolist())
    on = idx[on_nominated]
    failing = on.tolist()
    if on.size > 1 and node_local(state.filters):
        # verdicts for all at once; the failing nodes, usually few, then give their reasons in order
        good = on[~fail_with_nominated(profile, state, pod, nodes, on)]
        passed = profile._filter_chain(state, pod, nodes, good)[0].tolist()
        feasible.update(passed)
        failing = [i for i in failing if i not in feasible]
    for i in failing:
        ok, why, by = _one(profile, state, pod, nodes, i)
        if ok:
            feasible.add(i)
        for reason, k in why.items():
            reasons[reason] = reasons.get(reason, 0) + k
        rejected |= by
    keep = np.fromiter((i in feasible for i in idx.tolist()), dtype=bool, count=idx.size)
    return idx[keep], reasons, rejected, None
