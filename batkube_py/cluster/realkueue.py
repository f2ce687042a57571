"""The real Kueue in front of the real kube-scheduler (`--queues` with `--backend apiserver`, `--sync
queue`): Kueue admits, kube-scheduler places, both on Batsim's clock (docs/kueue.md).

A pod is created as Kueue's pod webhook would leave it (kueuepods.py: the `managed` label, Kueue's
admission and TAS gates, its finalizer, its role hash) with one more gate, batkube's: Kueue admits
workloads in an order of its own making (its admission patches and the pod patches that follow run
concurrently), and kube-scheduler's queue takes pods in the order their gates go. So each step is: the
step's writes; Kueue's settle (it takes in the writes, admits until it has nothing left to do at this
time, and names the pods it ungated); batkube lifts its own gate on those pods in their jobs' submission
order; then kube-scheduler's settle. A completed pod turns Succeeded before it is deleted (what the
kubelet would report, and what Kueue finishes a workload on). A gang's pods are one Kueue pod group
(queuejobs.kueue_group): one Workload, admitted and evicted as one, reported to the adapter under the
group's name.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time

from kubernetes import client

from batkube_py.cluster import kueuepods
from batkube_py.cluster.base import Admission, BackendError, Eviction, Unschedulable
from batkube_py.cluster.queued import QueueCluster
from batkube_py.controlplane import kueue as kq
from batkube_py.controlplane.clock import ClockError
from batkube_py.inputs.kueueobjects import ResourceFlavor
from batkube_py.kueue import podset
from batkube_py.kueue.cache.snapshot import flavor_of

log = logging.getLogger(__name__)

MAX_ROUNDS = 20  # Kueue settles in one step: preemption rounds before the step is declared stuck
_PREEMPTOR = re.compile(r"\(UID: [^,)]*, JobUID: ([^)]*)\)")


def stable_reason(why: str | None, pods: dict[str, str]) -> str:
    """Kueue's preemption message names the preemptor by its Workload's and pod's random UIDs: the pod's
    name instead, so that the same inputs give the same pods.csv."""
    return _PREEMPTOR.sub(lambda m: f"(pod {pods.get(m.group(1), 'unknown')})", why or "preempted by Kueue")


class KueueCluster(QueueCluster):
    # a delete releases quota (Kueue may admit at once, pending pods or not); with both on, the multi-
    # tenant parity case differed from the twin in 2 runs of 5, without them in none of 8
    deletes_ahead = settle_beside = False

    def __init__(self, *args, kueue: kq.KueueProcess, documents: list[dict], **kw):
        self.kueue = kueue
        self._documents = documents
        self._flavors = {d["metadata"]["name"]: flavor_of(ResourceFlavor.model_validate(d))
                         for d in documents if d.get("kind") == "ResourceFlavor"}  # fmt: skip
        levels = {d["metadata"]["name"]: [lv["nodeLabel"] for lv in d["spec"]["levels"]]
                  for d in documents if d.get("kind") == "Topology"}  # fmt: skip
        # TAS flavor → its Topology's level keys (the labels the topology ungater may add)
        self._levels = {f.name: levels[f.topology] for f in self._flavors.values() if f.topology is not None}
        self.kueue_clock: kq.KueueClock | None = None
        self._order_ns = -1
        self._rv_lock = threading.Lock()
        self._pods_rv = 0
        self._managed: dict[str, tuple[int, int]] = {}  # Kueue-managed pods pending admission: their order
        self._seq = 0
        self._gates: dict[str, set[str]] = {}  # a managed pod → its gates, until the last one goes
        self._group_order: dict[str, int] = {}  # Kueue pod group → its members' FIFO label
        self._kgroups: dict[str, set[str]] = {}  # Kueue pod group → its members that exist
        self._kgroup_of: dict[str, str] = {}
        self._pod_uids: dict[str, str] = {}  # uid → name of the pods the adapter created
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
        self.http = kueuepods.RecordingHttp(self.http, self._note, self._finishing)
        super()._create_cluster(nodes)
        try:
            address = self.kueue.start(self.http, self._documents, self.namespace)
        except (kq.KueueError, client.rest.ApiException) as exc:
            raise BackendError(f"Kueue: {exc}") from None
        self.kueue_clock = kq.KueueClock(address, self.clock.run, timeout=self.opts.crash_timeout)
        self.facts["kueue_version"] = self.kueue.version()

    # ---- pods -----------------------------------------------------------------------------------

    def add_pod(self, pod: client.V1Pod, job_id: str, now: float) -> None:
        """The pod as Kueue's pod webhook would leave it (kueuepods.py), with batkube's FIFO label: one
        value for all the members of a pod group (Kueue copies it onto their one Workload only if they
        agree)."""
        self._gone.discard(pod.metadata.name)  # a victim not bound yet comes back under its name
        labels = dict(pod.metadata.labels or {})
        if kq.QUEUE_LABEL not in labels:
            super().add_pod(pod, job_id, now)
            return
        group = labels.get(kq.GROUP_NAME_LABEL)
        order = self._group_order.get(group) if group else None
        if order is None:
            # strictly increasing: jobs submitted at one instant keep their submission order in Kueue's FIFO
            self._order_ns = order = max(self._order_ns + 1, round(now * 1e9))
            if group:
                self._group_order[group] = order
                self._kgroups[group] = set()
        if group:
            self._kgroups[group].add(pod.metadata.name)
            self._kgroup_of[pod.metadata.name] = group
        pod = kueuepods.as_webhook_leaves_it(pod, order)
        self._seq += 1
        self._managed[pod.metadata.name] = (order, self._seq)
        self._gates[pod.metadata.name] = {g.name for g in pod.spec.scheduling_gates}
        super().add_pod(pod, job_id, now)

    def set_nodes_schedulable(self, nodes: list[str], schedulable: bool, now: float) -> None:
        """Not with TAS flavors: Kueue's TAS flavor controller retries inadmissible workloads after a node
        change only after a 1-s wall-clock batch, which no settle sees (docs/kueue.md)."""
        if self._levels:
            self._break(f"a node change at t={now} with topology-aware flavors is not run on the real "
                        "backend (Kueue retries the workloads it affects after a wall-clock batch): "
                        "docs/kueue.md")  # fmt: skip
            return
        super().set_nodes_schedulable(nodes, schedulable, now)

    def add_pod_group(self, group, now: float) -> None:
        """kube-scheduler's PodGroup (realgroups.py); its pods, created next, are also Kueue's pod group
        when they name a queue (queuejobs.kueue_group): a group that comes back gets a new FIFO place."""
        self._group_order.pop(group.metadata.name, None)
        super().add_pod_group(group, now)

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
            self._gates.pop(name, None)
            self._left_group(name)
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

    def _left_group(self, name: str) -> None:
        group = self._kgroup_of.pop(name, None)
        members = self._kgroups.get(group) if group is not None else None
        if members is not None:
            members.discard(name)
            if not members:  # the group is gone: if it comes back, it queues anew
                del self._kgroups[group]
                self._group_order.pop(group, None)

    def _job_name(self, pod: str) -> str:
        """What the adapter knows a Kueue decision by: the pod group's name for its members."""
        return self._kgroup_of.get(pod, pod)

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
            reported = {e.pod for e in self._kueue_victims}
            freed = []
            for d in victims:
                name = d["pod"][len(own) :]
                if (job := self._job_name(name)) not in reported:  # a group's members: one eviction
                    reported.add(job)
                    self._kueue_victims.append(Eviction(job, stable_reason(d.get("why"), uids)))
                freed.append(self._stopped(name, now))
            if not any(freed):
                return
            self._drain()
        self._break(f"Kueue still preempting after {MAX_ROUNDS} rounds at t={now}")
        raise BackendError(self.broken or "")

    def _admit(self, ungated: list[dict], now: float, stopped: set[str]) -> None:
        admitted = [a for a in ungated if a.get("pod") in self._managed]
        admitted.sort(key=lambda a: self._managed[a["pod"]])
        jobs = set()
        for a in admitted:
            name = a["pod"]
            del self._managed[name]
            flavors = a.get("flavors") or {}
            if (job := self._job_name(name)) not in jobs:  # a pod group is admitted as one Workload
                jobs.add(job)
                flavor = ",".join(flavors[r] for r in a.get("resources") or [])
                self._admissions.append(Admission(pod=job, queue=a.get("local_queue") or "",
                                                  cluster_queue=a.get("cluster_queue") or "", flavor=flavor,
                                                  at=now))  # fmt: skip
            if name in stopped:
                continue
            self._shadow_admitted(name, flavors, a.get("node_selector") or {})
            self._release(name, now)

    def ungate_pod(self, name: str, now: float) -> None:
        """The adapter's own gate lifted (gatedUntil): only that one, as its controller would; a pod
        Kueue has not admitted yet keeps Kueue's gates and batkube's (lifting them all would hand it to
        kube-scheduler unadmitted, and Kueue would stop it)."""
        self._lift(name, now, self._gates.get(name, set()) - kueuepods.HELD)

    def _release(self, name: str, now: float) -> None:
        """Kueue admitted the pod (its gates are gone): batkube's release gate goes too."""
        self._lift(name, now, kueuepods.HELD - {kueuepods.RELEASE_GATE}, written=False)
        self._lift(name, now, {kueuepods.RELEASE_GATE})

    def _lift(self, name: str, now: float, gates: set[str], written: bool = True) -> None:
        """`gates` off the pod (`written`: by batkube, else Kueue has removed them); the last one's
        removal is QueueCluster's ungate. One that leaves gates is a plain update to kube-scheduler
        (Pod/Update: the pod stays gated, its queue timestamp kept)."""
        left = self._gates.get(name)
        if left is None or not left - gates:
            self._gates.pop(name, None)
            return super().ungate_pod(name, now)
        left -= gates
        if (info := self.shadow.pods.get(name)) is not None:
            spec = info.pod.spec
            spec.scheduling_gates = [g for g in spec.scheduling_gates or [] if g.name in left]
        if not written or not gates or not self._begin(now):
            return
        self._drain()  # the pod's create (in the background) is acknowledged first
        path = f"/api/v1/namespaces/{self.namespace}/pods/{name}"
        body = json.dumps({"spec": {"schedulingGates": [{"$patch": "delete", "name": g} for g in gates]}})
        try:
            out = self.calls(f"lift gates {sorted(gates)} of pod {name}", self.http.request, "PATCH", path,
                             body.encode(), "application/strategic-merge-patch+json")  # fmt: skip
        except BackendError as exc:
            return self._break(str(exc))
        self._note(out)

    def _stopped(self, name: str, now: float) -> bool:
        """A pod Kueue stopped (it deleted it). A running one is killed in Batsim first: the kubelet
        reports it Failed once its containers stopped, so its quota returns when Batsim says the job is
        killed (the adapter's delete_pod then). One that was not bound yet is Failed at once. True if
        its quota came back now (a pod group's: once all its members are Failed)."""
        if name in self.node_of:
            self._stopping.add(name)
            return False
        self._gone.add(name)
        self._finishing.discard(name)
        self.delete_pod(name, now, phase="Failed", held=False)
        return True

    def _shadow_admitted(self, name: str, flavors: dict[str, str], selector: dict[str, str]) -> None:
        """What Kueue's admission did to the pod (the flavors' node labels and tolerations), done to the
        kube-scheduler twin's copy too; the nodeSelector must be the one Kueue wrote."""
        info = self.shadow.pods.get(name)
        if info is None:
            return
        labels, tolerations = podset.flavor_changes(self._flavors, flavors.values())
        try:
            podset.merge(info.pod.spec, labels, tolerations)
        except podset.MergeError as exc:
            raise BackendError(f"Kueue admitted pod {name}, but {exc}") from None
        # the topology ungater's part: the pod's domain, level labels of its TAS flavor
        levels = {k for f in set(flavors.values()) for k in self._levels.get(f, ())}
        if domain := {k: v for k, v in selector.items() if k in levels and k not in labels}:
            info.pod.spec.node_selector = {**(info.pod.spec.node_selector or {}), **domain}
        info.cache.clear()
        if (mine := info.pod.spec.node_selector or {}) != selector:
            used = sorted(set(flavors.values()))
            self._break(f"Kueue gave pod {name} the nodeSelector {selector}, its flavors {used} give {mine}")
            raise BackendError(self.broken or "")

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
