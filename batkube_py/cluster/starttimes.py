"""When batkube's kubelet writes a bound pod's status.startTime under `--sync queue` (cluster/queued.py).

Preemption reads startTime (victims that started last go first), so it is written only once the run has
pods of two priorities: after each step for the pods bound in it, in the order they were bound, and, when
the second priority appears, for every pod still running, in the order they were bound. Each write is an
update event, which moves the pod to the end of kube-scheduler's per-node pod list (snapshot.py's
`order`), the order preemption keeps among victims of equal importance: the twin replays the same
writes as touches, so both lists stay the same.
"""

from __future__ import annotations


class StartTimes:
    def __init__(self) -> None:
        self.priorities: set[int] = set()
        self.bound: dict[str, float] = {}  # running pods, in binding order: their binding's step time

    def pod_added(self, priority: int) -> list[tuple[str, float]]:
        """A pod of this priority is submitted: the writes due before it is (pod, binding time)."""
        first = len(self.priorities) == 1
        self.priorities.add(priority)
        if first and len(self.priorities) == 2:  # pods bound before had no startTime yet
            return list(self.bound.items())
        return []

    def step_bound(self, pods: list[str], now: float) -> list[str]:
        """The pods bound in the step at `now`, in binding order: those whose startTime is written now."""
        for pod in pods:
            self.bound[pod] = now
        return pods if len(self.priorities) >= 2 else []

    def gone(self, pod: str) -> None:
        self.bound.pop(pod, None)
