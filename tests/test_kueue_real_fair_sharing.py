"""Fair sharing on the real Kueue v0.17.0 in front of the real kube-scheduler 1.37.2 (`--queues` with
`--backend apiserver`, the Batsim 4.2.1 double), each case against a hand-computed expectation, and the
Kueue twin with the kube-scheduler twin giving the same admissions, queues, flavors and starts."""

from __future__ import annotations

import json
from pathlib import Path

import test_kueue_real
from click.testing import CliRunner
from kueue_support import cohort, cq, flavor, lq, write
from test_kueue_real import C16, DOUBLE, jobs_file, kueue_columns, pods, run

from batkube_py.cli.app import main

controlplane = test_kueue_real.controlplane  # the module's control plane fixture
STRATEGIES = ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
FAIR = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
        "fairSharing": {"preemptionStrategies": STRATEGIES}}  # fmt: skip


def twin(out: Path, workload: Path, queues: Path) -> list[tuple]:
    args = ["run", "-p", str(C16), "-w", str(workload), "-o", str(out), "--batsim", str(DOUBLE),
            "--no-progress", "--queues", str(queues)]  # fmt: skip
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return kueue_columns(out)


def teams(tmp_path: Path, weight_b: int) -> Path:
    """a and b with 2 cores each (b of weight `weight_b`) and an idle lender of 7: 11 cores in one cohort."""
    b = cq("b", {"f": {"cpu": 2}}, "co", fairSharing={"weight": weight_b})
    return write(tmp_path, [flavor("f"), cohort("co"), cq("a", {"f": {"cpu": 2}}, "co"), b,
                            cq("l", {"f": {"cpu": 7}}, "co"), lq("a", "a"), lq("b", "b"), FAIR])  # fmt: skip


def test_two_weighted_queues_share_idle_quota_by_dominant_resource_share(controlplane, tmp_path):
    # ten 100-s one-core jobs per team at 0, a's first. Five cycles admit both heads (10 cores); in the
    # sixth one core is left: a with a5 would borrow 4 of 11 cores (363.6), b with b5 as much but over its
    # weight 2 (181.8): b5 is admitted at 0 and a5 waits until 100. With equal weights a5, the older, wins.
    jobs = [{"id": f"{t}{i}", "subtime": 0, "queue": t} for t in "ab" for i in range(10)]
    workload = jobs_file(tmp_path, jobs)
    for weight_b, first in ((2, "b5"), (1, "a5")):
        out = tmp_path / f"real-{weight_b}"
        code, output, summary = run(controlplane, out, workload, teams(tmp_path, weight_b))
        assert code == 0, output
        assert summary["error"] is None and summary["jobs_succeeded"] == 20
        p = pods(out)
        at_zero = {j for j, r in p.items() if float(r["admitted_at"]) < 1}
        assert at_zero == {"a0", "a1", "a2", "a3", "a4", "b0", "b1", "b2", "b3", "b4", first}
        assert all(99 < float(r["admitted_at"]) < 101 for j, r in p.items() if j not in at_zero)
        assert twin(tmp_path / f"twin-{weight_b}", workload, teams(tmp_path, weight_b)) == kueue_columns(out)


def reclaim(tmp_path: Path, weight_b: int) -> tuple[Path, Path]:
    """a and b with 1 core each and an idle lender of 2: 4 cores. a1, a2 (half a core each) and b0 run from
    0, b1..b5 from 1..5 (one per second: their quota reservations are told apart by time, not by random
    UIDs), all for 1000 s: b borrows 2 cores and the cohort is full. At 10, a3 asks for a core for 100 s."""
    queues = write(tmp_path, [
        flavor("f"), cohort("co"),
        cq("a", {"f": {"cpu": 1}}, "co", preemption={"reclaimWithinCohort": "Any"}),
        cq("b", {"f": {"cpu": 1}}, "co", fairSharing={"weight": weight_b}), cq("l", {"f": {"cpu": 2}}, "co"),
        lq("a", "a"), lq("b", "b"), FAIR,
    ], name=f"queues-{weight_b}.yaml")  # fmt: skip
    jobs = [{"id": "a1", "subtime": 0, "queue": "a"}, {"id": "a2", "subtime": 0, "queue": "a"},
            *({"id": f"b{i}", "subtime": i, "queue": "b"} for i in range(6)),
            {"id": "a3", "subtime": 10, "queue": "a", "profile": "core"}]  # fmt: skip
    path = tmp_path / "reclaim.json"
    profiles = {"half": {"type": "delay", "delay": 1000, "cpu": "500m"},
                "core": {"type": "delay", "delay": 100, "cpu": "1"}}  # fmt: skip
    jobs = [{"res": 1, "profile": "half", **j} for j in jobs]
    path.write_text(json.dumps({"nb_res": 16, "jobs": jobs, "profiles": profiles}))
    return path, queues


def test_fair_sharing_preemption_reclaims_from_the_queue_above_its_share(controlplane, tmp_path):
    # a with a3 would borrow 1 of 4 cores (250), b borrows 2 (500). LessThanOrEqualToFinalShare: b without
    # b5 (its latest reservation) would borrow 1.5 (375 >= 250): b5 is preempted, half a core is not enough;
    # b without b4 too would borrow 1 (250 >= 250): b4 as well, and a3 fits. Both are killed at 10 and
    # resubmitted; a3 runs from 10 to 110, when b4 and b5 are admitted again (b borrows 2 again, a is idle).
    workload, queues = reclaim(tmp_path, 1)
    out = tmp_path / "real"
    code, output, summary = run(controlplane, out, workload, queues)
    assert code == 0, output
    assert summary["error"] is None and summary["jobs_preempted"] == 2
    p = pods(out)
    assert {j for j, r in p.items() if r["state"] == "Killed"} == {"b4", "b5"}
    assert all("by Kueue" in p[j]["reason"] for j in ("b4", "b5"))
    assert 10 <= float(p["a3"]["admitted_at"]) < 11 and 10 <= float(p["a3"]["start_time"]) < 11
    again = {j.split("#")[0]: r for j, r in p.items() if "#" in j}
    assert sorted(again) == ["b4", "b5"]
    assert all(110 <= float(r["admitted_at"]) < 111 and r["state"] == "Succeeded" for r in again.values())
    assert twin(tmp_path / "twin", workload, queues) == kueue_columns(out)


def test_a_heavier_queue_above_its_nominal_is_not_preempted(controlplane, tmp_path):
    # the same with b of weight 4: b's share 500 / 4 = 125 is below a's 250 with a3, and neither strategy
    # preempts (250 <= 375 / 4? 250 < 125?). a3 waits until a1, a2 and b0 end at 1000.
    workload, queues = reclaim(tmp_path, 4)
    out = tmp_path / "real"
    code, output, summary = run(controlplane, out, workload, queues)
    assert code == 0, output
    assert summary["error"] is None and summary["jobs_preempted"] == 0 and summary["jobs_succeeded"] == 9
    assert 1000 <= float(pods(out)["a3"]["admitted_at"]) < 1001
    assert twin(tmp_path / "twin", workload, queues) == kueue_columns(out)


def test_the_tournament_compares_cohorts_by_their_weighted_share(controlplane, tmp_path):
    # A root cohort with child cohorts x (CQ x1) and y (CQs y1, y2), 1 core each, and a lender of 4 at the
    # root: 7 cores. Six 100-s jobs at 0 (two per CQ) leave one core; at 1 come y1c then x1c. At the root,
    # x with x1c would borrow 2 of 7 cores (285.7), y with y1c 3 (428.6): x1c is admitted at 1 and y1c at
    # 100. With y of weight 2 (214.3) it is the other way round.
    jobs = [*({"id": f"{q}{i}", "subtime": 0, "queue": q} for q in ("y1", "y2", "x1") for i in "ab"),
            {"id": "y1c", "subtime": 1, "queue": "y1"},
            {"id": "x1c", "subtime": 1, "queue": "x1"}]  # fmt: skip
    workload = jobs_file(tmp_path, jobs)
    for weight_y, first, last in ((1, "x1c", "y1c"), (2, "y1c", "x1c")):
        queues = write(tmp_path, [
            flavor("f"), cohort("root"), cohort("x", "root"),
            cohort("y", "root", fairSharing={"weight": weight_y}),
            cq("x1", {"f": {"cpu": 1}}, "x"), cq("y1", {"f": {"cpu": 1}}, "y"),
            cq("y2", {"f": {"cpu": 1}}, "y"),
            cq("lend", {"f": {"cpu": 4}}, "root"), lq("x1", "x1"), lq("y1", "y1"), lq("y2", "y2"), FAIR,
        ], name=f"tree-{weight_y}.yaml")  # fmt: skip
        out = tmp_path / f"real-{weight_y}"
        code, output, summary = run(controlplane, out, workload, queues)
        assert code == 0, output
        assert summary["error"] is None and summary["jobs_succeeded"] == 8
        p = pods(out)
        assert all(float(p[f"{q}{i}"]["admitted_at"]) < 1 for q in ("y1", "y2", "x1") for i in "ab")
        assert 1 <= float(p[first]["admitted_at"]) < 2 and 100 <= float(p[last]["admitted_at"]) < 101
        assert twin(tmp_path / f"twin-{weight_y}", workload, queues) == kueue_columns(out)
