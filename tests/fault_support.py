"""Helpers of the control-plane fault tests: a fault-free reference run, runs compared output for output,
and a TCP proxy in front of kube-apiserver that can close every connection (and with them every watch)."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

from apiserver_support import WORKLOADS, run_cli, start

from batkube_py.controlplane.manager import ControlPlane

WORKLOAD = WORKLOADS / "200_delay170.json"
# parallelism 1: ties go by the node rotation of a fresh scheduler, so two runs on two fresh control
# planes make the same placements, and "the outputs of a run without the fault" is one set of files
PARALLEL_1 = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nparallelism: 1\n"


def scheduler_config(tmp: Path) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / "parallel-1.yaml"
    path.write_text(PARALLEL_1)
    return path


def fresh_plane(tmp: Path) -> ControlPlane:
    """A control plane of the test's own whose kube-scheduler runs `parallelism: 1`."""
    config = scheduler_config(tmp)
    cp = start(tmp / "cp", config)
    cp.user_config = config  # type: ignore[attr-defined]
    return cp


def run_on(cp: ControlPlane, out: Path, *extra: str, workload: Path = WORKLOAD) -> tuple[int, str, dict]:
    config = str(cp.user_config)  # type: ignore[attr-defined]
    return run_cli(out, workload, "--controlplane-dir", str(cp.dir), "--scheduler-config", config, *extra)


def outputs(run: Path) -> dict[str, str]:
    """What a user reads of a run: every pod's and every job's row (Batsim's out_jobs.csv)."""
    return {name: (run / name).read_text() for name in ("pods.csv", "out_jobs.csv")}


def rows(out: Path) -> int:
    f = out / "pods.csv"
    return max(0, len(f.read_text().splitlines()) - 1) if f.exists() else 0


def when(cond, then, timeout=120.0) -> threading.Thread:
    """Run `then` in a thread as soon as `cond` holds (polled every 20 ms)."""

    def body():
        deadline = time.monotonic() + timeout
        while not cond() and time.monotonic() < deadline:
            time.sleep(0.02)
        then()

    t = threading.Thread(target=body, daemon=True)
    t.start()
    return t


class Proxy:
    """Bytes both ways between loopback clients and kube-apiserver (TLS passes through untouched);
    `cut` shuts every connection from the server's side at once."""

    def __init__(self, port: int):
        self.upstream = ("127.0.0.1", port)
        self.lsock = socket.create_server(("127.0.0.1", 0))
        self.port = self.lsock.getsockname()[1]
        self.conns: list[socket.socket] = []
        self.cuts = 0
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            try:
                u = socket.create_connection(self.upstream)
            except OSError:
                c.close()
                continue
            with self._lock:
                self.conns += [c, u]
            for a, b in ((c, u), (u, c)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> int:
        with self._lock:
            conns, self.conns = self.conns, []
            self.cuts += 1
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        return len(conns) // 2

    def close(self) -> None:
        self.lsock.close()
        self.cut()


def behind_proxy(cp: ControlPlane) -> Proxy:
    """Point the control plane's kubeconfig (the scheduler's and the runs') at a proxy, and restart the
    scheduler so that it connects through it."""
    st = cp.state()
    assert st is not None
    proxy = Proxy(st.apiserver_port)
    text = st.kubeconfig.read_text().replace(f":{st.apiserver_port}", f":{proxy.port}")
    proxied = cp.dir / "kubeconfig-proxied"
    proxied.write_text(text)
    os.chmod(proxied, 0o600)
    cp._edit(st, lambda s: setattr(s, "kubeconfig", proxied))
    cp.write_scheduler_config(st, cp.user_config)  # type: ignore[attr-defined]
    cp.stop("kube-scheduler")
    cp.start("kube-scheduler", cp.state())
    return proxy
