"""The scheduling queue, on the simulated clock: activeQ, backoffQ and unschedulable (parked) pods.

As upstream (scheduling_queue.go, QueueingHints on as in 1.32 and 1.37; where 1.37 differs — the backoff
counter, 1-s windows, pop from backoffQ, nomination moves — versions.py and backoffq.py say): a pod that
fits nowhere is parked with the plugins that rejected it; a cluster event those plugins registered for
moves it back when one of those plugins' QueueingHint says the event can help it (Plugin.queueing_hint;
most registered events here always can), to activeQ if its backoff (1 s doubling to 10 s) has expired,
else to backoffQ, flushed on a 1-s tick; parked pods older than 5 min are flushed every 30 s; a failed
pod's queue timestamp becomes the failure time.

Retrying every parked pod on every completion is what makes a naive twin slow: thousands of doomed
cycles per event. A pod rejected only for resources (NodeResourcesFit / NodeUnschedulable) by an event
that changed a known set of nodes can only succeed on one of those nodes, so a vectorised fit check
over (parked pods × changed nodes) finds the few worth a real cycle. The others are failed without a
cycle — attempts counted, timestamp refreshed, order kept — exactly as their real retry would end.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from batkube_py.scheduler.backoffq import BackoffQ, QueueConfig
from batkube_py.scheduler.framework import NODE_TAINT, POD_DELETE, NodeChange, Plugin
from batkube_py.scheduler.gated import GatedPods
from batkube_py.scheduler.parked import Parked
from batkube_py.scheduler.plugins.noderesources import fits
from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.snapshot import NodeTable
from batkube_py.scheduler.versions import backoff_count

__all__ = ["QueueConfig", "SchedulingQueue"]

_FAST_PLUGINS = ("NodeResourcesFit", "NodeUnschedulable")
_FAST_EVENTS = frozenset({POD_DELETE, NODE_TAINT})
_Asked = tuple[str, PodInfo | NodeChange, int | None]  # event, object, highest priority it may move
UNSCHEDULABLE_TIMEOUT = "UnschedulableTimeout"


class SchedulingQueue:
    def __init__(
        self,
        config: QueueConfig,
        registrations: dict[str, frozenset[str]],
        hints: dict[tuple[str, str], Plugin] | None = None,
    ):
        """`registrations`: plugin name → the cluster events it registered for; `hints`: (scheduler
        name, plugin name) → the plugin whose queueing_hint decides its `hinted_events`."""
        self.config = config
        self._bit = {name: 1 << i for i, name in enumerate(sorted(registrations))}
        self._event_bits: dict[str, int] = {UNSCHEDULABLE_TIMEOUT: 0}
        for name, events in registrations.items():
            for ev in events:
                self._event_bits[ev] = self._event_bits.get(ev, 0) | self._bit[name]
        self._hints = hints or {}
        self._hinted_bits: dict[str, int] = {}  # event → plugins (bits) whose hint for it must be asked
        for (_, name), plugin in self._hints.items():
            for ev in plugin.hinted_events:
                self._hinted_bits[ev] = self._hinted_bits.get(ev, 0) | (self._bit.get(name, 0))
        # (event, object, the highest priority it may move or None): what the hints are asked about
        self._objects: list[_Asked] = []
        self._fast = sum(self._bit.get(p, 0) for p in _FAST_PLUGINS)
        self._active: list[tuple[tuple[int, float, int], PodInfo]] = []
        self._backoff = BackoffQ(config)
        self._parked = Parked()
        self.gated = GatedPods(config)  # held by SchedulingGates' PreEnqueue (gated.py)
        self._events: dict[str, set[int]] = {}
        # event → the highest priority it may move (getLEPriorityPreCheck); absent: any priority
        self._caps: dict[str, int] = {}
        self._seq = 0
        # the pods that failed at this instant, by the order they were tried (their failure timestamps'
        # order on a moving clock): a popped pod's place is its pop; a pod failed without a cycle
        # (doomed) waits in _unpopped, by activeQ order, for the pop it would have come before
        self._refailed: list[tuple[int, PodInfo | int]] = []
        self._unpopped: list[tuple[tuple[int, float, int], int]] = []
        self._tries = 0
        self._tried_at: dict[str, int] = {}
        # when a list: the names of the pods failed without a cycle (a shadow judging another queue)
        self.shortcut: list[str] | None = None
        self._flush_checked_at = -1.0

    def __len__(self) -> int:
        return len(self._active) + len(self._backoff) + len(self._parked) + len(self.gated)

    def next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def bits(self, plugins: frozenset[str]) -> int:
        return sum(self._bit.get(p, 0) for p in plugins)

    # ---- in ----------------------------------------------------------------------------------------

    def add(self, pod: PodInfo) -> None:
        heapq.heappush(self._active, (pod.sort_key, pod))

    def ungate(self, name: str) -> None:
        """Its last scheduling gate removed: to activeQ (gated.py), unless the pod is not gated here."""
        if (pod := self.gated.take(name)) is not None:
            self.add(pod)

    def event(
        self,
        kind: str,
        nodes: list[int] | range,
        objects: list[PodInfo | NodeChange] = (),
        max_priority: int | None = None,
    ) -> None:
        """A cluster event on `nodes`; `objects` (the pod, or each node's change) feed the hints;
        `max_priority`: only pods of that priority or lower may move (a pre-enqueue check)."""
        parked = self._parked.bits_union()
        if self._event_bits.get(kind, 0) & parked:
            if max_priority is None:
                self._caps.pop(kind, None)
            elif kind not in self._events or kind in self._caps:
                self._caps[kind] = max(self._caps.get(kind, max_priority), max_priority)
            self._events.setdefault(kind, set()).update(nodes)
            if self._hinted_bits.get(kind, 0) & parked:
                self._objects.extend((kind, obj, max_priority) for obj in objects)

    def failed(self, pod: PodInfo, now: float) -> None:
        """A cycle found no node: count it, refresh the timestamp, park or back off.

        1.32 counts every attempt (Attempts); 1.37 counts a failure with rejecting plugins in
        UnschedulableCount and one without in ConsecutiveErrorsCount (AddUnschedulablePodIfNotPresent);
        `pod.attempts` holds the counter the backoff reads."""
        if self.config.kube_version == "1.32" or pod.rejected_by:
            pod.attempts += 1
            pod.errors = 0
        else:
            pod.errors += 1
        pod.backoff_until = self.config.retry_at(backoff_count(pod.attempts, pod.errors), now)
        self._refailed.append((self._tried_at.pop(pod.name, None) or self._try(), pod))
        pod.timestamp = now
        bits = self.bits(pod.rejected_by)
        if bits == 0:  # no plugin to wait for: upstream sends it straight to backoffQ (1.37: error heap)
            self._backoff.push(pod, error=True)
        else:
            self._parked.add(pod, bits)

    def remove(self, name: str) -> PodInfo | None:
        """Forget a pending pod (rejected, killed); None if it is not pending here."""
        if (gated := self.gated.take(name)) is not None:
            return gated
        if name in self._parked.slot:
            return self._parked.take(self._parked.slot[name])
        for k, item in enumerate(self._active):
            if item[-1].name == name:
                self._active[k] = self._active[-1]
                self._active.pop()
                heapq.heapify(self._active)
                return item[-1]
        return self._backoff.remove(name)

    # ---- out ---------------------------------------------------------------------------------------

    def pop(self, now: float, nodes: NodeTable) -> PodInfo | None:
        self.gated.flush(now)
        self._flush_backoff(now)
        if self._events or self._flush_due(now):
            self._move(now, nodes)
            self._flush_backoff(now)
        # doomed pods sat in activeQ: tried before anything that sorts after them or comes from backoffQ
        if self._active:
            pod = heapq.heappop(self._active)[1]
            head = pod.sort_key
        else:
            pod, head = self._backoff.pop_early(), None
        while self._unpopped and (head is None or self._unpopped[0][0] < head):
            self._refailed.append((self._try(), heapq.heappop(self._unpopped)[1]))
        if pod is not None:
            self._tried_at[pod.name] = self._try()
        return pod

    def _try(self) -> int:
        self._tries += 1
        return self._tries

    def group_tried(self) -> int:
        """A pod group's cycle begins: its place among this instant's tries (podgroup.py)."""
        return self._try()

    def group_failed(self, tried: int, entity) -> None:
        """A pod group's cycle failed: its entity takes a new sequence number with the pods failed at
        this instant, in the order they were tried (upstream stamps it in AddAttemptedPodGroupIfNeeded)."""
        self._refailed.append((tried, entity))

    def end_cycle(self) -> None:
        """Give the pods failed at this instant their new sequence numbers, in the order they were tried
        (on upstream's clock, the order of their failure timestamps)."""
        while self._unpopped:
            self._refailed.append((self._try(), heapq.heappop(self._unpopped)[1]))
        self._tried_at.clear()
        if not self._refailed:
            return
        self._refailed.sort(key=lambda item: item[0])
        c = self._parked.col
        for _, ref in self._refailed:
            seq = self.next_seq()
            if isinstance(ref, PodInfo):
                ref.seq = seq
                if ref.name in self._parked.slot:
                    c["seq"][self._parked.slot[ref.name]] = seq
            elif isinstance(ref, int):
                c["seq"][ref] = seq
            else:  # a pod group's entity
                ref.seq = seq
        self._refailed.clear()
        self._parked.compact()

    def pending(self) -> list[PodInfo]:
        parked = [p for p in self._parked.pods if p is not None]
        return [*(p for _, p in self._active), *self._backoff.pods(), *parked, *self.gated.pods.values()]

    def next_wakeup(self) -> float | None:
        """When a tick would move a pod: the backoffQ flush, or the unschedulable-leftover flush."""
        times = [t] if (t := self.gated.next_wakeup()) is not None else []
        if (t := self._backoff.next_tick()) is not None:
            times.append(t)
        n = len(self._parked.pods)
        if len(self._parked):
            alive = self._parked.col["alive"][:n]
            oldest = float(self._parked.col["since"][:n][alive].min())
            period = self.config.unschedulable_flush_period
            times.append((math.floor((oldest + self.config.max_in_unschedulable) / period) + 1) * period)
        return min(times) if times else None

    # ---- moving ------------------------------------------------------------------------------------

    def _flush_backoff(self, now: float) -> None:
        if self._backoff:
            self._backoff.flush(now, self.add)

    def _flush_due(self, now: float) -> bool:
        n = len(self._parked.pods)
        if not len(self._parked) or now == self._flush_checked_at:
            return False
        self._flush_checked_at = now
        last_tick = (
            math.floor(now / self.config.unschedulable_flush_period) * self.config.unschedulable_flush_period
        )
        c = self._parked.col
        return bool((c["alive"][:n] & (last_tick - c["since"][:n] > self.config.max_in_unschedulable)).any())

    def _move(self, now: float, nodes: NodeTable) -> None:
        events, self._events = self._events, {}
        caps, self._caps = self._caps, {}
        objects, self._objects = self._objects, []
        n = len(self._parked.pods)
        if n == 0:
            return
        c = {k: v[:n] for k, v in self._parked.col.items()}
        queue_always, ask = 0, 0  # plugins whose hint always queues for one of the events / to be asked
        capped = c["alive"] & False
        for kind in events:
            registered, hinted = self._event_bits.get(kind, 0), self._hinted_bits.get(kind, 0)
            if kind in caps:  # only a nominated pod's deletion is capped (getLEPriorityPreCheck)
                capped |= c["alive"] & (-c["prio"] <= caps[kind]) & ((c["bits"] & registered & ~hinted) != 0)
            else:
                queue_always |= registered & ~hinted
            ask |= registered & hinted
        period = self.config.unschedulable_flush_period
        last_tick = math.floor(now / period) * period
        timed_out = c["alive"] & (last_tick - c["since"] > self.config.max_in_unschedulable)
        hit = (c["alive"] & ((c["bits"] & queue_always) != 0)) | capped
        if ask:
            for i in np.flatnonzero(c["alive"] & ~hit & ((c["bits"] & ask) != 0)):
                hit[i] = self._worth_requeuing(self._parked.pods[i], objects)
        moving = hit | timed_out
        if not moving.any():
            return
        backing_off = moving & (c["until"] > now)
        retry = moving & ~backing_off
        doomed = np.zeros(n, dtype=bool)
        fast_events = set(events) <= _FAST_EVENTS and self._fast
        if fast_events:
            resource_only = (c["bits"] & ~self._fast) == 0
            changed = np.fromiter(sorted(set().union(*events.values())), dtype=np.int64)
            can_fit = self._fits_any(c, nodes, changed)
            doomed = retry & resource_only & ~can_fit & ~timed_out
            if timed_out.any():  # a timed-out pod is retried whatever changed: check it on every node
                doomed |= self._doomed_everywhere(c, nodes, retry & resource_only & timed_out)
        elif not events:  # only the timeout flush: state unchanged, resource-only pods still fit nowhere
            resource_only = (c["bits"] & ~self._fast) == 0
            doomed = self._doomed_everywhere(c, nodes, retry & resource_only)
        if self.config.kube_version != "1.32":
            for i in np.flatnonzero(timed_out):  # FlushTimestamp (only a PreEnqueue gate would keep it)
                self._parked.pods[i].flushed_at = now
        for i in np.flatnonzero(backing_off):
            self._backoff.push(self._parked.take(int(i)))
        for i in np.flatnonzero(retry & ~doomed):
            self.add(self._parked.take(int(i)))
        if self.shortcut is not None:
            self.shortcut.extend(self._parked.pods[int(i)].name for i in np.flatnonzero(doomed))
        for i in np.flatnonzero(doomed):
            key = (int(c["prio"][i]), float(c["ts"][i]), int(c["seq"][i]))
            heapq.heappush(self._unpopped, (key, int(i)))
        if doomed.any():
            c["attempts"][doomed] += 1
            c["until"][doomed] = self.config.retry_at_many(c["attempts"][doomed], now)
            c["ts"][doomed] = now
            c["since"][doomed] = now

    def _worth_requeuing(self, pod: PodInfo, objects: list[_Asked]) -> bool:
        """isPodWorthRequeuing: some plugin that rejected the pod hints Queue for some event. A nominated
        pod's deletion asks the hints too (they read a nominated pod as assigned), for pods its
        priority cap lets through."""
        for kind, obj, cap in objects:
            if cap is not None and pod.priority > cap:
                continue
            asked = self._hinted_bits.get(kind, 0) & self.bits(pod.rejected_by)
            for name in pod.rejected_by:
                if not asked & self._bit.get(name, 0):
                    continue
                plugin = self._hints.get((pod.scheduler_name, name))
                if plugin is None or plugin.queueing_hint(pod, kind, obj):
                    return True
        return False

    def _doomed_everywhere(self, c: dict[str, np.ndarray], nodes: NodeTable, rows: np.ndarray) -> np.ndarray:
        out = np.zeros(rows.size, dtype=bool)
        sel = np.flatnonzero(rows)
        if sel.size:
            out[sel] = ~self._fits_any({k: c[k][sel] for k in ("cpu", "mem")}, nodes, nodes.all)
        return out

    @staticmethod
    def _fits_any(c: dict[str, np.ndarray], nodes: NodeTable, changed: np.ndarray) -> np.ndarray:
        if changed.size == 0:
            return np.zeros(c["cpu"].size, dtype=bool)
        free_cpu, free_mem, free_pods = nodes.free(changed)
        ok = fits(
            c["cpu"][:, None], c["mem"][:, None], free_cpu[None, :], free_mem[None, :], free_pods[None, :],
            nodes.mem_limited[changed][None, :],
        )  # fmt: skip
        ok &= nodes.schedulable[changed][None, :]
        return ok.any(axis=1)
