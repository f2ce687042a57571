"""The default backend: cluster state and the scheduler twin in-process, on the simulated clock."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
from kubernetes import client

from batkube_py.cluster.base import Binding, Eviction, Unschedulable
from batkube_py.cluster.fit import constraint_key, never_fits
from batkube_py.cluster.groups import Groups
from batkube_py.cluster.starttimes import StartTimes
from batkube_py.scheduler.config import build_profiles, default_config
from batkube_py.scheduler.framework import NODE_TAINT, POD_ADD, POD_DELETE, Decision, NodeChange, Profile
from batkube_py.scheduler.nodetree import tree_order
from batkube_py.scheduler.plugins.noderesources import fits
from batkube_py.scheduler.podinfo import PodInfo, pod_info
from batkube_py.scheduler.preemption import preempt
from batkube_py.scheduler.queue import QueueConfig, SchedulingQueue
from batkube_py.scheduler.record import DecisionRecorder
from batkube_py.scheduler.snapshot import NodeTable


@dataclass(frozen=True)
class Outcome:
    """What the scheduler that really decides (cluster/paced.py) did with a pod the queue popped."""

    node: int | None
    nominated: int | None = None  # a failed preemptor's nominated node
    victims: tuple[str, ...] = ()  # the pods its preemption evicts


class Attempts(Protocol):
    def attempt(self, pod: PodInfo, twin: Decision, now: float) -> Outcome:
        """Let the real scheduler try `pod` now, on the state this cluster mirrors; `twin` is the
        twin's own decision for it on that state."""


class EmbeddedCluster:
    """The twin: queue, snapshot and framework. With `attempts`, the queue and its clock stay here but
    each attempt is another scheduler's (the real kube-scheduler, paced by the simulated clock)."""

    def __init__(
        self,
        nodes: list[client.V1Node],
        seed: int = 0,
        profiles: list[Profile] | None = None,
        queue_config: QueueConfig | None = None,
        recorder: DecisionRecorder | None = None,
        attempts: Attempts | None = None,
    ):
        self.attempts = attempts
        self.nodes = NodeTable(tree_order(nodes))  # rows in upstream's snapshot order (nodetree.py)
        self.profiles = {p.scheduler_name: p for p in (profiles or build_profiles(default_config(), seed))}
        registrations = {
            plugin.name: plugin.events_to_register()
            for profile in self.profiles.values()
            for plugin in [*profile.pre_filters, *profile.filters]
        }
        hints = {
            (name, plugin.name): plugin
            for name, profile in self.profiles.items()
            for plugin in [*profile.pre_filters, *profile.filters]
            if plugin.hinted_events
        }
        self.queue = SchedulingQueue(queue_config or QueueConfig(), registrations, hints)
        if mixed := {p.kube_version for p in self.profiles.values()} - {self.kube_version}:
            raise ValueError(f"profiles follow kube-scheduler {sorted(mixed)}, the queue {self.kube_version}")
        self.pods: dict[str, PodInfo] = {}
        self._running = 0
        self.recorder = recorder
        self._evictions: list[Eviction] = []
        self._too_big: dict[tuple, str | None] = {}
        self.groups = Groups(self)
        # the kubelet's startTime writes of a 1.37 run (starttimes.py), replayed as node cache touches;
        # another scheduler's shadow is told of them (cluster/queued.py)
        self._start_times = StartTimes() if attempts is None and self.kube_version != "1.32" else None

    def supports_groups(self) -> bool:
        """Pod groups are the twin's own: another scheduler deciding each attempt (paced) has none here."""
        return self.attempts is None

    def add_pod_group(self, group: client.V1beta1PodGroup, now: float) -> None:
        self.groups.add_group(group)

    def group_never_fits(self, pod: client.V1Pod, group: client.V1beta1PodGroup) -> str | None:
        return self.groups.never_fits(pod, group)

    def serves(self, scheduler_name: str) -> bool:
        return scheduler_name in self.profiles

    def fits_empty_cluster(self, pod: client.V1Pod) -> str | None:
        """Cached per request shape and node constraint: workloads repeat a few, and neither allocatable
        nor node labels change."""
        key = (tuple(sorted((pod.spec.containers[0].resources.requests or {}).items())), constraint_key(pod))
        if key not in self._too_big:
            self._too_big[key] = self._too_big_for_every_node(pod)
        return self._too_big[key]

    def _too_big_for_every_node(self, pod: client.V1Pod) -> str | None:
        info = pod_info(pod, "", 0.0, 0)
        t = self.nodes
        ok = fits(info.milli_cpu, info.memory, t.alloc_cpu, t.alloc_mem, t.alloc_pods, t.mem_limited)
        for name, amount in info.extended.items():
            ok &= t.alloc_ext[name] >= amount if name in t.alloc_ext else False
        most = {k: int(t.alloc_ext[k].max(initial=0)) if k in t.alloc_ext else 0 for k in info.extended}
        extra = [
            f"extended resource {k}={v} exceeds every node's (max {most[k]})"
            for k, v in sorted(info.extended.items())
            if v > most[k]
        ]
        mem = np.where(t.mem_limited, t.alloc_mem, np.inf)
        rooms = list(zip(t.alloc_cpu.tolist(), mem.tolist(), t.alloc_pods.tolist(), strict=True))
        return never_fits(pod, t, ok, rooms, extra)

    def add_pod(self, pod: client.V1Pod, job_id: str, now: float) -> None:
        if self._start_times is not None:
            for bound, _ in self._start_times.pod_added(pod.spec.priority or 0):
                self.touch(bound)
        if self.groups.add_pod(pod, job_id, now):
            return
        info = pod_info(pod, job_id, now, self.queue.next_seq())
        self.pods[info.name] = info
        (self.queue.gated.add if pod.spec.scheduling_gates else self.queue.add)(info)

    def supports_gates(self) -> bool:
        return True

    def ungate_pod(self, name: str, now: float) -> None:
        """The pod's scheduling gates removed (an update of the pod: scheduler/gated.py)."""
        if (pod := self.pods.get(name)) is None or not pod.pod.spec.scheduling_gates:
            return
        pod.pod.spec.scheduling_gates = None
        if not self.groups.ungate(name):
            self.queue.ungate(name)

    def delete_pod(self, name: str, now: float) -> None:
        info = self.pods.pop(name)
        if self._start_times is not None:
            self._start_times.gone(name)
        self.nominate(info, None)  # 1.37: deletePodFromSchedulingQueue's move for a nominated pod
        if info.node is not None:
            self.nodes.release(info.node, info)
            self.queue.event(POD_DELETE, [info.node], [info])
            self._running -= 1
        else:
            self.queue.remove(name)
        self.groups.delete_pod(name)

    def set_nodes_schedulable(self, nodes: list[str], schedulable: bool, now: float) -> None:
        """Cordon or uncordon: upstream classes a spec.unschedulable change as UpdateNodeTaint, and a
        node whose schedulability does not change raises no event."""
        changed = [
            i for i in (self.nodes.index[name] for name in nodes) if self.nodes.schedulable[i] != schedulable
        ]
        t = self.nodes
        objects = [
            NodeChange(
                i,
                not schedulable,
                schedulable,
                tuple(t.taints[i]),
                tuple(t.taints[i]),
                t.labels[i],
                t.labels[i],
            )
            for i in changed
        ]
        for i in changed:
            t.set_schedulable(i, schedulable)
        if changed:
            self.queue.event(NODE_TAINT, changed, objects)

    def schedule(self, now: float) -> list[Binding]:
        bindings = []
        while True:
            pod = self.queue.pop(now, self.nodes)
            group = self.groups.head(now)
            if group is not None and (pod is None or group.sort_key < pod.sort_key):
                if pod is not None:
                    self.queue.add(pod)  # back to activeQ: the group entity sorts first
                bindings.extend(self.groups.schedule(now))
                continue
            if pod is None:
                break
            profile = self.profiles[pod.scheduler_name]
            decision = profile.schedule_one(pod, self.nodes, self.recorder is not None)
            if len(self.profiles) > 1:  # nextStartNodeIndex is the Scheduler's, not a profile's
                for other in self.profiles.values():
                    other.next_start = profile.next_start
            if self.recorder is not None:
                self.recorder.write(decision, self.nodes, now, profile)
            outcome = None if self.attempts is None else self.attempts.attempt(pod, decision, now)
            node = decision.node if outcome is None else outcome.node
            if node is None:
                if outcome is None:
                    pod.rejected_by = decision.rejected_by
                    self._post_filter(profile, pod)
                else:  # the twin's rejectors; all filters if it disagrees (any event may then help)
                    pod.rejected_by = decision.rejected_by if decision.node is None else profile.filter_names
                    self.mirror_preemption(pod, outcome)
                self.queue.failed(pod, now)
                continue
            self.nodes.nominate(pod, None)
            self.nodes.assume(node, pod)
            pod.node, pod.bound_at = node, now
            self._running += 1
            self.queue.event(POD_ADD, [node], [pod])
            bindings.append(Binding(pod.name, self.nodes.names[node]))
        self.queue.end_cycle()
        if self._start_times is not None:
            for name in self._start_times.step_bound([b.pod for b in bindings], now):
                self.touch(name)
        return bindings

    def touch(self, name: str) -> None:
        """An update event of a bound pod (a status write): it moves to the end of its node's pods."""
        pod = self.pods.get(name)
        if pod is not None and pod.node is not None:
            self.nodes.touch(pod.node, pod)

    def bind(self, name: str, node: int, now: float) -> None:
        """Mirror a binding another scheduler made without this queue popping the pod (cluster/queued.py)."""
        pod = self.pods[name]
        self.queue.remove(name)
        self.groups.mirror_bound(name)
        self.nodes.nominate(pod, None)
        self.nodes.assume(node, pod)
        pod.node, pod.bound_at = node, now
        self._running += 1
        self.queue.event(POD_ADD, [node], [pod])

    def _post_filter(self, profile: Profile, pod: PodInfo) -> None:
        """DefaultPreemption (PostFilter), with upstream's bookkeeping of nominations.

        A pod nominated to a node where a lower-priority victim is still terminating waits for it
        (PodEligibleToPreemptOthers) and keeps its nomination. Otherwise a pod whose preemption finds
        no candidate drops its nomination; one that finds a node is nominated there, evicts the victims
        not already terminating, and the lower-priority pods nominated to that node lose their
        nomination (prepareCandidate).
        """
        if profile.preemption is None or pod.pod.spec.preemption_policy == "Never":
            return
        if pod.nominated_node is not None and any(
            p.terminating and p.priority < pod.priority
            for p in self.nodes.pods_on[pod.nominated_node].values()
        ):
            return
        found = preempt(profile, pod, self.nodes)
        if found is None:
            self.nominate(pod, None)
            return
        self.evict_victims(found.victims, pod.name, pod.priority)
        self.clear_lower_nominations(found.node, pod.priority)
        self.nominate(pod, found.node)

    def mirror_preemption(self, pod: PodInfo, outcome: Outcome) -> None:
        """The real PostFilter's bookkeeping, mirrored: victims terminating, the lower-priority pods
        nominated to the node lose their nomination, the preemptor takes the nomination it was given."""
        self.mark_terminating(outcome.victims)
        preempted = outcome.victims or outcome.nominated != pod.nominated_node
        if outcome.nominated is not None and preempted:
            self.clear_lower_nominations(outcome.nominated, pod.priority)
        self.nominate(pod, outcome.nominated)

    def note_bound(self) -> None:
        self._running += 1

    def evict_victims(self, victims: list[PodInfo], preemptor: str, priority: int) -> None:
        """Preemption's victims terminate (once) and leave when Batsim reports them killed."""
        self.groups.recount()
        for victim in victims:
            if not victim.terminating:
                victim.terminating = True
                self.touch(victim.name)  # DisruptionTarget, then the deletion timestamp: updates
                why = f"preempted by {preemptor} (priority {priority} > {victim.priority})"
                self._evictions.append(Eviction(victim.name, why))

    def mark_terminating(self, names) -> None:
        """Victims another scheduler's preemption chose (cluster/queued.py mirrors it): the real cluster
        evicts them, this one only stops counting them."""
        self.groups.recount()
        for name in names:
            if (victim := self.pods.get(name)) is not None and not victim.terminating:
                victim.terminating = True
                self.touch(name)  # DisruptionTarget, then the deletion timestamp: updates

    def clear_lower_nominations(self, node: int, priority: int) -> None:
        """prepareCandidate: pods of lower priority nominated to the preempted node lose their nomination."""
        for other in list(self.nodes.nominated.get(node, {}).values()):
            if other.priority < priority:
                self.nominate(other, None)

    def nominate(self, pod: PodInfo, node: int | None) -> None:
        """Set or clear an unbound pod's nominated node. 1.37 (eventhandlers.go): when a nominated node is
        left — the nomination changed (updatePodInSchedulingQueue, hasNominatedNodeNameChanged) or the
        pod was deleted (deletePodFromSchedulingQueue) — pods of lower or equal priority, which counted
        the pod as assigned there, get an AssignedPodDelete move on it; 1.32 raised none."""
        old = pod.nominated_node
        self.nodes.nominate(pod, node)
        if old is not None and old != node and pod.node is None and self.kube_version != "1.32":
            self.queue.event(POD_DELETE, [old], [pod], max_priority=pod.priority)

    def take_evictions(self) -> list[Eviction]:
        out, self._evictions = self._evictions, []
        return out

    def give_up_pending(self, now: float) -> list[Unschedulable]:
        """With nothing running and nothing left to arrive, a pod that fits no node now never will (pods
        bound to a basic group still waiting for the rest do not run: holding nodes, they can deadlock)."""
        if self._running > self.groups.held():
            return []
        stuck = self.groups.stuck()
        hopeless = []
        for pod in self.queue.pending():
            feasible, reasons = self.profiles[pod.scheduler_name].diagnose(pod, self.nodes)
            if feasible:
                return []  # backing off, but it will fit: the backend's wake-up brings it back
            hopeless.append((pod, reasons))
        if stuck is None:
            return []  # a group will fit at its wake-up, and what it frees later may hold these
        gone = self.groups.give_up(stuck)
        for pod, reasons in hopeless:
            self.queue.remove(pod.name)
            del self.pods[pod.name]
            detail = ", ".join(f"{n} {r}" for r, n in sorted(reasons.items()))
            gone.append(Unschedulable(pod.name, f"0/{len(self.nodes)} nodes are available: {detail}"))
        return gone

    def next_wakeup(self) -> float | None:
        wakes = [w for w in (self.queue.next_wakeup(), self.groups.next_wakeup()) if w is not None]
        return min(wakes) if wakes else None

    def pending(self) -> int:
        return len(self.queue) + self.groups.pending()

    def running(self) -> int:
        return self._running

    def report(self) -> dict:
        return {"twin_kube_version": self.kube_version}

    @property
    def kube_version(self) -> str:
        """The kube-scheduler release the twin follows (versions.py): its queue's, as its profiles'."""
        return self.queue.config.kube_version

    def over_allocations(self) -> int:
        return self.nodes.over_allocated()

    def close(self, interrupted: bool = False) -> None:
        if self.recorder is not None:
            self.recorder.close()
