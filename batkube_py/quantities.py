"""Kubernetes quantities as the integers kube-scheduler computes with (milli-cpu, bytes)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from functools import lru_cache

from kubernetes.utils.quantity import parse_quantity

# A bound far above any real machine, so absurd values are refused before they reach int64 arithmetic.
MAX_MILLI_CPU = 10**12
MAX_BYTES = 2**62
_ABSURD = Decimal(2**63)


class QuantityError(ValueError):
    pass


def _parse(value: object) -> Decimal:
    _check_type(value)
    try:
        q = parse_quantity(value if isinstance(value, str) else repr(value))
    except (ValueError, InvalidOperation, TypeError) as exc:
        raise QuantityError(f"{value!r} is not a Kubernetes quantity ({exc})") from None
    if not q.is_finite():
        raise QuantityError(f"{value!r} is not finite")
    if q < 0:
        raise QuantityError(f"{value!r} is negative")
    if q > _ABSURD:
        raise QuantityError(f"{value!r} is absurdly large")
    return q


def milli_cpu(value: object) -> int:
    """CPU in milli-cores, rounded up like resource.Quantity.MilliValue()."""
    _check_type(value)
    return _milli_cpu(value)


def byte_count(value: object) -> int:
    _check_type(value)
    return _byte_count(value)


def _check_type(value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise QuantityError(f"expected a Kubernetes quantity (string or number), got {value!r}")


@lru_cache(maxsize=4096)  # workloads repeat a handful of quantities thousands of times
def _milli_cpu(value: str | int | float) -> int:
    m = math.ceil(_parse(value) * 1000)
    if m > MAX_MILLI_CPU:
        raise QuantityError(f"cpu {value!r} is absurdly large (> {MAX_MILLI_CPU // 1000} cores)")
    return int(m)


@lru_cache(maxsize=4096)
def _byte_count(value: str | int | float) -> int:
    b = math.ceil(_parse(value))
    if b > MAX_BYTES:
        raise QuantityError(f"memory {value!r} is absurdly large (> 2^62 bytes)")
    return int(b)


def as_float(value: object) -> float:
    """resource.Quantity.AsFloat64Slow, for a fairSharing.weight."""
    return float(_parse(value))


def count(value: object) -> int:
    q = _parse(value)
    if q != q.to_integral_value():
        raise QuantityError(f"{value!r} is not a whole number")
    return int(q)


def format_milli_cpu(milli: int) -> str:
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def kueue_text(resource: str, value: int) -> str:
    """A quantity as Kueue's messages print it (resources.ResourceQuantityString): milli-cores for cpu,
    the canonical binary form for memory when exact (else decimal), a plain count for the rest."""
    if resource == "cpu":
        return format_milli_cpu(value)
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        for unit, size in (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20),
                           ("Ki", 2**10)):  # fmt: skip
            if value and value % size == 0:
                return f"{value // size}{unit}"
        for unit, size in (("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6),
                           ("k", 10**3)):  # fmt: skip
            if value and value % size == 0:
                return f"{value // size}{unit}"
    return str(value)


def format_bytes(n: float) -> str:
    """Memory as people write it (6Gi, 512Mi, 1.5Gi), for messages: raw byte counts are unreadable."""
    for unit, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if n >= size:
            return f"{int(n) // size}{unit}" if n % size == 0 else f"{n / size:.3g}{unit}"
    return f"{int(n)}"


def unfit_reason(
    cpu: int, memory: int, rooms: Sequence[tuple[float, float, float]], extra: Sequence[str] = ()
) -> str:
    """Why requests (milli-cpu, bytes) fit no node of the empty cluster, whose rooms are each node's
    (milli-cpu, bytes or inf when it models no memory, pod slots): names each resource that is too big
    for every node, in the units a user writes, with the largest a node offers."""
    if not rooms:
        return "a cluster with at least one node"
    max_cpu, max_mem, max_pods = (max(r[i] for r in rooms) for i in range(3))
    parts = []
    if cpu > max_cpu:
        parts.append(f"cpu request {format_milli_cpu(cpu)} exceeds every node's allocatable cpu "
                     f"(max {format_milli_cpu(int(max_cpu))})")  # fmt: skip
    if memory > max_mem:
        parts.append(f"memory request {format_bytes(memory)} exceeds every node's allocatable memory "
                     f"(max {format_bytes(max_mem)})")  # fmt: skip
    if max_pods < 1:
        parts.append("every node allows 0 pods")
    parts += extra
    if parts:
        return "; ".join(parts)
    mem = f" and memory {format_bytes(memory)}" if memory else ""
    return f"no node has cpu {format_milli_cpu(cpu)}{mem} at once (each fits some node alone)"


def allocatable(a: dict[str, str]) -> tuple[int, int, int]:
    """A node's (milli-cpu, bytes or -1 where it models no memory, pod slots)."""
    mem = byte_count(a["memory"]) if "memory" in a else -1
    return milli_cpu(a.get("cpu", "0")), mem, count(a.get("pods", "110"))


def pod_requests(pod) -> tuple[int, int]:
    """A V1Pod's summed container requests (milli-cpu, bytes)."""
    cpu = mem = 0
    for c in pod.spec.containers:
        r = (c.resources.requests if c.resources else None) or {}
        cpu += milli_cpu(r["cpu"]) if "cpu" in r else 0
        mem += byte_count(r["memory"]) if "memory" in r else 0
    return cpu, mem
