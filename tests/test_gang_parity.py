"""Gang parity: pod groups scheduled by kube-scheduler 1.37.2 (GenericWorkload on, its own queue on the
simulated clock, `--sync queue`) against the twin's group cycle, on the cases of parity_cases.gang_cases
(groups mixed with single pods, a group that fits only after completions, one that never fits, a
topology constraint, preemption by and of groups, node failures under running groups).

Every real group cycle is judged (parity.csv): the group placed or not by both, each member's node among
the twin's best on the state the real cycle had when it tried that member. That must always agree, no job
may be lost, and the same jobs must be rejected. Exact agreement (the same pods tried at the same times,
hence the same schedule job by job) holds for the cases in EXACT; in gang-preemption a preemption tie may
go another way (random upstream).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from apiserver_support import DOUBLE, run_cli, start
from click.testing import CliRunner
from parity_cases import GANG_CONFIG, gang_cases

from batkube_py.cli.app import main

CASES = {c.name: c for c in gang_cases()}
# measured 2026-11-25/26 (Batsim double, kube-scheduler 1.37.2 own queue, twin 1.37, upstream's backoff):
# no timing row, the same node and start time for every pod, in every run (8-9 runs each for the last
# three, since groups failed in one step keep their try order on both sides: before, equal queue
# timestamps left their order to a Go map and shifted some starts by one message exchange). Not exact:
# gang-preemption (no timing row, but preemption ties: upstream's dry run starts at a random offset, the
# twin's at a seeded one, so a victim node may differ).
EXACT = {
    "gang-after-completions",
    "gang-never-fits",
    "gang-quorum-late",
    "gang-mixed",
    "gang-node-failures",
    "gang-topology",
}
_RUNS: dict[str, tuple[dict, dict, list[dict], Path]] = {}


@pytest.fixture(scope="module")
def controlplane_gangs(tmp_path_factory):
    d = tmp_path_factory.mktemp("cpgang")
    (d / "gang.yaml").write_text(GANG_CONFIG)
    cp = start(d, d / "gang.yaml", version="v1.37.2")
    yield cp
    cp.down(remove=True)


def _run(cp, tmp_path_factory, name: str, monkeypatch) -> tuple[dict, dict, list[dict], Path]:
    """Both backends on the case, once per session (two tests read each run)."""
    if name in _RUNS:
        return _RUNS[name]
    monkeypatch.setenv("BATKUBE_KUBE_VERSION", "v1.37.2")
    out = tmp_path_factory.mktemp(name)
    platform, workload, config, events = CASES[name].write(out / "in")
    extra = ["--scheduler-config", str(config), *([f"--batsim-arg=--events={events}"] if events else [])]
    code, output, real = run_cli(out / "real", workload, *extra, "--controlplane-dir", str(cp.dir),
                                 platform=platform)  # fmt: skip
    assert code == 0, output
    assert (real["kubernetes_version"], real["sync_policy"]) == ("v1.37.2", "queue")
    twin_args = ["run", "-p", str(platform), "-w", str(workload), "-o", str(out / "twin"), "--batsim",
                 str(DOUBLE), "--no-progress", "--kube-version", "1.37", *extra]  # fmt: skip
    result = CliRunner().invoke(main, twin_args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    twin = json.loads((out / "twin" / "summary.json").read_text())
    rows = list(csv.DictReader((out / "real" / "parity.csv").open()))
    _RUNS[name] = (real, twin, rows, out)
    return _RUNS[name]


def _schedule(out: Path) -> dict[str, tuple[str, str, str]]:
    with open(out / "pods.csv") as f:
        return {r["pod"]: (r["node"], r["start_time"], r["state"]) for r in csv.DictReader(f)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_real_group_cycle_agrees_with_the_twin(controlplane_gangs, tmp_path_factory, monkeypatch, name):
    real, twin, rows, out = _run(controlplane_gangs, tmp_path_factory, name, monkeypatch)
    placement = [r for r in rows if "queue tried it" not in r["kind"]]
    assert placement == [], placement
    assert len(rows) - len(placement) == real["parity_timing_mismatches"]
    assert real["gang_jobs"] > 0 and real["gang_jobs"] == twin["gang_jobs"]
    with open(out / "real" / "pods.csv") as f:
        bound = sum(1 for r in csv.DictReader(f) if r["bind_time"])
    mirrored = sum(1 for r in rows if r["real"])  # bindings one queue made at another time (timing rows)
    assert real["parity_bindings_checked"] + mirrored >= bound > 0  # every real binding judged or a row
    assert real["over_allocations"] == twin["over_allocations"] == 0
    assert real["jobs_rejected"] == twin["jobs_rejected"]
    assert (real["gated_pods"], real["gates_lifted"]) == (twin["gated_pods"], twin["gates_lifted"])
    for s in (real, twin):
        assert s["jobs_unfinished"] == 0 and s["error"] is None  # no job lost


@pytest.mark.parametrize(
    "name",
    [
        n
        if n in EXACT
        else pytest.param(
            n,
            marks=pytest.mark.xfail(
                reason="preemption ties: upstream's dry run starts at a random offset (see EXACT)",
                strict=False,
            ),
        )  # fmt: skip
        for n in sorted(CASES)
    ],
)
def test_gang_schedules_identical(controlplane_gangs, tmp_path_factory, monkeypatch, name):
    real, twin, _, out = _run(controlplane_gangs, tmp_path_factory, name, monkeypatch)
    assert real["parity_timing_mismatches"] == 0
    assert real["parity_ties"] == 0
    assert _schedule(out / "real") == _schedule(out / "twin")
    assert (real["makespan"], real["mean_waiting_time"]) == (twin["makespan"], twin["mean_waiting_time"])


def test_parity_command_checks_groups(controlplane_gangs, tmp_path: Path, monkeypatch):
    """`batkube parity` on a 1.37.2 control plane runs kube-scheduler's own queue, so gangs run there."""
    monkeypatch.setenv("BATKUBE_KUBE_VERSION", "v1.37.2")
    platform, workload, config, _ = CASES["gang-after-completions"].write(tmp_path / "in")
    args = ["parity", "-p", str(platform), "-w", str(workload), "-o", str(tmp_path / "out"),
            "--scheduler-config", str(config), "--controlplane-dir", str(controlplane_gangs.dir),
            "--batsim", str(DOUBLE)]  # fmt: skip
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "no mismatch" in result.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["sync_policy"] == "queue" and summary["gang_jobs"] == 4 and summary["jobs_rejected"] == 0
