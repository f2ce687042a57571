"""`--no-request`: what a job without a cpu field asks for (adapter/norequest.py), said in the log and
summary.json; exclusive by default, as Batsim gives a job its host."""

from __future__ import annotations

import csv
import json
import logging
from pathlib import Path

import pytest
from click.testing import CliRunner
from kubernetes import client

from batkube_py.adapter import podshape
from batkube_py.adapter.norequest import NoRequest
from batkube_py.cli.app import main
from batkube_py.inputs.platforms import cluster_platform


def _run(tmp_path: Path, jobs: list[dict], profile: dict, *extra: str) -> tuple[dict, list[dict]]:
    (tmp_path / "p.xml").write_text(cluster_platform(4, "1"))
    doc = {"nb_res": 4, "jobs": jobs, "profiles": {"d": {"type": "delay", "delay": 10, **profile}}}
    (tmp_path / "w.json").write_text(json.dumps(doc))
    out = tmp_path / "o"
    args = ["run", "-p", tmp_path / "p.xml", "-w", tmp_path / "w.json", "-o", out, "--batsim", "double",
            "--no-progress", *extra]  # fmt: skip
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    with open(out / "pods.csv") as f:
        pods = list(csv.DictReader(f))
    return json.loads((out / "summary.json").read_text()), pods


JOBS = [{"id": str(i), "subtime": 0, "res": 1, "profile": "d"} for i in range(20)]


def test_by_default_a_job_without_cpu_holds_its_node(tmp_path: Path) -> None:
    """20 jobs of 10 s on 4 one-core nodes: 5 waves, as Batsim would run them; never 20 at once."""
    s, pods = _run(tmp_path, JOBS, {})
    assert (s["no_request"], s["no_request_jobs"], s["no_request_cpu"]) == ("exclusive", 20, "1")
    starts = sorted(float(p["start_time"]) for p in pods)
    assert [round(t / 10) for t in starts] == [w for w in range(5) for _ in range(4)]
    assert {p["cpu_request"] for p in pods} == {"1.0"} and s["over_allocations"] == 0
    log = (tmp_path / "o" / "batkube.log").read_text()
    assert "--no-request exclusive: 20 job(s) without a cpu request; each requested 1 cpu" in log


def test_besteffort_is_kubernetes_meaning(tmp_path: Path) -> None:
    s, pods = _run(tmp_path, JOBS, {}, "--no-request", "besteffort")
    assert (s["no_request"], s["no_request_jobs"], s["no_request_cpu"]) == ("besteffort", 20, None)
    assert max(float(p["start_time"]) for p in pods) < 1  # all at once: BestEffort fits any node
    assert "each a BestEffort pod" in (tmp_path / "o" / "batkube.log").read_text()


def test_jobs_that_ask_for_cpu_are_left_as_they_are(tmp_path: Path) -> None:
    s, pods = _run(tmp_path, JOBS[:8], {"cpu": "0.5"})
    assert s["no_request_jobs"] == 0 and {p["cpu_request"] for p in pods} == {"0.5"}
    assert max(float(p["start_time"]) for p in pods) < 1  # two per node


def _node(name: str, cpu: str) -> client.V1Node:
    status = client.V1NodeStatus(allocatable={"cpu": cpu})
    return client.V1Node(metadata=client.V1ObjectMeta(name=name), status=status)


def test_on_nodes_of_different_sizes_the_smallest_is_asked_and_said(caplog) -> None:
    policy = NoRequest()
    with caplog.at_level(logging.WARNING, logger="batkube_py.adapter.norequest"):
        policy.configure([_node("a", "4"), _node("b", "2"), _node("c", "4")])
    assert policy.cpu == "2" and "nodes differ in cpu (2 to 4)" in caplog.text
    shape = podshape.pod_shape("w0!1", {"id": "1", "res": 1, "profile": "d"}, {"type": "delay", "delay": 1})
    assert not isinstance(shape, podshape.Rejection)
    held = policy.apply(shape)
    assert held.cpu == 2.0 and shape.cpu == 0.0 and policy.apply(shape) is held  # one shape per shape


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="exclusive, besteffort"):
        NoRequest("sometimes")  # type: ignore[arg-type]
