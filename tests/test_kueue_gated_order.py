"""A job with `gatedUntil` behind Kueue (issue 35): batkube's gate, Kueue's admission and topology gates
and batkube's release gate on one pod, each lifted by its owner alone. Real Kueue v0.17.0 + kube-
scheduler 1.37.2 against the Kueue twin + the twin of kube-scheduler 1.37, on the Batsim 4.2.1 double,
`parallelism: 1` on both sides; expectations by hand.

Lifting one gate of several is a Pod/Update to kube-scheduler (PriorityQueue.Update: the pod's PodInfo
updated in place among the gated pods, its queue timestamp kept), so a pod keeps its creation time as
its place in activeQ however many of its gates went before the last.
"""

from __future__ import annotations

import csv
from pathlib import Path

from apiserver_support import DOUBLE
from click.testing import CliRunner
from kueue_support import cq, flavor, lq, write
from parity_cases import Case
from test_kueue_real_gangs import (
    ONE_CORE,
    SERIAL,
    _job,
    at,
    jobs,
    kueue,  # noqa: F401 (a fixture)
    run_both,
)

from batkube_py.cli.app import main

QUEUES = [flavor("f"), cq("cq", {"f": {"cpu": 2}}), lq("q", "cq")]
CASES = {
    # 2 cores of quota on 4 one-core nodes: a0 and a1 hold it until 50; b (submitted at 0, gated until
    # 30) and c (submitted at 5) are both admitted at 50
    "gate-lifted-before-admission": (
        Case(
            "gate-lifted-before-admission",
            [(4, ONE_CORE)],
            [
                _job("a0", 0, delay=50, queue="q"),
                _job("a1", 0, delay=50, queue="q"),
                _job("b", 0, queue="q", gatedUntil=30),
                _job("c", 5, queue="q"),
            ],
        ),  # fmt: skip
        QUEUES,
    ),
    # quota for both at 0: b is admitted at once, its own gate holds it until 30
    "admitted-before-gate-lifted": (
        Case(
            "admitted-before-gate-lifted",
            [(4, ONE_CORE)],
            [_job("b", 0, queue="q", gatedUntil=30), _job("c", 0, queue="q")],
        ),  # fmt: skip
        QUEUES,
    ),
}


def reasons(out: Path) -> dict[str, str]:
    with (out / "pods.csv").open() as f:
        return {r["job_id"].split("!", 1)[1]: r["reason"] for r in csv.DictReader(f)}


def check_lifted_before_admission(j: dict) -> None:
    """b and c admitted and placed at 50 (a0, a1 end); b is first in activeQ (created at 0, c at 5), so
    it takes the node the first pod of a step on empty nodes takes, as a0 did at 0."""
    b, c = j["b"], j["c"]
    assert 50 < at(b) < 51 and at(b) == at(c) == at(b, "start_time") == at(c, "start_time")
    assert (b["nodes"], c["nodes"]) == (j["a0"]["nodes"], j["a1"]["nodes"])


def test_a_gate_lifted_while_kueue_holds_the_pod_keeps_its_place(kueue, tmp_path):  # noqa: F811
    real, _, twin, _ = run_both(tmp_path, "gate-lifted-before-admission", CASES)
    assert real == twin
    check_lifted_before_admission(real)
    assert not any(reasons(tmp_path / "real").values())  # Kueue stopped nothing (no restart)


def test_kueue_admission_leaves_the_pods_own_gate(kueue, tmp_path):  # noqa: F811
    real, summary, twin, _ = run_both(tmp_path, "admitted-before-gate-lifted", CASES)
    assert real == twin
    b, c = real["b"], real["c"]
    assert at(b) < 1 and at(c) < 1 and at(c, "start_time") == at(c)
    assert 30 <= at(b, "start_time") < 31 and summary["gates_lifted"] == 1


def test_twins_place_the_pod_gated_first_by_its_creation(tmp_path):
    case, docs = CASES["gate-lifted-before-admission"]
    platform, workload, _, _ = case.write(tmp_path / "in")
    serial = tmp_path / "in" / "serial.yaml"
    serial.write_text(SERIAL)
    args = ["run", "-p", str(platform), "-w", str(workload), "--batsim", str(DOUBLE), "--no-progress",
            "--queues", str(write(tmp_path / "in", docs)), "--kube-version", "1.37",
            "--scheduler-config", str(serial), "-o", str(tmp_path / "out")]  # fmt: skip
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    check_lifted_before_admission(jobs(tmp_path / "out"))
