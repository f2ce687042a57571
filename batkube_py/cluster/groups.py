"""The twin's pod groups: PodGroup objects, their queue entities and the group cycle on the cluster.

The embedded cluster hands every pod naming a PodGroup here. A group's cycle assumes its pods for real
only when the group algorithm succeeds; GangScheduling's Permit then allows every member at once (the
cycle succeeds only with minCount placed), so members bind in member order at the same instant. A
failed group may preempt (PodGroupPostFilter) and backs off as a group.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubernetes import client

from batkube_py.cluster.base import Binding, Unschedulable
from batkube_py.scheduler import gated, groupcycle, groupfit
from batkube_py.scheduler.framework import POD_ADD
from batkube_py.scheduler.grouppreemption import ongoing, preempt_group
from batkube_py.scheduler.plugins import gangscheduling as gs
from batkube_py.scheduler.podgroup import GroupEntity, GroupQueue, group_of, min_count, topology_key
from batkube_py.scheduler.podinfo import PodInfo, pod_info

if TYPE_CHECKING:
    from batkube_py.cluster.embedded import EmbeddedCluster


class Groups:
    def __init__(self, cluster: EmbeddedCluster):
        self.cluster = cluster
        cfg = cluster.queue.config
        self.queue = GroupQueue(cfg.pod_initial_backoff, cfg.pod_max_backoff)
        self.objects: dict[str, client.V1beta1PodGroup] = {}
        self.member_of: dict[str, str] = {}  # pod name → group name, every pod the scheduler knows
        self.pods_of: dict[str, set[str]] = {}  # group name → its pods the scheduler knows
        self.messages: dict[str, str] = {}  # group → why its last cycle failed (explain, give-up)
        # AllPodsCount by group, kept while pods only arrive: a group's members arrive one by one, and
        # recounting for each made adding a 128-pod group quadratic
        self._known: dict[str, int] = {}
        self._tried = 0  # the group cycle's place among the instant's tries (its queue order if it fails)

    def known(self, group: str) -> int:
        """AllPodsCount: the group's non-terminal pods the scheduler knows, bound ones included."""
        n = self._known.get(group)
        if n is None:
            pods = self.cluster.pods
            n = sum(1 for p in self.pods_of.get(group, ()) if p in pods and not pods[p].terminating)
            self._known[group] = n
        return n

    def recount(self) -> None:
        """A pod left or began terminating: counts are taken afresh."""
        self._known.clear()

    def add_group(self, group: client.V1beta1PodGroup) -> None:
        self.objects[group.metadata.name] = group
        self.queue.add_group(group, self.known(group.metadata.name))

    def add_pod(self, pod: client.V1Pod, job_id: str, now: float) -> bool:
        """Take the pod if it belongs to a group (False: a pod on its own, for the pod queue)."""
        name = group_of(pod)
        if name is None:
            return False
        info = pod_info(pod, job_id, now, self.cluster.queue.next_seq())
        members = self.pods_of.setdefault(name, set())
        if info.name in members or info.name in self.cluster.pods:
            self._known.pop(name, None)
        elif name in self._known:
            self._known[name] += 1
        self.cluster.pods[info.name] = info
        self.member_of[info.name] = name
        members.add(info.name)
        self.queue.add_member(info, name, self.known(name))
        return True

    def delete_pod(self, name: str) -> None:
        self.recount()
        group = self.member_of.pop(name, None)
        if group is None:
            return
        self.queue.remove_member(name, group)
        self.pods_of[group].discard(name)
        if not self.pods_of[group]:
            del self.pods_of[group]
            self.queue.remove_group(group)
            self.objects.pop(group, None)
            self.messages.pop(group, None)

    def ungate(self, name: str) -> bool:
        """A member's scheduling gates removed: PreEnqueue runs again for its entity (False: not a member)."""
        if (group := self.member_of.get(name)) is None:
            return False
        if (entity := self.queue.entities.get(group)) is not None and name in entity.members:
            self.queue.ungated(entity, self.known(group))
        return True

    def head(self, now: float) -> GroupEntity | None:
        gated.flush(self.queue.gated_members(), now, self.cluster.queue.config)
        return self.queue.peek(now)

    def schedule(self, now: float) -> list[Binding]:
        """One group cycle for the head of the group activeQ (popped)."""
        c = self.cluster
        entity = self.queue.pop()
        self._tried = c.queue.group_tried()
        members = entity.ordered()
        profile = c.profiles[members[0].scheduler_name]
        if len({m.scheduler_name for m in members}) > 1 or any(
            m.priority != entity.priority for m in members
        ):
            self.messages[entity.name] = (
                "SchedulerError: members disagree with the group on scheduler or priority"
            )
            self._failed(entity, now, error=True)
            return []
        pods = [c.pods[p] for p in self.pods_of.get(entity.name, ())]
        bound = [p.node for p in pods if p.node is not None]
        key = topology_key(entity.group) if entity.group is not None else None

        def algorithm() -> groupcycle.GroupResult:
            if key is None:
                return groupcycle.default_algorithm(profile, members, c.nodes, len(bound), entity.min_count)
            return groupcycle.placement_algorithm(profile, members, c.nodes, bound, entity.min_count, key)

        if (
            c.recorder is None
            and key is None
            and groupcycle.first_stops_it(members, c.nodes, len(bound), entity.min_count)
        ):
            result = groupcycle.GroupResult(
                gs.UNSCHEDULABLE, message=groupcycle.no_room_message(members[0], entity.min_count)
            )
        else:
            result = algorithm()
        if c.recorder is not None:
            c.recorder.write_line(self._attempt(entity, members, result, now))
        if c.attempts is not None:
            return self._mirror(entity, members, result, now)
        if result.status != gs.SUCCESS:
            self.messages[entity.name] = result.message
            for m in members:
                if m.name in result.failures:
                    m.rejected_by = result.failures[m.name].rejected_by
            self._post_filter(profile, entity, members, algorithm)
            self._failed(entity, now)
            return []
        self.messages.pop(entity.name, None)
        if gs.permit(len(bound) + len(result.placed), entity.min_count) != gs.SUCCESS:
            raise AssertionError("a group cycle succeeded short of minCount")  # placement_feasible forbids it
        return self._bind(entity, result.placed, now)

    def _bind(self, entity: GroupEntity, placed: list[tuple[PodInfo, int]], now: float) -> list[Binding]:
        c = self.cluster
        bindings = []
        for pod, node in placed:
            c.nodes.nominate(pod, None)  # bound: no move for pods it held back (inBinding, eventhandlers.go)
            c.nodes.assume(node, pod)
            pod.node, pod.bound_at = node, now
            c.note_bound()
            c.queue.event(POD_ADD, [node], [pod])
            bindings.append(Binding(pod.name, c.nodes.names[node]))
        self.queue.succeeded(entity, [p.name for p, _ in placed])
        return bindings

    def _mirror(self, entity: GroupEntity, members: list[PodInfo], twin, now: float) -> list[Binding]:
        """Another scheduler decides (the real kube-scheduler, cluster/queued.py): its group cycle's
        outcome is judged against the twin's and mirrored, so both go on from the real state."""
        c = self.cluster
        placed, victims, nominated = c.attempts.attempt_group(entity, members, twin, now)
        if placed:
            self.messages.pop(entity.name, None)
            return self._bind(entity, placed, now)
        self.messages[entity.name] = twin.message or "pod group is unschedulable"
        c.mark_terminating(victims)
        for m in members:
            if m.name in nominated:
                c.nominate(m, nominated[m.name])
        self._failed(entity, now)
        return []

    def _failed(self, entity: GroupEntity, now: float, error: bool = False) -> None:
        self.queue.failed(entity, now, error)
        self.cluster.queue.group_failed(self._tried, entity)

    def mirror_bound(self, name: str) -> None:
        """A member bound by another scheduler while this queue did not pop its group: out of its entity."""
        if (group := self.member_of.get(name)) is not None:
            self.queue.remove_member(name, group)

    def _attempt(self, entity: GroupEntity, members: list[PodInfo], result, now: float) -> dict:
        """The group cycle's line in decisions.jsonl: the group as one attempt, each member's outcome."""
        c = self.cluster
        placed = {p.name: c.nodes.names[i] for p, i in result.placed}
        first = next(iter(result.failures.values()), None)
        return {
            "time": now,
            "pod": entity.name,
            "job_id": members[0].job_id,
            "profile": members[0].scheduler_name,
            "attempt": members[0].attempts,
            "result": "bound" if result.status == gs.SUCCESS else "unschedulable",
            "nodes": len(c.nodes),
            "feasible": len(placed),
            "reasons": first.reasons if first is not None else {},
            "rejected_by": sorted(first.rejected_by) if first is not None else [],
            "group": entity.name,
            "min_count": entity.min_count,
            "message": result.message,
            "members": {m.name: placed.get(m.name) for m in members},
        }

    def _post_filter(self, profile, entity: GroupEntity, members: list[PodInfo], algorithm) -> None:
        c = self.cluster
        if ongoing(members, c.nodes, entity.priority):
            return
        found = preempt_group(profile, members, c.nodes, entity.priority, algorithm)
        if found is None:
            for m in members:
                c.nominate(m, None)
            return
        c.evict_victims(found.victims, f"pod group {entity.name}", entity.priority)
        for pod, node in found.nominations:
            c.clear_lower_nominations(node, entity.priority)
            c.nominate(pod, node)

    def stuck(self) -> list[tuple[GroupEntity, str]] | None:
        """With nothing running and nothing left to arrive: every pending group and why it never runs
        (still gated, or the cluster as it is cannot hold the rest of it: groupfit.capacity), or None
        when one of them will fit at its backoff's wake-up (it then changes the cluster)."""
        c = self.cluster
        stuck = []
        for entity in self.queue.pending():
            why = entity.gate
            if why is None:
                first = entity.ordered()[0]
                profile = c.profiles[first.scheduler_name]
                key = topology_key(entity.group) if entity.group is not None else None
                room = groupfit.capacity(profile, first, c.nodes, key, empty=False)
                bound = self.known(entity.name) - len(entity.members)
                if bound + room >= entity.min_count and room >= len(entity.members):
                    return None
                # a basic group holding nodes without room for the rest never starts its job either
                why = self.messages.get(entity.name) or "pod group is unschedulable"
                why = f"{why} (the nodes hold {room} of its {len(entity.members)} unbound pods)"
            stuck.append((entity, why))
        return stuck

    def give_up(self, stuck: list[tuple[GroupEntity, str]]) -> list[Unschedulable]:
        self.recount()
        gone = []
        for entity, why in stuck:
            for name in list(entity.members):
                gone.append(Unschedulable(name, f"pod group {entity.name}: {why}"))
                self.cluster.pods.pop(name, None)
                self.delete_pod(name)
        return gone

    def never_fits(self, pod: client.V1Pod, group: client.V1beta1PodGroup) -> str | None:
        """Why the group can never run on this cluster (its members shaped like `pod`), or None."""
        info = pod_info(pod, "", 0.0, 0)
        profile = self.cluster.profiles.get(pod.spec.scheduler_name)
        if profile is None:
            return None
        key = topology_key(group)
        room = groupfit.capacity(profile, info, self.cluster.nodes, key, empty=True)
        want = min_count(group)
        if room >= want:
            return None
        where = f"any one domain of {key!r}" if key is not None else "the whole cluster"
        per = " (one pod per node)" if groupfit.one_per_node(info) else ""
        return f"a group the cluster can hold, but {where} holds {room} of its {want} pods{per}"

    def next_wakeup(self) -> float | None:
        config = self.cluster.queue.config
        wakes = [self.queue.next_wakeup(), gated.next_flush(self.queue.gated_members(), config)]
        return min((w for w in wakes if w is not None), default=None)

    def pending(self) -> int:
        return len(self.queue)

    def held(self) -> int:
        """Bound pods of groups still waiting for others (basic groups): bound, yet their job not running."""
        return sum(self.known(e.name) - len(e.members) for e in self.queue.pending())
