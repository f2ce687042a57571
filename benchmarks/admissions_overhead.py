#!/usr/bin/env python3
"""What recording the Kueue twin's admission reasoning costs (admissions.jsonl, kueue/record.py).

The whole NASA iPSC/860 trace with its node counts (18,066 jobs, 13,156 of them pod groups) on 128
one-core nodes, its 69 users as LocalQueues and its two groups as ClusterQueues in one cohort, as
experiments/queues.yaml's `besteffort` variant (`--strategy StrictFIFO`: its `strict` one); the embedded
twins of kube-scheduler 1.37.2 and Kueue v0.17.0 against the Batsim 4.2.1 double. Each variant runs in
this process, one after the other:
`plain` (--queues), `admissions` (--queues with the admission recorder attached, without decisions.jsonl,
so that only the admission record is measured). Prints the adapter's CPU and wall seconds (summary.json)
and the record's size.

    python benchmarks/admissions_overhead.py [--trace NASA.swf] [--variant plain|admissions ...]
        [--strategy BestEffortFIFO|StrictFIFO] [--keep DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from _runs import ROOT
from scale import BATKUBE, TRACE

sys.path.insert(0, str(ROOT))  # this checkout's batkube_py, not an installed one
from batkube_py.kueue.record import ADMISSIONS_FILE, AdmissionRecorder
from batkube_py.runs.run import RunConfig, embedded_factory, preflight, run


def inputs(trace: Path, into: Path, strategy: str) -> tuple[Path, Path, Path]:
    platform, workload, queues = into / "nodes.xml", into / "nasa.json", into / f"{strategy}.queues.yaml"
    subprocess.run([*BATKUBE, "platform", "--nodes", "128", "--cores", "1", "-o", str(platform)], cwd=ROOT,
                   check=True, capture_output=True)  # fmt: skip
    swf_tools = [sys.executable, "-c", "from swf_tools.cli import main; main()"]
    subprocess.run([*swf_tools, "convert", str(trace), "--cores-per-node", "1",
                    "--queue-from", "user", "--cluster-queue-from", "group", "--quota-cores", "128",
                    "--queueing-strategy", strategy, "-o", str(workload),
                    "--queues-out", str(queues)],
                   cwd=ROOT, check=True, capture_output=True)  # fmt: skip
    return platform, workload, queues


def one(variant: str, platform: Path, workload: Path, queues: Path, out: Path) -> None:
    cfg = RunConfig(platform, workload, out, batsim="double", progress=False, queues=queues)
    checked = preflight(cfg)
    make = embedded_factory(cfg.seed, None, None, cfg.kube_version, checked.queues)

    def factory(nodes):
        backend = make(nodes)
        if variant == "admissions":
            AdmissionRecorder(out / ADMISSIONS_FILE, backend.twin)
        return backend

    s = run(cfg, factory, checked)
    record = out / ADMISSIONS_FILE
    size = ""
    if record.exists():
        n = sum(1 for _ in record.open())
        size = f"; {ADMISSIONS_FILE}: {n} lines, {record.stat().st_size / 2**20:.1f} MiB"
    print(f"{variant}: {s['jobs_total']} jobs, {s['kueue_cycles']} cycles, wall {s['wall_seconds']:.1f} "
          f"s, adapter cpu {s['adapter_cpu_seconds']:.1f} s, peak {s['adapter_peak_rss_mib']} MiB, double "
          f"cpu {s['batsim_cpu_seconds']:.1f} s, mean wait {s['mean_waiting_time']:.3f} s{size}",
          flush=True)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, default=TRACE)
    ap.add_argument("--variant", action="append", choices=["plain", "admissions"])
    ap.add_argument("--strategy", choices=["BestEffortFIFO", "StrictFIFO"], default="BestEffortFIFO")
    ap.add_argument("--keep", type=Path, help="run directories here (default: a temporary directory)")
    args = ap.parse_args()
    if not args.trace.exists():
        sys.exit(f"no trace at {args.trace} (give --trace)")
    with tempfile.TemporaryDirectory() as tmp:
        into = args.keep or Path(tmp)
        into.mkdir(parents=True, exist_ok=True)
        platform, workload, queues = inputs(args.trace, into, args.strategy)
        for variant in args.variant or ["plain", "admissions"]:
            one(variant, platform, workload, queues, into / f"{variant}-{args.strategy}")


if __name__ == "__main__":
    main()
