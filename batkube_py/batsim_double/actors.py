"""Batsim's helper actors: submitters, request-reply, waiters, jobs, killers.

Each mirrors the control flow of its Batsim 4.2.1 counterpart (job_submitter.cpp,
network.cpp, jobs_execution.cpp) because their blocking puts and sleeps are what
produce Batsim's characteristic latencies (e.g. submissions arriving at s+0.0012).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from numpy import longdouble

from .errors import BatsimAbort
from .jsonfmt import fmt_g
from .protocol import apply_reply

if TYPE_CHECKING:
    from .context import Context
    from .workload import Job

G = Generator[tuple[Any, ...], Any, None]


def job_submitter(ctx: Context, wl_index: int) -> G:
    """static_job_submitter_process: batches jobs until the next subtime is in the future."""
    wl = ctx.workloads[wl_index]
    name = f"{wl.name}_submitter"
    k = ctx.k
    yield ("put", "server", ("SUBMITTER_HELLO", name, "JOB"))
    current = longdouble(k.now)
    to_send: list[Job] = []
    for job in sorted(wl.jobs, key=lambda j: (j.subtime, j.id)):  # job_comparator_subtime_number
        if job.subtime > current:
            if to_send:
                yield ("put", "server", ("JOB_SUBMITTED", to_send))
                to_send = []
            yield ("sleep_for", float(longdouble(job.subtime) - current))
            current = longdouble(k.now)
        to_send.append(job)
    if to_send:
        yield ("put", "server", ("JOB_SUBMITTED", to_send))
    yield ("put", "server", ("SUBMITTER_BYE", name, "JOB"))


def event_submitter(ctx: Context, list_name: str, events: list[dict[str, Any]]) -> G:
    """static_event_submitter_process: same batching scheme as the job submitter."""
    k = ctx.k
    name = f"{list_name}_submitter"
    yield ("put", "server", ("SUBMITTER_HELLO", name, "EVENT"))
    current = longdouble(k.now)
    batch: list[dict[str, Any]] = []
    for ev in sorted(events, key=lambda e: float(e["timestamp"])):
        ts = float(ev["timestamp"])
        if ts > current:
            if batch:
                yield ("put", "server", ("EVENT_OCCURRED", batch))
                batch = []
            yield ("sleep_for", float(longdouble(ts) - current))
            current = longdouble(k.now)
        batch.append(ev)
    if batch:
        yield ("put", "server", ("EVENT_OCCURRED", batch))
    yield ("put", "server", ("SUBMITTER_BYE", name, "EVENT"))


def request_reply(ctx: Context, text: str) -> G:
    """request_reply_scheduler_process: one zmq round trip, then forward the decisions."""
    ctx.log("network", f"Sending '{text}'")
    raw = yield ("external", text)
    ctx.log("network", f"Received '{raw}'")
    yield from apply_reply(ctx, raw)


def waiter(ctx: Context, target: float) -> G:
    """waiter_process: sleeps the difference (at least 1e-5 s), so it wakes where the clock sums lead."""
    k = ctx.k
    if k.now < target:
        wait = max(target - k.now, 1e-5)
        ctx.log("jobs_execution", f"Sleeping {fmt_g(wait)} seconds to reach time {fmt_g(target)}")
        yield ("sleep_for", wait)
        ctx.log("jobs_execution", "Sleeping done")
    else:
        ctx.log("jobs_execution", f"Time {fmt_g(target)} is already reached, skipping sleep")
    if ctx.end_sent or ctx.ack_received:
        ctx.log("jobs_execution", "Simulation have finished. Thus, NOT sending WAITING_DONE to the server.")
        return
    yield ("put", "server", ("WAITING_DONE",))


def _delay_of(job: Job) -> float:
    return float(job.profile_data.get("delay", 0))


def job_process(ctx: Context, job: Job) -> G:
    """execute_job_process for delay / parallel_homogeneous profiles."""
    ptype = job.profile_data.get("type")
    ret = int(job.profile_data.get("ret", 0))
    walltime = job.walltime
    if ptype == "delay":
        delay = _delay_of(job)
        if not (walltime < 0 or delay < walltime):  # do_delay_task
            ctx.log("jobs_execution", "Sleeping until walltime")
            yield ("sleep_for", walltime)
            ctx.log("jobs_execution", "Job has reached walltime")
            timed_out = True
        else:
            ctx.log("jobs_execution", "Sleeping the whole task length")
            yield ("sleep_for", delay)
            ctx.log("jobs_execution", "Sleeping done")
            timed_out = False
    elif ptype in ("parallel_homogeneous", "parallel_homogeneous_total"):
        timed_out = yield from ctx_ptask(ctx, job)
    else:
        raise BatsimAbort(f"The test double does not support profile type '{ptype}' (job '{job.id}')")
    if timed_out:
        job.state, job.return_code = "COMPLETED_WALLTIME_REACHED", -1
        ctx.log("jobs_execution", f"Job '{job.id}' had been killed (walltime {fmt_g(walltime)} reached)")
    else:
        job.state = "COMPLETED_SUCCESSFULLY" if ret == 0 else "COMPLETED_FAILED"
        job.return_code = ret
        ctx.log("jobs_execution", f"Job '{job.id}' finished in time ({'success' if ret == 0 else 'failure'})")
    finish_job(ctx, job)
    yield ("put", "server", ("JOB_COMPLETED", job.id))


def ctx_ptask(ctx: Context, job: Job) -> Generator[tuple[Any, ...], Any, bool]:
    sharing = ctx.ptasks
    outcome = yield from sharing.execute(job)
    return outcome == "walltime"


def finish_job(ctx: Context, job: Job) -> None:
    job.finish = ctx.k.now
    for mid in job.alloc:
        ctx.machines.remove_job(mid, job.id, job.finish)
    left = [bool(ctx.machines.machines[mid].jobs) for mid in job.alloc]
    ctx.machines.states.job_ended(job.alloc, left, job.finish)
    ctx.job_actors.pop(job.id, None)


def killer(ctx: Context, job_ids: list[str]) -> G:
    """killer_process: stops running jobs, then reports KILLING_DONE to the server."""
    progress: dict[str, Any] = {}
    k = ctx.k
    for jid in job_ids:
        job = ctx.job(jid)
        if job.state != "RUNNING":
            continue
        actor = ctx.job_actors.get(jid)
        if actor is not None:
            yield ("kill", actor)
        ctx.ptasks.cancel(jid)
        elapsed = k.now - job.start
        if job.profile_data.get("type") == "delay":
            delay = _delay_of(job)
            frac = min(1.0, elapsed / delay) if delay > 0 else 1.0
        else:
            frac = ctx.ptasks.progress(jid)
        progress[jid] = {"profile_name": job.profile, "progress": frac}
        job.state, job.return_code = "COMPLETED_KILLED", -1
        finish_job(ctx, job)
    yield ("put", "server", ("KILLING_DONE", job_ids, progress))
