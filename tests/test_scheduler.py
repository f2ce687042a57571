import numpy as np
from kubernetes import client

from batkube_py.adapter import podshape, translate
from batkube_py.cluster.embedded import EmbeddedCluster
from batkube_py.protocol.models import Resource
from batkube_py.scheduler.backoffq import QueueConfig
from batkube_py.scheduler.config import build_profiles, default_config
from batkube_py.scheduler.plugins import BalancedAllocation, NodeResourcesFit
from batkube_py.scheduler.podinfo import pod_info
from batkube_py.scheduler.snapshot import InvariantViolation, NodeTable


def nodes(*specs):
    out = []
    for i, props in enumerate(specs):
        r = Resource(id=i, name=f"n{i}", state="idle", properties=props, zone_properties={})
        out.append(translate.node_from_resource(r))
    return out


def pod(name, cpu=None, memory=None, priority=None):
    job = {"res": 1, "profile": "p", **({"priority": priority} if priority is not None else {})}
    profile = {"type": "delay", "delay": 1}
    if cpu is not None:
        profile["cpu"] = cpu
    if memory is not None:
        profile["memory"] = memory
    p = podshape.pod_from_job(name, job, profile, name)
    assert isinstance(p, client.V1Pod)
    return p


def test_least_allocated_and_balanced_match_upstream_integer_formulas():
    table = NodeTable(nodes({"cpu": "4", "memory": "10000"}, {"cpu": "6", "memory": "10000"}))
    idx = np.arange(2)
    p = pod_info(pod("a", "3", "5000"), "a", 0, 0)
    # cpu (4000-3000)*100/4000 = 25, memory 50 → 37; node 2: cpu 50, memory 50 → 50
    assert NodeResourcesFit().score(None, p, table, idx).tolist() == [37, 50]
    # fractions 0.75/0.5 → std 0.125 → 87; 0.5/0.5 → 100
    assert balanced_132().score(None, p, table, idx).tolist() == [87, 100]
    empty = pod_info(pod("b"), "b", 0, 1)  # no requests: scored as 100m / 200Mi (> 10000 bytes → 0)
    assert NodeResourcesFit().score(None, empty, table, idx).tolist() == [
        (3900 * 100 // 4000) // 2,
        (5900 * 100 // 6000) // 2,
    ]
    assert balanced_132().score(None, empty, table, idx).tolist() == [100, 100]


def test_memory_is_ignored_where_the_host_models_none():
    table = NodeTable(nodes({"cpu": "4"}))
    p = pod_info(pod("a", "1", "1Ti"), "a", 0, 0)
    res = NodeResourcesFit().filter(None, p, table, np.arange(1))
    assert res.feasible.tolist() == [True]
    assert NodeResourcesFit().score(None, p, table, np.arange(1)).tolist() == [75]


def test_filter_reasons_like_kube_scheduler():
    table = NodeTable(nodes({"cpu": "1", "pods": "0"}, {"cpu": "1", "memory": "1Gi"}, {"cpu": "4"}))
    p = pod_info(pod("a", "2", "2Gi"), "a", 0, 0)
    res = NodeResourcesFit().filter(None, p, table, np.arange(3))
    assert res.feasible.tolist() == [False, False, True]
    assert res.reasons == {"Too many pods": 1, "Insufficient cpu": 2, "Insufficient memory": 1}


def balanced_132():
    """The 1.32 formula (1.37's: test_kube137.py)."""
    plugin = BalancedAllocation()
    plugin.kube_version = "1.32"
    return plugin


def versioned(version, *specs):
    profiles = build_profiles(default_config(version), 0)
    return EmbeddedCluster(nodes(*specs), profiles=profiles, queue_config=QueueConfig(kube_version=version))


def test_no_head_of_line_blocking_and_priority_order():
    """1.32: backoff expires at T + d exactly, flushed on the 1-s tick."""
    c = versioned("1.32", {"cpu": "2"})
    c.add_pod(pod("big", "2"), "big", 0.0)
    c.add_pod(pod("small", "1"), "small", 0.0)
    assert [b.pod for b in c.schedule(0.0)] == ["big"]
    c.add_pod(pod("low", "1"), "low", 1.0)
    c.add_pod(pod("high", "1", priority=10), "high", 2.0)
    assert c.schedule(2.0) == [] and c.pending() == 3
    c.delete_pod("big", 3.0)
    assert [b.pod for b in c.schedule(3.0)] == ["high", "small"]
    # "low" failed again at t=3 (its 2nd attempt): backoff 2 s, so the room freed at t=4 waits for t=5
    c.delete_pod("high", 4.0)
    assert c.schedule(4.0) == [] and c.next_wakeup() == 5.0
    assert [b.pod for b in c.schedule(5.0)] == ["low"]
    assert c.over_allocations() == 0


def test_no_head_of_line_blocking_and_backoff_windows_137():
    """1.37 (backoff_queue.go, active_queue.go): "low" and "high" failed at t=2 back off until the window
    of 3 is over (t=4), so at t=3 "small" goes first from activeQ; activeQ then empty, backoffQ's head —
    "high", the higher priority in the same window — is popped at once, and "low" after it fails again
    (2nd attempt: retryable at floor(3 + 2) + 1 = 6). At t=4 the room freed moves it to backoffQ, and
    an idle scheduler pops it at once."""
    c = versioned("1.37", {"cpu": "2"})
    c.add_pod(pod("big", "2"), "big", 0.0)
    c.add_pod(pod("small", "1"), "small", 0.0)
    assert [b.pod for b in c.schedule(0.0)] == ["big"]
    c.add_pod(pod("low", "1"), "low", 1.0)
    c.add_pod(pod("high", "1", priority=10), "high", 2.0)
    assert c.schedule(2.0) == [] and c.pending() == 3
    c.delete_pod("big", 3.0)
    assert [b.pod for b in c.schedule(3.0)] == ["small", "high"]
    assert c.pods["low"].backoff_until == 6.0
    c.delete_pod("high", 4.0)
    assert [b.pod for b in c.schedule(4.0)] == ["low"]
    assert c.over_allocations() == 0


def test_parked_pod_requeued_only_when_it_can_fit_but_keeps_its_place():
    c = EmbeddedCluster(nodes({"cpu": "1"}, {"cpu": "2"}), seed=0)
    c.add_pod(pod("a", "2"), "a", 0.0)
    c.add_pod(pod("b", "1"), "b", 0.0)
    assert {b.pod for b in c.schedule(0.0)} == {"a", "b"}
    c.add_pod(pod("wide", "2"), "wide", 1.0)
    c.add_pod(pod("narrow", "1"), "narrow", 2.0)
    assert c.schedule(2.0) == []
    c.delete_pod("b", 13.0)  # frees 1 cpu on n0: only "narrow" can use it
    assert [(b.pod, b.node) for b in c.schedule(13.0)] == [("narrow", "n0")]
    wide = c.pods["wide"]
    assert wide.node is None
    c.delete_pod("a", 24.0)  # "wide" failed at 2 and (without a cycle) at 13: 2 attempts, backoff over
    assert [(b.pod, b.node) for b in c.schedule(24.0)] == [("wide", "n1")]
    assert wide.attempts == 2  # failed attempts; the successful third is not a backoff input


def test_invariant_check_fails_loudly():
    table = NodeTable(nodes({"cpu": "1"}))
    p = pod_info(pod("a", "2"), "a", 0, 0)
    try:
        table.assume(0, p)
    except InvariantViolation as exc:
        assert "n0" in str(exc) and "cpu" in str(exc)
    else:
        raise AssertionError("over-allocation went unnoticed")
    assert table.over_allocated() == 1


def test_unschedulable_leftovers_are_flushed_on_the_30s_tick_after_5_minutes():
    c = EmbeddedCluster(nodes({"cpu": "1"}), seed=0)
    c.add_pod(pod("a", "1"), "a", 0.0)
    c.add_pod(pod("b", "1"), "b", 1.0)
    assert [b.pod for b in c.schedule(1.0)] == ["a"]
    assert c.next_wakeup() == 330.0  # parked at t=1: more than 300 s old at the tick of t=330
    assert c.schedule(330.0) == []  # retried (without a cycle): its timestamp is now 330
    assert c.next_wakeup() == 660.0


def test_decisions_are_recorded_with_reasons_and_scores(tmp_path):
    import json

    from batkube_py.scheduler.record import DecisionRecorder

    rec = DecisionRecorder(tmp_path / "decisions.jsonl")
    c = EmbeddedCluster(nodes({"cpu": "2"}, {"cpu": "4"}, {"cpu": "1"}), seed=0, recorder=rec)
    c.add_pod(pod("a", "2"), "a", 0.0)
    c.add_pod(pod("b", "3"), "b", 0.0)
    c.add_pod(pod("c", "8"), "c", 0.0)
    c.schedule(0.0)
    c.close()
    lines = [json.loads(x) for x in (tmp_path / "decisions.jsonl").read_text().splitlines()]
    assert [(x["pod"], x["result"]) for x in lines] == [
        ("a", "bound"),
        ("b", "unschedulable"),
        ("c", "unschedulable"),
    ]
    a = lines[0]
    assert a["feasible"] == 2 and a["reasons"] == {"Insufficient cpu": 1}
    # n1 (4 cpu): LeastAllocated (4000-2000)*100/4000=50 → /1 resource... memory unmodelled: 50
    assert a["node"] == "n1" and a["top"][0]["node"] == "n1"
    fit = a["top"][0]["plugins"]["NodeResourcesFit"]
    assert fit == {"raw": 50, "normalized": 50, "weight": 1}
    assert lines[1]["reasons"] == {"Insufficient cpu": 3} and lines[1]["rejected_by"] == ["NodeResourcesFit"]


def test_pods_asking_for_more_extended_resources_than_any_node_are_refused_at_once():
    c = EmbeddedCluster(nodes({"cpu": "4", "nvidia.com/gpu": "2"}, {"cpu": "4"}), seed=0)

    def gpu_pod(n):
        p = pod(f"g{n}", "1")
        p.spec.containers[0].resources.requests["nvidia.com/gpu"] = str(n)
        return p

    assert c.fits_empty_cluster(gpu_pod(2)) is None
    assert "nvidia.com/gpu=3" in c.fits_empty_cluster(gpu_pod(3))
    other = pod("x", "1")
    other.spec.containers[0].resources.requests["example.com/fpga"] = "1"
    assert "example.com/fpga=1" in c.fits_empty_cluster(other)


def test_a_request_too_big_for_every_node_names_the_resource_in_human_units():
    c = EmbeddedCluster(nodes({"cpu": "4", "memory": "4Gi"}, {"cpu": "8", "memory": "2Gi"}), seed=0)
    assert c.fits_empty_cluster(pod("m", "1", "6Gi")) == (
        "memory request 6Gi exceeds every node's allocatable memory (max 4Gi)"
    )
    assert c.fits_empty_cluster(pod("c", "8500m", "1Gi")) == (
        "cpu request 8500m exceeds every node's allocatable cpu (max 8)"
    )
    # each resource fits some node, but no node holds both
    assert c.fits_empty_cluster(pod("both", "6", "3Gi")) == (
        "no node has cpu 6 and memory 3Gi at once (each fits some node alone)"
    )
    # a node that models no memory holds any memory request
    unlimited = EmbeddedCluster(nodes({"cpu": "4", "memory": "1Gi"}, {"cpu": "1"}), seed=0)
    assert unlimited.fits_empty_cluster(pod("m", "1", "1.5Gi")) is None


def test_decision_lines_stay_small_at_5000_nodes(tmp_path):
    from batkube_py.scheduler.record import DecisionRecorder

    rec = DecisionRecorder(tmp_path / "d.jsonl")
    c = EmbeddedCluster(nodes(*[{"cpu": "2", "memory": "4Gi"}] * 5000), seed=0, recorder=rec)
    for i in range(40):
        c.add_pod(pod(f"p{i}", "1", "1Gi"), f"p{i}", 0.0)
    c.add_pod(pod("huge", "3"), "huge", 0.0)
    c.schedule(0.0)
    c.close()
    lines = (tmp_path / "d.jsonl").read_text().splitlines()
    assert len(lines) == 41 and max(len(x) for x in lines) < 4096  # kube-scheduler-simulator: 256 KiB/pod


def test_reasons_recounted_from_masks_equal_filtering_the_examined_nodes_again(monkeypatch):
    """At 300 nodes only part of the cluster is examined; both recount paths must agree exactly."""
    from batkube_py.scheduler.config import build_profiles, default_config
    from batkube_py.scheduler.framework import CycleState

    rng = np.random.default_rng(7)
    table = NodeTable(nodes(*({"cpu": "4", "memory": "8Gi", "pods": "5"} for _ in range(300))))
    for i in range(300):
        for k in range(int(rng.integers(0, 5))):  # up to 4 × 1 cpu: full, short of cpu, of pods
            info = pod_info(pod(f"f{i}-{k}", "1", "1Gi"), "x", 0, 0)
            info.node = i
            table.assume(i, info)
    probe = pod_info(pod("probe", "2", "3Gi"), "probe", 0, 1)

    def feasible(strip: bool):
        if strip:
            real = NodeResourcesFit.filter

            def no_masks(self, *a):
                r = real(self, *a)
                r.masks = None
                return r

            monkeypatch.setattr(NodeResourcesFit, "filter", no_masks)
        profile = build_profiles(default_config(), 0)[0]
        out = []
        for start in (0, 17, 250):
            profile.next_start = start
            state = CycleState()
            assert profile.pre_filter(state, probe, table) is None
            idx, reasons, rejected, processed, examined = profile._feasible(state, probe, table)
            assert examined.size == len(set(examined.tolist())) == processed
            out.append((idx.tolist(), reasons, rejected, processed, sorted(examined.tolist())))
        return out

    fast = feasible(strip=False)  # the default parallelism: the examined nodes drawn, the same draws
    slow = feasible(strip=True)
    assert fast == slow
    assert all(0 < processed < 300 and reasons for _, reasons, _, processed, _ in fast)


def test_quick_feasibility_picks_what_the_exact_path_picks(tmp_path):
    """Without a decision record the cycle filters every node at once and cuts the rotation afterwards;
    on a varied cluster (taints, cordons, hosts without memory, selectors, extended resources, a full
    and an empty cluster) every choice and the rotating start index must be the exact path's."""
    from batkube_py.scheduler.record import DecisionRecorder

    rng = np.random.default_rng(11)
    specs = []
    for i in range(240):
        props = {"cpu": str(int(rng.choice([2, 4, 8]))), "pods": str(int(rng.integers(3, 9)))}
        if i % 7:
            props["memory"] = f"{int(rng.choice([4, 8, 16]))}Gi"
        if i % 11 == 0:
            props["taints"] = "dedicated=gpu:NoSchedule"
        if i % 13 == 0:
            props["taints"] = "spot=yes:PreferNoSchedule"
        if i % 5 == 0:
            props["nvidia.com/gpu"] = "2"
        props["zone"] = f"z{i % 3}"
        specs.append(props)
    clusters = [
        EmbeddedCluster(nodes(*specs), seed=3),
        EmbeddedCluster(nodes(*specs), seed=3, recorder=DecisionRecorder(tmp_path / "d.jsonl")),
    ]
    for c in clusters:
        c.set_nodes_schedulable([f"n{i}" for i in range(0, 240, 17)], False, 0.0)
    placed: list[tuple[str, ...]] = [(), ()]
    running: list[str] = []
    seen = 0
    for step in range(900):
        profile = {"type": "delay", "delay": 1, "cpu": str(rng.choice(["250m", "1", "2", "3"]))}
        if step % 3:
            profile["memory"] = str(rng.choice(["256Mi", "1Gi", "6Gi"]))
        if step % 9 == 0:
            profile["tolerations"] = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
        if step % 10 == 0:
            profile["nodeSelector"] = {"zone": f"z{step % 3}"}
        if step % 25 == 0:
            profile["extendedResources"] = {"nvidia.com/gpu": "1"}
        p = podshape.pod_from_job(f"j{step}", {"res": 1, "profile": "p"}, profile, f"j{step}")
        assert isinstance(p, client.V1Pod)
        for k, c in enumerate(clusters):
            c.add_pod(p, f"j{step}", float(step))
            placed[k] += tuple((b.pod, b.node) for b in c.schedule(float(step)))
        running += [name for name, _ in placed[0][seen:]]
        seen = len(placed[0])
        if step % 4 == 3 and running:  # completions free nodes for parked pods
            gone = running.pop(int(rng.integers(len(running))))
            for c in clusters:
                c.delete_pod(gone, float(step))
        assert placed[0] == placed[1]
        starts = [c.profiles["default-scheduler"].next_start for c in clusters]
        assert starts[0] == starts[1]
    clusters[1].close()
    assert 300 < len(placed[0]) < 900 and clusters[0].pending() > 0  # some full, some free cycles


def test_prefilter_skip_leaves_out_the_filters_with_nothing_to_check():
    """Upstream's PreFilter Skip: NodeAffinity, PodTopologySpread and InterPodAffinity have no Filter work
    for a pod without selectors, constraints or pod affinity, and are not run; any of those brings its
    plugin back."""
    from batkube_py.scheduler.config import build_profiles, default_config
    from batkube_py.scheduler.framework import CycleState

    profile = build_profiles(default_config(), 0)[0]
    table = NodeTable(
        nodes({"cpu": "4", "memory": "8Gi", "zone": "a"}, {"cpu": "4", "memory": "8Gi", "zone": "b"})
    )

    def run(**fields):
        p = podshape.pod_from_job(
            "j", {"res": 1, "profile": "p", **fields}, {"type": "delay", "delay": 1}, "j"
        )
        state = CycleState()
        assert profile.pre_filter(state, pod_info(p, "j", 0, 0), table) is None
        return {f.name for f in profile.filters} - {f.name for f in state.filters}

    assert run() == {"NodeAffinity", "PodTopologySpread", "InterPodAffinity"}
    assert run(nodeSelector={"zone": "a"}) == {"PodTopologySpread", "InterPodAffinity"}
    spread = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]
    assert run(topologySpreadConstraints=spread) == {"NodeAffinity", "InterPodAffinity"}
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}
            ]
        }
    }
    assert run(affinity=anti) == {"NodeAffinity", "PodTopologySpread"}
