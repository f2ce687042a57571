"""Workload JSON loading as Batsim 4.2.1 does it (Workload::load_from_json, workload.cpp).

Every check Batsim makes while loading is made in its order, with its message (loading.py), so that a
workload Batsim refuses is refused here too. Profiles live in an unordered map (hashorder.py): its order
decides which composed profile is checked first, which unreferenced profiles are dropped (a profile
is dropped when nothing but the map holds it at its turn, and a composed profile dropped before its
members releases them) and how SIMULATION_BEGINS lists the rest. Jobs keep their JSON text with the id
rewritten as Batsim rewrites it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import loading
from .errors import BatsimAbort, check
from .hashorder import map_order

W = "../src/workload.cpp"
Log = Callable[[str, str], None]


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


@dataclass
class Workload:
    """`profiles`: the profiles Batsim still holds, in its map order; `table`: every profile name the
    workload ever had (None once dropped: Batsim still knows the name); `sequences`: the resolved members
    of each composed profile loaded from the file (a registered composed profile has none)."""

    name: str
    path: str
    jobs: list[Job]
    profiles: dict[str, dict[str, Any]]
    nb_res: int = -1  # the workload's 'nb_res' (--mmax-workload)
    table: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    sequences: dict[str, list[tuple[str, dict[str, Any]]]] = field(default_factory=dict)

    def add_profile(self, name: str, profile: dict[str, Any]) -> None:
        self.table[name] = self.profiles[name] = profile

    def remove_profile(self, name: str) -> None:
        """Profiles::remove_profile (a finished job's profile without --enable-profile-reuse)."""
        if self.table.get(name) is None:
            return
        for sub, _ in self.sequences.get(name, ()):
            self.remove_profile(sub)
        self.table[name] = None
        self.profiles.pop(name, None)


def absolute_filename(path: str | os.PathLike[str]) -> str:
    """Batsim's absolute_filename (batsim.cpp): cwd + '/' + path, '..' kept as given."""
    path = str(path)
    return path if path.startswith("/") else f"{os.getcwd()}/{path}"


def load_workload(path: str, name: str, log: Log | None = None) -> Workload:
    """The workload `name` from its file; BatsimAbort where Batsim aborts."""
    log = log or (lambda category, message: None)
    filename = absolute_filename(path)
    log("workload", f"Loading JSON workload '{filename}'...")
    prefix = f"Invalid JSON file '{filename}'"
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        text = f.read()
    try:
        doc = loading.parse(text)
    except loading.ParseError:
        raise BatsimAbort(f"{prefix}: could not be parsed", f"{W}:78") from None
    check(isinstance(doc, dict), f"{prefix}: not a JSON object", f"{W}:79")
    check("nb_res" in doc, f"{prefix}: the 'nb_res' field is missing", f"{W}:82")
    check(loading.is_int(doc["nb_res"]), f"{prefix}: the 'nb_res' field is not an integer", f"{W}:84")
    check(doc["nb_res"] > 0, f"{prefix}: the value of the 'nb_res' field is invalid ({doc['nb_res']})",
          f"{W}:86")  # fmt: skip
    table = _profiles(doc, prefix, filename)
    raw_jobs = _jobs(doc, name, prefix, table, log)
    log("workload", f"JSON workload parsed sucessfully. Read {len(raw_jobs)} jobs and {len(table)} profiles.")
    log("workload", "Checking workload validity...")
    wl = Workload(name, filename, [], {}, doc["nb_res"], table)
    profile_order = map_order(table)
    _check_validity(wl, profile_order, raw_jobs)
    log("workload", "Workload seems to be valid.")
    log("workload", "Removing unreferenced profiles from memory...")
    _drop_unreferenced(wl, profile_order, raw_jobs, log)
    for order, (jid, text, desc) in enumerate(raw_jobs.values()):
        prof = desc["profile"]
        walltime = float(desc.get("walltime", -1))
        wl.jobs.append(Job(jid, name, jid.split("!", 1)[1], float(desc["subtime"]), desc["res"], walltime,
                           prof, table_entry(table, prof), text, order))  # fmt: skip
    return wl


def table_entry(table: dict[str, dict[str, Any] | None], name: str) -> dict[str, Any]:
    entry = table[name]
    assert entry is not None
    return entry


def _profiles(doc: dict, prefix: str, filename: str) -> dict[str, dict[str, Any] | None]:
    check("profiles" in doc, f"{prefix}: the 'profiles' object is missing", "../src/profiles.cpp:36")
    profiles = doc["profiles"]
    check(isinstance(profiles, loading.Obj), f"{prefix}: the 'profiles' member is not an object",
          "../src/profiles.cpp:39")  # fmt: skip
    table: dict[str, dict[str, Any] | None] = {}
    for key, value in profiles.pairs:
        loading.profile_from_json(key, value, prefix, filename)
        check(key not in table, f"{prefix}: duplication of profile name '{key}'", "../src/profiles.cpp:52")
        table[key] = value
    return table


def _jobs(doc: dict, name: str, prefix: str, table: dict, log: Log) -> dict[str, tuple[str, str, dict]]:
    check("jobs" in doc, f"{prefix}: the 'jobs' array is missing", "../src/jobs.cpp:223")
    check(isinstance(doc["jobs"], list), f"{prefix}: the 'jobs' member is not an array",
          "../src/jobs.cpp:225")  # fmt: skip
    jobs: dict[str, tuple[str, str, dict]] = {}
    for desc in doc["jobs"]:
        jid, text = loading.job_from_json(desc, name, prefix, table, log)
        check(jid not in jobs, f"{prefix}: duplication of job id '{jid}'", "../src/jobs.cpp:233")
        jobs[jid] = (jid, text, desc)
    return jobs


def _check_validity(wl: Workload, profile_order: list[str], jobs: dict[str, tuple[str, str, dict]]) -> None:
    """Workload::check_validity: every composed profile's members exist (resolved once, here), and a
    `parallel` profile has as many executors as its job's `res`."""
    for name in profile_order:
        prof = table_entry(wl.table, name)
        if prof["type"] == "composed":
            for sub in prof["seq"]:
                check(sub in wl.table,
                      f"Invalid composed profile '{name}': the used profile '{sub}' does not exist",
                      f"{W}:137")  # fmt: skip
            wl.sequences[name] = [(sub, table_entry(wl.table, sub)) for sub in prof["seq"]]
    for jid in map_order(jobs):
        _, _, desc = jobs[jid]
        prof = table_entry(wl.table, desc["profile"])
        if prof["type"] == "parallel":
            n = len(prof["cpu"])
            check(n == desc["res"],
                  f"Invalid job {jid}: the requested number of resources ({desc['res']}) do NOT match the "
                  f"number of resources of the associated profile '{desc['profile']}' ({n})",
                  f"{W}:167")  # fmt: skip


def _drop_unreferenced(wl: Workload, order: list[str], jobs: dict[str, tuple], log: Log) -> None:
    """Profiles::remove_unreferenced_profiles with shared_ptr counts: the map's, the jobs', and the
    composed profiles' resolved members'."""
    refs = dict.fromkeys(order, 1)
    for _, _, desc in jobs.values():
        refs[desc["profile"]] += 1
    for members in wl.sequences.values():
        for sub, _ in members:
            refs[sub] += 1

    def release(name: str) -> None:
        refs[name] -= 1
        if refs[name] == 0:
            log("profiles", f"Profile '{name}' is being deleted.")
            for sub, _ in wl.sequences.get(name, ()):
                release(sub)

    for name in order:
        if refs[name] < 2:
            wl.table[name] = None
            release(name)
    wl.profiles = {name: table_entry(wl.table, name) for name in order if wl.table[name] is not None}
