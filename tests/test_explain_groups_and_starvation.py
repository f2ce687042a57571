"""`batkube explain` on a pod group names the group, its pods and every node it holds (asked by the job,
the group or one member); on a pod overtaken by newer ones it says why they went first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from batkube_py.cli.app import main
from batkube_py.inputs import platforms, workloads


def _run(root: Path, nodes: int, cores: str, doc: dict) -> Path:
    (root / "p.xml").write_text(platforms.cluster_platform(nodes, cores, "4Gi"))
    (root / "w.json").write_text(json.dumps(doc))
    args = ["run", "-p", str(root / "p.xml"), "-w", str(root / "w.json"), "-o", str(root / "run"),
            "--batsim", "double", "--record-decisions", "--no-progress"]  # fmt: skip
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    return root / "run"


def explain(run: Path, pod: str) -> str:
    r = CliRunner().invoke(main, ["explain", str(run), pod], terminal_width=200)
    assert r.exit_code == 0, r.output
    return r.output


@pytest.fixture(scope="module")
def gang_run(tmp_path_factory) -> Path:
    return _run(tmp_path_factory.mktemp("gang"), 8, "4", workloads.delay_jobs(6, 100, 0, cpu="2", pods=4))


@pytest.mark.parametrize("query", ["w0!5", "w0-5", "w0-5-2"])
def test_a_group_is_named_with_its_pods_and_all_its_nodes(gang_run: Path, query: str) -> None:
    out = explain(gang_run, query)
    head, _, state = out.splitlines()[:3]
    assert head.startswith("pod group w0-5  (job w0!5, 4 pods: w0-5-0 w0-5-1 w0-5-2 w0-5-3;")
    lines = (gang_run / "pods.csv").read_text().splitlines()
    rows = [line.split(",") for line in lines if line.startswith("w0!5,")]
    nodes = list(dict.fromkeys(r[2] for r in rows))
    assert len(rows) == 4 and len(nodes) >= 1
    assert state.startswith(f"pods.csv: Succeeded on {' '.join(nodes)}, bind ")


def test_a_starved_pod_says_why_newer_pods_went_first(tmp_path: Path) -> None:
    """2 nodes x 4 cpu kept busy by 1-cpu pods arriving every 6 s: a 4-cpu pod waits for a whole free
    node while every newer small pod fits the one cpu a completion frees."""
    jobs = [{"id": f"s{i}", "subtime": i * 5, "res": 1, "profile": "small"} for i in range(8)]
    jobs.append({"id": "big", "subtime": 36, "res": 1, "profile": "big"})
    jobs += [{"id": f"n{i}", "subtime": 40 + 6 * i, "res": 1, "profile": "small"} for i in range(40)]
    profiles = {"small": {"type": "delay", "delay": 100, "cpu": "1"},
                "big": {"type": "delay", "delay": 50, "cpu": "4"}}  # fmt: skip
    run = _run(tmp_path, 2, "4", {"nb_res": 1, "jobs": jobs, "profiles": profiles})
    out = explain(run, "w0!big")
    text = " ".join(out.split())
    assert "why newer pods went first" in out
    assert "40 pod(s) submitted after it were bound while it waited (first: w0-n0," in text
    assert ("40 ask for less (cpu down to 1, it asks 4): they fit room freed on a node, which was too little "
            "for it (Insufficient cpu at its") in text  # fmt: skip
    # a pod nobody overtook says nothing of the kind
    assert "why newer pods went first" not in explain(run, "w0!s0")
