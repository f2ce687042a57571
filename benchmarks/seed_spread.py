"""What `--seed` changes: the spread of a tie-heavy run over seeds, beside repeated real runs (prints).

The twin as kube-scheduler 1.37.2 with the default profile (`parallelism: 16`) draws from the seed the
order its parallel Filter workers find the feasible nodes in (scheduler/filterorder.py), which decides
the heap root among tied nodes; with `parallelism: 1` it has nothing to draw. The real kube-scheduler
1.37.2 (`--backend apiserver`, its own queue on the simulated clock) is run as often, with its default
configuration, when its control plane is built (`batkube controlplane build`); its seed is ignored, the
variation is its own.

Workload (tie-heavy): 16 nodes x 4 cores; 120 jobs of 1-3 cores and 20-90 s, in bursts of 12 every
15 s, so most pods meet several equally loaded nodes and where each goes decides what fits later.

    python benchmarks/seed_spread.py [--runs 10] [--no-real]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _runs import ROOT, batkube_run, compile_package

KUBE = "1.37.2"


def inputs(d: Path) -> tuple[Path, Path]:
    platform = d / "p16x4.xml"
    cmd = [sys.executable, "-m", "batkube_py.cli", "platform", "-n", "16", "-c", "4", "-m", "16Gi"]
    subprocess.run([*cmd, "-o", str(platform)], cwd=ROOT, check=True, capture_output=True)
    rng = random.Random(37)
    profiles, jobs = {}, []
    for i in range(120):
        cpu, delay = rng.choice((1, 1, 2, 3)), rng.choice((20, 30, 45, 60, 90))
        name = f"c{cpu}d{delay}"
        profiles[name] = {"type": "delay", "delay": delay, "cpu": str(cpu), "memory": f"{cpu}Gi"}
        jobs.append({"id": str(i), "subtime": 15 * (i // 12), "res": 1, "profile": name})
    workload = d / "ties.json"
    workload.write_text(json.dumps({"nb_res": 16, "jobs": jobs, "profiles": profiles}))
    return platform, workload


def spread(summaries: list[dict], pods: list[str]) -> str:
    def ms(key: str, digits: int) -> str:
        xs = [s[key] for s in summaries]
        sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
        mean, lo, hi = (f"{x:.{digits}f}" for x in (statistics.mean(xs), min(xs), max(xs)))
        return f"{mean} ± {sd:.{digits}f} [{lo}, {hi}]"

    return f"{ms('makespan', 2):34} {ms('mean_waiting_time', 3):34} {len(set(pods)):>8}"


def series(d: Path, platform: Path, workload: Path, runs: int, *extra: str, seeds: bool = True):
    summaries, pods = [], []
    for k in range(runs):
        out = d / f"r{k}"
        summaries.append(batkube_run(out, platform, workload, "--seed", str(k if seeds else 0), *extra))
        pods.append((out / "pods.csv").read_text())
    return summaries, pods


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10, help="seeds of the twin, and runs of the real scheduler")
    ap.add_argument("--no-real", action="store_true", help="the twin only")
    args = ap.parse_args()
    compile_package()
    from batkube_py.controlplane.build import find_binaries

    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        platform, workload = inputs(t)
        serial = t / "serial.yaml"
        serial.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                          "parallelism: 1\n")  # fmt: skip
        rows = [
            (f"twin 1.37, parallelism 16, seeds 0-{args.runs - 1}",
             series(t / "twin", platform, workload, args.runs)),
            (f"twin 1.37, parallelism 1, seeds 0-{args.runs - 1}",
             series(t / "serial", platform, workload, args.runs, "--scheduler-config", str(serial))),
        ]  # fmt: skip
        real = None
        if not args.no_real and find_binaries() is not None:
            from batkube_py.controlplane.manager import ControlPlane

            cp = ControlPlane(t / "cp")
            cp.up()
            try:
                real = ("--backend", "apiserver", "--controlplane-dir", str(cp.dir))
                runs = series(t / "real", platform, workload, args.runs, *real, seeds=False)
                rows.append((f"kube-scheduler {KUBE}, default config, {args.runs} runs", runs))
            finally:
                cp.down()
    print(f"tie-heavy workload (120 jobs, 16 nodes x 4 cores), Batsim double, kube-scheduler {KUBE}")
    head = ("", "makespan: mean ± sd [min, max]", "mean wait: mean ± sd [min, max]", "distinct pods.csv")
    print("{:48} {:34} {:34} {}".format(*head))
    for name, (summaries, pods) in rows:
        print(f"{name:48} {spread(summaries, pods)}")
    if real is None:
        print("(no real runs: " + ("--no-real" if args.no_real else "control plane not built") + ")")


if __name__ == "__main__":
    main()
