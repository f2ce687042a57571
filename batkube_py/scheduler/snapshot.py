"""Node state as numpy columns, so Filter and Score run over all nodes at once.

kube-scheduler snapshots its cache at the start of every cycle; the embedded twin decides
synchronously at one simulated instant, so the live table *is* the snapshot of that cycle.
"""

from __future__ import annotations

import numpy as np
from kubernetes import client

from batkube_py import quantities, translate
from batkube_py.scheduler.podinfo import PodInfo


class InvariantViolation(AssertionError):
    """A node holds more than it can: a scheduler bug, never a workload problem."""


class NodeTable:
    def __init__(self, nodes: list[client.V1Node]):
        self.nodes = nodes
        self.names = [n.metadata.name for n in nodes]
        self.index = {name: i for i, name in enumerate(self.names)}
        self.resource_ids = np.array([translate.resource_id(n) for n in nodes], dtype=np.int64)
        alloc = [n.status.allocatable for n in nodes]
        self.alloc_cpu = np.array([quantities.milli_cpu(a["cpu"]) for a in alloc], dtype=np.int64)
        self.mem_limited = np.array(["memory" in a for a in alloc], dtype=bool)
        self.alloc_mem = np.array([quantities.byte_count(a.get("memory", 0)) for a in alloc], dtype=np.int64)
        self.alloc_pods = np.array([quantities.count(a["pods"]) for a in alloc], dtype=np.int64)
        n = len(nodes)
        self.req_cpu = np.zeros(n, dtype=np.int64)
        self.req_mem = np.zeros(n, dtype=np.int64)
        self.nz_cpu = np.zeros(n, dtype=np.int64)
        self.nz_mem = np.zeros(n, dtype=np.int64)
        self.pod_count = np.zeros(n, dtype=np.int64)
        self.schedulable = np.ones(n, dtype=bool)
        self.all = np.arange(n)
        self.labels: list[dict[str, str]] = [dict(nd.metadata.labels or {}) for nd in nodes]
        self.taints: list[list[client.V1Taint]] = [list(nd.spec.taints or []) for nd in nodes]
        self.pods_on: list[dict[str, PodInfo]] = [{} for _ in nodes]
        self._label_columns: dict[str, np.ndarray] = {}

    def label_column(self, key: str) -> np.ndarray:
        """Every node's value for a label key (None where absent), as one column for vector matching."""
        col = self._label_columns.get(key)
        if col is None:
            col = np.array([lb.get(key) for lb in self.labels], dtype=object)
            self._label_columns[key] = col
        return col

    def set_labels(self, i: int, labels: dict[str, str]) -> None:
        self.labels[i] = dict(labels)
        self._label_columns.clear()

    def __len__(self) -> int:
        return len(self.names)

    def free(self, idx: np.ndarray | int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return (
            self.alloc_cpu[idx] - self.req_cpu[idx],
            self.alloc_mem[idx] - self.req_mem[idx],
            self.alloc_pods[idx] - self.pod_count[idx],
        )

    def _apply(self, i: int, pod: PodInfo, sign: int) -> None:
        self.req_cpu[i] += sign * pod.milli_cpu
        self.req_mem[i] += sign * pod.memory
        self.nz_cpu[i] += sign * pod.nonzero_cpu
        self.nz_mem[i] += sign * pod.nonzero_memory
        self.pod_count[i] += sign

    def assume(self, i: int, pod: PodInfo) -> None:
        self._apply(i, pod, +1)
        self.pods_on[i][pod.name] = pod
        self.check(i)

    def release(self, i: int, pod: PodInfo) -> None:
        self._apply(i, pod, -1)
        del self.pods_on[i][pod.name]

    def check(self, i: int) -> None:
        over = []
        if self.req_cpu[i] > self.alloc_cpu[i]:
            over.append(f"cpu {self.req_cpu[i]}m > {self.alloc_cpu[i]}m")
        if self.mem_limited[i] and self.req_mem[i] > self.alloc_mem[i]:
            over.append(f"memory {self.req_mem[i]} > {self.alloc_mem[i]}")
        if self.pod_count[i] > self.alloc_pods[i]:
            over.append(f"pods {self.pod_count[i]} > {self.alloc_pods[i]}")
        if over:
            raise InvariantViolation(f"node {self.names[i]} over-allocated: {', '.join(over)}")

    def over_allocated(self) -> int:
        """How many nodes break the invariant now (0 in every correct run)."""
        bad = (self.req_cpu > self.alloc_cpu) | (self.pod_count > self.alloc_pods)
        bad |= self.mem_limited & (self.req_mem > self.alloc_mem)
        return int(bad.sum())
