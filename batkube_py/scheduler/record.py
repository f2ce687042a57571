""" "Why this node": one JSON line per scheduling attempt, streamed to disk.

Streaming keeps memory flat whatever the run's size, and a line holds only the top nodes' scores and
per-reason counts of rejected nodes, so it stays small at 5,000 nodes (kube-scheduler-simulator's
per-pod annotations break at 256 KiB). `filters` says which Filter plugin rejected how many nodes for
which reason, with at most three of their names, for `batkube explain`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO

import numpy as np

from batkube_py.scheduler import ties
from batkube_py.scheduler.framework import CycleState, Decision, Profile
from batkube_py.scheduler.snapshot import NodeTable

NAMED = 3
"""Rejected nodes named per (plugin, reason): enough to look one up, small at any cluster size."""


def rejections(decision: Decision, nodes: NodeTable, profile: Profile) -> dict[str, dict[str, list]]:
    """plugin → reason → [nodes rejected, first names], over the nodes the cycle examined.

    The cycle keeps only per-reason counts, so the filters run again on the nodes it examined (those its
    parallel workers checked, or the run from the start index it began at; before the nominated pods'
    reservations are released): same counts as `reasons`, no RNG draw, no state change. Only recorded
    runs pay for it.
    """
    if not decision.reasons:
        return {}
    n = len(nodes)
    if decision.evaluated == 0:  # a PreFilter ruled the pod out everywhere
        plugin = next(iter(decision.rejected_by), "PreFilter")
        return {plugin: {r: [k, nodes.names[:NAMED]] for r, k in decision.reasons.items()}}
    if decision.examined is not None:  # checked by parallel workers, or up to the cut
        examined = np.sort(decision.examined)
    else:
        start = (profile.next_start - decision.evaluated) % n
        examined = np.roll(nodes.all, -start)[: decision.evaluated]
    state = CycleState()
    profile.pre_filter(state, decision.pod, nodes)
    _, _, _, levels = profile._filter_chain(state, decision.pod, nodes, examined)
    out: dict[str, dict[str, list]] = {}
    for name, given, result in levels:
        for reason, k in result.reasons.items():
            bad = result.masks[reason] if result.masks is not None else ~result.feasible
            out.setdefault(name, {})[reason] = [k, [nodes.names[i] for i in given[bad][:NAMED]]]
    return out


class DecisionRecorder:
    def __init__(self, path: Path):
        self.path = path
        self._file: IO[str] = path.open("w")
        self.count = 0

    def write(self, decision: Decision, nodes: NodeTable, now: float, profile: Profile) -> None:
        """Called before the cycle's nominated-pod reservations are released (see `rejections`)."""
        pod = decision.pod
        line = {
            "time": now,
            "pod": pod.name,
            "job_id": pod.job_id,
            "profile": profile.scheduler_name,
            "attempt": pod.attempts + 1,
            "result": "bound" if decision.node is not None else "unschedulable",
            "node": nodes.names[decision.node] if decision.node is not None else None,
            "nodes": len(nodes),
            "evaluated": decision.evaluated,
            "feasible": decision.feasible,
            "reasons": decision.reasons,
            "rejected_by": sorted(decision.rejected_by),
        }
        if decision.reasons:
            line["filters"] = rejections(decision, nodes, profile)
        if decision.top_scores:
            line["tie_break"] = ties.rule(profile.kube_version, profile.parallelism)
            line["top"] = [
                {
                    "node": nodes.names[i],
                    "total": total,
                    "plugins": {name: s[k] for name, s in decision.plugin_scores.items()},
                }
                for k, (i, total) in enumerate(decision.top_scores)
            ]
        self.write_line(line)

    def write_line(self, line: dict) -> None:
        """One attempt's line, built by the caller (a pod group's cycle: cluster/groups.py)."""
        self._file.write(json.dumps(line, separators=(",", ":")) + "\n")
        self.count += 1

    def close(self) -> None:
        self._file.close()
