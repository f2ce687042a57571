"""Wall time of `batkube analyze` on a synthetic 100k-job batkube-py run directory.

Usage: python benchmarks/analysis_bench.py [--jobs 100000] [--nodes 1000] [--no-figures] [--keep]
The run is a greedy placement with some deliberate over-allocation, written in the run-directory format
(out_jobs.csv, pods.csv, nodes.csv, decisions.jsonl) to a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from click.testing import CliRunner

from batkube_py.analysis.commands import analyze


def make_run(root: Path, n_jobs: int, n_nodes: int, seed: int = 42) -> None:
    rng = np.random.default_rng(seed)
    submit = np.cumsum(rng.exponential(0.05, n_jobs))
    delay = rng.uniform(5, 50, n_jobs).round(3)
    wait = rng.exponential(20.0, n_jobs).round(6)
    start = submit + wait
    finish = start + delay
    rejected = rng.random(n_jobs) < 0.01
    node = rng.integers(0, n_nodes, n_jobs)
    cpu = rng.choice([0.5, 1.0, 2.0], n_jobs)
    ids = np.arange(n_jobs).astype(str)
    f = lambda a: np.where(rejected, "", np.char.mod("%f", a))  # noqa: E731
    jobs = pd.DataFrame(
        {
            "job_id": ids,
            "workload_name": "w0",
            "profile": "delay",
            "submission_time": np.char.mod("%f", submit),
            "requested_number_of_resources": 1,
            "requested_time": "-1.000000",
            "success": np.where(rejected, 0, 1),
            "final_state": np.where(rejected, "REJECTED", "COMPLETED_SUCCESSFULLY"),
            "starting_time": f(start),
            "execution_time": f(delay),
            "finish_time": f(finish),
            "waiting_time": f(wait),
            "turnaround_time": f(finish - submit),
            "stretch": f((finish - submit) / delay),
            "allocated_resources": np.where(rejected, "", node.astype(str)),
            "consumed_energy": np.where(rejected, "", "-1.000000"),
            "metadata": '""',
        }
    )
    jobs.to_csv(root / "out_jobs.csv", index=False, quoting=3)
    names = np.char.add("node-", np.arange(n_nodes).astype(str))
    pd.DataFrame(
        {"node": names, "resource_id": np.arange(n_nodes), "cpu": 4.0, "memory": 8 * 2**30, "pods": 110}
    ).to_csv(root / "nodes.csv", index=False)
    pd.DataFrame(
        {
            "job_id": np.char.add("w0!", ids),
            "pod": np.char.add("w0-", ids),
            "node": np.where(rejected, "", names[node]),
            "resource_id": np.where(rejected, "", node.astype(str)),
            "cpu_request": cpu,
            "memory_request": "",
            "priority": 0,
            "scheduler": "default",
            "submit_time": submit,
            "bind_time": np.where(rejected, np.nan, start),
            "finish_time": np.where(rejected, np.nan, finish),
            "state": np.where(rejected, "Rejected", "Succeeded"),
            "reason": "",
        }
    ).to_csv(root / "pods.csv", index=False)
    with (root / "decisions.jsonl").open("w") as fh:
        for i in range(0, n_jobs, 10):
            fh.write(
                json.dumps(
                    {
                        "time": float(submit[i]),
                        "pod": f"w0-{i}",
                        "job_id": f"w0!{i}",
                        "result": "unschedulable",
                        "node": None,
                        "reasons": {"Insufficient cpu": int(n_nodes * 0.9)},
                    }
                )
                + "\n"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--no-figures", action="store_true")
    parser.add_argument("--keep", action="store_true", help="print and keep the temporary directory")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="batkube-analysis-bench-"))
    t = time.perf_counter()
    make_run(tmp, args.jobs, args.nodes)
    print(f"generated {args.jobs} jobs on {args.nodes} nodes in {time.perf_counter() - t:.1f} s")
    argv = [str(tmp), "-q"] + (["--no-figures"] if args.no_figures else [])
    t = time.perf_counter()
    result = CliRunner().invoke(analyze, argv)
    wall = time.perf_counter() - t
    if result.exit_code != 0:
        raise SystemExit(f"analyze failed: {result.output}{result.exception!r}")
    metrics = json.loads((tmp / "analysis" / "metrics.json").read_text())
    print(f"analyze wall time: {wall:.2f} s (figures: {not args.no_figures})")
    print(
        f"makespan {metrics['makespan']:.1f}  mean wait {metrics['mean_waiting_time']:.1f}  "
        f"cpu utilisation {metrics['cpu_utilisation']:.3f}  "
        f"over-allocations {metrics['cpu_over_allocations']}"
    )
    if args.keep:
        print(f"kept {tmp}")
    else:
        import shutil

        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
