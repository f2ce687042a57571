"""How many members of a group of identical pods the cluster can hold: the group's feasibility in one
number, without a cycle (no tie-break draw, no start index moved).

For identical pods every greedy placement reaches the same count: each placed pod takes one slot from
one node that had room, so the group algorithm places min(size, the nodes' summed slots) whatever order
or scores it uses. A node's slots are how many copies fit its room (allocatable on the empty cluster,
what is free now otherwise), on the nodes its node-level filters accept (labels, taints, cordons); one
per node with a required anti-affinity on the hostname against its own group; counted per domain of a
topology constraint, the best domain taken. Submission rejects a group whose count on the empty
cluster is short of minCount; the twin gives up a pending one whose count is short when nothing runs.
"""

from __future__ import annotations

import numpy as np

from batkube_py.scheduler.framework import CycleState, Profile
from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.snapshot import NodeTable

HOSTNAME = "kubernetes.io/hostname"


def one_per_node(pod: PodInfo) -> bool:
    """Required anti-affinity on the hostname against pods carrying the pod's own labels."""
    anti = pod.pod.spec.affinity.pod_anti_affinity if pod.pod.spec.affinity is not None else None
    terms = (anti.required_during_scheduling_ignored_during_execution or []) if anti is not None else []
    for term in terms:
        match = term.label_selector.match_labels if term.label_selector is not None else None
        if term.topology_key == HOSTNAME and match and all(pod.labels.get(k) == v for k, v in match.items()):
            return True
    return False


def slots(profile: Profile, pod: PodInfo, nodes: NodeTable, empty: bool) -> np.ndarray:
    """Copies of `pod` each node can take (0 where its node-level filters reject it)."""
    ok = np.ones(len(nodes), dtype=bool)
    state = CycleState()
    state.filters, state.nominated = profile.filters, {}
    for plugin in profile.filters:
        if plugin.reads == "node":
            mask = plugin.filter(state, pod, nodes, nodes.all).feasible
            if mask is not None:
                ok &= mask
    big = np.iinfo(np.int64).max // 4
    if empty:
        cpu, mem, pods = nodes.alloc_cpu, np.where(nodes.mem_limited, nodes.alloc_mem, big), nodes.alloc_pods
    else:
        cpu, mem, pods = nodes.free_cpu, nodes.free_mem, nodes.free_pods
    k = np.maximum(pods, 0)
    if pod.milli_cpu:
        k = np.minimum(k, np.maximum(cpu, 0) // pod.milli_cpu)
    if pod.memory:
        k = np.minimum(k, np.where(nodes.mem_limited, np.maximum(mem, 0) // pod.memory, big))
    for name, amount in pod.extended.items():
        if amount:
            have = (
                nodes.alloc_ext[name] - (0 if empty else nodes.req_ext[name])
                if name in nodes.alloc_ext
                else 0
            )
            k = np.minimum(k, np.maximum(have, 0) // amount)
    k = np.where(ok, k, 0)
    return np.minimum(k, 1) if one_per_node(pod) else k


def capacity(profile: Profile, pod: PodInfo, nodes: NodeTable, key: str | None, empty: bool) -> int:
    """Members of `pod`'s shape the cluster holds at most (in the best domain of `key`)."""
    k = slots(profile, pod, nodes, empty)
    if key is None:
        return int(k.sum())
    by_domain: dict[str, int] = {}
    for i, labels in enumerate(nodes.labels):
        if key in labels:
            by_domain[labels[key]] = by_domain.get(labels[key], 0) + int(k[i])
    return max(by_domain.values(), default=0)
