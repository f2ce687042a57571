"""When is a wall-clock scheduler done with the current simulated instant?

Batsim's clock stands still while the adapter has not replied, so the adapter may wait as long as it
likes in wall time without the simulation noticing. The question is only *how long*: too short and a
decision the scheduler was about to make lands at a later simulated time (Batkube's −10 % makespan), too
long and the run crawls. See docs/sync.md.

- ``SettlePolicy`` (default) waits exactly until the scheduler has nothing left to do for the current
  state: every pending pod of the run is back in the scheduler's queues with nothing active, in flight,
  backing off or binding (read from kube-scheduler's own /metrics), or — for schedulers without those
  metrics — every pending pod is marked PodScheduled=False and the pods have been quiet for a while.
- ``TimeoutPolicy`` is Batkube's loop, for comparison: a fixed wall-time budget per Batsim step, one
  decision per step, CALL_ME_LATER steps growing by a multiplier.
"""

from __future__ import annotations

import logging
import time
from typing import Literal, Protocol

from pydantic import BaseModel, Field

from batkube_py.cluster.schedmetrics import Metrics, MetricsSource

log = logging.getLogger(__name__)


class SchedulerUnresponsive(RuntimeError):
    """The scheduler crashed or never answered; the run drains and stops."""


class SyncOptions(BaseModel):
    # auto: queue when batkube's kube-scheduler 1.37 with its clock endpoint serves every pod, else paced
    # when kube-scheduler (whose /metrics the adapter reads) does, else settle
    policy: Literal["auto", "queue", "paced", "settle", "timeout"] = "auto"
    clock_address: str | None = Field(None, description="kube-scheduler's simulated-clock endpoint (queue)")
    metrics_url: str | None = Field(None, description="kube-scheduler /metrics (settle policy)")
    quiet: float = Field(0.05, description="s of pod silence that counts as 'done' without metrics")
    confirm: float = Field(0.0, description="s the metrics must stay settled (extra margin; fences suffice)")
    crash_timeout: float = Field(30.0, description="s without any scheduler sign of life → stop")
    patience: float = Field(60.0, description="s a failing Kubernetes API is retried before the run stops")
    backoff: Literal["wait", "expedite"] = Field(
        "expedite", description="pods in wall-clock backoff: wait it out, or recreate them when their "
        "simulated backoff (≤ max_backoff) has certainly expired"
    )  # fmt: skip
    max_backoff: float = Field(10.0, description="the scheduler's podMaxBackoffSeconds")
    # kube-scheduler >= 1.33 (SchedulerPopFromBackoffQ): a pod in backoffQ is popped at once when activeQ
    # is empty, so a backing-off pod means work to come, never a wall-clock wait to expedite
    pop_from_backoff: bool = False
    # Batkube's knobs (timeout policy)
    timeout: float = 0.020
    min_delay: float = 0.0
    base_step: float = 0.1
    max_step: float = 20.0
    multiplier: float = 2.0
    fast_forward: bool = False
    detect_crash: bool = False


class ClusterView(Protocol):
    """What a policy may look at; implemented by ApiServerCluster."""

    def unbound(self, kube: bool | None) -> int:
        """Pending pods: of kube-scheduler's profiles (True), of other schedulers (False), all (None)."""

    def unmarked(self, kube: bool | None) -> int: ...
    def new_bindings(self) -> int: ...

    def expedite(self) -> int:
        """Recreate pending pods whose backoff expired in simulated time; returns how many."""

    def excused_backoff(self) -> int:
        """Pods left in wall-clock backoff because retrying them now could change nothing."""

    def owed(self) -> int:
        """Pending pods of schedulers without /metrics that fit some node's free room now."""

    def disrupted(self, clear: bool = False) -> bool:
        """True after an API or watch outage: the scheduler's informers relisted, event counts are off."""

    def fences(self) -> dict[str, int]:
        """How many scheduler event handlers our own writes must have triggered, by event label."""

    def last_event_age(self) -> float: ...
    def running(self) -> int: ...
    def wait_event(self, timeout: float) -> None: ...


class SettlePolicy:
    MIN_PAUSE, MAX_PAUSE = 0.002, 0.016  # s between /metrics scrapes while the scheduler works

    def __init__(self, opts: SyncOptions, metrics: MetricsSource | None):
        self.opts = opts
        self.metrics = metrics
        self.waits = 0
        self.wall = 0.0
        self.base: dict[str, float] = {}
        self.base_queued = 0.0
        self._idle_since: float | None = None
        self._idle_attempts = -1.0
        self._owed_warned = -1.0

    def baseline(self) -> None:
        """Counters are cumulative over the scheduler's life; fences count from here."""
        m = self.metrics.scrape() if self.metrics else None
        self.base = dict(m.events) if m else {}
        self.base_queued = m.queued if m else 0.0

    def wait_nodes(self, n: int) -> None:
        """Pods created before the scheduler saw the nodes would fail and sit out a backoff."""
        if self.metrics is None:
            time.sleep(0.2)
            return
        deadline = time.monotonic() + self.opts.crash_timeout
        while time.monotonic() < deadline:
            m = self.metrics.scrape()
            if m is not None and m.nodes >= n:
                return
            time.sleep(0.05)
        raise SchedulerUnresponsive(
            f"kube-scheduler ({self.metrics.url}) did not see the {n} nodes "
            f"within {self.opts.crash_timeout:.0f} s"
        )

    def fence(self, view: ClusterView, event: str) -> None:
        """Block until kube-scheduler has handled every `event` the adapter caused, so that what the
        adapter does next is judged on it: a pod created in the cycle that deletes another must not be
        tried on a cache that still holds the deleted one (it would fail and sit out a wall-clock
        backoff), since the twin applies the deletes of an instant first (instant.py)."""
        want = view.fences().get(event, 0)
        deadline = time.monotonic() + self.opts.crash_timeout
        while self.metrics is not None:
            m = self.metrics.scrape()
            if m is not None and m.events.get(event, 0) - self.base.get(event, 0) >= want:
                return
            if time.monotonic() > deadline:
                raise SchedulerUnresponsive(self._stuck(view, m))
            time.sleep(self.MIN_PAUSE)

    def settle(self, view: ClusterView) -> None:
        """Block until kube-scheduler's pods (read from /metrics) and other schedulers' pods are settled."""
        t0 = time.monotonic()
        self.waits += 1
        life, attempts, settled_at = t0, -1.0, None
        pause = self.MIN_PAUSE
        try:
            while view.unbound(None):
                now = time.monotonic()
                kube_ok, m = self._kube_settled(view)
                # the next round of recreations is judged on the real state: nothing active, in flight
                # or binding, and some backing-off pod is not one left there on purpose
                if (not kube_ok and m is not None and self.opts.backoff == "expedite"
                        and not self.opts.pop_from_backoff
                        and m.idle_but(m.backoff) and m.backoff > view.excused_backoff()
                        and view.expedite()):  # fmt: skip
                    settled_at = None
                    continue
                if m is not None and m.attempts != attempts:
                    life, attempts = now, m.attempts
                other_ok = view.unbound(False) == 0 or (
                    view.unmarked(False) == 0 and view.last_event_age() >= self.opts.quiet
                    and not self._owed(view, now, t0)
                )  # fmt: skip
                if kube_ok and other_ok:
                    if settled_at is None:
                        settled_at = now
                    if now - settled_at >= self.opts.confirm:
                        log.debug("settled after %.1f ms: %s fences=%s base=%s", (now - t0) * 1e3, m,
                                  view.fences(), self.base)  # fmt: skip
                        return
                else:
                    settled_at = None
                if now - life > self.opts.crash_timeout:
                    raise SchedulerUnresponsive(self._stuck(view, m))
                age = view.last_event_age()
                view.wait_event(0.001 if settled_at is not None else pause)
                # a pod event means progress: look again at once; silence: scrape less and less often,
                # since every scrape also costs the scheduler the CPU to render it
                pause = self.MIN_PAUSE if view.last_event_age() < age else min(pause * 2, self.MAX_PAUSE)
        finally:
            self.wall += time.monotonic() - t0

    def _owed(self, view: ClusterView, now: float, t0: float) -> bool:
        """A pending pod that fits free room is owed an answer: its mark may predate the delete that made
        the room, and a scheduler busy with its backlog makes no pod event (tests/
        test_apiserver_custom_scheduler.py). Bounded: a scheduler may leave such a pod pending."""
        if now - t0 < self.opts.crash_timeout / 2:
            return view.owed() > 0
        if self._owed_warned != t0 and (n := view.owed()):
            self._owed_warned = t0
            log.warning("settle: %d pending pod(s) fit free room but were not bound within %.0f s; going on",
                        n, now - t0)  # fmt: skip
        return False

    def _kube_settled(self, view: ClusterView) -> tuple[bool, Metrics | None]:
        """Nothing active, in flight, backing off or binding, and every pending pod back in a queue."""
        if self.metrics is None or view.unbound(True) == 0:
            return True, None
        m = self.metrics.scrape()
        if m is not None and view.disrupted():
            # events lost in the outage never reach the handlers: rebase the fences once the scheduler
            # has been idle with nothing active for a while, then go back to exact fences
            if not m.idle or m.queued - self.base_queued != view.unbound(True):
                self._idle_since = None
                return False, m
            if self._idle_since is None or self._idle_attempts != m.attempts:
                self._idle_since, self._idle_attempts = time.monotonic(), m.attempts
                return False, m
            if time.monotonic() - self._idle_since < 0.5:
                return False, m
            self.base = {k: m.events.get(k, 0) - n for k, n in view.fences().items()}
            view.disrupted(clear=True)
            return True, m
        ok = (
            m is not None and m.idle_but(0 if self.opts.pop_from_backoff else view.excused_backoff())
            and m.queued - self.base_queued == view.unbound(True)
            and all(m.events.get(k, 0) - self.base.get(k, 0) >= n for k, n in view.fences().items())
        )  # fmt: skip
        return ok, m

    def _stuck(self, view: ClusterView, m: Metrics | None) -> str:
        if self.metrics is not None and view.unbound(True):
            what = "stopped answering" if m is None else "made no scheduling attempt"
            return (
                f"kube-scheduler ({self.metrics.url}) {what} for {self.opts.crash_timeout:.0f} s while "
                f"{view.unbound(True)} pods wait; see its log (e.g. <controlplane dir>/kube-scheduler.log)"
                f" [last metrics {m}; fences {view.fences()}; baseline {self.base}]"
            )
        return (
            f"no scheduler answered for {self.opts.crash_timeout:.0f} s: {view.unmarked(False)} pending "
            "pods were neither bound nor marked PodScheduled=False (is a scheduler serving their "
            "schedulerName?)"
        )

    def next_wakeup(self, now: float, view: ClusterView) -> float | None:
        return None


class TimeoutPolicy:
    """Batkube's broker loop (BATKUBE.md §4.3), kept to measure what it loses."""

    def __init__(self, opts: SyncOptions):
        self.opts = opts
        self.step = opts.base_step
        self.first_decision = False
        self.last_decision = time.monotonic()
        self.waits = 0
        self.wall = 0.0

    def wait_nodes(self, n: int) -> None:
        time.sleep(0.2)

    def reset(self) -> None:
        self.step = self.opts.base_step

    def settle(self, view: ClusterView) -> int:
        """Wait for at most one decision within the timeout; returns how many bindings to hand out (0/1)."""
        t0 = time.monotonic()
        self.waits += 1
        got = 0
        while True:
            elapsed = time.monotonic() - t0
            if view.new_bindings() and elapsed >= self.opts.min_delay:
                got = 1
                break
            if elapsed > self.opts.timeout:
                # Batkube emits a binding as soon as it sees it; min-delay only keeps the loop from
                # ending early, so a min-delay above the timeout still lets decisions through
                got = min(view.new_bindings(), 1)
                break
            view.wait_event(min(0.001, max(self.opts.timeout - elapsed, 0.0001)))
        self.wall += time.monotonic() - t0
        now = time.monotonic()
        if got:
            self.first_decision, self.last_decision = True, now
            self.reset()
        elif view.running():
            self.last_decision = now
        elif (
            self.opts.detect_crash
            and view.unbound(None)
            and now - self.last_decision > self.opts.crash_timeout
        ):
            raise SchedulerUnresponsive(
                f"was expecting a decision from the scheduler for {self.opts.crash_timeout:.0f} s"
            )
        return got

    def next_wakeup(self, now: float, view: ClusterView) -> float | None:
        # a binding seen but not yet handed out (one per step) is a job Batsim still has pending: without
        # a wake-up for it, a cluster with nothing running would end in SimGrid's deadlock
        pending = view.unbound(None) + view.new_bindings()
        if pending == 0 and view.running() == 0:
            return None  # Batkube's end condition: nothing left that a wake-up could serve
        if not self.first_decision:
            step = self.opts.base_step / 5
        elif self.opts.fast_forward and pending == 0:
            return None  # fast-forward on no pending jobs: the next Batsim event comes by itself
        else:
            self.step = min(self.step * self.opts.multiplier, self.opts.max_step)
            step = self.step
        return round(now + step, 3) if step > 0 else None
