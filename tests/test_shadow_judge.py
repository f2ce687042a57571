"""The `--sync queue` shadow check (cluster/shadowjudge.py) on hand-made steps: what the real scheduler did
is given, the shadow twin judges and mirrors it. A judge must not report, nor cause, false mismatches."""

from __future__ import annotations

import threading
from concurrent import futures

from test_kube137 import cluster
from test_nominated import nominated, run_on, submit

from batkube_py.cluster.parity import Parity
from batkube_py.cluster.shadowjudge import ShadowJudge
from batkube_py.controlplane.podwatch import PodView


class Watch:
    def __init__(self):
        self.cond = threading.Condition()
        self.pods: dict[str, PodView] = {}
        self.evictions: list[tuple[str, str]] = []


class Judge(ShadowJudge):
    """The judge alone: `real` is what kube-scheduler popped and bound in the step."""

    def __init__(self, shadow, popped: list[str], bound: dict[str, str]):
        self.shadow, self.watch, self.parity, self._tried = shadow, Watch(), Parity(None), set()
        self._real = {"popped": popped, "bound": bound, "last": {q: i for i, q in enumerate(popped)}}
        shadow.attempts = self


class LateJudge(Judge):
    """The real outcome still on its way while the twin judges (cluster/settlereply.py): `_real` waits for
    it, and the rankings of the twin's attempts are computed ahead, on this thread."""

    def __init__(self, shadow, popped: list[str], bound: dict[str, str]):
        super().__init__(shadow, popped, bound)
        real, self.ranked_ahead = self._real, 0
        self._settling = futures.Future()
        threading.Timer(0.05, self._settling.set_result, [real]).start()
        rank = self.parity.rank

        def counted(*args):
            self.ranked_ahead += self._settling is not None and not self._settling.done()
            return rank(*args)

        self.parity.rank = counted

    @property
    def _real(self) -> dict:
        if self._settling is not None:
            self._real_value, self._settling = self._settling.result(), None
        return self._real_value

    @_real.setter
    def _real(self, value: dict) -> None:
        self._real_value = value


def test_a_preemptor_waiting_for_its_victims_takes_no_nomination_away():
    """P preempted on n0 earlier (victim v terminating) and low-priority R is nominated to n0 too. In this
    step P is tried again and fails (still waiting for v: no new preemption, its nomination stays), while
    another preemptor evicts w on n1. Upstream clears lower nominations only where it preempts: R keeps
    n0. The judge used to hand the shadow every eviction of the step as P's victims, so R lost it."""
    c = cluster("1.37", {"cpu": "2"}, {"cpu": "2"})
    v = run_on(c, 0, "v", cpu="2", priority=0)
    v.terminating = True
    run_on(c, 1, "w", cpu="2", priority=0)
    p = submit(c, "P", 0.0, cpu="2", priority=10)
    c.nodes.nominate(p, 0)
    nominated(c, "R", 0, cpu="1", priority=5)
    judge = Judge(c, popped=["P"], bound={})
    judge.watch.pods["P"] = PodView(nominated="n0", reason="0/2 nodes are available")
    judge.watch.evictions = [("w", "deleted by the cluster (preemption victim?)")]
    c.schedule(1.0)
    assert c.pods["R"].nominated_node == 0
    assert p.nominated_node == 0 and judge.parity.mismatches == []
    assert not c.pods["w"].terminating  # n1's eviction is another preemption's, mirrored with it


def test_a_nomination_the_real_queue_made_earlier_in_the_step_is_in_place_for_later_pods():
    """kube-scheduler tried P, then Q: P failed and was nominated to n0 (evicting v), so Q, of the same
    priority, saw n0 promised to P and went to n1. The twin's queue tries Q first (it came earlier): the
    judge must put P's nomination in place before judging Q, or it reports Q's node as worse than n0
    (a false placement row). The order the two queues tried them in is a timing row, honestly."""
    c = cluster("1.37", {"cpu": "8"}, {"cpu": "4"})
    run_on(c, 0, "v", cpu="2", priority=0)
    run_on(c, 1, "u", cpu="1", priority=20)
    submit(c, "Q", 0.0, cpu="2", priority=10)
    submit(c, "P", 0.5, cpu="8", priority=10)
    judge = Judge(c, popped=["P", "Q"], bound={"Q": "n1"})
    judge.watch.pods["P"] = PodView(nominated="n0", reason="0/2 nodes are available")
    judge.watch.evictions = [("v", "deleted by the cluster (preemption victim?)")]
    c.schedule(1.0)
    assert [r["kind"] for r in judge.parity.mismatches] == ["kube-scheduler's queue tried it before Q, "
                                                            "the twin's queue after"]  # fmt: skip
    assert c.pods["P"].nominated_node == 0 and c.pods["v"].terminating
    assert c.pods["Q"].node == 1
    assert (judge.parity.bindings, judge.parity.failures) == (1, 1)


NEAR_DB = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}  # fmt: skip


def test_a_pod_tried_twice_in_one_step_is_judged_try_by_try():
    """Both queues try A (no db pod yet: it fails), then B (a db pod, bound), whose binding moves A back
    (InterPodAffinity's hint), then A again (bound). The real pops are [A, B, A]: the twin's first try of
    A is the real first pop (a failure), its second the last (the binding). Judging A's first try
    against its final binding reported B as tried out of order: two false timing rows."""
    c = cluster("1.37", {"cpu": "4"})
    submit(c, "A", 0.0, cpu="1", affinity=NEAR_DB)
    submit(c, "B", 0.0, cpu="1", labels={"app": "db"})
    judge = Judge(c, popped=["A", "B", "A"], bound={"A": "n0", "B": "n0"})
    bound = c.schedule(0.0)
    judge._mirror_untried(0.0)
    assert [b.pod for b in bound] == ["B", "A"]
    assert judge.parity.mismatches == []
    assert (judge.parity.bindings, judge.parity.failures) == (2, 1)  # every real pop judged


def test_a_binding_among_tied_nodes_counts_one_tie_and_a_worse_one_names_every_best_node():
    """Three empty nodes tie for P: the real binding to one of them agrees, and counts one tie (a plain
    int in summary.json). Then Q bound to the fuller node is a row naming both nodes left empty."""
    import json

    c = cluster("1.37", {"cpu": "4"}, {"cpu": "4"}, {"cpu": "4"}, {"cpu": "4"}, parallelism=1)
    run_on(c, 3, "busy", cpu="2", priority=0)
    submit(c, "P", 0.0, cpu="1")
    judge = Judge(c, popped=["P"], bound={"P": "n1"})
    c.schedule(1.0)
    assert judge.parity.mismatches == [] and judge.parity.ties == 1
    assert json.dumps(judge.parity.summary())
    submit(c, "Q", 1.0, cpu="1")
    judge = Judge(c, popped=["Q"], bound={"Q": "n3"})
    c.schedule(2.0)
    [row] = judge.parity.mismatches
    assert row["kind"] == "not in the twin's best-score set" and row["twin_best"] == "n0 n2"


def test_a_reply_still_on_its_way_gives_the_same_verdicts_ranked_ahead():
    """The same two steps as above, the real outcome arriving 50 ms into each: the twin ranks the nodes
    while it waits (one ranking per binding), and the verdicts and the tie count do not change."""
    c = cluster("1.37", {"cpu": "4"}, {"cpu": "4"}, {"cpu": "4"}, {"cpu": "4"}, parallelism=1)
    run_on(c, 3, "busy", cpu="2", priority=0)
    submit(c, "P", 0.0, cpu="1")
    judge = LateJudge(c, popped=["P"], bound={"P": "n1"})
    c.schedule(1.0)
    assert judge.parity.mismatches == [] and judge.parity.ties == 1 and judge.ranked_ahead == 1
    assert c.pods["P"].node == 1
    submit(c, "Q", 1.0, cpu="1")
    judge = LateJudge(c, popped=["Q"], bound={"Q": "n3"})
    c.schedule(2.0)
    [row] = judge.parity.mismatches
    assert row["kind"] == "not in the twin's best-score set" and row["twin_best"] == "n0 n2"
    assert judge.ranked_ahead == 1 and c.pods["Q"].node == 3
