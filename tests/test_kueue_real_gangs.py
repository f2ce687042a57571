"""Gangs (jobs on several hosts) as Kueue pod groups on the real backend: the real Kueue v0.17.0 admits
each group all-or-nothing, the real kube-scheduler 1.37.2 places it with its own gang scheduling, on the
Batsim 4.2.1 double (docs/kueue.md). Each case is checked against a hand-computed expectation and
against the Kueue twin with the twin of kube-scheduler 1.37, job by job: admission instant, LocalQueue,
ClusterQueue, flavor, start and the set of nodes (`parallelism: 1` on both sides, so that score ties go
the same way).

The cases are data (GANG_CASES: a parity_cases.Case and its queues file) for a parity suite to reuse.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from apiserver_support import DOUBLE, require_binaries, require_kueue
from click.testing import CliRunner
from kueue_support import cq, flavor, lq, wpc, write
from parity_cases import Case

from batkube_py.cli.app import main

SERIAL = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nparallelism: 1\n"
ONE_CORE = {"core": "1"}


def _job(id_: str, t: float, res: int = 1, delay: int = 100, **extra) -> dict:
    return {"id": id_, "subtime": t, "res": res, "delay": delay, "cpu": "1", **extra}


# name → (case, the queues file's objects)
GANG_CASES: dict[str, tuple[Case, list[dict]]] = {
    # 4 cores of quota on 6 nodes: two gangs of 3 do not both fit the quota (they would fit the nodes)
    "gangs-in-order": (
        Case("gangs-in-order", [(6, ONE_CORE)], [_job("a", 0, 3, queue="q"), _job("b", 0, 3, queue="q")]),
        [flavor("f"), cq("cq", {"f": {"cpu": 4}}), lq("q", "cq")],
    ),
    # a gang of 4 between two single pods in one queue (submitted at one instant: job id order), under
    # both queueing strategies: BestEffortFIFO admits the single behind the gang that does not fit yet,
    # StrictFIFO holds it behind the gang
    "gang-and-singles": (
        Case("gang-and-singles", [(8, ONE_CORE)], [
            _job("b0", 0, queue="best"), _job("b1", 0, 4, queue="best"), _job("b2", 0, queue="best"),
            _job("s0", 0, queue="strict"), _job("s1", 0, 4, queue="strict"), _job("s2", 0, queue="strict"),
        ]),  # fmt: skip
        [flavor("f"), cq("cq-best", {"f": {"cpu": 4}}),
         cq("cq-strict", {"f": {"cpu": 4}}, queueingStrategy="StrictFIFO"),
         lq("best", "cq-best"), lq("strict", "cq-strict")],  # fmt: skip
    ),
    # a gang holding the whole quota is preempted by an urgent single pod: killed, resubmitted, and
    # admitted again when the urgent pod ends
    "gang-preempted": (
        Case("gang-preempted", [(4, ONE_CORE)],
             [_job("lo", 0, 4, queue="q"), _job("hot", 10, queue="q", priority_class="urgent")]),  # fmt: skip
        [flavor("f"), wpc("urgent", 100),
         cq("cq", {"f": {"cpu": 4}}, preemption={"withinClusterQueue": "LowerPriority"}), lq("q", "cq")],
    ),
    # a gang admitted by Kueue that kube-scheduler cannot place yet (one node free for two pods) is the
    # cheapest victim of an urgent pod: deleted unbound, its quota back at once, then queued again
    "gang-preempted-unbound": (
        Case("gang-preempted-unbound", [(2, ONE_CORE)], [
            _job("a", 0, queue="q", priority_class="mid"), _job("g", 0, 2, queue="q"),
            _job("hot", 10, queue="q", priority_class="urgent"),
        ]),  # fmt: skip
        [flavor("f"), wpc("mid", 50), wpc("urgent", 100),
         cq("cq", {"f": {"cpu": 3}}, preemption={"withinClusterQueue": "LowerPriority"}), lq("q", "cq")],
    ),
}


@pytest.fixture
def kueue(monkeypatch):
    """Kueue and kube-scheduler 1.37.2 built. Each real run gets a private control plane: kube-scheduler's
    node rotation, which decides score ties, then starts where the twin's does."""
    monkeypatch.setenv("BATKUBE_KUBE_VERSION", "v1.37.2")
    require_binaries("v1.37.2")
    require_kueue()


def run_both(tmp: Path, name: str, cases: dict[str, tuple[Case, list[dict]]] = GANG_CASES):
    """The case on the real backend and on the twins: each run's jobs (jobs()) and summary."""
    case, docs = cases[name]
    platform, workload, _, _ = case.write(tmp / "in")
    queues = write(tmp / "in", docs)
    (tmp / "in" / "serial.yaml").write_text(SERIAL)
    common = ["-p", str(platform), "-w", str(workload), "--batsim", str(DOUBLE), "--no-progress",
              "--queues", str(queues), "--scheduler-config", str(tmp / "in" / "serial.yaml")]  # fmt: skip
    out = {}
    for side, extra in (("real", ["--backend", "apiserver", "--private-controlplane"]),
                        ("twin", ["--kube-version", "1.37"])):  # fmt: skip
        result = CliRunner().invoke(main, ["run", *common, "-o", str(tmp / side), *extra],
                                    catch_exceptions=False)  # fmt: skip
        assert result.exit_code == 0, result.output
        summary = json.loads((tmp / side / "summary.json").read_text())
        assert summary["error"] is None and summary["over_allocations"] == 0, summary
        assert summary["jobs_unfinished"] == 0
        out[side] = (jobs(tmp / side), summary)
    real = out["real"][1]
    assert (real["kubernetes_version"], real["kueue_version"]) == ("v1.37.2", "v0.17.0")
    assert real["parity_mismatches"] == 0  # kube-scheduler's twin beside the real one agreed
    return out["real"][0], out["real"][1], out["twin"][0], out["twin"][1]


def jobs(out: Path) -> dict[str, dict]:
    """pods.csv by job ('lo', 'lo#r1'): what Kueue and kube-scheduler decided for it (a gang's rows
    joined: its nodes as a set, the rest shared by its members)."""
    by_job: dict[str, dict] = {}
    with (out / "pods.csv").open() as f:
        for r in csv.DictReader(f):
            j = by_job.setdefault(r["job_id"].split("!", 1)[1], {"nodes": set(), "pods": 0})
            j["pods"] += 1
            if r["node"]:
                j["nodes"].add(r["node"])
            for k in ("admitted_at", "queue", "cluster_queue", "flavor", "start_time", "state"):
                assert j.setdefault(k, r[k]) == r[k], (r["job_id"], k)  # one decision per gang
    return by_job


def at(job: dict, key: str = "admitted_at") -> float:
    return float(job[key])


def test_two_gangs_that_do_not_both_fit_the_quota_are_admitted_in_order(kueue, tmp_path):
    real, summary, twin, _ = run_both(tmp_path, "gangs-in-order")
    assert real == twin
    a, b = real["a"], real["b"]
    assert a["pods"] == b["pods"] == 3 and len(a["nodes"]) == len(b["nodes"]) == 3
    assert at(a) < 1 and at(a) == at(a, "start_time")  # admitted at 0, placed in the same step
    assert 100 < at(b) < 101 and at(b) == at(b, "start_time")  # when a's quota comes back at 100
    assert all((j["queue"], j["cluster_queue"], j["flavor"], j["state"]) == ("q", "cq", "f", "Succeeded")
               for j in real.values())  # fmt: skip
    assert summary["jobs_succeeded"] == 2 and summary["kueue_version"] == "v0.17.0"


def test_a_gang_and_single_pods_share_a_queue(kueue, tmp_path):
    real, summary, twin, _ = run_both(tmp_path, "gang-and-singles")
    assert real == twin
    # BestEffortFIFO: b2 (1 core) is admitted beside b0 while the gang b1 waits for 4 free cores at 100
    assert at(real["b0"]) < 1 and at(real["b2"]) < 1 and 100 < at(real["b1"]) < 101
    # StrictFIFO: s2 waits behind the gang s1, admitted at 100, until the gang ends at 200
    assert at(real["s0"]) < 1 and 100 < at(real["s1"]) < 101 and 200 < at(real["s2"]) < 201
    assert real["b1"]["cluster_queue"] == "cq-best" and real["s1"]["cluster_queue"] == "cq-strict"
    assert all(at(j) == at(j, "start_time") for j in real.values())
    assert len(real["b1"]["nodes"]) == len(real["s1"]["nodes"]) == 4
    assert summary["jobs_succeeded"] == 6


def test_a_preempted_gang_is_killed_and_comes_back(kueue, tmp_path):
    real, summary, twin, _ = run_both(tmp_path, "gang-preempted")
    assert real == twin
    lo, hot, again = real["lo"], real["hot"], real["lo#r1"]
    assert lo["state"] == "Killed" and at(lo) < 1 and len(lo["nodes"]) == 4
    # the gang's quota comes back when Batsim has killed it, at 10: hot is admitted and starts then
    assert 10 < at(hot) < 11 and at(hot) == at(hot, "start_time") and hot["state"] == "Succeeded"
    # the resubmitted gang is a new pod group, admitted when hot ends at 110
    assert 110 < at(again) < 111 and again["state"] == "Succeeded" and len(again["nodes"]) == 4
    assert summary["jobs_preempted"] == 1 and summary["jobs_resubmitted"] == 1
    with (tmp_path / "real" / "pods.csv").open() as f:
        reasons = {r["reason"] for r in csv.DictReader(f) if r["job_id"] == "w0!lo"}
    assert len(reasons) == 1 and "by Kueue" in (why := reasons.pop()) and "UID" not in why


def test_a_gang_preempted_before_it_was_placed_is_queued_again(kueue, tmp_path):
    real, summary, twin, _ = run_both(tmp_path, "gang-preempted-unbound")
    assert real == twin
    a, g, hot = real["a"], real["g"], real["hot"]
    assert at(a) < 1 and a["state"] == "Succeeded"
    # hot takes g's quota at 10, and the node g could not use
    assert 10 < at(hot) < 11 and at(hot) == at(hot, "start_time")
    # g comes back at 10 under its own names, with quota for it at 100 (a ends); kube-scheduler's group
    # cycle then fails for want of a second node and backs off 1, 2, 4, 8 s (flushed on whole seconds):
    # retries at 102, 105, 110 (hot's node is busy until 110.02), and 119, which places it
    assert 100 < at(g) < 101 and 119 < at(g, "start_time") < 120 and g["state"] == "Succeeded"
    assert len(g["nodes"]) == 2 and summary["jobs_preempted"] == 0 and summary["jobs_resubmitted"] == 0
    with (tmp_path / "real" / "pods.csv").open() as f:
        reasons = {r["reason"] for r in csv.DictReader(f) if r["job_id"] == "w0!g"}
    assert len(reasons) == 1 and "by Kueue" in (why := reasons.pop()) and "UID" not in why
