"""kube-scheduler's own queue on Batsim's clock (`--sync queue`): the real scheduler decides when a pod is
tried and where it goes.

batkube's kube-scheduler 1.37.2 main (gobuild/kube-v1.37.2/cmd/kube-scheduler) gives the scheduling queue
a clock the adapter sets (scheduler.WithClock) and a loopback control endpoint. Each Batsim step at
simulated time T: `begin(T)` holds the scheduler's pops and moves its clock to T; the step's deletes, node
changes and new pods go to the apiserver; `settle` waits until the scheduler's event handlers have seen
all of them, does the backoffQ and unschedulable-leftover flushes due at T, lets the scheduler pop until
it has nothing left to do at T, and returns the queue's next wake-up (an error backoff expiring, a
leftover flush tick), which becomes a CALL_ME_LATER. The timers the clock does not drive are handled in
the Go main and documented in docs/sync.md.

The twin runs beside it as a shadow (as under `--sync paced`), fed the same events, with its own queue
on the same clock: each pod the twin's queue pops is looked up in what the real scheduler did in this
step. A binding is checked against the twin's best nodes on the same state (parity.py); a pod one queue
tried and the other did not, at this time, is a timing mismatch. The shadow then mirrors the real
outcome, so both continue from the real state.
"""

from __future__ import annotations

import copy
import logging
import math
import time
import uuid
from datetime import UTC, datetime, timedelta

from kubernetes import client

from batkube_py.cluster.apiserver import ApiServerCluster
from batkube_py.cluster.base import BackendError, Binding, Unschedulable
from batkube_py.cluster.embedded import EmbeddedCluster
from batkube_py.cluster.parity import Parity
from batkube_py.cluster.realgroups import RealGroups
from batkube_py.cluster.schedmetrics import MetricsSource
from batkube_py.cluster.settlereply import SettleReply
from batkube_py.cluster.shadowjudge import ShadowJudge
from batkube_py.cluster.starttimes import StartTimes
from batkube_py.cluster.sync import SyncOptions
from batkube_py.controlplane.clock import ClockError, SchedulerClock
from batkube_py.scheduler.framework import Profile
from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.queue import QueueConfig
from batkube_py.scheduler.snapshot import InvariantViolation

log = logging.getLogger(__name__)

FLUSH_PERIOD = 30.0  # the unschedulable-leftover flush period of upstream's queue (simulated seconds)
NODE_EVENT = "NodeUpdateNodeAnnotation"  # the handler label an annotated node patch is counted under
TICK_TOLERANCE = 1e-6
# updatePodInSchedulingQueue's label for an update that removes a pod's last gate (framework/events.go)
UNGATE_EVENT = "UnscheduledPodUpdatePodSchedulingGatesEliminated"
UNGATE = [{"op": "remove", "path": "/spec/schedulingGates"}]


class QueueCluster(SettleReply, ShadowJudge, ApiServerCluster):
    deletes_ahead = True  # decision.py: a delete with nothing pending is written at once

    def __init__(
        self,
        nodes: list[client.V1Node],
        api: client.ApiClient,
        sync: SyncOptions,
        clock_address: str,
        profiles: list[Profile],
        queue_config: QueueConfig,
        kube_names: set[str] | frozenset[str],
        parity: Parity | None = None,
        clock_run: str | None = None,
        **kw,
    ):
        run = clock_run or uuid.uuid4().hex[:12]
        self.clock = SchedulerClock(clock_address, run, timeout=sync.crash_timeout)
        self._errors = MetricsSource(sync.metrics_url) if sync.metrics_url else None
        self._errors_base: float | None = None
        self._waits: dict[str, int] | None = None  # the scheduler's own waits for kube-apiserver so far
        self.shadow = EmbeddedCluster(copy.deepcopy(nodes), profiles=profiles, queue_config=queue_config,
                                      attempts=self)  # fmt: skip
        self.shadow.queue.shortcut = []
        self.parity = parity or Parity(None)
        self._step: float | None = None  # simulated time of the step begun
        self._want: dict[str, int] = {}  # handler runs the adapter's writes must cause, by event label
        self._base_scheduled = 0.0
        self._last_tick = -math.inf
        self._origin: datetime | None = None
        self._node_patches = 0
        self._settle_init()
        self._tried: set[str] = set()  # pods the twin's queue popped in this step
        self.start_times = StartTimes()
        self._real_wake: float | None = None
        self._errors_pending = 0
        self.steps = 0
        self.settle_wall = 0.0
        self.settle_split = [0.0, 0.0]  # of it, the scheduler's own wait for the step's events, its work
        self.attempts_real = 0
        self.pod_groups = RealGroups(self)
        super().__init__(nodes, api, sync, scheduler_names=set(kube_names), kube_names=kube_names, **kw)

    def _create_cluster(self, nodes: list[client.V1Node]) -> None:
        try:
            ready = self.clock.ready()
        except ClockError as exc:
            raise BackendError(str(exc)) from None
        if ready.get("run"):
            raise BackendError(
                f"run {ready['run']} drives this kube-scheduler's clock: one --sync queue run at a time"
            )
        self._want = {k: int(v) for k, v in ready.get("events", {}).items()}
        self._base_scheduled = float(ready.get("scheduled", 0))
        m = self._errors.scrape() if self._errors is not None else None
        self._errors_base = m.errors if m is not None else None
        super()._create_cluster(nodes)
        self.pod_groups.probe()

    # ---- pod groups (realgroups.py) -------------------------------------------------------------

    def supports_groups(self) -> bool:
        return self.pod_groups.unsupported is None

    @property
    def no_groups_reason(self) -> str | None:
        return self.pod_groups.unsupported

    def group_never_fits(self, pod: client.V1Pod, group: client.V1beta1PodGroup) -> str | None:
        return self.shadow.group_never_fits(pod, group)

    def add_pod_group(self, group: client.V1beta1PodGroup, now: float) -> None:
        if not self._begin(now):
            return
        self.shadow.add_pod_group(copy.deepcopy(group), now)
        try:
            self.pod_groups.create(group)
        except BackendError as exc:
            self._break(str(exc))

    def attempt_group(self, entity, members: list[PodInfo], twin, now: float):
        return self.pod_groups.attempt(entity, members, twin, now)

    # ---- the step -------------------------------------------------------------------------------

    def _begin(self, now: float) -> bool:
        """Begin the step at `now`; False if the run is broken or the scheduler's clock fails now (its
        next schedule() says why: a write between two cycles never raises)."""
        if self.broken:
            return False
        if self._step is not None and now <= self._step:
            return True
        try:
            st = self.clock.begin(now)
        except ClockError as exc:
            self._clock_failed(exc, f"begin t={now}")
            return False
        if self._origin is None:
            self._origin = datetime.fromtimestamp(st["origin"], UTC)
            # where the scheduler's node rotation stands after earlier runs: it decides score ties
            start, n = st.get("next_start_node_index", -1), len(self.shadow.nodes)
            if start >= 0 and n:
                for profile in self.shadow.profiles.values():
                    profile.next_start = start % n
        self._step = now
        return True

    def _clock_failed(self, exc: ClockError, during: str) -> None:
        """The scheduler died, was restarted, hangs or refuses: the run stops, naming it."""
        text = str(exc).removeprefix(f"{self.clock.component}'s ")
        why = self.calls.diagnose()
        self._break(self.faults.fatal(self.clock.component, text + (f"; {why}" if why else ""), during))

    def _failed_attempts(self) -> bool:
        """Pods in error backoff: the scheduler's API calls failed (a binding during an apiserver outage)
        and it retries them later, which a run without the fault would not do. Breaks the run then."""
        m = self._errors.scrape() if self._errors is not None else None
        if m is None or self._errors_base is None or m.errors <= self._errors_base:
            return False  # a pod group backing off (docs/gangs.md): no error
        fault = (f"{int(m.errors - self._errors_base)} scheduling attempt(s) failed on an API error (pods in "
                 "error backoff): its retries would give another schedule than a run without the fault")
        self._break(self.faults.fatal("kube-scheduler", fault, f"settle t={self.now}"))
        return True

    def _count(self, label: str, n: int = 1) -> None:
        self._want[label] = self._want.get(label, 0) + n

    def add_pod(self, pod: client.V1Pod, job_id: str, now: float) -> None:
        if not self._begin(now):
            return
        self.shadow.add_pod(pod, job_id, now)
        # _prepare sets fields of the metadata and spec, never inside them: their copies are enough
        pod = pod.model_copy(update={"metadata": pod.metadata.model_copy(), "spec": pod.spec.model_copy()})
        name = self._prepare(pod)
        self.pod_groups.member(pod)
        for bound, at in self.start_times.pod_added(self.priorities[name]):
            if bound in self.node_of:
                self._start_time(bound, at)
        self.watch.track(name)
        self._count("UnscheduledPodAdd")
        # in the background, in order: the step's settle waits for the scheduler to have seen them all
        self.calls.later(f"create pod {name}", self.http.create_pod, self.namespace, pod, ordered=True,
                         ok=(409,))  # fmt: skip

    def supports_gates(self) -> bool:
        return True

    def ungate_pod(self, name: str, now: float) -> None:
        """Remove the pod's scheduling gates: one update, handled once under the label below (and once
        under UnscheduledPodUpdate, which the scheduler's own status writes also count)."""
        if name in self.shadow.pods:
            self.shadow.ungate_pod(name, now)
        if name not in self.specs or not self._begin(now):
            return
        self._drain()  # the pod's create (in the background) is acknowledged first
        self._count(UNGATE_EVENT)
        try:
            # 422: a retry of a removal already applied (its answer lost) finds no gate left
            self.calls(f"ungate pod {name}", self.core.patch_namespaced_pod, name, self.namespace, UNGATE,
                       ok=(422,))  # fmt: skip
        except BackendError as exc:
            self._break(str(exc))

    def delete_pod(self, name: str, now: float) -> None:
        if name in self.shadow.pods:
            self.shadow.delete_pod(name, now)
        # with no pod pending, no queue entry can read the clock: a delete ahead (decision.py) needs no
        # begin of its own, which would cost a clock request per completion
        quiet = self.deletes_ahead and self.pending() == 0
        if self.broken or (not quiet and not self._begin(now)):
            self._forget(name)
            return
        self.start_times.gone(name)
        node = self._forget(name)
        self._count("AssignedPodDelete" if node is not None else "UnscheduledPodDelete")
        self.calls.later(f"delete pod {name}", self.http.delete_pod, name, self.namespace, ok=(404,))
        try:
            self.pod_groups.deleted(name)
        except BackendError as exc:
            self._break(str(exc))

    def set_nodes_schedulable(self, nodes: list[str], schedulable: bool, now: float) -> None:
        self.shadow.set_nodes_schedulable(nodes, schedulable, now)
        if not self._begin(now):
            return
        self._drain()
        for name in nodes:
            self._node_patches += 1
            # a cordon alone is counted under the taint label only when it changes something; the
            # annotation makes every patch one event the step can wait for
            patch = {"metadata": {"annotations": {"batkube.io/change": str(self._node_patches)}},
                     "spec": {"unschedulable": not schedulable}}  # fmt: skip
            self._count(NODE_EVENT)
            try:
                self.calls(f"cordon {name}", self.http.patch_node, name, patch)
            except BackendError as exc:
                self._break(str(exc))

    def schedule(self, now: float) -> list[Binding]:
        self._alive()
        self.now = now
        begin = None
        if self._origin is None:
            if not self._begin(now):
                raise BackendError(self.broken or "kube-scheduler's clock endpoint failed")
        elif self._step is None or now > self._step:
            begin, self._step = now, now  # the settle request begins the step
        tick = math.floor(now / FLUSH_PERIOD + TICK_TOLERANCE) * FLUSH_PERIOD
        flush = tick if tick > self._last_tick else None
        t0 = time.monotonic()
        self._drain()
        self._alive()
        self._send_settle(now, flush, begin, t0)  # settlereply.py: the shadow's cycle runs meanwhile
        self._tried = set()
        try:
            self.shadow.schedule(now)
        except BaseException:
            self._abandon_settle()
            raise
        st = self._real["st"]
        self._shortcut(now)
        self._mirror_untried(now)
        out = []
        # in the order the scheduler popped them (its scheduling cycles), not the order its concurrent
        # binding goroutines reached the apiserver in: the reply's order is the twin's
        last = self._real["last"]
        for pod, node in sorted(self._real["bound"].items(), key=lambda b: last.get(b[0], math.inf)):
            if pod not in self.requests or pod in self.node_of:
                continue
            self._bound(pod, node)
            out.append(Binding(pod, node))
        self._start_times(out, now)
        self._errors_pending = int(st.get("backoff") or 0)  # at idle only error backoff is left there
        wake = st.get("next_wakeup")
        self._real_wake = wake if wake is not None and wake > now + TICK_TOLERANCE else None
        if self._over:
            raise InvariantViolation(f"{self._over} bindings over-allocated a node (see batkube.log)")
        return out

    def _start_times(self, bound: list[Binding], now: float) -> None:
        """The kubelet's part: status.startTime, which preemption reads (victims that started last go
        first). Only needed when priorities differ; whole simulated seconds from the run's origin."""
        for pod in self.start_times.step_bound([b.pod for b in bound], now):
            self._start_time(pod, now)

    def _start_time(self, pod: str, at: float) -> None:
        """Write it (starttimes.py says when) and replay the update in the twin's node cache order."""
        if self._origin is None:
            return
        started = {"status": {"startTime": self._origin + timedelta(seconds=math.floor(at))}}
        self._drain()
        self._count("AssignedPodUpdate")
        self.calls(f"start pod {pod}", self.core.patch_namespaced_pod_status, pod, self.namespace, started)
        self.shadow.touch(pod)

    # ---- Backend protocol -----------------------------------------------------------------------

    def give_up_pending(self, now: float) -> list[Unschedulable]:
        if self._errors_pending:
            return []  # pods whose last attempt hit an API error (a restart): their marks are stale
        if self.shadow.groups.pending() and self.shadow.groups.stuck() is None:
            return []  # a group backing off fits once its backoff ends (groups are never parked)
        gone = super().give_up_pending(now)
        for g in gone:
            if g.pod in self.shadow.pods:
                self.shadow.delete_pod(g.pod, now)
        return gone

    def pending(self) -> int:
        return len(self.requests) - len(self.node_of)

    def next_wakeup(self) -> float | None:
        if self.broken:
            return None
        # the twin's wake-ups too, so that a retry only its queue would make shows as a mismatch
        wakes = [w for w in (self._real_wake, self.shadow.next_wakeup()) if w is not None and w > self.now]
        return min(wakes) if wakes else None

    def report(self) -> dict:
        return {
            **self.facts,
            **self.fault_report(),
            "real_attempts": self.attempts_real,
            "queue_steps": self.steps,
            **self.parity.summary(),
        }

    def _drain(self) -> None:
        """Wait for the writes started in the background (their failure breaks the run, as before)."""
        try:
            self.calls.drain()
        except BackendError as exc:
            self._break(str(exc))

    def close(self, interrupted: bool = False) -> None:
        if not self._closed:
            if interrupted:  # thousands of pod creates may be queued (a burst): not worth waiting for
                self.calls.cancel()
            else:
                self._drain()
            log.info("queue: %d steps, %d attempts by kube-scheduler's own queue, %.1f s waiting for it "
                     "(%.1f s until it had seen the steps' writes, %.1f s of its work)", self.steps,
                     self.attempts_real, self.settle_wall, *self.settle_split)  # fmt: skip
            self.parity.close()
            self._settler.shutdown(wait=True)
            self.clock.end()
        super().close(interrupted)
