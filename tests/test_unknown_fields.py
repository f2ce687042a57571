"""A misspelt job or profile field (`cpus`, `memroy`) is no longer dropped in silence: `batkube run` warns
on the console, in batkube.log and in summary.json, and `--strict` refuses the workload before anything
starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from batkube_py.adapter import fields
from batkube_py.inputs import workloads

ROOT = Path(__file__).resolve().parents[1]


def _misspelt(tmp_path: Path) -> Path:
    doc = workloads.delay_jobs(6, 10, 0, cpu="1")
    for job in doc["jobs"][:4]:
        job["cpus"] = job.pop("cpu", "1")
    for profile in doc["profiles"].values():
        profile["memroy"] = "1Gi"
    path = tmp_path / "typo.json"
    path.write_text(json.dumps(doc))
    return path


def test_unknown_fields_are_counted_with_the_field_they_resemble(tmp_path: Path) -> None:
    doc = json.loads(_misspelt(tmp_path).read_text())
    doc["profiles"]["ph"] = {"type": "parallel_homogeneous", "cpu": 1e9, "com": 0, "cpu_reqq": "1"}
    doc["profiles"]["odd"] = {"type": "smpi", "trace": "x", "anything": 1}  # rejected for its type anyway
    got = [u.message() for u in fields.unknown_fields(doc)]
    first = doc["jobs"][0]["id"]
    assert got == [
        f"unknown job field 'cpus' (did you mean 'cpu'?) on 4 job(s) (first: job {first})",
        "unknown profile field 'cpu_reqq' (did you mean 'cpu_req'?) on 1 profile(s) (first: profile 'ph')",
        f"unknown profile field 'memroy' (did you mean 'memory'?) on {len(doc['profiles']) - 2} profile(s) "
        f"(first: profile {next(iter(doc['profiles']))!r})",
    ]


def test_every_field_batkube_documents_or_writes_is_known() -> None:
    assert {"cpu", "memory", "gatedUntil", "onePodPerNode", "groupTopology", "groupPolicy", "walltime"} <= (
        fields.JOB_FIELDS)  # fmt: skip
    for path in [*ROOT.glob("workloads/*.json"), *ROOT.glob("examples/**/*.json")]:
        doc = json.loads(path.read_text())
        if isinstance(doc, dict) and "jobs" in doc:
            assert fields.unknown_fields(doc) == [], path
    gangs = workloads.delay_jobs(3, 10, 0, cpu="1", pods=4, one_pod_per_node=True)
    assert fields.unknown_fields(gangs) == []


def _run(tmp_path: Path, workload: Path, out: str, *extra: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "batkube_py.cli", "run", "-p", str(ROOT / "platforms/cluster_16x1core.xml"),
           "-w", str(workload), "-o", str(tmp_path / out), "--batsim", "double", "--no-progress", *extra]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this tree's code, not an installed one
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)


def test_run_warns_everywhere_and_strict_refuses_before_anything_starts(tmp_path: Path) -> None:
    typo = _misspelt(tmp_path)
    r = _run(tmp_path, typo, "warned")
    assert r.returncode == 0, r.stderr
    assert "warning: workload" in r.stderr and "unknown job field 'cpus' (did you mean 'cpu'?)" in r.stderr
    summary = json.loads((tmp_path / "warned" / "summary.json").read_text())
    assert [line.split(" (")[0] for line in summary["unknown_fields"]] == [
        "unknown job field 'cpus'", "unknown profile field 'memroy'"]  # fmt: skip
    log = (tmp_path / "warned" / "batkube.log").read_text()
    assert "unknown profile field 'memroy' (did you mean 'memory'?)" in log and ": ignored" in log

    r = _run(tmp_path, typo, "strict", "--strict")
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == [
        f"Error: workload {typo}: unknown job field 'cpus' (did you mean 'cpu'?) on 4 job(s) (first: job "
        f"{json.loads(typo.read_text())['jobs'][0]['id']}) (and 1 more unknown field(s)); --strict refuses "
        "fields nothing reads"]  # fmt: skip
    assert not (tmp_path / "strict").exists()

    clean = tmp_path / "clean.json"
    clean.write_text(json.dumps(workloads.delay_jobs(3, 10, 0, cpu="1")))
    r = _run(tmp_path, clean, "clean", "--strict")
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    assert json.loads((tmp_path / "clean" / "summary.json").read_text())["unknown_fields"] == []
