"""The run's own outputs beside Batsim's: pods.csv, nodes.csv, rejected.csv, summary.json.

Rows are appended as pods reach a final state and flushed once the reply that followed them has left
(DecisionProcess.after_reply), so a crash keeps everything decided so far without a write per row on the
path Batsim waits on.
"""

from __future__ import annotations

import csv
import json
import operator
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from kubernetes import client

from batkube_py import kubeapi, quantities
from batkube_py.adapter import fragmentation, translate


@dataclass
class PodRecord:
    job_id: str
    pod: str
    node: str = ""
    resource_id: int | str = ""
    cpu_request: float = 0.0
    memory_request: int | str = ""
    priority: int = 0
    scheduler: str = ""
    submit_time: float | str = ""
    bind_time: float | str = ""
    start_time: float | str = ""
    finish_time: float | str = ""
    state: str = "Pending"
    reason: str = ""
    group: str = ""  # the job's PodGroup (res > 1): pod names the group, node its distinct nodes
    group_size: int = 1
    queue: str = ""  # Kueue (--queues): the job's LocalQueue, its ClusterQueue, flavor(s), admission time
    cluster_queue: str = ""
    flavor: str = ""
    admitted_at: float | str = ""
    # a bound group's pods as (pod, node, resource id): pods.csv has one row per pod, the job's columns
    members: tuple[tuple[str, str, int], ...] = field(default=(), repr=False)


POD_COLUMNS = [f.name for f in fields(PodRecord) if f.name != "members"]
_pod_row = operator.attrgetter(*POD_COLUMNS)
REJECTED_COLUMNS = ["job_id", "field", "value", "expected", "reason", "group"]
NODE_COLUMNS = ["node", "resource_id", "cpu", "memory", "pods"]


INCOMPLETE = "INCOMPLETE"  # in a run directory: the run stopped before its end; the file says why


def summary(records: Iterable[PodRecord], nodes: Iterable[client.V1Node] = ()) -> dict[str, Any]:
    """The run's figures from its pod records: summary.json's part that pods.csv (and nodes.csv, for
    the fragmentation) also holds."""
    recs = list(records)
    bound = [r for r in recs if r.start_time != ""]
    finished = [float(r.finish_time) for r in recs if r.finish_time != ""]
    waits = [float(r.start_time) - float(r.submit_time) for r in bound]
    count = {s: sum(r.state == s for r in recs) for s in ("Succeeded", "Failed", "Killed", "Rejected")}
    gangs = [r for r in recs if r.group]
    # a group's wait runs from submission to its last pod's binding (bind_time): the job starts then
    gang_waits = [float(r.bind_time) - float(r.submit_time) for r in gangs if r.bind_time != ""]
    return {
        "gang_jobs": len(gangs),
        "gang_pods": sum(r.group_size for r in gangs),
        "max_group_size": max((r.group_size for r in gangs), default=0),
        "mean_gang_wait": sum(gang_waits) / len(gang_waits) if gang_waits else 0.0,
        "max_gang_wait": max(gang_waits, default=0.0),
        # the adapter's clock (EXECUTE_JOB sent, JOB_COMPLETED read); `batkube analyze` reads Batsim's
        "times_from": "pods.csv: the adapter's (EXECUTE_JOB sent, JOB_COMPLETED read), not out_jobs.csv",
        "makespan": max(finished, default=0.0),
        "mean_waiting_time": sum(waits) / len(waits) if waits else 0.0,
        "max_waiting_time": max(waits, default=0.0),
        "jobs_total": len(recs),
        "jobs_succeeded": count["Succeeded"],
        "jobs_failed": count["Failed"],
        "jobs_killed": count["Killed"],
        "jobs_rejected": count["Rejected"],
        "jobs_unfinished": len(recs) - sum(count.values()),
        **fragmentation.from_records(recs, fragmentation.node_cores(nodes)),
    }


class _CsvLog:
    def __init__(self, path: Path, columns: list[str]):
        self._file = path.open("w", newline="")
        self._columns = columns
        self._writer = csv.writer(self._file)
        self.write_rows([columns])

    def write(self, row: dict[str, Any]) -> None:
        self.write_rows([[row.get(c, "") for c in self._columns]])

    def write_rows(self, rows: list) -> None:
        self._writer.writerows(rows)
        self._file.flush()

    def close(self) -> None:
        self._file.close()


class RunOutputs:
    def __init__(self, directory: Path):
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self._pods = _CsvLog(self.dir / "pods.csv", POD_COLUMNS)
        self._rejected = _CsvLog(self.dir / "rejected.csv", REJECTED_COLUMNS)
        self._rows: list[tuple] = []  # final pod rows not yet written (flush)

    def nodes(self, nodes: list[client.V1Node]) -> None:
        log = _CsvLog(self.dir / "nodes.csv", NODE_COLUMNS)
        log.write_rows(
            [
                (
                    n.metadata.name,
                    kubeapi.resource_id(n),
                    quantities.milli_cpu(n.status.allocatable["cpu"]) / 1000,
                    n.status.allocatable.get("memory", ""),
                    n.status.allocatable["pods"],
                )
                for n in nodes
            ]
        )
        log.close()

    def pod(self, record: PodRecord) -> None:
        row = _pod_row(record)
        if not record.members:
            self._rows.append(row)
            return
        for pod, node, rid in record.members:  # a group: one row per pod, where it ran
            self._rows.append((row[0], pod, node, rid, *row[4:]))

    def flush(self) -> None:
        if self._rows:
            self._pods.write_rows(self._rows)
            self._rows.clear()

    def rejected(self, rejection: translate.Rejection, group: str = "") -> None:
        row = {k: getattr(rejection, k) for k in REJECTED_COLUMNS[:4]}
        self._rejected.write({**row, "reason": rejection.reason, "group": group})

    def summary(self, data: dict[str, Any]) -> None:
        """summary.json; a run stopped by an error is marked incomplete there (`complete`: false) and by
        an INCOMPLETE file holding the reason, beside the outputs written so far."""
        data = {**data, "complete": not data.get("error")}
        path = self.dir / "summary.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
        tmp.replace(path)
        marker = self.dir / INCOMPLETE
        if data["complete"]:
            marker.unlink(missing_ok=True)
        else:
            marker.write_text(f"{data['error']}\n")

    def close(self) -> None:
        self.flush()
        self._pods.close()
        self._rejected.close()
