"""Kueue's side of a run's outputs (--queues): queues.csv, per-queue figures, and the quota invariant.

Whatever backend admits the jobs, the adapter keeps its own account of each ClusterQueue from the
admissions the backend reports and the deletions of the admitted jobs' pods: usage per flavor and
resource on the same quota trees as Kueue's (kueue/cache/resource_node.py). After every admission every
ClusterQueue of its cohort tree must still have non-negative available quota (its nominal quota,
what it may borrow within its borrowing limit and what its cohort lends); a run where it does not
stops with the reason. queues.csv gets one row per ClusterQueue flavor-resource each time that
ClusterQueue's usage or pending count changes.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from batkube_py.adapter.outputs import PodRecord, _CsvLog
from batkube_py.cluster.base import Admission, Eviction
from batkube_py.inputs.queues import QueuesConfig
from batkube_py.kueue.cache import resource_node as rn
from batkube_py.kueue.cache.snapshot import Cache
from batkube_py.kueue.workload import PODS

QUEUE_COLUMNS = ["time", "cluster_queue", "flavor", "resource", "nominal", "usage", "borrowed", "admitted",
                 "pending"]  # fmt: skip


class QuotaViolation(RuntimeError):
    pass


class QueueLog:
    def __init__(self, queues: QueuesConfig | None, directory: Path | None):
        self.cache = Cache(queues) if queues is not None else None
        self._csv = _CsvLog(directory / "queues.csv", QUEUE_COLUMNS) if queues and directory else None
        self._usage: dict[str, tuple[str, dict[rn.FR, int]]] = {}  # job → (ClusterQueue, usage held)
        self._requests: dict[str, tuple[dict[str, int], int]] = {}  # job → (per-pod requests, pods)
        self.pending: dict[str, int] = {}
        self.violation: str | None = None

    def submitted(self, record: PodRecord, per_pod: dict[str, int], count: int) -> None:
        if self.cache is None:
            return
        self._requests[record.job_id] = (per_pod, count)
        self._pending(record.cluster_queue, +1, record)

    def unbound_victims(
        self, evictions: list[Eviction], admissions: list[Admission], record_of: Callable[[str], PodRecord]
    ) -> list[tuple[PodRecord, str]]:
        """Kueue's victims whose pods were deleted before being bound (their jobs get new pods), with why.
        A workload admitted and evicted by the same call never held quota here: its admission is dropped
        from `admissions`."""
        undone = {ev.pod for ev in evictions} & {a.pod for a in admissions}
        admissions[:] = [a for a in admissions if a.pod not in undone]
        out = []
        for ev in evictions:
            record = record_of(ev.pod)
            if record.state == "Pending" and (record.admitted_at != "" or ev.pod in undone):
                out.append((record, ev.reason))
        return out

    def evicted(self, evictions: list[Eviction], record_of: Callable[[str], PodRecord], now: float) -> None:
        """Kueue v0.17.0 frees a preempted plain pod's quota at eviction, while its job is still being
        killed (Pod.IsActive is false for a single pod); a pod group's stays until its pods stop."""
        for ev in evictions:
            record = record_of(ev.pod)
            if "by Kueue" in ev.reason and record.state != "Pending" and not record.group:
                self.released(record, now)

    def take(
        self, admissions: list[Admission], record_of: Callable[[str], PodRecord], now: float
    ) -> str | None:
        """Record Kueue's admissions on their jobs; the quota violation found, if any."""
        for a in admissions:
            record = record_of(a.pod)
            record.queue, record.cluster_queue, record.flavor, record.admitted_at = (
                a.queue, a.cluster_queue, a.flavor, a.at)  # fmt: skip
            self.admitted(record, now)
        return self.violation

    def admitted(self, record: PodRecord, now: float) -> None:
        if self.cache is None or record.job_id not in self._requests:
            return
        cq = record.cluster_queue
        usage = self._usage_of(record)
        self._usage[record.job_id] = (cq, usage)
        for fr, v in usage.items():
            rn.add_usage(self.cache.cqs[cq], fr, v)
        for other in self.cache.same_tree(cq):
            node = self.cache.cqs[other]
            for fr in node.quotas:
                if rn.available(node, fr) < 0 and self.violation is None:
                    used = f"{node.usage.get(fr, 0)} of {fr[1]} in flavor {fr[0]}"
                    self.violation = (
                        f"ClusterQueue {other} uses {used}, more than its quota and borrowing allow, "
                        f"once job {record.job_id} was admitted at {now}"
                    )
        self.pending[cq] = self.pending.get(cq, 0) - 1
        self._rows(cq, now)

    def released(self, record: PodRecord, now: float, requeued: bool = False) -> None:
        """The job's admitted pods are gone; `requeued`: the job waits in its queue again."""
        held = self._usage.pop(record.job_id, None) if self.cache is not None else None
        if held is None:
            return
        cq, usage = held
        for fr, v in usage.items():
            rn.remove_usage(self.cache.cqs[cq], fr, v)
        if requeued:
            self.pending[cq] = self.pending.get(cq, 0) + 1
        self._rows(cq, now)

    def gone(self, record: PodRecord, now: float) -> None:
        """The job left without running (rejected, killed while pending)."""
        if self.cache is not None and record.job_id in self._requests and record.job_id not in self._usage:
            if record.admitted_at == "" and record.cluster_queue:
                self._pending(record.cluster_queue, -1, record, now)
        self._requests.pop(record.job_id, None)

    def _pending(self, cq: str, delta: int, record: PodRecord, now: float | None = None) -> None:
        self.pending[cq] = self.pending.get(cq, 0) + delta
        self._rows(cq, now if now is not None else float(record.submit_time))

    def _usage_of(self, record: PodRecord) -> dict[rn.FR, int]:
        assert self.cache is not None
        per_pod, count = self._requests[record.job_id]
        spec = self.cache.specs[record.cluster_queue]
        requests = {r: v * count for r, v in per_pod.items()}
        if spec.covers_pods:
            requests[PODS] = count
        flavors = record.flavor.split(",")
        used = [g for g in spec.groups if any(r in requests for r in g.covered)]
        out = {}
        for group, flavor in zip(used, flavors, strict=False):
            for r in group.covered:
                if r in requests:
                    out[(flavor, r)] = requests[r]
        return out

    def _rows(self, cq: str, now: float) -> None:
        if self._csv is None or self.cache is None:
            return
        node = self.cache.cqs[cq]
        admitted = sum(1 for c, _ in self._usage.values() if c == cq)
        rows = []
        for fr in sorted(node.quotas):
            used = node.usage.get(fr, 0)
            nominal = node.quotas[fr].nominal
            scale = 1000 if fr[1] == "cpu" else 1
            rows.append((now, cq, fr[0], fr[1], nominal / scale, used / scale, max(0, used - nominal) / scale,
                         admitted, self.pending.get(cq, 0)))  # fmt: skip
        self._csv.write_rows(rows)

    def close(self) -> None:
        if self._csv is not None:
            self._csv.close()


def _stats(values: list[float]) -> dict[str, float]:
    return {"mean": statistics.fmean(values) if values else 0.0, "max": max(values, default=0.0)}


def queue_summary(records: Iterable[PodRecord]) -> dict[str, Any]:
    """Per LocalQueue and per ClusterQueue: jobs, admissions, quota wait (submission to admission) and
    wait (submission to start)."""
    out: dict[str, dict[str, dict[str, Any]]] = {"local_queues": {}, "cluster_queues": {}}
    for kind, attr in (("local_queues", "queue"), ("cluster_queues", "cluster_queue")):
        groups: dict[str, list[PodRecord]] = {}
        for r in records:
            if getattr(r, attr):
                groups.setdefault(getattr(r, attr), []).append(r)
        for name, recs in sorted(groups.items()):
            admitted = [r for r in recs if r.admitted_at != ""]
            quota_waits = [float(r.admitted_at) - float(r.submit_time) for r in admitted]
            waits = [float(r.start_time) - float(r.submit_time) for r in recs if r.start_time != ""]
            out[kind][name] = {
                "jobs": len(recs),
                "admitted": len(admitted),
                "quota_wait": _stats(quota_waits),
                "wait": _stats(waits),
            }
    return out
