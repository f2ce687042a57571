"""Which backing-off pods to recreate now, so the wall-clock scheduler retries them at the simulated instant.

kube-scheduler measures backoff on the wall clock; in the simulated cluster a pod whose simulated backoff
has expired is retried at once when an event frees room (see docs/sync.md, "Backoff, honestly"). The
adapter gets the same retry from the unmodified scheduler by recreating the pod (a new pod has no failed
attempts). A recreation costs a delete, a create and the scheduler's failed attempt, so with *n* pods
pending every completion used to cost ~3n API calls although, with one node freed, one pod can bind.

A retry can only change the cluster if the pod fits some node's free resources: no correct scheduler
binds beyond a node's allocatable (a kubelet would refuse it; the adapter counts it as an
over-allocation), and a pod that fits nowhere fails again without side effects — unless it may preempt,
so pods of a higher priority than some running pod are always retried. Pods are judged in queue order on
the state their predecessors actually left, so recreation goes in *rounds*: the longest prefix of the due
pods that fits a tentative placement, then, once the scheduler has answered that round, the rest on the
real outcome. A pod that fits no node on the real state at its turn is left in the scheduler's wall-clock
backoff: its retry could change nothing at this instant.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from dataclasses import dataclass

from batkube_py.cluster.base import BackendError
from batkube_py.protocol.reply import TIME_RESOLUTION

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Request:
    cpu: int  # milli-cpu
    memory: int  # bytes
    priority: int = 0


def room(
    alloc: dict[str, tuple[int, int, int]],
    used: dict[str, list[int]],
    more: Iterable[tuple[str, tuple[int, int]]] = (),
) -> dict[str, list[float]]:
    """Each node's (milli-cpu, bytes, pods) left: allocatable − `used` − the `more` (node, requests).

    A node whose allocatable has no memory (-1) has unlimited memory room, as upstream skips it."""
    free = {
        n: [a[0] - used[n][0], a[1] - used[n][1] if a[1] >= 0 else math.inf, a[2] - used[n][2]]
        for n, a in alloc.items()
    }
    for node, (cpu, mem) in more:
        if (f := free.get(node)) is not None:
            f[0], f[1], f[2] = f[0] - cpu, f[1] - mem, f[2] - 1
    return free


def fits(req: Request, free: list[float]) -> bool:
    """fit.go's check on cpu, memory and the pod count; a zero request always fits that resource."""
    cpu, mem, pods = free
    return pods >= 1 and (req.cpu == 0 or req.cpu <= cpu) and (req.memory == 0 or req.memory <= mem)


def futile(req: Request, free: dict[str, list[float]], lowest_running_priority: int | None) -> bool:
    """A retry that can change nothing: the pod fits no node's free room and cannot preempt."""
    if lowest_running_priority is not None and req.priority > lowest_running_priority:
        return False
    return not any(fits(req, f) for f in free.values())


def next_round(
    due: list[str],
    requests: dict[str, Request],
    free: dict[str, list[float]],
    lowest_running_priority: int | None,
) -> tuple[list[str], list[str]]:
    """(pods to recreate now, in order; pods to leave in backoff) for due pods given in queue order.

    `free` is each node's (milli-cpu, bytes, pods) left on the real state; it is not modified.
    """
    tentative = {n: list(f) for n, f in free.items()}
    now: list[str] = []
    left: list[str] = []
    for name in due:
        req = requests[name]
        if lowest_running_priority is not None and req.priority > lowest_running_priority:
            now.append(name)  # may preempt: its retry can change the cluster whatever the free room
            continue
        node = max(
            (n for n, f in tentative.items() if fits(req, f)),
            key=lambda n: tentative[n][0],
            default=None,
        )
        if node is None:
            if now:
                break  # judged again on what this round actually did
            left.append(name)  # fits nowhere on the real state: a retry would fail and change nothing
            continue
        f = tentative[node]
        f[0] -= req.cpu
        f[1] -= req.memory
        f[2] -= 1
        now.append(name)
    return now, left


class BackoffExpedite:
    """The real backend's side of the above (mixed into ApiServerCluster, whose watch, API calls, pod
    specs, requests and priorities it reads) for the settle and timeout policies: the paced policy never
    lets a pod reach wall-clock backoff."""

    def expedite(self) -> int:
        """Recreate the next round of pending pods whose backoff has certainly expired in *simulated* time.

        kube-scheduler measures backoff on the wall clock, where a few milliseconds separate a pod's
        failure from the event that frees a node; in the simulated cluster the pod failed at least
        max_backoff simulated seconds ago, so a real scheduler would retry it at once. A new pod
        (attempts = 0) is what the unmodified scheduler retries at once: same name, same spec. Which pods
        and in what rounds: expedite.py.
        """
        with self.watch.cond:
            due = [
                n for n, v in self.watch.pods.items()
                if v.node is None and v.kube and v.since >= 0 and self._backed_off(v.since)
                and n not in self._left
            ]  # fmt: skip
            free, lowest = self._free()
        due.sort(key=lambda n: -self.priorities.get(n, 0))  # stable: creation order within a priority
        reqs = {n: Request(*self.requests[n], self.priorities.get(n, 0)) for n in due}
        due, left = next_round(due, reqs, free, lowest)
        log.debug("expedite at %s: recreating %s, leaving %s", self.now, due, left)
        self._left.update(left)
        self.left_in_backoff += len(left)
        due = [name for name in due if self.watch.renew(name) is not None]
        try:
            # the deletes in parallel (nobody can tell their order), the creates in order: creation
            # order is the scheduler's queue order
            self.calls.all([
                (f"delete pod {name} (expedite)", self.core.delete_namespaced_pod, (name, self.namespace),
                 {"grace_period_seconds": 0, "ok": (404,)})
                for name in due
            ])  # fmt: skip
            for name in due:
                pod = self.specs[name]
                pod.metadata.resource_version = pod.metadata.uid = None
                self.calls(f"recreate pod {name}", self.core.create_namespaced_pod, self.namespace, pod)
                self._fences["UnschedulablePodAdd"] += 1
        except BackendError as exc:
            self._break(str(exc))
            raise
        self.recreated += len(due)
        return len(due)

    def _backed_off(self, since: float) -> bool:
        """Whether max_backoff simulated seconds have passed since `since` (cycle times are sums of
        floats: 190.02 - 180.02 is 9.99999999999997)."""
        return self.now - since >= self.opts.max_backoff - TIME_RESOLUTION

    def _free(self) -> tuple[dict[str, list[float]], int | None]:
        """Room left with every binding seen so far, taken or not, and the lowest running priority.
        Called with the watch's lock held."""
        seen = [(n, v.node) for n, v in self.watch.pods.items()
                if v.node is not None and n not in self.node_of and n in self.requests]  # fmt: skip
        running = [self.priorities.get(n, 0) for n in (*self.node_of, *(n for n, _ in seen))]
        free = room(self.node_alloc, self.node_used, [(node, self.requests[n]) for n, node in seen])
        return free, min(running, default=None)

    def excused_backoff(self) -> int:
        """Pods left in wall-clock backoff on purpose (expedite.py), and pods whose simulated backoff may
        not have expired but whose retry could change nothing (they fit no node and cannot preempt);
        none while another pod's simulated backoff may not have expired (the backoff queue must then
        drain in wall time)."""
        with self.watch.cond:
            room = None  # computed once, and only if a pod's simulated backoff may not have expired
            left = 0
            for n, v in self.watch.pods.items():
                if v.node is None and v.kube:
                    if n in self._left:
                        left += 1
                    elif v.since >= 0 and not self._backed_off(v.since):
                        room = room or self._free()
                        req = Request(*self.requests[n], self.priorities.get(n, 0))
                        if not futile(req, *room):
                            return 0
                        left += 1
            return left
