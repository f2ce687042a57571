"""What the scheduler knows of a pod, pre-computed once so that every cycle is integer arithmetic."""

from __future__ import annotations

from dataclasses import dataclass, field

from kubernetes import client

from batkube_py import quantities

# pkg/scheduler/util/pod_resources.go: scoring counts a container without a request as this much.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


@dataclass(eq=False)
class PodInfo:
    name: str
    job_id: str
    pod: client.V1Pod
    milli_cpu: int
    memory: int
    priority: int
    scheduler_name: str
    timestamp: float
    seq: int
    node: int | None = field(default=None)
    extended: dict[str, int] = field(default_factory=dict)  # extended resource name → integer request
    namespace: str = "default"
    labels: dict[str, str] = field(default_factory=dict)
    # Plugin-parsed views of the pod (affinity terms, selectors), parsed once and kept across retries.
    cache: dict = field(default_factory=dict, repr=False)

    @property
    def has_pod_affinity(self) -> bool:
        """Any pod affinity or anti-affinity: such pods matter to other pods' InterPodAffinity."""
        a = self.pod.spec.affinity
        return a is not None and (a.pod_affinity is not None or a.pod_anti_affinity is not None)

    @property
    def has_required_anti_affinity(self) -> bool:
        a = self.pod.spec.affinity
        anti = a.pod_anti_affinity if a is not None else None
        return anti is not None and bool(anti.required_during_scheduling_ignored_during_execution)

    attempts: int = 0  # the backoff counter: Attempts (1.32), UnschedulableCount (1.37)
    errors: int = 0  # ConsecutiveErrorsCount (1.37)
    backoff_until: float = 0.0  # the first time it is no longer backing off
    flushed_at: float = 0.0  # FlushTimestamp (1.37)
    rejected_by: frozenset[str] = frozenset()
    bound_at: float = 0.0
    terminating: bool = False  # a preemption victim, until Batsim reports it killed
    nominated_node: int | None = None

    @property
    def nonzero_cpu(self) -> int:
        return self.milli_cpu or DEFAULT_MILLI_CPU_REQUEST

    @property
    def nonzero_memory(self) -> int:
        return self.memory or DEFAULT_MEMORY_REQUEST

    @property
    def sort_key(self) -> tuple[int, float, int]:
        """PrioritySort: higher priority first, then earlier queue timestamp, then arrival order."""
        return (-self.priority, self.timestamp, self.seq)


def pod_info(pod: client.V1Pod, job_id: str, timestamp: float, seq: int) -> PodInfo:
    requests = (pod.spec.containers[0].resources.requests or {}) if pod.spec.containers else {}
    meta = pod.metadata
    return PodInfo(
        name=pod.metadata.name,
        job_id=job_id,
        pod=pod,
        milli_cpu=quantities.milli_cpu(requests["cpu"]) if "cpu" in requests else 0,
        memory=quantities.byte_count(requests["memory"]) if "memory" in requests else 0,
        priority=pod.spec.priority or 0,
        scheduler_name=pod.spec.scheduler_name,
        timestamp=timestamp,
        seq=seq,
        extended={k: quantities.count(v) for k, v in requests.items() if k not in ("cpu", "memory")},
        namespace=(meta.namespace if meta is not None else None) or "default",
        labels=dict((meta.labels if meta is not None else None) or {}),
    )
