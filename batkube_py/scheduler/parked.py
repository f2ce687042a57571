"""The unschedulable pool (upstream unschedulablePods) as columns, so that one event is a handful of
vector operations over every parked pod instead of a loop over them.

`since` is what the leftover flush measures the 5 minutes from: max(Timestamp, FlushTimestamp) in
1.37 (scheduling_queue.go, flushUnschedulableEntitiesLeftover), the Timestamp in 1.32. The two differ
only for a pod a flush moved out that a PreEnqueue plugin sent straight back (it keeps its Timestamp
and gets a FlushTimestamp); `flushed` records that for such plugins.
"""

from __future__ import annotations

import numpy as np

from batkube_py.scheduler.podinfo import PodInfo


class Parked:
    FIELDS = {
        "cpu": np.int64, "mem": np.int64, "prio": np.int64, "ts": np.float64, "seq": np.int64,
        "attempts": np.int64, "bits": np.int64, "until": np.float64, "alive": bool, "since": np.float64,
    }  # fmt: skip

    def __init__(self) -> None:
        self.pods: list[PodInfo | None] = []
        self.slot: dict[str, int] = {}
        self.col = {k: np.zeros(0, dtype=t) for k, t in self.FIELDS.items()}
        self.bit_counts: dict[int, int] = {}

    def bits_union(self) -> int:
        out = 0
        for bits, count in self.bit_counts.items():
            if count:
                out |= bits
        return out

    def __len__(self) -> int:
        return len(self.slot)

    def add(self, pod: PodInfo, bits: int) -> None:
        n = len(self.pods)
        if n == self.col["cpu"].size:
            grow = max(64, n)
            self.col = {k: np.concatenate([v, np.zeros(grow, dtype=v.dtype)]) for k, v in self.col.items()}
        self.pods.append(pod)
        self.slot[pod.name] = n
        c = self.col
        c["cpu"][n], c["mem"][n], c["prio"][n] = pod.milli_cpu, pod.memory, -pod.priority
        c["ts"][n], c["seq"][n], c["attempts"][n] = pod.timestamp, pod.seq, pod.attempts
        c["bits"][n], c["until"][n], c["alive"][n] = bits, pod.backoff_until, True
        c["since"][n] = max(pod.timestamp, pod.flushed_at)
        self.bit_counts[bits] = self.bit_counts.get(bits, 0) + 1

    def take(self, i: int) -> PodInfo:
        """Remove slot i, writing back what vector updates changed while it was parked."""
        pod = self.pods[i]
        assert pod is not None
        c = self.col
        pod.timestamp, pod.seq, pod.attempts = float(c["ts"][i]), int(c["seq"][i]), int(c["attempts"][i])
        pod.backoff_until = float(c["until"][i])
        self.pods[i] = None
        c["alive"][i] = False
        self.bit_counts[int(c["bits"][i])] -= 1
        del self.slot[pod.name]
        return pod

    def compact(self) -> None:
        if len(self.pods) < 1024 or len(self.slot) * 2 >= len(self.pods):
            return
        keep = np.flatnonzero(self.col["alive"][: len(self.pods)])
        self.pods = [self.pods[i] for i in keep]
        self.col = {
            k: np.concatenate([v[keep], np.zeros(len(keep), dtype=v.dtype)]) for k, v in self.col.items()
        }
        self.slot = {p.name: i for i, p in enumerate(self.pods) if p is not None}
