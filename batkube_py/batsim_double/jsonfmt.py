"""Batsim's JSON text style: compact, key order kept, doubles printed with %f.

Batsim re-serialises the workload's job/profile objects with rapidjson plus its own
double formatting, so `7.5` becomes `7.500000` and `1e10` becomes
`10000000000.000000` while integers stay integers.  Reproducing that lets tests
compare raw message text, not just parsed JSON.
"""

from __future__ import annotations

import json
from typing import Any

_str = json.JSONEncoder(ensure_ascii=False).encode


def dumps(obj: Any) -> str:
    if isinstance(obj, str):
        return _str(obj)
    if obj is True:
        return "true"
    if obj is False:
        return "false"
    if obj is None:
        return "null"
    if isinstance(obj, int):
        return str(obj)
    if isinstance(obj, float):
        return f"{obj:f}"
    if isinstance(obj, dict):
        return "{" + ",".join(_str(str(k)) + ":" + dumps(v) for k, v in obj.items()) + "}"
    if isinstance(obj, (list, tuple)):
        return "[" + ",".join(dumps(v) for v in obj) + "]"
    raise TypeError(f"cannot serialise {type(obj)!r}")


def fmt_g(value: float) -> str:
    """C's %g, used in several of Batsim's assertion messages."""
    return f"{value:g}"
