"""Ctrl-C in the middle of a simulation stops `batkube run` and `batkube serve` within seconds, with
"interrupted", Batsim stopped and summary.json kept (issue 37: on the real backend a run went on for
2.5 minutes after Ctrl-C, creating and then deleting the thousands of pods queued in the background).

The signal goes to the command's whole process group, as a terminal's Ctrl-C does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from apiserver_support import require_binaries

from batkube_py.inputs import platforms, workloads

ROOT = Path(__file__).resolve().parents[1]
QUICK = 20.0  # s from Ctrl-C to exit: the real backend also stops its own control plane (1.5-10 s loaded)


def _inputs(tmp: Path, jobs: int, interval: float) -> tuple[Path, Path]:
    p, w = tmp / "p.xml", tmp / "w.json"
    p.write_text(platforms.cluster_platform(16, "1", "4Gi"))
    w.write_text(json.dumps(workloads.delay_jobs(jobs, 100, interval, cpu="1")))
    return p, w


def _start(argv: list[str], cwd: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "batkube_py.cli", *argv], cwd=cwd, env=env, start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # a shell may have ignored it
    )  # fmt: skip


def _until(what: str, ready: Callable[[], bool], proc: subprocess.Popen, limit: float) -> None:
    end = time.monotonic() + limit
    while not ready():
        if proc.poll() is not None or time.monotonic() > end:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"never {what}: {proc.communicate()[1][-2000:]}")
        time.sleep(0.2)


def _ctrl_c(proc: subprocess.Popen) -> tuple[float, str]:
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    return time.monotonic() - t0, err


def _rows(path: Path) -> int:
    return len(path.read_text().splitlines()) - 1 if path.exists() else 0


def _stopped_and_kept(out: Path, took: float, err: str, code: int) -> dict:
    assert took < QUICK, f"{took:.1f} s from Ctrl-C to exit"
    assert code == 1 and "Error: interrupted — the run did not finish" in err, err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["error"] == "interrupted" and summary["jobs_unfinished"] > 0
    return summary


def test_run_stops_within_seconds_on_ctrl_c(tmp_path: Path) -> None:
    p, w = _inputs(tmp_path, 5000, 1)
    out = tmp_path / "run"
    proc = _start(["run", "-p", str(p), "-w", str(w), "-o", str(out), "--batsim", "double", "--no-progress"],
                  tmp_path)  # fmt: skip
    _until("mid-simulation", lambda: _rows(out / "pods.csv") >= 20, proc, 120)
    took, err = _ctrl_c(proc)
    summary = _stopped_and_kept(out, took, err, proc.returncode)
    assert summary["batsim_exit_code"] is not None  # stopped, and reaped


def test_serve_stops_within_seconds_on_ctrl_c(tmp_path: Path) -> None:
    p, w = _inputs(tmp_path, 5000, 1)
    out, sock = tmp_path / "serve", f"ipc://{tmp_path}/s.sock"
    proc = _start(["serve", "--socket", sock, "-o", str(out)], tmp_path)
    _until("listening", lambda: Path(sock[6:]).exists(), proc, 60)
    (tmp_path / "batsim").mkdir()
    batsim = subprocess.Popen(
        [sys.executable, "-m", "batkube_py.batsim_double", "-p", str(p), "-w", str(w), "-e",
         str(tmp_path / "batsim" / "out"), "-s", sock, "--enable-compute-sharing", "--enable-dynamic-jobs",
         "--acknowledge-dynamic-jobs", "-q"], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        _until("mid-simulation", lambda: _rows(out / "pods.csv") >= 20, proc, 120)
        took, err = _ctrl_c(proc)
        _stopped_and_kept(out, took, err, proc.returncode)
    finally:
        batsim.kill()
        batsim.wait()


def test_real_backend_run_stops_within_seconds_on_ctrl_c(tmp_path: Path) -> None:
    """A burst: thousands of pod creates queued in the background when Ctrl-C comes (a private control
    plane, started and stopped by the run)."""
    require_binaries()
    p, w = _inputs(tmp_path, 3000, 0)
    out = tmp_path / "real"
    proc = _start(["run", "-p", str(p), "-w", str(w), "-o", str(out), "--batsim", "double", "--no-progress",
                   "--backend", "apiserver"], tmp_path)  # fmt: skip
    log = out / "batkube.log"
    _until("creating pods", lambda: log.exists() and "cluster of 16 nodes" in log.read_text(), proc, 180)
    time.sleep(3)  # the 3,000 creates are queued and some are done
    took, err = _ctrl_c(proc)
    _stopped_and_kept(out, took, err, proc.returncode)
    assert "left to the run's own control plane" in log.read_text()


def _ours(directory: Path) -> list[str]:
    """Processes whose command line names `directory` (a control plane started there)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if proc.name.isdigit() and f"={directory}/" in argv:  # etcd's --data-dir, the apiserver's certs
            found.append(f"{proc.name}: {argv[:120]}")
    return found


def test_ctrl_c_while_the_run_starts_its_control_plane_leaves_nothing_running(tmp_path: Path) -> None:
    require_binaries()
    p, w = _inputs(tmp_path, 10, 1)
    out = tmp_path / "starting"
    proc = _start(["run", "-p", str(p), "-w", str(w), "-o", str(out), "--batsim", "double", "--no-progress",
                   "--backend", "apiserver"], tmp_path)  # fmt: skip
    _until("starting etcd", lambda: (out / "controlplane" / "etcd.log").exists(), proc, 120)
    took, err = _ctrl_c(proc)
    assert took < QUICK and proc.returncode != 0, err
    time.sleep(0.5)
    left = _ours(out / "controlplane")
    for line in left:  # not left behind by a failing test either
        os.kill(int(line.split(":")[0]), signal.SIGKILL)
    assert left == []
