"""A loss-free view of the run's pods: list, then watch from that resourceVersion, relist on 410 Gone.

Bindings are what the adapter must never miss, so they are derived from *state* (a pod's spec.nodeName),
not from individual events: a relist after an expired watch or an apiserver restart compares each pod
with what was known and reports the bindings that happened in the gap, in resourceVersion order.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

import urllib3
from kubernetes import client
from kubernetes.client.rest import ApiException

from batkube_py.cluster.faults import FaultLog
from batkube_py.controlplane.kubehttp import KubeHttp

log = logging.getLogger(__name__)


@dataclass
class PodView:
    node: str | None = None
    marked: bool = False  # PodScheduled=False seen (the scheduler tried and failed)
    reason: str = ""
    rv: int = 0
    evicted: bool = False
    uid: str | None = None
    stale: frozenset[str] = frozenset()  # UIDs of earlier incarnations (recreated pods)
    since: float = -1.0  # simulated time from which it has been pending in this incarnation
    kube: bool = True  # served by the kube-scheduler whose /metrics the settle policy reads
    nominated: str | None = None  # status.nominatedNodeName (a preemptor waiting for its victims)


class PodWatch:
    WATCH_SECONDS = 300  # the apiserver ends a watch after this; we resume from the last resourceVersion

    def __init__(self, core: client.CoreV1Api, namespace: str, faults: FaultLog | None = None):
        # raw JSON, not the generated models: three events a pod, decoded beside the adapter's own work
        self.http = KubeHttp(core.api_client)
        self.namespace = namespace
        self.faults = faults or FaultLog()
        self.pods: dict[str, PodView] = {}
        self.bound: list[tuple[int, str, str]] = []  # (rv, pod, node), not yet handed out
        self.evictions: list[tuple[str, str]] = []  # (pod, why): bound pods someone else deletes
        self.cond = threading.Condition()
        self.last_event = time.monotonic()
        self.relists = 0
        self.reconnects = 0
        self.bindings_seen = 0  # bindings ever seen, for a caller that knows how many were made
        self.error: str | None = None
        self._rv = "0"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="podwatch", daemon=True)

    def start(self) -> None:
        self._relist()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    # ---- state updates --------------------------------------------------------------------------

    def _apply(self, pod: dict, deleted: bool = False) -> None:
        meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
        name, uid = meta.get("name"), meta.get("uid")
        rv = int(meta.get("resourceVersion") or 0)
        with self.cond:
            view = self.pods.get(name)
            if view is not None and uid in view.stale:
                return
            if view is not None and view.uid is None:
                view.uid = uid
            going = deleted or meta.get("deletionTimestamp") is not None
            if view is not None and view.node is not None and going and not view.evicted:
                # we forget pods before deleting them: this is someone else's delete (a preemption)
                view.evicted = True
                self.evictions.append((name, "deleted by the cluster (preemption victim?)"))
            if deleted:
                self.pods.pop(name, None)
            elif view is not None and rv >= view.rv:
                view.rv = rv
                if spec.get("nodeName") and view.node is None:
                    view.node = spec["nodeName"]
                    self.bound.append((rv, name, view.node))
                    self.bindings_seen += 1
                view.nominated = status.get("nominatedNodeName") or None
                for c in status.get("conditions") or []:
                    # SchedulingGated is the apiserver's mark of a gated pod, not a failed attempt
                    if c.get("type") == "PodScheduled" and c.get("status") == "False" and (
                        c.get("reason") != "SchedulingGated"
                    ):
                        view.marked, view.reason = True, c.get("message") or c.get("reason") or ""
            self.last_event = time.monotonic()
            self.cond.notify_all()

    def track(self, name: str, kube: bool = True) -> None:
        """Called before creating a pod, so its first watch event is never dropped as unknown."""
        with self.cond:
            self.pods.setdefault(name, PodView(kube=kube))

    def renew(self, name: str) -> PodView | None:
        """Before deleting and recreating a pending pod: forget the old incarnation's events."""
        with self.cond:
            old = self.pods.get(name)
            if old is None or old.uid is None or old.node is not None:
                return None
            self.pods[name] = PodView(kube=old.kube, stale=old.stale | {old.uid}, since=-1.0)
            return old

    def retire(self, name: str, uid: str) -> None:
        """The adapter deletes this incarnation of a pending pod: its late events are not the next one's."""
        with self.cond:
            old = self.pods.get(name) or PodView()
            self.pods[name] = PodView(kube=old.kube, stale=old.stale | {uid})
            self.bound = [b for b in self.bound if b[1] != name]

    def count(self, kube: bool | None, unmarked: bool = False) -> int:
        with self.cond:
            return sum(
                v.node is None and (kube is None or v.kube == kube) and not (unmarked and v.marked)
                for v in self.pods.values()
            )

    def forget(self, name: str) -> None:
        with self.cond:
            self.pods.pop(name, None)
            self.bound = [b for b in self.bound if b[1] != name]

    def take_bindings(self, limit: int | None = None) -> list[tuple[str, str]]:
        with self.cond:
            self.bound.sort()
            out, self.bound = self.bound[:limit], self.bound[limit:] if limit is not None else []
            return [(p, n) for _, p, n in out]

    # ---- the loop -------------------------------------------------------------------------------

    def sync(self) -> None:
        """Apply the namespace's current state now, without waiting for its watch events (which may
        still be on the way): the watch keeps its resourceVersion, and the late events change nothing."""
        self._list()

    def _list(self) -> str:
        pods = self.http.list_pods(self.namespace)
        items = pods.get("items") or []
        for pod in sorted(items, key=lambda p: int(p["metadata"].get("resourceVersion") or 0)):
            self._apply(pod)
        return (pods.get("metadata") or {}).get("resourceVersion") or self._rv

    def _relist(self) -> None:
        self._rv = self._list()
        self.relists += 1

    def _run(self) -> None:
        delay = 0.05
        while not self._stop.is_set():
            opened = time.monotonic()
            try:
                for ev in self.http.watch_pods(self.namespace, self._rv, self.WATCH_SECONDS):
                    if self._stop.is_set():
                        return
                    obj, kind = ev.get("object") or {}, ev.get("type")
                    if kind == "ERROR":
                        raise ApiException(status=obj.get("code", 500), reason="watch error event")
                    if kind != "BOOKMARK":
                        self._apply(obj, deleted=kind == "DELETED")
                    self._rv = (obj.get("metadata") or {}).get("resourceVersion") or self._rv
                    delay = 0.05
                if not self._stop.is_set() and time.monotonic() - opened < self.WATCH_SECONDS - 1:
                    # ended by the apiserver before its timeout: resumed from the last resourceVersion
                    self._fault("closed the pod watch before its timeout", "resuming from its last rv")
                    self.reconnects += 1
                continue
            except ApiException as exc:
                if exc.status == 410:
                    self._fault("expired the pod watch (410 Gone)", "relisting")
                    self._safe_relist()
                    continue
                self._fault(f"failed the pod watch ({exc.status})", "reconnecting")
            except (urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
                self._fault(f"dropped the pod watch ({type(exc).__name__})", "reconnecting")
            except Exception as exc:  # a dead watch thread would silently lose bindings: say so and stop
                self.error = f"pod watch failed: {type(exc).__name__}: {exc}"
                log.exception("pod watch failed")
                return
            if self._stop.is_set():
                return
            self.reconnects += 1
            time.sleep(delay)
            delay = min(delay * 2, 1.0)
            self._safe_relist()

    def _fault(self, fault: str, then: str) -> None:
        self.faults.failed("kube-apiserver", fault, "the pod watch", then)

    def _safe_relist(self) -> None:
        try:
            self._relist()
        except (ApiException, urllib3.exceptions.HTTPError, OSError) as exc:
            self._fault(f"failed the pod relist ({type(exc).__name__})", "will retry")
        else:
            self.faults.ok("kube-apiserver")
