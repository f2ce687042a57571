"""ImageLocality: every node scores 0, because simulated pods pull no images.

Upstream scores nodes by the size of the pod's images already present there; Batsim hosts hold no
images, so every node would score 0 after normalisation anyway. It stays a scorer (weight 1) so that
profiles and per-plugin score records list the same plugins and weights as kube-scheduler's.
"""

from __future__ import annotations

import numpy as np

from batkube_py.scheduler.framework import NODE_ADD, SKIP, CycleState, Plugin
from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.snapshot import NodeTable


class ImageLocality(Plugin):
    name = "ImageLocality"
    scores = True

    def events_to_register(self) -> frozenset[str]:
        return frozenset({NODE_ADD})

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> str | None:
        return SKIP

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> np.ndarray:
        return np.zeros(idx.size, dtype=np.int64)
