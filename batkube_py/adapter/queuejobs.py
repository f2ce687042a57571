"""Jobs for Kueue (`--queues`): a job's LocalQueue and WorkloadPriorityClass as its pods' labels.

A job names its LocalQueue with `queue` (else the workload's top-level `queue`, else the LocalQueue
`default` if the file has one: Kueue's LocalQueueDefaulting) and may name a WorkloadPriorityClass with
`priority_class`, and may ask for topology-aware placement with `topology` ({"required": LEVEL},
{"preferred": LEVEL} or {"unconstrained": true}, LEVEL a nodeLabel of a Topology of the file). Its pods
then carry `kueue.x-k8s.io/queue-name` (and `kueue.x-k8s.io/priority-class`, and the
`kueue.x-k8s.io/podset-*-topology` annotation), which is all Kueue reads of them. A job naming a queue,
class or level the file does not have is rejected on submission, never left pending. Without `--queues`
the fields are ignored, said once in the log and in summary.json.
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

from batkube_py.adapter import podshape, translate
from batkube_py.adapter.outputs import PodRecord
from batkube_py.inputs.queues import (
    PREFERRED_TOPOLOGY,
    PRIORITY_LABEL,
    QUEUE_LABEL,
    REQUIRED_TOPOLOGY,
    UNCONSTRAINED_TOPOLOGY,
    QueuesConfig,
)

# What the owner of a Kueue pod group writes on each member (Kueue's "Run plain Pods as a group")
GROUP_NAME_LABEL = "kueue.x-k8s.io/pod-group-name"
GROUP_COUNT_ANNOTATION = "kueue.x-k8s.io/pod-group-total-count"
RETRIABLE_ANNOTATION = "kueue.x-k8s.io/retriable-in-group"
POD_INDEX_LABEL = "kueue.x-k8s.io/pod-group-pod-index"  # a member's rank (topology ungater)

log = logging.getLogger(__name__)

FIELDS = ("queue", "priority_class", "topology")
TOPOLOGY_KEYS = {"required": REQUIRED_TOPOLOGY, "preferred": PREFERRED_TOPOLOGY}


class QueueJobs:
    def __init__(self, queues: QueuesConfig | None = None, default_queue: str | None = None):
        self.queues = queues
        self.default_queue = default_queue
        self.ignored = 0  # jobs whose queue fields were ignored (no --queues)
        self._labels: dict[str, dict[str, str]] = {}  # job id → its pods' Kueue labels
        self._notes: dict[str, dict[str, str]] = {}  # job id → its pods' Kueue annotations
        self._shapes: weakref.WeakKeyDictionary[podshape.Shape, dict[tuple, podshape.Shape]] = (
            weakref.WeakKeyDictionary()
        )

    def admit(self, record: PodRecord, job: dict[str, Any], shape: podshape.Shape) -> Any:
        """The shape with the job's Kueue labels, or the Rejection saying which field names nothing."""
        queue = job.get("queue", self.default_queue)
        priority_class = job.get("priority_class")
        if self.queues is None:
            if queue is not None or priority_class is not None or "topology" in job:
                if not self.ignored:
                    log.warning("jobs name a Kueue queue, priority class or topology but the run has "
                                "no --queues: the fields are ignored (summary.json: "
                                "queue_fields_ignored)")  # fmt: skip
                self.ignored += 1
            return shape
        lqs = self.queues.local_queues
        if queue is None and "default" in lqs:
            queue = "default"
        if not isinstance(queue, str) or queue not in lqs:
            where = "queue" if "queue" in job or queue is None else "workload.queue"
            names = ", ".join(sorted(lqs)) or "none"
            expected = f"the name of a LocalQueue of {self.queues.path} ({names})"
            if queue is None:
                expected += "; the job has none, nor has its workload, and there is no LocalQueue 'default'"
            return translate.Rejection(record.job_id, where, repr(queue), expected)
        labels = {QUEUE_LABEL: queue}
        if priority_class is not None:
            classes = self.queues.priority_classes
            if not isinstance(priority_class, str) or priority_class not in classes:
                names = ", ".join(sorted(classes)) or "none"
                return translate.Rejection(
                    record.job_id, "priority_class", repr(priority_class),
                    f"the name of a WorkloadPriorityClass of {self.queues.path} ({names})",
                )  # fmt: skip
            labels[PRIORITY_LABEL] = priority_class
        if "topology" in job:
            notes = self._topology(job["topology"])
            if isinstance(notes, str):
                return translate.Rejection(record.job_id, "topology", repr(job["topology"]), notes)
            self._notes[record.job_id] = notes
        record.queue = queue
        record.cluster_queue = lqs[queue].spec.cluster_queue
        self._labels[record.job_id] = labels
        return self.labelled(record.job_id, shape)

    def _topology(self, value: Any) -> dict[str, str] | str:
        """The annotations of a job's `topology` field, or what was expected."""
        assert self.queues is not None
        levels = sorted({lv.node_label for t in self.queues.topologies.values() for lv in t.spec.levels})
        expected = ('{"required": LEVEL}, {"preferred": LEVEL} or {"unconstrained": true}, LEVEL a nodeLabel '
                    f"of a Topology of {self.queues.path} ({', '.join(levels) or 'none'})")  # fmt: skip
        if not isinstance(value, dict) or len(value) != 1:
            return expected
        (key, level), = value.items()
        if key == "unconstrained" and level is True:
            return {UNCONSTRAINED_TOPOLOGY: "true"}
        if key not in TOPOLOGY_KEYS or level not in levels:
            return expected
        return {TOPOLOGY_KEYS[key]: level}

    def labelled(self, job_id: str, shape: podshape.Shape) -> podshape.Shape:
        """`shape` with the job's Kueue labels and annotations (a restarted job's new pods get them too)."""
        labels = self._labels.get(job_id)
        if not labels:
            return shape
        notes = self._notes.get(job_id)
        by_labels = self._shapes.setdefault(shape, {})
        key = (tuple(sorted(labels.items())), tuple(sorted((notes or {}).items())))
        if key not in by_labels:
            by_labels[key] = podshape.with_labels(shape, labels, notes)
        return by_labels[key]

    def forget(self, job_id: str) -> None:
        self._labels.pop(job_id, None)
        self._notes.pop(job_id, None)

    def summary(self) -> dict[str, Any]:
        return {"queues": self.queues.path if self.queues else None, "queue_fields_ignored": self.ignored}


def kueue_group(pod, group: str, size: int) -> None:
    """A gang's member naming a LocalQueue is a member of a Kueue pod group: the group's name and size,
    and not retriable in its group. batkube never replaces one member: a disrupted gang is killed whole
    and comes back as a new job (docs/kueue.md), so Kueue finishes the group once its pods stopped (and
    frees its quota then) rather than waiting for replacement pods. The member's rank (0 here, each
    sibling its own: gangjobs.sibling) lets Kueue's topology ungater hand out a TAS assignment's domains
    in member order, as the twin does, rather than in its informer's list order. No-op for a pod with no
    queue."""
    labels = pod.metadata.labels or {}
    if QUEUE_LABEL not in labels:
        return
    pod.metadata.labels = {**labels, GROUP_NAME_LABEL: group, POD_INDEX_LABEL: "0"}
    pod.metadata.annotations = {**(pod.metadata.annotations or {}), GROUP_COUNT_ANNOTATION: str(size),
                                RETRIABLE_ANNOTATION: "false"}  # fmt: skip
