"""Job and profile fields that nothing reads, found before the run starts.

Batsim keeps any field it does not know and forwards it, and a pod is shaped only from the fields it
knows, so a misspelt `cpus` or `memroy` used to vanish without a word: the job became a pod without a
request, i.e. a whole node (norequest.py). Each unknown field is reported once per workload with the jobs
or profiles carrying it and the known field it most resembles; `batkube run` logs it, records it in
summary.json and, under `--strict`, refuses the workload.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from batkube_py.adapter import gangjobs, gates, podshape, queuejobs

# Batsim 4.2.1's own (jobs.cpp, profiles.cpp); any other field is kept and forwarded to us
BATSIM_JOB = ("id", "subtime", "walltime", "res", "profile", "smpi_ranks_to_hosts_mapping")
BATSIM_PROFILE = ("type", "ret")
BY_TYPE = {
    "delay": ("delay",),
    "parallel": ("cpu", "com"),
    "parallel_homogeneous": ("cpu", "com"),
    "parallel_homogeneous_total": ("cpu", "com"),
    "composed": ("seq", "repeat"),
}  # the profile types a pod runs (podshape.RUNNABLE); the others are rejected with their own reason
# what batkube reads: the pod's fields (on the job or its profile), a gang's, a gate's (job only)
POD = (*sorted(podshape.JOB_KEYS), *gangjobs.FIELDS)
JOB_FIELDS = frozenset((*BATSIM_JOB, *POD, gates.FIELD, *queuejobs.FIELDS))
PROFILE_FIELDS = frozenset((*BATSIM_PROFILE, *POD, "cpu_req"))


@dataclass
class Unknown:
    """One unknown field: on jobs (`kind` "job") or on profiles, how many carry it, the first of them."""

    kind: str
    field: str
    count: int
    first: str
    known: frozenset[str]

    @property
    def hint(self) -> str:
        close = difflib.get_close_matches(self.field, sorted(self.known), n=1, cutoff=0.6)
        return f" (did you mean {close[0]!r}?)" if close else ""

    def message(self) -> str:
        first = f"job {self.first}" if self.kind == "job" else f"profile {self.first!r}"
        return f"unknown {self.kind} field {self.field!r}{self.hint} on {self.count} {self.kind}(s) " \
               f"(first: {first})"


def unknown_fields(doc: dict[str, Any]) -> list[Unknown]:
    """The fields of the workload's jobs and profiles that neither Batsim nor batkube reads."""
    found: dict[tuple[str, str], Unknown] = {}

    def note(kind: str, field: str, who: str, known: frozenset[str]) -> None:
        hit = found.get((kind, field))
        if hit is None:
            found[kind, field] = Unknown(kind, field, 1, who, known)
        else:
            hit.count += 1

    for job in doc.get("jobs") or ():
        if isinstance(job, dict):
            for field in job.keys() - JOB_FIELDS:
                note("job", str(field), str(job.get("id", "?")), JOB_FIELDS)
    profiles = doc.get("profiles")
    for name, profile in (profiles.items() if isinstance(profiles, dict) else ()):
        if isinstance(profile, dict) and profile.get("type") in BY_TYPE:
            known = PROFILE_FIELDS | set(BY_TYPE[profile["type"]])
            for field in profile.keys() - known:
                note("profile", str(field), str(name), known)
    return sorted(found.values(), key=lambda u: (u.kind, u.field))
