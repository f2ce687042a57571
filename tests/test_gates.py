"""Scheduling gates lifted at a simulated time (`gatedUntil`, adapter/gates.py) and the twin's
SchedulingGates PreEnqueue (scheduler/gated.py), against kube-scheduler 1.37.2's mechanism
(framework/plugins/schedulinggates, backend/queue/scheduling_queue.go, eventhandlers.go)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from kubernetes import client
from parity_cases import platform
from test_gang_twin import group, nodes, pod

from batkube_py.adapter import translate
from batkube_py.adapter.gates import GATE, Gates, gate_times
from batkube_py.cli.app import main
from batkube_py.cluster.embedded import EmbeddedCluster
from batkube_py.scheduler.gated import next_flush
from batkube_py.scheduler.queue import QueueConfig

DOUBLE = __import__("pathlib").Path(__file__).parent / "batsim_double" / "batsim"


def gated(p: client.V1Pod) -> client.V1Pod:
    p.spec.scheduling_gates = [client.V1PodSchedulingGate(name=GATE)]
    return p


def bound(c: EmbeddedCluster, now: float) -> list[str]:
    return [b.pod for b in c.schedule(now)]


@pytest.mark.parametrize(
    "value",
    [-1, float("inf"), float("nan"), "120", True, None, [10, "x"], [10], {"t": 3}],
)
def test_a_bad_gated_until_is_refused_in_one_line_naming_the_job_and_field(value):
    why = gate_times("j7", {"res": 2, "gatedUntil": value})
    assert isinstance(why, translate.Rejection)
    assert why.field == "gatedUntil" and "job j7" in why.reason and "\n" not in why.reason
    if value == [10]:
        assert "res 2" in why.reason


def test_gated_until_is_one_time_for_every_pod_or_one_per_pod():
    assert gate_times("j", {"res": 3, "gatedUntil": 12}) == (12.0, 12.0, 12.0)
    assert gate_times("j", {"res": 2, "gatedUntil": [0, 7.5]}) == (0.0, 7.5)
    assert gate_times("j", {"res": 1}) is None


def test_a_backend_that_cannot_lift_gates_on_the_simulated_clock_rejects_the_job():
    class WallClock:
        no_gates_reason = "a scheduling gate lifted on the simulated clock"

        def supports_gates(self):
            return False

    g = Gates(lambda job: True)
    why = g.admit("j", {"res": 1, "gatedUntil": 50}, 0.0, WallClock(), "shape")
    assert isinstance(why, translate.Rejection) and "simulated clock" in why.reason
    # a gate at or before the submission is no gate: nothing to refuse
    assert g.admit("j", {"res": 1, "gatedUntil": 5}, 5.0, WallClock(), "shape") == "shape"


def test_a_gated_pod_is_never_tried_and_goes_to_active_q_with_its_creation_timestamp():
    """PreEnqueue keeps it out of activeQ; removing the gate is Queue (SchedulingGates' hint) and, never
    tried, it is not backing off: activeQ, sorted by the timestamp it got when it was created."""
    c = EmbeddedCluster(nodes(1, core="2"))
    c.add_pod(pod("busy", cpu="2"), "busy", 0.0)
    assert bound(c, 0.0) == ["busy"]
    c.add_pod(gated(pod("early", cpu="2")), "early", 1.0)
    c.add_pod(pod("later", cpu="2"), "later", 2.0)
    assert bound(c, 2.0) == [] and c.pending() == 2
    c.ungate_pod("early", 3.0)
    c.delete_pod("busy", 4.0)
    assert bound(c, 4.0) == ["early"]  # created before "later": it goes first


def test_a_gated_pod_is_not_tried_while_the_cluster_has_room():
    c = EmbeddedCluster(nodes(2))
    c.add_pod(gated(pod("g")), "g", 0.0)
    assert bound(c, 0.0) == [] and bound(c, 100.0) == []
    c.ungate_pod("g", 120.0)
    assert bound(c, 120.0) == ["g"]


def test_the_leftover_flush_visits_a_gated_pod_every_five_minutes_from_its_flush_timestamp():
    """1.37: tick − max(Timestamp, FlushTimestamp) > 5 min at a 30-s tick marks FlushTimestamp = tick and
    PreEnqueue gates it again: the queue's wake-ups are those ticks (330 for a pod created at 10, then
    660); 1.32 has no FlushTimestamp and no such wake-up."""
    c = EmbeddedCluster(nodes(1))
    c.add_pod(gated(pod("g")), "g", 10.0)
    assert c.next_wakeup() == 330.0
    assert bound(c, 330.0) == []
    assert c.pods["g"].flushed_at == 330.0 and c.next_wakeup() == 660.0
    assert next_flush([c.pods["g"]], QueueConfig(kube_version="1.32")) is None


def test_a_gated_member_counts_toward_the_quorum_but_gates_its_whole_group():
    """eventhandlers.go addPodToSchedulingQueue adds every unscheduled pod to the cache's pod group state
    (AllPodsCount, GangScheduling's quorum) before the queue's PreEnqueue; runPreEnqueuePlugins gates the
    entity when any member is gated. So the group waits for its last gate, not for its quorum."""
    c = EmbeddedCluster(nodes(2))
    c.add_pod_group(group("g", 3), 0.0)
    for i, held in enumerate((False, True, True)):
        c.add_pod((gated if held else lambda p: p)(pod(f"g-{i}", grp="g")), "j", 0.0)
    assert c.groups.known("g") == 3  # the quorum is met
    entity = c.groups.queue.entities["g"]
    assert entity.gate == "waiting for scheduling gates"
    assert bound(c, 0.0) == []
    c.ungate_pod("g-1", 10.0)
    assert bound(c, 10.0) == [] and entity.gate is not None
    c.ungate_pod("g-2", 20.0)
    assert sorted(bound(c, 20.0)) == ["g-0", "g-1", "g-2"]
    assert entity.timestamp == 0.0  # the entity keeps its first pod's timestamp


def test_groups_failed_in_one_instant_keep_the_order_they_were_tried_in():
    """AddAttemptedPodGroupIfNeeded stamps a failed group with clock.Now(): on a moving clock (batkube's
    kube-scheduler main steps its clock before it) groups failed one after the other in a step keep
    that order, as pods do; the twin renumbers them with the instant's failed pods, in try order."""
    c = EmbeddedCluster(nodes(1, core="2"))
    c.add_pod(pod("busy", cpu="2"), "busy", 0.0)
    assert bound(c, 0.0) == ["busy"]
    for name, t in (("a", 1.0), ("b", 2.0)):
        c.add_pod_group(group(name, 1), t)
        c.add_pod(pod(f"{name}-0", cpu="2", grp=name), name, t)
    assert bound(c, 2.0) == []  # both fail, "a" (the older) tried first
    a, b = c.groups.queue.entities["a"], c.groups.queue.entities["b"]
    assert a.timestamp == b.timestamp == 2.0 and a.seq < b.seq
    # tried the other way round in one instant: their order follows
    q = c.queue
    tried_b, tried_a = q.group_tried(), q.group_tried()
    q.group_failed(tried_a, a)
    q.group_failed(tried_b, b)
    q.end_cycle()
    assert b.sort_key < a.sort_key


def test_a_gated_job_runs_once_its_gate_is_lifted_and_waits_from_its_submission(tmp_path):
    xml = tmp_path / "p.xml"
    xml.write_text(platform([(1, {"core": "2"})]))
    jobs = [
        {"id": "1", "subtime": 0, "res": 1, "profile": "d", "gatedUntil": 50},
        {"id": "2", "subtime": 0, "res": 1, "profile": "d"},
        {"id": "3", "subtime": 0, "res": 1, "profile": "d", "gatedUntil": "soon"},
    ]
    workload = tmp_path / "w.json"
    profiles = {"d": {"type": "delay", "delay": 10, "cpu": "1"}}
    workload.write_text(json.dumps({"nb_res": 1, "jobs": jobs, "profiles": profiles}))
    out = tmp_path / "out"
    args = ["run", "-p", str(xml), "-w", str(workload), "-o", str(out), "--batsim", str(DOUBLE),
            "--no-progress"]  # fmt: skip
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["gated_pods"], summary["gates_lifted"], summary["jobs_rejected"]) == (1, 1, 1)
    rows = {r.split(",")[0]: r.split(",") for r in (out / "pods.csv").read_text().splitlines()[1:]}
    header = (out / "pods.csv").read_text().splitlines()[0].split(",")
    start = header.index("start_time")
    assert 50.0 < float(rows["w0!1"][start]) < 50.1 and float(rows["w0!2"][start]) < 0.1
    assert "gatedUntil" in (out / "rejected.csv").read_text()


def test_which_backends_lift_gates_on_the_simulated_clock():
    """The twin, and the real scheduler when its queue runs on the simulated clock (--sync queue) or the
    twin's queue paces it; settle and timeout run it on the wall clock: refused, saying which do."""
    from batkube_py.cluster.apiserver import ApiServerCluster
    from batkube_py.cluster.paced import PacedCluster
    from batkube_py.cluster.queued import QueueCluster

    assert EmbeddedCluster.supports_gates(None) and PacedCluster.supports_gates(None)
    assert QueueCluster.supports_gates(None) and not ApiServerCluster.supports_gates(None)
    assert "--sync queue" in ApiServerCluster.no_gates_reason and "paced" in ApiServerCluster.no_gates_reason
