"""The twin's pod groups (kube-scheduler 1.37.2, GenericWorkload on): quorum gate, all-or-nothing group
cycle in member order, group backoff in the error heap, group preemption, topology placement."""

import math

import pytest
from kubernetes import client

from batkube_py.adapter import translate
from batkube_py.cluster.embedded import EmbeddedCluster
from batkube_py.protocol.models import Resource
from batkube_py.scheduler.podgroup import backoff_duration, member_order


def nodes(n, core="4", **labels_of):
    out = []
    for i in range(n):
        props = {"core": core, **{k: v[i] for k, v in labels_of.items()}}
        out.append(translate.node_from_resource(Resource(id=i, name=f"n{i}", state="idle", properties=props)))
    return out


def group(name, min_count, priority=0, topology=None):
    constraints = None
    if topology:
        constraints = client.V1beta1PodGroupSchedulingConstraints(
            topology=[client.V1beta1TopologyConstraint(key=topology)]
        )
    return client.V1beta1PodGroup(
        api_version="scheduling.k8s.io/v1beta1",
        kind="PodGroup",
        metadata=client.V1ObjectMeta(name=name, namespace="default"),
        spec=client.V1beta1PodGroupSpec(
            scheduling_policy=client.V1beta1PodGroupSchedulingPolicy(
                gang=client.V1beta1GangSchedulingPolicy(min_count=min_count)
            ),
            scheduling_constraints=constraints,
            priority=priority,
        ),
    )


def pod(name, cpu="2", grp=None, priority=0):
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, namespace="default"),
        spec=client.V1PodSpec(
            scheduler_name="default-scheduler",
            priority=priority,
            scheduling_group=client.V1PodSchedulingGroup(pod_group_name=grp) if grp else None,
            containers=[
                client.V1Container(name="c", resources=client.V1ResourceRequirements(requests={"cpu": cpu}))
            ],
        ),
    )


def test_quorum_gate_holds_the_group_until_min_count_pods_are_known():
    c = EmbeddedCluster(nodes(2))
    for i in range(3):
        c.add_pod(pod(f"p{i}", grp="g"), "j", 0.0)
    assert c.schedule(0.0) == []  # the PodGroup itself not seen yet
    c.add_pod_group(group("g", 4), 0.0)
    assert c.schedule(0.0) == [] and c.groups.queue.entities["g"].gate.startswith("waiting for minCount")
    c.add_pod(pod("p3", grp="g"), "j", 1.0)
    bound = c.schedule(1.0)
    assert sorted(b.pod for b in bound) == ["p0", "p1", "p2", "p3"]
    assert {b.node for b in bound} == {"n0", "n1"} and c.running() == 4


def test_group_cycle_is_all_or_nothing_and_reverts_its_assumptions():
    c = EmbeddedCluster(nodes(2))
    c.add_pod(pod("solo", cpu="3"), "s", 0.0)
    assert len(c.schedule(0.0)) == 1
    before = (c.nodes.req_cpu.copy(), c.nodes.pod_count.copy())
    c.add_pod_group(group("g", 3), 0.0)
    for i in range(3):
        c.add_pod(pod(f"p{i}", grp="g"), "j", 0.0)
    assert c.schedule(0.1) == []  # two of three fit n1 + n0's last core: none is bound
    assert (c.nodes.req_cpu == before[0]).all() and (c.nodes.pod_count == before[1]).all()
    assert "2 of minCount 3" in c.groups.messages["g"]
    c.delete_pod("solo", 1.5)
    entity = c.groups.queue.entities["g"]
    assert c.schedule(1.5) == []  # backing off in the error heap: a completion does not move it
    assert len(c.schedule(entity.backoff_until)) == 3


def test_members_are_tried_in_upstream_order():
    c = EmbeddedCluster(nodes(4))
    c.add_pod_group(group("g", 3), 0.0)
    for name in ("pb", "pa", "pc"):
        c.add_pod(pod(name, grp="g"), "j", 0.0)
    infos = list(c.groups.queue.entities["g"].members.values())
    infos[2].attempts = 2  # pc tried more often: first; then by timestamp (equal here), then name
    assert [p.name for p in sorted(infos, key=member_order)] == ["pc", "pa", "pb"]
    infos[1].priority = infos[0].priority = 0
    assert [b.pod for b in c.schedule(0.0)] == ["pc", "pa", "pb"]


def test_group_backoff_grows_to_max_times_sqrt_size_on_whole_seconds():
    assert backoff_duration(1, 4, 1.0, 10.0) == 1.0
    assert backoff_duration(5, 4, 1.0, 10.0) == 16.0
    assert backoff_duration(9, 4, 1.0, 10.0) == 20.0  # 10 s · sqrt(4)
    assert backoff_duration(9, 1, 1.0, 10.0) == 10.0
    c = EmbeddedCluster(nodes(1))
    c.add_pod_group(group("g", 3), 0.0)
    for i in range(3):
        c.add_pod(pod(f"p{i}", grp="g"), "j", 0.0)
    now, expiries = 0.3, []
    for _ in range(7):
        assert c.schedule(now) == []
        e = c.groups.queue.entities["g"]
        expiries.append(e.backoff_until)
        assert c.next_wakeup() == e.backoff_until
        assert c.schedule(e.backoff_until - 0.5) == []  # not popped early, even with activeQ empty
        now = e.backoff_until
    steps = [b - a for a, b in zip([0.3, *expiries], expiries, strict=False)]
    assert expiries[0] == math.floor(0.3 + 1) + 1
    assert max(steps) <= math.floor(10 * math.sqrt(3)) + 1 and steps[-1] > 10  # beyond a pod's cap


def test_group_preemption_evicts_lower_priority_pods_and_nominates_every_member():
    c = EmbeddedCluster(nodes(3))
    for i in range(6):
        c.add_pod(pod(f"low{i}", cpu="2"), f"l{i}", 0.0)
    assert len(c.schedule(0.0)) == 6
    c.add_pod_group(group("g", 2, priority=100), 1.0)
    for i in range(2):
        c.add_pod(pod(f"hi{i}", cpu="4", grp="g", priority=100), "h", 1.0)
    assert c.schedule(1.0) == []
    victims = c.take_evictions()
    assert len(victims) == 4 and all("pod group g" in v.reason for v in victims)
    members = [c.pods["hi0"], c.pods["hi1"]]
    assert all(m.nominated_node is not None for m in members)
    assert members[0].nominated_node != members[1].nominated_node
    for v in victims:
        c.delete_pod(v.pod, 2.0)
    entity = c.groups.queue.entities["g"]
    nominated = {m.name: m.nominated_node for m in members}
    bound = c.schedule(entity.backoff_until)
    assert {b.pod: c.nodes.index[b.node] for b in bound} == nominated  # the nominated node is tried first


def test_group_of_lower_priority_does_not_preempt():
    c = EmbeddedCluster(nodes(1))
    c.add_pod(pod("high", cpu="4", priority=10), "h", 0.0)
    c.schedule(0.0)
    c.add_pod_group(group("g", 2), 0.0)
    for i in range(2):
        c.add_pod(pod(f"p{i}", cpu="1", grp="g"), "j", 0.0)
    assert c.schedule(0.5) == [] and c.take_evictions() == []


def test_topology_constraint_places_the_group_in_one_domain():
    c = EmbeddedCluster(nodes(4, zone=["a", "a", "b", "b"]))
    c.add_pod(pod("solo", cpu="1"), "s", 0.0)
    first = c.schedule(0.0)[0].node
    c.add_pod_group(group("g", 4, topology="zone"), 0.0)
    for i in range(4):
        c.add_pod(pod(f"p{i}", grp="g"), "j", 0.0)
    bound = c.schedule(0.0)
    zones = {c.nodes.labels[c.nodes.index[b.node]]["zone"] for b in bound}
    assert len(bound) == 4 and len(zones) == 1
    assert c.nodes.labels[c.nodes.index[first]]["zone"] not in zones  # only the empty domain holds 4


def test_group_too_big_for_any_domain_never_fits():
    c = EmbeddedCluster(nodes(4, zone=["a", "a", "b", "b"]))
    why = c.group_never_fits(pod("x", grp="g"), group("g", 5, topology="zone"))
    assert why is not None and "any one domain of 'zone' holds 4 of its 5 pods" in why
    assert c.group_never_fits(pod("x", grp="g"), group("g", 8)) is None
    assert "holds 8 of its 9" in c.group_never_fits(pod("x", grp="g"), group("g", 9))


@pytest.mark.parametrize("running", [False, True])
def test_give_up_only_when_nothing_runs(running):
    c = EmbeddedCluster(nodes(2, core="2"))
    if running:
        c.add_pod(pod("solo", cpu="1"), "s", 0.0)
        c.schedule(0.0)
    c.add_pod_group(group("g", 3), 0.0)
    for i in range(3):
        c.add_pod(pod(f"p{i}", grp="g"), "j", 0.0)
    c.schedule(0.0)
    gone = c.give_up_pending(1.0)
    assert (gone == []) if running else ({u.pod for u in gone} == {"p0", "p1", "p2"})


def test_members_disagreeing_with_the_groups_priority_fail_with_a_scheduler_error():
    c = EmbeddedCluster(nodes(2))
    c.add_pod_group(group("g", 2, priority=5), 0.0)
    c.add_pod(pod("p0", grp="g", priority=5), "j", 0.0)
    c.add_pod(pod("p1", grp="g", priority=0), "j", 0.0)
    assert c.schedule(0.0) == []
    entity = c.groups.queue.entities["g"]
    assert entity.error_count == 1 and entity.unschedulable_count == 0
    assert "SchedulerError" in c.groups.messages["g"]


def test_skipping_a_cycle_that_ends_at_its_first_member_changes_no_decision(tmp_path, monkeypatch):
    """The recorder forces every group cycle to run; without it, cycles whose first member fits nowhere
    are skipped (groupcycle.first_stops_it). Same seed, same events: same bindings, same times."""
    import random

    from batkube_py.scheduler.record import DecisionRecorder

    def play(recorder):
        c = EmbeddedCluster(nodes(120, core="4"), seed=3, recorder=recorder)
        rng = random.Random(7)
        running: list[tuple[float, list[str]]] = []
        out = []
        for k in range(150):
            now = float(k)
            for end, names in [r for r in running if r[0] <= now]:
                running.remove((end, names))
                for n in names:
                    c.delete_pod(n, now)
            size = rng.choice([1, 2, 4, 8, 16, 32])
            cpu = rng.choice(["1", "2", "3", "4"])
            c.add_pod_group(group(f"g{k}", size), now)
            for i in range(size):
                c.add_pod(pod(f"g{k}-{i}", cpu=cpu, grp=f"g{k}"), f"j{k}", now)
            bound = c.schedule(now)
            out += [(now, b.pod, b.node) for b in bound]
            done: dict[str, list[str]] = {}
            for b in bound:
                done.setdefault(b.pod.rsplit("-", 1)[0], []).append(b.pod)
            running += [(now + rng.choice([5, 20, 40]), names) for names in done.values()]
        return out

    from batkube_py.scheduler import groupcycle

    skipped = []
    real = groupcycle.first_stops_it
    monkeypatch.setattr(groupcycle, "first_stops_it", lambda *a: skipped.append(real(*a)) or skipped[-1])
    fast = play(None)
    assert sum(skipped) > 20  # the shortcut was taken
    recorder = DecisionRecorder(tmp_path / "d.jsonl")
    slow = play(recorder)
    recorder.close()
    assert fast == slow and len(fast) > 500


def test_binding_a_nominated_member_wakes_no_pod_it_held_back():
    """A pod leaving its nominated node by being bound is removed from the queue with inBinding
    (eventhandlers.go, deletePodFromSchedulingQueue): no AssignedPodDelete move for the lower-priority
    pods that counted it on that node, as for a deleted nominated pod."""
    c = EmbeddedCluster(nodes(1, core="2"))
    c.add_pod(pod("busy", cpu="2"), "busy", 0.0)
    assert [b.pod for b in c.schedule(0.0)] == ["busy"]
    c.add_pod_group(group("g", 1, priority=10), 1.0)
    c.add_pod(pod("g-0", cpu="2", grp="g", priority=10), "g", 1.0)
    assert c.schedule(1.0) == []  # the group backs off until 3.0
    c.nominate(c.pods["g-0"], 0)  # as its preemption would
    c.add_pod(pod("low", cpu="2"), "low", 1.2)
    assert c.schedule(1.2) == []
    c.delete_pod("busy", 1.5)
    assert c.schedule(1.5) == []  # the node is free but held for the nominated member
    tried = c.pods["low"].attempts
    assert [b.pod for b in c.schedule(3.0)] == ["g-0"]
    assert c.pods["low"].attempts == tried  # not moved, not tried again
