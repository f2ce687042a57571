#!/usr/bin/env python3
"""Communicating (ptask) jobs vs delay jobs on the Batsim double: what the L07 model costs.

One workload of N jobs on a generated rack platform (`batkube platform --racks`), twice: with
parallel_homogeneous profiles (computation and communication between the job's hosts, contention on the
links) and with delay profiles of the same isolated durations. Two drivers:

- `fcfs`: an in-process FCFS decision process (lowest free hosts, so multi-host jobs cross racks when
  they must) talks to the double directly; jobs use 1 to 8 hosts, so this is where communication happens;
- `batkube`: `batkube run` end to end (adapter, embedded scheduler, the double over ZeroMQ); jobs are
  one-host until the adapter runs gangs (then pass --max-res), so they compute but do not communicate.

Prints wall seconds per run and the ratio ptask / delay (the issue's target: within 3x).

    python benchmarks/ptask_bench.py [--jobs 1000] [--hosts 128] [--racks 8] [--driver fcfs|batkube|both]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from _runs import batkube_run, compile_package

from batkube_py.batsim_double import BatsimDouble
from batkube_py.batsim_double.simplatform import Platform
from batkube_py.inputs.commworkload import alone_on
from batkube_py.inputs.platforms import rack_platform


def alone(platform: Platform, res: int, cpu: float, com: float) -> float:
    """How long the ptask lasts alone on the platform's first `res` hosts (one rack): its delay twin."""
    return alone_on(platform, [platform.hosts[f"node-{i}"] for i in range(res)], cpu, com)


def workload(jobs: int, max_res: int, ptask: bool, seed: int, platform: Platform) -> dict:
    """Poisson arrivals (mean 0.4 s apart) of jobs on 1-8 hosts; the delay twin of a ptask job lasts what
    the ptask lasts alone in one rack, so both runs hold the hosts about as long."""
    rng = random.Random(seed)
    out, profiles, t = [], {}, 0.0
    for i in range(jobs):
        t += rng.expovariate(1 / 0.4)
        res = rng.choice([r for r in (1, 2, 4, 8) if r <= max_res])
        cpu = rng.choice((2e9, 5e9, 10e9, 20e9))
        com = rng.choice((1e7, 1e8, 5e8))
        name = f"p{i}"
        if ptask:
            profiles[name] = {"type": "parallel_homogeneous", "cpu": cpu, "com": com, "cpu_req": "1"}
        else:
            profiles[name] = {"type": "delay", "delay": round(alone(platform, res, cpu, com), 6), "cpu": "1"}
        out.append({"id": str(i), "subtime": round(t, 3), "res": res, "profile": name, "walltime": 1e6})
    return {"nb_res": 1, "jobs": out, "profiles": profiles}


def fcfs(platform: Path, wl: Path) -> tuple[float, int, float]:
    """(wall seconds, messages, makespan) of an FCFS run against the double, in process."""
    start = time.perf_counter()
    double = BatsimDouble(str(platform), [str(wl)], compute_sharing=False)
    text = double.start()
    begins = json.loads(text)["events"][0]["data"]
    free = sorted(r["id"] for r in begins["compute_resources"])
    queue: list[tuple[str, int]] = []
    used: dict[str, list[int]] = {}
    messages = 1
    while text is not None:
        msg = json.loads(text)
        now, out = msg["now"], []
        for ev in msg["events"]:
            if ev["type"] == "JOB_SUBMITTED":
                queue.append((ev["data"]["job_id"], ev["data"]["job"]["res"]))
            elif ev["type"] == "JOB_COMPLETED":
                free = sorted(free + used.pop(ev["data"]["job_id"]))
        while queue and queue[0][1] <= len(free):
            jid, res = queue.pop(0)
            used[jid], free = free[:res], free[res:]
            alloc = " ".join(map(str, used[jid]))
            out.append({"timestamp": now, "type": "EXECUTE_JOB", "data": {"job_id": jid, "alloc": alloc}})
        text = double.on_reply(json.dumps({"now": now, "events": out}))
        messages += 1
    assert double.exit_code == 0, double.outcome
    return time.perf_counter() - start, messages, double.now


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--hosts", type=int, default=128)
    ap.add_argument("--racks", type=int, default=8)
    ap.add_argument("--max-res", type=int, default=8, help="largest job of the fcfs driver")
    ap.add_argument("--batkube-max-res", type=int, default=1, help="largest job of the batkube driver")
    ap.add_argument("--driver", choices=("fcfs", "batkube", "both"), default="both")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    compile_package()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        platform = d / "racks.xml"
        platform.write_text(rack_platform(args.racks, args.hosts, "4", "16Gi", backbone_bw="1.25GBps"))
        print(f"Batsim double (Batsim 4.2.1 / SimGrid 3.32 re-creation), embedded kube-scheduler twin "
              f"(Kubernetes 1.37.2); {args.jobs} jobs on {args.hosts} hosts in {args.racks} racks")
        drivers = ("fcfs", "batkube") if args.driver == "both" else (args.driver,)
        for driver in drivers:
            walls = {}
            for kind in ("delay", "ptask"):
                max_res = args.max_res if driver == "fcfs" else args.batkube_max_res
                wl = d / f"{driver}_{kind}.json"
                spec = workload(args.jobs, max_res, kind == "ptask", args.seed, Platform(str(platform)))
                wl.write_text(json.dumps(spec))
                if driver == "fcfs":
                    wall, messages, makespan = fcfs(platform, wl)
                    extra = f"{messages} messages, makespan {makespan:.1f} s"
                else:
                    start = time.perf_counter()
                    summary = batkube_run(d / f"run_{kind}", platform, wl)
                    wall = time.perf_counter() - start
                    extra = f"makespan {summary.get('makespan')}, succeeded {summary.get('jobs_succeeded')}"
                walls[kind] = wall
                print(f"{driver:8s} {kind:6s} res<={max_res}: wall {wall:7.2f} s   ({extra})", flush=True)
            print(f"{driver:8s} ptask / delay = {walls['ptask'] / walls['delay']:.2f}x", flush=True)


if __name__ == "__main__":
    main()
