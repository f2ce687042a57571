"""SimGrid 3.32's ptask_L07 host model as Batsim 4.2.1 runs it: every sleep, comm and ptask is one action.

The engine (kernel.py) asks this model when the next action ends and advances it; what ends together
and in which order decides Batsim's batching, so the max-min sharing, the precision rounding and the
creation order of actions are reproduced as SimGrid does them (see kernel.py's docstring).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import numpy as np

NO_MAX_DURATION = -1.0
TCP_GAMMA = 4194304.0
DBL_MAX = 1.7976931348623157e308


def double_update(value: float, delta: float, precision: float) -> float:
    value -= delta
    return 0.0 if value < precision else value


class Link:
    """A link constraint: bandwidth bound, latency, and whether flows share it (FATPIPE does not)."""

    __slots__ = ("name", "bandwidth", "latency", "fatpipe")

    def __init__(self, name: str, bandwidth: float, latency: float, fatpipe: bool = False) -> None:
        self.name, self.bandwidth, self.latency, self.fatpipe = name, bandwidth, latency, fatpipe


class Action:
    __slots__ = (
        "latency",
        "remains",
        "max_duration",
        "penalty",
        "suspended",
        "rate",
        "bound",
        "links",
        "route_latency",
        "post",
        "key",
        "slot",
    )

    def __init__(self, post: Callable[[], None]) -> None:
        self.latency = 0.0
        self.remains = 1.0
        self.max_duration = NO_MAX_DURATION
        self.penalty = 1.0
        self.suspended = False
        self.rate = 0.0
        self.bound = -1.0
        self.links: tuple[Link, ...] = ()
        self.route_latency = 0.0
        self.post = post
        self.key = 0  # creation rank: the started-set order
        self.slot = -1  # column of a sleeper in the model's numpy columns

    def update_bound(self) -> None:
        if self.route_latency > 0 and self.latency <= 0.0:
            self.bound = TCP_GAMMA / (2.0 * self.route_latency)


class Model:
    """The L07 host model: one ordered set of started actions, a fair-bottleneck solver, full updates.

    Sleeps (and the double's ptask timers) only count their max duration down; they are kept in numpy
    columns so that a step costs one vector subtraction however many jobs sleep (same IEEE arithmetic
    as SimGrid's loop, action by action). Finished actions are posted in creation order, as SimGrid's
    started-set walk finishes them."""

    def __init__(self, surf_precision: float, maxmin_precision: float) -> None:
        self.surf_precision = surf_precision
        self.maxmin_precision = maxmin_precision
        self.started: dict[int, Action] = {}
        self.finished: deque[Action] = deque()
        self._seq = 0
        self._md = np.full(1024, np.inf)
        self._sseq = np.zeros(1024, dtype=np.int64)
        self._sleepers: list[Action | None] = []

    def add(self, action: Action) -> Action:
        self._seq += 1
        action.key = self._seq
        if action.penalty == 0.0 and action.suspended and action.max_duration >= 0 and not action.links:
            n = len(self._sleepers)
            if n == len(self._md):
                self._compact()
                n = len(self._sleepers)
                if n * 2 > len(self._md):
                    self._md = np.concatenate([self._md, np.full(len(self._md), np.inf)])
                    self._sseq = np.concatenate([self._sseq, np.zeros(len(self._sseq), dtype=np.int64)])
            self._md[n] = action.max_duration
            self._sseq[n] = self._seq
            self._sleepers.append(action)
            action.slot = n
        else:
            self.started[self._seq] = action
        return action

    def _compact(self) -> None:
        keep = [i for i, a in enumerate(self._sleepers) if a is not None]
        n = len(keep)
        self._md[:n] = self._md[keep]
        self._sseq[:n] = self._sseq[keep]
        self._md[n:] = np.inf
        self._sleepers = [self._sleepers[i] for i in keep]
        for i, a in enumerate(self._sleepers):
            a.slot = i  # type: ignore[union-attr]

    def cancel(self, action: Action) -> None:
        if action.slot >= 0:
            self._md[action.slot] = np.inf
            self._sleepers[action.slot] = None
        else:
            self.started.pop(action.key, None)

    def _solve(self) -> None:
        """FairBottleneck::do_solve for link constraints (cpu elements of comms weigh 0)."""
        saturated: list[Action] = []
        for a in self.started.values():
            a.rate = 0.0
            if a.penalty > 0.0:
                if a.links:
                    saturated.append(a)
                else:
                    a.rate = 1.0
        if not saturated:
            return
        users: dict[Link, list[Action]] = {}
        for a in saturated:
            for link in a.links:
                users.setdefault(link, []).append(a)
        remaining = {link: link.bandwidth for link in users}
        cnsts = list(users)
        live = set(map(id, saturated))
        while saturated:
            usage: dict[Link, float] = {}
            kept = []
            for c in cnsts:
                nb = sum(1 for a in users[c] if id(a) in live)
                if nb and c.fatpipe:
                    nb = 1
                if nb == 0:
                    remaining[c] = 0.0
                else:
                    usage[c] = remaining[c] / nb
                    kept.append(c)
            cnsts = kept
            mu: dict[int, float] = {}
            for a in list(saturated):
                inc = DBL_MAX
                for link in a.links:
                    if link in usage:
                        inc = min(inc, usage[link])
                if a.bound > 0:
                    inc = min(inc, a.bound - a.rate)
                mu[id(a)] = inc
                a.rate += inc
                if a.rate == a.bound:
                    saturated.remove(a)
                    live.discard(id(a))
            kept = []
            for c in cnsts:
                if not c.fatpipe:
                    for a in users[c]:
                        remaining[c] = double_update(remaining[c], mu.get(id(a), 0.0), self.maxmin_precision)
                else:
                    u = usage[c]
                    for a in users[c]:
                        u = min(u, mu.get(id(a), 0.0))
                    remaining[c] = double_update(remaining[c], u, self.maxmin_precision)
                if remaining[c] <= 0.0:
                    for a in users[c]:
                        if id(a) in live:
                            live.discard(id(a))
                            saturated.remove(a)
                else:
                    kept.append(c)
            cnsts = kept
            for a in saturated:
                mu[id(a)] = 0.0

    def next_event(self) -> float:
        self._solve()
        low = -1.0
        for a in self.started.values():
            if a.rate > 0:
                value = a.remains / a.rate if a.remains > 0 else 0.0
                if low < 0 or value < low:
                    low = value
            if a.max_duration >= 0 and (low < 0 or a.max_duration < low):
                low = a.max_duration
        for a in self.started.values():
            if a.latency > 0 and (low < 0 or a.latency < low):
                low = a.latency
        n = len(self._sleepers)
        if n:
            m = float(self._md[:n].min())
            if m != np.inf and (low < 0 or m < low):
                low = m
        return low

    def update(self, delta: float) -> None:
        surf, done = self.surf_precision, []
        for key, a in self.started.items():
            if a.latency > 0:
                a.latency = double_update(a.latency, delta, surf) if a.latency > delta else 0.0
                if a.latency <= 0.0 and not a.suspended:
                    a.update_bound()
                    a.penalty = 1.0
            a.remains = double_update(a.remains, a.rate * delta, self.maxmin_precision * surf)
            if a.max_duration != NO_MAX_DURATION:
                a.max_duration = double_update(a.max_duration, delta, surf)
            if (a.remains <= 0 and a.penalty > 0) or (
                a.max_duration != NO_MAX_DURATION and a.max_duration <= 0
            ):
                done.append(key)
        ended = [(key, self.started.pop(key)) for key in done]
        n = len(self._sleepers)
        if n:
            m = self._md[:n]
            m -= delta
            m[m < surf] = 0.0
            slots = np.flatnonzero(m <= 0.0)
            if len(slots):
                for slot in slots.tolist():
                    action = self._sleepers[slot]
                    self._sleepers[slot] = None
                    ended.append((int(self._sseq[slot]), action))  # type: ignore[arg-type]
                m[slots] = np.inf
                ended.sort(key=lambda pair: pair[0])
            while self._sleepers and self._sleepers[-1] is None:
                self._sleepers.pop()
                self._md[len(self._sleepers)] = np.inf
        self.finished.extend(action for _, action in ended)
