"""What went wrong in the control plane during a run, and what the run did about it.

A fault is an *episode*: it opens at the first failure of a kind (kube-apiserver unreachable, an answer
429/5xx, the pod watch closed) and closes at the next success; every retry in between is counted and
logged. The run log gets a line when an episode opens, for each retry, and when it closes (or ends the
run); summary.json gets the list (`faults`) and the total of retries (`fault_retries`), so a run that
finished despite faults says so, and one they stopped says which.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

log = logging.getLogger(__name__)


@dataclass
class Fault:
    component: str  # kube-apiserver, etcd, kube-scheduler
    fault: str  # what was seen, e.g. "unreachable (ConnectionRefusedError)", "answered 503"
    first: str  # the call that saw it first
    wall: str  # UTC time it was first seen
    sim_time: float | None
    retries: int = 0
    lasted_s: float = 0.0
    outcome: str = "open"  # recovered | stopped the run | open (the run ended during it)

    def line(self) -> str:
        at = "" if self.sim_time is None else f" at t={self.sim_time:g}"
        return f"{self.component}: {self.fault}{at}"


class FaultLog:
    """Shared by the API calls (several threads), the pod watch and the scheduler's clock of one run.
    `now` is the run's simulated time as the adapter last handed it to the backend."""

    def __init__(self, now: Callable[[], float | None] = lambda: None):
        self._now = now
        self._lock = threading.Lock()
        self.faults: list[Fault] = []
        self._open: dict[tuple[str, str], tuple[Fault, float]] = {}
        self.retries = 0

    def failed(self, component: str, fault: str, what: str, retry: str | None = None) -> None:
        """A call (`what`) failed with this fault; `retry` says what happens next (logged)."""
        key = (component, fault)
        with self._lock:
            if key not in self._open:
                f = Fault(component, fault, what, datetime.now(UTC).strftime("%H:%M:%S.%f")[:-3], self._now())
                self.faults.append(f)
                self._open[key] = (f, time.monotonic())
                log.warning("fault: %s (during %s)", f.line(), what)
            f = self._open[key][0]
            if retry is not None:
                f.retries += 1
                self.retries += 1
        if retry is not None:
            log.warning("%s: %s failed (%s); %s", component, what, fault, retry)

    def ok(self, component: str) -> None:
        """A call to this component succeeded: its open faults are over."""
        if not self._open:
            return
        with self._lock:
            for key in [k for k in self._open if k[0] == component]:
                f, t0 = self._open.pop(key)
                f.lasted_s, f.outcome = round(time.monotonic() - t0, 3), "recovered"
                log.warning("fault over: %s, after %d retries and %.1f s", f.line(), f.retries, f.lasted_s)

    def fatal(self, component: str, fault: str, what: str) -> str:
        """The fault ends the run: recorded, and the one line the run reports returned."""
        self.failed(component, fault, what)
        with self._lock:
            f, t0 = self._open.pop((component, fault))
            f.lasted_s, f.outcome = round(time.monotonic() - t0, 3), "stopped the run"
        return f"{component}: {fault} ({what})"

    def seen_by_scheduler(self, counts: dict[str, int], base: dict[str, int]) -> None:
        """What kube-scheduler waited out itself since `base` (batkube's main, patient.go: connections
        refused by a restarting kube-apiserver, requests cut with their connection or answered 429/5xx,
        each completed once it was back), as recovered faults of kube-apiserver with one retry each."""
        kinds = {"refused": "refused kube-scheduler's connections",
                 "cut": "cut or answered 429/5xx kube-scheduler's requests"}  # fmt: skip
        for kind, fault in kinds.items():
            for _ in range(counts.get(kind, 0) - base.get(kind, 0)):
                self.failed("kube-apiserver", fault, "kube-scheduler", "it waited, then completed it")
        self.ok("kube-apiserver")

    def summary(self) -> dict:
        with self._lock:
            for f, t0 in self._open.values():
                f.lasted_s = round(time.monotonic() - t0, 3)
            return {"faults": [asdict(f) for f in self.faults], "fault_retries": self.retries}
