"""Reader for decision-process replies, applied event by event like protocol.cpp.

Batsim validates and forwards each event to the server *in array order*, sleeping
until the event timestamp when it lies in the future; an invalid event therefore
aborts only after the earlier ones were already delivered (the unknown_event_type
transcript aborts at 0.0030, not 0.0024).  Abort texts and file:line tags are the
ones Batsim 4.2.1 prints where a transcript shows them; the others are close
paraphrases of protocol.cpp (documented in README of this package).
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from procset import ProcSet

from .dynamic import parse_register_job, parse_register_profile
from .errors import BatsimAbort, BatsimRuntimeError, check
from .jsonfmt import fmt_g

if TYPE_CHECKING:
    from .context import Context

KNOWN = ("QUERY", "ANSWER", "REJECT_JOB", "EXECUTE_JOB", "CHANGE_JOB_STATE", "CALL_ME_LATER", "KILL_JOB",
         "REGISTER_JOB", "REGISTER_PROFILE", "SET_RESOURCE_STATE", "SET_JOB_METADATA", "NOTIFY", "TO_JOB_MSG")
P = "../src/protocol.cpp"
JOB_STATES = ("NOT_SUBMITTED", "RUNNING", "COMPLETED_SUCCESSFULLY", "COMPLETED_WALLTIME_REACHED",
              "COMPLETED_KILLED", "REJECTED")


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _size(data: Any, idx: int, etype: str, lo: int, hi: int) -> dict[str, Any]:
    check(isinstance(data, dict), f"Invalid JSON message: the 'data' value of event {idx} ({etype}) "
          "should be an object", P)
    n = len(data)
    sz = str(lo) if lo == hi else f"in [{lo},{hi}]"
    check(lo <= n <= hi, f"Invalid JSON message: the 'data' value of event {idx} ({etype}) should be of "
          f"size {sz} (size={n})", P)
    return data


def _job_id(ctx: Context, data: dict[str, Any], key: str, idx: int, etype: str) -> str:
    check(key in data, f"Invalid JSON message: the 'data' value of event {idx} ({etype}) should contain a "
          f"'{key}' key.", P)
    jid = data[key]
    check(isinstance(jid, str), f"Invalid JSON message: in event {idx} ({etype}): ['data']['{key}'] should "
          "be a string", P)
    parts = jid.split("!")
    check(len(parts) == 2 and all(parts), f"Invalid job identifier '{jid}'", "../src/jobs.cpp")
    check(jid in ctx.jobs, f"Cannot get job '{jid}': it does not exist", "../src/jobs.cpp:243")
    return jid


def _mapping(value: Any, idx: int, nb_alloc: int) -> list[int]:
    """EXECUTE_JOB's `mapping` (executor -> index in the alloc; ints or int strings) as a list indexed by
    executor; protocol.cpp's checks and messages."""
    where = f"of event {idx} (EXECUTE_JOB)"
    check(isinstance(value, dict), f"Invalid JSON message: the 'mapping' value in the 'data' value {where} "
          "should be a string.", P)
    check(len(value) > 0, f"Invalid JSON: the 'mapping' value in the 'data' value {where} must be a "
          "non-empty object", P)
    pairs: dict[int, int] = {}
    for key, val in value.items():
        check(isinstance(val, (int, str)) and not isinstance(val, bool),
              f"Invalid JSON message: Invalid 'mapping' {where}: a value is not an integer nor a string", P)
        try:
            pairs[_stoi(key)] = val if isinstance(val, int) else _stoi(val)
        except ValueError:
            raise BatsimAbort(f"Invalid JSON message: Invalid 'mapping' object {where}: all keys and values "
                              "must be integers (or strings representing integers)", P) from None
    out = []
    for expected, (executor, resource) in enumerate(sorted(pairs.items())):
        check(executor == expected, f"Invalid JSON message: Invalid 'mapping' object {where}: no resource "
              f"associated to executor {expected}.", P)
        check(0 <= resource < nb_alloc, f"Invalid JSON message: Invalid 'mapping' object {where}: executor "
              f"{executor} should use the {resource}-th resource within the allocation, but there are only "
              f"{nb_alloc} allocated resources.", P)
        out.append(resource)
    return out


def _stoi(text: str) -> int:
    """std::stoi: optional blanks and sign, then digits; what follows them is ignored."""
    m = re.match(r"\s*([+-]?\d+)", text)
    if not m:
        raise ValueError(text)
    return int(m.group(1))


def _parse_event(ctx: Context, idx: int, etype: str, data: Any) -> tuple[Any, ...] | None:
    """Validate one event; return the internal message for the server (None: nothing to send)."""
    if etype == "EXECUTE_JOB":
        data = _size(data, idx, etype, 2, 3)
        jid = _job_id(ctx, data, "job_id", idx, etype)
        check("alloc" in data and isinstance(data["alloc"], str), f"Invalid JSON message: in event {idx} "
              "(EXECUTE_JOB): ['data']['alloc'] should be a string", P)
        try:
            alloc = list(ProcSet.from_str(data["alloc"].strip()))
        except ValueError as exc:
            raise BatsimRuntimeError("Invalid JSON message: stoi") from exc
        check(len(alloc) > 0, f"Invalid JSON message: in event {idx} (EXECUTE_JOB): ['data']['alloc'] "
              "should not be empty", P)
        extra = [k for k in data if k not in ("job_id", "alloc")]
        if extra:
            check(extra[0] in ("mapping", "storage_mapping", "additional_io_job"), f"Invalid JSON message: "
                  f"event {idx} (EXECUTE_JOB) has an unknown key '{extra[0]}'", P)
        mapping = _mapping(data["mapping"], idx, len(alloc)) if "mapping" in data else None
        return ("EXECUTE_JOB", jid, alloc, data["alloc"], mapping)
    if etype == "CALL_ME_LATER":
        data = _size(data, idx, etype, 1, 1)
        t = data.get("timestamp")
        check(_is_num(t), f"Invalid JSON message: in event {idx} (CALL_ME_LATER): ['data']['timestamp'] "
              "should be a number", P)
        if t < ctx.k.now:
            ctx.log("network", f"Event {idx} (CALL_ME_LATER) asks to be called at time {fmt_g(t)} but it is "
                    f"already reached", level="WARNING")
        return ("CALL_ME_LATER", float(t))
    if etype == "REJECT_JOB":
        data = _size(data, idx, etype, 1, 1)
        return ("REJECT_JOB", _job_id(ctx, data, "job_id", idx, etype))
    if etype == "KILL_JOB":
        data = _size(data, idx, etype, 1, 1)
        ids = data.get("job_ids")
        check(isinstance(ids, list) and len(ids) > 0, f"Invalid JSON message: in event {idx} (KILL_JOB): "
              "['data']['job_ids'] should be a non-empty array", P)
        for j in ids:
            check(isinstance(j, str) and j in ctx.jobs, f"Cannot get job '{j}': it does not exist",
                  "../src/jobs.cpp:243")
        return ("KILL_JOB", list(ids))
    if etype == "NOTIFY":
        check(isinstance(data, dict) and isinstance(data.get("type"), str), f"Invalid JSON message: in "
              f"event {idx} (NOTIFY): ['data']['type'] should be a string", P)
        ntype = data["type"]
        check(ntype in ("registration_finished", "continue_registration"),
              f"Unknown NOTIFY type received ('{ntype}').", P)
        ctx.registration_finished = ntype == "registration_finished"  # set by the reader (handle_notify)
        return ("NOTIFY", ntype)
    if etype == "SET_JOB_METADATA":
        data = _size(data, idx, etype, 2, 2)
        jid = _job_id(ctx, data, "job_id", idx, etype)
        meta = data.get("metadata")
        check(isinstance(meta, str) and '"' not in meta, f"Invalid JSON message: in event {idx} "
              "(SET_JOB_METADATA): ['data']['metadata'] should be a string without '\"'", P)
        return ("SET_JOB_METADATA", jid, meta)
    if etype == "CHANGE_JOB_STATE":
        data = _size(data, idx, etype, 2, 3)
        jid = _job_id(ctx, data, "job_id", idx, etype)
        state = data.get("job_state")
        check(state in JOB_STATES, f"Invalid JSON message: in event {idx} (CHANGE_JOB_STATE): "
              f"['data']['job_state'] has an invalid value ('{state}')", P)
        return ("CHANGE_JOB_STATE", jid, state)
    if etype == "SET_RESOURCE_STATE":
        _size(data, idx, etype, 2, 2)
        return ("SET_RESOURCE_STATE",)
    if etype == "QUERY":
        return ("QUERY",)
    if etype == "REGISTER_JOB":
        return parse_register_job(ctx, idx, data)
    if etype == "REGISTER_PROFILE":
        return parse_register_profile(ctx, idx, data)
    raise BatsimAbort(f"The test double does not support event type '{etype}' (event {idx})", P)


def apply_reply(ctx: Context, raw: str) -> Generator[tuple[Any, ...], Any, None]:
    """Body of the request-reply actor after the reply arrived."""
    k = ctx.k
    try:
        msg = json.loads(raw)
    except ValueError:
        raise BatsimAbort("Invalid JSON message: could not be parsed", f"{P}:714") from None
    check(isinstance(msg, dict), "Invalid JSON message: not a JSON object", P)
    check("now" in msg, "Invalid JSON message: no 'now' key", f"{P}:717")
    now = msg["now"]
    check(_is_num(now), "Invalid JSON message: 'now' value should be a number.", P)
    check("events" in msg, "Invalid JSON message: no 'events' key", P)
    events = msg["events"]
    check(isinstance(events, list), "Invalid JSON message: 'events' value should be an array.", P)
    for idx, ev in enumerate(events):
        check(isinstance(ev, dict), f"Invalid JSON message: event {idx} should be an object.", P)
        check("timestamp" in ev, f"Invalid JSON message: event {idx} has no 'timestamp' key", P)
        ts = ev["timestamp"]
        check(_is_num(ts), f"Invalid JSON message: timestamp of event {idx} should be a number", P)
        check(ts <= now, f"Invalid JSON message: timestamp {fmt_g(ts)} of event {idx} should be lower "
              f"than or equal to now={fmt_g(now)}.", f"{P}:743")
        check("type" in ev, f"Invalid JSON message: event {idx} has no 'type' key", P)
        etype = ev["type"]
        check(isinstance(etype, str), f"Invalid JSON message: event {idx} 'type' value should be a string", P)
        check(etype in KNOWN, f"Invalid JSON message: event {idx} has an unknown 'type' value '{etype}'",
              f"{P}:749")
        check("data" in ev, f"Invalid JSON message: event {idx} has no 'data' key", P)
        internal = _parse_event(ctx, idx, etype, ev["data"])
        if internal is None:
            continue
        if ts > k.now:  # send_message_at_time
            yield ("sleep_for", float(ts) - k.now)
        yield ("put", "server", internal)
    if now > k.now:
        yield ("sleep_for", float(now) - k.now)
    yield ("put", "server", ("SCHED_READY",))
