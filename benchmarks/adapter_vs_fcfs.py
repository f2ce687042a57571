#!/usr/bin/env python3
"""End-to-end wall time and peak memory of `batkube serve` vs shared/bench/fcfs_baseline.py.

Both decision processes face the same Batsim peer (real Batsim with --batsim, else the test double)
on the same platform and workload, back to back in one run, so the ratio is what to read: absolute
seconds on a shared 2-core machine are noise.

    python benchmarks/adapter_vs_fcfs.py [--platform P] [--workload W] [--batsim PATH] [--repeat N]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _runs import BENCH, ROOT, compile_package, free_endpoint

from batkube_py.runs.usage import ChildUsage

KERNELS = "batkube_py.scheduler._kernels"


def one_run(
    dp_cmd: list[str], batsim: str, platform: Path, workload: Path
) -> tuple[float, float, int, float, float]:
    """(wall seconds, decision process peak RSS in MiB, Batsim exit code, CPU seconds of the decision
    process, CPU seconds of the peer)."""
    endpoint = free_endpoint()
    with tempfile.TemporaryDirectory() as out:
        dp = subprocess.Popen(
            [*dp_cmd, endpoint], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=out
        )
        time.sleep(0.5)
        start = time.perf_counter()
        sim = subprocess.Popen(
            [batsim, "-p", str(platform), "-w", str(workload), "-e", f"{out}/out", "-s", endpoint,
             "--enable-compute-sharing", "-q"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        sim_usage, dp_usage = ChildUsage(sim), ChildUsage(dp)  # each process's own (batkube_py.runs.usage)
        rc = sim_usage.wait()
        dp_usage.wait()
        wall = time.perf_counter() - start
    sim_fig, dp_fig = sim_usage.figures("x"), dp_usage.figures("x")
    return (
        wall, dp_fig["x_peak_rss_mib"] or float("nan"), rc,
        dp_fig["x_cpu_seconds"] or float("nan"), sim_fig["x_cpu_seconds"] or float("nan"),
    )  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--platform", type=Path, default=BENCH / "k8s_1000nodes.xml")
    ap.add_argument("--workload", type=Path, default=BENCH / "k8s_10k_jobs.json")
    ap.add_argument("--batsim", default=str(ROOT / "tests" / "batsim_double" / "batsim"))
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    compile_package()
    adapter = [sys.executable, "-m", "batkube_py.cli", "serve", "--idle-timeout", "120", "--socket"]
    baseline = [sys.executable, str(BENCH / "fcfs_baseline.py"), "--no-log", "--endpoint"]
    rows = []
    ratios = []
    for _ in range(args.repeat):
        pair = {}
        for name, cmd in (("fcfs_baseline", baseline), ("batkube serve", adapter)):
            wall, rss, rc, cpu, peer_cpu = one_run(cmd, args.batsim, args.platform, args.workload)
            rows.append((name, wall, rss, rc))
            pair[name] = wall
            print(
                f"{name:15s} wall {wall:7.2f} s   peak RSS {rss:7.1f} MiB   batsim exit {rc}   "
                f"cpu {cpu:5.2f} s (peer {peer_cpu:5.2f} s)",
                flush=True,
            )
        ratios.append(pair["batkube serve"] / pair["fcfs_baseline"])
    by = {n: [r for r in rows if r[0] == n] for n in ("fcfs_baseline", "batkube serve")}
    mean = {n: sum(r[1] for r in v) / len(v) for n, v in by.items()}
    print(f"peer: {args.batsim}\nworkload: {args.workload.name} on {args.platform.name}")
    loops = "compiled" if importlib.util.find_spec(KERNELS) else "numpy (no C compiler at install)"
    print(f"scheduler loops: {loops}")
    print(f"ratio batkube/fcfs wall time: {mean['batkube serve'] / mean['fcfs_baseline']:.2f}x")
    if len(ratios) > 1:  # each pair ran back to back: its ratio is the least disturbed by the machine
        print(
            f"per-pair ratios: {', '.join(f'{r:.2f}' for r in ratios)}; "
            f"median {statistics.median(ratios):.2f}x"
        )
    print(f"peak RSS batkube serve: {max(r[2] for r in by['batkube serve']):.1f} MiB")


if __name__ == "__main__":
    main()
