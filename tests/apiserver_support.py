"""Shared helpers for the real-backend tests: binaries, a control plane, running the CLI.

The tests need etcd / kube-apiserver / kube-scheduler, built once by `batkube controlplane build`. On a
machine without them they skip, all with the same reason naming that command, so that a fresh clone's
`python -m pytest -q` passes; CI (CI=true, or BATKUBE_REQUIRE_CONTROLPLANE=1 which .ci/run sets) turns
those skips into failures, so the real-backend tests cannot silently stop running there.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from shared_support import need

from batkube_py.cli.app import main
from batkube_py.controlplane import build
from batkube_py.controlplane.manager import ControlPlane

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DOUBLE = ROOT / "tests" / "batsim_double" / "batsim"
GRAPHENE = SHARED / "reference" / "platforms" / "platform_graphene_16nodes.xml"
WORKLOADS = SHARED / "reference" / "workloads"


MISSING = (
    "etcd/kube-apiserver/kube-scheduler not built: run `batkube controlplane build` "
    "(Go >= 1.26, once, cached) to run the real-backend tests"
)


def controlplane_required() -> bool:
    """CI must run the real-backend tests: there a missing control plane is a failure, not a skip."""
    return os.environ.get("BATKUBE_REQUIRE_CONTROLPLANE") == "1" or os.environ.get("CI") == "true"


def require_binaries(version: str | None = None) -> None:
    if (build.find_binaries(version) if version else build.find_binaries()) is None:
        missing = MISSING + (f" (`--kube-version {version}`)" if version else "")
        if controlplane_required():
            pytest.fail(missing + " (required here: CI=true or BATKUBE_REQUIRE_CONTROLPLANE=1)")
        pytest.skip(missing)


def require_kueue() -> None:
    """Kueue's controller (built by `batkube controlplane build` beside the control plane)."""
    from batkube_py.controlplane.kueuebuild import find_kueue

    if find_kueue() is None:
        missing = "Kueue's controller not built: run `batkube controlplane build` (Go >= 1.26, once, cached)"
        if controlplane_required():
            pytest.fail(missing + " (required here: CI=true or BATKUBE_REQUIRE_CONTROLPLANE=1)")
        pytest.skip(missing)


def start(tmp: Path, scheduler_config: Path | None = None, version: str | None = None) -> ControlPlane:
    """A control plane in its own temp dir: pytest prunes old basetemp dirs (pytest-of-USER/pytest-N) when
    another pytest starts, which would delete a running etcd's data under tmp_path."""
    require_binaries(version)
    cp = ControlPlane(Path(tempfile.mkdtemp(prefix="batkube-cp-", dir=os.environ.get("BATKUBE_TEST_TMP"))))
    cp.up(scheduler_config, version=version)
    (tmp / "controlplane-dir").parent.mkdir(parents=True, exist_ok=True)
    (tmp / "controlplane-dir").write_text(str(cp.dir))
    return cp


def run_cli(out: Path, workload: Path, *extra: str, platform: Path = GRAPHENE) -> tuple[int, str, dict]:
    need(platform, workload)
    args = [
        "run",
        "-p",
        str(platform),
        "-w",
        str(workload),
        "-o",
        str(out),
        "--batsim",
        str(DOUBLE),
        "--no-progress",
        "--backend",
        "apiserver",
        *extra,
    ]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else {}
    return result.exit_code, result.output, summary


def workload(path: Path, jobs: int, interval: float, schedulers: list[str], delay: float = 170) -> Path:
    """Delay jobs cycling through `schedulers` (one profile per schedulerName)."""
    profiles = {
        f"p{i}": {"type": "delay", "delay": delay, "cpu": "1", "scheduler": s}
        for i, s in enumerate(schedulers)
    }
    doc = {
        "nb_res": 1,
        "profiles": profiles,
        "jobs": [
            {
                "id": str(j + 1),
                "subtime": j * interval,
                "walltime": 1000,
                "res": 1,
                "profile": f"p{j % len(schedulers)}",
            }
            for j in range(jobs)
        ],
    }
    path.write_text(json.dumps(doc))
    return path
