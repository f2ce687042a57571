"""Integers as Go parses them, where kube-scheduler's answer depends on the parser."""

from __future__ import annotations

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def parse_int64(v: str) -> int | None:
    """Go's strconv.ParseInt(v, 10, 64), which Gt/Lt use on labels and operands; None where it errs.

    Python's int() is laxer: it takes "1_0", surrounding spaces, non-ASCII digits and any size.
    """
    digits = v[1:] if v[:1] in ("+", "-") else v
    if not digits or not (digits.isascii() and digits.isdigit()):
        return None
    n = int(v, 10)
    return n if _INT64_MIN <= n <= _INT64_MAX else None
