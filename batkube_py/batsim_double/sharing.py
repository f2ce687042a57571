"""SimGrid 3.32's ptask_L07 host model as Batsim 4.2.1 runs it: every sleep, comm and ptask is one action.

The engine (kernel.py) asks this model when the next action ends and advances it; what ends together
and in which order decides Batsim's batching, so the max-min sharing, the precision rounding and the
creation order of actions are reproduced as SimGrid does them (see kernel.py's docstring).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import numpy as np

from .lmm import DBL_MAX, Constraint, Element, System

NO_MAX_DURATION = -1.0
TCP_GAMMA = 4194304.0


def double_update(value: float, delta: float, precision: float) -> float:
    value -= delta
    return 0.0 if value < precision else value


class Link(Constraint):
    """A link constraint: bandwidth bound, latency, and whether flows share it (FATPIPE does not)."""

    __slots__ = ("latency",)

    def __init__(self, name: str, bandwidth: float, latency: float, fatpipe: bool = False) -> None:
        super().__init__(name, bandwidth, fatpipe)
        self.latency = latency

    @property
    def bandwidth(self) -> float:
        return self.bound


class Action:
    """An L07 action: a sleep (no elements), a 1-byte message or a ptask; its LMM variable is itself."""

    __slots__ = (
        "latency",
        "remains",
        "max_duration",
        "penalty",
        "suspended",
        "value",
        "bound",
        "mu",
        "linked",
        "elems",
        "net_bound",
        "cpu_bound",
        "post",
        "key",
        "slot",
        "done",
        "seen",
        "ix",
        "vslot",
        "estart",
    )

    def __init__(self, post: Callable[[], None]) -> None:
        self.latency = 0.0
        self.remains = 1.0
        self.max_duration = NO_MAX_DURATION
        self.penalty = 1.0
        self.suspended = False
        self.value = 0.0
        self.bound = -1.0
        self.mu = 0.0
        self.linked = False
        self.elems: list[Element] = []
        self.net_bound = DBL_MAX
        self.cpu_bound = DBL_MAX
        self.post = post
        self.key = 0  # creation rank: the started-set order
        self.slot = -1  # column of a sleeper in the model's numpy columns
        self.done = False
        self.seen = 0  # the solver's component walk
        self.ix = 0
        self.vslot = -1  # the compiled solver's variable slot and first element row (lmmflat.Flat)
        self.estart = 0

    def bound_now(self) -> float:
        """L07Action::update_bound: once the latency is paid, the tighter of the network and CPU bounds."""
        bound = min(self.net_bound, self.cpu_bound)
        return bound if bound < DBL_MAX and self.latency <= 0.0 else self.bound


class Model:
    """The L07 host model: one ordered set of started actions, the fair-bottleneck system, full updates.

    Sleeps (and the double's ptask timers) only count their max duration down; they are kept in numpy
    columns so that a step costs one vector subtraction however many jobs sleep (same IEEE arithmetic
    as SimGrid's loop, action by action). Finished actions are posted in creation order, as SimGrid's
    started-set walk finishes them; cancelled ones (failed) before them."""

    def __init__(self, surf_precision: float, maxmin_precision: float) -> None:
        self.surf_precision = surf_precision
        self.maxmin_precision = maxmin_precision
        self.system = System(maxmin_precision)
        self.started: dict[int, Action] = {}
        self.finished: deque[Action] = deque()
        self.failed: deque[Action] = deque()
        self._seq = 0
        self._md = np.full(1024, np.inf)
        self._sseq = np.zeros(1024, dtype=np.int64)
        self._sleepers: list[Action | None] = []

    def add(self, action: Action) -> Action:
        """L07Action's constructor: a variable with penalty 0 while the latency is paid, else enabled now."""
        self._seq += 1
        action.key = self._seq
        if action.penalty == 0.0 and action.suspended and action.max_duration >= 0 and not action.elems:
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
            return action
        self.started[self._seq] = action
        if action.latency > 0:
            action.penalty = 0.0
        elif action.penalty > 0:
            action.bound = action.bound_now()
            self._enable(action)
        return action

    def _enable(self, action: Action) -> None:
        if action.elems:
            self.system.enable(action)
        else:
            action.value = 1.0

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
        """Action::cancel then unref: the action leaves the started set and its variable the system."""
        if action.slot >= 0:
            self._md[action.slot] = np.inf
            self._sleepers[action.slot] = None
        elif self.started.pop(action.key, None) is not None:
            self._drop(action)
        action.done = True

    def _drop(self, action: Action) -> None:
        if action.penalty > 0 and action.elems:
            self.system.remove(action)
        action.value = 0.0

    def next_event(self) -> float:
        self.system.solve()
        low = -1.0  # the smallest candidate (SimGrid takes them in two passes: the same minimum)
        for a in self.started.values():
            if a.value > 0:
                value = a.remains / a.value if a.remains > 0 else 0.0
                if low < 0 or value < low:
                    low = value
            md = a.max_duration
            if md >= 0 and (low < 0 or md < low):
                low = md
            lat = a.latency
            if lat > 0 and (low < 0 or lat < low):
                low = lat
        n = len(self._sleepers)
        if n:
            m = float(self._md[:n].min())
            if m != np.inf and (low < 0 or m < low):
                low = m
        return low

    def update(self, delta: float) -> None:
        surf, done = self.surf_precision, []
        eps = self.maxmin_precision * surf
        for key, a in self.started.items():  # double_update inlined: this loop runs at every step
            if a.latency > 0:
                a.latency = double_update(a.latency, delta, surf) if a.latency > delta else 0.0
                if a.latency <= 0.0 and not a.suspended:
                    a.bound = a.bound_now()
                    a.penalty = 1.0
                    self._enable(a)
            left = a.remains - a.value * delta
            a.remains = left = 0.0 if left < eps else left
            md = a.max_duration
            if md != NO_MAX_DURATION:
                md -= delta
                a.max_duration = md = 0.0 if md < surf else md
                if md <= 0:
                    done.append(key)
                    continue
            if left <= 0 and a.penalty > 0:
                done.append(key)
        ended = [(key, self.started.pop(key)) for key in done]
        for _, action in ended:
            self._drop(action)
            action.done = True
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
                    action.done = True  # type: ignore[union-attr]
                    ended.append((int(self._sseq[slot]), action))  # type: ignore[arg-type]
                m[slots] = np.inf
                ended.sort(key=lambda pair: pair[0])
            while self._sleepers and self._sleepers[-1] is None:
                self._sleepers.pop()
                self._md[len(self._sleepers)] = np.inf
        self.finished.extend(action for _, action in ended)
