"""The twin's kube-scheduler 1.37.2 semantics, each against the mechanism read in upstream's source at
v1.37.2 (pkg/scheduler/...; ../shared/KUBE_SCHEDULER_1.37.md), next to what 1.32 does on the same case."""

from __future__ import annotations

import random

import numpy as np
import pytest
from test_nominated import nominated, placed, run_on, submit
from test_plugins_common import CountingPlugin, pod, table

from batkube_py.cluster.embedded import EmbeddedCluster
from batkube_py.scheduler.backoffq import QueueConfig
from batkube_py.scheduler.config import ConfigError, build_profiles, default_config, parse_config
from batkube_py.scheduler.framework import SKIP, CycleState
from batkube_py.scheduler.parked import Parked
from batkube_py.scheduler.plugins.noderesources import BalancedAllocation
from batkube_py.scheduler.preemption import potential_nodes, preempt
from batkube_py.scheduler.queue import SchedulingQueue
from batkube_py.scheduler.ties import go_heap_root, go_heap_root_numpy, pick
from batkube_py.scheduler.versions import backoff_duration

GI = 1024**3


def cluster(version: str, *specs: dict, seed: int = 0, parallelism: int = 16) -> EmbeddedCluster:
    nodes = table(*specs).nodes
    cfg = default_config(version)
    cfg.parallelism = parallelism
    profiles = build_profiles(cfg, seed)
    return EmbeddedCluster(nodes, profiles=profiles, queue_config=QueueConfig(kube_version=version))


def config(version: str, plugins: dict, args: list | None = None):
    prof = {"schedulerName": "default-scheduler", "plugins": plugins, "pluginConfig": args or []}
    doc = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [prof]}  # fmt: skip
    return parse_config(doc, version)


# ---- §1 default plugins -------------------------------------------------------------------------------


def test_default_profile_137_order_weights_and_inert_newcomers():
    """default_plugins.go getDefaultPlugins + applyFeatureGates (1.37.2): NodeName before
    NodeUnschedulable, DynamicResources (weight 2) before DefaultPreemption, NodeDeclaredFeatures last;
    for pods without claims or declared-feature needs both skip, so neither filters nor scores here."""
    (spec,) = default_config("1.37").profiles
    assert spec.points["filter"][:3] == ["NodeName", "NodeUnschedulable", "TaintToleration"]
    assert spec.points["filter"][-1] == "NodeDeclaredFeatures"
    assert spec.points["postFilter"] == ["DynamicResources", "DefaultPreemption"]
    assert spec.points["preEnqueue"] == ["SchedulingGates", "DynamicResources"]
    assert spec.weights["DynamicResources"] == 2
    (profile,) = build_profiles(default_config("1.37"), 0)
    modelled = {p.name for p in profile.filters} | {p.name for p, _ in profile.scorers}
    assert not modelled & {"DynamicResources", "NodeDeclaredFeatures"}
    (old,) = default_config("1.32").profiles
    assert old.points["filter"][:2] == ["NodeUnschedulable", "NodeName"]
    assert "DynamicResources" not in old.weights


def test_configs_naming_the_137_plugins_parse_for_137_only():
    plugins = {"multiPoint": {"enabled": [{"name": "DynamicResources", "weight": 3}]},
               "filter": {"disabled": [{"name": "NodeDeclaredFeatures"}]}}  # fmt: skip
    (spec,) = config("1.37", plugins).profiles
    assert spec.weights["DynamicResources"] == 3 and "NodeDeclaredFeatures" not in spec.points["filter"]
    with pytest.raises(ConfigError, match="unknown plugin 'DynamicResources'"):
        config("1.32", plugins)


# ---- §4.2 BalancedAllocation ----------------------------------------------------------------------------


def _balanced(version: str, p, nodes) -> list[int]:
    plugin = BalancedAllocation()
    plugin.kube_version = version
    state = CycleState()
    if plugin.pre_score(state, p, nodes, nodes.all) == SKIP:
        return [0] * len(nodes)
    return plugin.score(state, p, nodes, nodes.all).tolist()


@pytest.mark.parametrize("default_resources", [True, False])
def test_balanced_allocation_137_scores_the_change_in_balance(default_resources):
    """balanced_allocation.go (1.37.2) Score: 50 + (50 + with − without)/2 in Go integer division, with
    balancedResourceScorer's int64((1 − std)·100) on requests with and without the pod."""
    nodes = table({"cpu": "4", "memory": "8Gi"}, {"cpu": "4", "memory": "8Gi"})
    other = pod("o", cpu="2", memory="1Gi")
    other.node = 1
    nodes.assume(1, other)
    p = pod("p", cpu="1", memory="1Gi")
    if not default_resources:  # the general column path (an extra, unrequested resource is left out)
        p.cache.clear()
        plugin_resources = ["cpu", "memory", "example.com/foo"]
        plugin = BalancedAllocation(plugin_resources)
        plugin.kube_version = "1.37"
        got = plugin.score(CycleState(), p, nodes, nodes.all).tolist()
    else:
        got = _balanced("1.37", p, nodes)
    # n0 empty: without 100; with f = (.25, .125), std .0625 → 93; 50 + (50 + 93 − 100)/2 = 50 + 21 = 71
    # n1: without f = (.5, .125) → std .1875 → 81; with f = (.75, .25) → std .25 → 75; 50 + 44/2 = 72
    assert got == [71, 72]
    assert _balanced("1.32", p, nodes) == [93, 75]  # the 1.32 formula prefers the other node


def test_balanced_allocation_137_skips_best_effort_pods():
    """balanced_allocation.go PreScore (1.37.2): Skip when the pod requests 0 of every configured
    resource (actual requests, not the non-zero defaults): every node scores 0."""
    nodes = table({"cpu": "4", "memory": "8Gi"}, {"cpu": "2", "memory": "8Gi"})
    p = pod("p", cpu="1")
    p.milli_cpu, p.memory = 0, 0
    assert _balanced("1.37", p, nodes) == [0, 0]
    assert _balanced("1.32", p, nodes) == [100, 100]


# ---- §3 tie-breaking ------------------------------------------------------------------------------------


def _go_container_heap_root(scores: list[int]) -> int:
    """container/heap as Go writes it: Init calls down(i, n) for i = n/2−1 … 0; down picks the left
    child j1, the right one only if Less(j2, j1), and swaps while Less(j, i); Less = higher score."""
    h = list(range(len(scores)))

    def less(a: int, b: int) -> bool:
        return scores[h[a]] > scores[h[b]]

    n = len(h)
    for i0 in reversed(range(n // 2)):
        i = i0
        while (j1 := 2 * i + 1) < n:
            j = j1 + 1 if j1 + 1 < n and less(j1 + 1, j1) else j1
            if not less(j, i):
                break
            h[i], h[j] = h[j], h[i]
            i = j
    return h[0]


def test_go_heap_root_matches_container_heap():
    """sorted_nodes.go NewSortedScoredNodes + Pop (1.37.2): [A5, B5, C10, D10] → D, not the first max."""
    total = np.array([5, 5, 10, 10], dtype=np.int64)
    assert go_heap_root(total) == go_heap_root_numpy(total) == 3
    rng = random.Random(7)
    for _ in range(500):
        scores = [rng.choice([90, 95, 100]) for _ in range(rng.randint(1, 40))]
        total = np.array(scores, dtype=np.int64)
        assert go_heap_root(total) == go_heap_root_numpy(total) == _go_container_heap_root(scores)


def test_pick_137_is_deterministic_and_132_is_seeded():
    total = np.array([7, 9, 9, 9, 3], dtype=np.int64)
    assert pick(total, 1, 3, "1.37", np.random.default_rng(0)) == _go_container_heap_root(total.tolist())
    chosen = {pick(total, 1, 3, "1.32", np.random.default_rng(s)) for s in range(30)}
    assert chosen == {1, 2, 3}
    assert pick(total, 1, 1, "1.37", np.random.default_rng(0)) == 1


def test_schedule_137_takes_the_heap_root_over_the_feasible_order():
    """schedule_one.go schedulePod (1.37.2): the feasible nodes in filtering order (parallelism 1: the
    rotation from nextStartNodeIndex, here 0) go into the heap; two busy nodes then two empty ones
    score [A, A, B, B] with B > A, and the root is the last node, whatever the seed."""
    for seed in range(5):
        c = cluster("1.37", *[{"cpu": "4", "memory": "8Gi"}] * 4, seed=seed, parallelism=1)
        run_on(c, 0, "b0", cpu="1", memory="1Gi")
        run_on(c, 1, "b1", cpu="1", memory="1Gi")
        submit(c, "p", cpu="1", memory="1Gi")
        assert placed(c) == {"p": "n3"}


def test_schedule_137_with_parallel_workers_draws_the_order_from_the_seed():
    """With 16 workers (4 nodes: chunks of one node, 4 workers) any order of the four can reach the heap,
    so either best node can be its root: the seed decides, the same seed the same way; a worse node never."""
    chosen = []
    for seed in range(12):
        for _ in range(2):
            c = cluster("1.37", *[{"cpu": "4", "memory": "8Gi"}] * 4, seed=seed)
            run_on(c, 0, "b0", cpu="1", memory="1Gi")
            run_on(c, 1, "b1", cpu="1", memory="1Gi")
            submit(c, "p", cpu="1", memory="1Gi")
            chosen.append(placed(c)["p"])
    assert chosen[0::2] == chosen[1::2]
    assert set(chosen) == {"n2", "n3"}


# ---- §4.1 NodeResourcesFit unresolvable nodes leave preemption -------------------------------------------


def test_fit_unresolvable_nodes_are_not_potential_preemption_nodes():
    """fit.go fitsRequest (1.37.2): Unresolvable when the request exceeds the node's whole allocatable;
    preemption.go nodesWherePreemptionMightHelp drops those nodes, which sets the random offset's range
    and calculateNumCandidates. 1.32's twin offers every node."""
    specs = [{"cpu": "1"}] * 6 + [{"cpu": "2"}] * 2
    for version, expected in (("1.37", [6, 7]), ("1.32", list(range(8)))):
        c = cluster(version, *specs)
        for i in range(8):
            run_on(c, i, f"v{i}", cpu="1", priority=0)
        p = pod("hi", cpu="2", priority=10)
        profile = c.profiles["default-scheduler"]
        assert potential_nodes(profile, p, c.nodes).tolist() == expected
        found = preempt(profile, p, c.nodes)
        assert found is not None and found.node in (6, 7)


def test_preemption_offset_is_drawn_over_the_potential_nodes_only():
    """The offset is rand.Int31n(len(potentialNodes)): with the profile's seeded generator, the 1.37
    draw equals a draw over the two potential nodes."""
    specs = [{"cpu": "1"}] * 6 + [{"cpu": "2"}] * 2
    c = cluster("1.37", *specs, seed=3)
    for i in range(8):
        run_on(c, i, f"v{i}", cpu="1", priority=0)
    profile = c.profiles["default-scheduler"]
    expected = np.random.default_rng(np.random.SeedSequence([3, 0])).integers(2)
    preempt(profile, pod("hi", cpu="2", priority=10), c.nodes)
    again = np.random.default_rng(np.random.SeedSequence([3, 0]))
    assert again.integers(2) == expected
    assert profile.rng.bit_generator.state == again.bit_generator.state


# ---- §2.3 backoff ----------------------------------------------------------------------------------------


def test_backoff_duration_and_whole_second_windows():
    """backoff_queue.go (1.37.2): calculateBackoffDuration(count, size) = min(initial·2^(count−1), max·
    sqrt(size)); getBackoffTime truncates Timestamp + d to the 1-s window (alignToWindow) and
    isEntityBackingoff holds while expiry ≥ truncate(now), so the entity is retryable at floor(T+d)+1."""
    assert backoff_duration(0, 1, 1.0, 10.0) == 0.0
    assert backoff_duration(3, 1, 1.0, 10.0) == 4.0
    assert backoff_duration(9, 1, 1.0, 10.0) == 10.0
    assert backoff_duration(9, 4, 1.0, 10.0) == 20.0  # a pod group of 4 queued pods
    assert backoff_duration(2, 1, 1.0, 0.0) == 0.0  # podMaxBackoff 0 disables backoff
    new, old = QueueConfig(kube_version="1.37"), QueueConfig(kube_version="1.32")
    assert new.retry_at(1, 3.4) == 5.0 and old.retry_at(1, 3.4) == 4.4
    assert new.retry_at(3, 3.4) == 8.0 and old.retry_at(3, 3.4) == 7.4
    assert new.retry_at(1, 2.0) == 4.0  # T + d = 3 exactly: still in the window of 3
    counts = np.array([1, 2, 3, 9])
    assert new.retry_at_many(counts, 3.4).tolist() == [new.retry_at(int(k), 3.4) for k in counts]
    assert old.retry_at_many(counts, 3.4).tolist() == [old.retry_at(int(k), 3.4) for k in counts]


def test_137_counts_unschedulable_failures_and_errors_apart():
    """scheduling_queue.go AddUnschedulablePodIfNotPresent (1.37.2): rejecting plugins →
    UnschedulableCount++ and ConsecutiveErrorsCount = 0; none → ConsecutiveErrorsCount++; the backoff
    reads ConsecutiveErrorsCount while it is > 0, else UnschedulableCount."""
    q = SchedulingQueue(QueueConfig(kube_version="1.37"), {"NodeResourcesFit": frozenset({"Pod/Delete"})})
    p = pod("p")
    p.rejected_by = frozenset({"NodeResourcesFit"})
    q.failed(p, 0.2)
    q.failed(q.remove("p"), 1.2)
    assert (p.attempts, p.errors, p.backoff_until) == (2, 0, 4.0)  # d = 2 from 1.2
    p.rejected_by = frozenset()
    q.failed(q.remove("p"), 4.5)
    assert (p.attempts, p.errors, p.backoff_until) == (2, 1, 6.0)  # d = 1 (errors count 1)
    p.rejected_by = frozenset({"NodeResourcesFit"})
    q.failed(q.remove("p"), 7.5)
    assert (p.attempts, p.errors, p.backoff_until) == (3, 0, 12.0)  # d = 4


# ---- §2.4 pop from backoffQ ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["1.37", "1.32"])
def test_an_idle_scheduler_pops_a_backing_off_pod_at_once_in_137(version):
    """active_queue.go unlockedPop (1.37.2, SchedulerPopFromBackoffQ): activeQ empty → the head of
    backoffQ, expired or not. In 1.32 the pod waits for its backoff (1 s from t=0) and the 1-s flush."""
    c = cluster(version, {"cpu": "1"})
    run_on(c, 0, "a", cpu="1")
    submit(c, "b", cpu="1")
    assert placed(c, 0.0) == {}
    c.delete_pod("a", 0.5)  # Pod/Delete: b moves, still backing off → backoffQ
    assert placed(c, 0.5) == ({"b": "n0"} if version == "1.37" else {})
    if version == "1.32":
        assert placed(c, 1.0) == {"b": "n0"}


def test_pop_from_backoffq_waits_for_activeq_and_skips_the_error_heap():
    """unlockedPop takes backoffQ's head only when activeQ is empty, and never from the error heap."""
    q = SchedulingQueue(QueueConfig(kube_version="1.37"), {"NodeResourcesFit": frozenset({"Pod/Delete"})})
    nodes = table({"cpu": "1"})
    err = pod("err")
    q.failed(err, 0.0)  # no rejecting plugin: the error heap, retryable at 2.0
    waiting = pod("w")
    waiting.rejected_by = frozenset({"NodeResourcesFit"})
    waiting.backoff_until = 9.0
    q._backoff.push(waiting)
    fresh = pod("fresh")
    q.add(fresh)
    assert q.pop(0.5, nodes) is fresh
    assert q.pop(0.5, nodes) is waiting
    assert q.pop(0.5, nodes) is None
    assert q.pop(2.0, nodes) is err


def test_pods_failed_in_one_instant_keep_the_order_they_were_tried_in():
    """AddUnschedulablePodIfNotPresent stamps each failure with clock.Now(): on a moving clock the next
    PrioritySort order is the order of the failures. With pop from backoffQ, backoffQ's pods are tried
    after activeQ's, by window: a pod with the earlier queue timestamp but the later window fails last.
    A pod retried without a cycle (it fits no node) takes the place in activeQ order it was popped from,
    and is named in `shortcut` for a shadow judging another queue."""
    c = cluster("1.37", {"cpu": "1"}, {"cpu": "800m"})
    c.queue.shortcut = []
    run_on(c, 0, "a", cpu="1")
    run_on(c, 1, "f0.0", cpu="500m")
    last = [0.0]

    def pod_deleted(now: float) -> None:  # n1 keeps 800m, never enough for a 1-cpu pod
        c.delete_pod(f"f{last[0]}", now)
        run_on(c, 1, f"f{now}", cpu="500m")
        last[0] = now

    old = submit(c, "old", 0.0, cpu="1")
    placed(c, 0.0)
    for now in (0.5, 1.2, 3.5, 7.5):  # old's backoff grows to 10 s: window 17 from 7.5
        pod_deleted(now)
        assert placed(c, now) == {}
    young = submit(c, "young", 8.0, cpu="1")
    assert placed(c, 8.0) == {}  # young: window 9
    pod_deleted(8.2)  # both backing off: backoffQ, popped at once by window, young first
    assert placed(c, 8.2) == {}
    assert young.timestamp == old.timestamp == 8.2 and young.seq < old.seq
    pod_deleted(12.6)  # young out of backoff: activeQ (no cycle: fits no changed node); old: backoffQ
    c.queue.shortcut.clear()
    assert placed(c, 12.6) == {}
    assert c.queue.shortcut == ["young"]
    assert c.queue._parked.col["seq"][c.queue._parked.slot["young"]] < old.seq


# ---- §2.2 queueing hints: a deleted nominated pod --------------------------------------------------------


@pytest.mark.parametrize("version", ["1.37", "1.32"])
def test_deleting_a_nominated_pod_requeues_lower_or_equal_priority_pods(version):
    """eventhandlers.go deletePodFromSchedulingQueue (1.37.2): an unscheduled pod with a
    nominatedNodeName deleted → AssignedPodDelete move with getLEPriorityPreCheck; NodeResourcesFit's
    hint queues for it. 1.32 raised no event: the pod waited for the 5-min flush."""
    c = cluster(version, {"cpu": "2"})
    nominated(c, "pre", 0, cpu="2", priority=5)
    submit(c, "low", cpu="1", priority=1)
    assert placed(c, 0.0) == {}  # n0's room is promised to "pre" (priority 5 ≥ 1)
    c.delete_pod("pre", 40.0)  # the nominee goes away unbound
    assert placed(c, 40.0) == ({"low": "n0"} if version == "1.37" else {})


def test_a_deleted_nominee_does_not_wake_higher_priority_pods():
    c = cluster("1.37", {"cpu": "2"})
    nominated(c, "pre", 0, cpu="2", priority=5)
    run_on(c, 0, "busy", cpu="2", priority=9)  # nothing to preempt for anyone
    submit(c, "high", cpu="1", priority=9)
    submit(c, "low", cpu="1", priority=1)
    assert placed(c, 0.0) == {}
    tries = c.queue._parked.col["attempts"]
    before = {name: int(tries[c.queue._parked.slot[name]]) for name in ("high", "low")}
    c.delete_pod("pre", 1.0)
    assert placed(c, 1.0) == {}  # busy still holds n0: "low" is retried (and fails), "high" is not
    after = {name: int(tries[c.queue._parked.slot[name]]) for name in ("high", "low")}
    assert after == {"high": before["high"], "low": before["low"] + 1}


# ---- §2.6 asynchronous preemption ------------------------------------------------------------------------


def test_async_preemption_nominates_at_once_and_others_keep_scheduling():
    """executor.go (1.37.2): the preemptor's cycle ends nominated; the victims' DELETEs are issued
    (terminating) before DefaultPreemption's PreEnqueue would let it in again, so at simulated-time
    granularity it is never held; other pods are scheduled in the same instant; it binds once the
    victims are gone."""
    c = cluster("1.37", {"cpu": "2"}, {"cpu": "1"})
    victim = run_on(c, 0, "victim", cpu="2", priority=0)
    submit(c, "pre", cpu="2", priority=10)
    submit(c, "small", cpu="1", priority=0)
    assert placed(c, 0.0) == {"small": "n1"}
    assert c.pods["pre"].nominated_node == 0 and victim.terminating
    assert [e.pod for e in c.take_evictions()] == ["victim"]
    c.delete_pod("victim", 0.0)
    assert placed(c, 0.0) == {"pre": "n0"}


# ---- §2.5 unschedulable leftover flush -------------------------------------------------------------------


def test_leftover_flush_measures_from_the_later_of_timestamp_and_flush_timestamp():
    """scheduling_queue.go flushUnschedulableEntitiesLeftover (1.37.2): now − max(Timestamp,
    FlushTimestamp) > podMaxInUnschedulablePodsDuration."""
    parked = Parked()
    p = pod("p")
    p.timestamp, p.flushed_at = 10.0, 400.0
    parked.add(p, 1)
    assert parked.col["since"][0] == 400.0
    q = SchedulingQueue(QueueConfig(kube_version="1.37"), {"NodeResourcesFit": frozenset({"Pod/Delete"})})
    q._parked = parked
    assert q.next_wakeup() == 720.0  # the first 30-s tick past 400 + 300


# ---- §2.9 opportunistic batching -------------------------------------------------------------------------


def test_opportunistic_batching_is_inert_by_default_and_refused_where_it_would_be_live():
    """framework.go computeBatchablePlugins + podtopologyspread SignPod (1.37.2): a profile batches
    only if every filter/score plugin signs pods, and PodTopologySpread refuses while its default
    constraints are non-empty (System defaulting). The twin does not model batching: such a 1.37
    profile is refused at load time."""
    default_config("1.37")  # System defaulting: inert, accepted
    listed = [{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}]
    with pytest.raises(ConfigError, match="OpportunisticBatching"):
        config("1.37", {}, listed)
    off = {"multiPoint": {"disabled": [{"name": "PodTopologySpread"}]}}
    with pytest.raises(ConfigError, match="OpportunisticBatching"):
        config("1.37", off)
    config("1.32", off)
    config("1.32", {}, listed)
    custom = {"multiPoint": {"disabled": [{"name": "PodTopologySpread"}],
                             "enabled": [{"name": "test_plugins_common:CountingPlugin"}]}}  # fmt: skip
    assert CountingPlugin.name
    config("1.37", custom)  # a custom plugin has no SignPod: nothing signs, batching stays off


# ---- the switch, end to end -----------------------------------------------------------------------------


def test_run_records_the_twin_version_in_summary_and_log(tmp_path):
    """`batkube run --kube-version` (default 1.37) reaches the twin, summary.json and batkube.log."""
    from test_e2e import ROOT, batkube_run

    workload = ROOT / "workloads" / "spaced_200_delay170.json"
    for version, extra in (("1.37", ()), ("1.32", ("--kube-version", "1.32"))):
        out = tmp_path / version
        code, output, summary = batkube_run(
            out, workload, ROOT / "platforms" / "cluster_16x1core.xml", *extra
        )
        assert code == 0, output
        assert summary["twin_kube_version"] == version
        full = {"1.37": "1.37.2", "1.32": "1.32.6"}[version]
        assert f"embedded twin follows kube-scheduler {full}" in (out / "batkube.log").read_text()


@pytest.mark.parametrize("version", ["1.37", "1.32"])
def test_a_nomination_moved_away_requeues_lower_or_equal_priority_pods(version):
    """eventhandlers.go updatePodInSchedulingQueue (1.37.2): hasNominatedNodeNameChanged → the same
    AssignedPodDelete move with getLEPriorityPreCheck as a deleted nominee; 1.32 has no such move."""
    c = cluster(version, {"cpu": "2"})
    pre = nominated(c, "pre", 0, cpu="2", priority=5)
    submit(c, "low", cpu="1", priority=1)
    assert placed(c, 0.0) == {}
    c.nominate(pre, None)  # e.g. its preemption found nothing this time
    assert placed(c, 40.0) == ({"low": "n0"} if version == "1.37" else {})
