"""Preemption's arithmetic dry run (scheduler/dryrun.py) and the batched nominated-node pass
(scheduler/nominated.py) against the general paths they stand in for: same victims, same candidates,
same nominated node, same verdicts and reasons, on seeded random clusters."""

from __future__ import annotations

import random
from functools import partial

import numpy as np
import pytest
from test_nominated import ANTI_X
from test_plugins_common import pod, table

from batkube_py.scheduler import nominated
from batkube_py.scheduler.config import build_profiles, default_config
from batkube_py.scheduler.dryrun import requests_dry_run
from batkube_py.scheduler.framework import CycleState, FilterResult, Plugin
from batkube_py.scheduler.preemption import _victims_on, more_important_first, nominable, preempt

GPU = "nvidia.com/gpu"


def profile(seed: int = 0):
    return build_profiles(default_config(), seed)[0]


def random_cluster(rng: random.Random, n_nodes: int):
    specs = []
    for _ in range(n_nodes):
        spec = {"cpu": str(rng.choice([2, 4, 8])), "pods": str(rng.choice([3, 5, 110]))}
        spec["disk"] = rng.choice("ab")
        if rng.random() < 0.8:  # the others model no memory
            spec["memory"] = rng.choice(["2Gi", "4Gi", "8Gi"])
        if rng.random() < 0.4:
            spec[GPU] = str(rng.choice([1, 2, 4]))
        if rng.random() < 0.2:
            spec["taints"] = "dedicated=x:NoSchedule"
        specs.append(spec)
    nodes = table(*specs)
    for i in range(n_nodes):
        if rng.random() < 0.1:
            nodes.set_schedulable(i, False)
    seq = 0
    for i in range(n_nodes):
        for _ in range(rng.randint(0, 6)):
            p = random_pod(rng, f"r{seq}", seq)
            p.bound_at = float(rng.randint(0, 5))
            p.terminating = rng.random() < 0.1
            seq += 1
            if fit(nodes, i, p):
                p.node = i
                nodes.assume(i, p)
    for k in range(rng.randint(0, 4)):
        nodes.nominate(random_pod(rng, f"nom{k}", 1000 + k), rng.randrange(n_nodes))
    return nodes


def fit(nodes, i: int, p) -> bool:
    alloc, req = nodes.alloc_ext, nodes.req_ext
    ext = all(r in alloc and req[r][i] + q <= alloc[r][i] for r, q in p.extended.items())
    mem = not nodes.mem_limited[i] or p.memory <= nodes.free_mem[i]
    return ext and mem and p.milli_cpu <= nodes.free_cpu[i] and nodes.free_pods[i] >= 1


def random_pod(rng: random.Random, name: str, seq: int, **extra):
    job = {
        "cpu": f"{rng.choice([0, 100, 500, 1000, 2500])}m",
        "memory": rng.choice(["0", "100Mi", "1Gi", "3Gi"]),
        "priority": rng.choice([0, 1, 1, 5, 10]),
        **extra,
    }
    if rng.random() < 0.25:
        job["extendedResources"] = {GPU: str(rng.choice([1, 2]))}
    if rng.random() < 0.2:
        job["nodeSelector"] = {"disk": "a"}
    if rng.random() < 0.2:
        job["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    p = pod(name, **job)
    p.seq = seq
    return p


def same_choice(prof, p, nodes) -> None:
    state = prof.rng.bit_generator.state
    general = preempt(prof, p, nodes, fast=False)
    prof.rng.bit_generator.state = state
    fast = preempt(prof, p, nodes)
    assert (general is None) == (fast is None)
    if general is not None:
        assert (fast.node, fast.victims) == (general.node, general.victims)
    assert nominable(prof, p, nodes) == nominable(prof, p, nodes, fast=False)


def compare_dry_runs(seed: int) -> int:
    """How many of the preemptors found a node, after checking the fast and general paths agree."""
    rng = random.Random(seed)
    nodes = random_cluster(rng, rng.randint(3, 30))
    prof = profile(seed)
    chosen = 0
    for k in range(6):
        p = random_pod(rng, f"pre{k}", 5000 + k, priority=rng.choice([5, 10, 100]))
        dry = requests_dry_run(prof, p, nodes)
        assert dry is not None
        candidates = set(dry.candidates.tolist())
        for i in range(len(nodes)):
            general = _victims_on(prof, p, nodes, i)
            fast = dry.victims_on(i, partial(more_important_first, nodes)) if i in candidates else None
            assert (fast or None) == (general or None), (seed, k, i)
        same_choice(prof, p, nodes)
        chosen += preempt(prof, p, nodes) is not None
    return chosen


def test_arithmetic_dry_run_selects_the_general_dry_runs_victims_on_every_node():
    chosen = [compare_dry_runs(seed) for seed in range(40)]
    assert sum(chosen) > 60  # not vacuous: most preemptors find a node


def test_nodes_are_left_as_they_were():
    rng = random.Random(7)
    nodes = random_cluster(rng, 20)
    before = [list(d) for d in nodes.pods_on], nodes.req_cpu.copy(), dict(nodes.priorities)
    assert preempt(profile(), pod("pre", cpu="3", priority=100), nodes) is not None
    assert [list(d) for d in nodes.pods_on] == before[0]  # same pods, same order
    assert (nodes.req_cpu == before[1]).all() and nodes.priorities == before[2]


def test_ties_go_to_the_first_candidate_from_the_offset():
    nodes = table(*[{"cpu": "2", "memory": "4Gi"}] * 6)
    for i in range(6):
        p = pod(f"low{i}", cpu="2", priority=0)
        p.seq, p.node = i, i
        nodes.assume(i, p)
    prof = profile(3)
    for _ in range(10):
        same_choice(prof, pod("pre", cpu="1", priority=5), nodes)


def fallback(nodes, p) -> bool:
    return requests_dry_run(profile(), p, nodes) is None


def test_pods_that_other_pods_can_constrain_take_the_general_dry_run():
    nodes = table({"cpu": "2", "zone": "a"}, {"cpu": "2", "zone": "b"})
    for i in range(2):
        low = pod(f"low{i}", cpu="2", priority=0, labels={"app": "x"})
        low.node, low.seq = i, i
        nodes.assume(i, low)
    assert not fallback(nodes, pod("plain", cpu="1", priority=5))
    assert fallback(nodes, pod("anti", cpu="1", priority=5, affinity=ANTI_X))
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "x"}},
        }
    ]
    assert fallback(nodes, pod("spread", cpu="1", priority=5, topologySpreadConstraints=spread))
    soft = [dict(spread[0], whenUnsatisfiable="ScheduleAnyway")]
    assert not fallback(nodes, pod("soft", cpu="1", priority=5, topologySpreadConstraints=soft))


def test_an_assigned_pods_anti_affinity_matching_the_preemptor_takes_the_general_dry_run():
    """n0 has the room but its pod's anti-affinity keeps "x" out: only evicting it helps, which the
    arithmetic (cpu alone) would not see."""
    nodes = table({"cpu": "2"}, {"cpu": "2"})
    guard = pod("guard", cpu="1", priority=0, labels={"app": "y"}, affinity=ANTI_X)
    other = pod("other", cpu="1", priority=0)
    for i, p in enumerate((guard, other)):
        p.node, p.seq = i, i
        nodes.assume(i, p)
    x = pod("x", cpu="2", priority=5, labels={"app": "x"})
    assert fallback(nodes, x)
    assert not fallback(nodes, pod("z", cpu="2", priority=5, labels={"app": "z"}))
    prof = profile()
    assert nominable(prof, x, nodes) == nominable(prof, x, nodes, fast=False) == [0, 1]
    x1 = pod("x1", cpu="1", priority=5, labels={"app": "x"})  # fits n1 as it is, n0 only without guard
    assert nominable(prof, x1, nodes) == [0]
    assert _victims_on(prof, x1, nodes, 0) == [guard]


class CountsPods(Plugin):
    """A filter reading pods on other nodes: nothing may be assumed about it."""

    name = "CountsPods"
    filters = True

    def filter(self, state, pod, nodes, idx):
        return FilterResult(nodes.pod_count[idx] < 2 + int(nodes.pod_count.sum() > 100))


def test_an_unknown_filter_takes_the_general_paths():
    nodes = table({"cpu": "2"}, {"cpu": "2"})
    prof = profile()
    prof.filters = [*prof.filters, CountsPods()]
    p = pod("pre", cpu="1", priority=5)
    assert requests_dry_run(prof, p, nodes) is None
    state = CycleState()
    prof.pre_filter(state, p, nodes)
    assert not nominated.node_local(state.filters)


@pytest.mark.parametrize("seed", range(30))
def test_batched_nominated_pass_gives_each_nodes_own_verdict_and_reasons(seed):
    rng = random.Random(1000 + seed)
    nodes = random_cluster(rng, rng.randint(3, 30))
    for k in range(rng.randint(2, 8)):
        nodes.nominate(random_pod(rng, f"wait{k}", 2000 + k, priority=100), rng.randrange(len(nodes)))
    prof = profile(seed)
    for k in range(5):
        p = random_pod(rng, f"q{k}", 3000 + k)
        state = CycleState()
        assert prof.pre_filter(state, p, nodes) is None
        if not state.nominated:
            continue
        assert nominated.node_local(state.filters)
        on = np.fromiter(state.nominated, dtype=np.int64)
        one = [nominated._one(prof, state, p, nodes, i) for i in on.tolist()]
        with_them = nominated.fail_with_nominated(prof, state, p, nodes, on)
        for bad, i in zip(with_them.tolist(), on.tolist(), strict=True):
            assert bad == (nominated.fail_with_nominated(prof, state, p, nodes, np.array([i]))[0])
        kept, reasons, rejected, _ = nominated.filter_nodes(prof, state, p, nodes, on)
        assert kept.tolist() == [i for i, r in zip(on.tolist(), one, strict=True) if r[0]]
        expected: dict[str, int] = {}
        for _, why, _ in one:
            for reason, n in why.items():
                expected[reason] = expected.get(reason, 0) + n
        assert list(reasons.items()) == list(expected.items())  # same counts, same order
        assert rejected == set().union(*(by for _, _, by in one))


def tenths(n: int):
    """n full two-core nodes, node i running one pod of priority i // 10."""
    nodes = table(*[{"cpu": "2", "memory": "4Gi"}] * n)
    for i in range(n):
        p = pod(f"low{i}", cpu="2", priority=i // 10)
        p.seq, p.node = i, i
        nodes.assume(i, p)
    return nodes


def test_beyond_want_candidates_a_node_best_in_some_run_of_want_can_be_nominated():
    # 150 candidates, want = max(10 % of 150, 100) = 100: upstream ranks the 100 from its offset, so the
    # node it nominates is the best of some 100 consecutive candidates, not always the best of all
    nodes, pre = tenths(150), pod("pre", cpu="1", priority=100)
    # priority k runs from node 10k to node 149 (node 0 has priority 0): 150 - 10k >= 100 for k <= 5
    assert nominable(profile(), pre, nodes) == list(range(60))
    chosen = {preempt(profile(seed), pre, nodes).node for seed in range(300)}
    assert chosen <= set(range(60)) and max(chosen) > 9  # not only the best of all
    # 100 candidates: every one ranked, the best of all only
    assert nominable(profile(), pre, tenths(100)) == list(range(10))
