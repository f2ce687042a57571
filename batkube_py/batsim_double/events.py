"""External events files (--events) loaded as Batsim 4.2.1 loads them (EventList::load_from_json and
Event::from_json, events.cpp): one JSON object per non-empty line, each checked in Batsim's order with its
message, then sorted by (timestamp, type)."""

from __future__ import annotations

import re
from typing import Any

from . import loading
from .errors import BatsimAbort, check

E = "../src/events.cpp"
PREFIX = "Invalid JSON event"
EVENT_TYPES = {"machine_available": 0, "machine_unavailable": 1}  # Batsim's EventType order; generic = 2
_STOI = re.compile(r"[ \t\n\v\f\r]*[+-]?\d+")


def load_events(path: str, unknown_as_generic: bool) -> list[dict[str, Any]]:
    """The events of one file; types other than machine_(un)available are kept only under
    --forward-unknown-events (then sent verbatim in a NOTIFY), otherwise Batsim refuses the file."""
    out = []
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        text = f.read()
    for line in text.split("\n"):
        if not line:
            continue
        try:
            ev = loading.parse(line)
        except loading.ParseError:
            ev = None
        check(isinstance(ev, dict), f"Invalid JSON event file {path}, an event could not be parsed.",
              f"{E}:188")  # fmt: skip
        assert isinstance(ev, dict)
        out.append(_checked(ev, unknown_as_generic))
    out.sort(key=lambda e: (float(e["timestamp"]), EVENT_TYPES.get(e["type"], 2)))
    return out


def _checked(ev: dict[str, Any], unknown_as_generic: bool) -> dict[str, Any]:
    """Event::from_json's checks."""
    check("type" in ev, f"{PREFIX}: one event has no 'type' field", f"{E}:93")
    check(isinstance(ev["type"], str),
          f"{PREFIX}: one event type field is not valid, it should be a string.", f"{E}:94")  # fmt: skip
    check("timestamp" in ev, f"{PREFIX}: one event has no 'timestamp' field", f"{E}:96")
    check(loading.is_number(ev["timestamp"]),
          f"{PREFIX}: one event timestamp field is not valid, it should be a number.", f"{E}:97")  # fmt: skip
    check(ev["type"] in EVENT_TYPES or unknown_as_generic, f"Unknown event type: {ev['type']}", f"{E}:79")
    check(ev["timestamp"] >= 0, f"{PREFIX}: one event has a non-positive timestamp.", f"{E}:104")
    if ev["type"] in EVENT_TYPES:
        check("resources" in ev, f"{PREFIX}: one event has no 'resources' field", f"{E}:109")
        check(isinstance(ev["resources"], str),
              f"{PREFIX}: one event resources field is not valid, it should be a string.",
              f"{E}:110")  # fmt: skip
        for bound in (b for part in ev["resources"].split(" ") if part for b in part.split("-")):
            if not _stoi(bound):  # IntervalSet::from_string_hyphen, rethrown as a runtime_error
                raise BatsimAbort("Invalid JSON message: stoi", "./src/xbt/exception.cpp:48",
                                  exception="std::runtime_error")  # fmt: skip
    return ev


def _stoi(text: str) -> bool:
    m = _STOI.match(text)
    return m is not None and -(2**31) <= int(m.group(0)) < 2**31
