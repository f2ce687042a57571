"""What a running job does, as Batsim 4.2.1 executes its profile (jobs_execution.cpp, task_execution.cpp).

A job's profile becomes a task tree (BatTask): a `composed` profile is a node whose leaves are its `seq`
repeated `repeat` times; a leaf sleeps (`delay`) or runs one SimGrid parallel task (`parallel`,
`parallel_homogeneous`, `parallel_homogeneous_total`) on the job's executors: one host per executor, the
allocation's hosts in order or the decision process's `mapping` (several executors may share a host; they
then compute on the same CPU and talk over its loopback). The walltime is one budget for the whole tree:
a ptask waits for at most what is left of it and, when the wait times out, keeps running until the job's
actor ends (SimGrid cancels an actor's unfinished executions then), which is after JOB_COMPLETED is sent.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from .errors import BatsimAbort, BatsimCrash
from .kernel import Exec
from .lmm import Element, expand
from .sharing import TCP_GAMMA, Action

if TYPE_CHECKING:
    from .context import Context
    from .simplatform import Host
    from .workload import Job

PTASK_TYPES = ("parallel", "parallel_homogeneous", "parallel_homogeneous_total")
RUNNABLE = ("delay", "composed", *PTASK_TYPES)


class BatTask:
    """One node of Batsim's task tree; what a kill reports as the job's progress."""

    __slots__ = ("name", "profile", "sub_tasks", "current", "ex", "delay_start", "delay_required")

    def __init__(self, name: str, profile: dict[str, Any]) -> None:
        self.name, self.profile = name, profile
        self.sub_tasks: list[BatTask] = []
        self.current = -1
        self.ex: Exec | None = None
        self.delay_start = -1.0
        self.delay_required = -1.0

    def leaf(self) -> BatTask:
        """The task running now (cancel_ptask follows the current index down)."""
        return self.sub_tasks[self.current].leaf() if self.sub_tasks and self.current >= 0 else self

    def progress(self, now: float) -> dict[str, Any]:
        """generate_task_tree after compute_job_progress, for JOB_KILLED's job_progress."""
        if self.ex is not None or self.delay_start != -1:
            if self.ex is not None:
                ratio = 1.0 - (self.ex.action.remains if self.ex.state == "running" else 0.0)
            else:
                ratio = 1.0 if self.delay_required == 0 else (now - self.delay_start) / self.delay_required
            return {"profile_name": self.name, "progress": ratio}
        if self.current >= 0 and self.sub_tasks:
            return {
                "profile_name": self.name,
                "current_task_index": self.current,
                "current_task": self.sub_tasks[self.current].progress(now),
            }
        return {"profile_name": self.name, "current_task_index": -1}


def build_task(sequences: dict[str, list[tuple[str, dict[str, Any]]]], name: str,
               profile: dict[str, Any]) -> BatTask:
    """initialize_sequential_tasks: a composed profile's leaves, `repeat` times over, from the members
    resolved when its workload was loaded. A composed profile registered by the decision process has
    none (Workload::check_validity never ran on it): Batsim 4.2.1 reads past an empty vector there and
    dies of a segmentation fault, every time."""
    task = BatTask(name, profile)
    if profile.get("type") == "composed":
        members = sequences.get(name)
        if members is None:
            raise BatsimCrash()
        for _ in range(int(profile.get("repeat", 1))):
            for sub, sub_profile in members:
                task.sub_tasks.append(build_task(sequences, sub, sub_profile))
    return task


class Budget:
    """The job's remaining walltime (execute_job_process's remaining_time); negative: no walltime."""

    __slots__ = ("left",)

    def __init__(self, walltime: float) -> None:
        self.left = float(walltime)


def execute_task(
    ctx: Context, job: Job, task: BatTask, budget: Budget
) -> Generator[tuple[Any, ...], Any, int]:
    """execute_task: the return code of the task (-1 walltime reached, -2 killed)."""
    prof = task.profile
    ptype = prof.get("type")
    ret = int(prof.get("ret", 0))
    if ptype in PTASK_TYPES:
        code = yield from _execute_ptask(ctx, job, task, budget)
        return code if code != 0 else ret
    if ptype == "composed":
        for index, sub in enumerate(task.sub_tasks):
            task.current = index
            code = yield from execute_task(ctx, job, sub, budget)
            if code != 0:
                return code
        return ret
    if ptype == "delay":
        delay = float(prof.get("delay", 0))
        task.delay_start, task.delay_required = ctx.k.now, delay
        code = yield from do_delay_task(ctx, delay, budget)
        return -1 if code == -1 else ret
    raise BatsimAbort(
        f"The test double does not support profile type '{ptype}' (job '{job.id}'): see docs/batsim_double.md"
    )


def do_delay_task(ctx: Context, sleeptime: float, budget: Budget) -> Generator[tuple[Any, ...], Any, int]:
    if budget.left < 0 or sleeptime < budget.left:
        ctx.log("jobs_execution", "Sleeping the whole task length")
        yield ("sleep_for", sleeptime)
        ctx.log("jobs_execution", "Sleeping done")
        if budget.left > 0:
            budget.left -= sleeptime
        return 0
    ctx.log("jobs_execution", "Sleeping until walltime")
    yield ("sleep_for", budget.left)
    ctx.log("jobs_execution", "Job has reached walltime")
    budget.left = 0.0
    return -1


def _execute_ptask(
    ctx: Context, job: Job, task: BatTask, budget: Budget
) -> Generator[tuple[Any, ...], Any, int]:
    """execute_parallel_task: exec_init, start (an answered simcall), then wait (for the walltime left)."""
    hosts = [ctx.platform.hosts[name] for name in job.hosts]
    cpu, com = matrices(task.profile, len(hosts), task.name)
    _check_permissions(ctx, job, cpu)
    ex = Exec(ptask_action(ctx.platform, hosts, cpu, com))
    task.ex = ex
    yield ("exec_start", ex)
    ret = int(task.profile.get("ret", 0))
    if budget.left < 0:
        outcome = yield ("exec_wait", ex, -1.0)
    else:
        before = ctx.k.now
        outcome = yield ("exec_wait", ex, budget.left)
        budget.left = budget.left - (ctx.k.now - before)
    if outcome == "timeout":
        return -1
    if outcome == "canceled":
        return -2
    return ret


def matrices(prof: dict[str, Any], n: int, name: str) -> tuple[list[float], list[float]]:
    """generate_parallel_task / _homogeneous / _homogeneous_total_amount: per-executor flops and bytes."""
    ptype = prof["type"]
    if ptype == "parallel":
        cpu = [float(x) for x in prof["cpu"]]
        if len(cpu) != n:
            raise BatsimAbort(
                f"the number of resources given by the allocation ({n}) is different from the number "
                f"of resouces given by the profile data ({len(cpu)})",
                "../src/task_execution.cpp:34",
            )
        return cpu, [float(x) for x in prof["com"]]
    c, m = float(prof["cpu"]), float(prof["com"])
    if ptype == "parallel_homogeneous_total":
        c, m = c / n, m / n
    com = [0.0 if x == y else m for y in range(n) for x in range(n)] if m > 0 else []
    return [c] * n, com


def _check_permissions(ctx: Context, job: Job, cpu: list[float]) -> None:
    """check_ptask_execution_permission: no computation on a storage machine."""
    for i, mid in enumerate(job.alloc):
        machine = ctx.machines.machines[mid]
        if abs(cpu[i]) > 1e-10 and machine.role == "storage":
            raise BatsimAbort(
                f"Some computation ({cpu[i]:g}) is assigned to storage node (id={mid}, "
                f"name='{machine.name}')",
                "../src/task_execution.cpp:466",
            )


def ptask_action(platform: Any, hosts: list[Host], cpu: list[float], com: list[float]) -> Action:
    """L07Action's constructor: CPU elements (one per executor), link elements (bytes summed per link over
    every communicating pair's route), the largest route latency to pay first, and the bounds."""
    action = Action(lambda: None)
    n = len(hosts)
    latency = lat_current = 0.0
    routes = []
    links_used: set[int] = set()
    for k, size in enumerate(com):
        if size <= 0:
            continue
        links, lat = platform.route(hosts[k // n].name, hosts[k % n].name)
        latency = max(latency, lat)
        lat_current = max(lat_current, lat * size)
        links_used.update(map(id, links))
        routes.append((links, size))
    used_hosts = 0
    cpu_bound = action.cpu_bound
    for host, flops in zip(hosts, cpu, strict=True):
        if flops > 0:
            used_hosts += 1
            action.elems.append(Element(host.cpu, action, flops))  # type: ignore[arg-type]
            cpu_bound = min(cpu_bound, host.speed * 1.0 / flops)
    first: dict[int, Element] = {}
    for links, size in routes:
        for link in links:
            e = first.get(id(link))
            if e is None:
                expand(action.elems, link, action, size, False)
                first[id(link)] = action.elems[-1]
            elif link.fatpipe:
                e.weight = max(e.weight, size)
            else:
                e.weight += size
    action.latency = latency
    action.cpu_bound = cpu_bound
    if lat_current > 0:
        action.net_bound = TCP_GAMMA / (2.0 * lat_current)
    if not links_used and used_hosts == 0:
        action.remains = 0.0
    return action
