""" "Why this node": one JSON line per scheduling attempt, streamed to disk.

Streaming keeps memory flat whatever the run's size, and a line holds only the top nodes' scores and
per-reason counts of rejected nodes, so it stays small at 5,000 nodes (kube-scheduler-simulator's
per-pod annotations break at 256 KiB).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO

from batkube_py.scheduler.framework import Decision
from batkube_py.scheduler.snapshot import NodeTable


class DecisionRecorder:
    def __init__(self, path: Path):
        self.path = path
        self._file: IO[str] = path.open("w")
        self.count = 0

    def write(self, decision: Decision, nodes: NodeTable, now: float, profile: str) -> None:
        pod = decision.pod
        line = {
            "time": now,
            "pod": pod.name,
            "job_id": pod.job_id,
            "profile": profile,
            "attempt": pod.attempts + 1,
            "result": "bound" if decision.node is not None else "unschedulable",
            "node": nodes.names[decision.node] if decision.node is not None else None,
            "nodes": len(nodes),
            "evaluated": decision.evaluated,
            "feasible": decision.feasible,
            "reasons": decision.reasons,
            "rejected_by": sorted(decision.rejected_by),
        }
        if decision.top_scores:
            line["top"] = [
                {
                    "node": nodes.names[i],
                    "total": total,
                    "plugins": {name: s[k] for name, s in decision.plugin_scores.items()},
                }
                for k, (i, total) in enumerate(decision.top_scores)
            ]
        self._file.write(json.dumps(line, separators=(",", ":")) + "\n")
        self.count += 1

    def close(self) -> None:
        self._file.close()
