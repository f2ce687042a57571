#!/usr/bin/env python3
"""Whole-trace and large-cluster runs end to end: `batkube run` against Batsim (the double by default).

- nasa: the whole NASA iPSC/860 trace (../shared/traces, 18,239 jobs after swf-tools' cleaning) converted
  with `swf-tools convert --normalize-cpu 8` onto 16 nodes of 8 cores (the iPSC's 128 processors);
- nasa-gangs: the same trace with its node counts kept (`swf-tools convert --cores-per-node 1`: a job on P
  processors is a gang of P one-cpu pods, ~300,000 pods) on 128 one-core nodes (issue 26's target: 60 s);
- 100k: 100,000 spaced pods (1 cpu, 1Gi, 170 s, one every 10 ms) on 5,000 nodes of 8 cores and 32Gi,
  with --record-decisions.

Prints the wall time of the whole `batkube run` command, the adapter's and Batsim's CPU seconds and
peak RSS (each process's own, as summary.json reports them: batkube_py/runs/usage.py), and the run's figures.

    python benchmarks/scale.py [--only nasa|nasa-gangs|100k] [--batsim double|CMD] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _runs import ROOT, SHARED, compile_package

TRACE = SHARED / "traces" / "NASA-iPSC-1993-3.1-cln.swf"
BATKUBE = [sys.executable, "-m", "batkube_py.cli"]


def _check(cmd: list[str]) -> None:
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd[:4])} ... failed: {done.stderr.strip()[-500:]}")


def nasa_inputs(tmp: Path) -> tuple[Path, Path, list[str]]:
    workload, platform = tmp / "nasa.json", tmp / "nasa16x8.xml"
    swf_tools = [sys.executable, "-c", "from swf_tools.cli import main; main()"]
    _check([*swf_tools, "convert", str(TRACE), "-o", str(workload), "--normalize-cpu", "8"])
    _check([*BATKUBE, "platform", "--nodes", "16", "--cores", "8", "-o", str(platform)])
    return platform, workload, []


def nasa_gang_inputs(tmp: Path) -> tuple[Path, Path, list[str]]:
    workload, platform = tmp / "nasa-gangs.json", tmp / "nasa128x1.xml"
    swf_tools = [sys.executable, "-c", "from swf_tools.cli import main; main()"]
    _check([*swf_tools, "convert", str(TRACE), "-o", str(workload), "--cores-per-node", "1"])
    _check([*BATKUBE, "platform", "--nodes", "128", "--cores", "1", "-o", str(platform)])
    return platform, workload, []


def big_inputs(tmp: Path) -> tuple[Path, Path, list[str]]:
    workload, platform = tmp / "spaced100k.json", tmp / "5000x8.xml"
    _check([*BATKUBE, "workload", "spaced", "--jobs", "100000", "--interval", "0.01", "--delay", "170",
            "--cpu", "1", "--memory", "1Gi", "-o", str(workload)])  # fmt: skip
    _check([*BATKUBE, "platform", "--nodes", "5000", "--cores", "8", "--memory", "32Gi", "-o", str(platform)])
    return platform, workload, ["--record-decisions"]


CASES = {"nasa": nasa_inputs, "nasa-gangs": nasa_gang_inputs, "100k": big_inputs}


def one(name: str, tmp: Path, batsim: str) -> None:
    platform, workload, extra = CASES[name](tmp)
    out = tmp / f"run-{name}"
    cmd = [*BATKUBE, "run", "-p", str(platform), "-w", str(workload), "-o", str(out), "--batsim", batsim,
           "--no-progress", *extra]  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{name}: batkube run failed: {done.stderr.strip()[-500:]}")
    summary = json.loads((out / "summary.json").read_text())
    jobs = summary["jobs_total"]
    print(f"{name}: {jobs} jobs, {summary['messages']} messages, wall {wall:.1f} s "
          f"({jobs / wall:,.0f} jobs/s); adapter cpu {summary['adapter_cpu_seconds']:.1f} s, peak RSS "
          f"{summary['adapter_peak_rss_mib']:.0f} MiB; Batsim cpu {summary['batsim_cpu_seconds']:.1f} s, "
          f"peak RSS {summary['batsim_peak_rss_mib']:.0f} MiB; makespan {summary['makespan']:.0f} s, "
          f"succeeded {summary['jobs_succeeded']}, rejected {summary['jobs_rejected']}",
          flush=True)  # fmt: skip
    if "--record-decisions" in extra:
        path = out / "decisions.jsonl"
        lines = sum(1 for _ in path.open())
        print(f"{name}: decisions.jsonl {lines} lines, {path.stat().st_size / 2**20:.0f} MiB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=sorted(CASES), action="append")
    ap.add_argument("--batsim", default="double")
    ap.add_argument("--keep", type=Path, default=None, help="keep inputs and run directories here")
    args = ap.parse_args()
    compile_package()
    for name in args.only or list(CASES):
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
            one(name, args.keep, args.batsim)
            continue
        with tempfile.TemporaryDirectory(prefix="batkube-scale-") as tmp:
            one(name, Path(tmp), args.batsim)


if __name__ == "__main__":
    main()
