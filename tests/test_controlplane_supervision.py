"""The control plane's supervision and its one-run-at-a-time lease, on stand-in processes (no binaries):
the real components are exercised by tests/test_apiserver_faults.py."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from batkube_py.controlplane import lease, supervisor
from batkube_py.controlplane.manager import COMPONENTS, ControlPlane, ControlPlaneError, State


class StandIn(ControlPlane):
    """Each component is a sleeping Python whose command line names the directory, as the real ones do."""

    fail_next: set[str] = set()

    def start(self, name: str, st: State, timeout: float = 60.0) -> None:
        if name in self.fail_next:
            self.fail_next.discard(name)
            raise ControlPlaneError(f"{name} exited during start-up")
        self._start(st, name, [sys.executable, "-c", "import time; time.sleep(600)", str(self.dir), name])


def _plane(tmp_path: Path) -> StandIn:
    cp = StandIn(tmp_path / "cp")
    cp.dir.mkdir()
    st = State(dir=cp.dir, kubeconfig=cp.dir / "kubeconfig", server="", etcd_port=1, apiserver_port=2,
               scheduler_port=3)  # fmt: skip
    cp._save(st)
    for name in COMPONENTS:
        cp.start(name, st)
    return cp


def _wait(cond, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_supervisor_restarts_what_exits_keeps_logs_and_leaves_stopped_or_paused_ones(tmp_path, monkeypatch):
    monkeypatch.setattr(supervisor, "FIRST_BACKOFF", 0.2)
    cp = _plane(tmp_path)
    sup = supervisor.Supervisor(cp)
    try:
        first = cp.state().pids["kube-apiserver"]
        (cp.dir / "kube-apiserver.log").write_text("the first start's log\n")
        os.kill(first, signal.SIGKILL)
        _wait(lambda: not cp._is_alive(first))
        cp.fail_next = {"kube-apiserver"}  # the first restart fails: retried after the backoff
        assert sup.step()
        assert cp.state().pids["kube-apiserver"] == first
        time.sleep(0.25)
        assert sup.step()
        st = cp.state()
        assert st.pids["kube-apiserver"] != first and cp._is_alive(st.pids["kube-apiserver"])
        assert st.starts["kube-apiserver"] == 2
        assert (cp.dir / "kube-apiserver.log.1").read_text() == "the first start's log\n"
        assert cp.status()["restarts"] == {"kube-apiserver": 1}
        # stopped on purpose: left down; paused (SIGSTOP): left alone, and named by diagnose
        cp.stop("kube-scheduler")
        etcd = st.pids["etcd"]
        os.kill(etcd, signal.SIGSTOP)
        try:
            _wait(lambda: supervisor.proc_state(etcd) == "T")
            for _ in range(3):
                assert sup.step()
            st = cp.state()
            assert "kube-scheduler" not in st.pids and st.pids["etcd"] == etcd
            assert supervisor.diagnose(cp) == (
                "etcd: stopped (SIGSTOP), kube-scheduler: exited (no supervisor restarts it)"
            )
        finally:
            os.kill(etcd, signal.SIGCONT)
        cp.start("kube-scheduler", st)
        assert "kube-scheduler" not in cp.state().held
    finally:
        cp.down(remove=True)
    assert not any(cp._is_alive(p) for p in (first,))


def test_controlplane_down_stops_the_spawned_supervisor_first(tmp_path):
    cp = _plane(tmp_path)
    try:
        # the real supervisor process, on the stand-ins (ControlPlane.start would start real binaries:
        # nothing exits here, so it never calls it)
        pid = supervisor.spawn(cp)
        _wait(lambda: (cp.dir / "supervisor.log").exists())
        assert cp.status()["supervised"]
    finally:
        cp.down(remove=True)
    assert not supervisor.proc_state(pid) or supervisor.proc_state(pid) == "Z"


class _Clock(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    run = ""

    def do_POST(self):  # noqa: N802
        url = urlparse(self.path)
        q = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path == "/end" and q.get("run") == _Clock.run:
            _Clock.run = ""
        body = json.dumps({"run": _Clock.run, "events": {}, "scheduled": 0}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def clock():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Clock)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{srv.server_port}"
    srv.shutdown()


def test_a_busy_control_plane_is_refused_with_the_reason_and_a_dead_runs_hold_is_freed(tmp_path, clock):
    cp_dir = tmp_path / "cp"
    run, path = lease.acquire(cp_dir, clock, tmp_path / "out1")
    with pytest.raises(ControlPlaneError, match=rf"busy: run {run} \(pid {os.getpid()}, writing .*out1.*"
                       r"--private-controlplane"):  # fmt: skip
        lease.acquire(cp_dir, clock, tmp_path / "out2")
    path.unlink()
    # a run that died: its lease (a pid that is gone) is removed, the clock it still drives is given back
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = lease.Lease(run="ghost", pid=dead.pid, started="1", out="x", since=0)
    (cp_dir / "runs" / "ghost.json").write_text(stale.model_dump_json())
    _Clock.run = "ghost"
    run2, path2 = lease.acquire(cp_dir, clock, tmp_path / "out3")
    assert _Clock.run == "" and not (cp_dir / "runs" / "ghost.json").exists() and path2.exists()


def test_a_control_plane_whose_scheduler_does_not_answer_is_refused_before_batsim_starts(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed
    with pytest.raises(ControlPlaneError, match=r"refused the connection.*controlplane status --dir"):
        lease.acquire(tmp_path / "cp", f"127.0.0.1:{port}", None)
    assert not list((tmp_path / "cp" / "runs").glob("*.json"))
