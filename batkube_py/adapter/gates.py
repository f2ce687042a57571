"""Scheduling gates lifted at a simulated time: a job's `gatedUntil`.

A job with `"gatedUntil": T` (simulated seconds, absolute) has its pods created on submission, as a
controller would, but with a scheduling gate (spec.schedulingGates, `batkube.io/gated-until`): they exist
in the cluster, and count where upstream counts them (a gang's quorum: the scheduler's cache adds every
unscheduled pod of a group, gated or not), but the SchedulingGates PreEnqueue plugin keeps them out of
activeQ. At T the adapter removes the gate (Batsim is asked for a CALL_ME_LATER at T, and the removal is
a cluster change of the cycle that follows, like a completion) and the queue moves the pod as upstream's
QueueingHint for that update says. For a multi-host job, `gatedUntil` may be a list, one time per pod
(executor order): a group entity is gated while any of its pods is, so the group is tried once its last
gate is lifted. A time at or before the job's submission means no gate. Waits still count from the
job's submission.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from typing import Annotated, Any

from kubernetes import client
from pydantic import ConfigDict, Field, TypeAdapter, ValidationError

from batkube_py.adapter import translate
from batkube_py.adapter.gangjobs import EXECUTOR_ANNOTATION
from batkube_py.protocol.reply import TIME_RESOLUTION

GATE = "batkube.io/gated-until"  # not paced.py's batkube.io/simulated-clock, which only paced sets
FIELD = "gatedUntil"
_Time = Annotated[float, Field(ge=0, allow_inf_nan=False)]
_GATED_UNTIL = TypeAdapter(_Time | list[_Time], config=ConfigDict(strict=True))
EXPECTED = "a simulated time in seconds (a number >= 0), or for a job of res N a list of N such times"


def gate_times(job_id: str, job: dict[str, Any]) -> tuple[float, ...] | translate.Rejection | None:
    """The job's gate time for each of its pods (executor order), None if it has no `gatedUntil`."""
    if FIELD not in job:
        return None
    value = job[FIELD]
    try:
        times = _GATED_UNTIL.validate_python(value)
    except ValidationError:
        return translate.Rejection(job_id, FIELD, repr(value), EXPECTED)
    res = job["res"]
    if isinstance(times, list):
        if len(times) != res:
            return translate.Rejection(job_id, FIELD, repr(value), f"{EXPECTED} (this job has res {res})")
        return tuple(float(t) for t in times)
    return (float(times),) * res


class Gates:
    """The run's gated pods and when each gate is lifted."""

    def __init__(self, is_pending: Callable[[str], bool]):
        self._is_pending = is_pending  # job id → still waiting to be scheduled (not rejected, killed)
        self._times: dict[str, tuple[float, ...]] = {}  # job → gate time per pod
        self._gated: dict[str, tuple[str, float]] = {}  # gated pod → (job, gate time)
        self._due: list[tuple[float, int, str]] = []
        self._n = 0
        self.created = 0
        self.lifted = 0

    def admit(self, job_id: str, job: dict[str, Any], submit: float, backend, admitted: Any) -> Any:
        """`admitted` (what admission made of the job) unless its gates are wrong for it or the backend."""
        if isinstance(admitted, translate.Rejection) or (times := gate_times(job_id, job)) is None:
            return admitted
        if isinstance(times, translate.Rejection):
            return times
        if max(times) <= submit:
            return admitted
        if not getattr(backend, "supports_gates", lambda: False)():
            why = getattr(backend, "no_gates_reason", None) or "a backend that lifts scheduling gates"
            return translate.Rejection(job_id, FIELD, repr(job[FIELD]), why)
        self._times[job_id] = times
        return admitted

    def add_pod(self, backend, pod: client.V1Pod, job_id: str, now: float) -> None:
        """Create the pod, behind a gate if its time has not come."""
        if (times := self._times.get(job_id)) is not None:
            index = int((pod.metadata.annotations or {}).get(EXECUTOR_ANNOTATION, 0))
            if (t := times[index]) > now + TIME_RESOLUTION:
                pod.spec.scheduling_gates = [client.V1PodSchedulingGate(name=GATE)]
                name = pod.metadata.name
                self._gated[name] = (job_id, t)
                self._n += 1
                heapq.heappush(self._due, (t, self._n, name))
                self.created += 1
        backend.add_pod(pod, job_id, now)

    def through(self, backend) -> _Through:
        """`backend` with its pods created through the gates (what gangjobs.Gangs.add_to writes to)."""
        return _Through(self, backend)

    def stage_due(self, now: float, stage: Callable[[float, str, Callable[[], None]], None], backend) -> None:
        """Stage, as a cluster change stamped with its time, each gate to lift by `now`."""
        while self._due and self._due[0][0] <= now + TIME_RESOLUTION:
            t, _, name = heapq.heappop(self._due)
            job_id, when = self._gated.get(name, ("", math.nan))
            if when == t:
                stage(t, job_id, lambda name=name, t=t: self._lift(backend, name, t))

    def _lift(self, backend, name: str, t: float) -> None:
        job_id, when = self._gated.get(name, ("", math.nan))
        if when != t:
            return  # lifted already (a restarted job's pods were gated again until the same time)
        del self._gated[name]
        if self._is_pending(job_id):  # not rejected, nor killed meanwhile
            self.lifted += 1
            backend.ungate_pod(name, t)

    def due(self) -> float | None:
        """When the next gate is to be lifted: a wake-up to ask Batsim for."""
        while self._due and self._gated.get(self._due[0][2], ("", math.nan))[1] != self._due[0][0]:
            heapq.heappop(self._due)
        return self._due[0][0] if self._due else None

    def none(self) -> bool:
        """No pod waits for its gate to be lifted (one that does arrives in the queue later, so pending
        pods are not given up as hopeless before)."""
        return not self._gated

    def summary(self) -> dict[str, int]:
        return {"gated_pods": self.created, "gates_lifted": self.lifted}


class _Through:
    def __init__(self, gates: Gates, backend):
        self._gates, self._backend = gates, backend

    def add_pod(self, pod: client.V1Pod, job_id: str, now: float) -> None:
        self._gates.add_pod(self._backend, pod, job_id, now)

    def __getattr__(self, name: str):
        return getattr(self._backend, name)
