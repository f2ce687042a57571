"""Workload JSON loading with Batsim's id rules and profile pruning.

Jobs keep every original field (forwarded verbatim in JOB_SUBMITTED), the id is
rewritten as `wl!name` following the substring quirk of PROTOCOL.md section 1.3, and
only referenced profiles are kept (Batsim drops the others before SIMULATION_BEGINS).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from . import jsonfmt


class WorkloadError(Exception):
    """Invalid workload content (Batsim would abort while loading)."""


@dataclass
class Job:
    id: str
    workload: str
    name: str
    subtime: float
    res: int
    walltime: float
    profile: str
    profile_data: dict[str, Any]
    json_text: str
    order: int
    state: str = "NOT_SUBMITTED"
    alloc: list[int] = field(default_factory=list)
    start: float = -1.0
    finish: float = -1.0
    return_code: int = 0
    kill_requested: bool = False
    metadata: str = ""
    hosts: list[str] = field(default_factory=list)  # one host name per executor (the mapping applied)
    task: Any = None  # the running task tree (tasks.BatTask)


def job_identifier(raw_id: Any, workload: str) -> str:
    """Batsim's `JobIdentifier` construction from a workload `id` field."""
    sid = str(raw_id)
    if workload not in sid:
        sid = f"{workload}!{sid}"
    parts = sid.split("!")
    if len(parts) != 2 or not all(parts):
        raise WorkloadError(f"Invalid job identifier '{sid}'")
    return sid


@dataclass
class Workload:
    name: str
    path: str
    jobs: list[Job]
    profiles: dict[str, dict[str, Any]]
    nb_res: int = -1  # the workload's 'nb_res' (--mmax-workload)


def load_workload(path: str, name: str) -> Workload:
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if not isinstance(doc.get("nb_res"), int) or doc["nb_res"] <= 0:
        raise WorkloadError("Invalid JSON file: 'nb_res' should be a strictly positive integer")
    profiles_all: dict[str, dict[str, Any]] = doc.get("profiles", {})
    jobs: list[Job] = []
    referenced: dict[str, None] = {}
    for order, raw in enumerate(doc.get("jobs", [])):
        jid = job_identifier(raw["id"], name)
        prof = str(raw["profile"])
        if prof not in profiles_all:
            raise WorkloadError(f"Invalid job '{jid}': the associated profile '{prof}' does not exist")
        rewritten = {k: (jid if k == "id" else v) for k, v in raw.items()}
        walltime = float(raw.get("walltime", -1))
        jobs.append(Job(jid, name, jid.split("!")[1], float(raw["subtime"]), int(raw["res"]), walltime, prof,
                        profiles_all[prof], jsonfmt.dumps(rewritten), order))
        referenced.setdefault(prof, None)
    for prof in list(referenced):
        _sequence_members(profiles_all, prof, referenced)
    profiles = {p: profiles_all[p] for p in referenced}
    return Workload(name, absolute_filename(path), jobs, profiles, doc["nb_res"])


def absolute_filename(path: str | os.PathLike[str]) -> str:
    """Batsim's absolute_filename (batsim.cpp): cwd + '/' + path, '..' kept as given."""
    path = str(path)
    return path if path.startswith("/") else f"{os.getcwd()}/{path}"


def _sequence_members(profiles: dict[str, dict[str, Any]], name: str, out: dict[str, None]) -> None:
    """A composed profile keeps the profiles of its `seq` alive (Workload::check_validity's refcounts)."""
    prof = profiles[name]
    if prof.get("type") != "composed":
        return
    for sub in prof.get("seq", []):
        if sub not in profiles:
            raise WorkloadError(f"Invalid composed profile '{name}': the used profile '{sub}' does not exist")
        if sub not in out:
            out[sub] = None
            _sequence_members(profiles, sub, out)
