"""Pod groups in the twin's queue (kube-scheduler 1.37.2, GenericWorkload on): one entity per PodGroup.

As upstream (backend/queue/scheduling_queue.go, pod_group_member_pods.go): a pod naming a group in
spec.schedulingGroup is never queued alone. Its group's entity waits gated until GangScheduling's
PreEnqueue passes (the group known, minCount pods known), then sorts with PrioritySort on the group's
priority and its timestamp (its first pod's at first), and its pods are tried in member order (priority
desc, attempts desc, timestamp asc, name asc). A group whose cycle fails is never parked unschedulable:
it waits in the error backoff heap, which is not popped early, for min(1 s·2^(n-1), 10 s·sqrt(size)),
the expiry aligned to a whole second, n its unschedulable (or consecutive error) count.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

from kubernetes import client

from batkube_py.scheduler.gated import is_gated
from batkube_py.scheduler.plugins import gangscheduling
from batkube_py.scheduler.podinfo import PodInfo

SCHEDULING_GATES = "waiting for scheduling gates"


def min_count(group: client.V1beta1PodGroup) -> int:
    """The gang's minCount; a basic group counts as 1, as GangScheduling reads it."""
    gang = group.spec.scheduling_policy.gang
    return gang.min_count if gang is not None else 1


def topology_key(group: client.V1beta1PodGroup) -> str | None:
    constraints = group.spec.scheduling_constraints
    if constraints is None or not constraints.topology:
        return None
    return constraints.topology[0].key


def group_of(pod: client.V1Pod) -> str | None:
    """The pod's PodGroup name (spec.schedulingGroup.podGroupName), None for a pod on its own."""
    link = pod.spec.scheduling_group
    return link.pod_group_name if link is not None else None


def member_order(pod: PodInfo) -> tuple:
    """PodGroupMemberPodsOrderingFunc: the order in which the group cycle tries the members."""
    return (-pod.priority, -pod.attempts, pod.timestamp, pod.name)


@dataclass(eq=False)
class GroupEntity:
    """QueuedPodGroupInfo: the queue's view of one PodGroup and its pods waiting to be scheduled."""

    name: str
    group: client.V1beta1PodGroup | None
    members: dict[str, PodInfo] = field(default_factory=dict)
    timestamp: float = 0.0
    seq: int = 0
    unschedulable_count: int = 0
    error_count: int = 0
    backoff_until: float = 0.0
    where: str = "gated"  # gated | active | backoff | inflight
    gate: str | None = "waiting for pods's pod group to appear"

    @property
    def priority(self) -> int:
        return (self.group.spec.priority or 0) if self.group is not None else 0

    @property
    def min_count(self) -> int:
        return min_count(self.group) if self.group is not None else 1

    @property
    def sort_key(self) -> tuple[int, float, int]:
        return (-self.priority, self.timestamp, self.seq)

    def ordered(self) -> list[PodInfo]:
        return sorted(self.members.values(), key=member_order)


def backoff_duration(count: int, size: int, initial: float, maximum: float) -> float:
    """calculateBackoffDuration for a pod group of `size` queued pods (upstream doubles until the cap, so
    a count in the thousands is just the cap, never an overflow)."""
    if count <= 0 or maximum <= 0:
        return 0.0
    cap = maximum * math.sqrt(max(size, 1))
    return min(initial * 2.0 ** min(count - 1, 1000), cap)


class GroupQueue:
    """The group entities: gated, in activeQ (a heap on PrioritySort) or in the error backoff heap."""

    def __init__(self, initial_backoff: float = 1.0, max_backoff: float = 10.0):
        self.initial, self.maximum = initial_backoff, max_backoff
        self.entities: dict[str, GroupEntity] = {}
        self._active: list[tuple[tuple, int, GroupEntity]] = []
        self._backoff: list[tuple[float, int, GroupEntity]] = []
        self._gated: dict[str, int] = {}  # entity → its members held by scheduling gates
        self._n = 0

    def __len__(self) -> int:
        return sum(len(e.members) for e in self.entities.values() if e.where != "inflight")

    def entity(self, name: str) -> GroupEntity:
        if name not in self.entities:
            self.entities[name] = GroupEntity(name, None)
        return self.entities[name]

    def add_group(self, group: client.V1beta1PodGroup, known: int) -> None:
        e = self.entity(group.metadata.name)
        e.group = group
        self.update_gate(e, known)

    def add_member(self, pod: PodInfo, group: str, known: int) -> None:
        e = self.entity(group)
        if not e.members and e.where == "gated":
            e.timestamp, e.seq = pod.timestamp, pod.seq  # the entity's first pod's
        e.members[pod.name] = pod
        if is_gated(pod):
            self._gated[group] = self._gated.get(group, 0) + 1
        self.update_gate(e, known)

    def update_gate(self, e: GroupEntity, known: int) -> None:
        """Run PreEnqueue again (a member or the group arrived: UnscheduledPod/Add, PodGroup/Add; a
        member's gates removed): any member held by SchedulingGates gates the whole entity (gated.py)."""
        e.gate = gangscheduling.pre_enqueue(known, e.min_count, e.group is not None)
        if self._gated.get(e.name):
            e.gate = SCHEDULING_GATES
        if e.where == "gated" and e.gate is None and e.members:
            self._push_active(e)

    def _push_active(self, e: GroupEntity) -> None:
        e.where = "active"
        self._n += 1
        heapq.heappush(self._active, (e.sort_key, self._n, e))

    def _live(self, heap: list, item_where: str) -> None:
        while heap and (heap[0][-1].where != item_where or heap[0][-1].name not in self.entities):
            heapq.heappop(heap)

    def peek(self, now: float) -> GroupEntity | None:
        """The head of activeQ once the backoff heap has been flushed at `now`."""
        self._live(self._backoff, "backoff")
        while self._backoff and self._backoff[0][0] <= now:
            e = heapq.heappop(self._backoff)[2]
            self._push_active(e)
            self._live(self._backoff, "backoff")
        self._live(self._active, "active")
        if self._active and self._active[0][0] != self._active[0][2].sort_key:
            e = heapq.heappop(self._active)[2]  # its sort key changed while queued: push it afresh
            self._push_active(e)
        return self._active[0][2] if self._active else None

    def pop(self) -> GroupEntity:
        e = heapq.heappop(self._active)[2]
        e.where = "inflight"
        for pod in e.members.values():
            pod.attempts += 1
        return e

    def failed(self, e: GroupEntity, now: float, error: bool = False) -> None:
        """AddAttemptedPodGroupIfNeeded, rejected or error: back off in the error heap, never parked."""
        if error:
            e.error_count += 1
        else:
            e.unschedulable_count, e.error_count = e.unschedulable_count + 1, 0
        count = e.error_count or e.unschedulable_count
        e.timestamp = now
        for pod in e.members.values():
            pod.timestamp = now
        expiry = now + backoff_duration(count, len(e.members), self.initial, self.maximum)
        e.backoff_until = math.floor(expiry) + 1.0 if expiry > now else now  # 1-s ordering windows
        if e.backoff_until <= now:
            self._push_active(e)
            return
        e.where = "backoff"
        self._n += 1
        heapq.heappush(self._backoff, (e.backoff_until, self._n, e))

    def succeeded(self, e: GroupEntity, placed: list[str]) -> None:
        """Success: the placed members leave; leftovers go straight back to activeQ, counts reset."""
        for name in placed:
            e.members.pop(name, None)
        e.unschedulable_count = e.error_count = 0
        if e.members:
            self._push_active(e)
        else:
            e.where = "gated"

    def remove_member(self, name: str, group: str) -> bool:
        e = self.entities.get(group)
        if e is None or name not in e.members:
            return False
        if is_gated(e.members.pop(name)):
            self._one_less_gated(group)
        if not e.members and e.where in ("active", "backoff"):
            e.where = "gated"
        return True

    def remove_group(self, name: str) -> None:
        e = self.entities.pop(name, None)
        self._gated.pop(name, None)
        if e is not None:
            e.where = "gone"

    def gated_members(self) -> list[PodInfo]:
        """The members of entities held by scheduling gates (the leftover flush visits them: gated.py)."""
        held = (self.entities.get(g) for g in self._gated)
        return [m for e in held if e is not None for m in e.members.values()]

    def ungated(self, e: GroupEntity, known: int) -> None:
        """A member's scheduling gates were removed."""
        self._one_less_gated(e.name)
        self.update_gate(e, known)

    def _one_less_gated(self, group: str) -> None:
        self._gated[group] -= 1
        if not self._gated[group]:
            del self._gated[group]

    def pending(self) -> list[GroupEntity]:
        return [e for e in self.entities.values() if e.members and e.where != "inflight"]

    def next_wakeup(self) -> float | None:
        self._live(self._backoff, "backoff")
        return self._backoff[0][0] if self._backoff else None
