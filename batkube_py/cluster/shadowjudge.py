"""The shadow twin's side of a `--sync queue` step: each pod the twin's queue tries is judged against what
the real kube-scheduler did with it in the same step (a binding against the twin's best nodes, a failure
against the twin's failure), a pod only one queue tried is a timing mismatch, and the shadow then mirrors
the real outcome so that both go on from the real state (queued.py runs the step)."""

from __future__ import annotations

from batkube_py.cluster.embedded import Outcome
from batkube_py.scheduler.framework import Decision
from batkube_py.scheduler.podinfo import PodInfo


class ShadowJudge:
    """Mixed into QueueCluster: `_real` holds what the real scheduler popped and bound in this step,
    `_tried` the pods the twin's queue tried."""

    _settling = None  # the step's settle reply while it is still awaited (settlereply.py)

    def attempt(self, pod: PodInfo, twin: Decision, now: float) -> Outcome:
        """The twin's queue popped `pod`: what did the real scheduler do with it in this step?

        A pod can be tried several times in one step (it failed, then an event of the same step moved
        it back, e.g. a pod of its spread selector bound elsewhere): the twin's k-th try is judged
        against the real queue's k-th pop of it, which failed unless it is the last."""
        self._tried.add(pod.name)
        # while the settle is still under way, the twin's ranking of the nodes (parity.check's) is
        # computed on this core: it leaves no trace, and is redone if the state changes below
        ranked = self.parity.rank(pod, twin, self.shadow) if self._settling is not None else None
        pops = self._pops(pod.name)
        i = pops.pop(0) if pops else None
        if i is not None and self._catch_up(pod.name, now, i):  # judged on the state the real one had
            twin = self.shadow.profiles[pod.scheduler_name].schedule_one(pod, self.shadow.nodes)
            ranked = None
        if i is None:
            self.parity.timing(now, pod, "the twin's queue tried it, kube-scheduler's did not",
                               self.shadow.nodes.names, twin)  # fmt: skip
            return Outcome(None, pod.nominated_node)
        if pops:  # the real scheduler tries it again in this step: this try failed
            self.parity.failed(pod, twin, self.shadow, None, "", now)
            return Outcome(None, pod.nominated_node)
        node = self._real["bound"].get(pod.name)
        if node is not None:
            index = self.shadow.nodes.index[node]
            self.parity.check(pod, twin, self.shadow, index, now, ranked)
            return Outcome(index)
        reason, nominated, victims = self._real_failure(pod.name)
        self.parity.failed(pod, twin, self.shadow, nominated, reason, now)
        return Outcome(None, nominated, victims)

    def _real_failure(self, name: str) -> tuple[str, int | None, tuple[str, ...]]:
        """The real scheduler's failure of `name` in this step: its reason, the node it nominated, the
        victims of that preemption."""
        with self.watch.cond:
            view = self.watch.pods.get(name)
            evicted = [p for p, _ in self.watch.evictions]
        if view is None:
            return "", None, ()
        nominated = self.shadow.nodes.index.get(view.nominated) if view.nominated else None
        return view.reason, nominated, self._victims(evicted, nominated)

    def _victims(self, evicted: list[str], node: int | None) -> tuple[str, ...]:
        """The step's evictions that are this preemption's: on its node, not yet terminating. Without
        them the attempt preempted nothing (the preemptor waits for earlier victims), and the pods
        nominated to that node keep their nomination, as upstream's do."""
        pods = self.shadow.pods
        return tuple(p for p in evicted if p in pods and pods[p].node == node and not pods[p].terminating)

    def _pops(self, name: str) -> list[int]:
        """Where in this step's real pops the pod's tries the twin has not matched yet come."""
        left = self._real.setdefault("left", {})
        if name not in left:
            left[name] = [k for k, q in enumerate(self._real["popped"]) if q == name]
        return left[name]

    def _catch_up(self, name: str, now: float, i: int) -> bool:
        """Mirror the real bindings of pods the real queue popped before its `i`-th pop (of `name`) and
        the twin's has not yet: the pops came in another order (a timing mismatch), and the pod is judged
        on the real state."""
        last = self._real["last"]
        index, names = self.shadow.nodes.index, self.shadow.nodes.names
        moved = False
        for q, node in self._real["bound"].items():
            j, info = last.get(q), self.shadow.pods.get(q)
            if q == name or j is None or j > i or info is None or info.node is not None:  # or mirrored
                continue
            why = f"kube-scheduler's queue tried it before {name}, the twin's queue after"
            self.parity.timing(now, self.shadow.pods[q], why, names, None, node)
            self.shadow.bind(q, index[node], now)
            self._tried.add(q)
            moved = True
        return self._catch_up_nominations(name, i, now) or moved

    def _catch_up_nominations(self, name: str, i: int, now: float) -> bool:
        """Mirror the nominations of preemptors the real queue failed before `name` and the twin's queue
        has not tried yet: the real scheduler tried `name` with them in place (its nominator holds them
        from the failure on). They stay in the twin's queue, to be judged when it tries them."""
        moved = False
        for q in self._real["popped"][:i]:
            pod = self.shadow.pods.get(q)
            if pod is None or q in self._tried or q in self._real["bound"]:
                continue
            _, node, victims = self._real_failure(q)
            if node is None or node == pod.nominated_node:
                continue
            names = self.shadow.nodes.names
            why = f"kube-scheduler's queue tried it before {name}, the twin's queue after"
            self.parity.timing(now, pod, why, names, None, names[node])
            self.shadow.mirror_preemption(pod, Outcome(None, node, victims))
            moved = True
        return moved

    def _shortcut(self, now: float) -> None:
        """Pods the twin's queue retried without a cycle (they fit no node, queue.py): tried at this time
        as the ones it popped, their failure certain; the real scheduler must have tried and failed them."""
        names = self.shadow.nodes.names
        for name in self.shadow.queue.shortcut or ():
            pod = self.shadow.pods.get(name)
            pops = self._pops(name) if pod is not None else []
            if pod is None or (name in self._tried and not pops):
                continue
            self._tried.add(name)
            if pops:
                pops.pop(0)
            if not pops and (node := self._real["bound"].get(name)) is not None:
                self.parity.bindings += 1
                self.parity.mismatch(now, pod, "the twin's queue found it fits no node", node)
                self.shadow.bind(name, self.shadow.nodes.index[node], now)
            elif name in self._real["popped"]:
                self.parity.failures += 1
            else:
                why = "the twin's queue tried it, kube-scheduler's did not"
                self.parity.timing(now, pod, why, names, None)
        self.shadow.queue.shortcut = []

    def _mirror_untried(self, now: float) -> None:
        """Real tries the twin's queue did not match now (a pod it did not pop, or popped fewer times):
        timing mismatches; the real bindings among them are mirrored anyway."""
        index, names = self.shadow.nodes.index, self.shadow.nodes.names
        why = "kube-scheduler's queue tried it, the twin's did not"
        left = self._real.get("left", {})  # pods tried one by one: their real pops not yet matched

        def unmatched(pod: str) -> bool:
            return pod in self.shadow.pods and (pod not in self._tried or bool(left.get(pod)))

        for pod, node in self._real["bound"].items():
            if unmatched(pod) and self.shadow.pods[pod].node is None:
                self.parity.timing(now, self.shadow.pods[pod], why, names, None, node)
                self.shadow.bind(pod, index[node], now)
        for pod in sorted(set(self._real["popped"]) - set(self._real["bound"])):
            if unmatched(pod):
                self.parity.timing(now, self.shadow.pods[pod], why, names, None)
