"""The scheduling framework: Filter → Score → NormalizeScore → weighted sum → selectHost.

Plugins work on whole node columns (numpy) instead of one node at a time; the results are the same
as kube-scheduler's per-node loop, and a cycle over 1000 nodes costs tens of microseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.snapshot import NodeTable

MAX_NODE_SCORE = 100


@dataclass
class FilterResult:
    feasible: np.ndarray  # bool, aligned with the node indices given
    reasons: dict[str, int] = field(default_factory=dict)  # reason → number of nodes it rejected


class FilterPlugin(Protocol):
    name: str

    def filter(self, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> FilterResult: ...


class ScorePlugin(Protocol):
    name: str

    def score(self, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> np.ndarray: ...

    def normalize(self, scores: np.ndarray) -> np.ndarray: ...


@dataclass
class Decision:
    """One scheduling cycle's outcome, kept whole so that "why this node" can be recorded."""

    pod: PodInfo
    node: int | None
    feasible: int
    reasons: dict[str, int]
    top_scores: list[tuple[int, int]] = field(default_factory=list)  # (node index, total score)


@dataclass
class Profile:
    """A scheduler profile: one schedulerName, its plugins and weights, its own tie-breaking RNG."""

    scheduler_name: str
    filters: list[FilterPlugin]
    scorers: list[tuple[ScorePlugin, int]]
    rng: np.random.Generator

    def schedule_one(self, pod: PodInfo, nodes: NodeTable, explain: bool = False) -> Decision:
        """One cycle; `explain` also ranks the best nodes, which only the decision record needs."""
        idx = nodes.all
        reasons: dict[str, int] = {}
        for plugin in self.filters:
            if idx.size == 0:
                break
            result = plugin.filter(pod, nodes, idx)
            for reason, n in result.reasons.items():
                reasons[reason] = reasons.get(reason, 0) + n
            idx = idx[result.feasible]
        if idx.size == 0:
            return Decision(pod, None, 0, reasons)
        if idx.size == 1 or not self.scorers:
            return Decision(pod, int(idx[0]), int(idx.size), reasons)
        total = np.zeros(idx.size, dtype=np.int64)
        for plugin, weight in self.scorers:
            total += plugin.normalize(plugin.score(pod, nodes, idx)) * weight
        best = total.max()
        ties = np.flatnonzero(total == best)
        pick = ties[0] if ties.size == 1 else ties[self.rng.integers(ties.size)]
        decision = Decision(pod, int(idx[pick]), int(idx.size), reasons)
        if explain:
            top = np.argsort(-total, kind="stable")[:3]
            decision.top_scores = [(int(idx[t]), int(total[t])) for t in top]
        return decision
