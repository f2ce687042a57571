"""Pure translation between Batsim's world and Kubernetes objects.

SimGrid hosts become V1Node, Batsim jobs become V1Pod, bindings become EXECUTE_JOB allocations.
A job Kubernetes cannot represent becomes a Rejection that names the job, the field, the value and
what was expected, so the user can fix the workload rather than guess.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

import orjson
from kubernetes import client
from procset import ProcSet

from batkube_py import podcheck, quantities
from batkube_py.protocol.models import Resource

DEFAULT_SCHEDULER = "default-scheduler"
DEFAULT_MAX_PODS = 110
DEFAULT_CORES = 1
NAMESPACE = "default"
JOB_ID_ANNOTATION = "batkube.io/job-id"
RESOURCE_ID_ANNOTATION = "batkube.io/resource-id"
HOSTNAME_LABEL = "kubernetes.io/hostname"
# Host properties consumed by the translation itself; every other one becomes a label.
_NODE_KEYS = {"core", "cpu", "memory", "pods", "taints"}
_TAINT_EFFECTS = {"NoSchedule", "PreferNoSchedule", "NoExecute"}

_LABEL_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED_NAME = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)


def is_extended_resource(name: str) -> bool:
    """Kubernetes' IsExtendedResourceName: a domain-prefixed name outside kubernetes.io (nvidia.com/gpu).

    A host property with such a key and a whole-number value is an extended resource, not a label:
    `nvidia.com/gpu="2"` puts 2 GPUs in the node's capacity and allocatable. `topology.kubernetes.io/zone`
    stays a label (kubernetes.io names are native), and so does any property whose value is not a whole
    number (`example.com/rack="r1"`).
    """
    return (
        "/" in name
        and "kubernetes.io/" not in name
        and not name.startswith("requests.")
        and _QUALIFIED_NAME.match(name) is not None
    )


def _extended_count(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        return quantities.count(value)
    except quantities.QuantityError:
        return None


class TranslationError(ValueError):
    """A host that cannot be a node: the platform, not a single job, is wrong."""


@dataclass(frozen=True)
class Rejection:
    job_id: str
    field: str
    value: str
    expected: str

    @property
    def reason(self) -> str:
        return f"job {self.job_id}: field {self.field!r} = {self.value} — expected {self.expected}"


# ---- names and labels --------------------------------------------------------------------------------


def _sanitise(text: str, allowed: str, max_len: int) -> str:
    out = re.sub(f"[^{allowed}]+", "-", text)
    out = out[:max_len]
    return re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", out)


def _short_hash(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:8]


def label_value(value: str) -> str:
    if _LABEL_NAME.match(value) and len(value) <= 63:
        return value
    return _sanitise(value, "-A-Za-z0-9_.", 63)


def label_key(key: str) -> str:
    prefix, _, name = key.rpartition("/")
    name = name if _LABEL_NAME.match(name) and 0 < len(name) <= 63 else _sanitise(name, "-A-Za-z0-9_.", 63)
    if not name:
        name = "prop-" + _short_hash(key)
    if prefix:
        prefix = _sanitise(prefix.lower(), "-a-z0-9.", 253)
    return f"{prefix}/{name}" if prefix else name


def node_name(host: str) -> str:
    """A DNS-1123 subdomain for a SimGrid host name (which may hold '_' or capitals)."""
    name = _sanitise(host.lower(), "-a-z0-9.", 253)
    if name != host:
        name = _sanitise(f"{name}-{_short_hash(host)}", "-a-z0-9.", 253)
    return name or f"host-{_short_hash(host)}"


def pod_name(job_id: str, taken: set[str] | frozenset[str] = frozenset()) -> str:
    """A DNS-1123 label for a Batsim job id; ids may hold '!', '-', capitals or anything.

    The mapping back to the job id is kept explicitly by the caller (and in an annotation), so this
    only has to be unique, stable and readable: 'w0!1' → 'w0-1'.
    """
    base = _sanitise(job_id.lower(), "a-z0-9", 52).strip("-") or "job"
    name, n = base, 1
    while name in taken:
        name = f"{base}-{_short_hash(job_id)}" + (f"-{n}" if n > 1 else "")
        n += 1
    return name


# ---- hosts → nodes -------------------------------------------------------------------------------------


def parse_taints(spec: str, host: str) -> list[client.V1Taint]:
    """`key=value:Effect,key:Effect` — the kubectl taint syntax."""
    taints = []
    for item in filter(None, (s.strip() for s in spec.split(","))):
        kv, sep, effect = item.rpartition(":")
        if not sep or effect not in _TAINT_EFFECTS or not kv:
            raise TranslationError(
                f"host {host!r}: taint {item!r} is not key[=value]:Effect with Effect in "
                f"{sorted(_TAINT_EFFECTS)}"
            )
        key, _, value = kv.partition("=")
        taints.append(client.V1Taint(key=key, value=value or None, effect=effect))
    return taints


def node_from_resource(res: Resource) -> client.V1Node:
    props = res.properties
    where = f"host {res.name!r} (resource {res.id})"
    cpu_key = "core" if "core" in props else "cpu"
    parsed = {}
    for key, convert in (
        (cpu_key, quantities.milli_cpu),
        ("memory", quantities.byte_count),
        ("pods", quantities.count),
    ):
        if props.get(key):
            try:
                parsed[key] = convert(props[key])
            except quantities.QuantityError as exc:
                raise TranslationError(f"{where}: property {key!r}: {exc}") from None
    cpu = parsed.get(cpu_key, DEFAULT_CORES * 1000)
    pods = parsed.get("pods", DEFAULT_MAX_PODS)
    memory = parsed.get("memory")
    capacity = {"cpu": quantities.format_milli_cpu(cpu), "pods": str(pods)}
    if memory is not None:
        capacity["memory"] = str(memory)
    extended = {
        k: n for k, v in props.items() if is_extended_resource(k) and (n := _extended_count(v)) is not None
    }
    capacity.update({k: str(n) for k, n in sorted(extended.items())})
    name = node_name(res.name)
    labels = {label_key(k): label_value(v) for k, v in res.zone_properties.items()}
    labels.update(
        {label_key(k): label_value(v) for k, v in props.items() if k not in _NODE_KEYS and k not in extended}
    )
    labels[HOSTNAME_LABEL] = label_value(name)
    return client.V1Node(
        api_version="v1",
        kind="Node",
        metadata=client.V1ObjectMeta(
            name=name,
            labels=labels,
            annotations={RESOURCE_ID_ANNOTATION: str(res.id), "batkube.io/host": res.name},
        ),
        spec=client.V1NodeSpec(taints=parse_taints(props.get("taints", ""), res.name) or None),
        status=client.V1NodeStatus(
            capacity=dict(capacity),
            allocatable=dict(capacity),
            conditions=[client.V1NodeCondition(type="Ready", status="True")],
        ),
    )


def resource_id(node: client.V1Node) -> int:
    return int(node.metadata.annotations[RESOURCE_ID_ANNOTATION])


def alloc_for(node: client.V1Node) -> ProcSet:
    """The EXECUTE_JOB allocation for a pod bound to `node`."""
    return ProcSet(resource_id(node))


# ---- jobs → pods -----------------------------------------------------------------------------------------

_api = client.ApiClient()


def _k8s_object(value: Any, kind: str) -> Any:
    return _api._ApiClient__deserialize(value, kind)  # the client's own JSON → model mapping


def _one(value: Any, kind: str, check) -> Any:
    obj = podcheck.k8s_object(value, kind)
    check(obj)
    return obj


def _each(values: list, kind: str, check) -> list:
    return [_one(v, kind, check) for v in values]


def _field(job: dict, profile: dict, key: str) -> tuple[str, Any]:
    if key in job:
        return key, job[key]
    if key in profile:
        return f"profile.{key}", profile[key]
    return key, None


# Job fields that shape the pod; a job holding none of them gets its pod from its profile alone.
_JOB_KEYS = frozenset({"cpu", "memory", "extendedResources", "resources", "scheduler", "priority", "labels",
                       "nodeSelector", "tolerations", "affinity", "topologySpreadConstraints"})  # fmt: skip
_SHAPE_KEYS = ("type", *sorted(_JOB_KEYS))  # every profile field _checked reads
_SHAPES_MAX = 4096


@dataclass(frozen=True)
class _Shape:
    """A checked pod minus its name: spec fields, the container, labels (shared, never mutated)."""

    spec: dict[str, Any]
    container: client.V1Container
    labels: dict[str, str] | None


_shapes: dict[bytes, _Shape] = {}


def pod_from_job(
    job_id: str, job: dict[str, Any] | None, profile: dict[str, Any] | None, name: str
) -> client.V1Pod | Rejection:
    """The pod for a submitted job, or why Kubernetes cannot represent it.

    Workloads submit thousands of jobs that carry nothing but a profile's name, and their profiles
    differ mostly in what a pod does not model (the delay: 7,139 profiles, 25 pod shapes in the 10k
    bench). The checked shape of such a job is kept per content of the fields that shape a pod (JSON,
    key order kept), so a profile changed in place is checked afresh; each pod then costs five shallow
    copies (its container and requests its own: callers edit them).
    """
    res = job.get("res") if job is not None else None
    if job is None or profile is None or res != 1 or isinstance(res, bool) or not _JOB_KEYS.isdisjoint(job):
        shape = _checked(job_id, job, profile)
        return shape if isinstance(shape, Rejection) else _assemble(job_id, name, shape)
    try:
        key = orjson.dumps([profile.get(k) for k in _SHAPE_KEYS])
    except orjson.JSONEncodeError:  # e.g. an integer beyond 64 bits: checked (and refused) below
        key = b""
    shape = _shapes.get(key) if key else None
    if shape is None:
        shape = _checked(job_id, job, profile)
        if isinstance(shape, Rejection):
            return shape
        if len(_shapes) >= _SHAPES_MAX:
            _shapes.clear()
        if key:
            _shapes[key] = shape
    return _assemble(job_id, name, shape)


def _assemble(job_id: str, name: str, shape: _Shape) -> client.V1Pod:
    # Copies of validated templates: every value was checked, and constructing the client's models
    # field by field costs ~15x more, which shows at 10,000 pods.
    meta = {"name": name, "namespace": NAMESPACE, "annotations": {JOB_ID_ANNOTATION: job_id}}
    if shape.labels:
        meta["labels"] = dict(shape.labels)
    # the container is the part callers edit (requests): each pod gets its own, not the cached shape's
    res = shape.container.resources
    own = res.model_copy(
        update={"requests": res.requests and dict(res.requests), "limits": res.limits and dict(res.limits)}
    )
    container = shape.container.model_copy(update={"resources": own})
    spec = _SPEC.model_copy(update={**shape.spec, "containers": [container]})
    return _POD.model_copy(update={"metadata": _META.model_copy(update=meta), "spec": spec})


def _checked(job_id: str, job: dict[str, Any] | None, profile: dict[str, Any] | None) -> _Shape | Rejection:
    def reject(field: str, value: Any, expected: str) -> Rejection:
        return Rejection(job_id, field, repr(value), expected)

    if job is None:
        return reject("job", None, "the job's JSON in JOB_SUBMITTED (redis mode is not supported)")
    res = job.get("res")
    if res != 1 or isinstance(res, bool):
        return reject("res", res, "1 (a pod runs on exactly one node)")
    if profile is None:
        return reject("profile", job.get("profile"), "a profile known to Batsim")
    if profile.get("type") != "delay":
        return reject("profile.type", profile.get("type"), "'delay' (the only profile a pod can model)")

    requests: dict[str, str] = {}
    for key, convert in (("cpu", quantities.milli_cpu), ("memory", quantities.byte_count)):
        where, value = _field(job, profile, key)
        if value is None:
            continue
        try:
            convert(value)
        except quantities.QuantityError as exc:
            return reject(where, value, f"a non-negative Kubernetes quantity ({exc})")
        requests[key] = value if isinstance(value, str) else repr(value)

    limits: dict[str, str] = {}
    for key in ("extendedResources", "resources"):
        where, ext = _field(job, profile, key)
        if ext is None:
            continue
        if not isinstance(ext, dict):
            return reject(where, ext, "an object of extended resource requests like {'nvidia.com/gpu': '1'}")
        for rname, q in ext.items():
            if not (isinstance(rname, str) and is_extended_resource(rname)):
                return reject(
                    f"{where}.{rname}",
                    rname,
                    "an extended resource name like 'nvidia.com/gpu' (cpu and memory have their own fields)",
                )
            n = _extended_count(q)
            if n is None:
                return reject(f"{where}.{rname}", q, "a non-negative whole number (a count)")
            requests[rname] = limits[rname] = str(n)  # upstream requires limits == requests for these

    where, sched = _field(job, profile, "scheduler")
    if sched is not None and not (isinstance(sched, str) and sched):
        return reject(where, sched, "a scheduler name (string)")
    scheduler = DEFAULT_SCHEDULER if sched in (None, "default") else sched

    where, priority = _field(job, profile, "priority")
    if priority is not None and (
        isinstance(priority, bool) or not isinstance(priority, int) or abs(priority) > podcheck.INT32
    ):
        return reject(where, priority, f"an integer priority within ±{podcheck.INT32} (int32)")

    where, labels = _field(job, profile, "labels")
    if labels is not None and not (
        isinstance(labels, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items())
    ):
        return reject(where, labels, "an object of string labels")
    where, selector = _field(job, profile, "nodeSelector")
    if selector is not None and not (
        isinstance(selector, dict) and all(isinstance(v, str) for v in selector.values())
    ):
        return reject(where, selector, "an object of string node labels")
    where, tolerations = _field(job, profile, "tolerations")
    if tolerations is not None and not (
        isinstance(tolerations, list) and all(isinstance(t, dict) for t in tolerations)
    ):
        return reject(where, tolerations, "a list of Kubernetes tolerations")
    where, affinity = _field(job, profile, "affinity")
    if affinity is not None and not isinstance(affinity, dict):
        return reject(where, affinity, "a Kubernetes affinity object")
    where, spread = _field(job, profile, "topologySpreadConstraints")
    if spread is not None and not (isinstance(spread, list) and all(isinstance(c, dict) for c in spread)):
        return reject(where, spread, "a list of Kubernetes topology spread constraints")

    spec: dict[str, Any] = {"scheduler_name": scheduler, "priority": priority}
    checks = (
        (labels, "labels", lambda v: podcheck.labels(v)),
        (selector, "nodeSelector", lambda v: podcheck.labels(v, "node label")),
        (tolerations, "tolerations", lambda v: _each(v, "V1Toleration", podcheck.toleration)),
        (affinity, "affinity", lambda v: _one(v, "V1Affinity", podcheck.affinity)),
        (spread, "topologySpreadConstraints",
         lambda v: _each(v, "V1TopologySpreadConstraint", podcheck.spread)),
    )  # fmt: skip
    built = {}
    for value, key, check in checks:
        if not value:
            continue
        try:
            built[key] = check(value)
        except podcheck.FieldProblem as exc:
            return reject(_field(job, profile, key)[0], value, str(exc))
    if selector:
        spec["node_selector"] = dict(selector)
    if tolerations:
        spec["tolerations"] = built["tolerations"]
    if affinity:
        spec["affinity"] = built["affinity"]
    if spread:
        spec["topology_spread_constraints"] = built["topologySpreadConstraints"]

    resources = _RESOURCES.model_copy(update={"requests": requests or None, "limits": limits or None})
    container = _CONTAINER.model_copy(update={"resources": resources})
    return _Shape(spec, container, dict(labels) if labels else None)


_CONTAINER = client.V1Container(name="job", image="batkube/delay")
_RESOURCES = client.V1ResourceRequirements()
_META = client.V1ObjectMeta()
_SPEC = client.V1PodSpec(containers=[], restart_policy="Never")
_POD = client.V1Pod(api_version="v1", kind="Pod")


def job_profile(job: dict[str, Any] | None, forwarded: dict | None, profiles: dict[str, dict]) -> dict | None:
    """The job's profile: forwarded on submission, else from SIMULATION_BEGINS' table."""
    if forwarded is not None:
        return forwarded
    if job is None or not isinstance(job.get("profile"), str):
        return None
    return profiles.get(job["profile"])
