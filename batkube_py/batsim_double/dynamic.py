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

import re
from typing import TYPE_CHECKING, Any

from . import jsonfmt
from .errors import BatsimAbort, check
from .workload import Job, Workload

if TYPE_CHECKING:
    from .context import Context

P = "../src/protocol.cpp"
S = "../src/server.cpp"
J = "../src/jobs.cpp"
JOB_ERR = "Invalid JSON job submitted by the scheduler"


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def split_job_identifier(raw: str) -> tuple[str, str]:
    """`JobIdentifier(string)`: boost::split on '!' with token_compress_on, exactly 2 parts.

    '#' and any other character are allowed ("w0!5#1" is valid); "a!!b" is compressed
    to ("a", "b"); empty parts are not rejected by Batsim.
    """
    parts = re.split("!+", raw)
    check(
        len(parts) == 2,
        f"Invalid string job identifier '{raw}': should be formatted as two '!'-separated "
        "parts, the second one being any string without '!'. Example: 'some_text!42'.",
        J,
    )
    return parts[0], parts[1]


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
    if name in wl.profiles:
        old = jsonfmt.dumps(wl.profiles[name])
        raise BatsimAbort(
            f"Invalid profile registration: the profile '{name}' of workload '{wl_name}' that was "
            f"registered has already been registered (old profile: {old})",
            S,
        )
    ctx.log("server", f"Adding dynamically registered profile {name} to workload {wl_name}")
    check(
        isinstance(profile.get("type"), str),
        f"Invalid JSON profile received from the scheduler: profile "
        f"'{name}' has no 'type' field (or it is not a string)",
        "../src/profiles.cpp",
    )
    wl.profiles[name] = profile


def job_from_json(ctx: Context, jid: str, raw: dict[str, Any], wl: Workload) -> Job:
    """`Job::from_json` applied to a dynamically registered job (error prefix JOB_ERR)."""
    e = JOB_ERR
    check("id" in raw, f"{e}: one job has no 'id' field", J)
    rid = raw["id"]
    check(
        isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool)),
        f"{e}: on job id field is invalid, it should be a string or an integer",
        J,
    )
    sid = str(rid)
    own = (wl.name, sid) if wl.name not in sid else split_job_identifier(sid)
    full = f"{own[0]}!{own[1]}"
    check("subtime" in raw, f"{e}: job '{full}' has no 'subtime' field", J)
    check(_is_num(raw["subtime"]), f"{e}: job '{full}' has a non-number 'subtime' field", J)
    walltime = -1.0
    if "walltime" in raw:
        check(_is_num(raw["walltime"]), f"{e}: job {full} has a non-number 'walltime' field", J)
        walltime = float(raw["walltime"])
    check(
        walltime == -1 or walltime > 0,
        f"{e}: job '{full}' has an invalid walltime ({jsonfmt.fmt_g(walltime)})."
        " It should either be -1 (no walltime) or a strictly positive number.",
        J,
    )
    check("res" in raw, f"{e}: job {full} has no 'res' field", J)
    check(
        isinstance(raw["res"], int) and not isinstance(raw["res"], bool),
        f"{e}: job {full} has a non-number 'res' field",
        J,
    )
    check("profile" in raw, f"{e}: job {full} has no 'profile' field", J)
    check(isinstance(raw["profile"], str), f"{e}: job {full} has a non-string 'profile' field", J)
    prof = raw["profile"]
    check(prof in wl.profiles, f"{e}: the profile {prof} for job {full} does not exist", J)
    want = split_job_identifier(jid)
    check(own == want, "Internal error", S)
    rewritten = {k: (jid if k == "id" else v) for k, v in raw.items()}
    return Job(
        jid,
        wl.name,
        want[1],
        float(raw["subtime"]),
        int(raw["res"]),
        walltime,
        prof,
        wl.profiles[prof],
        jsonfmt.dumps(rewritten),
        len(ctx.jobs),
    )


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
            "../src/workload.cpp",
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
