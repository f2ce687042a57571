#!/usr/bin/env python3
"""What the Kueue twin costs on a whole trace (issue 35's speed target: within 2x of the same run without
queues).

The `queues` experiment's case (experiments/README.md): the NASA iPSC/860 trace kept in node counts
(`swf-tools convert --cores-per-node 1`: a job on P processors is a pod group of P one-cpu pods) on 128
one-core nodes, its users as LocalQueues in its groups' ClusterQueues, one cohort. The same workload runs
without `--queues` (kube-scheduler 1.37.2's twin alone) and with them (Kueue v0.17.0's twin in front),
back to back, on the Batsim 4.2.1 double, --pairs times. Prints each run's wall time, the adapter's and
the double's CPU seconds and mean wait, then each pair's wall and adapter-CPU ratios (queued / bare) and
their medians. The machine's load at the start and end is printed: figures from a loaded machine are
indicative only.

    python benchmarks/queues_speed.py [--trace NASA.swf] [--jobs N] [--strategy StrictFIFO] [--pairs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _runs import ROOT, compile_package
from scale import BATKUBE, TRACE

SWF_TOOLS = [sys.executable, "-c", "from swf_tools.cli import main; main()"]


def _check(cmd: list[str]) -> None:
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd[:4])}…: {done.stderr.strip()[-500:]}")


def first_jobs(workload: Path, n: int) -> None:
    """Keeps the trace's first n jobs (a quicker measurement; the figures name the count)."""
    data = json.loads(workload.read_text())
    data["jobs"] = data["jobs"][:n]
    used = {j["profile"] for j in data["jobs"]}
    data["profiles"] = {k: v for k, v in data["profiles"].items() if k in used}
    workload.write_text(json.dumps(data))


def inputs(tmp: Path, trace: Path, strategy: str, jobs: int | None) -> tuple[Path, Path, Path]:
    platform, workload, queues = tmp / "nodes.xml", tmp / "nasa-users.json", tmp / "nasa-users.queues.yaml"
    _check([*BATKUBE, "platform", "--nodes", "128", "--cores", "1", "-o", str(platform)])
    _check([*SWF_TOOLS, "convert", str(trace), "--cores-per-node", "1", "--queue-from", "user",
            "--cluster-queue-from", "group", "--quota-cores", "128", "--queueing-strategy", strategy,
            "-o", str(workload), "--queues-out", str(queues)])  # fmt: skip
    if jobs is not None:
        first_jobs(workload, jobs)
    return platform, workload, queues


def one(platform: Path, workload: Path, out: Path, *extra: str) -> dict:
    cmd = [*BATKUBE, "run", "-p", str(platform), "-w", str(workload), "-o", str(out), "--batsim", "double",
           "--no-progress", *extra]  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"batkube run {' '.join(extra)} failed: {done.stderr.strip()[-500:]}")
    s = json.loads((out / "summary.json").read_text())
    return {"wall": wall, "adapter": s["adapter_cpu_seconds"], "double": s["batsim_cpu_seconds"],
            "jobs": s["jobs_total"], "wait": s["mean_waiting_time"],
            "kueue": s.get("kueue_twin") or s.get("kueue_version")}  # fmt: skip


def show(label: str, r: dict) -> None:
    print(f"  {label:<34} wall {r['wall']:7.1f} s   adapter cpu {r['adapter']:7.1f} s   double cpu "
          f"{r['double']:6.1f} s   {r['jobs']} jobs, mean wait {r['wait']:.2f} s", flush=True)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", type=Path, default=TRACE)
    ap.add_argument("--jobs", type=int, default=None, help="only the trace's first N jobs")
    ap.add_argument("--strategy", choices=["BestEffortFIFO", "StrictFIFO"], default="BestEffortFIFO")
    ap.add_argument("--pairs", type=int, default=3)
    args = ap.parse_args()
    if not args.trace.exists():
        sys.exit(f"{args.trace}: no such trace (give --trace, e.g. the NASA iPSC/860 SWF file)")
    compile_package()
    print(f"load at start {os.getloadavg()[0]:.2f}; Batsim 4.2.1 double, kube-scheduler 1.37.2 twin, "
          f"Kueue v0.17.0 twin ({args.strategy}), {args.trace.name}"
          f"{f', first {args.jobs} jobs' if args.jobs else ''}, 128 one-core nodes", flush=True)  # fmt: skip
    walls, cpus = [], []
    with tempfile.TemporaryDirectory(prefix="batkube-queues-speed-") as name:
        tmp = Path(name)
        platform, workload, queues = inputs(tmp, args.trace, args.strategy, args.jobs)
        for i in range(args.pairs):
            bare = one(platform, workload, tmp / f"bare{i}")
            queued = one(platform, workload, tmp / f"queued{i}", "--queues", str(queues))
            print(f"pair {i + 1}:")
            show("kube-scheduler twin alone", bare)
            show(f"with the Kueue {queued['kueue']} twin", queued)
            walls.append(queued["wall"] / bare["wall"])
            cpus.append(queued["adapter"] / bare["adapter"])
            print(f"  queued / bare: wall {walls[-1]:.2f}x, adapter cpu {cpus[-1]:.2f}x", flush=True)
    print(f"median over {args.pairs} pairs: wall {statistics.median(walls):.2f}x, adapter cpu "
          f"{statistics.median(cpus):.2f}x (target: within 2x); "
          f"load at end {os.getloadavg()[0]:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
