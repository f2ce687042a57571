"""The real Kueue controller for one run: its CRDs and objects in the control plane, its process, and the
client of its control endpoint (gobuild/kueue-v0.17.0/cmd/kueue/control.go; docs/kueue.md).

Each run starts its own Kueue (about 3 s) against the control plane, after removing whatever Kueue
objects an earlier run left, so that its queues, its clock and its cache hold this run's state only.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import time
from pathlib import Path
from urllib.parse import quote

from kubernetes.client.rest import ApiException

from batkube_py import safeyaml
from batkube_py.controlplane.clock import ClockError, SchedulerClock
from batkube_py.controlplane.kubehttp import KubeHttp
from batkube_py.controlplane.kueuebuild import KueueBinary

log = logging.getLogger(__name__)

NAMESPACE = "kueue-system"
GROUP = "kueue.x-k8s.io"
VERSION = "v1beta2"
QUEUE_ORDER_LABEL = "batkube.io/queue-order"
# What Kueue's pod webhook would add to a pod with a queue label (docs/kueue.md): batkube creates pods so.
MANAGED_LABEL = "kueue.x-k8s.io/managed"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
ADMISSION_GATE = "kueue.x-k8s.io/admission"
TOPOLOGY_GATE = "kueue.x-k8s.io/topology"  # on by default (beta) in v0.17.0; TAS: until the ungater
FINALIZER = "kueue.x-k8s.io/managed"
ROLE_HASH_ANNOTATION = "kueue.x-k8s.io/role-hash"
GROUP_NAME_LABEL = "kueue.x-k8s.io/pod-group-name"
# Kinds a run may create, with their plural; cluster-scoped unless namespaced. Removal order: users first.
KINDS = {
    "Workload": ("workloads", True),
    "LocalQueue": ("localqueues", True),
    "ClusterQueue": ("clusterqueues", False),
    "Cohort": ("cohorts", False),
    "WorkloadPriorityClass": ("workloadpriorityclasses", False),
    "ResourceFlavor": ("resourceflavors", False),
    "Topology": ("topologies", False),
}


class KueueError(RuntimeError):
    """Kueue could not be installed or started; the message says which step and why."""


def configuration(fair_sharing: dict | None = None) -> dict:
    """Kueue's Configuration for a loopback run: the pod integration, no leader election, no certificates,
    and the queue-order label copied from pods onto their Workloads. KueueProcess.start narrows the
    managed namespaces to the run's own."""
    cfg: dict = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": NAMESPACE,
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "manageJobsWithoutQueueName": False,
        "managedJobsNamespaceSelector": {
            "matchExpressions": [
                {
                    "key": "kubernetes.io/metadata.name",
                    "operator": "NotIn",
                    "values": ["kube-system", NAMESPACE],
                },
            ]
        },  # fmt: skip
        "integrations": {"frameworks": ["pod"], "labelKeysToCopy": [QUEUE_ORDER_LABEL]},
        "featureGates": {"VisibilityOnDemand": False},
    }
    if fair_sharing is not None:
        cfg["fairSharing"] = fair_sharing
    return cfg


def role_hash(spec) -> str:
    """The role-hash annotation Kueue's pod webhook stamps on a pod: what sorts a pod group's members into
    PodSets, fixed at creation (Kueue would otherwise hash the spec again, and a flavor's tolerations
    merged at admission would move a member into another role). The fields of Kueue's GenerateRoleHash,
    hashed the same way (SHA-256 of their JSON, 8 hex digits); the JSON is Python's with sorted keys, so
    the value is batkube's, not byte-equal to the webhook's, but equal exactly when the roles are."""
    d = spec.model_dump(mode="json", by_alias=True, exclude_none=True)

    def containers(key: str):
        out = [{"resources": {"requests": (c.get("resources") or {}).get("requests")},
                "ports": c.get("ports")} for c in d.get(key) or []]  # fmt: skip
        return out or None

    keys = ("nodeSelector", "affinity", "tolerations", "runtimeClassName", "priority",
            "topologySpreadConstraints", "overhead", "resourceClaims")  # fmt: skip
    shape = {"spec": {"initContainers": containers("initContainers"), "containers": containers("containers"),
                      **{k: d.get(k) for k in keys}}}  # fmt: skip
    text = json.dumps(shape, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def _path(kind: str, namespace: str | None = None, name: str | None = None) -> str:
    plural, namespaced = KINDS[kind]
    p = f"/apis/{GROUP}/{VERSION}/"
    if namespaced and namespace:
        p += f"namespaces/{quote(namespace)}/"
    p += plural
    return p + (f"/{quote(name)}" if name else "")


def _call(http: KubeHttp, *args, timeout: float = 30.0, **kw) -> dict:
    """A request retried while the apiserver answers 429/503 (a CRD's storage just initialising)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return http.request(*args, **kw)
        except ApiException as exc:
            if exc.status not in (429, 503) or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _apply(http: KubeHttp, path: str, doc: dict) -> dict:
    return _call(http, "PATCH", f"{path}?fieldManager=batkube&force=true", json.dumps(doc).encode(),
                        "application/apply-patch+yaml", _request_timeout=60)  # fmt: skip


def install_crds(http: KubeHttp, binary: KueueBinary, timeout: float = 60.0) -> None:
    """Server-side apply of the release's CRDs (the Workload CRD is too big for client-side apply)."""
    names = []
    for f in sorted(binary.crds.glob("*.yaml")):
        doc = safeyaml.load_file(f)
        name = doc["metadata"]["name"]
        names.append(name)
        _apply(http, f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}", doc)
    deadline = time.monotonic() + timeout
    for name in names:
        while True:
            crd = http.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
            conds = {c["type"]: c["status"] for c in (crd.get("status") or {}).get("conditions") or []}
            if conds.get("Established") == "True":
                break
            if time.monotonic() > deadline:
                raise KueueError(f"Kueue's CRD {name} not Established after {timeout:.0f} s")
            time.sleep(0.1)
    try:
        http.request(
            "POST",
            "/api/v1/namespaces",
            json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}).encode(),
        )
    except ApiException as exc:
        if exc.status != 409:
            raise


def clear(http: KubeHttp, timeout: float = 60.0) -> None:
    """Remove every Kueue object an earlier run left, in every namespace (finalizers first: no controller
    runs to do it)."""
    for kind in KINDS:
        items = _call(http, "GET", _path(kind)).get("items") or []
        for item in items:
            meta = item["metadata"]
            path = _path(kind, meta.get("namespace"), meta["name"])
            try:
                if meta.get("finalizers"):
                    http.request(
                        "PATCH", path, b'{"metadata":{"finalizers":null}}', "application/merge-patch+json"
                    )
                http.request("DELETE", path)
            except ApiException as exc:
                if exc.status != 404:
                    raise
    deadline = time.monotonic() + timeout
    for kind in KINDS:
        while _call(http, "GET", _path(kind)).get("items"):
            if time.monotonic() > deadline:
                raise KueueError(f"earlier runs' {kind} objects still present after {timeout:.0f} s")
            time.sleep(0.1)


def apply_objects(http: KubeHttp, documents: list[dict], namespace: str) -> None:
    for doc in documents:
        kind = doc.get("kind", "")
        if kind not in KINDS:
            raise KueueError(f"{kind or 'an object without kind'} is not a Kueue kind batkube creates")
        meta = doc.get("metadata") or {}
        ns = namespace if KINDS[kind][1] else None  # a LocalQueue lives where the run's pods do
        doc = {**doc, "metadata": {**meta, **({"namespace": ns} if ns else {})}}
        try:
            _apply(http, _path(kind, ns, meta["name"]), doc)
        except ApiException as exc:
            raise KueueError(f"{kind} {meta.get('name')}: the apiserver refused it: {exc.status} "
                             f"{_message(exc)}") from None  # fmt: skip


def _message(exc: ApiException) -> str:
    try:
        return json.loads(exc.body or "{}").get("message") or exc.reason or ""
    except ValueError:
        return str(exc.body or exc.reason)


class KueueClock(SchedulerClock):
    """begin / settle / end on Kueue's control endpoint (the protocol of kube-scheduler's, clock.py)."""

    component = "Kueue"

    def ready(self, local_queues: list[str] = ()) -> dict:  # type: ignore[override]
        return self._call("/ready", lq=",".join(local_queues))

    def begin(self, t: float) -> dict:
        return self._call("/begin", t=repr(float(t)))

    def settle(self, pods_rv: int, t: float) -> dict:  # type: ignore[override]
        return self._call("/settle", pods_rv=str(pods_rv), t=repr(float(t)), timeout=self.timeout)


def uses_tas(documents: list[dict]) -> bool:
    """A queues file with topology-aware flavors: Kueue's TAS controllers run, and pods get its TAS gate."""
    return any(d.get("kind") == "ResourceFlavor" and (d.get("spec") or {}).get("topologyName")
               for d in documents)  # fmt: skip


class KueueProcess:
    """One run's Kueue: its objects installed, the process started, ready once its caches synced, its
    ClusterQueues active and its LocalQueues known to the queue manager."""

    def __init__(self, binary: KueueBinary, kubeconfig: Path, workdir: Path, config: dict):
        self.binary, self.kubeconfig, self.workdir, self.config = binary, kubeconfig, workdir, config
        self.proc: subprocess.Popen | None = None
        self.address: str | None = None
        self.log_path = workdir / "kueue.log"

    def start(self, http: KubeHttp, documents: list[dict], namespace: str, timeout: float = 60.0) -> str:
        self.workdir.mkdir(parents=True, exist_ok=True)
        install_crds(http, self.binary, timeout)
        clear(http, timeout)
        apply_objects(http, documents, namespace)
        cfg = self.workdir / "kueue-config.yaml"
        own = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}  # not other runs' leftover pods
        cfg.write_text(json.dumps({**self.config, "managedJobsNamespaceSelector": own}, indent=1))
        logf = self.log_path.open("ab")
        tas = ["--batkube-tas"] if uses_tas(documents) else []
        self.proc = subprocess.Popen(
            [str(self.binary.path), f"--kubeconfig={self.kubeconfig}", f"--config={cfg}",
             "--batkube-control-address=127.0.0.1:0", *tas,
             f"--zap-log-level={os.environ.get('BATKUBE_KUEUE_LOG_LEVEL', 'error')}"],
            stdout=subprocess.PIPE, stderr=logf, start_new_session=True,
        )  # fmt: skip
        logf.close()
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().decode(errors="replace").strip()
        if not line.startswith("batkube-control-address="):
            self.stop()
            raise KueueError(f"Kueue did not start: {self._tail() or line or 'no output'} ({self.log_path})")
        self.address = line.split("=", 1)[1]
        lqs = sorted(f"{namespace}/{d['metadata']['name']}" for d in documents if d["kind"] == "LocalQueue")
        cqs = {d["metadata"]["name"] for d in documents if d.get("kind") == "ClusterQueue"}
        probe = KueueClock(self.address, "probe", timeout=5)
        deadline = time.monotonic() + timeout
        why = "not started"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise KueueError(f"Kueue exited ({self.proc.returncode}): {self._tail()} ({self.log_path})")
            try:
                st = probe.ready(lqs)
            except ClockError as exc:
                why = str(exc)
            else:
                inactive = sorted(n for n in cqs if not st["cluster_queues"].get(n))
                unknown = [q for q in lqs if not st["local_queues"].get(q)]
                if not st["synced"]:
                    why = "caches not synced"
                elif inactive:
                    why = f"ClusterQueue {', '.join(inactive)} not active (see its status conditions)"
                elif unknown:
                    why = f"LocalQueue {', '.join(unknown)} not known to Kueue's queue manager"
                else:
                    probe._close()
                    return self.address
            time.sleep(0.05)
        probe._close()
        self.stop()
        raise KueueError(f"Kueue not ready after {timeout:.0f} s: {why} ({self.log_path})")

    def _tail(self) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return lines[-1][:300] if lines else ""

    def version(self) -> str:
        return self.binary.version

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.proc = None
