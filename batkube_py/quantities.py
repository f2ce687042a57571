"""Kubernetes quantities as the integers kube-scheduler computes with (milli-cpu, bytes)."""

from __future__ import annotations

import math
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


def count(value: object) -> int:
    q = _parse(value)
    if q != q.to_integral_value():
        raise QuantityError(f"{value!r} is not a whole number")
    return int(q)


def format_milli_cpu(milli: int) -> str:
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


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
