"""The real kube-scheduler on the simulated clock: the twin's queue decides *when* a pod is tried, the
real scheduler decides *where* it goes.

kube-scheduler keeps its queue (backoff per attempt, the 1-s backoffQ flush, the 30-s flush of pods
parked for 5 min, QueueingHints) on the wall clock, where a Batsim run's hours pass in seconds; nothing
in its configuration moves that clock. So the queue is the twin's (scheduler/queue.py, upstream's rules
on the simulated clock, fed the same events), and each pod it pops is handed to the real scheduler as
a pod it has never seen: created at that instant, tried at once, with no backoff of its own. A pod the
real scheduler cannot place is deleted again (a pod it keeps would be retried on its wall clock), unless
its preemption nominated it somewhere: then it stays, behind a scheduling gate the real scheduler cannot
pass, with its nomination in its status so that other pods are filtered with it on that node, as
upstream's nominator does. Every binding is the real scheduler's; the twin mirrors it and checks it
(parity.py). A retry is skipped, and counted as the failure it would be, only when the pod fits no
node's free cpu / memory / pod slots and cannot preempt: no correct scheduler binds beyond allocatable.
See docs/sync.md.
"""

from __future__ import annotations

import copy
import logging
import math
import time
from datetime import UTC, datetime, timedelta

import numpy as np
from kubernetes import client

from batkube_py.cluster.apiserver import ApiServerCluster
from batkube_py.cluster.base import BackendError, Binding, Unschedulable
from batkube_py.cluster.embedded import EmbeddedCluster, Outcome
from batkube_py.cluster.parity import Parity
from batkube_py.cluster.sync import SchedulerUnresponsive, SyncOptions
from batkube_py.scheduler.framework import Decision, Profile
from batkube_py.scheduler.plugins.noderesources import fits
from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.queue import QueueConfig
from batkube_py.scheduler.snapshot import InvariantViolation

log = logging.getLogger(__name__)

GATE = "batkube.io/simulated-clock"
START_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)  # simulated time 0 as a pod's status.startTime
NODE_EVENT = "NodeUpdateNodeAnnotation"  # the metric label of the annotation that fences a node change


class PacedCluster(ApiServerCluster):
    def __init__(
        self,
        nodes: list[client.V1Node],
        api: client.ApiClient,
        sync: SyncOptions,
        profiles: list[Profile],
        queue_config: QueueConfig,
        kube_names: set[str] | frozenset[str],
        parity: Parity | None = None,
        **kw,
    ):
        self.shadow = EmbeddedCluster(copy.deepcopy(nodes), profiles=profiles, queue_config=queue_config,
                                      attempts=self)  # fmt: skip
        self.parity = parity or Parity(None)
        self._in_api: dict[str, str] = {}  # pod → uid of its incarnation in the apiserver
        self._node_patches = 0
        self._nodes_unfenced = False
        super().__init__(nodes, api, sync, scheduler_names=set(kube_names), kube_names=kube_names, **kw)

    # ---- Backend protocol -----------------------------------------------------------------------

    def add_pod(self, pod: client.V1Pod, job_id: str, now: float) -> None:
        if self.broken:
            return
        self.shadow.add_pod(pod, job_id, now)
        self._prepare(copy.deepcopy(pod))

    def supports_gates(self) -> bool:
        return True  # the twin's queue decides when a pod reaches kube-scheduler: a gated one, once lifted

    def ungate_pod(self, name: str, now: float) -> None:
        self.shadow.ungate_pod(name, now)

    def delete_pod(self, name: str, now: float) -> None:
        if name in self.shadow.pods:
            self.shadow.delete_pod(name, now)
        if self._in_api.pop(name, None) is not None:
            super().delete_pod(name, now)
        else:
            self._forget(name)  # never in the apiserver (or deleted after its last failed attempt)

    def set_nodes_schedulable(self, nodes: list[str], schedulable: bool, now: float) -> None:
        self.shadow.set_nodes_schedulable(nodes, schedulable, now)
        for name in nodes:
            self._node_patches += 1
            # the annotation makes the update an event kube-scheduler counts (a cordon alone is not one),
            # so the next attempt can wait until its cache has the node as it is now
            patch = {"metadata": {"annotations": {"batkube.io/change": str(self._node_patches)}},
                     "spec": {"unschedulable": not schedulable}}  # fmt: skip
            try:
                self.calls(f"cordon {name}", self.core.patch_node, name, patch)
            except BackendError as exc:
                self._break(str(exc))
        self._fences[NODE_EVENT] = self._node_patches
        self._nodes_unfenced = True

    def schedule(self, now: float) -> list[Binding]:
        self._alive()
        self.now = now
        out = self.shadow.schedule(now)
        if self._over:
            raise InvariantViolation(f"{self._over} bindings over-allocated a node (see batkube.log)")
        return out

    def give_up_pending(self, now: float) -> list[Unschedulable]:
        gone = self.shadow.give_up_pending(now)
        for g in gone:
            self.delete_pod(g.pod, now)
        return gone

    def next_wakeup(self) -> float | None:
        return None if self.broken else self.shadow.next_wakeup()

    def pending(self) -> int:
        return self.shadow.pending()

    def running(self) -> int:
        return self.shadow.running()

    def report(self) -> dict:
        return {**self.facts, **self.fault_report(), "real_attempts": self.parity.attempts,
                **self.parity.summary(), **self.shadow.report()}  # fmt: skip

    def close(self, interrupted: bool = False) -> None:
        if not self._closed:
            log.info("paced: %d attempts by the real scheduler, %d skipped (fit no node's free room)",
                     self.parity.attempts, self.parity.skipped_attempts)  # fmt: skip
            self.parity.close()
        super().close(interrupted)

    # ---- one attempt ----------------------------------------------------------------------------

    def attempt(self, pod: PodInfo, twin: Decision, now: float) -> Outcome:
        if self.broken:
            raise BackendError(self.broken)
        if pod.nominated_node is None and self._futile(pod):
            self.parity.skipped(pod, twin, self.shadow.nodes.names, now)
            return Outcome(None)
        name = pod.name
        try:
            self._fence()
            evicted_before = len(self.watch.evictions)
            if name in self._in_api:  # a nominated preemptor: lift its gate, its nomination stays
                ungate = [{"op": "remove", "path": "/spec/schedulingGates"}]
                self.calls(f"ungate pod {name}", self.core.patch_namespaced_pod, name, self.namespace, ungate)
            else:
                self.watch.track(name)
                self._create(name, gated=False)
            view = self._outcome(name)
        except SchedulerUnresponsive as exc:
            self._break(str(exc))
            raise BackendError(str(exc)) from None
        except BackendError as exc:
            self._break(str(exc))
            raise
        index = self.shadow.nodes.index
        if view.node is not None:
            self.watch.take_bindings()
            self._bound(name, view.node)
            # the kubelet's part: preemption prefers victims that started last (whole seconds, as the API)
            started = {"status": {"startTime": START_EPOCH + timedelta(seconds=math.floor(now))}}
            self.calls(f"start pod {name}", self.core.patch_namespaced_pod_status, name, self.namespace,
                       started)  # fmt: skip
            self.parity.check(pod, twin, self.shadow, index[view.node], now)
            return Outcome(index[view.node])
        with self.watch.cond:
            victims = tuple(p for p, _ in self.watch.evictions[evicted_before:])
        nominated = index.get(view.nominated) if view.nominated else None
        self.parity.failed(pod, twin, self.shadow, nominated, view.reason, now)
        self._retire(name)
        if view.nominated is not None:
            self._create(name, gated=True, nominated=view.nominated)
        return Outcome(None, nominated, victims)

    def _futile(self, pod: PodInfo) -> bool:
        """Fits no schedulable node's free room and cannot preempt (no running pod of lower priority)."""
        t = self.shadow.nodes
        lowest = t.lowest_priority()
        if lowest is not None and pod.priority > lowest:
            return False
        free_cpu, free_mem, free_pods = t.free(t.all)
        ok = fits(pod.milli_cpu, pod.memory, free_cpu, free_mem, free_pods, t.mem_limited)
        return not bool(np.any(ok & t.schedulable))

    def _fence(self) -> None:
        """kube-scheduler handles assigned and unassigned pods in separate informer listeners: a pod
        created right after a bound pod's delete can be tried on a cache that still holds the deleted
        one (it would fail for no reason). So the attempt waits until the scheduler has handled every
        delete and node change the adapter made (counted by event label in its /metrics)."""
        if not self.opts.metrics_url:
            return
        try:
            self._fence_all()
        except SchedulerUnresponsive as exc:  # no pending pod lives in the apiserver: name the scheduler
            who = f"kube-scheduler ({self.opts.metrics_url})"
            raise SchedulerUnresponsive(f"{who} stopped answering: {exc}") from None

    def _fence_all(self) -> None:
        if self._unfenced_deletes:
            self.policy.fence(self, "AssignedPodDelete")
            self._unfenced_deletes = False
        if self._nodes_unfenced:
            self.policy.fence(self, NODE_EVENT)
            self._nodes_unfenced = False

    def _create(self, name: str, gated: bool, nominated: str | None = None) -> None:
        pod = copy.copy(self.specs[name])
        pod.metadata = copy.copy(pod.metadata)
        pod.metadata.resource_version = pod.metadata.uid = None
        pod.spec = copy.copy(pod.spec)
        pod.spec.scheduling_gates = [client.V1PodSchedulingGate(name=GATE)] if gated else None
        made = self.calls(f"create pod {name}", self.core.create_namespaced_pod, self.namespace, pod)
        self._in_api[name] = made.metadata.uid
        if nominated is not None:
            status = {"status": {"nominatedNodeName": nominated}}
            self.calls(f"nominate pod {name}", self.core.patch_namespaced_pod_status, name, self.namespace,
                       status)  # fmt: skip

    def _retire(self, name: str) -> None:
        """Delete the pod's current incarnation (gated, or just failed) and ignore its late events."""
        uid = self._in_api.pop(name, None)
        if uid is None:
            return
        self.watch.retire(name, uid)
        self.calls(f"delete pod {name}", self.core.delete_namespaced_pod, name, self.namespace,
                   grace_period_seconds=0, ok=(404,))  # fmt: skip

    def _outcome(self, name: str):
        """Block until the real scheduler has bound the pod or marked it unschedulable."""
        deadline = time.monotonic() + self.opts.crash_timeout
        with self.watch.cond:
            while True:
                view = self.watch.pods.get(name)
                if view is not None and (view.node is not None or view.marked):
                    return view
                if self.watch.error:
                    raise BackendError(self.watch.error)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SchedulerUnresponsive(
                        f"kube-scheduler neither bound nor marked pod {name} within "
                        f"{self.opts.crash_timeout:.0f} s; see <controlplane dir>/kube-scheduler.log"
                    )
                self.watch.cond.wait(min(left, 0.5))
