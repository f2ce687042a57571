"""The real kube-scheduler 1.37.2 with `parallelism: 1` against the twin where filtering stops early:
the nodes rejected between the want-th and the (want+1)-th feasible node count as processed, which moves
nextStartNodeIndex, and with it the next pod's node (scheduler/filterorder.py)."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import numpy as np
from apiserver_support import DOUBLE, require_binaries, run_cli
from click.testing import CliRunner

from batkube_py.cli.app import main
from batkube_py.scheduler import filterorder

SERIAL = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nparallelism: 1\n"


def _nodes(out: Path) -> dict[str, str]:
    with open(out / "pods.csv") as f:
        return {r["job_id"]: r["node"] for r in csv.DictReader(f)}


def _twin(runner, tmp: Path, platform: Path, workload: Path, config: Path) -> dict[str, str]:
    args = ["run", "-p", str(platform), "-w", str(workload), "-o", str(tmp), "--batsim", str(DOUBLE),
            "--no-progress", "--scheduler-config", str(config)]  # fmt: skip
    result = runner.invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return _nodes(tmp)


def test_serial_rotation_on_150_nodes_matches_the_real_scheduler(tmp_path: Path, monkeypatch):
    """150 one-core nodes (numFeasibleNodesToFind 100) and one-core jobs every 3 s running 30-200 s:
    more than 100 nodes free, the busy ones scattered, so cycles stop early, and every pod ties (free
    nodes score alike): the heap root is the first feasible node from the start index, so each job's
    node follows the start index. Counting processed nodes only up to the want-th feasible one (the
    twin before 2026-11-27) places other jobs elsewhere."""
    require_binaries("v1.37.2")
    runner = CliRunner()
    platform = tmp_path / "p.xml"
    made = runner.invoke(main, ["platform", "-n", "150", "-c", "1", "-o", str(platform)])
    assert made.exit_code == 0, made.output
    rng = random.Random(5)
    durations = (30, 60, 100, 150, 200)
    jobs = [{"id": str(i), "subtime": 3 * i, "res": 1, "profile": f"d{rng.choice(durations)}"}
            for i in range(200)]  # fmt: skip
    profiles = {f"d{d}": {"type": "delay", "delay": d, "cpu": "1"} for d in durations}
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps({"nb_res": 150, "jobs": jobs, "profiles": profiles}))
    config = tmp_path / "serial.yaml"
    config.write_text(SERIAL)
    code, output, real = run_cli(tmp_path / "real", workload, "--scheduler-config", str(config),
                                 platform=platform)  # fmt: skip
    assert code == 0, output
    assert real["kubernetes_version"] == "v1.37.2" and real["jobs_succeeded"] == 200
    placed = _nodes(tmp_path / "real")
    assert _twin(runner, tmp_path / "twin", platform, workload, config) == placed

    def up_to_the_want_th(pos, n, want, parallelism, rng):
        return np.arange(want), int(pos[want - 1]) + 1, None

    monkeypatch.setattr(filterorder, "cut", up_to_the_want_th)
    old = _twin(runner, tmp_path / "old", platform, workload, config)
    assert sum(old[j] != placed[j] for j in placed) > 50
