"""The real-Kubernetes backend: nodes and pods live in a kube-apiserver, any scheduler binds them.

The adapter plays the parts a real cluster's kubelets would: it creates Ready nodes (labelled and
tainted as simulated, so nothing but the run's pods lands there), creates a pod per job in a namespace of
its own, turns each binding it sees into EXECUTE_JOB and, on JOB_COMPLETED, deletes the pod at once (a
status update to Succeeded first would cost an API call and a scheduler event per job for nothing the
scheduler reads) — kube-scheduler frees a node's resources only on a delete it sees (KUBE_SCHEDULER.md §4.7).
How long to wait for the scheduler at each Batsim step is the sync policy's business (sync.py).
"""

from __future__ import annotations

import logging
import time
import uuid

import numpy as np
from kubernetes import client

from batkube_py import quantities
from batkube_py.cluster import apicalls, base, expedite, fit, kubelet
from batkube_py.cluster.apicalls import ApiCalls
from batkube_py.cluster.base import BackendError, Binding, Unschedulable
from batkube_py.cluster.faults import FaultLog
from batkube_py.cluster.kubelet import SIMULATED
from batkube_py.cluster.schedmetrics import MetricsSource
from batkube_py.cluster.sync import SchedulerUnresponsive, SettlePolicy, SyncOptions, TimeoutPolicy
from batkube_py.controlplane.kubehttp import KubeHttp
from batkube_py.controlplane.podwatch import PodWatch
from batkube_py.scheduler.snapshot import InvariantViolation, NodeTable

log = logging.getLogger(__name__)


class ApiServerCluster(expedite.BackoffExpedite):
    def __init__(
        self,
        nodes: list[client.V1Node],
        api: client.ApiClient,
        sync: SyncOptions,
        scheduler_names: set[str] | None = None,
        kube_names: set[str] | frozenset[str] = frozenset(),
        retries: int | None = None,
        namespace: str | None = None,
    ):
        self.core = client.CoreV1Api(api)
        self.api = api
        self.faults = FaultLog(lambda: getattr(self, "now", None))
        self.calls = ApiCalls(retries, patience=sync.patience, faults=self.faults)
        self.run_id = uuid.uuid4().hex[:8]
        self.namespace = namespace or f"batkube-{self.run_id}"
        self.scheduler_names = scheduler_names
        self.kube_names = kube_names if sync.metrics_url else frozenset()
        self.opts = sync
        metrics = MetricsSource(sync.metrics_url) if sync.metrics_url else None
        self.policy: SettlePolicy | TimeoutPolicy = (
            TimeoutPolicy(sync) if sync.policy == "timeout" else SettlePolicy(sync, metrics)
        )
        self.node_alloc = {n.metadata.name: quantities.allocatable(n.status.allocatable) for n in nodes}
        self.node_used: dict[str, list[int]] = {n: [0, 0, 0] for n in self.node_alloc}
        self._labels = NodeTable(nodes)  # the empty cluster's labels, for nodeSelector / affinity
        self._empty_room = expedite.room(self.node_alloc, {n: [0, 0, 0] for n in self.node_alloc})
        self.requests: dict[str, tuple[int, int]] = {}
        self.priorities: dict[str, int] = {}
        self._left: set[str] = set()  # pods left in wall-clock backoff at this step (expedite.py)
        self.node_of: dict[str, str] = {}
        self.nodes = [n.metadata.name for n in nodes]
        self.broken: str | None = None
        self._over = 0
        self._wake: float | None = None
        self._watch_seen = (0, 1)  # (reconnects, relists) after the initial list
        self._classes: set[str] = set()
        self.specs: dict[str, client.V1Pod] = {}
        self.now = 0.0
        self.recreated = 0
        self.left_in_backoff = 0
        self._fences: dict[str, int] = {"UnschedulablePodAdd": 0, "AssignedPodDelete": 0, "NodeAdd": 0}
        self._closed = False
        self._cordoned: set[str] = set()
        self.facts: dict[str, str] = {}  # sync policy and Kubernetes version, for summary.json
        self._unfenced_deletes = False
        self._moved = False  # a delete or node change since the last cycle
        self.watch = PodWatch(self.core, self.namespace, self.faults)
        self.http = KubeHttp(api)
        try:
            self._create_cluster(nodes)
        except Exception:
            self.close()
            raise

    def _create_cluster(self, nodes: list[client.V1Node]) -> None:
        ns = client.V1Namespace(metadata=client.V1ObjectMeta(name=self.namespace, labels={SIMULATED: "true"}))
        if isinstance(self.policy, SettlePolicy):
            self.policy.baseline()
        self.calls("create namespace", self.core.create_namespace, ns)
        sa = client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="default"))
        self.calls(
            "create service account",
            self.core.create_namespaced_service_account,
            self.namespace,
            sa,
            ok=(409,),
        )
        self._fences["NodeAdd"] += len(nodes)
        kubelet.create_nodes(nodes, self.run_id, self.calls, self.http)
        self.calls("list the run's pods", lambda **_: self.watch.start())  # retried like any call
        try:
            self.policy.wait_nodes(len(nodes))
        except SchedulerUnresponsive as exc:
            raise BackendError(str(exc)) from None
        log.info("created %d nodes and namespace %s", len(nodes), self.namespace)

    # ---- Backend protocol -----------------------------------------------------------------------

    def serves(self, scheduler_name: str) -> bool:
        return self.scheduler_names is None or scheduler_name in self.scheduler_names

    def fits_empty_cluster(self, pod: client.V1Pod) -> str | None:
        request = expedite.Request(*quantities.pod_requests(pod))
        rooms = [tuple(f) for f in self._empty_room.values()]
        ok = np.array([expedite.fits(request, f) for f in self._empty_room.values()], dtype=bool)
        return fit.never_fits(pod, self._labels, ok, rooms)

    def add_pod(self, pod: client.V1Pod, job_id: str, now: float) -> None:
        if self.broken:
            return
        name = self._prepare(pod)
        kube = pod.spec.scheduler_name in self.kube_names
        if self._unfenced_deletes and isinstance(self.policy, SettlePolicy):
            try:
                self.policy.fence(self, "AssignedPodDelete")
            except SchedulerUnresponsive as exc:
                self._break(str(exc))
        self._unfenced_deletes = False
        self.watch.track(name, kube=kube)
        self._fences["UnschedulablePodAdd"] += kube
        try:
            self.calls(f"create pod {name}", self.http.create_pod, self.namespace, pod, ok=(409,))
        except BackendError as exc:
            self._break(str(exc))
        if isinstance(self.policy, TimeoutPolicy):
            self.policy.reset()

    def supports_gates(self) -> bool:
        return False

    no_gates_reason = (
        "a scheduling gate lifted on the simulated clock: the embedded backend, or --backend apiserver with "
        "--sync queue (kube-scheduler 1.37.2) or paced; this scheduler runs on the wall clock"
    )

    def _prepare(self, pod: client.V1Pod) -> str:
        """Make the job's pod one of this run's (namespace, toleration of the simulated nodes' taint,
        priority through a PriorityClass) and remember what the adapter needs of it."""
        name = pod.metadata.name
        pod.metadata.namespace = self.namespace
        pod.spec.tolerations = [
            *(pod.spec.tolerations or []),
            client.V1Toleration(key=SIMULATED, operator="Exists", effect="NoSchedule"),
        ]
        pod.spec.automount_service_account_token = False
        self.priorities[name] = pod.spec.priority or 0
        if pod.spec.priority:  # the Priority admission plugin only accepts a value through a class
            pod.spec.priority_class_name = self._priority_class(pod.spec.priority)
        pod.spec.priority = None
        self.requests[name] = quantities.pod_requests(pod)
        self.specs[name] = pod
        return name

    def _priority_class(self, value: int) -> str:
        name = f"batkube-{self.run_id}-{'m' if value < 0 else ''}{abs(value)}"
        if name not in self._classes:
            pc = client.V1PriorityClass(
                metadata=client.V1ObjectMeta(name=name, labels={SIMULATED: self.run_id}),
                value=value,
                preemption_policy="PreemptLowerPriority",
            )
            sched = client.SchedulingV1Api(self.api)
            self.calls(f"create priority class {name}", sched.create_priority_class, pc, ok=(409,))
            self._classes.add(name)
        return name

    def _forget(self, name: str) -> str | None:
        """Drop what the adapter kept of the pod and free its node's room; returns its node."""
        node = self.node_of.pop(name, None)
        req = self.requests.pop(name, (0, 0))
        self.specs.pop(name, None)
        self.priorities.pop(name, None)
        if node is not None:
            used = self.node_used[node]
            used[0], used[1], used[2] = used[0] - req[0], used[1] - req[1], used[2] - 1
        self.watch.forget(name)
        return node

    def delete_pod(self, name: str, now: float) -> None:
        node = self._forget(name)
        if self.broken:
            return
        try:
            if node is not None:
                self._fences["AssignedPodDelete"] += 1
                self._unfenced_deletes = self._moved = True
            self.calls(
                f"delete pod {name}",
                self.http.delete_pod,
                name,
                self.namespace,
                ok=(404,),
            )
        except BackendError as exc:
            self._break(str(exc))
        if isinstance(self.policy, TimeoutPolicy):
            self.policy.reset()

    def set_nodes_schedulable(self, nodes: list[str], schedulable: bool, now: float) -> None:
        self._moved = True
        (self._cordoned.difference_update if schedulable else self._cordoned.update)(nodes)
        for name in nodes:
            if not self.broken:
                try:
                    self.calls(
                        f"cordon {name}",
                        self.http.patch_node,
                        name,
                        {"spec": {"unschedulable": not schedulable}},
                    )
                except BackendError as exc:
                    self._break(str(exc))

    def _alive(self) -> None:
        if self.broken:
            raise BackendError(self.broken)
        if self.watch.error:
            raise BackendError(self.watch.error)

    def schedule(self, now: float) -> list[Binding]:
        self._alive()
        self.now = now
        self._left = set()
        try:
            limit = None
            if isinstance(self.policy, TimeoutPolicy):
                limit = self.policy.settle(self)
            else:
                self.policy.settle(self)
        except SchedulerUnresponsive as exc:
            with self.watch.cond:
                waiting = [n for n, v in self.watch.pods.items() if v.node is None]
            apicalls.log_pending(self.core, self.namespace, waiting[:20])
            self._break(str(exc))
            raise BackendError(str(exc)) from None
        out = []
        for pod, node in self.watch.take_bindings(limit):
            if pod not in self.requests or pod in self.node_of:
                continue
            self._bound(pod, node)
            out.append(Binding(pod, node))
        self._wake = self.policy.next_wakeup(now, self)
        # a parked pod is retried only after an event that may help it (a delete, a node change, a
        # binding): a cycle that only created pods leaves the others' last attempt where it was
        retried, self._moved = self._moved or bool(out), False
        with self.watch.cond:
            for v in self.watch.pods.values():
                if v.node is None and (retried or v.since < 0):
                    v.since = now
        if self._over:
            raise InvariantViolation(f"{self._over} bindings over-allocated a node (see batkube.log)")
        return out

    def _bound(self, name: str, node: str) -> None:
        """Account the binding on its node, as the node's kubelet would; a binding beyond allocatable is
        a scheduler bug the run reports (InvariantViolation)."""
        self.node_of[name] = node
        used, alloc, req = self.node_used[node], self.node_alloc[node], self.requests[name]
        used[0], used[1], used[2] = used[0] + req[0], used[1] + req[1], used[2] + 1
        if used[0] > alloc[0] or (alloc[1] >= 0 and used[1] > alloc[1]) or used[2] > alloc[2]:
            self._over += 1
            log.error("node %s over-allocated by the binding of %s: used %s of %s", node, name, used, alloc)

    def take_evictions(self) -> list[base.Eviction]:
        """Bound pods deleted by someone else (kube-scheduler preempting them): Batsim must kill them."""
        with self.watch.cond:
            out, self.watch.evictions = self.watch.evictions, []
        return [base.Eviction(p, why) for p, why in out if p in self.node_of]

    def give_up_pending(self, now: float) -> list[Unschedulable]:
        """Pods the scheduler marked unschedulable once nothing runs and nothing more will come.

        Under the settle policy a mark is the scheduler's answer to the current state. Under Batkube's
        timeout policy it may predate the last completions (the scheduler retries after its wall-clock
        backoff, and bindings wait to be handed out one per step), so there the pods are given up only
        after `crash_timeout` wall seconds without any decision, as Batkube's deadlock detection would.
        """
        if self.node_of or self.broken:
            return []
        if isinstance(self.policy, TimeoutPolicy) and (
            self.new_bindings() or time.monotonic() - self.policy.last_decision < self.opts.crash_timeout
        ):
            return []
        gone = []
        with self.watch.cond:
            pending = [(n, v) for n, v in self.watch.pods.items() if v.node is None and v.marked]
        for name, view in pending:
            self.delete_pod(name, now)
            gone.append(Unschedulable(name, view.reason or "unschedulable"))
        return gone

    def next_wakeup(self) -> float | None:
        wake, self._wake = self._wake, None
        return None if self.broken else wake

    def pending(self) -> int:
        return self.unbound()

    def running(self) -> int:
        return len(self.node_of)

    def report(self) -> dict:
        return {**self.facts, **self.fault_report()}

    def fault_report(self) -> dict:
        """The faults seen, the retries they cost, and the pod watch's reconnections (summary.json)."""
        return {**self.faults.summary(), "watch_reconnects": self.watch.reconnects,
                "watch_relists": max(0, self.watch.relists - 1)}  # fmt: skip

    def over_allocations(self) -> int:
        return self._over

    disposable = False  # the control plane is this run's own and stops with it (session.py)

    def close(self, interrupted: bool = False) -> None:
        """Delete the run's nodes and namespace, whatever happened before. An interrupted run drops the
        writes still queued, and leaves its objects to a control plane of its own that stops next:
        deleting thousands of pods one by one took the apiserver half a minute after a Ctrl-C."""
        if self._closed:
            return
        self._closed = True
        if self.recreated or self.left_in_backoff:
            log.info("backoff expedite: %d pods recreated, %d retries that could change nothing skipped",
                     self.recreated, self.left_in_backoff)  # fmt: skip
        self.watch.stop()
        self.calls.close(cancel=interrupted)
        selector = f"{SIMULATED}={self.run_id}"
        if interrupted and self.disposable:
            log.info("interrupted: namespace %s is left to the run's own control plane, stopped next",
                     self.namespace)  # fmt: skip
            return
        if self.calls.gave_up:  # the run's objects are not worth a hang on an apiserver that is away
            log.error("cleanup skipped (%s): delete namespace %s and the nodes labelled %s by hand",
                      self.calls.gave_up, self.namespace, selector)  # fmt: skip
            return
        apicalls.cleanup(self.api, self.namespace, selector, 5 if self.broken else 30)

    # ---- ClusterView for the sync policies --------------------------------------------------------

    def unbound(self, kube: bool | None = None) -> int:
        return self.watch.count(kube)

    def unmarked(self, kube: bool | None = None) -> int:
        return self.watch.count(kube, unmarked=True)

    def fences(self) -> dict[str, int]:
        return self._fences

    def disrupted(self, clear: bool = False) -> bool:
        seen = (self.watch.reconnects, self.watch.relists)
        if clear:
            self.calls.outage, self._watch_seen = False, seen
        return self.calls.outage or seen != self._watch_seen

    def new_bindings(self) -> int:
        return len(self.watch.bound)

    def owed(self) -> int:
        """Pending pods of other schedulers (no /metrics) that fit some node's free room now: a mark
        they carry may predate the delete that made the room, and a scheduler busy with its backlog
        makes no pod event, so silence is no answer for them (sync.py's settle waits)."""
        with self.watch.cond:
            pending = [n for n, v in self.watch.pods.items() if v.node is None and not v.kube]
            if not pending:
                return 0
            free, _ = self._free()
        names = self._labels.names
        rooms = [tuple(free[n]) for n in names]
        usable = [n not in self._cordoned for n in names]
        owed = 0
        for name in pending:
            if (pod := self.specs.get(name)) is None:
                continue
            req = expedite.Request(*self.requests[name])
            ok = np.array([u and expedite.fits(req, free[n]) for n, u in zip(names, usable, strict=True)])
            owed += bool(ok.any()) and fit.never_fits(pod, self._labels, ok, rooms) is None
        return owed

    def last_event_age(self) -> float:
        """Since the last pod event or the adapter's last write, whichever came later: a write's events
        reach the watches a moment after it returns, so a quiet period measured from an older event
        let a scheduler without metrics miss a pod the adapter had just deleted (its binding landed a
        step late)."""
        return time.monotonic() - max(self.watch.last_event, self.calls.last_return)

    def wait_event(self, timeout: float) -> None:
        if self.watch.error:
            raise BackendError(self.watch.error)
        with self.watch.cond:
            self.watch.cond.wait(timeout)

    def _break(self, reason: str) -> None:
        if self.broken is None:
            log.error("%s", reason)
            self.broken = reason
