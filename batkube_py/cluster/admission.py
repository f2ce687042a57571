"""Where Kueue's admission meets scheduling (--queues): the embedded backend behind the Kueue twin.

As in a cluster with Kueue's pod integration, a pod naming a LocalQueue (kueue.x-k8s.io/queue-name) is
created with Kueue's scheduling gate `kueue.x-k8s.io/admission`, so kube-scheduler's twin holds it
(a pod group waits for its gated members); its Workload (the pod's, or its group's) queues in the
Kueue twin. When the twin admits the Workload, its pods get the flavors' node labels in their
nodeSelector and the flavors' tolerations, and lose the gate: the scheduler places them as usual. The
quota is released when the pods are deleted (completed or killed). A Kueue preemption victim that runs
is reported as an Eviction (the adapter kills its Batsim job and resubmits it); one whose pods are not
bound yet is deleted at once, its quota freed, and reported too, so the adapter gives the job new pods.
"""

from __future__ import annotations

import logging

from kubernetes import client

from batkube_py.cluster.base import Admission, BackendError, Eviction, Unschedulable
from batkube_py.inputs.queues import QueuesConfig, amount
from batkube_py.kueue import podset
from batkube_py.kueue.cache import tas
from batkube_py.kueue.twin import KueueTwin
from batkube_py.kueue.workload import Workload, labels_of, pod_requests, topology_of
from batkube_py.scheduler.podgroup import group_of

log = logging.getLogger(__name__)

KUEUE_GATE = "kueue.x-k8s.io/admission"


def flavor_text(wl: Workload, twin: KueueTwin) -> str:
    """The workload's flavors, one per resource group it uses, in the ClusterQueue's group order."""
    spec = twin.cache.specs[wl.cluster_queue]
    out = []
    for group in spec.groups:
        names = [wl.flavors[r] for r in group.covered if r in wl.flavors]
        if names:
            out.append(names[0])
    return ",".join(out)


class KueueAdmission:
    """A Backend: the embedded cluster (`inner`) with the Kueue twin in front of it."""

    def __init__(self, inner, queues: QueuesConfig):
        self.inner = inner
        self.twin = KueueTwin(queues)
        self.twin.cache.cluster = self._cluster
        self._workload_of: dict[str, Workload] = {}  # pod → its Workload, while the pod exists
        self._gone: set[str] = set()  # pods deleted here (unbound preemption victims, given up)
        self._stopped: set[Workload] = set()  # Workloads whose eviction was reported, until their pods go
        self._admissions: list[Admission] = []
        self._evictions: list[Eviction] = []
        self._seq = 0
        self.preempted = 0

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    # ---- pods in and out ---------------------------------------------------------------------------

    def add_pod(self, pod: client.V1Pod, job_id: str, now: float) -> None:
        queue, priority_class = labels_of(pod)
        if queue is None:  # manageJobsWithoutQueueName is false: Kueue leaves the pod alone
            return self.inner.add_pod(pod, job_id, now)
        self._gone.discard(pod.metadata.name)
        name = group_of(pod) or pod.metadata.name
        wl = self.twin.workloads.get(name)
        if wl is None or wl.usage is not None:
            self._seq += 1
            priority = self.twin.priority(priority_class, pod.spec.priority or 0)
            cq = self.twin.cache.lq_to_cq[queue]
            wl = Workload(name, queue, cq, priority, now, self._seq, pod_requests(pod), pod,
                          topology=topology_of(pod), plain=group_of(pod) is None)  # fmt: skip
            self.twin.submit(wl)
        wl.pods.append(pod.metadata.name)
        self._workload_of[pod.metadata.name] = wl
        pod.spec.scheduling_gates = [
            *(pod.spec.scheduling_gates or []),
            client.V1PodSchedulingGate(name=KUEUE_GATE),
        ]
        self.inner.add_pod(pod, job_id, now)

    def delete_pod(self, name: str, now: float) -> None:
        if name in self._gone:
            self._gone.discard(name)
            return
        self.inner.delete_pod(name, now)
        if (wl := self._workload_of.pop(name, None)) is None:
            return
        wl.pods.remove(name)
        if not wl.pods:
            self._stopped.discard(wl)
            self.twin.finish(wl)

    def ungate_pod(self, name: str, now: float) -> None:
        """Another gate lifted (gatedUntil): the pod stays behind Kueue's gate until admitted."""
        pod = self._pod(name)
        gates = (pod.spec.scheduling_gates or []) if pod is not None else []
        if any(g.name == KUEUE_GATE for g in gates):
            pod.spec.scheduling_gates = [g for g in gates if g.name == KUEUE_GATE]
            return
        self.inner.ungate_pod(name, now)

    def _pod(self, name: str) -> client.V1Pod | None:
        info = self.inner.pods.get(name)
        return info.pod if info is not None else None

    # ---- the cycle ----------------------------------------------------------------------------------

    def schedule(self, now: float):
        decisions = self.twin.run(now)
        while True:
            for wl in decisions.admitted:
                self._admitted(wl, now)
            # a victim preempted again while its pod stops: Kueue finds no pod to delete, nothing to report
            fresh = [t for t in decisions.preempted if t.workload not in self._stopped]
            unbound = [t for t in fresh if not self._bound(t.workload)]
            for t in fresh:
                why = f"preempted by Kueue ({t.reason}) in ClusterQueue {t.workload.cluster_queue}"
                self._evictions.append(Eviction(t.workload.name, why))
                self._stopped.add(t.workload)
                self.preempted += 1
            for t in unbound:  # Kueue deletes the pods; not bound, they are gone at once
                for pod in list(t.workload.pods):
                    self.inner.delete_pod(pod, now)
                    self._gone.add(pod)
                    self._workload_of.pop(pod, None)
                t.workload.pods.clear()
                self._stopped.discard(t.workload)
                self.twin.finish(t.workload)
            if not unbound:
                break
            decisions = self.twin.run(now)
        return self.inner.schedule(now)

    def _bound(self, wl: Workload) -> bool:
        return any((info := self.inner.pods.get(p)) is not None and info.node is not None for p in wl.pods)

    def _admitted(self, wl: Workload, now: float) -> None:
        labels, tolerations = podset.flavor_changes(self.twin.cache.flavors, wl.flavors.values())
        domains = wl.tas.assignment.node_selectors() if wl.tas is not None else [{}] * len(wl.pods)
        for name, domain in zip(wl.pods, domains, strict=True):
            info = self.inner.pods[name]
            spec = info.pod.spec
            try:
                podset.merge(spec, labels, tolerations)
            except podset.MergeError as exc:  # Kueue's pod reconciler would retry it forever, gated
                raise BackendError(f"Kueue cannot start pod {name} of workload {wl.name}: {exc}") from None
            if domain:  # the topology ungater: the pod's domain, level by level
                spec.node_selector = {**(spec.node_selector or {}), **domain}
            info.cache.clear()
            rest = [g for g in spec.scheduling_gates or [] if g.name != KUEUE_GATE]
            if rest:
                spec.scheduling_gates = rest
            else:
                spec.scheduling_gates = [client.V1PodSchedulingGate(name=KUEUE_GATE)]
                self.inner.ungate_pod(name, now)
        self._admissions.append(
            Admission(wl.name, wl.queue, wl.cluster_queue, flavor_text(wl, self.twin), now)
        )

    def set_nodes_schedulable(self, nodes: list[str], schedulable: bool, now: float) -> None:
        """A node change retries every ClusterQueue's inadmissible workloads when there are TAS flavors
        (Kueue's TAS ResourceFlavor controller, on a node of a TAS flavor: NotifyRetryInadmissible)."""
        self.inner.set_nodes_schedulable(nodes, schedulable, now)
        if self.twin.cache.tas_usage:
            for q in self.twin.queues.queues.values():
                q.queue_inadmissible()

    def _cluster(self) -> tuple[list[tas.NodeInfo], dict[str, tas.Requests]]:
        """What Kueue's TAS cache sees: the schedulable nodes, and per node the requests of the bound
        pods that TAS did not place (non-TAS usage)."""
        t = self.inner.nodes
        nodes = [
            tas.NodeInfo(name, t.labels[i], tuple(t.taints[i]),
                         {r: amount(r, v) for r, v in (t.nodes[i].status.allocatable or {}).items()})
            for i, name in enumerate(t.names) if t.schedulable[i]
        ]  # fmt: skip
        non_tas: dict[str, tas.Requests] = {}
        for name, info in self.inner.pods.items():
            wl = self._workload_of.get(name)
            if info.node is not None and (wl is None or wl.tas is None):
                usage = non_tas.setdefault(t.names[info.node], {})
                tas.add(usage, {**pod_requests(info.pod), tas.PODS: 1})
        return nodes, non_tas

    # ---- reporting ----------------------------------------------------------------------------------

    def take_admissions(self) -> list[Admission]:
        out, self._admissions = self._admissions, []
        return out

    def take_evictions(self) -> list[Eviction]:
        out, self._evictions = [*self._evictions, *self.inner.take_evictions()], []
        return out

    def give_up_pending(self, now: float) -> list[Unschedulable]:
        """With no workload admitted any more, a pending one never will be (it was tried on empty quota)."""
        gone: list[Unschedulable] = []
        if not self.twin.admitted():
            for wl in [w for w in self.twin.pending() if not w.stopping]:
                why = f"Kueue never admits it in ClusterQueue {wl.cluster_queue}: {wl.message or 'no quota'}"
                for pod in list(wl.pods):
                    self.inner.delete_pod(pod, now)
                    self._gone.add(pod)
                    self._workload_of.pop(pod, None)
                    gone.append(Unschedulable(pod, why))
                wl.pods.clear()
                self.twin.finish(wl)
        return gone + self.inner.give_up_pending(now)

    def pending(self) -> int:
        return self.inner.pending()

    def close(self, interrupted: bool = False) -> None:
        if self.twin.observer is not None:  # admissions.jsonl (kueue/record.py)
            self.twin.observer.close()
        self.inner.close(interrupted)

    def report(self) -> dict:
        return {
            **self.inner.report(),
            "kueue_twin": "v0.17.0",
            "kueue_cycles": self.twin.cycles,
            "kueue_preemptions": self.preempted,
        }
