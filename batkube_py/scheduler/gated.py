"""Pods held by the SchedulingGates PreEnqueue plugin (plugins/schedulinggates, kube-scheduler 1.37.2).

A pod created with spec.schedulingGates is queued (its queue timestamp is its creation) but PreEnqueue
fails, so it waits among the unschedulable entities, never tried. Removing its last gate is a
TargetPod/UpdatePodSchedulingGatesEliminated update, whose only hint (SchedulingGates') is Queue from a
plugin in the pod's UnschedulablePlugins: queueAfterBackoff, and a pod never tried is not backing off,
so it goes to activeQ keeping its creation timestamp (PriorityQueue.Update, moveToActiveQ).

Gated entities are unschedulable entities too, so the leftover flush visits them: at a 30-s tick when
tick − max(Timestamp, FlushTimestamp) > podMaxInUnschedulablePodsDuration the flush marks
FlushTimestamp = tick and moves them, PreEnqueue gates them again, and nothing else changes (1.37; the
queue of batkube's kube-scheduler main reports those ticks as wake-ups, so the twin's steps are the
same). 1.32 has no FlushTimestamp: a flush there changes nothing, and the twin asks for no such tick.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from batkube_py.scheduler.backoffq import QueueConfig
from batkube_py.scheduler.podinfo import PodInfo


def is_gated(pod: PodInfo) -> bool:
    return bool(pod.pod.spec.scheduling_gates)


def _since(pod: PodInfo) -> float:
    return max(pod.timestamp, pod.flushed_at)


def flush(pods: Iterable[PodInfo], now: float, config: QueueConfig) -> None:
    """The leftover flush of the last tick at or before `now`, on gated pods: its only trace is the mark."""
    if config.kube_version == "1.32":
        return
    period = config.unschedulable_flush_period
    tick = math.floor(now / period) * period
    for pod in pods:
        if tick - _since(pod) > config.max_in_unschedulable:
            pod.flushed_at = tick


def next_flush(pods: Iterable[PodInfo], config: QueueConfig) -> float | None:
    """The first 30-s tick at which the leftover flush visits one of these gated pods."""
    if config.kube_version == "1.32":
        return None
    oldest = min((_since(p) for p in pods), default=None)
    if oldest is None:
        return None
    period = config.unschedulable_flush_period
    return (math.floor((oldest + config.max_in_unschedulable) / period) + 1) * period


class GatedPods:
    """The pods on their own held by a scheduling gate (a pod group's gated members stay in their
    group's entity: podgroup.py)."""

    def __init__(self, config: QueueConfig):
        self.config = config
        self.pods: dict[str, PodInfo] = {}

    def __len__(self) -> int:
        return len(self.pods)

    def add(self, pod: PodInfo) -> None:
        self.pods[pod.name] = pod

    def take(self, name: str) -> PodInfo | None:
        return self.pods.pop(name, None)

    def flush(self, now: float) -> None:
        if self.pods:
            flush(self.pods.values(), now, self.config)

    def next_wakeup(self) -> float | None:
        return next_flush(self.pods.values(), self.config) if self.pods else None
