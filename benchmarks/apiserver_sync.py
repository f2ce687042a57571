"""Wall time and fidelity of the sync policies with the real kube-scheduler (prints figures; not a test).

The thesis's sweep redone: spaced-200 on graphene-16 with the default settle policy, and with
Batkube-style per-step timeouts, against the ideal 2280 / 57.6.

    python benchmarks/apiserver_sync.py [--timeouts 0.02,0.05] [--workload burst|spaced]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _runs import SHARED, batkube_run

REF = SHARED / "reference"
WORKLOADS = {
    "spaced": ("spaced_200_delay170.json", 2280.0, 57.6),
    "burst": ("200_delay170.json", 2210.0, 979.2),
}


def run(cp: Path, out: Path, wl: str, *extra: str) -> dict:
    platform = REF / "platforms" / "platform_graphene_16nodes.xml"
    return batkube_run(out, platform, REF / "workloads" / wl, "--backend", "apiserver",
                       "--controlplane-dir", str(cp), *extra)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", choices=sorted(WORKLOADS), default="spaced")
    ap.add_argument("--timeouts", default="0.02,0.05")
    ap.add_argument("--with-wait", action="store_true", help="also --backoff wait (minutes)")
    args = ap.parse_args()
    wl, makespan, wait = WORKLOADS[args.workload]
    from batkube_py.controlplane.manager import ControlPlane

    with tempfile.TemporaryDirectory() as tmp:
        cp = ControlPlane(Path(tmp) / "cp")
        cp.up()
        try:
            rows = [("settle (default)", run(cp.dir, Path(tmp) / "settle", wl))]
            if args.with_wait:
                rows.append(
                    ("settle, --backoff wait", run(cp.dir, Path(tmp) / "wait", wl, "--backoff", "wait"))
                )
            for t in [float(x) for x in args.timeouts.split(",") if x]:
                s = run(cp.dir, Path(tmp) / f"t{t}", wl, "--sync", "timeout", "--timeout-value", str(t))
                rows.append((f"timeout {t * 1000:.0f} ms (Batkube)", s))
        finally:
            cp.down()
    print(f"{args.workload}-200 on graphene-16, real kube-scheduler; ideal {makespan} / mean wait {wait}")
    print(
        f"{'policy':28} {'wall s':>7} {'makespan':>9} {'err %':>7} {'mean wait':>9} {'err %':>7} "
        f"{'done':>5} {'over':>4}"
    )
    for name, s in rows:
        print(
            f"{name:28} {s['wall_seconds']:7.1f} {s['makespan']:9.1f} "
            f"{100 * (s['makespan'] / makespan - 1):7.2f} "
            f"{s['mean_waiting_time']:9.1f} {100 * (s['mean_waiting_time'] / wait - 1):7.2f} "
            f"{s['jobs_succeeded']:5d} {s['over_allocations']:4d}"
        )


if __name__ == "__main__":
    main()
