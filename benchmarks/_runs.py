"""What the real-backend benchmarks share: one `batkube run` against the Batsim test double."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DOUBLE = ROOT / "tests" / "batsim_double" / "batsim"


def batkube_run(out: Path, platform: Path, workload: Path, *extra: str) -> dict:
    """Runs `batkube run` (extra options appended) and returns its summary.json."""
    cmd = [sys.executable, "-m", "batkube_py.cli", "run", "-p", str(platform), "-w", str(workload),
           "-o", str(out), "--batsim", str(DOUBLE), "--no-progress", *extra]  # fmt: skip
    subprocess.run(cmd, cwd=ROOT, capture_output=True)
    return json.loads((out / "summary.json").read_text())
