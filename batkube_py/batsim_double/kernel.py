"""A small re-creation of SimGrid 3.32's engine under Batsim 4.2.1 (EngineImpl + the ptask_L07 model).

Batsim groups events into messages by when its server finds its mailbox empty, so the double has to
reproduce *when* each actor runs, down to SimGrid's sub-rounds and numerical precision:

* Rounds: every ready actor runs until it issues a simcall; then the simcalls are handled in the order
  the actors ran; then the activities that ended are posted (waking their actors, in the order the model
  finished them). When nobody is ready, the model is solved: the clock jumps to the next action end.
* Answered simcalls (isend, irecv, actor creation, kill) cost one sub-round; a created actor is queued
  before its creator. A `put` is isend + wait, a `get` is irecv + wait (s4u::Mailbox).
* Batsim's host model is L07 (`host/model:ptask_L07`): every sleep, comm and ptask is one action of one
  model, kept in creation order. A 1-byte message pays its route's latency, then 1 / (bandwidth share)
  seconds (fair-bottleneck sharing), so a master-to-master message over the implicit loopback link takes
  1e-10 s. Sleeps end when their max duration drops below surf/precision (1e-9 s) — which is why jobs
  started a few loopback messages apart may or may not end in the same round.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator
from typing import Any

from .lmm import expand
from .sharing import TCP_GAMMA, Action, Link, Model

Gen = Generator[tuple[Any, ...], Any, None]


class Actor:
    __slots__ = ("name", "host", "gen", "pid", "dead", "simcall", "answer", "phase", "sleeping", "activities")

    def __init__(self, name: str, host: str, gen: Gen, pid: int) -> None:
        self.name, self.host, self.gen, self.pid, self.dead = name, host, gen, pid, False
        self.simcall: tuple[Any, ...] | None = None
        self.answer: Any = None
        self.phase: Comm | None = None  # a put/get whose wait is still to be issued
        self.sleeping: Action | None = None
        self.activities: list[Exec] = []  # started ptasks not finished yet (ActorImpl::activities_)


class Exec:
    """An ExecImpl: a started ptask, the actor waiting for it and the timeout of that wait."""

    __slots__ = ("action", "waiter", "timeout", "state", "owner")

    def __init__(self, action: Action) -> None:
        self.action = action
        self.waiter: Actor | None = None
        self.timeout: Action | None = None
        self.state = "running"  # running, done, canceled
        self.owner: Actor | None = None


class Comm:
    __slots__ = ("kind", "src", "dst", "payload", "done", "waiters", "action")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.src: Actor | None = None
        self.dst: Actor | None = None
        self.payload: Any = None
        self.done = False
        self.waiters: list[Actor] = []
        self.action: Action | None = None


class Kernel:
    """Drive with run() / resume_external(): both return the next text for the decision process, or None
    when nothing can happen any more."""

    def __init__(
        self,
        route: Callable[[str, str], tuple[tuple[Link, ...], float]],
        surf_precision: float = 1e-9,
        maxmin_precision: float = 1e-5,
    ) -> None:
        self.now = 0.0
        self._route = route
        self.model = Model(surf_precision, maxmin_precision)
        self._to_run: list[Actor] = []
        self._ran: list[Actor] = []
        self._pid = 0
        self._mailboxes: dict[str, deque[Comm]] = {}
        self.current: Actor | None = None
        self.blocked_external: Actor | None = None
        self._loop: Generator[str, str, None] | None = None

    # --- actors ----------------------------------------------------------------------------
    def spawn(self, name: str, host: str, gen: Gen) -> Actor:
        self._pid += 1
        actor = Actor(name, host, gen, self._pid)
        self._to_run.append(actor)
        return actor

    def kill(self, actor: Actor) -> None:
        """ActorImpl::kill: the victim's pending sleep is cancelled with it."""
        actor.dead = True
        actor.gen.close()
        if actor.sleeping is not None:
            self.model.cancel(actor.sleeping)
            actor.sleeping = None
        self._cleanup(actor)

    def _cleanup(self, actor: Actor) -> None:
        """ActorImpl::cleanup_from_self / exit: the actor's unfinished executions are cancelled."""
        for ex in actor.activities:
            if ex.timeout is not None:
                self.model.cancel(ex.timeout)
                ex.timeout = None
            ex.waiter = None
            if ex.state == "running":
                ex.state = "canceled"
                self.model.cancel(ex.action)
        actor.activities = []

    def wake(self, actor: Actor, value: Any = None) -> None:
        actor.answer = value
        self._to_run.append(actor)

    def mailbox_empty(self, name: str) -> bool:
        return not self._mailboxes.get(name)

    def arrival(self, mbox: str) -> float | None:
        """The earliest a message that an actor of this sub-round is about to send to `mbox` can arrive
        (its route's latency; the byte itself takes nanoseconds), None if no such message."""
        dst = self.current.host if self.current is not None else None
        lats = [
            self._route(a.host, dst)[1]
            for a in self._ran
            if a.simcall is not None and a.simcall[0] == "put" and a.simcall[1] == mbox and not a.dead
        ]
        return self.now + min(lats) if lats and dst is not None else None

    def add_timer(self, date: float, callback: Callable[[], None]) -> None:
        action = Action(callback)
        action.max_duration, action.penalty, action.suspended = max(date - self.now, 0.0), 0.0, True
        self.model.add(action)

    # --- driving ---------------------------------------------------------------------------
    def run(self) -> str | None:
        if self._loop is None:
            self._loop = self._main()
        return next(self._loop, None)

    def resume_external(self, value: str) -> str | None:
        assert self._loop is not None
        try:
            return self._loop.send(value)
        except StopIteration:
            return None

    def _main(self) -> Generator[str, str, None]:
        while True:
            while self._to_run:
                ran = self._ran = self._to_run
                self._to_run = []
                for actor in ran:
                    if not actor.dead:
                        yield from self._execute(actor)
                for actor in ran:
                    if actor.simcall is not None and not actor.dead:
                        self._handle(actor)
                self._ended()
            delta = self.model.next_event()
            if delta < 0:
                self.current = None
                return
            self.now += delta
            self.model.update(delta)
            self._ended()

    def _execute(self, actor: Actor) -> Generator[str, str, None]:
        self.current = actor
        if actor.phase is not None:
            actor.simcall = ("wait", actor.phase)
            return
        value, actor.answer = actor.answer, None
        while True:
            try:
                cmd = actor.gen.send(value)
            except StopIteration:
                actor.dead = True
                if actor.activities:
                    self._cleanup(actor)
                return
            if cmd[0] == "external":
                self.blocked_external = actor
                value = yield cmd[1]
                self.blocked_external = None
                self.current = actor
                continue
            if cmd[0] == "sleep_for" and cmd[1] <= 0:
                value = None
                continue
            actor.simcall = cmd
            return

    def _handle(self, actor: Actor) -> None:
        cmd, actor.simcall = actor.simcall, None
        self.current = actor
        op = cmd[0]
        if op in ("put", "get"):
            actor.phase = self._post_comm(actor, op, cmd[1], cmd[2] if op == "put" else None)
            self._to_run.append(actor)
        elif op == "wait" and len(cmd) > 1:
            comm = cmd[1]
            actor.phase = None
            comm.waiters.append(actor)
            if comm.done:
                self._finish(comm)
        elif op == "sleep_for":
            action = Action(lambda: self._wake_sleeper(actor))
            action.max_duration, action.penalty, action.suspended = cmd[1], 0.0, True
            actor.sleeping = self.model.add(action)
        elif op == "create":
            child = self.spawn(cmd[1], cmd[2], cmd[3])
            actor.answer = child
            self._to_run.append(actor)
        elif op == "kill":
            victim = cmd[1]
            if victim is not None and not victim.dead:
                self.kill(victim)
            self._to_run.append(actor)
        elif op == "exec_start":  # Exec::start, an answered simcall
            ex = cmd[1]
            ex.owner = actor
            actor.activities.append(ex)
            ex.action.post = lambda: self._exec_done(ex)
            self.model.add(ex.action)
            self._to_run.append(actor)
        elif op == "exec_wait":  # ActivityImpl::wait_for
            ex, timeout = cmd[1], cmd[2]
            if ex.state != "running":
                actor.answer = ex.state
                self._to_run.append(actor)
            else:
                ex.waiter = actor
                if timeout >= 0:
                    sleep = Action(lambda: self._exec_timeout(ex))
                    sleep.max_duration, sleep.penalty, sleep.suspended = timeout, 0.0, True
                    ex.timeout = self.model.add(sleep)
        elif op == "exec_cancel":  # Exec::cancel, an answered simcall (the killer)
            ex = cmd[1]
            if ex.state == "running":
                ex.state = "canceled"
                self.model.cancel(ex.action)
                self.model.failed.append(ex.action)
            self._to_run.append(actor)
        elif op == "wait":  # resumed by someone else through wake()
            pass
        else:
            raise ValueError(f"unknown kernel command {op}")

    def _wake_sleeper(self, actor: Actor) -> None:
        actor.sleeping = None
        if not actor.dead:
            self.wake(actor)

    def _ended(self) -> None:
        """EngineImpl::wake_all_waiting_actors: failed (cancelled) actions first, then finished ones."""
        failed = self.model.failed
        while failed:
            failed.popleft().post()
        finished = self.model.finished
        while finished:
            finished.popleft().post()

    def _exec_done(self, ex: Exec) -> None:
        """ExecImpl::post: the waiting actor (if its wait did not time out) learns how the execution ended."""
        if ex.state == "running":
            ex.state = "done"
        if ex.owner is not None and ex in ex.owner.activities:
            ex.owner.activities.remove(ex)
        waiter, ex.waiter = ex.waiter, None
        if ex.timeout is not None:
            self.model.cancel(ex.timeout)
            ex.timeout = None
        if waiter is not None and not waiter.dead:
            self.wake(waiter, ex.state)

    def _exec_timeout(self, ex: Exec) -> None:
        """SynchroImpl::post: the wait times out; the execution itself keeps running."""
        ex.timeout = None
        waiter, ex.waiter = ex.waiter, None
        if waiter is not None and not waiter.dead:
            self.wake(waiter, "timeout")

    # --- communications --------------------------------------------------------------------
    def _post_comm(self, actor: Actor, op: str, mbox: str, payload: Any) -> Comm:
        """CommImpl::isend / irecv: take the first opposite request waiting in the mailbox, else queue."""
        kind, other = ("send", "recv") if op == "put" else ("recv", "send")
        queue = self._mailboxes.setdefault(mbox, deque())
        comm = next((c for c in queue if c.kind == other), None)
        if comm is None:
            comm = Comm(kind)
            queue.append(comm)
        else:
            queue.remove(comm)
        if op == "put":
            comm.src, comm.payload = actor, payload
        else:
            comm.dst = actor
        self._start(comm)
        return comm

    def _start(self, comm: Comm) -> None:
        if comm.src is None or comm.dst is None:
            return
        links, latency = self._route(comm.src.host, comm.dst.host)
        action = Action(lambda: self._post(comm))
        if links:
            for link in links:
                expand(action.elems, link, action, 1.0, True)
            action.latency = latency
            if latency > 0:
                action.net_bound = TCP_GAMMA / (2.0 * latency)
        else:
            action.remains = 0.0
        comm.action = self.model.add(action)

    def _post(self, comm: Comm) -> None:
        comm.done = True
        self._finish(comm)

    def _finish(self, comm: Comm) -> None:
        waiters, comm.waiters = comm.waiters, []
        for actor in waiters:
            if actor.dead:
                continue
            actor.answer = comm.payload if actor is comm.dst else None
            self._to_run.append(actor)
