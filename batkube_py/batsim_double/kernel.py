"""A tiny SimGrid-like actor kernel (generators + a timer heap).

Batsim's timestamps come from the interleaving of its SimGrid actors (server,
submitters, request-reply, waiters, jobs) exchanging rendez-vous messages whose
transfer lasts the route latency.  Re-creating that interleaving, instead of
hard-coding offsets, is what makes the double match the transcripts for any
platform.  Rules (checked against the transcripts):
  * a put/get pair is matched in FIFO order; the transfer starts at matching time;
  * on completion both sides wake, the one that blocked first runs first;
  * newly created actors run after the already-runnable ones;
  * timers at the same date fire in creation order, all before actors run.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Generator
from typing import Any

Gen = Generator[tuple[Any, ...], Any, None]
EPS = 1e-9


class Actor:
    __slots__ = ("name", "host", "gen", "pid", "dead")

    def __init__(self, name: str, host: str, gen: Gen, pid: int) -> None:
        self.name, self.host, self.gen, self.pid, self.dead = name, host, gen, pid, False


class _Mailbox:
    __slots__ = ("pending", "receiver")

    def __init__(self) -> None:
        self.pending: deque[tuple[Actor, Any]] = deque()
        self.receiver: Actor | None = None


class ExternalRequest(Exception):
    """Internal signal: an actor wants to talk to the decision process."""


class Kernel:
    def __init__(self, latency: Callable[[str, str], float]) -> None:
        self.now = 0.0
        self._latency = latency
        self._ready: deque[tuple[Actor, Any]] = deque()
        self._timers: list[tuple[float, int, int, Any, Any]] = []
        self._seq = 0
        self._pid = 0
        self._mailboxes: dict[str, _Mailbox] = {}
        self.blocked_external: Actor | None = None
        self.external_text: str | None = None
        self.current: Actor | None = None

    # --- actor management ------------------------------------------------------------------
    def spawn(self, name: str, host: str, gen: Gen) -> Actor:
        self._pid += 1
        actor = Actor(name, host, gen, self._pid)
        self._ready.append((actor, None))
        return actor

    def kill(self, actor: Actor) -> None:
        actor.dead = True
        actor.gen.close()

    def mailbox_empty(self, name: str) -> bool:
        mb = self._mailboxes.get(name)
        return mb is None or not mb.pending

    def add_timer(self, date: float, callback: Callable[[], None]) -> None:
        self._push(date, 1, callback, None)

    def _push(self, date: float, kind: int, a: Any, b: Any) -> None:
        self._seq += 1
        heapq.heappush(self._timers, (date, self._seq, kind, a, b))

    # --- main loop -------------------------------------------------------------------------
    def run(self) -> str | None:
        """Run until an actor asks the decision process something (returns the text) or
        nothing can happen any more (returns None)."""
        while True:
            while self._ready:
                actor, value = self._ready.popleft()
                if actor.dead:
                    continue
                if self._step(actor, value):
                    text, self.external_text = self.external_text, None
                    return text
            if not self._timers:
                return None
            date = self._timers[0][0]
            if date > self.now:
                self.now = date
            while self._timers and self._timers[0][0] <= date + EPS:
                _, _, kind, a, b = heapq.heappop(self._timers)
                if kind == 0:  # wake actors in order
                    for actor, value in a:
                        self._ready.append((actor, value))
                else:
                    a()

    def resume_external(self, value: Any) -> str | None:
        actor = self.blocked_external
        assert actor is not None
        self.blocked_external = None
        self._ready.appendleft((actor, value))
        return self.run()

    def _step(self, actor: Actor, value: Any) -> bool:
        self.current = actor
        try:
            cmd = actor.gen.send(value)
        except StopIteration:
            return False
        op = cmd[0]
        if op == "sleep":
            self._push(max(cmd[1], self.now), 0, [(actor, None)], None)
        elif op == "put":
            self._put(actor, cmd[1], cmd[2])
        elif op == "get":
            self._get(actor, cmd[1])
        elif op == "external":
            self.blocked_external = actor
            self.external_text = cmd[1]
            return True
        elif op == "wait":  # resumed by someone else through wake()
            pass
        else:
            raise ValueError(f"unknown kernel command {op}")
        return False

    def wake(self, actor: Actor, value: Any = None) -> None:
        self._ready.append((actor, value))

    def _mb(self, name: str) -> _Mailbox:
        mb = self._mailboxes.get(name)
        if mb is None:
            mb = self._mailboxes[name] = _Mailbox()
        return mb

    def _put(self, sender: Actor, mbox: str, msg: Any) -> None:
        mb = self._mb(mbox)
        receiver = mb.receiver
        if receiver is None:
            mb.pending.append((sender, msg))
            return
        mb.receiver = None
        date = self.now + self._latency(sender.host, receiver.host)
        self._push(date, 0, [(receiver, msg), (sender, None)], None)

    def _get(self, receiver: Actor, mbox: str) -> None:
        mb = self._mb(mbox)
        if not mb.pending:
            mb.receiver = receiver
            return
        sender, msg = mb.pending.popleft()
        date = self.now + self._latency(sender.host, receiver.host)
        self._push(date, 0, [(sender, None), (receiver, msg)], None)
