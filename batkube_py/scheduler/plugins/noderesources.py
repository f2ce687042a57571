"""NodeResourcesFit (filter + LeastAllocated score) and NodeResourcesBalancedAllocation.

Formulas from kube-scheduler's noderesources package (KUBE_SCHEDULER.md §4.2-4.3), in its integer
arithmetic: milli-cpu and bytes in int64, int64 division where upstream divides integers. A resource
whose allocatable is 0 — here also memory on a host that models none — is skipped per node, as upstream.
"""

from __future__ import annotations

import numpy as np

from batkube_py.scheduler.framework import (
    MAX_NODE_SCORE,
    NODE_ADD,
    NODE_UPDATE,
    POD_DELETE,
    CycleState,
    FilterResult,
    Plugin,
)
from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.snapshot import NodeTable

INSUFFICIENT_CPU = "Insufficient cpu"
INSUFFICIENT_MEMORY = "Insufficient memory"
TOO_MANY_PODS = "Too many pods"


def fits(
    cpu: np.ndarray | int,
    mem: np.ndarray | int,
    free_cpu: np.ndarray,
    free_mem: np.ndarray,
    free_pods: np.ndarray,
    mem_limited: np.ndarray,
) -> np.ndarray:
    """fit.go's check, broadcast over pods × nodes: a zero request always fits that resource."""
    ok = free_pods >= 1
    ok = ok & ((cpu == 0) | (cpu <= free_cpu))
    return ok & ((mem == 0) | ~mem_limited | (mem <= free_mem))


class NodeResourcesFit(Plugin):
    name = "NodeResourcesFit"
    filters = True
    scores = True

    def __init__(self, resource_weights: dict[str, int] | None = None):
        weights = resource_weights or {"cpu": 1, "memory": 1}
        self.w_cpu = int(weights.get("cpu", 0))
        self.w_mem = int(weights.get("memory", 0))

    @classmethod
    def from_args(cls, args) -> NodeResourcesFit:
        if args is None:
            return cls()
        return cls({r.name: r.weight for r in args.scoringStrategy.resources})

    def events_to_register(self) -> frozenset[str]:
        return frozenset({POD_DELETE, NODE_ADD, NODE_UPDATE})

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> FilterResult:
        free_cpu, free_mem, free_pods = nodes.free(idx)
        limited = nodes.mem_limited[idx]
        pods_bad = free_pods < 1
        cpu_bad = (pod.milli_cpu > 0) & (pod.milli_cpu > free_cpu)
        mem_bad = (pod.memory > 0) & limited & (pod.memory > free_mem)
        reasons = {}
        for reason, bad in (
            (TOO_MANY_PODS, pods_bad),
            (INSUFFICIENT_CPU, cpu_bad),
            (INSUFFICIENT_MEMORY, mem_bad),
        ):
            n = int(bad.sum())
            if n:
                reasons[reason] = n
        return FilterResult(~(pods_bad | cpu_bad | mem_bad), reasons)

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> np.ndarray:
        """LeastAllocated over NonZeroRequested (100m / 200Mi for a missing request)."""
        num = np.zeros(idx.size, dtype=np.int64)
        den = np.zeros(idx.size, dtype=np.int64)
        for alloc, requested, weight, modelled in (
            (nodes.alloc_cpu[idx], nodes.nz_cpu[idx] + pod.nonzero_cpu, self.w_cpu, None),
            (
                nodes.alloc_mem[idx],
                nodes.nz_mem[idx] + pod.nonzero_memory,
                self.w_mem,
                nodes.mem_limited[idx],
            ),
        ):
            if weight == 0:
                continue
            use = alloc > 0 if modelled is None else (alloc > 0) & modelled
            safe = np.where(use, alloc, 1)
            s = np.where(requested > alloc, 0, (alloc - requested) * MAX_NODE_SCORE // safe)
            num += np.where(use, s * weight, 0)
            den += np.where(use, weight, 0)
        return np.where(den > 0, num // np.maximum(den, 1), 0)


class BalancedAllocation(Plugin):
    name = "NodeResourcesBalancedAllocation"
    scores = True

    @classmethod
    def from_args(cls, args) -> BalancedAllocation:
        return cls()

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> np.ndarray:
        """(1 - std of the cpu/memory request fractions) × 100, on actual requests."""
        cpu_alloc = nodes.alloc_cpu[idx]
        mem_alloc = nodes.alloc_mem[idx]
        cpu_use = cpu_alloc > 0
        mem_use = (mem_alloc > 0) & nodes.mem_limited[idx]
        f_cpu = np.minimum(1.0, (nodes.req_cpu[idx] + pod.milli_cpu) / np.where(cpu_use, cpu_alloc, 1))
        f_mem = np.minimum(1.0, (nodes.req_mem[idx] + pod.memory) / np.where(mem_use, mem_alloc, 1))
        std = np.where(cpu_use & mem_use, np.abs((f_cpu - f_mem) / 2), 0.0)
        return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)
