"""Parity report: the embedded twin vs the real kube-scheduler 1.32 on the same inputs (prints a table).

Workloads: the thesis's burst and spaced on graphene-16, the realistic KIT 10 h on 1 node x 6 cores, and
a slice of the 10k-job benchmark on its 1,000-node platform. Placements are compared per job where
they are deterministic (a single feasible node, or a platform of one node); elsewhere upstream breaks
score ties at random (KUBE_SCHEDULER.md §4.5), so only the aggregates are comparable.

    python benchmarks/apiserver_parity.py [--slice 2000]
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
from pathlib import Path

from _runs import SHARED, batkube_run

REF = SHARED / "reference"


def run(out: Path, platform: Path, workload: Path, *extra: str) -> tuple[dict, dict[str, tuple[str, str]]]:
    summary = batkube_run(out, platform, workload, *extra)
    with open(out / "pods.csv") as f:
        rows = {r["job_id"]: (r["node"], r["bind_time"]) for r in csv.DictReader(f)}
    return summary, rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--slice", type=int, default=2000, help="first N jobs of the 10k benchmark workload")
    args = ap.parse_args()
    from batkube_py.controlplane.manager import ControlPlane

    with tempfile.TemporaryDirectory() as tmp:
        tmpd = Path(tmp)
        bench = json.loads((SHARED / "bench" / "k8s_10k_jobs.json").read_text())
        bench["jobs"] = bench["jobs"][: args.slice]
        (tmpd / "slice.json").write_text(json.dumps(bench))
        cases = [
            (
                "burst",
                REF / "platforms" / "platform_graphene_16nodes.xml",
                REF / "workloads" / "200_delay170.json",
            ),
            (
                "spaced",
                REF / "platforms" / "platform_graphene_16nodes.xml",
                REF / "workloads" / "spaced_200_delay170.json",
            ),
            ("KIT 10h", REF / "platforms" / "1node_6core.xml", REF / "workloads" / "KIT_10h_80.json"),
            (
                f"bench {args.slice} jobs / 1000 nodes",
                SHARED / "bench" / "k8s_1000nodes.xml",
                tmpd / "slice.json",
            ),
        ]
        cp = ControlPlane(tmpd / "cp")
        cp.up()
        lines = []
        try:
            for name, platform, wl in cases:
                emb, erows = run(tmpd / f"e-{len(lines)}", platform, wl, "--kube-version", "1.32")
                real, rrows = run(
                    tmpd / f"r-{len(lines)}",
                    platform,
                    wl,
                    "--backend",
                    "apiserver",
                    "--controlplane-dir",
                    str(cp.dir),
                )
                same_bind = sum(erows[j][1] == rrows.get(j, ("", ""))[1] for j in erows)
                same_node = sum(erows[j][0] == rrows.get(j, ("", ""))[0] for j in erows)
                lines.append((name, emb, real, same_bind, same_node, len(erows)))
        finally:
            cp.down()
    print(
        f"{'workload':28} {'embedded makespan/wait':>24} {'kube-scheduler makespan/wait':>30} "
        f"{'same bind t':>11} {'same node':>9} {'wall e/r s':>12}"
    )
    for name, e, r, sb, sn, n in lines:
        print(
            f"{name:28} {e['makespan']:12.1f}/{e['mean_waiting_time']:<11.2f} "
            f"{r['makespan']:15.1f}/{r['mean_waiting_time']:<14.2f} {sb:5d}/{n:<5d} {sn:4d}/{n:<4d} "
            f"{e['wall_seconds']:5.1f}/{r['wall_seconds']:<6.1f}"
            + (f"  error: {r['error'] or e['error']}" if r["error"] or e["error"] else "")
        )


if __name__ == "__main__":
    main()
