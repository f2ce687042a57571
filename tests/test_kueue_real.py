"""The real Kueue v0.17.0 in front of the real kube-scheduler 1.37.2 (`--queues` with `--backend apiserver`),
on the Batsim 4.2.1 double: admissions against hand-computed expectations, the same outputs twice, and
the refusals of what the real backend does not run yet (docs/kueue.md)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from apiserver_support import DOUBLE, require_kueue, start
from click.testing import CliRunner
from kueue_support import cohort, cq, flavor, lq, wpc, write

from batkube_py.cli.app import main

ROOT = Path(__file__).resolve().parents[1]
C16 = ROOT / "platforms" / "cluster_16x1core.xml"


@pytest.fixture(scope="module")
def controlplane(tmp_path_factory):
    require_kueue()
    cp = start(tmp_path_factory.mktemp("cp"))
    yield cp
    cp.down(remove=True)


def run(cp, out: Path, workload: Path, queues: Path) -> tuple[int, str, dict]:
    args = ["run", "-p", str(C16), "-w", str(workload), "-o", str(out), "--batsim", str(DOUBLE),
            "--no-progress", "--backend", "apiserver", "--controlplane-dir", str(cp.dir),
            "--queues", str(queues)]  # fmt: skip
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else {}
    return result.exit_code, result.output, summary


def jobs_file(tmp: Path, jobs: list[dict], delay: float = 100) -> Path:
    path = tmp / "workload.json"
    doc = {"nb_res": 16, "jobs": [{"res": 1, "profile": "p", **j} for j in jobs],
           "profiles": {"p": {"type": "delay", "delay": delay, "cpu": "1"},
                        "half": {"type": "delay", "delay": delay, "cpu": "500m"}}}  # fmt: skip
    path.write_text(json.dumps(doc))
    return path


def pods(out: Path) -> dict[str, dict]:
    with (out / "pods.csv").open() as f:
        return {r["job_id"].split("!")[1]: r for r in csv.DictReader(f)}


def kueue_columns(out: Path) -> list[tuple]:
    keep = ("job_id", "submit_time", "admitted_at", "start_time", "finish_time", "state", "queue",
            "cluster_queue", "flavor")  # fmt: skip
    with (out / "pods.csv").open() as f:
        return [tuple(r[k] for k in keep) for r in csv.DictReader(f)]


def test_quota_admits_in_submission_order_and_twice_the_same(controlplane, tmp_path):
    # 4 cores of quota on 16 nodes, 6 jobs of 100 s submitted at once: Kueue admits the first four at 0
    # and the last two when quota comes back at 100; FIFO is the submission order, not the apiserver's
    queues = write(tmp_path, [flavor("f"), cq("cq", {"f": {"cpu": 4}}), lq("q", "cq")])
    workload = jobs_file(tmp_path, [{"id": f"j{i}", "subtime": 0, "queue": "q"} for i in range(6)])
    outs = []
    for name in ("one", "two"):
        code, output, summary = run(controlplane, tmp_path / name, workload, queues)
        assert code == 0, output
        assert summary["error"] is None and summary["jobs_succeeded"] == 6
        assert summary["kueue_version"] == "v0.17.0" and summary["kubernetes_version"] == "v1.37.2"
        outs.append(kueue_columns(tmp_path / name))
    # Kueue's part is the same; the node among tied ones is kube-scheduler's (parallel filtering, and its
    # node rotation carries over from run to run on one control plane)
    assert outs[0] == outs[1]
    p = pods(tmp_path / "two")
    assert {j for j, r in p.items() if float(r["admitted_at"]) < 1} == {"j0", "j1", "j2", "j3"}
    assert all(99 < float(p[j]["admitted_at"]) < 101 for j in ("j4", "j5"))
    assert all(r["cluster_queue"] == "cq" and r["flavor"] == "f" and r["queue"] == "q" for r in p.values())
    assert all(float(r["admitted_at"]) <= float(r["start_time"]) for r in p.values())


def test_borrowing_within_a_cohort(controlplane, tmp_path):
    # team-a borrows team-b's idle 2 cores at 0; team-b's job at 50 waits for them (no reclaim) until 100
    queues = write(tmp_path, [
        flavor("f"), cohort("co"),
        cq("team-a", {"f": {"cpu": 2}}, "co"), cq("team-b", {"f": {"cpu": 2}}, "co"),
        lq("a", "team-a"), lq("b", "team-b"),
    ])  # fmt: skip
    jobs = [*({"id": f"a{i}", "subtime": 0, "queue": "a"} for i in range(4)),
            {"id": "b0", "subtime": 50, "queue": "b"}]
    code, output, summary = run(controlplane, tmp_path / "out", jobs_file(tmp_path, jobs), queues)
    assert code == 0, output
    p = pods(tmp_path / "out")
    assert all(float(p[f"a{i}"]["admitted_at"]) < 1 for i in range(4))
    assert 99 < float(p["b0"]["admitted_at"]) < 101 and p["b0"]["cluster_queue"] == "team-b"


def test_a_job_kueue_never_admits_is_rejected_with_its_reason(controlplane, tmp_path):
    # half a core of quota: a half-core job runs, a one-core job (which fits a node) never gets quota
    queues = write(tmp_path, [flavor("f"), cq("cq", {"f": {"cpu": "500m"}}), lq("q", "cq")])
    jobs = [{"id": "ok", "subtime": 0, "queue": "q", "profile": "half"},
            {"id": "big", "subtime": 0, "queue": "q"}]
    code, output, summary = run(controlplane, tmp_path / "out", jobs_file(tmp_path, jobs), queues)
    assert code == 0, output
    with (tmp_path / "out" / "rejected.csv").open() as f:
        rejected = {r["job_id"]: r for r in csv.DictReader(f)}
    assert list(rejected) == ["w0!big"]
    assert "Kueue never admits it" in rejected["w0!big"]["expected"]
    assert "insufficient" in rejected["w0!big"]["expected"]
    assert summary["jobs_succeeded"] == 1


def test_preemption_within_a_cluster_queue(controlplane, tmp_path):
    # 2 cores; two low-priority jobs run from 0; an urgent one at 10 preempts one of them (both reserved
    # quota in the same second: Kueue's candidate order then falls to the Workloads' random UIDs), which
    # is killed and resubmitted, and runs when the other ends at 100
    queues = write(tmp_path, [
        flavor("f"), wpc("urgent", 100),
        cq("cq", {"f": {"cpu": 2}}, preemption={"withinClusterQueue": "LowerPriority"}), lq("q", "cq"),
    ])  # fmt: skip
    jobs = [{"id": "lo0", "subtime": 0, "queue": "q"}, {"id": "lo1", "subtime": 0, "queue": "q"},
            {"id": "hot", "subtime": 10, "queue": "q", "priority_class": "urgent"}]  # fmt: skip
    code, output, summary = run(controlplane, tmp_path / "out", jobs_file(tmp_path, jobs), queues)
    assert code == 0, output
    assert summary["error"] is None and summary["jobs_preempted"] == 1 and summary["jobs_resubmitted"] == 1
    with (tmp_path / "out" / "pods.csv").open() as f:
        rows = list(csv.DictReader(f))
    killed = [r for r in rows if r["state"] == "Killed"]
    assert len(killed) == 1 and killed[0]["job_id"] in ("w0!lo0", "w0!lo1")
    assert "by Kueue" in killed[0]["reason"]
    hot = next(r for r in rows if r["job_id"] == "w0!hot")
    assert 10 <= float(hot["admitted_at"]) < 11
    again = next(r for r in rows if r["job_id"].startswith(killed[0]["job_id"] + "#"))
    assert 99 < float(again["admitted_at"]) < 101 and again["state"] == "Succeeded"


POOLS = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1"><zone id="AS0" routing="Full">
  <host id="node-0" speed="1Gf"><prop id="core" value="2"/><prop id="pool" value="a"/></host>
  <host id="node-1" speed="1Gf"><prop id="core" value="2"/><prop id="pool" value="b"/></host>
  <host id="node-2" speed="1Gf"><prop id="core" value="4"/></host>
  <host id="master_host" speed="1Gf"/>
</zone></platform>
"""


def test_flavors_select_the_nodes_their_labels_name_as_in_the_twin(controlplane, tmp_path):
    # host property pool=a|b is a node label; flavor a (pool: a) and b (pool: b), 2 cores of quota each,
    # in that order; node-2 (4 free cores, no pool) would win kube-scheduler's scoring without the
    # flavors' nodeSelector. j0,j1 fill a; j2,j3 try a (no fit), then b (fungibility); j4 fits nowhere
    # until 100, when all four end: its flavor walk ended on the last flavor, so it starts again at a.
    # j5 (2 cores) at 150: a holds j4, so b.
    platform = tmp_path / "pools.xml"
    platform.write_text(POOLS)
    queues = write(tmp_path, [flavor("a", nodeLabels={"pool": "a"}), flavor("b", nodeLabels={"pool": "b"}),
                              cq("cq", {"a": {"cpu": 2}, "b": {"cpu": 2}}), lq("q", "cq")])  # fmt: skip
    jobs = [*({"id": f"j{i}", "subtime": 0, "queue": "q"} for i in range(5)),
            {"id": "j5", "subtime": 150, "queue": "q", "profile": "two"}]  # fmt: skip
    workload = jobs_file(tmp_path, jobs)
    doc = json.loads(workload.read_text())
    doc["profiles"]["two"] = {"type": "delay", "delay": 100, "cpu": "2"}
    workload.write_text(json.dumps(doc))
    expected = {"j0": (0, "a", "node-0"), "j1": (0, "a", "node-0"), "j2": (0, "b", "node-1"),
                "j3": (0, "b", "node-1"), "j4": (100, "a", "node-0"), "j5": (150, "b", "node-1")}
    both_backends(controlplane, tmp_path, platform, workload, queues, expected)


def both_backends(cp, tmp_path: Path, platform: Path, workload: Path, queues: Path, expected: dict) -> None:
    """The real pair and the twins on the same inputs: each job's (admission instant, flavor, node) as
    expected, started when admitted, and the same admission instant, flavor, node and start on both."""
    got = {}
    for backend in ("apiserver", "embedded"):
        out = tmp_path / backend
        args = ["run", "-p", str(platform), "-w", str(workload), "-o", str(out), "--batsim", str(DOUBLE),
                "--no-progress", "--queues", str(queues), "--backend", backend]  # fmt: skip
        if backend == "apiserver":
            args += ["--controlplane-dir", str(cp.dir)]
        result = CliRunner().invoke(main, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        summary = json.loads((out / "summary.json").read_text())
        assert summary["error"] is None and summary["jobs_succeeded"] == len(expected)
        got[backend] = {j: (round(float(r["admitted_at"]), 3), r["flavor"], r["node"],
                            round(float(r["start_time"]), 3)) for j, r in pods(out).items()}  # fmt: skip
        for j, (at, fl, node) in expected.items():
            admitted, flavor_, node_, start = got[backend][j]
            assert (round(admitted), flavor_, node_, round(start)) == (at, fl, node, at), (backend, j)
    assert got["apiserver"] == got["embedded"]


def test_topology_aware_scheduling_of_single_pods_as_in_the_twin(controlplane, tmp_path):
    # 2 racks (topology.kubernetes.io/zone) of 2 two-core nodes, one TAS flavor over rack and host, so
    # every workload of the ClusterQueue is placed by TAS. j0..j2 (unconstrained, implied) go to the host
    # with the least free capacity that holds them, first by name: node-0, node-0, node-1 (kube-scheduler
    # alone would spread them). At 10, j3 requires one rack: rack0 has 1 slot, rack1 4, BestFit takes
    # rack0: node-1. j4 prefers one host: the fullest host that holds it, then by name: node-2.
    from batkube_py.inputs.platforms import rack_platform

    zone = "topology.kubernetes.io/zone"
    platform = tmp_path / "racks.xml"
    platform.write_text(rack_platform(2, 4, "2", labels={"pool": "tas"}))
    levels = [{"nodeLabel": zone}, {"nodeLabel": "kubernetes.io/hostname"}]
    topology = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology", "metadata": {"name": "dc"},
                "spec": {"levels": levels}}  # fmt: skip
    queues = write(tmp_path, [topology, flavor("racks", topologyName="dc", nodeLabels={"pool": "tas"}),
                              cq("cq", {"racks": {"cpu": 8}}), lq("q", "cq")])  # fmt: skip
    jobs = [*({"id": f"j{i}", "subtime": 0, "queue": "q"} for i in range(3)),
            {"id": "j3", "subtime": 10, "queue": "q", "topology": {"required": zone}},
            {"id": "j4", "subtime": 10, "queue": "q", "topology": {"preferred": "kubernetes.io/hostname"}}]
    expected = {"j0": (0, "racks", "node-0"), "j1": (0, "racks", "node-0"), "j2": (0, "racks", "node-1"),
                "j3": (10, "racks", "node-1"), "j4": (10, "racks", "node-2")}  # fmt: skip
    both_backends(controlplane, tmp_path, platform, jobs_file(tmp_path, jobs), queues, expected)
