"""The Kueue parity suite: each case of kueue_parity_cases.py on the real Kueue v0.17.0 + kube-scheduler
1.37.2 (one control plane, `parallelism: 1`) and on the twins, through `batkube parity --queues`, on the
Batsim 4.2.1 double. Strict: every job must get the same admission instant, ClusterQueue, flavor,
evictions, node and start, and no case may need the documented victim tie.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from apiserver_support import DOUBLE, require_kueue, start
from click.testing import CliRunner
from kueue_parity_cases import MULTI, cases

from batkube_py.analysis import jobparity
from batkube_py.cli.app import main

CASES = cases()
SERIAL = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nparallelism: 1\n"


@pytest.fixture(scope="module")
def controlplane(tmp_path_factory):
    require_kueue()
    d = tmp_path_factory.mktemp("cp")
    (d / "serial.yaml").write_text(SERIAL)
    cp = start(d, d / "serial.yaml")
    yield cp
    cp.down(remove=True)


def parity(cp, out: Path, platform: Path, workload: Path, queues: Path, *extra: str):
    args = ["parity", "-p", str(platform), "-w", str(workload), "-o", str(out), "--queues", str(queues),
            "--batsim", str(DOUBLE), "--controlplane-dir", str(cp.dir), *extra]  # fmt: skip
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    figures = json.loads((out / "parity.json").read_text()) if (out / "parity.json").exists() else {}
    return result.exit_code, result.output, figures


def rows(run: Path) -> dict[str, dict[str, str]]:
    return {j.split("!", 1)[1]: r for j, r in jobparity.read_pods(run / "pods.csv").items()}


def _strict(cp, tmp_path: Path, case) -> tuple[Path, dict]:
    platform, workload, queues = case.write(tmp_path / "in")
    code, output, figures = parity(cp, tmp_path / "out", platform, workload, queues)
    assert code == 0, output
    assert figures["victim_tie"] == "" and figures["mismatches"] == 0, output
    assert figures["identical"] == figures["jobs"] == len(case.jobs)
    assert (figures["kueue_version"], figures["kubernetes_version"]) == ("v0.17.0", "v1.37.2")
    twin = rows(tmp_path / "out" / "twin")
    assert case.shows(twin), {j: (r["admitted_at"], r["flavor"], r["state"]) for j, r in twin.items()}
    return tmp_path / "out", twin


@pytest.mark.parametrize("name", sorted(CASES))
def test_real_kueue_agrees_with_the_twin(controlplane, tmp_path: Path, name: str):
    _strict(controlplane, tmp_path, CASES[name])


def test_multi_tenant_twice_the_same_and_the_twin_identical(controlplane, tmp_path: Path):
    out, twin = _strict(controlplane, tmp_path, MULTI)
    platform, workload, queues = MULTI.write(tmp_path / "in")
    again = tmp_path / "again"
    args = ["run", "-p", str(platform), "-w", str(workload), "-o", str(again), "--batsim", str(DOUBLE),
            "--no-progress", "--backend", "apiserver", "--controlplane-dir", str(controlplane.dir),
            "--queues", str(queues)]  # fmt: skip
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert (again / "pods.csv").read_bytes() == (out / "real" / "pods.csv").read_bytes()
    real = rows(out / "real")
    for run in (out / "real", out / "twin", again):
        summary = json.loads((run / "summary.json").read_text())
        assert summary["error"] is None and summary["jobs_unfinished"] == summary["jobs_rejected"] == 0
    # no job lost: each job's last attempt succeeded; none admitted before it was submitted
    finals = {jobparity.base_job(j): r for j, r in sorted(real.items(), key=lambda kv: kv[0].count("#"))}
    assert set(finals) == {j["id"] for j in MULTI.jobs}
    assert all(r["state"] == "Succeeded" for r in finals.values())
    assert all(float(r["admitted_at"]) >= float(r["submit_time"]) for r in real.values())
    # the quotas: team-a borrows at most 2 cores; the cohort never holds more than its 12
    with (out / "real" / "queues.csv").open() as f:
        usage: dict[str, float] = {}
        for r in csv.DictReader(f):
            usage[r["cluster_queue"]] = float(r["usage"])
            assert float(r["borrowed"]) <= (2 if r["cluster_queue"] == "team-a" else 4)
            assert sum(usage.values()) <= 12
    assert sum(r["state"] == "Killed" for r in twin.values()) >= 1


# ---- the comparison and the command's errors, without a control plane -------------------------------

ROW = {"job_id": "w0!a", "priority": "0", "submit_time": "0", "admitted_at": "0.02", "cluster_queue": "cq",
       "flavor": "f", "node": "node-0", "start_time": "0.02", "finish_time": "100",
       "state": "Succeeded"}  # fmt: skip


def _run(*specs: tuple[str, dict]) -> dict[str, dict[str, str]]:
    return {job: {**ROW, "job_id": job, **fields} for job, fields in specs}


def test_compare_names_each_differing_field_and_the_evictions():
    real = _run(("w0!a", {}), ("w0!b", {"state": "Killed", "finish_time": "10"}), ("w0!b#r1", {}))
    twin = _run(("w0!a", {"node": "node-3", "admitted_at": "0.5"}), ("w0!b", {}))
    got = {(m.job, m.field): (m.real, m.twin) for m in jobparity.compare(real, twin)}
    assert got == {("w0!a", "admitted_at"): ("0.02", "0.5"), ("w0!a", "node"): ("node-0", "node-3"),
                   ("w0!b", "state"): ("Killed", "Succeeded"), ("w0!b#r1", "attempt"): ("present", ""),
                   ("w0!b", "evictions"): ("1 at 10", "0")}  # fmt: skip


KILLED = {"state": "Killed", "finish_time": "10"}
AGAIN = {"submit_time": "10", "admitted_at": "100", "start_time": "100", "finish_time": "200"}


def _swap(b_admitted: str = "0.7"):
    """a and b of one ClusterQueue and priority: Kueue preempted a at 10, the twin b; the preemptor p,
    admitted in the step that chose the victim (Batsim kills it a few ms later), took its node."""
    p = {"submit_time": "9.9", "admitted_at": "9.998", "start_time": "9.998"}
    real = _run(("w0!a", KILLED), ("w0!a#r1", AGAIN), ("w0!b", {"admitted_at": b_admitted}),
                ("w0!p", {**p, "node": "node-2"}))  # fmt: skip
    twin = _run(("w0!a", {}), ("w0!b", {"admitted_at": b_admitted, **KILLED}), ("w0!b#r1", AGAIN),
                ("w0!p", {**p, "node": "node-3"}))  # fmt: skip
    return real, twin


def _tie(real, twin) -> tuple[str, list]:
    mismatches = jobparity.compare(real, twin)
    return jobparity.victim_tie(real, twin, mismatches, lambda r: 0), mismatches


def test_a_swap_of_tied_victims_is_the_documented_tie():
    tie, mismatches = _tie(*_swap())
    assert "random UIDs" in tie and all(m.tie for m in mismatches)
    assert ("w0!p", "node") in {(m.job, m.field) for m in mismatches}


def test_victims_reserved_in_different_seconds_are_no_tie():
    tie, mismatches = _tie(*_swap(b_admitted="1.2"))
    assert tie == "" and not any(m.tie for m in mismatches)


def test_a_difference_before_the_victims_is_not_excused_by_them():
    real, twin = _swap()
    twin["w0!a"]["node"] = "node-5"  # bound elsewhere at 0.02
    assert _tie(real, twin)[0] == ""


def test_the_same_victim_killed_a_little_later_on_one_side_is_no_swap():
    real = _run(("w0!a", KILLED), ("w0!a#r1", AGAIN), ("w0!b", {"admitted_at": "0.7", **KILLED}))
    later = {**KILLED, "finish_time": "10.2"}
    twin = _run(("w0!a", later), ("w0!a#r1", AGAIN), ("w0!b", {"admitted_at": "0.7"}))
    assert _tie(real, twin)[0] == ""


def test_parity_queues_refuses_bad_input_in_one_line(tmp_path: Path):
    from kueue_parity_cases import CASES as ALL

    platform, workload, queues = ALL[0].write(tmp_path / "in")
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: x}\nspec: {}\n")
    for extra, expected in (
        (["--queues", str(bad)], "ClusterQueue/x"),
        (["--queues", str(queues), "--kube-version", "1.32"], "--kube-version must be 1.37"),
        (["--queues", str(queues), "--scheduler-config", str(bad), "--controlplane-dir", str(tmp_path)],
         "--scheduler-config with --controlplane-dir"),
    ):  # fmt: skip
        args = ["parity", "-p", str(platform), "-w", str(workload), "-o", str(tmp_path / "out"), *extra]
        result = CliRunner().invoke(main, args)
        assert result.exit_code != 0 and expected in result.output, result.output
        assert "Traceback" not in result.output


def test_kueue_preemption_messages_name_the_preemptor_pod_not_its_random_uids():
    from batkube_py.cluster.realkueue import stable_reason

    why = ("preempted by Kueue (InCohortReclamation): Preempted to accommodate a workload (UID: 0fd0-aa, "
           "JobUID: 8df9-bb) due to reclamation within the cohort; preemptor path: /org/team-a")  # fmt: skip
    assert stable_reason(why, {"8df9-bb": "w0-a38"}) == (
        "preempted by Kueue (InCohortReclamation): Preempted to accommodate a workload (pod w0-a38) due to "
        "reclamation within the cohort; preemptor path: /org/team-a"
    )
