"""Dynamic jobs (REGISTER_PROFILE / REGISTER_JOB / NOTIFY registration_*) as in Batsim 4.2.1.

Reader side (protocol.cpp `handle_register_job` / `handle_register_profile`): only
the shape of `data` is checked there; unlike most events there is NO member-count
check, the `--enable-dynamic-jobs` and "registration already finished" checks come
first.  Server side (server.cpp `server_on_register_profile` / `_register_job`):
the profile's workload is created on the fly (`Workload::new_dynamic_workload`),
a job's workload must already exist ("Internal error: Workload '%s' should
exist."), a job id may never be reused (Jobs::exists looks at every job ever met,
deleted ones included), the job is parsed by `Job::from_json` (so `subtime` is
REQUIRED and taken from the job object, not from the clock), counted as submitted,
and echoed as JOB_SUBMITTED only with `--acknowledge-dynamic-jobs`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import jsonfmt
from .errors import check
from .loading import job_from_json as checked_job
from .loading import profile_from_json, split_job_identifier
from .workload import Job, Workload

if TYPE_CHECKING:
    from .context import Context

P = "../src/protocol.cpp"
S = "../src/server.cpp"
JOB_ERR = "Invalid JSON job submitted by the scheduler"


def _string_member(data: dict[str, Any], key: str, idx: int, etype: str) -> str:
    check(
        key in data,
        f"Invalid JSON message: the 'data' value of event {idx} ({etype}) should have a '{key}' key",
        P,
    )
    value = data[key]
    check(
        isinstance(value, str),
        f"Invalid JSON message: in event {idx} ({etype}): ['data']['{key}'] should be a string",
        P,
    )
    return value


def _registration(ctx: Context, what: str, idx: int, data: Any) -> dict[str, Any]:
    """Batsim's checks common to REGISTER_JOB and REGISTER_PROFILE, in its order; returns `data`."""
    check(
        ctx.options.dynamic_jobs,
        f"Invalid JSON message: dynamic {what} registration received but the option "
        "seems disabled... It can be activated with the '--enable-dynamic-jobs' command line option.",
        P,
    )
    check(
        not ctx.registration_finished,
        f"Invalid JSON message: dynamic {what} registration received but the "
        "option has been disabled (a registration_finished message have already been received)",
        P,
    )
    check(
        isinstance(data, dict),
        f"Invalid JSON message: the 'data' value of event {idx} (REGISTER_{what.upper()}) should be an "
        "object",
        P,
    )
    return data


def parse_register_job(ctx: Context, idx: int, data: Any) -> tuple[Any, ...]:
    data = _registration(ctx, "job", idx, data)
    etype = "REGISTER_JOB"
    jid = _string_member(data, "job_id", idx, etype)
    split_job_identifier(jid)
    check(
        "job" in data,
        f"Invalid JSON message: in event {idx} (REGISTER_JOB): ['data']['job'] is unset but "
        "redis seems disabled...",
        P,
    )
    job = data["job"]
    check(
        isinstance(job, dict),
        f"Invalid JSON message: in event {idx} (REGISTER_JOB): ['data']['job'] should be an object",
        P,
    )
    _register_job(ctx, jid, job)
    return ("REGISTER_JOB", jid, job)


def parse_register_profile(ctx: Context, idx: int, data: Any) -> tuple[Any, ...]:
    data = _registration(ctx, "profile", idx, data)
    etype = "REGISTER_PROFILE"
    wl = _string_member(data, "workload_name", idx, etype)
    name = _string_member(data, "profile_name", idx, etype)
    check(
        "profile" in data,
        f"Invalid JSON message: the 'data' value of event {idx} ({etype}) should have a 'profile' key",
        P,
    )
    profile = data["profile"]
    check(
        isinstance(profile, dict),
        f"Invalid JSON message: in event {idx} (REGISTER_PROFILE): ['data']['profile'] should be an object",
        P,
    )
    _register_profile(ctx, wl, name, profile)  # the reader adds it, as it does jobs
    return ("REGISTER_PROFILE", wl, name, profile)


# --- server side ----------------------------------------------------------------------------
def find_workload(ctx: Context, name: str) -> Workload | None:
    for wl in ctx.workloads:
        if wl.name == name:
            return wl
    return ctx.dynamic_workloads.get(name)


def on_register_profile(ctx: Context, msg: tuple[Any, ...]) -> None:
    """PROFILE_REGISTERED_BY_DP: the reader already added the profile; the server has nothing left to do."""


def _register_profile(ctx: Context, wl_name: str, name: str, profile: dict[str, Any]) -> None:
    wl = find_workload(ctx, wl_name)
    if wl is None:
        wl = Workload(wl_name, "dynamic", [], {})
        ctx.dynamic_workloads[wl_name] = wl
    check(name not in wl.table, f"Invalid new profile registration: profile '{name}' already existed in "
          f"workload '{wl_name}'", f"{P}:1541")  # fmt: skip
    ctx.log("protocol", f"Adding dynamically registered profile {name} to workload {wl_name}")
    profile_from_json(name, profile, "Invalid JSON profile received from the scheduler")
    wl.add_profile(name, profile)


def job_from_json(ctx: Context, jid: str, raw: dict[str, Any], wl: Workload) -> Job:
    """`Job::from_json` applied to a dynamically registered job (error prefix JOB_ERR)."""
    own, text = checked_job(raw, wl.name, JOB_ERR, wl.table)
    check(own == "!".join(split_job_identifier(jid)), "Internal error", S)
    prof = raw["profile"]
    return Job(jid, wl.name, split_job_identifier(jid)[1], float(raw["subtime"]), raw["res"],
               float(raw.get("walltime", -1)), prof, wl.profiles[prof], text, len(ctx.jobs))  # fmt: skip


def _register_job(ctx: Context, jid: str, raw: Any) -> None:
    """JsonProtocolReader::handle_register_job adds the job to its workload while the reply is read, so a
    later event of the same reply can already use it."""
    wl_name = split_job_identifier(jid)[0]
    wl = find_workload(ctx, wl_name)
    check(wl is not None, f"Internal error: Workload '{wl_name}' should exist.", S)
    assert wl is not None
    check(jid not in ctx.met, f"Cannot register new job '{jid}', it already exists in the workload.", S)
    job = job_from_json(ctx, jid, raw, wl)
    if job.profile_data.get("type") == "parallel":
        n = len(job.profile_data.get("cpu", []))
        check(
            n == job.res,
            f"Invalid job {jid}: the requested number of resources ({job.res}) do NOT match the "
            f"number of resources of the associated profile '{job.profile}' ({n})",
            "../src/workload.cpp:167",
        )
    wl.jobs.append(job)
    ctx.jobs[jid] = job
    ctx.met.add(jid)
    job.state = "SUBMITTED"


def on_register_job(ctx: Context, msg: tuple[Any, ...]) -> None:
    _, jid, _raw = msg
    job = ctx.jobs[jid]
    ctx.counters.submitted += 1
    if ctx.options.ack_dynamic_jobs:
        data = f'{{"job_id":{jsonfmt.dumps(jid)},"job":{job.json_text}'
        if ctx.options.forward_profiles:
            data += ',"profile":' + jsonfmt.dumps(job.profile_data)
        ctx.append("JOB_SUBMITTED", data + "}")


def on_notify(ctx: Context, msg: tuple[Any, ...]) -> None:
    """END_DYNAMIC_REGISTER / CONTINUE_DYNAMIC_REGISTER: the reader already switched the flag."""
