"""NodeResourcesFit's scoring strategies and BalancedAllocation's std, over node columns.

Formulas from kube-scheduler noderesources (1.32 and 1.37 alike here; 1.37's BalancedAllocation delta
is taken in noderesources.py) (least_allocated.go, most_allocated.go,
requested_to_capacity_ratio.go, balanced_allocation.go) and helper.BuildBrokenLinearFunction, in their
integer arithmetic. A resource with allocatable 0 on a node is skipped for that node; an extended
resource the pod does not request is skipped everywhere, as calculateResourceAllocatableRequest does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from batkube_py.scheduler.framework import MAX_NODE_SCORE
from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.snapshot import NodeTable

MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10


@dataclass(frozen=True)
class Column:
    alloc: np.ndarray
    requested: np.ndarray  # node's requested + the pod's, aligned with idx
    use: np.ndarray  # bool: allocatable > 0 (and modelled)


def columns(
    resources: list[tuple[str, int]],
    pod: PodInfo,
    nodes: NodeTable,
    idx: np.ndarray,
    nonzero: bool,
    with_pod: bool = True,
) -> list[tuple[Column, int]]:
    """The (allocatable, requested) pairs scoring uses, per configured resource, with its weight.

    `nonzero` selects NonZeroRequested for cpu/memory (NodeResourcesFit) or actual requests (Balanced);
    `with_pod` False leaves the pod's requests out of "requested" (1.37 Balanced's "without").
    """
    k = 1 if with_pod else 0
    pod_cpu, pod_mem = (pod.nonzero_cpu, pod.nonzero_memory) if nonzero else (pod.milli_cpu, pod.memory)
    out = []
    for name, weight in resources:
        if name == "cpu":
            alloc = nodes.alloc_cpu[idx]
            req = (nodes.nz_cpu if nonzero else nodes.req_cpu)[idx] + k * pod_cpu
            use = alloc > 0
        elif name == "memory":
            alloc = nodes.alloc_mem[idx]
            req = (nodes.nz_mem if nonzero else nodes.req_mem)[idx] + k * pod_mem
            use = (alloc > 0) & nodes.mem_limited[idx]
        else:
            q = pod.extended.get(name, 0)
            if q == 0 or name not in nodes.alloc_ext:
                continue
            alloc = nodes.alloc_ext[name][idx]
            req = nodes.req_ext[name][idx] + k * q
            use = alloc > 0
        out.append((Column(alloc, req, use), weight))
    return out


def _weighted(parts: list[tuple[np.ndarray, np.ndarray, int]], n: int) -> np.ndarray:
    """Σ score·w / Σ w over the resources each node uses (int64 division); 0 where none is used."""
    num = np.zeros(n, dtype=np.int64)
    den = np.zeros(n, dtype=np.int64)
    for score, use, w in parts:
        num += np.where(use, score * w, 0)
        den += np.where(use, w, 0)
    return np.where(den > 0, num // np.maximum(den, 1), 0)


def least_allocated(cols: list[tuple[Column, int]], n: int) -> np.ndarray:
    parts = []
    for c, w in cols:
        safe = np.where(c.use, c.alloc, 1)
        s = np.where(c.requested > c.alloc, 0, (c.alloc - c.requested) * MAX_NODE_SCORE // safe)
        parts.append((s, c.use, w))
    return _weighted(parts, n)


def most_allocated(cols: list[tuple[Column, int]], n: int) -> np.ndarray:
    """Requests above capacity count as capacity (score 100), as mostRequestedScore clamps them."""
    parts = []
    for c, w in cols:
        safe = np.where(c.use, c.alloc, 1)
        s = np.minimum(c.requested, c.alloc) * MAX_NODE_SCORE // safe
        parts.append((s, c.use, w))
    return _weighted(parts, n)


def broken_linear(shape: list[tuple[int, int]], p: np.ndarray) -> np.ndarray:
    """helper.BuildBrokenLinearFunction: piecewise linear through (utilization, score), Go division."""
    out = np.full(p.shape, shape[-1][1], dtype=np.int64)
    done = np.zeros(p.shape, dtype=bool)
    for i, (u, s) in enumerate(shape):
        here = ~done & (p <= u)
        if i == 0:
            val = np.full(p.shape, s, dtype=np.int64)
        else:
            u0, s0 = shape[i - 1]
            num = (s - s0) * (p - u0)
            val = s0 + np.sign(num) * (np.abs(num) // (u - u0))  # Go truncates toward zero
        out = np.where(here, val, out)
        done |= here
    return out


def requested_to_capacity_ratio(
    cols: list[tuple[Column, int]], n: int, shape: list[tuple[int, int]]
) -> np.ndarray:
    """Shape scores (0..10) scaled to 0..100; resources scoring 0 drop out; math.Round of the mean."""
    scaled = [(u, s * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for u, s in shape]
    num = np.zeros(n, dtype=np.int64)
    den = np.zeros(n, dtype=np.int64)
    for c, w in cols:
        safe = np.where(c.use, c.alloc, 1)
        util = np.where(c.requested > c.alloc, MAX_UTILIZATION, c.requested * MAX_UTILIZATION // safe)
        s = broken_linear(scaled, util)
        counted = c.use & (s > 0)
        num += np.where(counted, s * w, 0)
        den += np.where(counted, w, 0)
    # math.Round(num/den) for non-negative values: half rounds up.
    return np.where(den > 0, (2 * num + den) // (2 * np.maximum(den, 1)), 0)


def balanced(cols: list[tuple[Column, int]], n: int) -> np.ndarray:
    """(1 - std of the used resources' fractions, each capped at 1) × 100, truncated."""
    if not cols:
        return np.full(n, MAX_NODE_SCORE, dtype=np.int64)
    f = np.stack([np.minimum(1.0, c.requested / np.where(c.use, c.alloc, 1)) for c, _ in cols])
    m = np.stack([c.use for c, _ in cols])
    k = m.sum(axis=0)
    fm = np.where(m, f, 0.0)
    two = np.abs(np.where(m, f, -np.inf).max(axis=0) - np.where(m, f, np.inf).min(axis=0)) / 2
    mean = fm.sum(axis=0) / np.maximum(k, 1)
    many = np.sqrt(np.where(m, (f - mean) ** 2, 0.0).sum(axis=0) / np.maximum(k, 1))
    std = np.where(k == 2, np.where(np.isfinite(two), two, 0.0), np.where(k > 2, many, 0.0))
    return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)
