"""The real Kueue in front of the real kube-scheduler (`--queues` with `--backend apiserver`, `--sync
queue`): Kueue admits, kube-scheduler places, both on Batsim's clock (docs/kueue.md).

A pod is created as Kueue's pod webhook would leave it (the `managed` label, Kueue's admission gate, its
finalizer) with one more gate, batkube's: Kueue admits workloads in an order of its own making (its
admission patches and the pod patches that follow run concurrently), and kube-scheduler's queue takes
pods in the order their gates go. So each step is: the step's writes; Kueue's settle (it takes in the
writes, admits until it has nothing left to do at this time, and names the pods it ungated); batkube
lifts its own gate on those pods in their jobs' submission order; then kube-scheduler's settle. A
completed pod turns Succeeded before it is deleted (what the kubelet would report, and what Kueue
finishes a workload on).
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time

from kubernetes import client

from batkube_py.cluster.base import Admission, BackendError, Eviction, Unschedulable
from batkube_py.cluster.queued import QueueCluster
from batkube_py.controlplane import kueue as kq
from batkube_py.controlplane.clock import ClockError

log = logging.getLogger(__name__)

RELEASE_GATE = "batkube.io/release"
MAX_ROUNDS = 20  # Kueue settles in one step: preemption rounds before the step is declared stuck
_PREEMPTOR = re.compile(r"\(UID: [^,)]*, JobUID: ([^)]*)\)")


def stable_reason(why: str, pods: dict[str, str]) -> str:
    """Kueue's preemption message names the preemptor by its Workload's and pod's random UIDs: the pod's
    name instead, so that the same inputs give the same pods.csv."""
    return _PREEMPTOR.sub(lambda m: f"(pod {pods.get(m.group(1), 'unknown')})", why)


class _RecordingHttp:
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


class KueueCluster(QueueCluster):
    def __init__(self, *args, kueue: kq.KueueProcess, documents: list[dict], **kw):
        self.kueue = kueue
        self._documents = documents
        self.kueue_clock: kq.KueueClock | None = None
        self._order_ns = -1
        self._rv_lock = threading.Lock()
        self._pods_rv = 0
        self._pod_uids: dict[str, str] = {}  # uid → name of the pods the adapter created
        self._managed: dict[str, int] = {}  # Kueue-managed pods still pending admission: their order
        self._finishing: set[str] = set()  # finished pods to delete once Kueue has finished their Workload
        self._admissions: list[Admission] = []
        self._kueue_victims: list[Eviction] = []
        self._gone: set[str] = set()  # pods Kueue stopped
        self._stopping: set[str] = set()  # running pods Kueue stopped, until Batsim kills their jobs
        self.kueue_steps = 0
        self.kueue_wall = 0.0
        self.kueue_waits: dict[str, int] = {}  # polls of Kueue's settle per reason it was not yet quiet
        super().__init__(*args, **kw)

    def _note(self, out):
        meta = (out or {}).get("metadata") or {}
        rv = int(meta.get("resourceVersion") or 0)
        with self._rv_lock:
            self._pods_rv = max(self._pods_rv, rv)
            if meta.get("uid"):
                self._pod_uids[meta["uid"]] = meta.get("name", "")
        return out

    def _create_cluster(self, nodes: list[client.V1Node]) -> None:
        self.http = _RecordingHttp(self.http, self._note, self._finishing)
        super()._create_cluster(nodes)
        try:
            address = self.kueue.start(self.http, self._documents, self.namespace)
        except (kq.KueueError, client.rest.ApiException) as exc:
            raise BackendError(f"Kueue: {exc}") from None
        self.kueue_clock = kq.KueueClock(address, self.clock.run, timeout=self.opts.crash_timeout)
        self.facts["kueue_version"] = self.kueue.version()

    # ---- pods -----------------------------------------------------------------------------------

    def add_pod(self, pod: client.V1Pod, job_id: str, now: float) -> None:
        self._gone.discard(pod.metadata.name)  # a victim not bound yet comes back under its name
        labels = dict(pod.metadata.labels or {})
        if kq.QUEUE_LABEL not in labels:
            super().add_pod(pod, job_id, now)
            return
        # strictly increasing: jobs submitted at one instant keep their submission order in Kueue's FIFO
        self._order_ns = max(self._order_ns + 1, round(now * 1e9))
        labels.update({kq.MANAGED_LABEL: "true", kq.QUEUE_ORDER_LABEL: str(self._order_ns)})
        gate = client.V1PodSchedulingGate
        gates = [gate(name=kq.ADMISSION_GATE), gate(name=RELEASE_GATE), *(pod.spec.scheduling_gates or [])]
        meta = pod.metadata.model_copy(update={
            "labels": labels, "finalizers": [*(pod.metadata.finalizers or []), kq.FINALIZER]})  # fmt: skip
        pod = pod.model_copy(
            update={"metadata": meta, "spec": pod.spec.model_copy(update={"scheduling_gates": gates})}
        )
        self._managed[pod.metadata.name] = self._order_ns
        super().add_pod(pod, job_id, now)

    def add_pod_group(self, group, now: float) -> None:
        raise BackendError("a job on several hosts (a pod group) with --queues on the real backend is not "
                           "supported yet: use the embedded backend (docs/kueue.md)")  # fmt: skip

    def delete_pod(self, name: str, now: float, phase: str | None = None, held: bool = True) -> None:
        """What the kubelet would report first (Kueue finishes a workload on a terminal phase; kube-
        scheduler's pod informer sees the pod leave then), then the delete; Kueue lifts its finalizer."""
        if name in self._gone and held:
            return  # Kueue stopped it earlier (_stopped): the adapter's kill finds it gone
        if name in self._stopping:  # Batsim killed the job of a pod Kueue stopped
            self._stopping.discard(name)
            phase, held = "Failed", False
        if name in self.specs and not self.broken:
            if held and kq.FINALIZER in (self.specs[name].metadata.finalizers or []):
                self._finishing.add(name)
            self._managed.pop(name, None)
            phase = phase or ("Succeeded" if name in self.node_of else "Failed")
            self._drain()
            try:
                path = f"/api/v1/namespaces/{self.namespace}/pods/{name}/status"
                body = json.dumps({"status": {"phase": phase}}).encode()
                self._note(self.http.request("PATCH", path, body, "application/merge-patch+json"))
            except client.rest.ApiException as exc:
                if exc.status != 404:
                    self._break(f"Kubernetes API: finishing pod {name} failed: {exc.status} {exc.reason}")
        super().delete_pod(name, now)

    # ---- the step ---------------------------------------------------------------------------------

    def schedule(self, now: float):
        self._alive()
        if not self.broken and self.kueue_clock is not None:
            self._kueue_step(now)
        return super().schedule(now)

    def _kueue_step(self, now: float) -> None:
        """Kueue's settle, again after each round of preemptions: a victim's pods turn Failed (what the
        kubelet reports of a pod stopped by its deletion) so that Kueue releases their quota in this step
        and admits the workload that preempted them."""
        self._drain()
        if self.kueue.proc is None or self.kueue.proc.poll() is not None:
            self._break(f"Kueue exited (see {self.kueue.log_path})")
            raise BackendError(self.broken or "")
        own = f"{self.namespace}/"
        for _ in range(MAX_ROUNDS):
            t0 = time.monotonic()
            with self._rv_lock:
                rv = self._pods_rv
            try:
                st = self.kueue_clock.settle(rv, now)
            except ClockError as exc:
                self._break(f"Kueue did not settle at t={now}: {exc}")
                raise BackendError(self.broken or str(exc)) from None
            for name, namespace in self.http.take_deferred():  # Kueue finished them: now they may go
                self.calls.later(f"delete pod {name}", self.http.delete_pod, name, namespace, ok=(404,))
            self.kueue_steps += 1
            self.kueue_wall += time.monotonic() - t0
            for why, polls in (st.get("waits") or {}).items():
                self.kueue_waits[why] = self.kueue_waits.get(why, 0) + polls
            log.debug("Kueue settled at t=%s in %s s: %s", now, st.get("wall"), st.get("waits"))
            victims = [d for d in st.get("deleted") or [] if d["pod"].startswith(own)]
            # admitted and preempted in one settle: reported both ways, never released to kube-scheduler
            self._admit(st.get("ungated") or [], now, {d["pod"][len(own) :] for d in victims})
            victims = [
                d for d in victims if (n := d["pod"][len(own) :]) in self.specs and n not in self._stopping
            ]
            with self._rv_lock:
                uids = dict(self._pod_uids)
            why = {d["pod"]: stable_reason(d.get("why") or "preempted by Kueue", uids) for d in victims}
            freed = [self._stopped(d["pod"][len(own) :], why[d["pod"]], now) for d in victims]
            if not any(freed):
                return
            self._drain()
        self._break(f"Kueue still preempting after {MAX_ROUNDS} rounds at t={now}")
        raise BackendError(self.broken or "")

    def _admit(self, ungated: list[dict], now: float, stopped: set[str]) -> None:
        admitted = [a for a in ungated if a.get("pod") in self._managed]
        admitted.sort(key=lambda a: self._managed[a["pod"]])
        for a in admitted:
            name = a["pod"]
            del self._managed[name]
            flavors = a.get("flavors") or {}
            flavor = ",".join(flavors[r] for r in a.get("resources") or [])
            self._admissions.append(Admission(pod=name, queue=a.get("local_queue") or "",
                                              cluster_queue=a.get("cluster_queue") or "", flavor=flavor,
                                              at=now))  # fmt: skip
            if name in stopped:
                continue
            if selector := a.get("node_selector"):
                self._shadow_selector(name, selector)
            self.ungate_pod(name, now)

    def _stopped(self, name: str, why: str, now: float) -> bool:
        """A pod Kueue stopped (it deleted it). A running one is killed in Batsim first: the kubelet
        reports it Failed once its containers stopped, so its quota returns when Batsim says the job is
        killed (the adapter's delete_pod then). One that was not bound yet is Failed at once. True if
        its quota came back now."""
        self._kueue_victims.append(Eviction(name, why))
        if name in self.node_of:
            self._stopping.add(name)
            return False
        self._gone.add(name)
        self._finishing.discard(name)
        self.delete_pod(name, now, phase="Failed", held=False)
        return True

    def _shadow_selector(self, name: str, selector: dict) -> None:
        """The flavor's node labels Kueue merged into the pod's nodeSelector, for the twin beside it."""
        info = self.shadow.pods.get(name)
        if info is not None and (info.pod.spec.node_selector or {}) != selector:
            raise BackendError(
                f"Kueue gave pod {name} the nodeSelector {selector}: flavors with nodeLabels on the real "
                "backend are not supported yet (docs/kueue.md)"
            )

    def give_up_pending(self, now: float) -> list[Unschedulable]:
        """Besides kube-scheduler's unschedulable pods: once nothing runs and every pod left waits for
        Kueue, Kueue has had the whole quota at its last settle and declined: it never admits them."""
        gone = super().give_up_pending(now)
        if self.node_of or self.broken or not self._managed or self.unbound() > len(self._managed):
            return gone
        reasons = self._pending_reasons()
        for name in sorted(self._managed, key=self._managed.__getitem__):
            why = reasons.get(name) or "no flavor of its ClusterQueue can ever hold it"
            self.delete_pod(name, now)
            gone.append(Unschedulable(name, f"Kueue never admits it: {why}"))
        return gone

    def _pending_reasons(self) -> dict[str, str]:
        """Each pending workload's QuotaReserved=False message, by pod (the Workload's owner)."""
        try:
            items = self.http.request("GET", f"/apis/{kq.GROUP}/{kq.VERSION}/namespaces/{self.namespace}/"
                                      "workloads").get("items") or []  # fmt: skip
        except (client.rest.ApiException, OSError):
            return {}
        out = {}
        for wl in items:
            msg = next((c.get("message", "") for c in (wl.get("status") or {}).get("conditions") or []
                        if c.get("type") == "QuotaReserved" and c.get("status") == "False"), "")  # fmt: skip
            for owner in wl["metadata"].get("ownerReferences") or []:
                if owner.get("kind") == "Pod":
                    out[owner["name"]] = msg
        return out

    def _start_times(self, bound, now: float) -> None:
        """The kubelet's report of a bound pod Kueue manages: Running. Kueue counts a pod as holding its
        quota while it runs (a preempted pod keeps it until its job is killed), and a pod that never
        reported Running would give its quota back the moment Kueue preempted it."""
        super()._start_times(bound, now)
        for b in bound:
            if b.pod in self.specs and kq.FINALIZER in (self.specs[b.pod].metadata.finalizers or []):
                self._drain()
                self._count("AssignedPodUpdate")
                path = f"/api/v1/namespaces/{self.namespace}/pods/{b.pod}/status"
                try:
                    self._note(self.http.request("PATCH", path, b'{"status":{"phase":"Running"}}',
                                                 "application/merge-patch+json"))  # fmt: skip
                except client.rest.ApiException as exc:
                    self._break(f"Kubernetes API: pod {b.pod} Running failed: {exc.status} {exc.reason}")

    def take_evictions(self) -> list[Eviction]:
        out, self._kueue_victims = self._kueue_victims, []
        return out + super().take_evictions()

    def take_admissions(self) -> list[Admission]:
        out, self._admissions = self._admissions, []
        return out

    def report(self) -> dict:
        log.info("Kueue: %d steps, %.1f s waiting for it; polls not yet quiet: %s", self.kueue_steps,
                 self.kueue_wall, dict(sorted(self.kueue_waits.items(), key=lambda kv: -kv[1])))  # fmt: skip
        return {
            **super().report(),
            "kueue_steps": self.kueue_steps,
            "kueue_settle_wall": round(self.kueue_wall, 3),
        }

    def close(self, interrupted: bool = False) -> None:
        if not self._closed:
            if self.kueue_clock is not None:
                self.kueue_clock.end()
            self.kueue.stop()
            self._release_finalizers()
        super().close(interrupted)

    def _release_finalizers(self) -> None:
        """Pods Kueue no longer runs to finalize: their finalizer goes, so the run's cleanup ends."""
        try:
            pods = self.http.list_pods(self.namespace).get("items") or []
        except (client.rest.ApiException, OSError):
            return
        for p in pods:
            if kq.FINALIZER in (p["metadata"].get("finalizers") or []):
                try:
                    self.http.request(
                        "PATCH",
                        f"/api/v1/namespaces/{self.namespace}/pods/{p['metadata']['name']}",
                        b'{"metadata":{"finalizers":null}}',
                        "application/merge-patch+json",
                    )
                except (client.rest.ApiException, OSError):
                    pass
