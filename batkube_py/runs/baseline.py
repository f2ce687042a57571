"""A batch-system baseline as the decision process: pybatsim 3.2.1's EASY backfilling, beside Batsim.

pybatsim pins `pyzmq<23`, which no longer builds against today's Python, yet its schedulers run with
today's pyzmq; so it lives in a venv of its own under the cache (like the Go binaries `controlplane
build` manages), installed from the package registry without its dependencies and seeing this
environment's pyzmq, procset and sortedcontainers. A run writes what a batkube run writes for the jobs
(Batsim's out_jobs.csv and out_schedule.csv, summary.json), so `batkube compare` takes it as one more
group. There are no pods: EASY allocates Batsim's resources (one per host) directly.
"""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import sysconfig
import time
import venv
from pathlib import Path

from batkube_py.runs import RunError
from batkube_py.runs.batsim import find_batsim, stop_process

VERSION = "3.2.1"
SCHEDULERS = {"easy": "easyBackfill"}  # batkube's name → pybatsim's scheduler module
PINNED = ("docopt==0.6.2",)  # pybatsim's own dependency that this environment lacks
SHARED = ("zmq", "procset", "sortedcontainers")  # taken from this environment, not pinned


def cache_dir() -> Path:
    return Path(os.environ.get("BATKUBE_CACHE") or Path.home() / ".cache" / "batkube-py")


def venv_dir() -> Path:
    return cache_dir() / "baselines" / f"pybatsim-{VERSION}"


def _python(root: Path) -> Path:
    return root / "bin" / "python"


def build(log=print) -> Path:  # noqa: ANN001
    """The managed venv, created once (`batkube baseline build`); its python."""
    root = venv_dir()
    stamp = root / "batkube-ok"
    if stamp.is_file():
        return _python(root)
    missing = [m for m in SHARED if _importable(sys.executable, m) is False]
    if missing:
        raise RunError(f"pybatsim {VERSION} needs {', '.join(missing)} in batkube's environment: "
                       "pip install them")
    log(f"installing pybatsim {VERSION} (without its pyzmq<23 pin) into {root}")
    venv.EnvBuilder(clear=True, with_pip=True).create(root)
    # this environment's packages after the venv's own: pyzmq, procset, sortedcontainers
    ask = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = subprocess.run([str(_python(root)), "-c", ask], capture_output=True, text=True, check=True)

    paths = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    (Path(site.stdout.strip()) / "batkube-env.pth").write_text("".join(f"{p}\n" for p in paths))
    cmd = [str(_python(root)), "-m", "pip", "install", "-q", "--no-deps", f"pybatsim=={VERSION}", *PINNED]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RunError(f"installing pybatsim {VERSION} failed: {(proc.stderr or proc.stdout).strip()[-400:]}")
    for module in ("batsim.batsim", *(f"schedulers.{s}" for s in SCHEDULERS.values())):
        if not _importable(str(_python(root)), module):
            raise RunError(f"pybatsim {VERSION} installed in {root} but {module} does not import")
    stamp.write_text(VERSION + "\n")
    return _python(root)


def _importable(python: str, module: str) -> bool:
    return subprocess.run([python, "-c", f"import {module}"], capture_output=True).returncode == 0


def check_walltimes(workload: Path) -> None:
    """EASY reserves by walltimes: a job without one reaches it as -1 and its reservations mean nothing."""
    try:
        jobs = json.loads(Path(workload).read_text()).get("jobs", [])
    except (OSError, ValueError, AttributeError) as exc:
        raise RunError(f"{workload}: not a Batsim workload ({exc})") from None
    for job in jobs:
        wall = job.get("walltime") if isinstance(job, dict) else None
        if not (isinstance(wall, int | float) and wall > 0):
            raise RunError(f"{workload}: job {job.get('id') if isinstance(job, dict) else job!r}: field "
                           "'walltime': expected a positive number, EASY backfilling reserves by it "
                           "(swf-tools convert --walltime-factor F)")


def with_walltimes(workload: Path, factor: float, out: Path) -> Path:
    """A copy of the workload where each job without a walltime gets its delay x factor, rounded up to
    the millisecond; factor > 1, as Batsim kills a job whose walltime equals its run time at its end."""
    if not factor > 1:
        raise RunError(f"--walltime-factor must be above 1 (Batsim kills a job at its walltime), got "
                       f"{factor:g}")
    doc = json.loads(Path(workload).read_text())
    profiles = doc.get("profiles", {})
    for job in doc.get("jobs", []):
        if job.get("walltime") not in (None, -1):
            continue
        profile = profiles.get(job.get("profile"), {})
        if profile.get("type") != "delay":
            raise RunError(f"{workload}: job {job.get('id')!r}: field 'walltime': expected one, its "
                           "profile is not a delay to derive it from")
        job["walltime"] = math.ceil(float(profile["delay"]) * factor * 1000 - 1e-6) / 1000
    out.write_text(json.dumps(doc))
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(platform: Path, workload: Path, out: Path, scheduler: str = "easy", batsim: str | None = None,
        timeout: float | None = None, walltime_factor: float | None = None) -> dict:  # fmt: skip
    """Batsim and pybatsim's scheduler on one socket; summary.json says which decision process ran.
    With `walltime_factor`, jobs without a walltime get delay x factor (in a copy, out/workload.json)."""
    out.mkdir(parents=True, exist_ok=True)
    given = workload
    if walltime_factor is not None:
        workload = with_walltimes(workload, walltime_factor, out / "workload.json")
    check_walltimes(workload)
    python = build(log=lambda msg: sys.stderr.write(msg + "\n"))
    port = _free_port()
    sim = find_batsim(batsim)
    started = time.perf_counter()
    with (out / "pybatsim.log").open("wb") as plog, (out / "batsim.stderr").open("wb") as blog:
        sched = subprocess.Popen([str(python), "-m", "batsim.cmds.launcher", SCHEDULERS[scheduler],
                                  "-s", f"tcp://127.0.0.1:{port}", "-v", "warning"],
                                 stdout=plog, stderr=subprocess.STDOUT)  # fmt: skip
        sim_proc = subprocess.Popen([*sim, "-p", str(platform.resolve()), "-w", str(workload.resolve()), "-e",
                                     str((out / "out").resolve()), "-s", f"tcp://127.0.0.1:{port}", "-q"],
                                    stdout=subprocess.DEVNULL, stderr=blog)  # fmt: skip
        try:
            code = sim_proc.wait(timeout=timeout)
            sched_code = sched.wait(timeout=30)
        except subprocess.TimeoutExpired:
            raise RunError(f"the {scheduler} baseline did not finish within {timeout} s") from None
        finally:
            for proc in (sim_proc, sched):
                stop_process(proc)
    if code != 0 or sched_code != 0 or not (out / "out_jobs.csv").is_file():
        tail = (out / "pybatsim.log").read_text(errors="replace").strip().splitlines()[-3:]
        raise RunError(f"the {scheduler} baseline failed (Batsim exit {code}, pybatsim exit {sched_code}): "
                       f"{' | '.join(tail)}")
    simulator = "the Batsim 4.2.1 double" if sim[-1] == "batkube_py.batsim_double" else sim[0]
    summary = _summary(out, scheduler, simulator, time.perf_counter() - started)
    if walltime_factor is not None:
        summary["walltimes"] = (f"jobs of {given} without a walltime: delay x {walltime_factor:g} "
                                "(workload.json)")
        (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def _summary(out: Path, scheduler: str, simulator: str, wall: float) -> dict:
    from batkube_py.analysis.loading import read_jobs
    from batkube_py.analysis.metrics import job_metrics

    metrics = job_metrics(read_jobs(out / "out_jobs.csv"))
    summary = {
        "decision_process": f"pybatsim {VERSION} {SCHEDULERS[scheduler]}", "batsim": simulator,
        "wall_seconds": round(wall, 3),
        **{k: metrics[k] for k in ("makespan", "mean_waiting_time", "max_waiting_time", "jobs_total",
                                   "jobs_succeeded", "jobs_killed", "jobs_rejected")},
    }  # fmt: skip
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary
