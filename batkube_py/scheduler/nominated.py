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


def chain_with(profile: Profile, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray):
    """_filter_chain on `idx` with each node's nominated pods on it.

    The PreFilter states are computed afresh with the pods there, which is what upstream's
    PreFilterExtensions.AddPod does to a copy of the cycle state; skipped plugins stay skipped.
    """
    with_them = type(state)()
    with_them.filters, with_them.nominated = state.filters, {}
    if node_local(state.filters):  # their requests are all such filters read of the pods
        nodes.reserve_nominated(idx, state.nominated, +1)
        try:
            return profile._filter_chain(with_them, pod, nodes, idx)
        finally:
            nodes.reserve_nominated(idx, state.nominated, -1)
    added = [state.nominated[i] for i in idx.tolist()]
    for i, pods in zip(idx.tolist(), added, strict=True):
        nodes.add_nominated(i, pods)
    try:
        return profile._filter_chain(with_them, pod, nodes, idx)
    finally:
        for i, pods in zip(idx.tolist(), added, strict=True):
            nodes.remove_nominated(i, pods)


def _one(profile: Profile, state: CycleState, pod: PodInfo, nodes: NodeTable, i: int):
    """(passes, reasons, rejecting plugins) of node i: with its nominated pods, then without them."""
    one = np.array([i])
    if state.nominated.get(i):
        kept, reasons, rejected, _ = chain_with(profile, state, pod, nodes, one)
        if kept.size == 0:
            return False, reasons, rejected
    kept, reasons, rejected, _ = profile._filter_chain(state, pod, nodes, one)
    return kept.size == 1, reasons, rejected


def passes(profile: Profile, state: CycleState, pod: PodInfo, nodes: NodeTable, i: int) -> bool:
    return _one(profile, state, pod, nodes, i)[0]


def fail_with_nominated(profile: Profile, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray):
    """Which of the nominated nodes `idx` fail once their nominated pods are added (bool per node)."""
    if idx.size > 1 and node_local(state.filters):
        return ~np.isin(idx, chain_with(profile, state, pod, nodes, idx)[0])
    bad = [chain_with(profile, state, pod, nodes, np.array([i]))[0].size == 0 for i in idx.tolist()]
    return np.array(bad, dtype=bool)


def _reasons_by_node(levels: list) -> dict[int, list[str]] | None:
    """Each rejected node's reasons, in the order a chain on that node alone lists them; None when a
    filter gives several reasons without saying which node has which."""
    out: dict[int, list[str]] = {}
    for _, given, result in levels:
        masks = result.masks
        if masks is None:
            if len(result.reasons) > 1:
                return None
            masks = {reason: ~result.feasible for reason in result.reasons}
        for reason in result.reasons:
            for i in given[masks[reason]].tolist():
                out.setdefault(i, []).append(reason)
    return out


def _batched(profile: Profile, state: CycleState, pod: PodInfo, nodes: NodeTable, on: np.ndarray):
    """(feasible nodes, each failing node's reasons, rejecting plugins) of the nominated nodes `on`,
    from one chain with the nominated pods and one without; None if the reasons cannot be told apart."""
    good, _, by_with, with_levels = chain_with(profile, state, pod, nodes, on)
    kept, _, by_alone, alone_levels = profile._filter_chain(state, pod, nodes, good)
    per_with, per_alone = _reasons_by_node(with_levels), _reasons_by_node(alone_levels)
    if per_with is None or per_alone is None:
        return None
    return set(kept.tolist()), per_with | per_alone, by_with | by_alone


def filter_nodes(profile: Profile, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray):
    """_filter_chain with the nominated pods on their nodes: such a node passes if the filters pass
    with those pods and again without them; if it fails with them, their reasons are its reasons.
    No per-filter levels then (None)."""
    on_nominated = np.isin(idx, np.fromiter(state.nominated, dtype=np.int64))
    kept, reasons, rejected, _ = profile._filter_chain(state, pod, nodes, idx[~on_nominated])
    feasible = set(kept.tolist())
    on = idx[on_nominated]
    batched = _batched(profile, state, pod, nodes, on) if on.size > 1 and node_local(state.filters) else None
    if batched is not None:
        passed, why, by = batched
        feasible |= passed
        rejected |= by
        for i in on.tolist():  # merged node by node, as one chain per node would list them
            for reason in why.get(i, ()):
                reasons[reason] = reasons.get(reason, 0) + 1
    else:
        for i in on.tolist():
            ok, why, by = _one(profile, state, pod, nodes, i)
            if ok:
                feasible.add(i)
            for reason, k in why.items():
                reasons[reason] = reasons.get(reason, 0) + k
            rejected |= by
    keep = np.fromiter((i in feasible for i in idx.tolist()), dtype=bool, count=idx.size)
    return idx[keep], reasons, rejected, None
