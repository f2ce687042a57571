"""The server actor: Batsim's central loop and its message handlers (server.cpp).

The send rule is the heart of Batsim's batching: a message goes to the decision
process only when the scheduler is ready (its previous reply was fully applied) AND
the server mailbox is empty, so events whose internal messages are already queued
are grouped in one message (c_compute_sharing's final double JOB_COMPLETED).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from . import jsonfmt
from .actors import job_process, killer, request_reply, waiter
from .dynamic import find_workload, on_notify, on_register_job, on_register_profile
from .errors import check
from .export import hyphen

if TYPE_CHECKING:
    from .context import Context

S = "../src/server.cpp"


def simulation_begins(ctx: Context) -> str:
    m = ctx.machines
    o = ctx.options
    data = {
        "nb_resources": len(m), "nb_compute_resources": m.nb_compute, "nb_storage_resources": m.nb_storage,
        "allow_compute_sharing": o.compute_sharing, "allow_storage_sharing": o.storage_sharing,
        "config": {"redis-enabled": False, "redis-hostname": o.redis[0], "redis-port": o.redis[1],
                   "redis-prefix": o.redis[2], "profiles-forwarded-on-submission": o.forward_profiles,
                   "dynamic-jobs-enabled": o.dynamic_jobs, "dynamic-jobs-acknowledged": o.ack_dynamic_jobs,
                   "profile-reuse-enabled": o.profile_reuse, "sched-config": o.sched_config,
                   "forward-unknown-events": o.forward_unknown_events},
        "compute_resources": m.resources_json(False), "storage_resources": m.resources_json(True),
        "workloads": {w.name: w.path for w in ctx.workloads},
        "profiles": {w.name: w.profiles for w in ctx.workloads},
    }
    return jsonfmt.dumps(data)


def is_finished(ctx: Context) -> bool:
    c = ctx.counters
    return (c.job_submitters_finished == c.job_submitters_expected
            and c.event_submitters_finished == c.event_submitters_expected
            and (not ctx.options.dynamic_jobs or ctx.registration_finished)
            and c.completed == c.submitted and c.running == 0 and c.waiters == 0 and c.killers == 0)


def _send(ctx: Context) -> Generator[tuple[Any, ...], Any, None]:
    text = ctx.flush_message()
    ctx.sched_ready = False
    yield ("create", "Scheduler REQ-REP", ctx.machines.master, request_reply(ctx, text))


def server_process(ctx: Context) -> Generator[tuple[Any, ...], Any, None]:
    k = ctx.k
    ctx.append("SIMULATION_BEGINS", simulation_begins(ctx))
    yield from _send(ctx)
    while not ctx.ack_received:
        msg = yield ("get", "server")
        ctx.unit += 1
        creates = HANDLERS[msg[0]](ctx, msg)
        if creates is not None:
            yield from creates
        if ctx.sched_ready and not ctx.ack_received and k.mailbox_empty("server"):
            if ctx.events and ctx.batching is not None and ctx.batching.hold(k.now, k.arrival("server")):
                continue
            if ctx.events:
                yield from _send(ctx)
                if not ctx.events:  # Workloads::delete_jobs right after the message is generated
                    _delete_jobs(ctx)
            elif is_finished(ctx) and not ctx.end_sent:
                ctx.log("server", "The simulation seems finished.")
                ctx.append("SIMULATION_ENDS", "{}")
                yield from _send(ctx)
                ctx.end_sent = True
    ctx.log("server", "Simulation is finished!")


def on_hello(ctx: Context, msg: tuple[Any, ...]) -> None:
    pass


def on_bye(ctx: Context, msg: tuple[Any, ...]) -> None:
    c = ctx.counters
    if msg[2] == "EVENT":
        c.event_submitters_finished += 1
        if c.event_submitters_finished == c.event_submitters_expected:
            ctx.notify("no_more_external_event_to_occur")
    else:
        c.job_submitters_finished += 1
        if c.job_submitters_finished == c.job_submitters_expected:
            ctx.notify("no_more_static_job_to_submit")


def on_job_submitted(ctx: Context, msg: tuple[Any, ...]) -> None:
    c = ctx.counters
    for job in msg[1]:
        job.state = "SUBMITTED"
        c.submitted += 1
        ctx.log("server", f"Job {job.id} SUBMITTED. {c.submitted} jobs submitted so far")
        data = f'{{"job_id":{jsonfmt.dumps(job.id)},"job":{job.json_text}'
        if ctx.options.forward_profiles:
            data += ',"profile":' + jsonfmt.dumps(job.profile_data)
        ctx.append("JOB_SUBMITTED", data + "}")


def on_job_completed(ctx: Context, msg: tuple[Any, ...]) -> None:
    c = ctx.counters
    job = ctx.job(msg[1])
    c.running -= 1
    c.completed += 1
    ctx.log("server", f"Job {job.id} has COMPLETED. {c.completed} jobs completed so far")
    ctx.append("JOB_COMPLETED", completed_json(job))
    ctx.completed(job)


def completed_json(job: Any) -> str:
    return (f'{{"job_id":{jsonfmt.dumps(job.id)},"job_state":"{job.state}","return_code":{job.return_code},'
            f'"alloc":"{hyphen(job.alloc)}"}}')


def on_execute_job(ctx: Context, msg: tuple[Any, ...]) -> Generator[tuple[Any, ...], Any, None]:
    _, jid, alloc, alloc_str, mapping = msg
    job = ctx.job(jid)
    check(job.state == "SUBMITTED", f"Cannot execute job '{jid}': its state ({job.state}) is not "
          "JOB_STATE_SUBMITTED.", S)
    machines = ctx.machines
    for mid in alloc:
        check(machines.exists(mid), f"Cannot get machine {mid}: it does not exist", "../src/machines.cpp:352")
    if not ctx.options.compute_sharing:
        for mid in alloc:
            m = machines.machines[mid]
            check(not m.jobs, f"Job '{jid}': Invalid allocation ('{alloc_str}'): machine {mid} (hostname="
                  f"'{m.name}') is currently computing jobs (these ones: {{{','.join(sorted(m.jobs))}}}) "
                  "whereas time-sharing on compute machines is disabled (rerun with --help to display the "
                  "available options).", f"{S}:960")
    prof = job.profile_data
    any_size = prof.get("type") == "parallel_homogeneous_total" or _sequence_of_total(ctx, job)
    invalid = f"Job '{jid}' allocation ('{alloc_str}') is invalid."
    if not any_size and mapping is not None:
        check(len(mapping) == job.res, f"{invalid} The decision process set a custom mapping for this job, "
              f"but the custom mapping size ({len(mapping)}) does not match the job requested number of "
              f"machines ({job.res}).", S)
    elif not any_size:
        check(len(alloc) == job.res, f"{invalid} The job requires {job.res} machines but only {len(alloc)} "
              "were given. Using a different number of machines than the one requested is prevented by "
              "default. If you meant to use multiple executors per machine, please specify a custom "
              "execution mapping specifying which allocated machine each executor should use.", f"{S}:1039")
    executors = mapping if mapping is not None else list(range(len(alloc)))
    job.hosts = [machines.machines[alloc[i]].name for i in executors]
    job.state = "RUNNING"
    job.alloc = list(alloc)
    job.start = ctx.k.now
    ctx.counters.running += 1
    for mid in alloc:
        machines.add_job(mid, jid, job.start)
    machines.states.job_ran(list(alloc), job.start)
    host = machines.machines[alloc[0]].name
    return _create_job_actor(ctx, jid, host, job)


def _delete_jobs(ctx: Context) -> None:
    """Workloads::delete_jobs: without --enable-profile-reuse a finished job's profile goes too (its name
    stays known, as a profile "no longer accessible")."""
    for jid in ctx.to_delete:
        job = ctx.jobs.pop(jid, None)
        wl = find_workload(ctx, job.workload) if job is not None and not ctx.options.profile_reuse else None
        if wl is not None and job is not None:
            wl.remove_profile(job.profile)
    ctx.to_delete.clear()


def _sequence_of_total(ctx: Context, job: Any) -> bool:
    """A composed profile whose every resolved member is parallel_homogeneous_total may run on any number
    of hosts (a registered composed profile has no resolved member: vacuously true, as in Batsim)."""
    if job.profile_data.get("type") != "composed":
        return False
    wl = find_workload(ctx, job.workload)
    members = wl.sequences.get(job.profile, []) if wl is not None else []
    return all(sub.get("type") == "parallel_homogeneous_total" for _, sub in members)


def _create_job_actor(ctx: Context, jid: str, host: str, job: Any) -> Generator[tuple[Any, ...], Any, None]:
    ctx.job_actors[jid] = yield ("create", f"job_{jid}", host, job_process(ctx, job))


def on_reject_job(ctx: Context, msg: tuple[Any, ...]) -> None:
    job = ctx.job(msg[1])
    check(job.state == "SUBMITTED", f"Invalid rejection received: job '{job.id}' cannot be rejected at the "
          "present time. To be rejected, a job must be submitted and not allocated yet.", S)
    job.state = "REJECTED"
    ctx.counters.completed += 1
    ctx.log("server", f"Job '{job.id}' has been rejected")
    ctx.completed(job)


def on_kill_job(ctx: Context, msg: tuple[Any, ...]) -> Generator[tuple[Any, ...], Any, None] | None:
    to_kill = []
    for jid in msg[1]:
        job = ctx.job(jid)
        if job.kill_requested:
            continue
        check(job.state == "RUNNING" or job.state.startswith("COMPLETED") or job.state == "REJECTED",
              f"Invalid KILL_JOB: job_id '{jid}' refers to a job not being executed nor completed.", S)
        job.kill_requested = True
        to_kill.append(jid)
    if to_kill:
        ctx.counters.killers += 1
        return _create(("create", "killer_process", ctx.machines.master, killer(ctx, to_kill)))
    return None


def _create(cmd: tuple[Any, ...]) -> Generator[tuple[Any, ...], Any, None]:
    yield cmd


def on_killing_done(ctx: Context, msg: tuple[Any, ...]) -> None:
    _, job_ids, progress = msg
    c = ctx.counters
    really = []
    for jid in job_ids:
        job = ctx.job(jid)
        if job.state == "COMPLETED_KILLED" and jid in progress:
            c.running -= 1
            c.completed += 1
            really.append(jid)
            ctx.append("JOB_COMPLETED", completed_json(job))
            ctx.completed(job)
    ctx.log("server", f"Jobs {{{','.join(job_ids)}}} have been killed (the following ones have REALLY been "
            f"killed: {{{','.join(really)}}})")
    ctx.append("JOB_KILLED", jsonfmt.dumps({"job_ids": job_ids, "job_progress": progress}))
    c.killers -= 1


def on_call_me_later(ctx: Context, msg: tuple[Any, ...]) -> Generator[tuple[Any, ...], Any, None]:
    target = msg[1]
    now = ctx.k.now
    check(target > now, f"You asked to be awaken in the past! (you ask: {target:f}, it is: {now:f})", S)
    ctx.counters.waiters += 1
    return _create(("create", f"waiter {target:f}", ctx.machines.master, waiter(ctx, target)))


def on_waiting_done(ctx: Context, msg: tuple[Any, ...]) -> None:
    ctx.append("REQUESTED_CALL", "{}")
    ctx.counters.waiters -= 1


def on_sched_ready(ctx: Context, msg: tuple[Any, ...]) -> None:
    ctx.sched_ready = True
    if ctx.end_sent:
        ctx.ack_received = True


def on_event_occurred(ctx: Context, msg: tuple[Any, ...]) -> None:
    for ev in msg[1]:
        etype = ev.get("type")
        if etype in ("machine_unavailable", "machine_available"):
            busy = [bool(m.jobs) for m in ctx.machines.machines]
            ctx.machines.states.event(etype, ev.get("resources", ""), busy)
            ctx.notify(f"event_{etype}", {"resources": str(ev.get("resources", ""))})
        else:  # generic: loading kept it only under --forward-unknown-events; forwarded verbatim
            ctx.append("NOTIFY", jsonfmt.dumps(ev))


def on_set_metadata(ctx: Context, msg: tuple[Any, ...]) -> None:
    ctx.job(msg[1]).metadata = msg[2]


def on_change_job_state(ctx: Context, msg: tuple[Any, ...]) -> None:
    _, jid, state = msg
    job = ctx.job(jid)
    c = ctx.counters
    if job.state == "SUBMITTED" and state == "RUNNING":
        job.start = ctx.k.now
        c.running += 1
    elif job.state == "SUBMITTED" and state == "REJECTED":
        c.completed += 1
        job.state = state
        ctx.completed(job)
    elif job.state == "RUNNING" and state.startswith("COMPLETED"):
        job.finish = ctx.k.now
        c.running -= 1
        c.completed += 1
        job.state = state
        ctx.completed(job)
    else:
        check(False, f"Can only change the state of a submitted or running job. State was {job.state}", S)
    job.state = state


def on_set_resource_state(ctx: Context, msg: tuple[Any, ...]) -> None:
    check(False, "Receiving a pstate modification request, which is forbidden as Batsim has not been "
          "launched with energy support (cf. batsim --help).", S)


def on_query(ctx: Context, msg: tuple[Any, ...]) -> None:
    check(False, "Received a request about the energy consumption of the machines but energy simulation "
          "is not enabled. Try --help to enable it.", S)


HANDLERS = {
    "SUBMITTER_HELLO": on_hello, "SUBMITTER_BYE": on_bye, "JOB_SUBMITTED": on_job_submitted,
    "JOB_COMPLETED": on_job_completed, "EXECUTE_JOB": on_execute_job, "REJECT_JOB": on_reject_job,
    "KILL_JOB": on_kill_job, "KILLING_DONE": on_killing_done, "CALL_ME_LATER": on_call_me_later,
    "WAITING_DONE": on_waiting_done, "SCHED_READY": on_sched_ready, "EVENT_OCCURRED": on_event_occurred,
    "NOTIFY": on_notify, "REGISTER_JOB": on_register_job, "REGISTER_PROFILE": on_register_profile,
    "SET_JOB_METADATA": on_set_metadata, "CHANGE_JOB_STATE": on_change_job_state,
    "SET_RESOURCE_STATE": on_set_resource_state, "QUERY": on_query,
}
