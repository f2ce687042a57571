"""The settle's reply, awaited beside the shadow twin's own cycle (`--sync queue`).

Once a step's settle request is sent, kube-scheduler works on one core while the adapter's shadow twin
runs its own cycle for the same pods on the other; the shadow needs what the real scheduler did only when
it judges its first attempt. So the reply is read, and the step's bindings collected from the pod watch,
in a thread of its own, and `_real` waits for it there (raising its error, if any). The twin's decisions
and the parity checks are the same as when the two ran one after the other: the shadow's cycle reads
nothing the settle writes until `_real` returns.
"""

from __future__ import annotations

import time
from concurrent import futures

from batkube_py.cluster.base import BackendError
from batkube_py.controlplane.clock import ClockError


class SettleReply:
    """Mixed into QueueCluster (queued.py), whose step state it reads and updates."""

    settle_beside = True  # False: the shadow waits for the reply before its cycle (the real Kueue's runs)

    def _settle_init(self) -> None:
        self._real_step: dict = {}  # what the real scheduler did in this step
        self._settling: futures.Future | None = None
        self._settler = futures.ThreadPoolExecutor(1, thread_name_prefix="batkube-settle")

    def _send_settle(self, now: float, flush: float | None, begin: float | None, t0: float) -> None:
        try:
            self.clock.settle_send(self._want, flush, begin)
        except ClockError as exc:
            self._clock_failed(exc, f"settle t={now}")
            raise BackendError(self.broken or str(exc)) from None
        self._settling = self._settler.submit(self._settled, now, flush, t0)
        if not self.settle_beside:
            self._real_step, self._settling = self._settling.result(), None

    def _abandon_settle(self) -> None:
        """The shadow's cycle failed: wait for the reply (its own error, if any, is the lesser news)."""
        if self._settling is not None:
            futures.wait([self._settling])
            self._settling = None

    def _settled(self, now: float, tick: float | None, t0: float) -> dict:
        """The settle's reply and the step's real bindings (in the settle thread)."""
        try:
            st = self.clock.settle_reply()
        except ClockError as exc:
            self._clock_failed(exc, f"settle t={now}")
            raise BackendError(self.broken or str(exc)) from None
        if st.get("backoff") and self._failed_attempts():
            raise BackendError(self.broken or "")
        if tick is not None:
            self._last_tick = tick
        self.steps += 1
        if (waits := st.get("patient")) and waits != self._waits:
            self.faults.seen_by_scheduler(waits, self._waits or waits)  # the first step's: a baseline
            self._waits = waits
        self.attempts_real += len(st.get("popped") or [])
        real_bound = self._collect(st)
        self.settle_wall += time.monotonic() - t0
        events, work = st.get("wall") or (0.0, 0.0)
        self.settle_split[0] += events
        self.settle_split[1] += work
        popped = st.get("popped") or []
        return {"popped": popped, "bound": real_bound, "last": {q: i for i, q in enumerate(popped)}, "st": st}

    @property
    def _real(self) -> dict:
        """What the real scheduler did in this step (waits for the settle thread; raises its error)."""
        if self._settling is not None:
            settling, self._settling = self._settling, None
            self._real_step = settling.result()
        return self._real_step

    @_real.setter
    def _real(self, value: dict) -> None:
        self._real_step = value

    def _collect(self, st: dict) -> dict[str, str]:
        """The step's bindings, in the order the apiserver recorded them, once the pod watch has them all
        (the scheduler's binding calls have returned; their watch events may still be on the way)."""
        scheduled = st.get("scheduled", 0) - self._base_scheduled
        deadline = time.monotonic() + self.opts.crash_timeout
        with self.watch.cond:
            while self.watch.bindings_seen < scheduled:
                if self.watch.error:
                    raise BackendError(self.watch.error)
                if time.monotonic() > deadline:
                    self._break(f"the pod watch saw {self.watch.bindings_seen} of {scheduled} bindings")
                    raise BackendError(self.broken or "")
                self.watch.cond.wait(0.05)
        if st.get("preempting"):
            # victims marked for deletion by the preemption goroutines
            self.calls("list the run's pods", lambda **_: self.watch.sync())
        return dict(self.watch.take_bindings())
