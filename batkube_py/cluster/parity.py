"""Is the twin kube-scheduler? Each real binding checked against the twin on the same cluster state.

The paced real backend (cluster/paced.py) hands each pod the twin's queue pops to the real
kube-scheduler while the twin mirrors every binding, so at every attempt both see the same nodes, pods
and nominations. A real binding agrees when the node is one the twin finds feasible and scores best
(upstream breaks score ties at random: any node of the best set is a correct choice; on clusters large
enough that upstream scores only some feasible nodes, percentageOfNodesToScore, feasibility alone is
checked), or, for a
preemptor whose nominated node still fits, that node (evaluateNominatedNode). A real failure agrees when
the twin finds no node either. Every disagreement is a row of parity.csv with the twin's per-plugin
scores of the real node and of its best one; `batkube parity` prints them.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from batkube_py.scheduler.framework import Decision
from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.preemption import nominable

if TYPE_CHECKING:
    from batkube_py.cluster.embedded import EmbeddedCluster

COLUMNS = ("time", "pod", "kind", "real", "twin_best", "real_score", "best_score", "detail")


@dataclass
class Parity:
    path: Path | None
    bindings: int = 0
    failures: int = 0
    skipped_attempts: int = 0
    ties: int = 0  # decisions with several equally good nodes (scores, or preemption candidates)
    timing_mismatches: int = 0  # pods one queue tried at a time and the other did not (--sync queue)
    mismatches: list[dict] = field(default_factory=list)

    @staticmethod
    def _nominated(pod: PodInfo, twin: Decision) -> bool:
        return pod.nominated_node is not None and twin.node == pod.nominated_node and twin.feasible == 1

    def rank(self, pod: PodInfo, twin: Decision, cluster: EmbeddedCluster) -> tuple | None:
        """What `check` ranks the real node against, computed ahead (None when it needs no ranking)."""
        if self._nominated(pod, twin):
            return None
        return cluster.profiles[pod.scheduler_name].rank(pod, cluster.nodes)

    def check(self, pod: PodInfo, twin: Decision, cluster: EmbeddedCluster, real: int, now: float,
              ranked: tuple | None = None) -> None:  # fmt: skip
        """A real binding of `pod` to node index `real`, on the state the twin holds before it
        (`ranked`: `rank` of that state, if computed ahead)."""
        self.bindings += 1
        nodes = cluster.nodes
        if self._nominated(pod, twin):
            if real != pod.nominated_node:
                self._add(now, pod, "nominated node ignored", nodes.names[real], [nodes.names[twin.node]])
            return
        profile = cluster.profiles[pod.scheduler_name]
        idx, total, per_plugin = ranked or profile.rank(pod, nodes)
        where = np.flatnonzero(idx == real)
        best = total.max() if total.size else 0
        at_best = total == best
        self.ties += int(np.count_nonzero(at_best)) > 1

        def best_names() -> list[str]:  # hundreds of nodes tie on an empty cluster: named only when shown
            return [nodes.names[int(i)] for i in idx[at_best]]

        if where.size == 0:
            self._add(now, pod, "infeasible for the twin", nodes.names[real], best_names())
            return
        k = int(where[0])
        if profile.samples(len(nodes)):
            return  # upstream scored only some of the feasible nodes (percentageOfNodesToScore)
        if total[k] != best:
            b = int(np.flatnonzero(total == best)[0])
            detail = {name: [int(n[k]), int(n[b])] for name, (_, n, _w) in per_plugin.items() if n[k] != n[b]}
            self._add(now, pod, "not in the twin's best-score set", nodes.names[real], best_names(),
                      int(total[k]), int(best), json.dumps(detail, sort_keys=True))  # fmt: skip

    def failed(self, pod: PodInfo, twin: Decision, cluster: EmbeddedCluster, nominated: int | None,
               reason: str, now: float) -> None:  # fmt: skip
        """The real scheduler found no node: the twin must not have found one either; if it preempted,
        the node it nominated must be one upstream's preemption could have chosen (preemption.nominable)."""
        self.failures += 1
        names = cluster.nodes.names
        if twin.node is not None:
            self._add(now, pod, "real scheduler found no node", "", [names[twin.node]], detail=reason)
        if nominated is not None and nominated != pod.nominated_node:
            best = nominable(cluster.profiles[pod.scheduler_name], pod, cluster.nodes)
            self.ties += len(best) > 1
            if nominated not in best:
                self._add(now, pod, "preemption outside the twin's best candidates", names[nominated],
                          [names[i] for i in best])  # fmt: skip

    def timing(self, now: float, pod: PodInfo, kind: str, names: list[str], twin: Decision | None,
               real: str = "") -> None:  # fmt: skip
        """One queue tried the pod at this time and the other did not (`--sync queue`)."""
        self.timing_mismatches += 1
        best = [names[twin.node]] if twin is not None and twin.node is not None else []
        self._add(now, pod, kind, real, best)

    def mismatch(self, now: float, pod: PodInfo, kind: str, real: str = "", twin: str = "") -> None:
        """A disagreement no binding check sees (--sync queue): the twin's queue failed a pod the real
        one bound, or the two group cycles disagree on a pod group as a whole."""
        self._add(now, pod, kind, real, [twin] if twin else [])

    def skipped(self, pod: PodInfo, twin: Decision, names: list[str], now: float) -> None:
        """A retry skipped because the pod fits no node's free room: the twin must agree."""
        self.skipped_attempts += 1
        if twin.node is not None:
            self._add(now, pod, "twin binds a pod that fits no node's free room", "", [names[twin.node]])

    def _add(self, now, pod, kind, real, best, real_score="", best_score="", detail="") -> None:
        self.mismatches.append({
            "time": now, "pod": pod.name, "kind": kind, "real": real, "twin_best": " ".join(best),
            "real_score": real_score, "best_score": best_score, "detail": detail,
        })  # fmt: skip

    @property
    def attempts(self) -> int:
        """Attempts the real scheduler made: each ended in a binding or a failure."""
        return self.bindings + self.failures

    def summary(self) -> dict:
        return {
            "parity_bindings_checked": self.bindings,
            "parity_failures_checked": self.failures,
            "parity_skipped_retries": self.skipped_attempts,
            "parity_ties": self.ties,
            "parity_mismatches": len(self.mismatches),
            "parity_timing_mismatches": self.timing_mismatches,
        }

    def close(self) -> None:
        if self.path is None:
            return
        with open(self.path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS)
            w.writeheader()
            w.writerows(self.mismatches)
