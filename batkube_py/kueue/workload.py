"""A Kueue Workload as the twin holds it: Kueue's pkg/workload (Info, TotalRequests, priority, ordering).

The pod integration makes one Workload per pod, or one per pod group (all its pods one PodSet: batkube's
group members are identical). Its queue-order timestamp is the job's simulated submission time, ties
broken by submission order (`seq`): what the real backend makes the real Kueue use.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubernetes import client

from batkube_py import quantities
from batkube_py.inputs.queues import (
    PREFERRED_TOPOLOGY,
    PRIORITY_LABEL,
    QUEUE_LABEL,
    REQUIRED_TOPOLOGY,
    UNCONSTRAINED_TOPOLOGY,
)
from batkube_py.kueue.cache import tas
from batkube_py.kueue.cache.resource_node import FR

PODS = "pods"


@dataclass(frozen=True)
class TASUsage:
    """A PodSet's placement on a TAS flavor (its TopologyAssignment) and the usage it charges there."""

    flavor: str
    assignment: tas.TopologyAssignment
    per_pod: dict[str, int]  # the per-pod requests of the resources the TAS flavor gives

    @property
    def usage(self) -> dict[tas.Key, tas.Requests]:
        return self.assignment.usage(self.per_pod)


def pod_requests(pod: client.V1Pod) -> dict[str, int]:
    """Per-pod requests as Kueue counts them: milli-cores for cpu, bytes, counts for the rest."""
    out: dict[str, int] = {}
    for container in pod.spec.containers:
        for name, value in ((container.resources and container.resources.requests) or {}).items():
            amount = quantities.milli_cpu(value) if name == "cpu" else quantities.byte_count(value)
            out[name] = out.get(name, 0) + amount
    return out


@dataclass(eq=False)
class Workload:
    name: str  # the pod's name, or the pod group's
    queue: str  # LocalQueue
    cluster_queue: str
    priority: int
    timestamp: float  # queue-order timestamp: the simulated submission time
    seq: int  # submission order, the tie-break
    per_pod: dict[str, int]
    template: client.V1Pod  # what flavor matching reads (nodeSelector, affinity, tolerations)
    pods: list[str] = field(default_factory=list)
    topology: tas.TopologyRequest | None = None  # the PodSet's explicit topology request
    plain: bool = True  # one plain pod (not a pod group): Kueue never counts its pod as active
    # admission (status.admission) and what the scheduler remembers between attempts
    usage: dict[FR, int] | None = None
    flavors: dict[str, str] = field(default_factory=dict)  # resource → flavor
    frs: frozenset[FR] = frozenset()  # the flavor-resources it holds quota in
    tas: TASUsage | None = None  # its topology assignment, once admitted on a TAS flavor
    admitted_at: float | None = None
    admission_seq: int = 0  # quota reservation order: the "more recent first" of preemption ordering
    evicted: bool = False  # Evicted=True (a preemption victim still holding its quota)
    stopping: bool = False  # evicted, its pods being deleted: queued again, never started again
    last_tried: dict[str, int] | None = None  # fungibility memory: resource → LastTriedFlavorIdx
    message: str = ""  # why it is pending (the QuotaReserved=False message)

    @property
    def count(self) -> int:
        return len(self.pods)

    def requests(self, covers_pods: bool) -> dict[str, int]:
        """TotalRequests of the single PodSet; `pods` = count when the ClusterQueue covers it."""
        total = {r: v * self.count for r, v in self.per_pod.items()}
        if covers_pods:
            total[PODS] = self.count
        return total

    @property
    def key(self) -> tuple:
        """The ClusterQueue heap's order: higher priority, then older, then submitted first."""
        return (-self.priority, self.timestamp, self.seq)

    def next_flavor(self, resource: str) -> int:
        """NextFlavorToTryForPodSetResource: after the last flavor tried, else the first."""
        if self.last_tried is None:
            return 0
        return self.last_tried.get(resource, -1) + 1

    def pending_flavors(self) -> bool:
        """LastAssignment.PendingFlavors: some resource's flavor walk stopped before its last flavor."""
        return self.last_tried is not None and any(i != -1 for i in self.last_tried.values())


def labels_of(pod: client.V1Pod) -> tuple[str | None, str | None]:
    """(LocalQueue, WorkloadPriorityClass) named by the pod's Kueue labels."""
    labels = pod.metadata.labels or {}
    return labels.get(QUEUE_LABEL), labels.get(PRIORITY_LABEL)


def topology_of(pod: client.V1Pod) -> tas.TopologyRequest | None:
    """The PodSet's topology request from the pod's annotations (jobframework's PodSetTopologyRequest)."""
    notes = pod.metadata.annotations or {}
    if (level := notes.get(REQUIRED_TOPOLOGY)) is not None:
        return tas.TopologyRequest(level, required=True)
    if (level := notes.get(PREFERRED_TOPOLOGY)) is not None:
        return tas.TopologyRequest(level)
    if notes.get(UNCONSTRAINED_TOPOLOGY) == "true":
        return tas.TopologyRequest(None)
    return None
