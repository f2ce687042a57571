"""The default backend: cluster state and the scheduler twin in-process, on the simulated clock."""

from __future__ import annotations

from kubernetes import client

from batkube_py.cluster.base import Binding, Unschedulable
from batkube_py.scheduler.config import build_profiles, default_config
from batkube_py.scheduler.framework import NODE_UPDATE, POD_ADD, POD_DELETE, Profile
from batkube_py.scheduler.plugins.noderesources import fits
from batkube_py.scheduler.podinfo import PodInfo, pod_info
from batkube_py.scheduler.queue import QueueConfig, SchedulingQueue
from batkube_py.scheduler.record import DecisionRecorder
from batkube_py.scheduler.snapshot import NodeTable


class EmbeddedCluster:
    def __init__(
        self,
        nodes: list[client.V1Node],
        seed: int = 0,
        profiles: list[Profile] | None = None,
        queue_config: QueueConfig | None = None,
        recorder: DecisionRecorder | None = None,
    ):
        self.nodes = NodeTable(nodes)
        self.profiles = {p.scheduler_name: p for p in (profiles or build_profiles(default_config(), seed))}
        registrations = {
            plugin.name: plugin.events_to_register()
            for profile in self.profiles.values()
            for plugin in [*profile.pre_filters, *profile.filters]
        }
        self.queue = SchedulingQueue(queue_config or QueueConfig(), registrations)
        self.pods: dict[str, PodInfo] = {}
        self._running = 0
        self.recorder = recorder

    def serves(self, scheduler_name: str) -> bool:
        return scheduler_name in self.profiles

    def fits_empty_cluster(self, pod: client.V1Pod) -> str | None:
        info = pod_info(pod, "", 0.0, 0)
        t = self.nodes
        if (
            len(t)
            and fits(info.milli_cpu, info.memory, t.alloc_cpu, t.alloc_mem, t.alloc_pods, t.mem_limited).any()
        ):
            return None
        return (
            f"requests cpu={info.milli_cpu}m memory={info.memory}B exceed the allocatable resources of every "
            f"node (largest cpu {int(t.alloc_cpu.max(initial=0))}m)"
        )

    def add_pod(self, pod: client.V1Pod, job_id: str, now: float) -> None:
        info = pod_info(pod, job_id, now, self.queue.next_seq())
        self.pods[info.name] = info
        self.queue.add(info)

    def delete_pod(self, name: str, now: float) -> None:
        info = self.pods.pop(name)
        if info.node is not None:
            self.nodes.release(info.node, info)
            self.queue.event(POD_DELETE, [info.node])
            self._running -= 1
        else:
            self.queue.remove(name)

    def set_nodes_schedulable(self, nodes: list[str], schedulable: bool, now: float) -> None:
        changed = [self.nodes.index[name] for name in nodes]
        for i in changed:
            self.nodes.schedulable[i] = schedulable
        self.queue.event(NODE_UPDATE, changed)

    def schedule(self, now: float) -> list[Binding]:
        bindings = []
        while (pod := self.queue.pop(now, self.nodes)) is not None:
            decision = self.profiles[pod.scheduler_name].schedule_one(
                pod, self.nodes, self.recorder is not None
            )
            if self.recorder is not None:
                self.recorder.write(decision, self.nodes, now, pod.scheduler_name)
            if decision.node is None:
                pod.rejected_by = decision.rejected_by
                self.queue.failed(pod, now)
                continue
            self.nodes.assume(decision.node, pod)
            pod.node = decision.node
            self._running += 1
            self.queue.event(POD_ADD, [decision.node])
            bindings.append(Binding(pod.name, self.nodes.names[decision.node]))
        self.queue.end_cycle()
        return bindings

    def give_up_pending(self, now: float) -> list[Unschedulable]:
        """With nothing running and nothing left to arrive, a pod that fits no node now never will."""
        if self._running:
            return []
        gone = []
        for pod in self.queue.pending():
            feasible, reasons = self.profiles[pod.scheduler_name].diagnose(pod, self.nodes)
            if feasible:
                continue  # backing off, but it will fit: the backend's wake-up brings it back
            self.queue.remove(pod.name)
            del self.pods[pod.name]
            detail = ", ".join(f"{n} {r}" for r, n in sorted(reasons.items()))
            gone.append(Unschedulable(pod.name, f"0/{len(self.nodes)} nodes are available: {detail}"))
        return gone

    def next_wakeup(self) -> float | None:
        return self.queue.next_wakeup()

    def pending(self) -> int:
        return len(self.queue)

    def running(self) -> int:
        return self._running

    def over_allocations(self) -> int:
        return self.nodes.over_allocated()

    def close(self) -> None:
        if self.recorder is not None:
            self.recorder.close()
