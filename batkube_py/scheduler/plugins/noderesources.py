"""NodeResourcesFit (filter + scoring strategy) and NodeResourcesBalancedAllocation.

Formulas from kube-scheduler's noderesources package (KUBE_SCHEDULER.md §4.2-4.3), in its integer
arithmetic: milli-cpu and bytes in int64, int64 division where upstream divides integers. A resource
whose allocatable is 0 — here also memory on a host that models none — is skipped per node, as upstream.
"""

from __future__ import annotations

import numpy as np

from batkube_py.scheduler.framework import (
    MAX_NODE_SCORE,
    NODE_ADD,
    NODE_ALLOCATABLE,
    POD_DELETE,
    SKIP,
    CycleState,
    FilterResult,
    Plugin,
)
from batkube_py.scheduler.pluginargs import NodeResourcesBalancedAllocationArgs, NodeResourcesFitArgs
from batkube_py.scheduler.plugins import resourcescoring
from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.snapshot import NodeTable

try:
    from batkube_py.scheduler import _kernels
except ImportError:  # installed without a C compiler: the general numpy code below runs instead
    _kernels = None

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
    """Fit filter (cpu, memory, pods, extended resources) and a configurable scoring strategy."""

    name = "NodeResourcesFit"
    filters = True
    reads = "requests"
    scores = True

    def __init__(
        self,
        resource_weights: dict[str, int] | None = None,
        strategy: str = "LeastAllocated",
        shape: list[tuple[int, int]] | None = None,
        ignored_resources: frozenset[str] = frozenset(),
        ignored_groups: frozenset[str] = frozenset(),
    ):
        weights = resource_weights or {"cpu": 1, "memory": 1}
        self.resources = [(r, int(w)) for r, w in weights.items() if w]
        self.strategy = strategy
        self.shape = shape or []
        self.ignored = ignored_resources
        self.ignored_groups = ignored_groups
        self._default_least = strategy == "LeastAllocated" and self.resources == [("cpu", 1), ("memory", 1)]

    @classmethod
    def from_args(cls, args: NodeResourcesFitArgs | None) -> NodeResourcesFit:
        if args is None:
            return cls()
        st = args.scoringStrategy
        rtcr = st.requestedToCapacityRatio
        return cls(
            {r.name: r.weight for r in st.resources},
            st.type,
            [(p.utilization, p.score) for p in rtcr.shape] if rtcr is not None else None,
            frozenset(args.ignoredResources),
            frozenset(args.ignoredResourceGroups),
        )

    def events_to_register(self) -> frozenset[str]:
        return frozenset({POD_DELETE, NODE_ADD, NODE_ALLOCATABLE})

    def _ignored(self, resource: str) -> bool:
        return resource in self.ignored or resource.partition("/")[0] in self.ignored_groups

    def checked_extended(self, pod: PodInfo) -> list[str]:
        """The extended resources fitsRequest checks for the pod (a node without one never fits)."""
        return [r for r, q in sorted(pod.extended.items()) if q != 0 and not self._ignored(r)]

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> FilterResult:
        """fit.go's fitsRequest; a node short of several resources counts under each reason, as upstream.

        Checks run on whole contiguous columns and are gathered once: cheaper than gathering each column,
        unless only a few nodes are asked (nominated nodes, preemption's dry runs): those are gathered first.
        """
        few = idx.size * 8 < len(nodes)
        cols, pick = (idx, slice(None)) if few else (slice(None), idx)
        checks = [(TOO_MANY_PODS, nodes.pod_count[cols] >= nodes.alloc_pods[cols])]
        if pod.milli_cpu > 0:
            checks.append((INSUFFICIENT_CPU, nodes.req_cpu[cols] + pod.milli_cpu > nodes.alloc_cpu[cols]))
        if pod.memory > 0:
            mem_bad = nodes.req_mem[cols] + pod.memory > nodes.alloc_mem[cols]
            mem_bad &= nodes.mem_limited[cols]
            checks.append((INSUFFICIENT_MEMORY, mem_bad))
        for r in self.checked_extended(pod):
            q = pod.extended[r]
            if r in nodes.alloc_ext:
                checks.append((f"Insufficient {r}", nodes.req_ext[r][cols] + q > nodes.alloc_ext[r][cols]))
            else:
                checks.append((f"Insufficient {r}", np.ones(checks[0][1].size, dtype=bool)))
        bad_all = checks[0][1].copy()
        for _, bad in checks[1:]:
            bad_all |= bad
        bad_any = bad_all[pick]
        if not bad_any.any():
            return FilterResult(~bad_any)
        reasons, masks = {}, {}
        for reason, bad in checks:
            given = bad[pick]
            if (n := int(np.count_nonzero(given))) > 0:
                reasons[reason] = n
                masks[reason] = given
        return FilterResult(~bad_any, reasons, masks)

    def feasible_mask(self, state: CycleState, pod: PodInfo, nodes: NodeTable) -> np.ndarray | None:
        if pod.extended:
            return super().feasible_mask(state, pod, nodes)
        if _kernels is not None:
            return _kernels.fit_mask(
                nodes.free_cpu, nodes.free_mem, nodes.free_pods, pod.milli_cpu, pod.memory
            )
        return fits(
            pod.milli_cpu, pod.memory, nodes.free_cpu, nodes.free_mem, nodes.free_pods, nodes.mem_limited
        )

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> np.ndarray:
        """The strategy over NonZeroRequested (100m / 200Mi for a missing cpu/memory request)."""
        if self._default_least and nodes.models_cpu_mem and _kernels is not None:
            return _kernels.least_allocated(
                nodes.nz_cpu, nodes.nz_mem, nodes.alloc_cpu, nodes.alloc_mem, idx,
                pod.nonzero_cpu, pod.nonzero_memory,
            )  # fmt: skip
        if self._default_least and nodes.models_cpu_only:  # least_allocated with memory skipped everywhere
            if _kernels is not None:
                return _kernels.least_allocated_cpu(nodes.nz_cpu, nodes.alloc_cpu, idx, pod.nonzero_cpu)
            alloc = nodes.alloc_cpu[idx]
            left = alloc - nodes.nz_cpu[idx] - pod.nonzero_cpu
            return np.where(left > 0, left * MAX_NODE_SCORE // alloc, 0)
        cols = resourcescoring.columns(self.resources, pod, nodes, idx, nonzero=True)
        if self.strategy == "MostAllocated":
            return resourcescoring.most_allocated(cols, idx.size)
        if self.strategy == "RequestedToCapacityRatio":
            return resourcescoring.requested_to_capacity_ratio(cols, idx.size, self.shape)
        return resourcescoring.least_allocated(cols, idx.size)


_NO_CHANGE = 75  # 1.37's score when the pod leaves the balance as it was: 50 + (50 + 0) // 2


class BalancedAllocation(Plugin):
    name = "NodeResourcesBalancedAllocation"
    scores = True

    def __init__(self, resources: list[str] | None = None):
        self.resources = resources or ["cpu", "memory"]
        self._default = self.resources == ["cpu", "memory"]

    @classmethod
    def from_args(cls, args: NodeResourcesBalancedAllocationArgs | None) -> BalancedAllocation:
        return cls([r.name for r in args.resources] if args is not None else None)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> str | None:
        """1.37 (balanced_allocation.go, PreScore): Skip for a best-effort pod — actual requests of every
        configured resource 0 — so that such pods do not pile onto one node (#129138)."""
        if self.kube_version == "1.32":
            return None
        asked = {"cpu": pod.milli_cpu, "memory": pod.memory}
        return None if any(asked.get(r, pod.extended.get(r, 0)) for r in self.resources) else SKIP

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> np.ndarray:
        """1.32: balance with the pod, (1 − std of the request fractions) × 100 on actual requests
        (useRequested). 1.37: the change in balance the pod brings, 50 + (50 + with − without) / 2 in Go
        integer division (range 50..100, 75 for no change)."""
        if self._default and nodes.models_cpu_only:  # _balance is 100 everywhere, with or without the pod
            return np.full(idx.size, MAX_NODE_SCORE if self.kube_version == "1.32" else _NO_CHANGE, np.int64)
        with_pod = self._balance(pod, nodes, idx, True)
        if self.kube_version == "1.32":
            return with_pod
        diff = 50 + with_pod - self._balance(pod, nodes, idx, False)
        return 50 + np.sign(diff) * (np.abs(diff) // 2)  # Go's division truncates toward zero

    def _balance(self, pod: PodInfo, nodes: NodeTable, idx: np.ndarray, with_pod: bool) -> np.ndarray:
        """balancedResourceScorer over the node's requests, plus the pod's if `with_pod`, on the resources
        the pod's requests select (an extended resource it does not request is left out either way)."""
        if not self._default:
            res = [(r, 1) for r in self.resources]
            cols = resourcescoring.columns(res, pod, nodes, idx, nonzero=False, with_pod=with_pod)
            return resourcescoring.balanced(cols, idx.size)
        if nodes.models_cpu_only:  # one resource used: no deviation, the best balance everywhere
            return np.full(idx.size, MAX_NODE_SCORE, dtype=np.int64)
        cpu, mem = (pod.milli_cpu, pod.memory) if with_pod else (0, 0)
        if nodes.models_cpu_mem and _kernels is not None:
            return _kernels.balanced_allocation(
                nodes.req_cpu, nodes.req_mem, nodes.alloc_cpu, nodes.alloc_mem, idx, cpu, mem
            )
        cpu_alloc = nodes.alloc_cpu[idx]
        mem_alloc = nodes.alloc_mem[idx]
        cpu_use = cpu_alloc > 0
        mem_use = (mem_alloc > 0) & nodes.mem_limited[idx]
        f_cpu = np.minimum(1.0, (nodes.req_cpu[idx] + cpu) / np.where(cpu_use, cpu_alloc, 1))
        f_mem = np.minimum(1.0, (nodes.req_mem[idx] + mem) / np.where(mem_use, mem_alloc, 1))
        std = np.where(cpu_use & mem_use, np.abs((f_cpu - f_mem) / 2), 0.0)
        return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)
