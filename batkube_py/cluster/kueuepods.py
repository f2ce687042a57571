"""A run's pods under the real Kueue: what Kueue's pod webhook leaves on a pod (batkube does its work,
as the loopback control plane serves no webhooks: docs/kueue.md), and the HTTP client that notes every
pod write for Kueue's settle and holds back the deletion of Kueue's pods until that settle."""

from __future__ import annotations

import threading

from kubernetes import client

from batkube_py.controlplane import kueue as kq

RELEASE_GATE = "batkube.io/release"
HELD = {kq.ADMISSION_GATE, kq.TOPOLOGY_GATE, RELEASE_GATE}  # the gates a pod has until Kueue admits it


def as_webhook_leaves_it(pod: client.V1Pod, order: int) -> client.V1Pod:
    """The managed label, Kueue's finalizer, its admission and topology gates, its role hash, plus
    batkube's release gate and FIFO label (`order`, the simulated submission in nanoseconds)."""
    labels = {**(pod.metadata.labels or {}), kq.MANAGED_LABEL: "true", kq.QUEUE_ORDER_LABEL: str(order)}
    gate = client.V1PodSchedulingGate
    # Kueue's pod webhook gates every pod for TAS too (TopologyAwareScheduling is on by default in
    # v0.17.0): admission lifts that gate unless the workload gets a topology assignment, then the
    # topology ungater does
    gates = [gate(name=kq.ADMISSION_GATE), gate(name=kq.TOPOLOGY_GATE), gate(name=RELEASE_GATE),
             *(pod.spec.scheduling_gates or [])]  # fmt: skip
    annotations = {**(pod.metadata.annotations or {}), kq.ROLE_HASH_ANNOTATION: kq.role_hash(pod.spec)}
    meta = pod.metadata.model_copy(update={
        "labels": labels, "annotations": annotations,
        "finalizers": [*(pod.metadata.finalizers or []), kq.FINALIZER]})  # fmt: skip
    return pod.model_copy(
        update={"metadata": meta, "spec": pod.spec.model_copy(update={"scheduling_gates": gates})}
    )


class RecordingHttp:
    """The cluster's KubeHttp, noting the resourceVersion of every pod it writes (Kueue's settle waits
    until its informers have delivered them), and holding back the deletion of pods Kueue manages: a pod
    deleted before Kueue saw it finish only has its finalizers dropped, and its Workload keeps its quota
    until the garbage collector, which this control plane does not run, deletes it."""

    def __init__(self, http, note, held: set[str]):
        self._http, self._note, self._held = http, note, held
        self.deferred: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def __getattr__(self, name):
        return getattr(self._http, name)

    def create_pod(self, *args, **kw):
        return self._note(self._http.create_pod(*args, **kw))

    def delete_pod(self, name: str, namespace: str, **kw):
        if name in self._held:
            with self._lock:
                self.deferred.append((name, namespace))
            return None
        return self._note(self._http.delete_pod(name, namespace, **kw))

    def take_deferred(self) -> list[tuple[str, str]]:
        with self._lock:
            out, self.deferred = self.deferred, []
        for name, _ in out:
            self._held.discard(name)
        return out
