"""Pod groups on the real backend (`--sync queue`, kube-scheduler 1.37.2 with GenericWorkload on).

The adapter plays the controller's part: it creates the job's PodGroup, then its pods (each naming the
group in spec.schedulingGroup), and deletes the PodGroup once its last pod is gone, so a killed job that
comes back gets its group afresh. kube-scheduler's own queue and group cycle do the rest. The twin beside
it (the shadow, cluster/queued.py) runs its own group cycle on the same state and is judged against what
the real group cycle did: the group placed or not, and each member's node among the twin's best for it,
member after member as the real cycle assumes them (inside the real placement's domain under a topology
constraint).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from kubernetes import client

from batkube_py.cluster.base import BackendError
from batkube_py.scheduler import groupcycle
from batkube_py.scheduler.plugins import gangscheduling as gs
from batkube_py.scheduler.podgroup import topology_key

if TYPE_CHECKING:
    from batkube_py.cluster.queued import QueueCluster
    from batkube_py.scheduler.podgroup import GroupEntity
    from batkube_py.scheduler.podinfo import PodInfo

GROUP_ADD = "scheduling.k8s.io/PodGroupAdd"  # the scheduler's handler labels (ClusterEvent.Label)
GROUP_UPDATE = "scheduling.k8s.io/PodGroupUpdate"
GROUP_DELETE = "scheduling.k8s.io/PodGroupDelete"


class RealGroups:
    def __init__(self, cluster: QueueCluster):
        self.c = cluster
        self.api: client.SchedulingV1beta1Api | None = None
        self.pods_of: dict[str, set[str]] = {}  # group → its pods that exist in the apiserver
        self.group_of: dict[str, str] = {}
        self.unsupported: str | None = None

    def probe(self) -> None:
        """Whether the apiserver serves PodGroups (GenericWorkload and scheduling.k8s.io/v1beta1 on)."""
        self.api = client.SchedulingV1beta1Api(self.c.api)
        try:
            self.c.calls("list pod groups", self.api.list_namespaced_pod_group, self.c.namespace, limit=1)
        except BackendError:
            self.unsupported = (
                "1: the apiserver does not serve scheduling.k8s.io/v1beta1 PodGroups (a control plane "
                "started by batkube 1.37.2 enables GenericWorkload; restart it with `batkube controlplane "
                "down` and `up`)"
            )

    def create(self, group: client.V1beta1PodGroup) -> None:
        c = self.c
        g = copy.deepcopy(group)
        name = g.metadata.name
        g.metadata.namespace = c.namespace
        priority, g.spec.priority = g.spec.priority or 0, None  # resolved by the Priority admission plugin
        if priority:
            g.spec.priority_class_name = c._priority_class(priority)
        self.pods_of.setdefault(name, set())
        c._drain()  # in the order the adapter made them: pods created before, then the group
        c._count(GROUP_ADD)
        c.calls(f"create pod group {name}", self.api.create_namespaced_pod_group, c.namespace, g, ok=(409,))

    def member(self, pod: client.V1Pod) -> None:
        link = pod.spec.scheduling_group
        if link is not None and link.pod_group_name:
            self.pods_of.setdefault(link.pod_group_name, set()).add(pod.metadata.name)
            self.group_of[pod.metadata.name] = link.pod_group_name

    def deleted(self, pod: str) -> None:
        """A member is gone; the group with it once it has no pod left."""
        c = self.c
        group = self.group_of.pop(pod, None)
        if group is None:
            return
        left = self.pods_of.get(group, set())
        left.discard(pod)
        if left:
            return
        del self.pods_of[group]
        c._drain()  # its last member's delete first
        # the podgroup-protection finalizer holds a deleted group until the controller-manager sees no
        # pod naming it; there is none here, so the adapter lifts it (each write is one handler run)
        c._count(GROUP_UPDATE)
        c.calls(f"delete pod group {group}", self.api.delete_namespaced_pod_group, group, c.namespace,
                grace_period_seconds=0, ok=(404,))  # fmt: skip
        c._count(GROUP_DELETE)
        c.calls(f"finalize pod group {group}", self.api.patch_namespaced_pod_group, group, c.namespace,
                {"metadata": {"finalizers": None}}, ok=(404,))  # fmt: skip

    # ---- the shadow's group cycle, judged ---------------------------------------------------------

    def attempt(self, entity: GroupEntity, members: list[PodInfo], twin, now: float):
        """The twin's group queue popped `entity`: what did the real group cycle do with it in this step?
        Returns the real placement [(member, node index)] (empty: the group was not placed), the victims
        its preemption evicts and each member's nominated node."""
        c, shadow = self.c, self.c.shadow
        for m in members:
            c._tried.add(m.name)
        index, names = shadow.nodes.index, shadow.nodes.names
        bound = c._real["bound"]
        placed = [(m, index[bound[m.name]]) for m in members if m.name in bound]
        popped = [m for m in members if m.name in c._real["popped"]]
        p = c.parity
        twin_ok = twin.status == gs.SUCCESS
        if not popped:
            p.timing(now, members[0], "the twin's queue tried it (its group), kube-scheduler's did not",
                     names, None)  # fmt: skip
            return [], (), {}
        if placed:
            self._judge(entity, placed, now)
            key = topology_key(entity.group) if entity.group is not None else None
            if (
                twin_ok
                and key is not None
                and _domain(shadow, key, twin.placed) != _domain(shadow, key, placed)
            ):
                p.ties += 1  # placements scoring alike: upstream picks by rand.Int(), the twin by its seed
            if not twin_ok:
                p.mismatch(now, members[0], "kube-scheduler placed the group, the twin did not",
                        " ".join(names[i] for _, i in placed), twin.message)  # fmt: skip
            return placed, (), {}
        p.failures += 1
        if twin_ok:
            p.mismatch(now, members[0], "the twin placed the group, kube-scheduler did not",
                    "", " ".join(names[i] for _, i in twin.placed))  # fmt: skip
        with c.watch.cond:
            views = {m.name: c.watch.pods.get(m.name) for m in members}
            victims = tuple(v for v, _ in c.watch.evictions)
        nominated = {n: index.get(v.nominated) if v is not None and v.nominated else None
                     for n, v in views.items()}  # fmt: skip
        return [], victims, nominated

    def _judge(self, entity: GroupEntity, placed: list[tuple[PodInfo, int]], now: float) -> None:
        """Each member's real node against the twin's best nodes for it, on the state the real cycle
        had when it tried that member (the members before it assumed)."""
        shadow = self.c.shadow
        nodes = shadow.nodes
        profile = shadow.profiles[placed[0][0].scheduler_name]
        key = topology_key(entity.group) if entity.group is not None else None
        undo = None
        if key is not None:
            values = {nodes.labels[i].get(key) for _, i in placed}
            domain = groupcycle.domains(nodes, key, [i for _, i in placed])
            if len(values) != 1 or not domain:
                self.c.parity.mismatch(now, placed[0][0], "kube-scheduler placed the group across domains",
                                    " ".join(nodes.names[i] for _, i in placed), key)  # fmt: skip
                return
            undo = groupcycle.fence(nodes, next(iter(domain.values())))
        done, nominations = [], []
        try:
            for pod, node in placed:
                decision = profile.schedule_one(pod, nodes)
                self.c.parity.check(pod, decision, shadow, node, now)
                if pod.nominated_node is not None:  # assumed: no longer counted as nominated
                    nominations.append((pod, pod.nominated_node))
                    nodes.nominate(pod, None)
                nodes.assume(node, pod)
                done.append((pod, node))
        finally:
            for pod, node in reversed(done):
                nodes.release(node, pod)
            for pod, node in nominations:
                nodes.nominate(pod, node)
            if undo is not None:
                undo()


def _domain(cluster, key: str, placed) -> set:
    return {cluster.nodes.labels[i].get(key) for _, i in placed}
