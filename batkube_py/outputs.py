"""The run's own outputs beside Batsim's: pods.csv, nodes.csv, rejected.csv, summary.json.

Rows are appended and flushed as pods reach a final state, so a crash keeps everything decided so far.
"""

from __future__ import annotations

import csv
import json
import operator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from kubernetes import client

from batkube_py import quantities, translate


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


POD_COLUMNS = [f.name for f in fields(PodRecord)]
_pod_row = operator.attrgetter(*POD_COLUMNS)
REJECTED_COLUMNS = ["job_id", "field", "value", "expected", "reason"]
NODE_COLUMNS = ["node", "resource_id", "cpu", "memory", "pods"]


class _CsvLog:
    def __init__(self, path: Path, columns: list[str]):
        self._file = path.open("w", newline="")
        self._columns = columns
        self._writer = csv.writer(self._file)
        self._writer.writerow(columns)
        self._file.flush()

    def write(self, row: dict[str, Any]) -> None:
        self.write_values([row.get(c, "") for c in self._columns])

    def write_values(self, values: tuple | list) -> None:
        self._writer.writerow(values)
        self._file.flush()

    def close(self) -> None:
        self._file.close()


class RunOutputs:
    def __init__(self, directory: Path):
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self._pods = _CsvLog(self.dir / "pods.csv", POD_COLUMNS)
        self._rejected = _CsvLog(self.dir / "rejected.csv", REJECTED_COLUMNS)

    def nodes(self, nodes: list[client.V1Node]) -> None:
        log = _CsvLog(self.dir / "nodes.csv", NODE_COLUMNS)
        for n in nodes:
            alloc = n.status.allocatable
            log.write(
                {
                    "node": n.metadata.name,
                    "resource_id": translate.resource_id(n),
                    "cpu": quantities.milli_cpu(alloc["cpu"]) / 1000,
                    "memory": alloc.get("memory", ""),
                    "pods": alloc["pods"],
                }
            )
        log.close()

    def pod(self, record: PodRecord) -> None:
        self._pods.write_values(_pod_row(record))

    def rejected(self, rejection: translate.Rejection) -> None:
        row = {k: getattr(rejection, k) for k in REJECTED_COLUMNS[:-1]}
        self._rejected.write({**row, "reason": rejection.reason})

    def summary(self, data: dict[str, Any]) -> None:
        path = self.dir / "summary.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
        tmp.replace(path)

    def close(self) -> None:
        self._pods.close()
        self._rejected.close()
