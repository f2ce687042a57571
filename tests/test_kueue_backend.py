"""The seam where Kueue's admission meets scheduling (cluster/admission.py): the embedded cluster behind
the Kueue twin. Pods wait behind Kueue's gate until their Workload is admitted; a pod group is one
Workload, admitted all or nothing; flavors' node labels steer the placement; quota comes back when the
pods are deleted; Kueue's victims are reported as evictions."""

from __future__ import annotations

from kubernetes import client
from kueue_support import config, cq, flavor, wpc
from test_gang_twin import group, nodes, pod

from batkube_py.cluster.admission import KUEUE_GATE, KueueAdmission
from batkube_py.cluster.embedded import EmbeddedCluster
from batkube_py.inputs.queues import PRIORITY_LABEL, QUEUE_LABEL


def queued(p: client.V1Pod, queue: str = "q", priority_class: str | None = None) -> client.V1Pod:
    p.metadata.labels = {QUEUE_LABEL: queue, **({PRIORITY_LABEL: priority_class} if priority_class else {})}
    return p


def backend(tmp_path, *docs, n=4, core="4", **labels) -> KueueAdmission:
    return KueueAdmission(EmbeddedCluster(nodes(n, core, **labels)), config(tmp_path, *docs))


def test_a_pod_runs_only_once_kueue_admits_it_and_its_quota_returns_on_deletion(tmp_path):
    b = backend(tmp_path, flavor("f"), cq("q", {"f": {"cpu": 4}}))
    b.add_pod(queued(pod("p1", cpu="3")), "j1", 0.0)
    b.add_pod(queued(pod("p2", cpu="2")), "j2", 1.0)
    assert [x.pod for x in b.schedule(1.0)] == ["p1"]
    assert [(a.pod, a.cluster_queue, a.flavor, a.at) for a in b.take_admissions()] == [("p1", "q", "f", 1.0)]
    assert [g.name for g in b.inner.pods["p2"].pod.spec.scheduling_gates] == [KUEUE_GATE]
    assert b.pending() == 1
    b.delete_pod("p1", 5.0)
    assert [x.pod for x in b.schedule(5.0)] == ["p2"]
    assert [a.pod for a in b.take_admissions()] == ["p2"]


def test_a_pod_group_is_one_workload_admitted_all_or_nothing(tmp_path):
    b = backend(tmp_path, flavor("f"), cq("q", {"f": {"cpu": 6}}))
    b.add_pod_group(group("g", 4), 0.0)
    for i in range(4):
        b.add_pod(queued(pod(f"g-{i}", cpu="2", grp="g")), "jg", 0.0)
    assert b.schedule(0.0) == [] and b.take_admissions() == []  # 8 cpu > 6: no member admitted
    wl = b.twin.workloads["g"]
    assert wl.count == 4 and wl.per_pod == {"cpu": 2000}
    b2 = backend(tmp_path, flavor("f"), cq("q", {"f": {"cpu": 8}}))
    b2.add_pod_group(group("g", 4), 0.0)
    for i in range(4):
        b2.add_pod(queued(pod(f"g-{i}", cpu="2", grp="g")), "jg", 0.0)
    assert sorted(x.pod for x in b2.schedule(0.0)) == [f"g-{i}" for i in range(4)]
    assert [a.pod for a in b2.take_admissions()] == ["g"]


def test_the_flavors_node_labels_steer_the_pod_to_their_nodes(tmp_path):
    docs = [flavor("slow", nodeLabels={"speed": "slow"}), flavor("fast", nodeLabels={"speed": "fast"}),
            cq("q", {"slow": {"cpu": 2}, "fast": {"cpu": 8}})]  # fmt: skip
    b = backend(tmp_path, *docs, n=4, speed=["slow", "slow", "fast", "fast"])
    b.add_pod(queued(pod("p1", cpu="2")), "j1", 0.0)
    b.add_pod(queued(pod("p2", cpu="2")), "j2", 0.0)
    placed = {x.pod: x.node for x in b.schedule(0.0)}
    flavors = {a.pod: a.flavor for a in b.take_admissions()}
    assert flavors == {"p1": "slow", "p2": "fast"}
    assert placed["p1"] in ("n0", "n1") and placed["p2"] in ("n2", "n3")
    assert b.inner.pods["p2"].pod.spec.node_selector == {"speed": "fast"}


def test_kueue_preemption_evicts_a_running_plain_pod_and_admits_at_once(tmp_path):
    # Kueue v0.17.0 releases a plain pod's quota when it evicts it (Pod.IsActive is false for a single
    # pod), while its job is still being killed: the preemptor is admitted, and binds on the free node
    docs = [
        flavor("f"),
        wpc("high", 100),
        cq("q", {"f": {"cpu": 4}}, preemption={"withinClusterQueue": "LowerPriority"}),
    ]
    b = backend(tmp_path, *docs)
    b.add_pod(queued(pod("low", cpu="4")), "jl", 0.0)
    assert [x.pod for x in b.schedule(0.0)] == ["low"]
    b.add_pod(queued(pod("high", cpu="4"), priority_class="high"), "jh", 1.0)
    assert [x.pod for x in b.schedule(1.0)] == ["high"]
    evictions = b.take_evictions()
    assert [e.pod for e in evictions] == ["low"] and "InClusterQueue" in evictions[0].reason
    assert [a.pod for a in b.take_admissions()][-1] == "high" and b.twin.workloads["high"].priority == 100
    b.delete_pod("low", 1.5)  # the adapter killed the job: its pod is deleted
    assert b.schedule(1.5) == []


def test_an_admitted_victim_not_yet_bound_is_deleted_at_once(tmp_path):
    docs = [
        flavor("f"),
        wpc("high", 100),
        cq("q", {"f": {"cpu": 4}}, preemption={"withinClusterQueue": "LowerPriority"}),
    ]
    b = backend(
        tmp_path, *docs, n=1, core="1"
    )  # admitted by quota, but no node can hold 4 cpu: stays pending
    b.add_pod(queued(pod("low", cpu="4")), "jl", 0.0)
    b.add_pod(queued(pod("high", cpu="4"), priority_class="high"), "jh", 1.0)
    b.schedule(0.0)
    assert [a.pod for a in b.take_admissions()] == ["high"]  # higher priority heads the queue
    b2 = backend(tmp_path, *docs, n=1, core="1")
    b2.add_pod(queued(pod("low", cpu="4")), "jl", 0.0)
    b2.schedule(0.0)
    b2.add_pod(queued(pod("high", cpu="4"), priority_class="high"), "jh", 1.0)
    b2.schedule(1.0)
    assert [e.pod for e in b2.take_evictions()] == ["low"]
    assert [a.pod for a in b2.take_admissions()] == ["low", "high"]  # low's quota freed in the same instant
    assert "low" not in b2.inner.pods
    b2.delete_pod("low", 1.1)  # the adapter's own deletion of the restarted job's pod: nothing left to do
    b2.add_pod(queued(pod("low", cpu="4")), "jl", 1.1)  # its new pod is a new workload, queued anew
    assert b2.twin.workloads["low"].timestamp == 1.1


def test_a_pod_behind_another_gate_keeps_it_after_admission(tmp_path):
    b = backend(tmp_path, flavor("f"), cq("q", {"f": {"cpu": 4}}))
    p = queued(pod("p", cpu="1"))
    p.spec.scheduling_gates = [client.V1PodSchedulingGate(name="batkube.io/gated-until")]
    b.add_pod(p, "j", 0.0)
    assert b.schedule(0.0) == [] and [a.pod for a in b.take_admissions()] == ["p"]
    assert [g.name for g in b.inner.pods["p"].pod.spec.scheduling_gates] == ["batkube.io/gated-until"]
    b.ungate_pod("p", 3.0)
    assert [x.pod for x in b.schedule(3.0)] == ["p"]


def test_a_workload_kueue_can_never_admit_is_given_up_once_nothing_is_admitted(tmp_path):
    b = backend(tmp_path, flavor("f"), cq("q", {"f": {"cpu": 2}}))
    b.add_pod(queued(pod("big", cpu="3")), "j", 0.0)
    assert b.schedule(0.0) == []
    gone = b.give_up_pending(0.0)
    assert [g.pod for g in gone] == ["big"] and "maximum capacity" in gone[0].reason
    assert b.pending() == 0


def test_a_workload_of_two_resource_groups_reports_one_flavor_per_group(tmp_path):
    from batkube_py.adapter import translate
    from batkube_py.adapter.outputs import PodRecord
    from batkube_py.adapter.queuelog import QueueLog
    from batkube_py.protocol.models import Resource

    gpu = "example.com/gpu"
    docs = [flavor("cpus"), flavor("gpus"), cq("q", {"cpus": {"cpu": 8}})]
    docs[2]["spec"]["resourceGroups"].append(
        {
            "coveredResources": [gpu],
            "flavors": [{"name": "gpus", "resources": [{"name": gpu, "nominalQuota": 2}]}],
        }
    )
    cfg = config(tmp_path, *docs)
    node = translate.node_from_resource(
        Resource(id=0, name="n0", state="idle", properties={"core": "8", gpu: "2"})
    )
    b = KueueAdmission(EmbeddedCluster([node]), cfg)
    p = queued(pod("p", cpu="2"))
    p.spec.containers[0].resources.requests[gpu] = "1"
    p.spec.containers[0].resources.limits = {gpu: "1"}
    b.add_pod(p, "j", 0.0)
    assert [x.pod for x in b.schedule(0.0)] == ["p"]
    (a,) = b.take_admissions()
    assert a.flavor == "cpus,gpus"
    record = PodRecord(
        job_id="j", pod="p", submit_time=0.0, queue="q", cluster_queue="q", flavor=a.flavor, admitted_at=0.0
    )
    log = QueueLog(cfg, None)
    log.submitted(record, {"cpu": 2000, gpu: 1}, 1)
    log.admitted(record, 0.0)
    assert log.violation is None
    assert log.cache.cqs["q"].usage == {("cpus", "cpu"): 2000, ("gpus", gpu): 1}


def test_the_quota_invariant_catches_an_admission_beyond_quota_and_borrowing(tmp_path):
    from batkube_py.adapter.outputs import PodRecord
    from batkube_py.adapter.queuelog import QueueLog

    a = cq("a", {"f": {"cpu": {"nominalQuota": 2, "borrowingLimit": 1}}}, "co")
    cfg = config(tmp_path, flavor("f"), a, cq("b", {"f": {"cpu": 4}}, "co"))
    log = QueueLog(cfg, tmp_path)
    records = [PodRecord(job_id=f"j{i}", pod=f"p{i}", submit_time=0.0, cluster_queue="a", flavor="f",
                         admitted_at=float(i)) for i in range(2)]  # fmt: skip
    for r in records:
        log.submitted(r, {"cpu": 1500}, 1)
    log.admitted(records[0], 0.0)
    assert log.violation is None  # 1.5 of a's 2
    log.admitted(records[1], 1.0)  # 3 = 2 of its own + 1 borrowed, its borrowing limit
    assert log.violation is None
    extra = PodRecord(job_id="j2", pod="p2", submit_time=0.0, cluster_queue="a", flavor="f", admitted_at=2.0)
    log.submitted(extra, {"cpu": 500}, 1)
    log.admitted(extra, 2.0)  # 3.5 > 3
    assert log.violation.startswith("ClusterQueue a uses 3500 of cpu in flavor f, more than its quota")
    log.released(records[0], 3.0)
    log.close()
    rows = (tmp_path / "queues.csv").read_text().splitlines()
    assert rows[0] == "time,cluster_queue,flavor,resource,nominal,usage,borrowed,admitted,pending"
    assert rows[-1] == "3.0,a,f,cpu,2.0,2.0,0.0,2,0"
