"""What the end-to-end benchmarks share: paths, a free endpoint, compiled bytecode, one `batkube run`."""

from __future__ import annotations

import compileall
import json
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
BENCH = SHARED / "bench"
DOUBLE = ROOT / "tests" / "batsim_double" / "batsim"


def compile_package() -> None:
    """An installed package carries its bytecode (pip and nix compile it); an editable checkout under
    PYTHONDONTWRITEBYTECODE (set on these machines) would recompile ~80 modules at every start."""
    compileall.compile_dir(ROOT / "batkube_py", quiet=1)


def free_endpoint() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


def batkube_run(out: Path, platform: Path, workload: Path, *extra: str) -> dict:
    """Runs `batkube run` (extra options appended) and returns its summary.json."""
    cmd = [sys.executable, "-m", "batkube_py.cli", "run", "-p", str(platform), "-w", str(workload),
           "-o", str(out), "--batsim", str(DOUBLE), "--no-progress", *extra]  # fmt: skip
    subprocess.run(cmd, cwd=ROOT, capture_output=True)
    return json.loads((out / "summary.json").read_text())
