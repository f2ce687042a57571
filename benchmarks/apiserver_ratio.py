"""The 10k bench on the real backend against the control plane's own bulk floor, in one sitting.

Issue 38's speed target: `batkube run --backend apiserver` of k8s_10k_jobs on k8s_1000nodes
(../shared/bench; kube-scheduler 1.37.2 running its own queue on the simulated clock, exact lockstep,
the Batsim double) within 2x of `apiserver_floor.py` (the same pods created, bound and deleted in bulk on
the wall clock, no simulator). Each pair runs the floor, then the bench, each on a fresh control plane,
back to back; it prints both walls, each component's CPU seconds (etcd, kube-apiserver, kube-scheduler
from /proc, the adapter and the double from summary.json), the load average before each, the ratio, and
the bench's CPU over the cores it may use: a wall no overlap of its parts can beat (docs/performance.md).
The machine is shared: read the ratios and the CPU, not the absolute walls.

    python benchmarks/apiserver_ratio.py [--jobs N] [--pairs K] [--keep DIR] [--scheduler-config F]

`--jobs 2000` runs the workload's first 2,000 jobs (iteration); `--keep DIR` keeps each run's outputs
(pods.csv, summary.json, batkube.log) to compare trees byte for byte.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _runs import BENCH, DOUBLE, ROOT, compile_package
from apiserver_floor import floor, process_cpu

PLATFORM, WORKLOAD = BENCH / "k8s_1000nodes.xml", BENCH / "k8s_10k_jobs.json"
PARTS = ("etcd", "kube-apiserver", "kube-scheduler")


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def run_floor(cp_dir: Path, jobs: list[dict], profiles: dict, config: Path | None) -> dict:
    from kubernetes import config as kconfig

    from batkube_py.controlplane.kubehttp import KubeHttp
    from batkube_py.controlplane.manager import ControlPlane

    cp = ControlPlane(cp_dir)
    st = cp.up(scheduler_config=config)
    try:
        http = KubeHttp(kconfig.new_client_from_config(config_file=str(st.kubeconfig)))
        wall, cpu = floor(http, st.pids, jobs, profiles, 2000, 1000)
    finally:
        cp.down(remove=True)
    return {"wall": wall, "cpu": cpu, **{k: st.versions.get(k) for k in ("kubernetes", "etcd")}}


def run_bench(cp_dir: Path, out: Path, workload: Path, config: Path | None) -> dict:
    from batkube_py.controlplane.manager import ControlPlane

    cp = ControlPlane(cp_dir)
    st = cp.up(scheduler_config=config)
    try:
        before = process_cpu(st.pids)
        cmd = [sys.executable, "-m", "batkube_py.cli", "run", "-p", str(PLATFORM), "-w", str(workload),
               "-o", str(out), "--batsim", str(DOUBLE), "--no-progress", "--backend", "apiserver",
               "--controlplane-dir", str(cp.dir)]  # fmt: skip
        t0 = time.perf_counter()
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        cpu = {k: v - before[k] for k, v in process_cpu(st.pids).items()}
    finally:
        cp.down(remove=True)
    if done.returncode != 0 or not (out / "summary.json").exists():
        raise SystemExit(f"batkube run failed ({done.returncode}): {done.stderr[-2000:]}")
    s = json.loads((out / "summary.json").read_text())
    cpu["adapter"] = s.get("adapter_cpu_seconds") or 0.0
    cpu["double"] = s.get("batsim_cpu_seconds") or 0.0
    digest = hashlib.sha256((out / "pods.csv").read_bytes()).hexdigest()[:16]
    return {"wall": wall, "cpu": cpu, "summary": s, "pods_csv": digest}


def fmt_cpu(cpu: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.1f}" for k, v in cpu.items()) + f" (total {sum(cpu.values()):.1f})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, help="only the workload's first N jobs (iteration)")
    ap.add_argument("--pairs", type=int, default=1, help="floor + bench pairs, back to back")
    ap.add_argument("--keep", type=Path, help="keep each bench run's outputs in DIR/runK")
    ap.add_argument("--scheduler-config", type=Path, help="KubeSchedulerConfiguration for both")
    ap.add_argument("--no-floor", action="store_true", help="the bench only (profiling)")
    args = ap.parse_args()
    compile_package()
    sys.path.insert(0, str(ROOT))
    workload = json.loads(WORKLOAD.read_text())
    jobs = workload["jobs"][: args.jobs]
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        wl = WORKLOAD
        if args.jobs:
            wl = t / "workload.json"
            wl.write_text(json.dumps({**workload, "jobs": jobs}))
        for k in range(args.pairs):
            if not args.no_floor:
                print(f"pair {k + 1}: floor (load {load()})", flush=True)
                f = run_floor(t / f"floorcp{k}", jobs, workload["profiles"], args.scheduler_config)
                print(f"  floor: {f['wall']:.1f} s wall; CPU s: {fmt_cpu(f['cpu'])}", flush=True)
            print(f"pair {k + 1}: bench (load {load()})", flush=True)
            out = (args.keep / f"run{k}") if args.keep else t / f"run{k}"
            shutil.rmtree(out, ignore_errors=True)
            b = run_bench(t / f"cp{k}", out, wl, args.scheduler_config)
            s = b["summary"]
            print(f"  bench: {b['wall']:.1f} s wall ({s.get('wall_seconds', 0):.1f} s in the run); CPU s: "
                  f"{fmt_cpu(b['cpu'])}; steps {s.get('queue_steps')}, parity mismatches "
                  f"{s.get('parity_mismatches')}, makespan {s.get('makespan')}, pods.csv {b['pods_csv']}",
                  flush=True)  # fmt: skip
            if not args.no_floor:
                ratios.append(b["wall"] / f["wall"])
                cp_ratio = sum(b["cpu"][p] for p in PARTS) / sum(f["cpu"][p] for p in PARTS)
                print(f"  ratio bench/floor: wall {ratios[-1]:.2f}x, control-plane CPU {cp_ratio:.2f}x "
                      f"(load after {load()})", flush=True)  # fmt: skip
                cores = len(os.sched_getaffinity(0))
                bound = sum(b["cpu"].values()) / cores
                print(f"  the bench's CPU alone needs {bound:.1f} s of wall on {cores} cores however its "
                      f"parts overlap: {bound / f['wall']:.2f}x the floor", flush=True)  # fmt: skip
    if ratios:
        print(f"{len(jobs)} jobs, Batsim double, kube-scheduler {f['kubernetes']}, etcd {f['etcd']}: "
              f"median wall ratio {statistics.median(ratios):.2f}x over {len(ratios)} pair(s)")


if __name__ == "__main__":
    main()
