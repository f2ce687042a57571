"""Pure translation between Batsim's world and Kubernetes objects.

SimGrid hosts become V1Node, bindings become EXECUTE_JOB allocations, job ids become pod names (jobs
become pods in podshape.py). A job Kubernetes cannot represent becomes a Rejection that names the job,
the field, the value and what was expected, so the user can fix the workload rather than guess.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass

from kubernetes import client
from procset import ProcSet

from batkube_py import quantities
from batkube_py.kubeapi import RESOURCE_ID_ANNOTATION, is_extended_resource, resource_id
from batkube_py.protocol.models import Resource

DEFAULT_SCHEDULER = "default-scheduler"
DEFAULT_MAX_PODS = 110
DEFAULT_CORES = 1
NAMESPACE = "default"
JOB_ID_ANNOTATION = "batkube.io/job-id"
HOSTNAME_LABEL = "kubernetes.io/hostname"
# Host properties consumed by the translation itself; every other one becomes a label.
_NODE_KEYS = {"core", "cpu", "memory", "pods", "taints"}
_TAINT_EFFECTS = {"NoSchedule", "PreferNoSchedule", "NoExecute"}

_LABEL_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def extended_count(value: object) -> int | None:
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


@functools.cache
def _runs_outside(allowed: str) -> re.Pattern:
    return re.compile(f"[^{allowed}]+")


_EDGES = re.compile(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$")


def _sanitise(text: str, allowed: str, max_len: int) -> str:
    out = _runs_outside(allowed).sub("-", text)[:max_len]
    return _EDGES.sub("", out)


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
        k: n for k, v in props.items() if is_extended_resource(k) and (n := extended_count(v)) is not None
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


def alloc_for(node: client.V1Node) -> ProcSet:
    """The EXECUTE_JOB allocation for a pod bound to `node`."""
    return ProcSet(resource_id(node))
