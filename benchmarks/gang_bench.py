#!/usr/bin/env python3
"""The whole NASA iPSC/860 trace in gangs (issue 26's scale target: end to end ≤ 60 s on the double).

`swf-tools convert --cores-per-node 1` (a job on P processors: a gang of P one-cpu pods, ~300,000 pods in
13,156 groups) on 128 one-core nodes, as experiments/gangs.yaml's `gang` case, scheduled by the embedded
twin of kube-scheduler 1.37.2 against the Batsim 4.2.1 double. Prints:

1. `batkube run` end to end: wall, the adapter's and the double's CPU seconds (summary.json), makespan,
   mean wait; with --transcript-out, its transcript is kept (a reference for later runs);
2. the adapter alone: the run's Batsim messages fed to a fresh decision process in this process, its CPU
   to the replies (what Batsim waits for) and after them, every reply checked against the recorded one
   — and against --reference's, a transcript of an earlier run, to show a change moved no decision;
   --profile prints cProfile's top functions of that pass.

    python benchmarks/gang_bench.py [--trace NASA.swf] [--reference T] [--transcript-out T] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import scale
from _runs import ROOT, compile_package
from scale import BATKUBE, TRACE, nasa_gang_inputs


def end_to_end(platform: Path, workload: Path, out: Path, transcript: Path) -> None:
    cmd = [*BATKUBE, "run", "-p", str(platform), "-w", str(workload), "-o", str(out), "--batsim", "double",
           "--no-progress", "--transcript", str(transcript)]  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"batkube run failed: {done.stderr.strip()[-500:]}")
    s = json.loads((out / "summary.json").read_text())
    print(f"end to end (Batsim 4.2.1 double, twin of kube-scheduler {s.get('twin_kube_version')}): "
          f"{s['jobs_total']} jobs, {s['gang_pods']} pods in {s['gang_jobs']} groups, wall {wall:.1f} s; "
          f"adapter cpu {s['adapter_cpu_seconds']:.1f} s, double cpu {s['batsim_cpu_seconds']:.1f} s; "
          f"makespan {s['makespan']:.1f} s, mean wait {s['mean_waiting_time']:.2f} s, "
          f"fragmentation {s.get('fragmentation')}", flush=True)  # fmt: skip


def adapter_alone(transcript: Path, reference: Path | None, out: Path, profile: bool) -> None:
    from batkube_py.adapter.decision import DecisionProcess
    from batkube_py.adapter.outputs import RunOutputs
    from batkube_py.runs.endpoint import long_lived_gc
    from batkube_py.runs.run import embedded_factory
    from batkube_py.runs.transcript import load

    lines = load(transcript)
    ref = load(reference) if reference is not None else None
    if ref is not None and len(ref) != len(lines):  # messages name the run's files: only replies compare
        sys.exit(f"{reference}: {len(ref) // 2} messages, this run {len(lines) // 2}: the schedules differ")
    process = DecisionProcess(embedded_factory(0), RunOutputs(out))
    prof = cProfile.Profile() if profile else None
    to_reply = after = 0.0
    with long_lived_gc():
        if prof is not None:
            prof.enable()
        for i in range(0, len(lines), 2):
            start = time.thread_time()
            reply = process.handle(lines[i])
            replied = time.thread_time()
            process.after_reply()
            to_reply += replied - start
            after += time.thread_time() - replied
            if reply != lines[i + 1] or (ref is not None and reply != ref[i + 1]):
                sys.exit(f"reply {i // 2 + 1} differs from the recorded one")
        if prof is not None:
            prof.disable()
    process.outputs.close()
    checked = " and the reference's" if ref is not None else ""
    print(f"adapter alone: {len(lines) // 2} messages, {to_reply:.1f} s CPU to the replies, {after:.1f} s "
          f"after them; every reply equal to the recorded one{checked}", flush=True)  # fmt: skip
    if prof is not None:
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", type=Path, default=TRACE)
    ap.add_argument("--reference", type=Path, default=None, help="an earlier run's transcript")
    ap.add_argument("--transcript-out", type=Path, default=None, help="keep this run's transcript here")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    compile_package()
    scale.TRACE = args.trace
    with tempfile.TemporaryDirectory(prefix="batkube-gangs-") as name:
        tmp = Path(name)
        platform, workload, _ = nasa_gang_inputs(tmp)
        transcript = args.transcript_out or tmp / "transcript"
        end_to_end(platform, workload, tmp / "run", transcript)
        adapter_alone(transcript, args.reference, tmp / "alone", args.profile)


if __name__ == "__main__":
    main()
