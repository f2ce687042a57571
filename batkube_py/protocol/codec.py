"""Bytes <-> typed messages. Every failure names the event index, its type and the offending field."""

from __future__ import annotations

import json
import logging
from typing import Any

import orjson
from pydantic import ValidationError

from batkube_py.protocol.models import INCOMING, Event, Message

log = logging.getLogger(__name__)


class ProtocolError(ValueError):
    """The peer sent something that is not a Batsim 4.2.1 message."""


def _describe(err: ValidationError) -> str:
    parts = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "(root)"
        parts.append(f"{loc}: {e['msg']}")
    return "; ".join(parts)


# Past 2**33 s (272 years) a double no longer resolves Batsim's 1e-6 s, and the adapter's instants
# (instant.py: t + 0.02) stop moving at all by 2**49 s: such a clock is refused, not spun on.
MAX_TIME = float(2**33)


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ProtocolError(f"{where} must be a number, got {value!r}")
    return float(value)


def _time(value: Any, where: str) -> float:
    t = _number(value, where)
    if not abs(t) <= MAX_TIME:  # also NaN and the infinities
        raise ProtocolError(f"{where} is {value!r}: a simulated time must be finite and within "
                            f"{MAX_TIME:.0f} s (272 years), where a double still resolves 1e-6 s")
    return t


def decode_message(raw: bytes | str) -> tuple[Message, list[dict[str, Any]]]:
    """Parse one Batsim message; unknown event types are returned aside, not fatal.

    Unknown types are tolerated because Batsim forwards generic external events verbatim with
    `--forward-unknown-events`; a decision process that crashed on them would end the simulation.
    """
    try:
        doc = orjson.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:  # orjson's error is a JSONDecodeError
        text = raw[:200] if isinstance(raw, str) else raw[:200].decode("utf-8", "replace")
        raise ProtocolError(f"message is not valid JSON ({exc}): {text!r}") from None
    if not isinstance(doc, dict):
        raise ProtocolError(f"message must be a JSON object, got {type(doc).__name__}")
    missing = [k for k in ("now", "events") if k not in doc]
    if missing:
        raise ProtocolError(f"message has no {' and no '.join(repr(k) for k in missing)} key")
    now = _time(doc["now"], "'now'")
    if not isinstance(doc["events"], list):
        raise ProtocolError("'events' must be an array")
    events: list[Event] = []
    unknown: list[dict[str, Any]] = []
    for i, ev in enumerate(doc["events"]):
        if not isinstance(ev, dict):
            raise ProtocolError(f"event {i} must be an object, got {ev!r}")
        for key in ("timestamp", "type", "data"):
            if key not in ev:
                raise ProtocolError(f"event {i} ({ev.get('type', '?')}) has no {key!r} key")
        ts = _time(ev["timestamp"], f"event {i} timestamp")
        kind = ev["type"]
        model = INCOMING.get(kind) if isinstance(kind, str) else None
        if model is None:
            log.warning("ignoring event %d of unknown type %r", i, kind)
            unknown.append(ev)
            continue
        if not isinstance(ev["data"], dict):
            raise ProtocolError(f"event {i} ({kind}): 'data' must be an object")
        try:
            data = model.model_validate(ev["data"])
        except ValidationError as exc:
            raise ProtocolError(f"event {i} ({kind}) is malformed: {_describe(exc)}") from None
        events.append(Event(timestamp=ts, type=kind, data=data))
    return Message(now=now, events=events), unknown


def encode_reply(now: float, events: list[tuple[float, str, dict[str, Any]]]) -> bytes:
    doc = {
        "now": now,
        "events": [{"timestamp": ts, "type": kind, "data": data} for ts, kind, data in events],
    }
    return orjson.dumps(doc)  # compact; non-finite times never get here (Reply refuses them)
