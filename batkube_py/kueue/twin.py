"""Kueue's admission as one object on the simulated clock: the cache, the queue manager and the scheduler
wired as Kueue's main wires them, driven by the embedded backend (cluster/admission.py).

A preempted plain pod's Workload loses its quota at once and is queued again until its pod is gone
(requeue_evicted). Kueue's scheduler loops forever, one cycle after another. The twin runs cycles at an
instant until a cycle changes nothing (no admission, no new preemption, no workload moved to the
inadmissible set, no flavor walk left half-way): the next cycle would then see the same heads on the same
snapshot and decide the same, as Kueue's own retries do until an event changes the state.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from batkube_py.inputs.queues import QueuesConfig
from batkube_py.kueue.cache.snapshot import Cache
from batkube_py.kueue.queue.manager import Manager
from batkube_py.kueue.scheduler.preemption_common import Target
from batkube_py.kueue.scheduler.scheduler import Scheduler
from batkube_py.kueue.workload import Workload

MAX_CYCLES = 1_000_000  # per instant: a bound no run reaches (each cycle changes something)


@dataclass
class Decisions:
    admitted: list[Workload] = field(default_factory=list)
    preempted: list[Target] = field(default_factory=list)
    cycles: int = 0


class KueueTwin:
    def __init__(self, cfg: QueuesConfig):
        self.cfg = cfg
        self.cache = Cache(cfg)
        strategies = {name: spec.strategy for name, spec in self.cache.specs.items()}
        self.queues = Manager(strategies, self.cache.same_tree)
        self.scheduler = Scheduler(self.cache, self.queues)
        self.workloads: dict[str, Workload] = {}
        self.cycles = 0
        self.observer = None  # kueue/record.py's AdmissionRecorder: the only hooks are in this class

    def priority(self, priority_class: str | None, pod_priority: int) -> int:
        """ExtractPriority: the WorkloadPriorityClass's value, else the pod's priority."""
        if priority_class is not None:
            return self.cfg.priority_classes[priority_class].value
        return pod_priority

    def submit(self, wl: Workload) -> None:
        self.workloads[wl.name] = wl
        self.queues.add(wl)
        if self.observer is not None:
            self.observer.submitted(wl)

    def finish(self, wl: Workload) -> None:
        """The workload's pods are gone: it frees its quota, or leaves its queue; either way the cohort
        tree's inadmissible workloads are retried (the Workload controller's delete and finish handlers
        both call QueueAssociatedInadmissibleWorkloadsAfter)."""
        if self.observer is not None:
            self.observer.finished(wl)
        self.workloads.pop(wl.name, None)
        self.cache.release(wl)
        self.queues.delete(wl)
        self.queues.queue_inadmissible(wl.cluster_queue)

    def requeue_evicted(self, wl: Workload) -> None:
        """The job framework's reconciler on an evicted Workload whose job is no longer active (step 6 of
        pkg/controller/jobframework/reconciler.go): its pod is deleted, its quota reservation cleared and
        the Workload queued again with its creation time; a plain pod is never active (Pod.IsActive reads
        the group's list, empty for a single pod), so this happens at eviction, while the pod is still
        stopping, and the Workload may preempt and be admitted again until its pod is gone (finish)."""
        self.cache.release(wl)
        wl.usage, wl.flavors, wl.frs, wl.admitted_at = None, {}, frozenset(), None
        wl.evicted, wl.stopping, wl.last_tried = False, True, None
        self.queues.add(wl)
        self.queues.queue_inadmissible(wl.cluster_queue)

    def run(self, now: float) -> Decisions:
        out = Decisions()
        self.cache.tas_trees = None
        for _ in range(MAX_CYCLES):
            if not self.queues.has_heads():
                break
            before = self.cache.snapshot() if self.observer is not None else None
            result = self.scheduler.schedule(now)
            self.cycles += 1
            out.cycles += 1
            if self.observer is not None:
                self.observer.cycle(now, result, before)
            # a Workload admitted again while its pod stops starts nothing: not an admission to act on
            out.admitted += [wl for wl in result.admitted if not wl.stopping]
            out.preempted += result.preempted
            for t in result.preempted:
                if t.workload.plain:
                    self.requeue_evicted(t.workload)
            walking = any(e.wl.pending_flavors() and e.status != "assumed" for e in result.entries)
            if not (result.admitted or result.preempted or result.moved_inadmissible or walking):
                break
        return out

    def admitted(self) -> list[Workload]:
        return [wl for wls in self.cache.workloads.values() for wl in wls.values()]

    def pending(self) -> list[Workload]:
        return [wl for q in self.queues.queues.values() for wl in q.pending()]
