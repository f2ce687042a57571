"""Wall time and fidelity of the real kube-scheduler backend (prints figures; not a test).

Burst-200 and spaced-200 on graphene-16 and on platforms/cluster_16x1core.xml, and KIT 10 h on 1 node
x 6 cores, with the default queue policy (kube-scheduler 1.37.2's own queue on the simulated clock) and
the paced policy (kube-scheduler tried when the twin's queue pops a pod): wall seconds of the run with
the control plane already up (target <= 20 s for the 200-job cases), the figures of the embedded twin
beside it, and the parity mismatches (placement / timing). `--10k` adds k8s_10k_jobs.json on
k8s_1000nodes.xml (../shared/bench) with the queue policy (target <= 60 s). Optionally the older
policies: `--settle`, and Batkube-style per-step `--timeouts 0.02,0.05` (spaced on graphene).

    python benchmarks/apiserver_sync.py [--10k] [--settle] [--timeouts 0.02,0.05]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _runs import BENCH, ROOT, SHARED, batkube_run

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
    ap.add_argument("--settle", action="store_true", help="also the settle policy")
    ap.add_argument("--10k", dest="big", action="store_true", help="also 10,000 jobs on 1,000 nodes")
    ap.add_argument("--timeouts", default="", help="also Batkube's timeout policy, e.g. 0.02,0.05")
    args = ap.parse_args()
    from batkube_py.controlplane.manager import ControlPlane

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        cp = ControlPlane(t / "cp")
        st = cp.up()
        version = st.versions.get("kubernetes")
        real = ("--backend", "apiserver", "--controlplane-dir", str(cp.dir))
        try:
            for k, (name, platform, workload) in enumerate(CASES):
                twin = batkube_run(t / f"twin{k}", platform, workload)
                q = batkube_run(t / f"queue{k}", platform, workload, *real)
                rows.append((name, "queue (default)", q, twin))
                p = batkube_run(t / f"paced{k}", platform, workload, *real, "--sync", "paced")
                rows.append((name, "paced", p, twin))
                if args.settle:
                    s = batkube_run(t / f"settle{k}", platform, workload, *real, "--sync", "settle")
                    rows.append((name, "settle", s, twin))
            for x in [float(v) for v in args.timeouts.split(",") if v]:
                _, platform, workload = CASES[1]
                s = batkube_run(
                    t / f"t{x}", platform, workload, *real, "--sync", "timeout", "--timeout-value", str(x)
                )
                rows.append((CASES[1][0], f"timeout {x * 1000:.0f} ms", s, rows[2][3]))
            if args.big:
                platform, workload = BENCH / "k8s_1000nodes.xml", BENCH / "k8s_10k_jobs.json"
                twin = batkube_run(t / "twin10k", platform, workload)
                rows.append(("10k jobs, 1,000 nodes", "queue (default)",
                             batkube_run(t / "queue10k", platform, workload, *real), twin))  # fmt: skip
        finally:
            cp.down()
    print(f"real kube-scheduler {version} vs the embedded twin, Batsim double, control plane up")
    head = ("case", "policy", "wall s", "makespan", "twin", "mean wait", "twin", "mismatch", "timing")
    print("{:28} {:16} {:>7} {:>10} {:>10} {:>10} {:>10} {:>8} {:>7}".format(*head))
    for name, policy, s, twin in rows:
        timing = s.get("parity_timing_mismatches", "-")
        placement = s.get("parity_mismatches", "-")
        if timing != "-":
            placement -= timing
        print(
            f"{name:28} {policy:16} {s['wall_seconds']:7.1f} {s['makespan']:10.2f} {twin['makespan']:10.2f} "
            f"{s['mean_waiting_time']:10.4f} {twin['mean_waiting_time']:10.4f} {placement:>8} {timing:>7}"
        )


if __name__ == "__main__":
    main()
