"""Batsim's helper actors: submitters, request-reply, waiters, jobs, killers.

Each mirrors the control flow of its Batsim 4.2.1 counterpart (job_submitter.cpp,
network.cpp, jobs_execution.cpp) because their blocking puts and sleeps are what
produce Batsim's characteristic latencies (e.g. submissions arriving at s+0.0012).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from numpy import longdouble

from .dynamic import find_workload
from .jsonfmt import fmt_g
from .protocol import apply_reply
from .tasks import Budget, build_task, execute_task

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


def job_process(ctx: Context, job: Job) -> G:
    """execute_job_process: the profile's task tree under one walltime budget, then JOB_COMPLETED."""
    wl = find_workload(ctx, job.workload)
    job.task = build_task(wl.sequences if wl else {}, job.profile, job.profile_data)
    ret = yield from execute_task(ctx, job, job.task, Budget(job.walltime))
    if ret == 0:
        job.state = "COMPLETED_SUCCESSFULLY"
        ctx.log("jobs_execution", f"Job '{job.id}' finished in time (success)")
    elif ret > 0:
        job.state = "COMPLETED_FAILED"
        ctx.log("jobs_execution", f"Job '{job.id}' finished in time (failed: return_code={ret})")
    elif ret == -1:
        job.state = "COMPLETED_WALLTIME_REACHED"
        ctx.log("jobs_execution", f"Job '{job.id}' had been killed (walltime {fmt_g(job.walltime)} reached)")
    else:
        job.state = "COMPLETED_KILLED"
        ctx.log("jobs_execution", f"Job '{job.id}' has been killed by the scheduler")
    job.return_code = ret
    finish_job(ctx, job)
    if job.finish == job.start:
        ctx.log("jobs_execution", f"Job '{job.id}' computed in null time. Putting epsilon instead.",
                "WARNING")  # fmt: skip
    if job.state != "COMPLETED_KILLED":  # a killed job's completion is the killer's KILLING_DONE
        yield ("put", "server", ("JOB_COMPLETED", job.id))


def finish_job(ctx: Context, job: Job) -> None:
    job.finish = ctx.k.now
    for mid in job.alloc:
        ctx.machines.remove_job(mid, job.id, job.finish)
    left = [bool(ctx.machines.machines[mid].jobs) for mid in job.alloc]
    ctx.machines.states.job_ended(job.alloc, left, job.finish)
    ctx.job_actors.pop(job.id, None)


def killer(ctx: Context, job_ids: list[str]) -> G:
    """killer_process: a running ptask is cancelled (its job ends itself, killed), any other job's actor is
    killed; then KILLING_DONE goes to the server with each job's progress tree."""
    progress: dict[str, Any] = {}
    k = ctx.k
    for jid in job_ids:
        job = ctx.job(jid)
        if job.state != "RUNNING":
            continue
        task = job.task
        if task is None:  # the job's actor has not run yet
            progress[jid] = {"profile_name": job.profile, "current_task_index": -1}
        else:
            progress[jid] = task.progress(k.now)
        leaf = task.leaf() if task is not None else None
        if leaf is not None and leaf.ex is not None:
            yield ("exec_cancel", leaf.ex)
            continue
        actor = ctx.job_actors.get(jid)
        if actor is not None:
            yield ("kill", actor)
        job.state, job.return_code = "COMPLETED_KILLED", -1
        finish_job(ctx, job)
        if job.finish == job.start:
            ctx.log("jobs_execution", f"Killed job '{jid}' has a null runtime. Putting epsilon instead.",
                    "WARNING")  # fmt: skip
    yield ("put", "server", ("KILLING_DONE", job_ids, progress))
