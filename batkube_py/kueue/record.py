"""Why Kueue's twin admitted a workload when it did: admissions.jsonl, beside decisions.jsonl.

`batkube run --queues ... --record-decisions` streams one JSON line per change in a workload's admission
story: submitted (its position in its ClusterQueue), each attempt as a ClusterQueue head whose outcome
differs from its previous one (Kueue's own pending message, each flavor considered, the quota short,
the victims chosen), a `repeated` line counting the identical attempts in between (and what woke the
workload from the inadmissible set), each eviction by preemption (preempted by whom, why). A head that
fails the same way at every cycle costs one counter, not a line, so a whole trace stays small.
The texts are Kueue v0.17.0's (pkg/scheduler/scheduler.go, flavorassigner, preemption/preemption.go).
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from batkube_py.kueue.cache import resource_node as rn
from batkube_py.kueue.cache.snapshot import Snapshot
from batkube_py.kueue.queue.cluster_queue import STRICT
from batkube_py.kueue.scheduler.scheduler import ASSUMED, CycleResult, Entry
from batkube_py.kueue.twin import KueueTwin
from batkube_py.kueue.workload import Workload
from batkube_py.quantities import kueue_text

ADMISSIONS_FILE = "admissions.jsonl"

# preemption.go's HumanReadablePreemptionReasons
HUMAN_REASONS = {
    "InClusterQueue": "prioritization in the ClusterQueue",
    "InCohortReclamation": "reclamation within the cohort",
    "InCohortFairSharing": "Fair Sharing within the cohort",
    "InCohortReclaimWhileBorrowing": "reclamation within the cohort while borrowing",
}


@dataclass
class _Run:
    """The last attempt written for a workload, and the identical ones since."""

    signature: tuple
    since: float
    last: float
    count: int = 0
    wakes: int = 0
    woken: str = ""


def cq_path(twin: KueueTwin, cq: str) -> str:
    """buildCQPath: /root-cohort/.../cluster-queue."""
    node = twin.cache.cqs[cq]
    return "/" + "/".join([*(a.name for a in reversed(list(node.path_to_root()))), cq])


def considered_text(considered: list[tuple[str, str, int, tuple[str, ...]]]) -> str:
    """FormatFlavorAssignmentAttemptsForEvents for the single pod set: the flavors that did not simply fit."""
    parts = []
    for name, mode, borrow, reasons in sorted(considered):
        if mode == "Fit" and borrow == 0:
            continue
        text = mode if mode in ("Fit", "NoFit") else f"preemptionMode={mode}"
        text += f";borrow={borrow}" if borrow > 0 else ""
        text += "".join(f";{r}" for r in reasons)
        parts.append(f"{name}({text})")
    return f"main: {', '.join(parts)}" if parts else ""


class AdmissionRecorder:
    """The Kueue twin's observer (KueueTwin.observer); one instance per run."""

    def __init__(self, path: Path, twin: KueueTwin):
        self.path, self.twin = path, twin
        self._file: IO[str] = path.open("w")
        self._keys: dict[str, list[tuple]] = {cq: [] for cq in twin.cache.cqs}  # pending, in heap order
        self._runs: dict[str, _Run] = {}
        self._woken: dict[str, str] = {}
        self.count = 0
        twin.observer = self

    def _write(self, line: dict) -> None:
        self._file.write(json.dumps(line, separators=(",", ":")) + "\n")
        self.count += 1

    def _position(self, wl: Workload) -> tuple[int, int]:
        """(rank in its ClusterQueue's order among the pending workloads, how many are pending)."""
        keys = self._keys[wl.cluster_queue]
        return bisect.bisect_left(keys, wl.key) + 1, len(keys)

    def _unqueue(self, wl: Workload) -> None:
        keys = self._keys[wl.cluster_queue]
        i = bisect.bisect_left(keys, wl.key)
        if i < len(keys) and keys[i] == wl.key:
            del keys[i]

    # ---- hooks --------------------------------------------------------------------------------------

    def submitted(self, wl: Workload) -> None:
        bisect.insort(self._keys[wl.cluster_queue], wl.key)
        self._runs.pop(wl.name, None)
        position, pending = self._position(wl)
        strategy = self.twin.cache.specs[wl.cluster_queue].strategy
        self._write({"time": wl.timestamp, "event": "submitted", "workload": wl.name, "queue": wl.queue,
                     "cluster_queue": wl.cluster_queue, "priority": wl.priority, "position": position,
                     "pending": pending, "strategy": strategy})  # fmt: skip

    def finished(self, wl: Workload) -> None:
        """Before the twin requeues the cohort tree's inadmissible workloads: they are woken by this."""
        self._flush(wl.name)
        self._unqueue(wl)
        self._woken.pop(wl.name, None)
        if wl.evicted:
            cause = f"{wl.name} was evicted from ClusterQueue {wl.cluster_queue}, freeing its quota"
        elif wl.usage is not None:
            cause = f"{wl.name} finished in ClusterQueue {wl.cluster_queue}, freeing its quota"
        else:
            cause = f"{wl.name} left ClusterQueue {wl.cluster_queue} unadmitted"
        for name in self.twin.cache.same_tree(wl.cluster_queue):
            for waiting in self.twin.queues.queues[name].inadmissible:
                self._woken[waiting] = cause

    def cycle(self, now: float, result: CycleResult, before: Snapshot) -> None:
        for wl in result.admitted:
            self._unqueue(wl)
        fresh = {id(t) for t in result.preempted}
        for order, e in enumerate(sorted(result.entries, key=lambda e: e.order), 1):
            self._attempt(now, e, order, len(result.entries), before)
            for t in e.targets:
                if id(t) in fresh:
                    self._evicted(now, e.wl, t.workload, t.reason)

    def close(self) -> None:
        for name in list(self._runs):
            self._flush(name)
        self._file.close()

    # ---- lines --------------------------------------------------------------------------------------

    def _attempt(self, now: float, e: Entry, order: int, heads: int, before: Snapshot) -> None:
        wl, a = e.wl, e.assignment
        admitted = e.status == ASSUMED
        queue = self.twin.queues.queues[wl.cluster_queue]
        requeued = "" if admitted else ("inadmissible" if wl.name in queue.inadmissible else "heap")
        targets = [[t.workload.name, t.workload.cluster_queue, t.reason] for t in e.targets]
        outcome = "Admitted" if admitted else e.reason
        signature = (outcome, e.message, tuple(map(tuple, targets)), requeued)
        woken = self._woken.pop(wl.name, "")
        run = self._runs.get(wl.name)
        if run is not None and run.signature == signature:
            run.count, run.last = run.count + 1, now
            if woken:
                run.wakes, run.woken = run.wakes + 1, woken
            return
        self._flush(wl.name)
        self._runs[wl.name] = _Run(signature, now, now)
        position, pending = self._position(wl)
        spec = self.twin.cache.specs[wl.cluster_queue]
        line = {"time": now, "event": "attempt", "workload": wl.name, "cluster_queue": wl.cluster_queue,
                "cycle": self.twin.cycles, "order": order, "heads": heads, "position": position,
                "pending": pending + admitted, "strategy": spec.strategy, "outcome": outcome}  # fmt: skip
        if admitted:
            waited = now - wl.timestamp
            line["message"] = (
                f"Quota reserved in ClusterQueue {wl.cluster_queue}, wait time since queued was {waited:.0f}s"
            )
            if considered := considered_text(a.considered):
                line["message"] += f"; Flavors considered: {considered}"
        else:
            line["message"] = e.message
        if a.flavors and outcome in ("Admitted", "PendingPreemption"):
            line["assigned"] = {r: f for r, (f, _, _) in a.flavors.items()}
            line["borrowing"] = a.borrowing
        line["flavors"] = [[n, m, b, list(r)] for n, m, b, r in a.considered]
        if quota := self._quota(wl, a, before, admitted):
            line["quota"] = quota
        if targets:
            line["targets"] = targets
        if requeued:
            line["requeued"] = requeued
        if spec.strategy == STRICT and not admitted:
            line["blocks"] = pending - 1
        if woken:
            line["woken"] = woken
        self._write(line)

    def _quota(self, wl: Workload, a, before: Snapshot, admitted: bool) -> list[dict]:
        """The ClusterQueue's quota at the cycle's start for each flavor-resource it was short of (or
        borrowed in): nominal, in use, what it may still use with borrowing, its limits, its cohort."""
        node = before.cqs[wl.cluster_queue]
        requests = wl.requests(before.specs[wl.cluster_queue].covers_pods)
        if admitted:
            frs = [(f, r) for r, (f, _, b) in a.flavors.items() if b > 0]
        else:
            short = {n for n, _, _, reasons in a.considered if any("quota" in r for r in reasons)}
            frs = [fr for fr in node.quotas if fr[0] in short and fr[1] in requests]
        out = []
        for fr in frs:
            q = node.quotas[fr]
            res = fr[1]
            row = {"flavor": fr[0], "resource": res, "requested": kueue_text(res, requests[res]),
                   "nominal": kueue_text(res, q.nominal), "used": kueue_text(res, node.usage.get(fr, 0)),
                   "available": kueue_text(res, max(0, rn.available(node, fr)))}  # fmt: skip
            for key, limit in (("borrowing_limit", q.borrowing_limit), ("lending_limit", q.lending_limit)):
                if limit is not None:
                    row[key] = kueue_text(res, limit)
            if node.parent is not None:
                row["cohort"] = node.parent.name
                row["cohort_available"] = kueue_text(res, max(0, rn.available(node.parent, fr)))
            out.append(row)
        return out

    def _evicted(self, now: float, by: Workload, victim: Workload, reason: str) -> None:
        why = HUMAN_REASONS.get(reason, reason)
        message = (f"Preempted to accommodate a workload ({by.name}) due to {why}; "
                   f"preemptor path: {cq_path(self.twin, by.cluster_queue)}; "
                   f"preemptee path: {cq_path(self.twin, victim.cluster_queue)}")  # fmt: skip
        self._write({"time": now, "event": "evicted", "workload": victim.name,
                     "cluster_queue": victim.cluster_queue, "by": by.name,
                     "by_cluster_queue": by.cluster_queue, "reason": reason, "message": message})  # fmt: skip

    def _flush(self, name: str) -> None:
        run = self._runs.pop(name, None)
        if run is not None and run.count:
            line = {"time": run.last, "event": "repeated", "workload": name, "count": run.count,
                    "since": run.since}  # fmt: skip
            if run.wakes:
                line["wakes"], line["woken"] = run.wakes, run.woken
            self._write(line)
