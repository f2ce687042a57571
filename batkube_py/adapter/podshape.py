"""Batsim jobs → V1Pod: a job's fields and profile checked into a pod shape, then one pod per job.

A job Kubernetes cannot represent becomes a Rejection that names the job, the field, the value and what
was expected. Shapes are shared by the jobs that have the same pod-shaping fields, so that a 10,000-job
workload checks its 25 shapes once and each pod costs a few shallow copies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
from kubernetes import client

from batkube_py import quantities
from batkube_py.adapter import podcheck
from batkube_py.adapter.translate import (
    DEFAULT_SCHEDULER,
    JOB_ID_ANNOTATION,
    NAMESPACE,
    Rejection,
    extended_count,
)
from batkube_py.kubeapi import is_extended_resource


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
JOB_KEYS = frozenset({"cpu", "memory", "extendedResources", "resources", "scheduler", "priority", "labels",
                       "nodeSelector", "tolerations", "affinity", "topologySpreadConstraints"})  # fmt: skip
# Profiles a job may have: Batsim runs them (the double too); for the parallel ones `cpu` is flops per
# executor, so the pod's cpu request comes from the job's `cpu` or the profile's `cpu_req`.
RUNNABLE = ("delay", "parallel", "parallel_homogeneous", "parallel_homogeneous_total", "composed")
CANNOT = {
    "smpi": "SMPI trace replays", "usage_trace": "usage traces", "data_staging": "data staging",
    "parallel_homogeneous_pfs": "parallel file system transfers", "send": "scheduler messages",
    "recv": "scheduler messages",
}  # fmt: skip
SEQ_TYPES = "__seq_types"  # a composed profile's leaf types, added by job_profile
_SHAPE_KEYS = ("type", "cpu_req", SEQ_TYPES, *sorted(JOB_KEYS))  # every profile field _checked reads
_SHAPES_MAX = 4096
MAX_GROUP = 100_000  # a sanity bound on a job's pods: each is an object of the cluster


def hosts_ok(res: Any) -> bool:
    """A job's `res`: 1 for a pod, more for a pod group of that many pods (gangjobs.py)."""
    return isinstance(res, int) and not isinstance(res, bool) and 1 <= res <= MAX_GROUP


@dataclass(frozen=True, eq=False)
class Shape:
    """A checked pod minus its name: spec fields, the container, labels (shared, never mutated), and
    what admission reads of it, worked out once: a pod with no name to ask the cluster about, the
    scheduler, the priority and the requests as numbers. Compared and hashed by identity, so that what
    is learnt of a shape (admission's verdict) can be kept only as long as the shape is in use."""

    spec: dict[str, Any]
    container: client.V1Container
    labels: dict[str, str] | None
    template: client.V1Pod
    scheduler: str = ""
    priority: int = 0
    cpu: float = 0.0
    memory: int | str = ""
    annotations: dict[str, str] | None = None


def _shape(spec: dict[str, Any], container: client.V1Container, labels: dict[str, str] | None,
           annotations: dict[str, str] | None = None) -> Shape:  # fmt: skip
    requests = container.resources.requests or {}
    meta = _META.model_copy(update={"labels": labels, "annotations": annotations}) if labels else _META
    return Shape(
        spec,
        container,
        labels,
        template=_pod(meta, spec, container),
        scheduler=spec["scheduler_name"],
        priority=spec["priority"] or 0,
        cpu=quantities.milli_cpu(requests["cpu"]) / 1000 if "cpu" in requests else 0.0,
        memory=quantities.byte_count(requests["memory"]) if "memory" in requests else "",
        annotations=annotations,
    )


def with_requests(shape: Shape, extra: dict[str, str]) -> Shape:
    """The same pod shape with more requests (norequest.py: a job without a cpu request holds a node)."""
    res = shape.container.resources
    resources = res.model_copy(update={"requests": {**(res.requests or {}), **extra}})
    container = shape.container.model_copy(update={"resources": resources})
    return _shape(shape.spec, container, shape.labels, shape.annotations)


def with_labels(shape: Shape, extra: dict[str, str], annotations: dict[str, str] | None = None) -> Shape:
    """The same pod shape with more labels and annotations (queuejobs.py: Kueue's queue and
    priority-class labels, its topology-request annotations)."""
    notes = {**(shape.annotations or {}), **(annotations or {})} or None
    return _shape(shape.spec, shape.container, {**(shape.labels or {}), **extra}, notes)


def _pod(meta: client.V1ObjectMeta, spec: dict[str, Any], container: client.V1Container) -> client.V1Pod:
    pod_spec = _SPEC.model_copy(update={**spec, "containers": [container]})
    return _POD.model_copy(update={"metadata": meta, "spec": pod_spec})


_shapes: dict[bytes, Shape] = {}


def pod_from_job(
    job_id: str, job: dict[str, Any] | None, profile: dict[str, Any] | None, name: str
) -> client.V1Pod | Rejection:
    """The pod for a submitted job, or why Kubernetes cannot represent it."""
    shape = pod_shape(job_id, job, profile)
    return shape if isinstance(shape, Rejection) else assemble(job_id, name, shape)


def pod_shape(job_id: str, job: dict[str, Any] | None, profile: dict[str, Any] | None) -> Shape | Rejection:
    """The checked shape of a submitted job's pod, or why Kubernetes cannot represent it.

    Workloads submit thousands of jobs that carry nothing but a profile's name, and their profiles
    differ mostly in what a pod does not model (the delay: 7,139 profiles, 25 pod shapes in the 10k
    bench). The shape of such a job is kept per content of the fields that shape a pod (JSON, key order
    kept), so a profile changed in place is checked afresh.
    """
    res = job.get("res") if job is not None else None
    if job is None or profile is None or not hosts_ok(res) or not JOB_KEYS.isdisjoint(job):
        return _checked(job_id, job, profile)
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
    return shape


def assemble(job_id: str, name: str, shape: Shape) -> client.V1Pod:
    """The pod of one job: five shallow copies of the shape's validated templates (constructing the
    client's models field by field costs ~15x more, which shows at 10,000 pods), its container and
    requests its own, as callers edit them."""
    meta = {"name": name, "namespace": NAMESPACE,
            "annotations": {**(shape.annotations or {}), JOB_ID_ANNOTATION: job_id}}  # fmt: skip
    if shape.labels:
        meta["labels"] = dict(shape.labels)
    res = shape.container.resources
    own = res.model_copy(
        update={"requests": res.requests and dict(res.requests), "limits": res.limits and dict(res.limits)}
    )
    container = shape.container.model_copy(update={"resources": own})
    return _pod(_META.model_copy(update=meta), shape.spec, container)


def _checked(job_id: str, job: dict[str, Any] | None, profile: dict[str, Any] | None) -> Shape | Rejection:
    def reject(field: str, value: Any, expected: str) -> Rejection:
        return Rejection(job_id, field, repr(value), expected)

    if job is None:
        return reject("job", None, "the job's JSON in JOB_SUBMITTED (redis mode is not supported)")
    res = job.get("res")
    if not hosts_ok(res):
        return reject("res", res, f"a whole number of hosts from 1 to {MAX_GROUP} (res > 1: a pod group)")
    if profile is None:
        return reject("profile", job.get("profile"), "a profile known to Batsim")
    ptype = profile.get("type")
    for t in (ptype, *profile.get(SEQ_TYPES, ())):
        if t not in RUNNABLE:
            cannot = f"; batkube-py cannot run {CANNOT[t]}" if t in CANNOT else ""
            field = "profile.type" if t == ptype else "profile.seq"
            return reject(field, t, f"one of {', '.join(RUNNABLE)}{cannot}")

    requests: dict[str, str] = {}
    for key, convert in (("cpu", quantities.milli_cpu), ("memory", quantities.byte_count)):
        if key == "cpu" and ptype != "delay" and "cpu" not in job:  # the profile's cpu is flops there
            where, value = "profile.cpu_req", profile.get("cpu_req")
        else:
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
            n = extended_count(q)
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
    return _shape(spec, container, dict(labels) if labels else None)


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
    profile = profiles.get(job["profile"])
    if profile is not None and profile.get("type") == "composed":
        return {**profile, SEQ_TYPES: tuple(_leaf_types(profile, profiles, 0))}
    return profile


def _leaf_types(profile: dict, profiles: dict[str, dict], depth: int) -> list[Any]:
    """The types a composed profile runs, its nested composed profiles flattened (an unknown name: None)."""
    out: list[Any] = []
    for name in profile.get("seq") or ():
        sub = profiles.get(name) if isinstance(name, str) else None
        if sub is not None and sub.get("type") == "composed" and depth < 16:
            out += _leaf_types(sub, profiles, depth + 1)
        else:
            out.append(sub.get("type") if sub is not None else None)
    return out
