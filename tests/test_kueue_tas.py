"""Topology-aware scheduling in the Kueue twin (kueue/cache/tas.py, kueue/scheduler/tas_flavorassigner.py),
against hand-computed expectations of Kueue v0.17.0's algorithm.

The cluster: racks r0 (n0, n1) and r1 (n2, n3), 4 one-core-pod slots per node; a pod of 3 cores without
a queue runs on n0 first (non-TAS usage), so r0 holds 1 + 4 = 5 one-core pods and r1 holds 8.
"""

from __future__ import annotations

import csv
import json

import pytest
from click.testing import CliRunner
from kubernetes import client
from kueue_support import config, cq, flavor, lq, write
from test_gang_twin import group, nodes, pod

from batkube_py.cli.app import main
from batkube_py.cluster.admission import KueueAdmission
from batkube_py.cluster.embedded import EmbeddedCluster
from batkube_py.inputs.queues import (
    PREFERRED_TOPOLOGY,
    QUEUE_LABEL,
    REQUIRED_TOPOLOGY,
    UNCONSTRAINED_TOPOLOGY,
    QueuesError,
)

API = "kueue.x-k8s.io/v1beta2"
HOST = "kubernetes.io/hostname"
RACKS = ["r0", "r0", "r1", "r1"]
POOL = {"pool": "tas"}  # Kueue wants a TAS flavor to name at least one node label
TAS_FLAVOR = flavor("tas", topologyName="dc", nodeLabels=POOL)


def topology(name="dc", levels=("rack", HOST)) -> dict:
    return {"apiVersion": API, "kind": "Topology", "metadata": {"name": name},
            "spec": {"levels": [{"nodeLabel": k} for k in levels]}}  # fmt: skip


def backend(tmp_path, *docs, levels=("rack", HOST)) -> KueueAdmission:
    docs = docs or (TAS_FLAVOR, cq("q", {"tas": {"cpu": 100}}))
    cfg = config(tmp_path, topology(levels=levels), *docs)
    b = KueueAdmission(EmbeddedCluster(nodes(4, "4", rack=RACKS, pool=["tas"] * 4)), cfg)
    blocker = pod("blocker", cpu="3")
    blocker.spec.node_selector = {HOST: "n0"}
    b.add_pod(blocker, "jb", 0.0)
    assert [x.node for x in b.schedule(0.0)] == ["n0"]
    return b


def gang(b: KueueAdmission, name: str, n: int, now: float = 1.0, queue: str = "q", **notes) -> None:
    b.add_pod_group(group(name, n), now)
    for i in range(n):
        p = pod(f"{name}-{i}", cpu="1", grp=name)
        p.metadata.labels = {QUEUE_LABEL: queue}
        p.metadata.annotations = notes or None
        b.add_pod(p, f"j{name}", now)


def placed(b: KueueAdmission, now: float = 1.0) -> dict[str, int]:
    """Pods per node of what the scheduler bound in this step."""
    out: dict[str, int] = {}
    for x in b.schedule(now):
        out[x.node] = out.get(x.node, 0) + 1
    return out


def domains(b: KueueAdmission, name: str) -> list[tuple[tuple[str, ...], int]]:
    wl = b.twin.workloads[name]
    return list(wl.tas.assignment.domains)


def test_required_rack_best_fit_takes_the_fullest_rack_that_holds_the_gang(tmp_path):
    # 5 pods: r0 (5) and r1 (8) both hold them; BestFit takes r0, the one with the least room left;
    # inside it, n1 (4) first, then the best fit for the last pod: n0 (1)
    b = backend(tmp_path)
    gang(b, "g", 5, **{REQUIRED_TOPOLOGY: "rack"})
    assert placed(b) == {"n0": 1, "n1": 4}
    assert domains(b, "g") == [(("n0",), 1), (("n1",), 4)]
    assert b.inner.pods["g-0"].pod.spec.node_selector == {**POOL, HOST: "n0"}
    # 6 pods more: r0 is full; r1 holds them, n2 4 and n3 2
    gang(b, "h", 6, now=2.0, **{REQUIRED_TOPOLOGY: "rack"})
    assert placed(b, 2.0) == {"n2": 4, "n3": 2}


def test_a_gang_no_rack_holds_is_not_admitted_and_says_why(tmp_path):
    # 9 pods, required in one rack: r1 holds 8 at most, even with no TAS workload admitted
    b = backend(tmp_path)
    gang(b, "g", 9, **{REQUIRED_TOPOLOGY: "rack"})
    assert placed(b) == {} and b.take_admissions() == []
    assert 'topology "dc" allows to fit only 8 out of 9 pod(s)' in b.twin.workloads["g"].message


def test_preferred_host_falls_back_to_one_rack(tmp_path):
    # 6 pods preferring one host: no host holds 6, so the level above: r1 is the only rack holding them
    b = backend(tmp_path)
    gang(b, "g", 6, **{PREFERRED_TOPOLOGY: HOST})
    assert placed(b) == {"n2": 4, "n3": 2}


def test_preferred_rack_falls_back_to_several_racks_greedily(tmp_path):
    # 9 pods preferring one rack: none holds 9 and rack is the top level, so racks r1 (8) then r0 (1);
    # Kueue then spreads the 9 pods over the hosts of both racks, fullest first, without keeping the
    # racks' counts: n1 4, n2 4, then the best fit for the last pod, n0 (1 slot)
    b = backend(tmp_path)
    gang(b, "g", 9, **{PREFERRED_TOPOLOGY: "rack"})
    assert placed(b) == {"n0": 1, "n1": 4, "n2": 4}


def test_unconstrained_takes_the_node_with_the_least_free_capacity(tmp_path):
    # LeastFreeCapacity (TASProfileMixed, on in v0.17.0): the first host, fewest free slots first, that
    # holds the gang: 1 pod → n0 (1 slot), 2 pods → n1 (4 slots, first by name among the 4-slot hosts)
    b = backend(tmp_path)
    gang(b, "one", 1, **{UNCONSTRAINED_TOPOLOGY: "true"})
    gang(b, "two", 2, **{UNCONSTRAINED_TOPOLOGY: "true"})
    assert placed(b) == {"n0": 1, "n1": 2}


def test_a_tas_only_cluster_queue_places_plain_pods_unconstrained(tmp_path):
    # every flavor of q is a TAS flavor: a pod without any request is placed as unconstrained
    b = backend(tmp_path)
    p = pod("p", cpu="1")
    p.metadata.labels = {QUEUE_LABEL: "q"}
    b.add_pod(p, "jp", 1.0)
    assert placed(b) == {"n0": 1}
    assert b.twin.workloads["p"].tas.flavor == "tas"


def test_flavors_are_skipped_by_their_tas_support(tmp_path):
    # q: a plain flavor, then a TAS one. A pod asking for a rack skips the plain flavor; a pod without a
    # request skips the TAS flavor
    quotas = {"plain": {"cpu": 100}, "tas": {"cpu": 100}}
    docs = [flavor("plain"), TAS_FLAVOR, cq("q", quotas)]
    b = backend(tmp_path, *docs)
    gang(b, "g", 2, **{REQUIRED_TOPOLOGY: "rack"})
    p = pod("p", cpu="1")
    p.metadata.labels = {QUEUE_LABEL: "q"}
    b.add_pod(p, "jp", 1.0)
    b.schedule(1.0)
    assert {a.pod: a.flavor for a in b.take_admissions()} == {"g": "tas", "p": "plain"}
    assert b.twin.workloads["p"].tas is None


def test_a_level_the_topology_lacks_is_never_admitted(tmp_path):
    b = backend(tmp_path)
    gang(b, "g", 2, **{REQUIRED_TOPOLOGY: "zone"})
    assert placed(b) == {}
    assert 'Flavor "tas" does not contain the requested level' in b.twin.workloads["g"].message


def test_tas_usage_comes_back_when_the_gang_ends(tmp_path):
    b = backend(tmp_path)
    gang(b, "g", 8, **{REQUIRED_TOPOLOGY: "rack"})
    assert placed(b) == {"n2": 4, "n3": 4}
    gang(b, "h", 8, now=2.0, **{REQUIRED_TOPOLOGY: "rack"})
    assert placed(b, 2.0) == {}  # r1 is taken, r0 holds 5
    for i in range(8):
        b.delete_pod(f"g-{i}", 3.0)
    assert placed(b, 3.0) == {"n2": 4, "n3": 4}


def test_two_heads_wanting_the_same_rack_in_one_cycle(tmp_path):
    # two ClusterQueues share the TAS flavor; both heads want the only rack of 8 in the same cycle: the
    # first admitted takes it, the second no longer fits (skipped) and then waits: on empty nodes it would
    # fit, so it needs preemption, and there is none to make
    docs = [TAS_FLAVOR, cq("a", {"tas": {"cpu": 100}}), cq("b", {"tas": {"cpu": 100}})]
    b = backend(tmp_path, *docs)
    gang(b, "ga", 8, queue="a", **{REQUIRED_TOPOLOGY: "rack"})
    gang(b, "gb", 8, queue="b", **{REQUIRED_TOPOLOGY: "rack"})
    assert placed(b) == {"n2": 4, "n3": 4}
    assert [a.pod for a in b.take_admissions()] == ["ga"]
    assert "allows to fit only 5 out of 8" in b.twin.workloads["gb"].message


def test_topology_files_are_checked_and_preemption_beside_tas_refused(tmp_path):
    with pytest.raises(QueuesError, match="only as the last"):
        config(tmp_path, topology(levels=(HOST, "rack")))
    with pytest.raises(QueuesError, match="each nodeLabel once"):
        config(tmp_path, topology(levels=("rack", "rack")))
    with pytest.raises(QueuesError, match="field 'spec.nodeLabels': expected at least one"):
        config(tmp_path, topology(), flavor("tas", topologyName="dc"))
    preempting = cq("q", {"tas": {"cpu": 4}}, preemption={"withinClusterQueue": "LowerPriority"})
    cfg = config(tmp_path, topology(), TAS_FLAVOR, preempting)
    assert "preemption beside topology-aware flavors (tas) is not modelled" in cfg.twin_refusal()


def test_a_tolerated_taint_and_a_node_selector_narrow_the_hosts(tmp_path):
    # the pod selects rack r1 by nodeSelector: with hostname as the lowest level, Kueue leaves out the
    # hosts the selector excludes, so 2 unconstrained pods go to n2 (least free among r1's hosts)
    b = backend(tmp_path)
    b.add_pod_group(group("g", 2), 1.0)
    for i in range(2):
        p = pod(f"g-{i}", cpu="1", grp="g")
        p.metadata.labels = {QUEUE_LABEL: "q"}
        p.metadata.annotations = {UNCONSTRAINED_TOPOLOGY: "true"}
        p.spec.node_selector = {"rack": "r1"}
        p.spec.tolerations = [client.V1Toleration(key="x", operator="Exists")]
        b.add_pod(p, "jg", 1.0)
    assert placed(b) == {"n2": 2}


ZONE = "topology.kubernetes.io/zone"


def run_on_racks(tmp_path, racks: int, nodes: int, cores: str, labels: dict, queues, jobs: list[dict],
                 delay: float, cpu: str) -> list[dict]:  # fmt: skip
    """`batkube run` on the double with a racked platform; the rows of pods.csv."""
    from batkube_py.inputs.platforms import rack_platform

    platform = tmp_path / "racks.xml"
    platform.write_text(rack_platform(racks, nodes, cores, labels=labels))
    workload = tmp_path / "w.json"
    profiles = {"p": {"type": "delay", "delay": delay, "cpu": cpu}}
    workload.write_text(json.dumps({"nb_res": nodes, "profiles": profiles,
                                    "jobs": [{"profile": "p", **j} for j in jobs]}))  # fmt: skip
    out = tmp_path / "out"
    args = ["run", "-p", str(platform), "-w", str(workload), "-o", str(out), "--batsim", "double",
            "--no-progress", "--queues", str(queues)]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    with (out / "pods.csv").open() as f:
        return list(csv.DictReader(f))


def test_gangs_on_racks_end_to_end(tmp_path):
    # 2 racks of 4 one-core nodes (the platform's rack label), 8 cores of quota, jobs of 100 s.
    # g1 (3 pods, one rack) at 0: both racks hold 4, BestFit keeps the first: node-0..2. g2 at 10: rack0
    # has 1 slot left, so rack1: node-4..6. At 20, j3 (2 pods, one rack) fits no rack (1 slot each)
    # and waits; j4 (2 pods, preferring one rack) falls back to both: node-3 and node-7. At 100 g1 ends
    # and j3 takes rack0's first two nodes.
    racks = flavor("racks", topologyName="dc", nodeLabels=POOL)
    queues = write(tmp_path, [topology(levels=(ZONE, HOST)), racks, cq("cq", {"racks": {"cpu": 8}}),
                              lq("q", "cq")])  # fmt: skip
    jobs = [{"id": "g1", "subtime": 0, "res": 3, "topology": {"required": ZONE}},
            {"id": "g2", "subtime": 10, "res": 3, "topology": {"required": ZONE}},
            {"id": "j3", "subtime": 20, "res": 2, "topology": {"required": ZONE}},
            {"id": "j4", "subtime": 20, "res": 2, "topology": {"preferred": ZONE}},
            {"id": "bad", "subtime": 30, "res": 1, "topology": {"required": "rack"}}]  # fmt: skip
    rows = run_on_racks(tmp_path, 2, 8, "1", POOL, queues, [{"queue": "q", **j} for j in jobs], 100, "1")
    done = [r for r in rows if r["state"] == "Succeeded"]
    got = {(r["job_id"].split("!")[1], r["node"], round(float(r["admitted_at"])),
            round(float(r["start_time"]))) for r in done}  # fmt: skip
    assert got == {("g1", "node-0", 0, 0), ("g1", "node-1", 0, 0), ("g1", "node-2", 0, 0),
                   ("g2", "node-4", 10, 10), ("g2", "node-5", 10, 10), ("g2", "node-6", 10, 10),
                   ("j4", "node-3", 20, 20), ("j4", "node-7", 20, 20),
                   ("j3", "node-0", 100, 100), ("j3", "node-1", 100, 100)}  # fmt: skip
    with (tmp_path / "out" / "rejected.csv").open() as f:
        rejected = {r["job_id"]: r for r in csv.DictReader(f)}
    assert list(rejected) == ["w0!bad"] and rejected["w0!bad"]["field"] == "topology"
    assert f"a nodeLabel of a Topology of {queues} ({HOST}, {ZONE})" in rejected["w0!bad"]["expected"]


def test_a_node_coming_back_retries_the_gangs_waiting_for_a_rack(tmp_path):
    # r1's nodes are cordoned: Kueue's TAS cache leaves them out, so 6 pods fit no rack, even on empty
    # nodes (inadmissible); when they come back, the TAS flavor controller retries the inadmissible
    # workloads and the gang takes r1 at once
    b = backend(tmp_path)
    b.set_nodes_schedulable(["n2", "n3"], False, 0.5)
    gang(b, "g", 6, **{REQUIRED_TOPOLOGY: "rack"})
    assert placed(b) == {}
    assert b.twin.queues.queues["q"].pending() == [b.twin.workloads["g"]]
    b.set_nodes_schedulable(["n2", "n3"], True, 5.0)
    assert placed(b, 5.0) == {"n2": 4, "n3": 2}


def test_an_untolerated_taint_leaves_its_host_out_and_says_so():
    from batkube_py.kueue.cache import tas

    taint = client.V1Taint(key="gpu", value="yes", effect="NoSchedule")
    alloc = {"cpu": 2000, "pods": 110}
    hosts = [tas.NodeInfo(f"n{i}", {"rack": "r0", HOST: f"n{i}"}, (taint,) if i == 0 else (), alloc)
             for i in range(2)]  # fmt: skip
    snap = tas.TASFlavorSnapshot("dc", ("rack", HOST), (), hosts, {})
    found, why = snap.find(tas.TopologyRequest("rack", required=True), {"cpu": 1000}, 3, pod("p", cpu="1"))
    assert found is None
    assert why == ('topology "dc" allows to fit only 2 out of 3 pod(s). Total nodes: 2; excluded: '
                   'taint "gpu=yes:NoSchedule": 1')  # fmt: skip
    found, _ = snap.find(tas.TopologyRequest("rack", required=True), {"cpu": 1000}, 2, pod("p", cpu="1"))
    assert found == tas.TopologyAssignment((HOST,), ((("n1",), 2),))


def test_the_racks_example_of_the_docs(tmp_path):
    # docs/concepts/queues.md: gangs of 4, 3, 2, 4, 4, 2 four-core pods every 5 s on 4 racks of 4 nodes
    from pathlib import Path

    jobs = [{"id": f"g{i}", "subtime": i * 5, "res": r, "topology": {"required": ZONE}}
            for i, r in enumerate([4, 3, 2, 4, 4, 2])]  # fmt: skip
    queues = Path(__file__).resolve().parents[1] / "examples" / "queues_racks.yaml"
    rows = run_on_racks(tmp_path, 4, 16, "4", {"pool": "racks"}, queues, jobs, 60, "4")
    nodes: dict[str, set[int]] = {}
    for r in rows:
        nodes.setdefault(r["job_id"].split("!")[1], set()).add(int(r["node"].split("-")[1]))
    assert nodes == {"g0": {0, 1, 2, 3}, "g1": {4, 5, 6}, "g2": {10, 11}, "g3": {12, 13, 14, 15},
                     "g4": {0, 1, 2, 3}, "g5": {8, 9}}  # fmt: skip
    admitted = {r["job_id"].split("!")[1]: round(float(r["admitted_at"])) for r in rows}
    assert admitted == {"g0": 0, "g1": 5, "g2": 10, "g3": 15, "g4": 60, "g5": 25}
