"""Node state as numpy columns, so Filter and Score run over all nodes at once.

kube-scheduler snapshots its cache at the start of every cycle; the embedded twin decides
synchronously at one simulated instant, so the live table *is* the snapshot of that cycle.
"""

from __future__ import annotations

from operator import attrgetter

import numpy as np
from kubernetes import client

from batkube_py import kubeapi, quantities
from batkube_py.scheduler.podindex import PodIndex
from batkube_py.scheduler.podinfo import PodInfo

UNLIMITED = np.iinfo(np.int64).max // 4  # room on a node that does not model a resource
_NONE: dict = {}  # no extended requests (read only)


def one_pod(pod: PodInfo) -> int:
    """A pod's share of a node's pod count, as a getter beside the request fields."""
    return 1


def extended_of(name: str):
    """A getter of a pod's request of one extended resource (0 when it asks none)."""
    return lambda pod: pod.extended.get(name, 0)


class InvariantViolation(AssertionError):
    """A node holds more than it can: a scheduler bug, never a workload problem."""


class NodeTable:
    def __init__(self, nodes: list[client.V1Node]):
        self.nodes = nodes
        self.names = [n.metadata.name for n in nodes]
        self.index = {name: i for i, name in enumerate(self.names)}
        self.resource_ids = np.array([kubeapi.resource_id(n) for n in nodes], dtype=np.int64)
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
        self.all_schedulable = True  # kept by set_schedulable: NodeUnschedulable's every-cycle question
        # What is left, kept alongside the sums so that the fit check is one comparison per resource;
        # a node that models no memory has unlimited memory left.
        self.free_cpu = self.alloc_cpu.copy()
        self.free_mem = np.where(self.mem_limited, self.alloc_mem, UNLIMITED)
        self.free_pods = self.alloc_pods.copy()
        # Every node models cpu and memory (the usual case): scoring needs no per-node resource skips.
        self.models_cpu_mem = bool(
            n and (self.alloc_cpu > 0).all() and (self.alloc_mem > 0).all() and self.mem_limited.all()
        )
        # Nodes that model cpu only (platforms without memory): memory drops out of every score.
        self.models_cpu_only = bool(n and (self.alloc_cpu > 0).all() and not self.mem_limited.any())
        self.all = np.arange(n)
        self.labels: list[dict[str, str]] = [dict(nd.metadata.labels or {}) for nd in nodes]
        self.taints: list[list[client.V1Taint]] = [list(nd.spec.taints or []) for nd in nodes]
        self.pods_on: list[dict[str, PodInfo]] = [{} for _ in nodes]
        # upstream's NodeInfo.Pods order (equal-importance victims keep it): assume appends, release
        # swaps the last pod into the gap, touch (an update event) does both; dry runs leave it alone
        self.order: list[list[str]] = [[] for _ in nodes]
        self._slot: dict[str, int] = {}
        self.pod_index = PodIndex(self.pods_on)  # per-node counts of pods matching selectors, kept current
        self.priorities: dict[int, int] = {}  # priority → number of placed pods
        self._label_columns: dict[str, np.ndarray] = {}
        self._label_codes: dict[str, tuple[np.ndarray, dict[str, int]]] = {}
        self.labels_version = 0  # bumped on every label change: per-pod caches of node matches key on it
        self.tainted = np.array([bool(t) for t in self.taints], dtype=bool)
        self.any_tainted = bool(self.tainted.any())
        self.taints_version = 0
        self._taint_sigs: tuple[np.ndarray, list[tuple[client.V1Taint, ...]]] | None = None
        # Extended resources (e.g. nvidia.com/gpu) as integer columns, one per name some node offers.
        self.ext_names: list[str] = sorted({k for a in alloc for k in a if kubeapi.is_extended_resource(k)})
        self.alloc_ext = {
            r: np.array([quantities.count(a.get(r, 0)) for a in alloc], dtype=np.int64)
            for r in self.ext_names
        }
        self.req_ext = {r: np.zeros(n, dtype=np.int64) for r in self.ext_names}
        # Assigned pods carrying pod (anti-)affinity, name → node: InterPodAffinity skips when there are none.
        self.affinity_pods: dict[str, int] = {}
        self.anti_affinity_pods: dict[str, int] = {}  # those with *required* anti-affinity (symmetry)
        # Upstream's nominator: node → the pods nominated to it by preemption, waiting for their victims.
        self.nominated: dict[int, dict[str, PodInfo]] = {}
        self._nominated_for: dict[int, dict[int, list[PodInfo]]] = {}  # priority → nominated_for's answer
        self._nominated_req: tuple[dict, dict[str, np.ndarray]] | None = None

    def label_column(self, key: str) -> np.ndarray:
        """Every node's value for a label key (None where absent), as one column for vector matching."""
        col = self._label_columns.get(key)
        if col is None:
            col = np.array([lb.get(key) for lb in self.labels], dtype=object)
            self._label_columns[key] = col
        return col

    def label_codes(self, key: str) -> tuple[np.ndarray, dict[str, int]]:
        """The label key factorised: codes[i] indexes node i's value in `values` (-1 where absent).

        Integer codes let selector operators run as numpy comparisons instead of string loops.
        """
        hit = self._label_codes.get(key)
        if hit is None:
            values: dict[str, int] = {}
            codes = np.fromiter(
                (
                    -1 if (v := lb.get(key)) is None else values.setdefault(v, len(values))
                    for lb in self.labels
                ),
                dtype=np.int64,
                count=len(self.labels),
            )
            hit = self._label_codes[key] = (codes, values)
        return hit

    def set_labels(self, i: int, labels: dict[str, str]) -> None:
        self.labels[i] = dict(labels)
        self._label_columns.clear()
        self._label_codes.clear()
        self.labels_version += 1

    def set_taints(self, i: int, taints: list[client.V1Taint]) -> None:
        self.taints[i] = list(taints)
        self.tainted[i] = bool(taints)
        self.any_tainted = bool(self.tainted.any())
        self._taint_sigs = None
        self.taints_version += 1

    def taint_signatures(self) -> tuple[np.ndarray, list[tuple[client.V1Taint, ...]]]:
        """Nodes grouped by their exact taint list: sig[i] indexes `sigs`; sigs[0] is the empty list.

        Clusters have a handful of distinct taint lists, so toleration checks run once per list.
        """
        if self._taint_sigs is None:
            keys: dict[tuple, int] = {(): 0}
            sigs: list[tuple[client.V1Taint, ...]] = [()]
            ids = np.zeros(len(self.taints), dtype=np.int64)
            for i, taints in enumerate(self.taints):
                if not taints:
                    continue
                key = tuple((t.key, t.value, t.effect) for t in taints)
                j = keys.get(key)
                if j is None:
                    j = keys[key] = len(sigs)
                    sigs.append(tuple(taints))
                ids[i] = j
            self._taint_sigs = (ids, sigs)
        return self._taint_sigs

    def __len__(self) -> int:
        return len(self.names)

    def set_schedulable(self, i: int, schedulable: bool) -> None:
        self.schedulable[i] = schedulable
        self.all_schedulable = bool(self.schedulable.all())

    def free(self, idx: np.ndarray | int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.free_cpu[idx], self.free_mem[idx], self.free_pods[idx]

    def lowest_priority(self) -> int | None:
        """The lowest priority among placed pods (None if none): what preemption could ever evict."""
        live = [p for p, n in self.priorities.items() if n > 0]
        return min(live) if live else None

    def _apply(self, i: int, pod: PodInfo, sign: int) -> None:
        mem = sign * pod.memory or None  # most trace pods request none: 1.2 million calls in a gang trace
        ext = {r: sign * q for r, q in pod.extended.items()} if pod.extended else _NONE
        free_mem = mem if mem is not None and self.mem_limited[i] else 0
        nz_cpu, nz_mem = sign * pod.nonzero_cpu, sign * pod.nonzero_memory
        self._shift(i, sign * pod.milli_cpu, mem, nz_cpu, nz_mem, sign, ext, free_mem)

    def _shift(self, at, cpu, mem, nz_cpu, nz_mem, count, ext: dict, free_mem) -> None:
        """Move the request sums of node `at` (or of the nodes of an index array, no repeats) by these
        amounts; `free_mem`: the memory taken where the node models it (0 elsewhere: unlimited). `mem`
        None: no memory request, both memory columns left alone."""
        self.req_cpu[at] += cpu
        self.nz_cpu[at] += nz_cpu
        self.nz_mem[at] += nz_mem
        self.pod_count[at] += count
        self.free_cpu[at] -= cpu
        self.free_pods[at] -= count
        if mem is not None:
            self.req_mem[at] += mem
            self.free_mem[at] -= free_mem
        for r, q in ext.items():
            col = self.req_ext.get(r)
            if col is not None:
                col[at] += q

    def _add(self, i: int, pod: PodInfo) -> None:
        self._apply(i, pod, +1)
        self.pods_on[i][pod.name] = pod
        self.pod_index.touch(i)
        if pod.has_pod_affinity:
            self.affinity_pods[pod.name] = i
            if pod.has_required_anti_affinity:
                self.anti_affinity_pods[pod.name] = i

    def _remove(self, i: int, pod: PodInfo) -> None:
        self._apply(i, pod, -1)
        del self.pods_on[i][pod.name]
        self.pod_index.touch(i)
        self.affinity_pods.pop(pod.name, None)
        self.anti_affinity_pods.pop(pod.name, None)

    def assume(self, i: int, pod: PodInfo) -> None:
        self._add(i, pod)
        self.priorities[pod.priority] = self.priorities.get(pod.priority, 0) + 1
        self._slot[pod.name] = len(self.order[i])
        self.order[i].append(pod.name)
        self.check(i)

    def restore(self, i: int, pod: PodInfo) -> None:
        """Put back a pod taken off by a dry run: the node was valid with it, so nothing to check."""
        self._add(i, pod)
        self.priorities[pod.priority] += 1

    def reserve(self, i: int, pod: PodInfo, sign: int) -> None:
        """Count (or stop counting) a pod's requests on node i, without placing it."""
        self._apply(i, pod, sign)

    def release(self, i: int, pod: PodInfo) -> None:
        self.take_off(i, pod)
        order, k = self.order[i], self._slot.pop(pod.name)
        last = order.pop()
        if k < len(order):
            order[k] = last
            self._slot[last] = k

    def take_off(self, i: int, pod: PodInfo) -> None:
        """Take a pod off node i for a dry run (restore puts it back): its place in `order` stays."""
        self._remove(i, pod)
        self.priorities[pod.priority] -= 1

    def touch(self, i: int, pod: PodInfo) -> None:
        """An update event of a pod on node i (cache.updatePod: remove, then add): it moves last."""
        self.release(i, pod)
        self.assume(i, pod)

    def rank(self, pod: PodInfo) -> int:
        """The pod's place in its node's `order`."""
        return self._slot[pod.name]

    def nominate(self, pod: PodInfo, i: int | None) -> None:
        """Record the node a preemptor waits for (None: clear it), as upstream's nominator does."""
        old = pod.nominated_node
        if old is None and i is None:  # every binding asks: the kept nominated_for answers still hold
            return
        if old is not None and (on := self.nominated.get(old)) is not None:
            on.pop(pod.name, None)
            if not on:
                del self.nominated[old]
        pod.nominated_node = i
        if i is not None:
            self.nominated.setdefault(i, {})[pod.name] = pod
        self._nominated_for.clear()

    def nominated_for(self, pod: PodInfo) -> dict[int, list[PodInfo]]:
        """addGENominatedPods: per node, the pods nominated there with priority >= the pod's, not itself.

        Every cycle asks, and preemption's dry run asks once per node and victim: the answer is kept per
        priority until a nomination changes. The lists are shared: read them, never change them.
        """
        hit = self._nominated_for.get(pod.priority)
        if hit is None:
            hit = self._nominated_for[pod.priority] = {
                i: keep
                for i, pods in self.nominated.items()
                if (keep := [p for p in pods.values() if p.priority >= pod.priority])
            }
        i = pod.nominated_node
        if i is None or pod not in hit.get(i, ()):
            return hit
        out = dict(hit)
        if keep := [p for p in hit[i] if p is not pod]:
            out[i] = keep
        else:
            del out[i]
        return out

    def _nominated_requests(self, nominated: dict[int, list[PodInfo]]) -> dict[str, np.ndarray]:
        """Per node, the requests of its pods in `nominated` (a nominated_for answer), by PodInfo field.

        Kept for the last answer asked about: every pod of a priority gets the same answer, unchanged,
        until a nomination changes.
        """
        if self._nominated_req is not None and self._nominated_req[0] is nominated:
            return self._nominated_req[1]
        on = np.fromiter(nominated, dtype=np.int64, count=len(nominated))
        lists = list(nominated.values())
        names = {r for ps in lists for p in ps for r in p.extended if r in self.req_ext}
        cols = {}
        for field in ("milli_cpu", "memory", "nonzero_cpu", "nonzero_memory", "count", *sorted(names)):
            get = one_pod if field == "count" else extended_of(field) if field in names else attrgetter(field)
            col = cols[field] = np.zeros(len(self), dtype=np.int64)
            col[on] = np.fromiter((sum(map(get, ps)) for ps in lists), dtype=np.int64, count=on.size)
        self._nominated_req = (nominated, cols)
        return cols

    def reserve_nominated(self, idx: np.ndarray, nominated: dict[int, list[PodInfo]], sign: int) -> None:
        """reserve() of every pod `nominated` puts on the nodes `idx` (no repeats), all at once."""
        cols = self._nominated_requests(nominated)
        cpu, mem, nz_cpu, nz_mem, count = (
            sign * cols[f][idx] for f in ("milli_cpu", "memory", "nonzero_cpu", "nonzero_memory", "count")
        )
        ext = {r: sign * cols[r][idx] for r in self.req_ext if r in cols}
        self._shift(idx, cpu, mem, nz_cpu, nz_mem, count, ext, np.where(self.mem_limited[idx], mem, 0))

    def add_nominated(self, i: int, pods: list[PodInfo]) -> None:
        """Put nominated pods on node i for one filter pass (upstream adds them to a copy of the node)."""
        for p in pods:
            self._add(i, p)

    def remove_nominated(self, i: int, pods: list[PodInfo]) -> None:
        for p in pods:
            self._remove(i, p)

    def check(self, i: int) -> None:
        over = []
        if self.req_cpu[i] > self.alloc_cpu[i]:
            over.append(f"cpu {self.req_cpu[i]}m > {self.alloc_cpu[i]}m")
        if self.mem_limited[i] and self.req_mem[i] > self.alloc_mem[i]:
            over.append(f"memory {self.req_mem[i]} > {self.alloc_mem[i]}")
        if self.pod_count[i] > self.alloc_pods[i]:
            over.append(f"pods {self.pod_count[i]} > {self.alloc_pods[i]}")
        for r in self.ext_names:
            if self.req_ext[r][i] > self.alloc_ext[r][i]:
                over.append(f"{r} {self.req_ext[r][i]} > {self.alloc_ext[r][i]}")
        if over:
            raise InvariantViolation(f"node {self.names[i]} over-allocated: {', '.join(over)}")

    def over_allocated(self) -> int:
        """How many nodes break the invariant now (0 in every correct run)."""
        bad = (self.req_cpu > self.alloc_cpu) | (self.pod_count > self.alloc_pods)
        bad |= self.mem_limited & (self.req_mem > self.alloc_mem)
        for r in self.ext_names:
            bad |= self.req_ext[r] > self.alloc_ext[r]
        return int(bad.sum())
