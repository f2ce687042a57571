"""`batkube run --queues` end to end on the Batsim 4.2.1 double, with the embedded kube-scheduler 1.37.2
twin and the Kueue v0.17.0 twin: the thesis's spaced workload without starvation, a multi-tenant
workload with borrowing, preemption and a gang, jobs naming queues that do not exist."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from click.testing import CliRunner
from kueue_support import cq, flavor, lq, wpc, write

from batkube_py.cli.app import main

ROOT = Path(__file__).resolve().parents[1]
C16 = ROOT / "platforms" / "cluster_16x1core.xml"
SPACED = ROOT / "workloads" / "spaced_200_delay170.json"


def run(out: Path, workload: Path, *extra: str, platform: Path = C16) -> tuple[int, str, dict]:
    args = ["run", "-p", str(platform), "-w", str(workload), "-o", str(out), "--batsim", "double", *extra]
    result = CliRunner().invoke(main, args)
    summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else {}
    return result.exit_code, result.output, summary


def rows(path: Path) -> list[dict]:
    with path.open() as f:
        return list(csv.DictReader(f))


def test_strict_fifo_removes_the_spaced_workloads_starvation(tmp_path):
    queues = write(tmp_path, [flavor("f"), cq("all", {"f": {"cpu": 16}}, queueingStrategy="StrictFIFO"),
                              lq("default", "all")])  # fmt: skip
    code, output, bare = run(tmp_path / "bare", SPACED)
    assert code == 0, output
    code, output, kueue = run(tmp_path / "kueue", SPACED, "--queues", str(queues))
    assert code == 0, output
    # kube-scheduler alone lets newer pods take freed nodes while w0-69 backs off (1430.3 s);
    # Kueue's StrictFIFO admits in submission order, so no job waits more than the 12 ahead of it do
    assert round(bare["max_waiting_time"], 1) == 1430.3
    assert round(kueue["max_waiting_time"], 1) == 120.3
    assert kueue["jobs_succeeded"] == 200 and kueue["error"] is None
    pods = rows(tmp_path / "kueue" / "pods.csv")
    assert all(p["queue"] == "default" and p["cluster_queue"] == "all" and p["flavor"] == "f" for p in pods)
    assert all(float(p["submit_time"]) <= float(p["admitted_at"]) <= float(p["start_time"]) for p in pods)
    admitted = [float(p["admitted_at"]) for p in sorted(pods, key=lambda p: int(p["job_id"].split("!")[1]))]
    assert admitted == sorted(admitted)  # FIFO
    usage = [float(r["usage"]) for r in rows(tmp_path / "kueue" / "queues.csv")]
    assert max(usage) == 16.0
    stats = kueue["queue_stats"]["local_queues"]["default"]
    assert stats["admitted"] == 200 and round(stats["quota_wait"]["max"], 1) == 120.3


def multi_tenant(tmp_path: Path) -> tuple[Path, Path]:
    queues = write(tmp_path, [
        flavor("f"), wpc("urgent", 100),
        cq("team-a", {"f": {"cpu": 8}}, "co", preemption={"withinClusterQueue": "LowerPriority",
                                                          "reclaimWithinCohort": "Any"}),
        cq("team-b", {"f": {"cpu": 8}}, "co"),
        lq("team-a", "team-a"), lq("team-b", "team-b"),
    ])  # fmt: skip
    jobs = [
        *({"id": f"b{i}", "subtime": 0, "res": 1, "profile": "long", "queue": "team-b"} for i in range(12)),
        {"id": "a0", "subtime": 10, "res": 4, "profile": "short"},  # a gang of 4, reclaiming team-a's quota
        *({"id": f"a{i}", "subtime": 20 + i, "res": 1, "profile": "short"} for i in range(1, 5)),
        {"id": "hot", "subtime": 30, "res": 1, "profile": "short", "priority_class": "urgent"},
    ]
    workload = {
        "nb_res": 16, "queue": "team-a", "jobs": jobs,
        "profiles": {"long": {"type": "delay", "delay": 500, "cpu": "1"},
                     "short": {"type": "delay", "delay": 50, "cpu": "1"}},
    }  # fmt: skip
    path = tmp_path / "workload.json"
    path.write_text(json.dumps(workload))
    return queues, path


def test_a_multi_tenant_run_reclaims_lent_quota_and_never_breaks_a_quota(tmp_path):
    queues, workload = multi_tenant(tmp_path)
    outs = []
    for name in ("one", "two"):
        code, output, summary = run(tmp_path / name, workload, "--queues", str(queues))
        assert code == 0, output
        outs.append((tmp_path / name / "pods.csv").read_text())
    assert outs[0] == outs[1]  # deterministic
    assert summary["error"] is None and summary["jobs_rejected"] == 0 and summary["jobs_unfinished"] == 0
    # team-b borrowed 4 of team-a's cores; team-a's gang reclaims them (reclaimWithinCohort Any)
    assert summary["kueue_preemptions"] >= 1 and summary["jobs_resubmitted"] == summary["jobs_preempted"]
    pods = rows(tmp_path / "two" / "pods.csv")
    gang = [p for p in pods if p["job_id"] == "w0!a0"]
    assert len(gang) == 4 and {p["admitted_at"] for p in gang} == {"10.0224"}
    assert {p["queue"] for p in pods if p["job_id"].startswith("w0!a")} == {
        "team-a"
    }  # the workload's default
    killed = [p for p in pods if p["state"] == "Killed"]
    assert killed and all("preempted by Kueue" in p["reason"] for p in killed)
    for r in rows(tmp_path / "two" / "queues.csv"):  # each ClusterQueue within its 8 plus the other's 8
        assert float(r["usage"]) <= 16.0


def test_a_job_naming_no_local_queue_is_rejected_and_without_queues_the_field_is_ignored(tmp_path):
    queues = write(tmp_path, [flavor("f"), cq("q", {"f": {"cpu": 16}}), lq("q", "q")])
    jobs = [{"id": "ok", "subtime": 0, "res": 1, "profile": "p", "queue": "q"},
            {"id": "lost", "subtime": 0, "res": 1, "profile": "p", "queue": "nowhere"},
            {"id": "none", "subtime": 0, "res": 1, "profile": "p"},
            {"id": "badclass", "subtime": 0, "res": 1, "profile": "p", "queue": "q",
             "priority_class": "vip"}]  # fmt: skip
    workload = tmp_path / "w.json"
    workload.write_text(
        json.dumps({"nb_res": 1, "jobs": jobs, "profiles": {"p": {"type": "delay", "delay": 5}}})
    )
    code, output, summary = run(tmp_path / "kueue", workload, "--queues", str(queues))
    assert code == 0, output
    rejected = {r["job_id"]: r for r in rows(tmp_path / "kueue" / "rejected.csv")}
    assert sorted(rejected) == ["w0!badclass", "w0!lost", "w0!none"]
    assert "the name of a LocalQueue" in rejected["w0!lost"]["expected"]
    assert "no LocalQueue 'default'" in rejected["w0!none"]["expected"]
    assert rejected["w0!badclass"]["field"] == "priority_class"
    code, output, summary = run(tmp_path / "bare", workload)
    assert code == 0, output
    assert summary["queue_fields_ignored"] == 3 and summary["jobs_rejected"] == 0
    assert "the fields are ignored" in (tmp_path / "bare" / "batkube.log").read_text()


def test_the_twin_refuses_loudly_what_it_does_not_model(tmp_path):
    conf = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
            "admissionFairSharing": {"usageHalfLifeTime": "10m"}}  # fmt: skip
    queues = write(tmp_path, [flavor("f"), cq("q", {"f": {"cpu": 16}}), lq("default", "q"), conf])
    for backend in ("embedded", "apiserver"):  # refused before any control plane is needed
        code, output, _ = run(tmp_path / backend, SPACED, "--queues", str(queues), "--backend", backend)
        assert code != 0 and "field 'admissionFairSharing': admission fair sharing is not run" in output
        assert "Traceback" not in output


def test_a_job_admitted_then_evicted_before_binding_in_one_instant_gets_new_pods(tmp_path):
    queues = write(tmp_path, [
        flavor("f"), cq("a", {"f": {"cpu": 1}}, "co"),
        cq("b", {"f": {"cpu": 4}}, "co", preemption={"reclaimWithinCohort": "Any"}),
        lq("a", "a"), lq("b", "b"),
    ])  # fmt: skip
    # one cycle admits X in b and L in a (borrowing 2 of b's); the next, Y reclaims them: L is evicted
    # before kube-scheduler's twin ever saw it ungated, so its pod is deleted and the job gets a new one
    jobs = [{"id": "L", "subtime": 0, "res": 1, "profile": "p3", "queue": "a"},
            {"id": "X", "subtime": 0, "res": 1, "profile": "p2", "queue": "b"},
            {"id": "Y", "subtime": 0, "res": 1, "profile": "p2", "queue": "b"}]  # fmt: skip
    profiles = {
        "p2": {"type": "delay", "delay": 100, "cpu": "2"},
        "p3": {"type": "delay", "delay": 100, "cpu": "3"},
    }
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps({"nb_res": 1, "jobs": jobs, "profiles": profiles}))
    code, output, summary = run(tmp_path / "out", workload, "--queues", str(queues),
                                platform=ROOT / "platforms" / "cluster_1x6core.xml")  # fmt: skip
    assert code == 0, output
    assert summary["error"] is None and summary["jobs_succeeded"] == 3 and summary["kueue_preemptions"] == 1
    pods = {p["job_id"]: p for p in rows(tmp_path / "out" / "pods.csv")}
    assert pods["w0!L"]["reason"].startswith("restarted: preempted by Kueue (InCohortReclamation)")
    assert float(pods["w0!L"]["admitted_at"]) >= 100.0  # admitted again once X and Y are done
    assert float(pods["w0!X"]["admitted_at"]) == float(pods["w0!Y"]["admitted_at"]) < 1.0


def test_explain_tells_a_jobs_admission_by_kueue(tmp_path):
    queues = write(tmp_path, [flavor("f"), cq("all", {"f": {"cpu": 16}}, queueingStrategy="StrictFIFO"),
                              lq("default", "all")])  # fmt: skip
    code, output, _ = run(tmp_path / "run", SPACED, "--queues", str(queues), "--record-decisions")
    assert code == 0, output
    result = CliRunner().invoke(main, ["explain", str(tmp_path / "run"), "w0!69"])
    assert result.exit_code == 0, result.output
    assert "admitted by Kueue (LocalQueue default → ClusterQueue all, flavor f) at" in result.output
    assert "after a quota wait of" in result.output
