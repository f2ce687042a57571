"""The decision process: applies Batsim's events to a cluster backend and turns decisions into a reply.

It owns the simulated clock and the run's bookkeeping (one PodRecord per job, outputs, the invariant).
When something goes wrong that the simulation cannot recover from — a platform with no usable host, an
over-allocated node — it does not crash: it drains, telling Batsim to kill what runs and rejecting what
is left, so Batsim ends normally, writes its outputs, and the run exits non-zero with the reason.
"""

from __future__ import annotations

import logging
import math
import weakref
from collections.abc import Callable
from typing import Any

from kubernetes import client

from batkube_py.adapter import admission, gangjobs, podshape, translate
from batkube_py.adapter.disruption import Disruptions
from batkube_py.adapter.gates import Gates
from batkube_py.adapter.hosts import Hosts
from batkube_py.adapter.instant import ADD, DELETE, NODES, UNGATE, Cycles
from batkube_py.adapter.jobflow import JobFlow
from batkube_py.adapter.norequest import NoRequest
from batkube_py.adapter.outputs import PodRecord, RunOutputs
from batkube_py.adapter.outputs import summary as outputs_summary
from batkube_py.adapter.queuejobs import QueueJobs
from batkube_py.adapter.queuelog import QueueLog, queue_summary
from batkube_py.adapter.starts import Starts
from batkube_py.adapter.startup import StartupLatency
from batkube_py.cluster.base import Backend, BackendError
from batkube_py.protocol import models as m
from batkube_py.protocol.codec import ProtocolError, decode_message
from batkube_py.protocol.reply import TIME_RESOLUTION, Reply
from batkube_py.scheduler.snapshot import InvariantViolation

log = logging.getLogger(__name__)

BackendFactory = Callable[[list[client.V1Node]], Backend]
_FINAL = {"COMPLETED_SUCCESSFULLY": "Succeeded", "COMPLETED_KILLED": "Killed"}
_NOT_RUNNING = {"Pending": "not executed yet", "Starting": "not executed yet", "Rejected": "rejected"}


class DecisionProcess(JobFlow):
    def __init__(
        self,
        backend_factory: BackendFactory,
        outputs: RunOutputs | None = None,
        startup: StartupLatency | None = None,
        no_request: NoRequest | None = None,
        host_labels: dict[str, dict[str, str]] | None = None,
        queues: QueueJobs | None = None,
    ):
        self._factory = backend_factory
        self.no_request = no_request or NoRequest()
        self.outputs = outputs
        self.backend: Backend | None = None
        self.now = 0.0
        self.started = self.ended = False
        self.fatal: str | None = None
        self.no_more_jobs = self.no_more_external_events = False
        self.records: dict[str, PodRecord] = {}
        self._job_of_pod: dict[str, str] = {}
        self.hosts = Hosts()
        self.host_labels = host_labels or {}  # host name → topology labels (topology.py)
        self._unavailable: set[str] = set()
        self._profiles: dict[str, dict[str, dict[str, Any]]] = {}
        self._jobs: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}  # active job → (job, profile)
        self.disruptions = Disruptions()
        self.gangs = gangjobs.Gangs()
        self.gates = Gates(lambda job_id: self.records[job_id].state == "Pending")  # gates.py
        self.starts = Starts(startup, self.hosts, self.gangs)
        self.over_allocations = self.jobs_done = self.unknown_events = 0
        self._wakeups: list[float] = []  # CALL_ME_LATER times asked for and not yet reached
        self._to_build: list[admission.PodToBe] = []
        # shapes some node can hold, while in use: a job with fields of its own has a shape of its own
        self._admitted: weakref.WeakSet[podshape.Shape] = weakref.WeakSet()
        self.cycles = Cycles()  # when the scheduler runs: instant.py
        self.queue_jobs = queues or QueueJobs()  # Kueue's queue fields (--queues): queuejobs.py
        self.queue_log = QueueLog(self.queue_jobs.queues, outputs.dir if outputs is not None else None)

    # ---- entry points ---------------------------------------------------------------------------

    def handle(self, raw: bytes) -> bytes:
        """One Batsim message in, one reply out. Raises ProtocolError on a message that is not Batsim's."""
        return self.handle_decoded(*decode_message(raw))

    def handle_decoded(self, msg: m.Message, unknown: list) -> bytes:
        self.unknown_events += len(unknown)
        return self.handle_message(msg).encode()

    def after_reply(self) -> None:
        """Work the reply did not need, done once it has left: Batsim is busy with it meanwhile."""
        for pod in self._to_build:
            pod.pod()
        self._to_build.clear()
        if self.outputs is not None:
            self.outputs.flush()

    def handle_message(self, msg: m.Message) -> Reply:
        if not math.isfinite(msg.now) or msg.now < self.now - TIME_RESOLUTION:
            raise ProtocolError(f"'now' went from {self.now} to {msg.now}: Batsim's clock never goes back")
        self.now = msg.now
        self._wakeups = [t for t in self._wakeups if t > msg.now + TIME_RESOLUTION]
        reply = Reply(msg.now)
        self.gates.stage_due(msg.now, lambda t, job_id, op: self._stage(t, UNGATE, job_id, op), self.backend)
        for event in msg.events:
            self._cycles_due(event.timestamp, reply)
            handler = getattr(self, "_on_" + event.type.lower())
            handler(event.data, event.timestamp, reply)
        self._cycles_due(math.inf, reply)
        if self.ended or self.backend is None:
            return reply
        if self.fatal is not None:
            self._drain(reply)
        else:
            self.starts.run_due(self.now, self.records, reply)
        wakes = [w for w in (self.cycles.due(), self.starts.next_due(), self.gates.due()) if w is not None]
        if wakes and self.fatal is None:
            want = min(wakes)
            # every reply asks again for what is due next, so a wake-up already asked for at or before
            # `want` covers it; Batsim answers each CALL_ME_LATER, duplicates included
            if not any(t <= want for t in self._wakeups) and (asked := reply.call_me_later(want)):
                self._wakeups.append(asked)
                self.cycles.asked(want, asked)
        self.disruptions.flush_kills(reply)
        self.disruptions.maybe_close(reply, self.no_more_jobs and self.jobs_done == len(self.records))
        return reply

    def _cycles_due(self, before: float, reply: Reply) -> None:
        """Run the scheduling cycles that may run now and close before an event stamped `before`."""
        while (
            self.backend is not None
            and not self.ended
            and self.fatal is None
            and (boundary := self.cycles.ready(self.now)) is not None
            and boundary <= before + TIME_RESOLUTION
        ):
            log.debug("scheduling cycle at %s for the changes stamped before %s", self.now, boundary)
            self.cycles.apply(boundary)
            self._decide(reply)
            wake = self.backend.next_wakeup()
            self.cycles.backend_wake = wake if wake is not None and wake > self.now else None

    def _stage(self, ts: float, kind: int, key: str, op: Callable[[], None] | None) -> None:
        """A cluster change for the next cycle (instant.py); a window opens when a cycle can decide
        something: a pod to add, or pods pending (a staged add always has its window open).

        A delete with nothing pending and nothing staged can change no decision before the next cycle,
        whose changes come after it in the canonical order anyway: a backend whose writes cost wall
        time (`deletes_ahead`, the real control plane) takes it at once, off that cycle's path."""
        if kind == DELETE and op is not None and self._ahead():
            op()
            return
        self.cycles.stage(ts, kind, key, op)
        if self.cycles.window is None and self.backend is not None:
            if kind == ADD or self.backend.pending():
                self.cycles.open(ts)

    def _ahead(self) -> bool:
        b = self.backend
        ahead = b is not None and getattr(b, "deletes_ahead", False)
        return ahead and self.cycles.empty() and not b.pending()

    # ---- Batsim events --------------------------------------------------------------------------

    def _on_simulation_begins(self, data: m.SimulationBegins, ts: float, reply: Reply) -> None:
        if self.started:
            self._fail("Batsim sent SIMULATION_BEGINS a second time; the run is stopped")
            return
        self.started = True
        self._profiles = {wl: dict(p) for wl, p in data.profiles.items()}
        self.disruptions.configure(data.config)
        if not data.allow_compute_sharing:
            self._fail(
                "Batsim runs without --enable-compute-sharing, but pods share nodes; restart it with it"
            )
        nodes, problems = self.hosts.build(data.compute_resources, self.host_labels)
        for problem in problems:
            self._fail(problem)
        self.no_request.configure(nodes)
        if self.outputs is not None:
            self.outputs.nodes(nodes)
        try:
            self.backend = self._factory(nodes)
        except BackendError as exc:
            self._fail(f"cluster backend could not start: {exc}")
            return
        log.info("cluster of %d nodes from %d compute resources", len(nodes), len(data.compute_resources))

    def _on_job_submitted(self, data: m.JobSubmitted, ts: float, reply: Reply) -> None:
        self._submit(data.job_id, data.job, data.profile, ts, reply)

    def _on_job_completed(self, data: m.JobCompleted, ts: float, reply: Reply) -> None:
        record = self.records.get(data.job_id)
        if record is None or record.state != "Running":
            # Batsim completes only what it was told to execute, and only once; answering would act on a
            # job that Batsim holds as unknown or finished (an EXECUTE_JOB of it aborts Batsim)
            what = _NOT_RUNNING.get(record.state, "already completed") if record else "never submitted"
            raise ProtocolError(f"JOB_COMPLETED for job {data.job_id!r}, which was {what}")
        self._finish(data.job_id, _FINAL.get(data.job_state, "Failed"), ts, data.job_state, reply)

    def _on_job_killed(self, data: m.JobKilled, ts: float, reply: Reply) -> None:
        for job_id in data.job_ids:
            self._finish(job_id, "Killed", ts, "COMPLETED_KILLED", reply)

    def _on_notify(self, data: m.Notify, ts: float, reply: Reply) -> None:
        if data.type == "no_more_static_job_to_submit":
            self.no_more_jobs = True
            self._stage(ts, NODES, "", None)  # pending pods that can never run are given up at a cycle
        elif data.type == "no_more_external_event_to_occur":
            self.no_more_external_events = True
            self._stage(ts, NODES, "", None)
        elif data.type in ("event_machine_unavailable", "event_machine_available") and self.backend:
            names = self.hosts.nodes_in(data.resources)
            if names is None:
                return self._fail(
                    f"NOTIFY {data.type}: resources {data.resources!r} is not a set of host ids like '0-3 7'"
                )
            available = data.type == "event_machine_available"
            (self._unavailable.difference_update if available else self._unavailable.update)(names)
            backend = self.backend
            self._stage(ts, NODES, "", lambda: backend.set_nodes_schedulable(names, available, ts))
            for record in [] if available else self.records.values():
                if record.state in ("Running", "Starting") and (hit := set(names) & set(record.node.split())):
                    self._disrupt(record, f"node {' '.join(sorted(hit))} failed (machine unavailable)", True)
        else:
            log.info("ignoring NOTIFY %r", data.type)

    def _on_simulation_ends(self, data: m.SimulationEnds, ts: float, reply: Reply) -> None:
        self.ended = True
        self._flush_unfinished()

    def _on_resource_state_changed(self, data: Any, ts: float, reply: Reply) -> None:
        log.debug("resource state changed: %s", data)

    _on_query = _on_answer = _on_from_job_msg = _on_resource_state_changed

    def _on_requested_call(self, data: m.RequestedCall, ts: float, reply: Reply) -> None:
        """The wake-up itself: the cycles it was asked for run in handle_message."""

    # ---- decisions ------------------------------------------------------------------------------

    def _disrupt(self, record: PodRecord, why: str, node_failure: bool) -> None:
        if record.state == "Running":
            self.disruptions.evict(record, why, node_failure)
            return
        # Starting (or admitted by Kueue, not bound): Batsim never ran it, so the job simply gets new pods
        # (a group: as one), scheduled afresh
        now, name, job_id = self.now, record.pod, record.job_id
        self.queue_log.released(record, now, requeued=True)
        record.state, record.node, record.resource_id, record.bind_time = "Pending", "", "", ""
        record.reason, record.members = f"restarted: {why}", ()
        record.flavor = record.admitted_at = ""
        self._stage(now, DELETE, job_id, lambda: self._delete_pods(job_id, name, now))
        self._stage(now, ADD, job_id, lambda: self._add_pods(job_id, name, now))

    def _decide(self, reply: Reply) -> None:
        assert self.backend is not None
        try:
            bindings = self.backend.schedule(self.now)
        except InvariantViolation as exc:
            self.over_allocations += 1
            self._fail(f"invariant violated, the scheduler over-allocated a node: {exc}")
            return
        except BackendError as exc:
            self._fail(f"cluster backend stopped: {exc}")
            return
        for b in bindings:
            record = self.records[self._job_of_pod[b.pod]]
            if record.group:
                if not self.gangs.bound(record.job_id, b.pod, b.node, self.hosts.host_of):
                    continue  # the job starts once its last pod is bound
                record.node, record.members = self.gangs.placement(record.job_id, self.hosts.host_of)
                record.resource_id = self.gangs.by_job[record.job_id].alloc_text
            else:
                record.node, record.resource_id = b.node, self.hosts.host_of[b.node]
            self.starts.bound(record, self.now, reply)
        evictions = self.backend.take_evictions()
        admissions = getattr(self.backend, "take_admissions", list)()
        for record, why in self.queue_log.unbound_victims(evictions, admissions, self._record_of):
            self._disrupt(record, why, False)  # Kueue deleted their pods: their quota is free already
        self.queue_log.evicted(evictions, self._record_of, self.now)
        if broken := self.queue_log.take(admissions, self._record_of, self.now):
            self._fail(f"invariant violated, Kueue over-admitted: {broken}")
        for ev in evictions:
            record = self.records[self._job_of_pod[ev.pod]]
            if record.state in ("Running", "Starting"):  # a group's other pods may follow its first
                self._disrupt(record, ev.reason, False)
        self.disruptions.flush_kills(reply)
        done = self.no_more_jobs and (not self._unavailable or self.no_more_external_events)
        if done and self.gates.none():  # a gated pod arrives in the queue later
            for gone in self.backend.give_up_pending(self.now):
                job_id = self._job_of_pod[gone.pod]
                if self.records[job_id].state != "Pending":
                    continue  # a group's other pods: the job is rejected once
                why = translate.Rejection(
                    job_id, "requests", "-", f"a pod that fits the cluster ({gone.reason})"
                )
                self._reject(self.records[job_id], reply, why)

    def _drain(self, reply: Reply) -> None:
        """After a fatal error: kill what runs, reject what waits, so Batsim can end and write outputs."""
        self.cycles.drop()
        for record in list(self.records.values()):
            if record.state == "Running":
                self.disruptions.kill(record.job_id)
            if record.state == "Starting" and self.backend is not None:
                self._delete_pods(record.job_id, record.pod, self.now)
                record.state = "Pending"
            if record.state == "Pending":
                why = translate.Rejection(record.job_id, "-", "-", f"a working run ({self.fatal})")
                self._reject(record, reply, why)

    def _flush_unfinished(self) -> None:
        if self.outputs is not None:
            for record in self.records.values():
                if record.state in ("Pending", "Starting", "Running"):
                    self.outputs.pod(record)

    def _fail(self, reason: str) -> None:
        if self.fatal is None:
            log.error("%s", reason)
            self.fatal = reason

    # ---- results --------------------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        self.no_request.log_summary()
        return {
            **self.no_request.summary(),
            **outputs_summary(self.records.values(), self.hosts.nodes.values()),
            "over_allocations": self.over_allocations,
            **self.disruptions.summary(),
            **self.gates.summary(),
            **self.queue_jobs.summary(),
            **({"queue_stats": queue_summary(self.records.values())} if self.queue_jobs.queues else {}),
            "unknown_events": self.unknown_events,
            "error": self.fatal,
            **(self.backend.report() if self.backend is not None else {}),
        }
