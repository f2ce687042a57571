"""When the scheduler runs: once every event of a simulated instant has been applied.

Batsim 4 has no end-of-instant marker. The events of one instant reach the decision process in one
message or in several, in an order that follows SimGrid's actor order (the server sends as soon as its
mailbox is empty: the 16 completions at t=170 of the thesis burst come as 11, then 5). A scheduler run
after the first message would decide on part of the instant, so results would depend on batching.

So the cluster changes an event brings (a pod to add or delete, a node to cordon) are staged. The first
staged change stamped `t` opens a window that closes at `t + DECISION_DELAY`; the adapter asks Batsim for
a CALL_ME_LATER there, and at that wake-up a scheduling cycle applies every change stamped before the
window closed, in one canonical order (completions, node changes, submissions, scheduling gates lifted;
by job id within each: Batsim's own order for same-time submissions), then runs the scheduler. Changes
stamped later wait for the next window. Backend wake-ups (kube backoff expiries) are cycles too.

What it costs: every decision is taken DECISION_DELAY (plus Batsim's message latency) after the first
event that led to it, in simulated time. DECISION_DELAY is twice the smallest CALL_ME_LATER gap the
adapter risks (reply.MIN_WAKEUP_GAP), so the wake-up time does not move with how late a message arrived,
unless Batsim delivered the window's first event more than MIN_WAKEUP_GAP after it happened (many
simultaneous events queueing on a platform with network latency): the cycle then runs at the first
wake-up Batsim accepts, on the same changes.
"""

from __future__ import annotations

from collections.abc import Callable

from batkube_py.protocol.reply import MIN_WAKEUP_GAP, TIME_RESOLUTION

DECISION_DELAY = 2 * MIN_WAKEUP_GAP
DELETE, NODES, ADD, UNGATE = 0, 1, 2, 3  # canonical order of the changes of one window (gates.py)


class Cycles:
    """Staged cluster changes, and when the next scheduling cycle may run and what it sees."""

    def __init__(self) -> None:
        self._ops: list[tuple[float, int, str, int, Callable[[], None] | None]] = []
        self._seq = 0
        self.window: float | None = None  # when the open window closes
        self.wake: float | None = None  # the wake-up asked for it (later than `window` if Batsim was late)
        self.backend_wake: float | None = None

    def stage(self, ts: float, kind: int, key: str, op: Callable[[], None] | None) -> None:
        self._seq += 1
        self._ops.append((ts, kind, key, self._seq, op))

    def empty(self) -> bool:
        """Nothing staged and no window open (a backend wake-up may still be due)."""
        return not self._ops and self.window is None

    def open(self, ts: float) -> None:
        if self.window is None:
            self.window = ts + DECISION_DELAY

    def _window_at(self) -> float | None:
        """When the open window's cycle runs: when it closes, or at the later wake-up asked for it."""
        return None if self.window is None else max(self.window, self.wake or self.window)

    def due(self) -> float | None:
        """The earliest time a cycle is wanted at: what to ask Batsim to wake the adapter for."""
        dues = [t for t in (self._window_at(), self.backend_wake) if t is not None]
        return min(dues) if dues else None

    def asked(self, want: float, wake: float) -> None:
        """Batsim was asked to wake the adapter at `wake` for a cycle wanted at `want`."""
        if self.window is not None and self.wake is None and want == self.window:
            self.wake = wake

    def ready(self, now: float) -> float | None:
        """The boundary of the cycle that may run at `now` (it sees the changes stamped before it)."""
        ready = []
        if self.window is not None and now + TIME_RESOLUTION >= self._window_at():
            ready.append(self.window)
        if self.backend_wake is not None and now + TIME_RESOLUTION >= self.backend_wake:
            ready.append(self.backend_wake)
        return min(ready) if ready else None

    def apply(self, boundary: float) -> None:
        """Apply, in canonical order, the changes stamped before `boundary`; later ones open a window."""
        cut = boundary - TIME_RESOLUTION / 2
        now = sorted(op for op in self._ops if op[0] < cut)
        self._ops = [op for op in self._ops if op[0] >= cut]
        self.window = self.wake = None
        if self.backend_wake is not None and self.backend_wake <= boundary + TIME_RESOLUTION:
            self.backend_wake = None
        if self._ops:
            self.open(min(op[0] for op in self._ops))
        for *_, op in now:
            if op is not None:
                op()

    def drop(self) -> None:
        """The run is draining: nothing staged will ever be scheduled."""
        self._ops, self.window, self.wake, self.backend_wake = [], None, None, None
