#!/usr/bin/env python3
"""The adapter's overhead over the physical limit: Batsim running the same schedule with a decision
process that costs nothing.

For each workload and repetition, back to back: `batkube run --transcript` (Batsim quiet, as `batkube
run` starts it), then the same Batsim command against `batkube replay` of that transcript (a REP socket
answering message i with recorded reply i). The two schedules must be identical (out_jobs.csv, and
out_schedule.csv without its wall-clock columns). Wall time is each side's whole command, decision
process start-up included; CPU comes from the children's resource usage (wait4) and, for the split
between the adapter and the Batsim it starts, from summary.json.

    python benchmarks/adapter_overhead.py [--batsim double|CMD] [--repeat N] [--workload W ...]
    python benchmarks/adapter_overhead.py --in-process [--pause 0.0002]

`--in-process` splits the adapter's cost from the socket's: it feeds the recorded messages straight to
the decision process, back to back and then with a pause between messages (as live, where the adapter
waits for Batsim after each reply), checks every reply equals the recorded one and prints the handling
CPU of both, split into what comes before each reply (Batsim waits for it) and what the adapter does
once the reply has left (DecisionProcess.after_reply, while Batsim works). The gap between the two runs
is what an idle core and caches another process used cost.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _runs import BENCH, ROOT, compile_package, free_endpoint

from batkube_py.runs.batsim import batsim_command, find_batsim
from batkube_py.runs.run import RunConfig

WALL_CLOCK = {"scheduling_time", "simulation_time"}  # out_schedule.csv columns measured in real seconds


def waited(proc: subprocess.Popen) -> tuple[int, float, float]:
    """(exit code, CPU seconds, peak RSS MiB) of a child, reaped with its resource usage."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def schedule(out: Path) -> tuple[list[list[str]], list[list[str]]]:
    jobs = sorted(csv.reader((out / "out_jobs.csv").open()))
    rows = list(csv.reader((out / "out_schedule.csv").open()))
    keep = [i for i, name in enumerate(rows[0]) if name not in WALL_CLOCK]
    return jobs, [[r[i] for i in keep] for r in rows]


def adapter_run(cfg: RunConfig, tmp: Path, transcript: Path) -> dict:
    cmd = [sys.executable, "-m", "batkube_py.cli", "run", "-p", str(cfg.platform), "-w", str(cfg.workload),
           "-o", str(tmp / "run"), "--batsim", cfg.batsim or "double", "--no-progress",
           "--transcript", str(transcript), *(f"--batsim-arg={a}" for a in cfg.batsim_args)]  # fmt: skip
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read() if proc.stderr else b""
    rc, cpu, _ = waited(proc)
    wall = time.perf_counter() - start
    if rc != 0:
        sys.exit(f"batkube run failed ({rc}): {err.decode(errors='replace')[-500:]}")
    summary = json.loads((tmp / "run" / "summary.json").read_text())
    return {"wall": wall, "cpu_total": cpu, "adapter_cpu": summary["adapter_cpu_seconds"],
            "batsim_cpu": summary["batsim_cpu_seconds"], "out": tmp / "run"}  # fmt: skip


def replay_run(cfg: RunConfig, tmp: Path, transcript: Path) -> dict:
    out = tmp / "replay"
    out.mkdir()
    endpoint = free_endpoint()
    batsim = batsim_command(find_batsim(cfg.batsim), cfg, endpoint, out / "out")
    start = time.perf_counter()
    replayer = [sys.executable, "-m", "batkube_py.runs.transcript", str(transcript), "--socket", endpoint]
    dp = subprocess.Popen(replayer, cwd=out, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    sim = subprocess.Popen(batsim, cwd=out, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sim_rc, sim_cpu, _ = waited(sim)
    err = dp.stderr.read() if dp.stderr else b""
    dp_rc, dp_cpu, _ = waited(dp)
    wall = time.perf_counter() - start
    if dp_rc != 0 or sim_rc != 0:
        sys.exit(f"replay failed (replayer {dp_rc}, Batsim {sim_rc}): {err.decode(errors='replace')[-500:]}")
    return {"wall": wall, "replayer_cpu": dp_cpu, "batsim_cpu": sim_cpu, "out": out}


def pair(cfg: RunConfig) -> tuple[dict, dict]:
    with tempfile.TemporaryDirectory(prefix="batkube-overhead-") as name:
        tmp = Path(name)
        transcript = tmp / "transcript"
        live = adapter_run(cfg, tmp, transcript)
        zero = replay_run(cfg, tmp, transcript)
        if schedule(live["out"]) != schedule(zero["out"]):
            sys.exit(f"{cfg.workload.name}: the replay's schedule differs from the adapter's")
    return live, zero


def in_process(cfg: RunConfig, pauses: list[float]) -> None:
    from batkube_py.adapter.decision import DecisionProcess
    from batkube_py.adapter.outputs import RunOutputs
    from batkube_py.runs.endpoint import long_lived_gc
    from batkube_py.runs.run import embedded_factory
    from batkube_py.runs.transcript import load

    with tempfile.TemporaryDirectory(prefix="batkube-inproc-") as name:
        tmp = Path(name)
        adapter_run(cfg, tmp, tmp / "transcript")
        lines = load(tmp / "transcript")
        for pause in pauses:
            process = DecisionProcess(embedded_factory(0), RunOutputs(tmp / f"in-{pause}"))
            cpu = after = 0.0
            with long_lived_gc():
                for i in range(0, len(lines), 2):
                    if pause:
                        time.sleep(pause)
                    start = time.thread_time()
                    reply = process.handle(lines[i])
                    replied = time.thread_time()
                    process.after_reply()
                    cpu += replied - start
                    after += time.thread_time() - replied
                    if reply != lines[i + 1]:
                        sys.exit(f"{cfg.workload.name}: reply {i // 2 + 1} differs from the recorded one")
            process.outputs.close()
            if process.backend is not None:
                process.backend.close()
            what = f"{len(lines) // 2} messages handled in-process, {pause * 1e3:g} ms between messages"
            print(f"{cfg.workload.name}: {what}: {cpu:5.2f} s CPU to the replies (Batsim waits), "
                  f"{after:4.2f} s after them (Batsim works); replies identical", flush=True)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--platform", type=Path, default=BENCH / "k8s_1000nodes.xml")
    ap.add_argument("--workload", type=Path, action="append",
                    help="repeatable (default: k8s_10k_jobs.json and k8s_10k_jobs_overload.json)")
    ap.add_argument("--batsim", default="double", help="Batsim command, or `double` (the default)")
    ap.add_argument("--batsim-log", action="store_true", help="Batsim logs every message (both sides)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--in-process", action="store_true", help="the adapter alone, fed its transcript")
    ap.add_argument("--pause", type=float, default=0.0002, help="seconds between messages (--in-process)")
    args = ap.parse_args()
    compile_package()
    workloads = args.workload or [BENCH / "k8s_10k_jobs.json", BENCH / "k8s_10k_jobs_overload.json"]
    extra = () if not args.batsim_log else ("-v", "information")
    print(f"Batsim: {' '.join(find_batsim(args.batsim))}; platform {args.platform.name}", flush=True)
    for workload in workloads:
        cfg = RunConfig(platform=args.platform, workload=workload, out=Path("."), batsim=args.batsim,
                        batsim_args=extra)  # fmt: skip
        if args.in_process:
            for _ in range(args.repeat):
                in_process(cfg, [0.0, args.pause])
            continue
        ratios = []
        for i in range(args.repeat):
            live, zero = pair(cfg)
            ratios.append(live["wall"] / zero["wall"])
            print(
                f"{workload.name} pair {i + 1}: batkube run {live['wall']:6.2f} s "
                f"(adapter cpu {live['adapter_cpu']:5.2f} s, Batsim cpu {live['batsim_cpu']:5.2f} s) | "
                f"replay {zero['wall']:6.2f} s (replayer cpu {zero['replayer_cpu']:4.2f} s, "
                f"Batsim cpu {zero['batsim_cpu']:5.2f} s) | ratio {ratios[-1]:.2f}x; schedules identical",
                flush=True,
            )
        print(f"{workload.name}: adapter overhead (median of {len(ratios)} pair ratio(s)) "
              f"{statistics.median(ratios):.2f}x", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
