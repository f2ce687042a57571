"""Max-min CPU sharing for parallel_homogeneous jobs without communication.

SimGrid's ptask_L07 model gives every parallel task one rate, bounded by each host's
speed shared among the tasks using it (max-min fairness).  With com=0 that is just
progressive filling over host constraints, enough for c_compute_sharing where two
jobs share host0 and each takes 20 s instead of 10 s.  Communication (com>0 on
several hosts) is not modelled: the double aborts with a clear message instead.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import BatsimAbort

if TYPE_CHECKING:
    from .context import Context


@dataclass
class _Task:
    jid: str
    hosts: list[int]
    amount: float  # flops per host
    remaining: float
    rate: float = 0.0  # flops per second on each host
    version: int = 0


class PtaskSharing:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.tasks: dict[str, _Task] = {}
        self.last = 0.0

    def execute(self, job: Any) -> Generator[tuple[Any, ...], Any, str]:
        prof = job.profile_data
        cpu = float(prof.get("cpu", 0))
        com = float(prof.get("com", 0))
        hosts = list(job.alloc)
        if prof.get("type") == "parallel_homogeneous_total":
            cpu /= len(hosts)
        if com > 0 and len(hosts) > 1:
            raise BatsimAbort(f"The test double does not model communications (job '{job.id}', com={com})")
        k = self.ctx.k
        self._advance()
        self.tasks[job.id] = _Task(job.id, hosts, cpu, cpu)
        self._recompute()
        if job.walltime > 0:
            k.add_timer(k.now + job.walltime, lambda: self._timeout(job.id))
        result = yield ("wait",)
        return str(result)

    def cancel(self, jid: str) -> None:
        if jid in self.tasks:
            self._advance()
            del self.tasks[jid]
            self._recompute()

    def progress(self, jid: str) -> float:
        t = self.tasks.get(jid)
        if t is None or t.amount <= 0:
            return 1.0
        return 1.0 - t.remaining / t.amount

    def _timeout(self, jid: str) -> None:
        if jid not in self.tasks:
            return
        self.cancel(jid)
        self.ctx.k.wake(self.ctx.job_actors[jid], "walltime")

    def _advance(self) -> None:
        now = self.ctx.k.now
        dt = now - self.last
        if dt > 0:
            for t in self.tasks.values():
                t.remaining = max(0.0, t.remaining - t.rate * dt)
        self.last = now

    def _recompute(self) -> None:
        machines = self.ctx.machines.machines
        unfixed = set(self.tasks)
        used: dict[int, float] = {}
        rates: dict[str, float] = {}
        while unfixed:
            best, best_host = None, -1
            for h in {h for j in unfixed for h in self.tasks[j].hosts}:
                weight = sum(self.tasks[j].amount for j in unfixed if h in self.tasks[j].hosts)
                if weight <= 0:
                    continue
                r = (machines[h].host.speed - used.get(h, 0.0)) / weight
                if best is None or r < best:
                    best, best_host = r, h
            if best is None:
                for j in unfixed:
                    rates[j] = float("inf")
                break
            for j in [j for j in unfixed if best_host in self.tasks[j].hosts]:
                rates[j] = best
                unfixed.discard(j)
                for h in self.tasks[j].hosts:
                    used[h] = used.get(h, 0.0) + best * self.tasks[j].amount
        k = self.ctx.k
        for jid, t in self.tasks.items():
            t.rate = rates[jid] * t.amount
            t.version += 1
            eta = k.now + (t.remaining / t.rate if t.rate > 0 else float("inf"))
            if eta != float("inf"):
                k.add_timer(eta, self._make_done(jid, t.version))

    def _make_done(self, jid: str, version: int) -> Any:
        def done() -> None:
            t = self.tasks.get(jid)
            if t is None or t.version != version:
                return
            self._advance()
            del self.tasks[jid]
            self._recompute()
            self.ctx.k.wake(self.ctx.job_actors[jid], "done")
        return done
