"""Durations and Kubernetes quantities as researchers type them on the command line."""

from __future__ import annotations

import math
import re

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|s|m|h|d)")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str) -> float:
    """Seconds from ``3600``, ``90s``, ``10h`` or Go-style ``1h30m`` (the thesis' converter took ``1h``)."""
    raw = text.strip().lower()
    try:
        value = float(raw)
    except ValueError:
        pass
    else:
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"expected a non-negative duration, got {text!r}")
        return value
    pos, total = 0, 0.0
    for match in _DURATION_PART.finditer(raw):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(raw) or not raw:
        raise ValueError(f"expected a duration such as 3600, 90s, 10h or 1h30m, got {text!r}")
    return total


_BINARY = {"Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "Ti": 1024**4}
_DECIMAL = {"": 1, "k": 1000, "M": 1000**2, "G": 1000**3, "T": 1000**4}
_QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$")


def parse_memory(text: str) -> int:
    """Bytes from a Kubernetes memory quantity (``512Mi``, ``4Gi``, ``1G``, ``1048576``)."""
    match = _QUANTITY.match(text.strip())
    if not match:
        raise ValueError(f"expected a memory quantity such as 512Mi or 4Gi, got {text!r}")
    unit = match.group(2) or ""
    scale = _BINARY.get(unit) or _DECIMAL[unit]
    return int(float(match.group(1)) * scale)


def format_memory_kib(kib: int) -> str:
    """The largest binary unit that keeps the value integral, so quantities read like hand-written ones."""
    for unit, factor in (("Gi", 1024**2), ("Mi", 1024)):
        if kib % factor == 0:
            return f"{kib // factor}{unit}"
    return f"{kib}Ki"
