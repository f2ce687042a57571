"""Wall time and fidelity of the real kube-scheduler backend (prints figures; not a test).

Burst-200 and spaced-200 on graphene-16 and on platforms/cluster_16x1core.xml, and KIT 10 h on 1 node
x 6 cores, with the default paced policy (kube-scheduler tried when the twin's queue on the simulated
clock pops a pod): wall seconds of the run with the control plane already up (target <= 20 s for the
four 200-job cases), and the figures of the embedded twin beside it, which must be equal. Optionally the
older policies: `--settle`, and Batkube-style per-step `--timeouts 0.02,0.05` (spaced on graphene).

    python benchmarks/apiserver_sync.py [--settle] [--timeouts 0.02,0.05]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _runs import ROOT, SHARED, batkube_run

REF = SHARED / "reference"
GRAPHENE = REF / "platforms" / "platform_graphene_16nodes.xml"
TOUR = ROOT / "platforms" / "cluster_16x1core.xml"
BURST, SPACED = REF / "workloads" / "200_delay170.json", REF / "workloads" / "spaced_200_delay170.json"
CASES = [
    ("burst, graphene-16", GRAPHENE, BURST),
    ("spaced, graphene-16", GRAPHENE, SPACED),
    ("burst, cluster_16x1core", TOUR, BURST),
    ("spaced, cluster_16x1core", TOUR, SPACED),
    (
        "KIT 10 h, 1 node x 6 cores",
        REF / "platforms" / "1node_6core.xml",
        REF / "workloads" / "KIT_10h_80.json",
    ),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--settle", action="store_true", help="also the settle policy (recreating pods)")
    ap.add_argument("--timeouts", default="", help="also Batkube's timeout policy, e.g. 0.02,0.05")
    args = ap.parse_args()
    from batkube_py.controlplane.manager import ControlPlane

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        cp = ControlPlane(t / "cp")
        cp.up()
        real = ("--backend", "apiserver", "--controlplane-dir", str(cp.dir))
        try:
            for k, (name, platform, workload) in enumerate(CASES):
                twin = batkube_run(t / f"twin{k}", platform, workload, "--kube-version", "1.32")
                rows.append(
                    (name, "paced (default)", batkube_run(t / f"paced{k}", platform, workload, *real), twin)
                )
                if args.settle:
                    s = batkube_run(t / f"settle{k}", platform, workload, *real, "--sync", "settle")
                    rows.append((name, "settle", s, twin))
            for x in [float(v) for v in args.timeouts.split(",") if v]:
                _, platform, workload = CASES[1]
                s = batkube_run(
                    t / f"t{x}", platform, workload, *real, "--sync", "timeout", "--timeout-value", str(x)
                )
                rows.append((CASES[1][0], f"timeout {x * 1000:.0f} ms", s, rows[2][3]))
        finally:
            cp.down()
    print("real kube-scheduler 1.32.6 vs the embedded twin, Batsim double, control plane up")
    head = ("case", "policy", "wall s", "makespan", "twin", "mean wait", "twin", "mismatch")
    print("{:28} {:16} {:>7} {:>10} {:>10} {:>10} {:>10} {:>8}".format(*head))
    for name, policy, s, twin in rows:
        print(
            f"{name:28} {policy:16} {s['wall_seconds']:7.1f} {s['makespan']:10.2f} {twin['makespan']:10.2f} "
            f"{s['mean_waiting_time']:10.4f} {twin['mean_waiting_time']:10.4f} "
            f"{s.get('parity_mismatches', '-'):>8}"
        )


if __name__ == "__main__":
    main()
