"""`batkube explain RUN POD` on real small runs (the packaged Batsim double), and the record's `filters`."""

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from batkube_py.adapter import podshape, translate
from batkube_py.cli.app import main
from batkube_py.cluster.embedded import EmbeddedCluster
from batkube_py.protocol.models import Resource
from batkube_py.scheduler.record import DecisionRecorder

ROOT = Path(__file__).resolve().parents[1]


def _run(out: Path, platform: Path, workload: Path, *extra: str) -> None:
    args = ["run", "-p", str(platform), "-w", str(workload), "-o", str(out), "--batsim", "double", *extra]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory) -> Path:
    """3 nodes × 2 cpu; two 1-cpu jobs share a node, a 2-cpu job fits one node only, one job requires pod
    affinity to pods that never exist (unschedulable, then rejected by the adapter), one selects a zone no
    node has (refused at submission), and a third wave waits for room."""
    root = tmp_path_factory.mktemp("mixed")
    runner = CliRunner()
    platform = root / "p.xml"
    assert (
        runner.invoke(main, ["platform", "-n", "3", "-c", "2", "-m", "4Gi", "-o", str(platform)]).exit_code
        == 0
    )
    profiles = {
        "small": {"type": "delay", "delay": 50, "cpu": "1"},
        "big": {"type": "delay", "delay": 50, "cpu": "2", "memory": "3Gi"},
        "lost": {"type": "delay", "delay": 50, "cpu": "1", "affinity": {"podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "none"}}, "topologyKey": "kubernetes.io/hostname"}
            ]}}},
        "nowhere": {"type": "delay", "delay": 50, "cpu": "1", "nodeSelector": {"zone": "nowhere"}},
    }  # fmt: skip
    kinds = ["small", "small", "big", "lost", "small", "big", "big", "nowhere"]
    jobs = [
        {"id": str(i), "subtime": 0, "res": 1, "profile": k, "walltime": 1000} for i, k in enumerate(kinds, 1)
    ]
    workload = root / "w.json"
    workload.write_text(json.dumps({"nb_res": 3, "jobs": jobs, "profiles": profiles}))
    _run(root / "run", platform, workload, "--record-decisions")
    return root / "run"


def explain(*args: str):
    return CliRunner().invoke(main, ["explain", *map(str, args)])


def test_bound_pod_shows_attempts_rejections_scores_and_choice(mixed_run: Path) -> None:
    result = explain(mixed_run, "w0-3")  # the 2-cpu job: only the node nobody took fits
    assert result.exit_code == 0, result.output
    out = result.output
    assert "bound to node-" in out and "at its first attempt" in out
    assert "NodeResourcesFit" in out and "Insufficient cpu" in out
    assert "chosen: node-" in out
    assert "\x1b[" not in out  # not a terminal: plain text


def test_waiting_pod_names_the_attempt_that_failed(mixed_run: Path) -> None:
    data = json.loads(explain(mixed_run, "w0!7", "--json").output)
    results = [a["result"] for a in data["attempts"]]
    assert results[0] == "unschedulable" and results[-1] == "bound" and len(results) >= 2
    first = data["attempts"][0]
    assert first["filters"]["NodeResourcesFit"]["Insufficient cpu"][0] == first["reasons"]["Insufficient cpu"]
    text = explain(mixed_run, "w0!7").output
    assert "why it waited" in text and f"after {len(results) - 1} unschedulable attempt(s)" in text


def test_unschedulable_pod_says_why(mixed_run: Path) -> None:
    result = explain(mixed_run, "4")  # the short job id works when one workload has it
    assert result.exit_code == 0, result.output
    assert "unschedulable at its last attempt" in result.output
    assert "why it was not scheduled" in result.output
    line = next(x for x in result.output.splitlines() if x.startswith("InterPodAffinity"))
    assert "didn't match pod affinity rules" in line and " 3 " in line
    assert "node-0, node-1, node-2" in line


def test_a_pod_refused_at_submission_says_why_without_attempts(mixed_run: Path) -> None:
    result = explain(mixed_run, "8")
    assert result.exit_code == 0, result.output
    assert "no scheduling attempt recorded" in result.output
    assert "its nodeSelector zone=nowhere matches no node" in result.output


def test_json_is_the_whole_record(mixed_run: Path) -> None:
    data = json.loads(explain(mixed_run, "w0-1", "--json").output)
    assert data["pod"] == "w0-1" and data["job_id"] == "w0!1" and data["final"]["state"] == "Succeeded"
    assert data["attempts"][0]["top"][0]["plugins"]["NodeResourcesFit"]["weight"] == 1


def test_unknown_pod_and_missing_record_are_one_line_errors(mixed_run: Path, tmp_path: Path) -> None:
    result = explain(mixed_run, "w0-99")
    assert result.exit_code == 1 and "no pod or job 'w0-99'" in result.output
    assert len(result.output.strip().splitlines()) == 1
    _run(
        tmp_path / "plain",
        ROOT / "platforms" / "cluster_1x6core.xml",
        ROOT / "workloads" / "spaced_200_delay170.json",
    )
    result = explain(tmp_path / "plain", "w0-1")
    assert result.exit_code == 1 and "--record-decisions" in result.output
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output


def test_record_filters_add_up_to_the_cycles_reasons(tmp_path: Path) -> None:
    """On 240 varied nodes (the cycle examines only part of them once enough fit) every record's
    plugin → reason counts equal the cycle's own per-reason counts, and name only rejected nodes."""
    rng = np.random.default_rng(5)
    specs = []
    for i in range(240):
        props = {"cpu": str(int(rng.choice([2, 4]))), "memory": "8Gi", "pods": "6", "zone": f"z{i % 3}"}
        if i % 11 == 0:
            props["taints"] = "dedicated=gpu:NoSchedule"
        specs.append(props)
    nodes = [
        translate.node_from_resource(
            Resource(id=i, name=f"n{i}", state="idle", properties=p, zone_properties={})
        )
        for i, p in enumerate(specs)
    ]
    cluster = EmbeddedCluster(nodes, seed=1, recorder=DecisionRecorder(tmp_path / "d.jsonl"))
    for step in range(300):
        profile = {"type": "delay", "delay": 1, "cpu": str(rng.choice(["1", "2", "3"]))}
        if step % 7 == 0:
            profile["nodeSelector"] = {"zone": f"z{step % 3}"}
        pod = podshape.pod_from_job(f"j{step}", {"res": 1, "profile": "p"}, profile, f"j{step}")
        cluster.add_pod(pod, f"j{step}", float(step))
        cluster.schedule(float(step))
    cluster.close()
    lines = [json.loads(x) for x in (tmp_path / "d.jsonl").read_text().splitlines()]
    with_reasons = [x for x in lines if x["reasons"]]
    assert any(x["evaluated"] < 240 for x in with_reasons)  # the partial-examination path is covered
    assert any(x["result"] == "unschedulable" for x in with_reasons)
    for x in with_reasons:
        summed: dict[str, int] = {}
        for reasons in x["filters"].values():
            for reason, (count, names) in reasons.items():
                summed[reason] = summed.get(reason, 0) + count
                assert 0 < len(names) <= min(count, 3) and x["node"] not in names
        assert summed == x["reasons"] and sorted(x["filters"]) == x["rejected_by"]


@pytest.mark.parametrize(
    "extra, says",
    [
        ((), "order drawn from the seed (kube-scheduler 1.37, parallelism > 1)"),
        (("--scheduler-config", "SERIAL"), "with no seed (kube-scheduler 1.37, parallelism 1)"),
        (("--kube-version", "1.32"), "drawn uniformly from the seed (kube-scheduler 1.32)"),
    ],
)
def test_the_choice_among_tied_nodes_names_what_the_seed_did(tmp_path: Path, extra, says) -> None:
    """One job on four empty, equal nodes: all tie, and the last line says how this run broke the tie."""
    platform, workload = tmp_path / "p.xml", tmp_path / "w.json"
    assert CliRunner().invoke(main, ["platform", "-n", "4", "-c", "2", "-o", str(platform)]).exit_code == 0
    profiles = {"one": {"type": "delay", "delay": 5, "cpu": "1"}}
    jobs = [{"id": "1", "subtime": 0, "res": 1, "profile": "one"}]
    workload.write_text(json.dumps({"nb_res": 4, "profiles": profiles, "jobs": jobs}))
    serial = tmp_path / "serial.yaml"
    serial.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nparallelism: 1\n"
    )
    _run(
        tmp_path / "run",
        platform,
        workload,
        "--record-decisions",
        *(str(serial) if e == "SERIAL" else e for e in extra),
    )
    result = explain(tmp_path / "run", "w0-1")
    assert result.exit_code == 0, result.output
    last = " ".join(result.output.split()).rpartition("chosen: ")[2]
    assert "tied with the best total" in last or "ties broken" in last
    assert says in last, result.output
