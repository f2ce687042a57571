"""The parity suite: the real kube-scheduler of the release whose semantics the twin follows, against
the twin: on this branch 1.32.6 paced by the twin's queue (TWIN_KUBE); and kube-scheduler 1.37.2 running
its own queue on the simulated clock, with `parallelism: 1` on both sides, where every case outside
PREEMPTION_TIES must give the same pods.csv (zoned platforms included: the racks cases).

Each case (parity_cases.py: resources, scoring strategies, taints, node selectors and affinity, topology
spread, inter-pod affinity and anti-affinity, extended resources, priorities and preemption, node
failures, two profiles, spaced arrivals, memory) runs on both backends with the same seed. Every real
binding must be in the twin's best-score set on the same state (no placement row in parity.csv), no pod
may be lost, and where no binding met a score tie and both queues tried the same pods at the same times
the two schedules must be identical, job by job. Timing rows (one queue tried a pod at a time, the other
did not) are counted apart; under 1.37.2's own queue there must be none.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from apiserver_support import DOUBLE, run_cli, start
from click.testing import CliRunner
from parity_cases import cases

from batkube_py.cli.app import main

CASES = {c.name: c for c in cases()}
TWIN_KUBE = "v1.32.6"  # the release the paced suite runs; the twin follows it (--kube-version 1.32)
TWIN_OF = {"v1.32.6": "1.32", "v1.37.2": "1.37"}  # control-plane release → the twin that follows it


@pytest.fixture(scope="module")
def controlplane(tmp_path_factory):
    cp = start(tmp_path_factory.mktemp("cp"), version=TWIN_KUBE)
    yield cp
    cp.down(remove=True)


# With `parallelism: 1` kube-scheduler 1.37 filters nodes in the rotation from nextStartNodeIndex and
# breaks score ties at the root of a Go heap over that order: deterministic, so every job must get the
# same node and start time on both backends, ties included (scheduler/ties.py)
SERIAL = "parallelism: 1\n"
# under 1.37.2 every case must give the same pods.csv on both backends, job by job, except where a
# preemption finds equally good candidates: upstream's dry run starts at rand.Int31n(n)
PREEMPTION_TIES = {"priorities-preemption"}
PLAIN = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


@pytest.fixture(scope="module")
def controlplane_137(tmp_path_factory):
    d = tmp_path_factory.mktemp("cp137")
    (d / "serial.yaml").write_text(PLAIN + SERIAL)
    cp = start(d, d / "serial.yaml", version="v1.37.2")
    yield cp
    cp.down(remove=True)


def _schedule(out: Path) -> dict[str, tuple[str, str, str]]:
    with open(out / "pods.csv") as f:
        return {r["job_id"]: (r["node"], r["start_time"], r["state"]) for r in csv.DictReader(f)}


def test_cases_cover_the_suite():
    assert len(CASES) >= 12


@pytest.mark.parametrize("name", sorted(CASES))
def test_real_scheduler_agrees_with_the_twin(controlplane, tmp_path: Path, name: str, monkeypatch):
    _agrees(controlplane, tmp_path, name, monkeypatch, TWIN_KUBE)


@pytest.mark.parametrize("name", sorted(CASES))
def test_kube_scheduler_137_own_queue_agrees_with_the_twin(controlplane_137, tmp_path, name, monkeypatch):
    _agrees(controlplane_137, tmp_path, name, monkeypatch, "v1.37.2")


def _agrees(controlplane, tmp_path: Path, name: str, monkeypatch, version: str) -> None:
    monkeypatch.setenv("BATKUBE_KUBE_VERSION", version)  # a private control plane of the same release
    platform, workload, config, events = CASES[name].write(tmp_path / "in")
    shared_cp = config is None
    if version != TWIN_KUBE:  # both backends serial: the same node for every job, ties included
        config = config or tmp_path / "in" / "sched.yaml"
        config.write_text((CASES[name].config or PLAIN) + SERIAL)
    extra = [*(["--scheduler-config", str(config)] if config else []),
             *([f"--batsim-arg=--events={events}"] if events else [])]  # fmt: skip
    # a case with its own KubeSchedulerConfiguration gets a private control plane that runs it
    real_args = [*extra, "--controlplane-dir", str(controlplane.dir)] if shared_cp else extra
    code, output, real = run_cli(tmp_path / "real", workload, *real_args, platform=platform)
    assert code == 0, output
    policy = "paced" if version == "v1.32.6" else "queue"
    assert (real["kubernetes_version"], real["sync_policy"]) == (version, policy)
    twin_args = ["run", "-p", str(platform), "-w", str(workload), "-o", str(tmp_path / "twin"),
                 "--batsim", str(DOUBLE), "--no-progress", "--kube-version", TWIN_OF[version],
                 *extra]  # fmt: skip
    result = CliRunner().invoke(main, twin_args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    twin = json.loads((tmp_path / "twin" / "summary.json").read_text())

    rows = list(csv.DictReader((tmp_path / "real" / "parity.csv").open()))
    mismatches = [r for r in rows if "queue tried it" not in r["kind"]]
    assert mismatches == [], mismatches
    timing = real.get("parity_timing_mismatches", 0)
    assert len(rows) - len(mismatches) == timing
    assert real["parity_bindings_checked"] >= real["jobs_total"] - real["jobs_rejected"] > 0
    assert real["over_allocations"] == twin["over_allocations"] == 0
    assert real["jobs_rejected"] == twin["jobs_rejected"]  # no pod given up on a stale mark
    assert (real["gated_pods"], real["gates_lifted"]) == (twin["gated_pods"], twin["gates_lifted"])
    for s in (real, twin):
        assert s["jobs_unfinished"] == 0 and s["error"] is None
    if version != TWIN_KUBE:  # its own queue: the same pods tried at the same instants, each judged
        assert timing == 0
        assert real["parity_bindings_checked"] + real["parity_failures_checked"] == real["real_attempts"]
    real_jobs, twin_jobs = _schedule(tmp_path / "real"), _schedule(tmp_path / "twin")
    same = real_jobs == twin_jobs
    exact = real["parity_ties"] == 0 and timing == 0
    if version != TWIN_KUBE:  # parallelism 1: score ties are deterministic (node tree order, heap root)
        exact = name not in PREEMPTION_TIES
        if not exact and not same:
            pytest.xfail("a preemption tie went another way: upstream draws its dry-run offset at random "
                         "(the twin's draw is seeded); every other choice agreed")  # fmt: skip
    if exact:
        assert same, {j: (r, twin_jobs.get(j)) for j, r in real_jobs.items() if r != twin_jobs.get(j)}
        assert (real["makespan"], real["mean_waiting_time"]) == (twin["makespan"], twin["mean_waiting_time"])


def test_parity_command(controlplane, tmp_path: Path):
    platform, workload, _, _ = CASES["spaced-backoff"].write(tmp_path / "in")
    args = ["parity", "-p", str(platform), "-w", str(workload), "-o", str(tmp_path / "out"),
            "--controlplane-dir", str(controlplane.dir), "--batsim", str(DOUBLE)]  # fmt: skip
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "40 bindings" in result.output and "no mismatch" in result.output


def test_parity_report_lists_mismatches_and_fails(tmp_path: Path, capsys):
    from batkube_py.cli.parity import report
    from batkube_py.cluster.parity import COLUMNS

    path = tmp_path / "parity.csv"
    row = {
        "time": "7.02",
        "pod": "w0-j8",
        "kind": "not in the twin's best-score set",
        "real": "g0-1",
        "twin_best": "g0-2",
        "real_score": "180",
        "best_score": "200",
        "detail": '{"NodeAffinity": [0, 20]}',
    }
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerow(row)
    summary = {"parity_bindings_checked": 3, "parity_failures_checked": 1, "parity_ties": 0,
               "parity_skipped_retries": 2, "makespan": 10.0, "mean_waiting_time": 1.0}  # fmt: skip
    with pytest.raises(SystemExit) as exit_:
        report(summary, path)
    assert exit_.value.code == 1
    out = capsys.readouterr().out
    assert "1 mismatches" in out and "w0-j8" in out and "g0-2" in out


def test_paced_refuses_a_control_plane_running_another_configuration(tmp_path: Path):
    from batkube_py.cluster.sync import SyncOptions
    from batkube_py.controlplane.manager import ControlPlaneError
    from batkube_py.controlplane.session import ApiServerConfig, paced_parts

    mine = tmp_path / "mine.yaml"
    mine.write_text(CASES["two-profiles"].config)
    running = tmp_path / "running.yaml"  # what `controlplane up` wrote for another configuration
    running.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                       "podMaxBackoffSeconds: 1\nleaderElection: {leaderElect: false}\n")  # fmt: skip
    sync = SyncOptions(policy="paced", metrics_url="https://127.0.0.1:1/metrics")
    names = {"default-scheduler", "packer"}
    with pytest.raises(ControlPlaneError, match="batkube controlplane up --scheduler-config"):
        paced_parts(ApiServerConfig(scheduler_config=mine), running, names, names, sync)
    # the same profiles, whatever the connection, leader election and wall-clock backoff: accepted
    running.write_text(
        CASES["two-profiles"].config + "podMaxBackoffSeconds: 1\nleaderElection: {leaderElect: false}\n"
    )
    profiles, queue = paced_parts(ApiServerConfig(scheduler_config=mine), running, names, names, sync)
    assert {p.scheduler_name for p in profiles} == names and queue.pod_max_backoff == 10
    # under its own queue (on the simulated clock) the real scheduler's backoff is the run's: the twin
    # checking it backs off as it does
    sync = SyncOptions(policy="queue", metrics_url="https://127.0.0.1:1/metrics")
    _, queue = paced_parts(ApiServerConfig(scheduler_config=mine), running, names, names, sync)
    assert (queue.pod_initial_backoff, queue.pod_max_backoff) == (1, 1)
