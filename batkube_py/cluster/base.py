"""The interface the decision process drives; a backend never sees ZeroMQ, JSON or Batsim ids."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from kubernetes import client


class BackendError(RuntimeError):
    """The backend cannot go on (API unreachable, scheduler dead); the decision process drains the run."""


@dataclass(frozen=True)
class Binding:
    pod: str
    node: str


@dataclass(frozen=True)
class Unschedulable:
    """A pod the backend gives up on, with the scheduler's own words for why."""

    pod: str
    reason: str


@dataclass(frozen=True)
class Eviction:
    """A running pod the backend wants gone (a preemption victim): the adapter kills its Batsim job."""

    pod: str
    reason: str


@dataclass(frozen=True)
class Admission:
    """Kueue admitted a job's workload (--queues): `pod` is the pod's name, or its pod group's; `flavor`
    the flavors assigned, one per resource group used, comma-joined in the ClusterQueue's group order."""

    pod: str
    queue: str
    cluster_queue: str
    flavor: str
    at: float


class Backend(Protocol):
    def serves(self, scheduler_name: str) -> bool:
        """Whether some scheduler profile is responsible for pods with this schedulerName."""

    def fits_empty_cluster(self, pod: client.V1Pod) -> str | None:
        """None if the pod fits some node of the empty cluster, else the reason it never can."""

    def add_pod(self, pod: client.V1Pod, job_id: str, now: float) -> None: ...

    def delete_pod(self, name: str, now: float) -> None:
        """The pod finished (in any state) or was killed: its node's resources are free again."""

    def set_nodes_schedulable(self, nodes: list[str], schedulable: bool, now: float) -> None: ...

    def schedule(self, now: float) -> list[Binding]:
        """Everything the scheduler decides at `now`, in decision order."""

    def take_evictions(self) -> list[Eviction]:
        """Running pods to kill since the last call (preemption victims), in decision order."""

    def take_admissions(self) -> list[Admission]:
        """Kueue admissions since the last call, in decision order (none without --queues)."""

    def give_up_pending(self, now: float) -> list[Unschedulable]:
        """Remove and return the pending pods that no longer have any chance to run."""

    def next_wakeup(self) -> float | None:
        """When the backend needs to be called again although nothing happens in Batsim."""

    def pending(self) -> int: ...

    def running(self) -> int: ...

    def over_allocations(self) -> int: ...

    def report(self) -> dict:
        """Backend-specific figures for summary.json (e.g. the paced backend's parity counts)."""

    def close(self, interrupted: bool = False) -> None:
        """End of the run; `interrupted` (Ctrl-C, SIGTERM): drop work still queued instead of waiting
        for it, so that the run stops within seconds."""
