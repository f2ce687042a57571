"""Builders for Batsim 4.2.1 messages as the real Batsim writes them (see shared transcripts)."""

from __future__ import annotations

import json
from typing import Any

CONFIG = {
    "redis-enabled": False, "redis-hostname": "127.0.0.1", "redis-port": 6379, "redis-prefix": "default",
    "profiles-forwarded-on-submission": False, "dynamic-jobs-enabled": False,
    "dynamic-jobs-acknowledged": False, "profile-reuse-enabled": False, "sched-config": "",
    "forward-unknown-events": False,
}  # fmt: skip


def host(i: int, name: str | None = None, **props: str) -> dict[str, Any]:
    return {
        "id": i,
        "name": name or f"node-{i}",
        "state": "idle",
        "properties": {"role": "", **props},
        "zone_properties": {},
    }


def begins(hosts: list[dict], profiles: dict[str, dict] | None = None, sharing: bool = True) -> dict:
    return {
        "timestamp": 0.0,
        "type": "SIMULATION_BEGINS",
        "data": {
            "nb_resources": len(hosts), "nb_compute_resources": len(hosts), "nb_storage_resources": 0,
            "allow_compute_sharing": sharing, "allow_storage_sharing": True, "config": CONFIG,
            "compute_resources": hosts, "storage_resources": [], "workloads": {"w0": "/tmp/w.json"},
            "profiles": {"w0": profiles or {}},
        },
    }  # fmt: skip


def submitted(t: float, job_id: str, profile: str = "p", res: int = 1, **fields: Any) -> dict:
    job = {"id": job_id, "subtime": t, "res": res, "profile": profile, **fields}
    return {"timestamp": t, "type": "JOB_SUBMITTED", "data": {"job_id": job_id, "job": job}}


def completed(t: float, job_id: str, alloc: str, state: str = "COMPLETED_SUCCESSFULLY") -> dict:
    data = {"job_id": job_id, "job_state": state, "return_code": 0, "alloc": alloc}
    return {"timestamp": t, "type": "JOB_COMPLETED", "data": data}


def notify(t: float, kind: str, **extra: Any) -> dict:
    return {"timestamp": t, "type": "NOTIFY", "data": {"type": kind, **extra}}


def ends(t: float) -> dict:
    return {"timestamp": t, "type": "SIMULATION_ENDS", "data": {}}


def message(now: float, *events: dict) -> bytes:
    return json.dumps({"now": now, "events": list(events)}).encode()


def reply_events(raw: bytes, wakeups: bool = False) -> list[tuple[str, dict]]:
    """The reply's events; CALL_ME_LATER (the queue's flush timers) only when asked for."""
    doc = json.loads(raw)
    for ev in doc["events"]:
        assert ev["timestamp"] <= doc["now"]
        if ev["type"] == "CALL_ME_LATER":
            assert ev["data"]["timestamp"] > doc["now"]
    return [(ev["type"], ev["data"]) for ev in doc["events"] if wakeups or ev["type"] != "CALL_ME_LATER"]


def requested_call(t: float) -> dict:
    return {"timestamp": t, "type": "REQUESTED_CALL", "data": {}}


def decided(process: Any, raw: bytes, wakeups: bool = False) -> list[tuple[str, dict]]:
    """The events of the reply to `raw` and of the reply to the wake-up it asks for to end the instant
    (batkube_py/adapter/instant.py), as Batsim would deliver it: what the adapter answers to one instant."""
    from batkube_py.adapter.instant import DECISION_DELAY

    now = json.loads(raw)["now"]
    first = process.handle(raw)
    out = reply_events(first, wakeups=True)
    window = [e[1]["timestamp"] for e in out if e[0] == "CALL_ME_LATER"]
    window = [t for t in window if t <= now + DECISION_DELAY + 1e-9]
    if window:
        out = [e for e in out if not (e[0] == "CALL_ME_LATER" and e[1]["timestamp"] == window[0])]
        out += reply_events(process.handle(message(window[0], requested_call(window[0]))), wakeups=True)
    return [e for e in out if wakeups or e[0] != "CALL_ME_LATER"]


def same_simulation_begins(text: str, recorded: str) -> bool:
    """The double's SIMULATION_BEGINS is Batsim's text, byte for byte (profiles in Batsim's unordered-map
    order included), once each workload's absolute path is replaced by the recorded one."""
    mine = json.loads(text)["events"][0]["data"]["workloads"]
    theirs = json.loads(recorded)["events"][0]["data"]["workloads"]
    for name, path in mine.items():
        text = text.replace(json.dumps(path), json.dumps(theirs[name]))
    return text == recorded
