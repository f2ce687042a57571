"""`batkube explain` tells a job's admission by Kueue (--queues) before its scheduling story: runs on the
Batsim 4.2.1 double with the kube-scheduler 1.37.2 twin and the Kueue v0.17.0 twin, each expectation
computed by hand from the queues and the jobs (one 6-core node: only Kueue's quota makes jobs wait)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from kueue_support import cohort, cq, flavor, lq, wpc, write

from batkube_py.cli.app import main

ROOT = Path(__file__).resolve().parents[1]
ONE_NODE = ROOT / "platforms" / "cluster_1x6core.xml"


def run(tmp: Path, docs: list[dict], jobs: list[dict], profiles: dict) -> Path:
    queues = write(tmp, docs)
    workload = tmp / "w.json"
    workload.write_text(json.dumps({"nb_res": 1, "jobs": jobs, "profiles": profiles}))
    out = tmp / "run"
    args = ["run", "-p", str(ONE_NODE), "-w", str(workload), "-o", str(out), "--batsim", "double",
            "--queues", str(queues), "--record-decisions"]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return out


def explain(out: Path, job: str, *extra: str) -> str:
    result = CliRunner().invoke(main, ["explain", str(out), job, *extra])
    assert result.exit_code == 0, result.output
    return result.output


def lines(out: Path, workload: str) -> list[dict]:
    rows = [json.loads(x) for x in (out / "admissions.jsonl").read_text().splitlines()]
    return [r for r in rows if r["workload"] == workload]


def delay(seconds: int, cpu: str) -> dict:
    return {"type": "delay", "delay": seconds, "cpu": cpu}


def test_a_job_short_of_quota_is_told_how_much_more_it_needs_and_what_woke_it(tmp_path):
    # quota 4 cpu; a takes 3 at t=0 for 100 s; b asks 2 at t=1: 1 available, "1 more needed", no
    # preemption (withinClusterQueue Never), so b waits in the inadmissible set until a finishes
    docs = [flavor("f"), cq("q", {"f": {"cpu": 4}}), lq("q", "q")]
    jobs = [{"id": "a", "subtime": 0, "res": 1, "profile": "three", "queue": "q"},
            {"id": "b", "subtime": 1, "res": 1, "profile": "two", "queue": "q"}]  # fmt: skip
    out = run(tmp_path, docs, jobs, {"three": delay(100, "3"), "two": delay(10, "2")})
    text = explain(out, "w0!b")
    assert "admission by Kueue (admissions.jsonl)" in text
    assert text.index("admission by Kueue") < text.index("attempts (")  # admission before scheduling
    assert "position 1 of 1 pending" in text
    assert ("couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor f, "
            "1 more needed") in text  # fmt: skip
    assert "quota short: cpu in flavor f: requested 2, nominal 4, in use 3, available 1" in text
    assert "moved to the inadmissible set until quota is freed in its cohort tree" in text
    assert "woken from the inadmissible set: w0-a finished in ClusterQueue q, freeing its quota" in text
    assert "Quota reserved in ClusterQueue q, wait time since queued was 99s" in text
    b = lines(out, "w0-b")
    assert [x["event"] for x in b] == ["submitted", "attempt", "attempt"]
    assert [x["outcome"] for x in b[1:]] == ["PreemptionNoCandidates", "Admitted"]
    assert b[2]["time"] > 100.0 and b[1]["requeued"] == "inadmissible"


def test_strict_fifo_head_blocking_is_told_for_the_job_behind_the_head(tmp_path):
    # StrictFIFO, quota 4: a holds 3; the head h asks 2 (1 more needed) and keeps its place, so s, asking
    # the 1 cpu still free, waits behind it until a finishes at 100 s; then h, then s, are admitted; late
    # (t=5) is one more event at which h fails the same way
    docs = [flavor("f"), cq("q", {"f": {"cpu": 4}}, queueingStrategy="StrictFIFO"), lq("q", "q")]
    jobs = [{"id": "a", "subtime": 0, "res": 1, "profile": "three", "queue": "q"},
            {"id": "h", "subtime": 1, "res": 1, "profile": "two", "queue": "q"},
            {"id": "s", "subtime": 1, "res": 1, "profile": "one", "queue": "q"},
            {"id": "late", "subtime": 5, "res": 1, "profile": "one", "queue": "q"}]  # fmt: skip
    out = run(tmp_path, docs, jobs, {"three": delay(100, "3"), "two": delay(10, "2"), "one": delay(10, "1")})
    text = explain(out, "w0!s")
    assert "ClusterQueue q (StrictFIFO, priority 0): position 2 of 2 pending" in text
    assert ("w0-h  behind head  waited behind the head w0-h (StrictFIFO: a head that cannot be admitted "
            "keeps its place and blocks its ClusterQueue): couldn't assign flavors to pod set main: "
            "insufficient unused quota for cpu in flavor f, 1 more needed") in text  # fmt: skip
    h, s = lines(out, "w0-h"), lines(out, "w0-s")
    assert h[1]["outcome"] == "PreemptionNoCandidates" and h[1]["blocks"] == 1 and h[1]["requeued"] == "heap"
    assert h[-1]["outcome"] == "Admitted" and s[-1]["outcome"] == "Admitted"
    assert 100.0 < h[-1]["time"] == s[-1]["time"] < 101.0
    assert [x["event"] for x in s] == ["submitted", "attempt"]  # never a head before h was admitted
    # h failed again when late arrived: one line, the identical attempt counted
    assert [x["event"] for x in h] == ["submitted", "attempt", "repeated", "attempt"]
    assert h[2]["count"] == 1 and 5.0 < h[2]["time"] < 6.0
    assert "stays the head (StrictFIFO), blocking the 1 workload(s) behind it" in explain(out, "w0!h")
    assert "1 more attempt(s) with the same outcome" in explain(out, "w0!h")


def test_preemption_names_the_victims_and_the_victim_is_told_who_preempted_it(tmp_path):
    # quota 4, withinClusterQueue LowerPriority: low holds 4 for 1000 s; hot (priority 100) at t=10
    # needs 4: Kueue evicts low for it; low's job is resubmitted and readmitted when hot is done
    docs = [flavor("f"), wpc("urgent", 100), lq("q", "q"),
            cq("q", {"f": {"cpu": 4}}, preemption={"withinClusterQueue": "LowerPriority"})]  # fmt: skip
    jobs = [{"id": "low", "subtime": 0, "res": 1, "profile": "long", "queue": "q"},
            {"id": "hot", "subtime": 10, "res": 1, "profile": "short", "queue": "q",
             "priority_class": "urgent"}]  # fmt: skip
    out = run(tmp_path, docs, jobs, {"long": delay(1000, "4"), "short": delay(50, "4")})
    hot = explain(out, "w0!hot")
    assert ("couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor f, 4 more "
            "needed. Pending the preemption of 1 workload(s)") in hot  # fmt: skip
    assert "victims: w0-low (ClusterQueue q, InClusterQueue)" in hot
    assert "submitted to LocalQueue q → ClusterQueue q (BestEffortFIFO, priority 100)" in hot
    low = explain(out, "w0!low")
    assert ("Preempted to accommodate a workload (w0-hot) due to prioritization in the ClusterQueue; "
            "preemptor path: /q; preemptee path: /q") in low  # fmt: skip
    assert "its job was killed and resubmitted as w0!low#r1" in low
    assert "w0-low-r1" in low  # the story goes on with the resubmitted job's workload
    r1 = lines(out, "w0-low-r1")
    assert r1[-1]["outcome"] == "Admitted" and 60.0 < r1[-1]["time"] < 61.0  # once hot is done at ~60 s
    # Kueue v0.17.0 queues an evicted plain pod's Workload again until its pod is gone: one more attempt,
    # with nothing it may preempt
    low_lines = lines(out, "w0-low")
    assert [x["event"] for x in low_lines] == ["submitted", "attempt", "evicted", "attempt"]
    assert low_lines[-1]["outcome"] == "PreemptionNoCandidates"


def test_borrowing_from_the_cohort_is_told_with_the_quota_it_borrowed(tmp_path):
    # a and b in cohort co, 2 cpu each, a may borrow 1: a job asking 3 in a fits only by borrowing 1 of
    # b's (level 1); a may use 2 + 1 = 3 of the cohort's 4
    a = cq("a", {"f": {"cpu": {"nominalQuota": 2, "borrowingLimit": 1}}}, "co")
    docs = [flavor("f"), cohort("co"), a, cq("b", {"f": {"cpu": 2}}, "co"), lq("a", "a"), lq("b", "b")]
    jobs = [{"id": "big", "subtime": 0, "res": 1, "profile": "three", "queue": "a"}]
    out = run(tmp_path, docs, jobs, {"three": delay(10, "3")})
    text = explain(out, "w0!big")
    assert ("Quota reserved in ClusterQueue a, wait time since queued was 0s; Flavors considered: main: "
            "f(Fit;borrow=1)") in text  # fmt: skip
    assert "flavor f for cpu, borrowing (level 1)" in text
    assert ("borrowed: cpu in flavor f: requested 3, nominal 2, in use 0, available 3 (borrowing limit 1, "
            "cohort co has 4 left)") in text  # fmt: skip


def test_without_the_twins_record_explain_tells_what_pods_csv_and_queues_csv_keep(tmp_path):
    # what a real-Kueue run leaves (no admissions.jsonl, no decisions.jsonl): same case as the first test
    docs = [flavor("f"), cq("q", {"f": {"cpu": 4}}), lq("q", "q")]
    jobs = [{"id": "a", "subtime": 0, "res": 1, "profile": "three", "queue": "q"},
            {"id": "b", "subtime": 1, "res": 1, "profile": "two", "queue": "q"}]  # fmt: skip
    out = run(tmp_path, docs, jobs, {"three": delay(100, "3"), "two": delay(10, "2")})
    (out / "admissions.jsonl").unlink()
    (out / "decisions.jsonl").unlink()
    text = explain(out, "w0!b")
    assert "admission by Kueue (pods.csv, queues.csv)" in text
    assert "ClusterQueue q then: cpu in flavor f: 3.0 of nominal 4.0 in use (borrowed 0.0), 1 pending" in text
    assert "admitted to ClusterQueue q, flavor f, after a quota wait of 99.0" in text
    assert "no scheduling attempt recorded" in text
    as_json = json.loads(explain(out, "w0!b", "--json"))
    assert [st["event"] for st in as_json["admission"]] == ["submitted", "admitted"]
