"""End to end: NASA trace → extract → convert → ``batkube run`` against the Batsim test double."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from shared_support import need

from swf_tools.cli import main

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
NASA = SHARED / "traces" / "NASA-iPSC-1993-3.1-cln.swf"
PLATFORM = SHARED / "reference" / "platforms" / "1node_6core.xml"
BATSIM_DOUBLE = ROOT / "tests" / "batsim_double" / "batsim"


@pytest.mark.slow
def test_extract_convert_run(tmp_path: Path) -> None:
    need(NASA, PLATFORM)

    swf = tmp_path / "nasa-10h-80.swf"
    result = CliRunner().invoke(main, ["extract", str(NASA), "--period", "10h", "--utilization", "0.8",
                                       "--variation", "0.01", "--index", "0", "-o", str(swf)])
    assert result.exit_code == 0, result.output
    workload = tmp_path / "nasa-10h-80.json"
    result = CliRunner().invoke(main, ["convert", str(swf), "--normalize-cpu", "6", "--cpu-headroom", "0.1",
                                       "--max-duration", "1h", "-o", str(workload)])
    assert result.exit_code == 0, result.output
    job_ids = {job["id"] for job in json.loads(workload.read_text())["jobs"]}

    out = tmp_path / "run"
    run = subprocess.run(
        [sys.executable, "-m", "batkube_py.cli", "run", "--platform", str(PLATFORM),
         "--workload", str(workload), "--out", str(out), "--batsim", str(BATSIM_DOUBLE)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, f"batkube run failed:\n{run.stdout}\n{run.stderr}"
    jobs_csv = sorted(out.rglob("*jobs.csv"))
    assert jobs_csv, f"no *_jobs.csv under {out}"
    with jobs_csv[0].open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert {row["job_id"] for row in rows} == job_ids
    assert all(row["final_state"] == "COMPLETED_SUCCESSFULLY" for row in rows)
