"""Control-plane faults in the middle of a real-backend run (kube-apiserver 1.37.2, etcd 3.7.0,
kube-scheduler 1.37.2 running its own queue, the Batsim double): the run either finishes with exactly the
outputs of the run without the fault, or stops within seconds naming the component and the fault, with
its outputs kept and marked incomplete (docs/faults.md)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from apiserver_support import WORKLOADS, run_cli
from fault_support import WORKLOAD, behind_proxy, fresh_plane, outputs, rows, run_on, when
from kubernetes.client.rest import ApiException
from shared_support import need

from batkube_py.cluster.queued import QueueCluster
from batkube_py.controlplane import supervisor
from batkube_py.controlplane.clock import SchedulerClock
from batkube_py.controlplane.kubehttp import KubeHttp


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict[str, str]:
    """The outputs of the run without a fault, on a fresh control plane."""
    need(WORKLOAD)
    tmp = tmp_path_factory.mktemp("reference")
    cp = fresh_plane(tmp)
    try:
        code, output, s = run_on(cp, tmp / "run")
    finally:
        cp.down(remove=True)
    assert code == 0 and s["faults"] == [] and s["complete"], output
    return outputs(tmp / "run")


@pytest.fixture
def cp(tmp_path: Path):
    plane = fresh_plane(tmp_path)
    yield plane
    plane.down(remove=True)


def _recovered(s: dict, component: str) -> list[dict]:
    seen = [f for f in s["faults"] if f["component"] == component]
    assert seen and all(f["outcome"] == "recovered" for f in seen), s["faults"]
    return seen


def test_apiserver_killed_and_restarted_by_the_supervisor(cp, tmp_path, reference):
    """SIGTERM to kube-apiserver at a random moment; `controlplane up`'s supervisor starts it again."""
    supervisor.spawn(cp)
    out = tmp_path / "run"
    first = cp.state().pids["kube-apiserver"]
    t = when(lambda: rows(out) >= 60, lambda: os.kill(first, signal.SIGTERM))
    code, output, s = run_on(cp, out)
    t.join(5)
    assert code == 0 and s["complete"], output
    assert outputs(out) == reference
    assert cp.state().pids["kube-apiserver"] != first and cp.status()["restarts"] == {"kube-apiserver": 1}
    assert (cp.dir / "kube-apiserver.log.1").exists()
    assert s["fault_retries"] + s["watch_reconnects"] > 0
    _recovered(s, "kube-apiserver")


def test_apiserver_sigkilled_while_the_scheduler_binds(cp, tmp_path, reference, monkeypatch):
    """At the step at t=170.04 (16 completions, 16 bindings) kube-apiserver is paused once the adapter's
    writes are in, so that kube-scheduler's bindings wait on it; then SIGKILLed (the bindings' connections
    reset) and started again: the scheduler completes the cut bindings (patient.go)."""
    steps = {"n": 0}
    real = QueueCluster.schedule

    def restart(pid: int) -> None:
        time.sleep(1.0)  # the scheduler has sent its bindings
        os.kill(pid, signal.SIGKILL)
        cp._procs[pid].wait()
        cp.start("kube-apiserver", cp.state())

    def schedule(self, now):
        if now >= 170 and not steps["n"]:  # the first completions: every freed node gets a pod
            steps["n"] += 1
            self._drain()
            pid = cp.state().pids["kube-apiserver"]
            os.kill(pid, signal.SIGSTOP)
            when(lambda: True, lambda: restart(pid))
        return real(self, now)

    monkeypatch.setattr(QueueCluster, "schedule", schedule)
    code, output, s = run_on(cp, tmp_path / "run")
    assert code == 0 and s["complete"], output
    assert outputs(tmp_path / "run") == reference
    log = (cp.dir / "kube-scheduler.log").read_text()
    assert 'answered 429/5xx; completing it" method="POST"' in log  # a binding
    cut = [f for f in _recovered(s, "kube-apiserver") if f["fault"].startswith("cut or answered")]
    assert cut and cut[0]["retries"] >= 1 and cut[0]["first"] == "kube-scheduler", s["faults"]


def test_etcd_paused_longer_than_the_client_timeouts(cp, tmp_path, reference):
    """SIGSTOP to etcd for 15 s (the adapter's requests time out after 10 s), then SIGCONT."""
    out = tmp_path / "run"
    etcd = cp.state().pids["etcd"]

    def pause():
        os.kill(etcd, signal.SIGSTOP)
        time.sleep(15)
        os.kill(etcd, signal.SIGCONT)

    t = when(lambda: rows(out) >= 60, pause)
    t0 = time.monotonic()
    code, output, s = run_on(cp, out)
    t.join(30)
    assert code == 0 and s["complete"], output
    assert outputs(out) == reference
    assert time.monotonic() - t0 > 15  # the pause happened during the run
    assert any("client timeout" in f["fault"] for f in _recovered(s, "kube-apiserver")), s["faults"]


def test_etcd_paused_for_good_stops_the_run_naming_it(cp, tmp_path):
    """Past --fault-patience the run stops, names etcd, and does not hang on its cleanup."""
    out = tmp_path / "run"
    etcd = cp.state().pids["etcd"]
    paused: list[float] = []
    pause = lambda: (os.kill(etcd, signal.SIGSTOP), paused.append(time.monotonic()))  # noqa: E731
    t = when(lambda: rows(out) >= 60, pause)
    try:
        code, output, s = run_on(cp, out, "--fault-patience", "5", "--scheduler-crash-timeout", "15")
        ended = time.monotonic()
    finally:
        t.join(5)
        os.kill(etcd, signal.SIGCONT)
    assert code != 0 and ended - paused[0] < 60, (ended - paused[0], output)
    assert "etcd: stopped (SIGSTOP)" in s["error"], s["error"]
    assert s["faults"][-1]["outcome"] == "stopped the run" and not s["complete"]
    assert (out / "INCOMPLETE").exists() and s["jobs_unfinished"] == 0


def test_every_watch_closed_by_the_server_mid_run(cp, tmp_path, reference, monkeypatch):
    """Every connection to kube-apiserver (the scheduler's informers, the adapter's pod watch and calls)
    closed from the server's side, twice, between two steps."""
    proxy = behind_proxy(cp)
    steps = {"n": 0}
    real = QueueCluster.schedule

    def schedule(self, now):
        steps["n"] += 1
        if steps["n"] in (3, 8):  # of its 13 steps
            steps["cut"] = steps.get("cut", 0) + (proxy.cut() >= 2)  # the scheduler's and the adapter's
        return real(self, now)

    monkeypatch.setattr(QueueCluster, "schedule", schedule)
    try:
        code, output, s = run_on(cp, tmp_path / "run")
    finally:
        proxy.close()
    assert code == 0 and s["complete"], output
    assert outputs(tmp_path / "run") == reference
    assert steps["cut"] == 2 and s["watch_reconnects"] >= 2
    _recovered(s, "kube-apiserver")


def test_requests_answered_429_500_503(cp, tmp_path, reference, monkeypatch):
    """Every 7th request of the adapter is answered 429, 500 or 503 (in turn) before it reaches etcd."""
    real = KubeHttp.request
    count = {"n": 0}

    def request(self, method, path, *args, **kw):
        count["n"] += 1
        if count["n"] % 7 == 0:
            status = (429, 500, 503)[count["n"] // 7 % 3]
            raise ApiException(status=status, reason="injected")
        return real(self, method, path, *args, **kw)

    monkeypatch.setattr(KubeHttp, "request", request)
    code, output, s = run_on(cp, tmp_path / "run")
    assert code == 0 and s["complete"], output
    assert outputs(tmp_path / "run") == reference
    faults = {f["fault"] for f in _recovered(s, "kube-apiserver")}
    assert faults == {"answered 429 injected", "answered 500 injected", "answered 503 injected"}
    assert s["fault_retries"] >= count["n"] // 8


def test_scheduler_killed_stops_the_run_within_seconds_and_the_supervisor_restarts_it(cp, tmp_path):
    supervisor.spawn(cp)
    out = tmp_path / "run"
    pid = cp.state().pids["kube-scheduler"]
    killed: list[float] = []
    t = when(lambda: rows(out) >= 20, lambda: (os.kill(pid, signal.SIGKILL), killed.append(time.monotonic())))
    code, output, s = run_on(cp, out)
    stopped = time.monotonic()
    t.join(5)
    assert code != 0 and stopped - killed[0] < 10
    assert "kube-scheduler: clock endpoint" in s["error"] and "died or was restarted" in s["error"]
    assert f"{s['error']} — the run did not finish" in output  # one line on the console
    assert [f["outcome"] for f in s["faults"] if f["component"] == "kube-scheduler"] == ["stopped the run"]
    assert not s["complete"] and (out / "INCOMPLETE").read_text().strip() == s["error"]
    assert s["jobs_succeeded"] >= 20 and s["jobs_unfinished"] == 0  # drained: Batsim told to end
    assert (out / "out_jobs.csv").exists() and (out / "pods.csv").exists()
    # the supervisor has started it again: the next run uses it
    deadline = time.monotonic() + 60
    while not all(cp.running().values()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert cp.status()["restarts"] == {"kube-scheduler": 1}
    code, output, s = run_on(cp, tmp_path / "next", workload=WORKLOADS / "test_30_delay10_job.json")
    assert code == 0 and s["complete"], output


def test_a_busy_control_plane_is_refused_before_batsim_starts(cp, tmp_path):
    st = cp.state()
    SchedulerClock(st.scheduler_clock, "someone-else", timeout=5).begin(0.0)  # a run that died: freed
    from batkube_py.controlplane import lease

    _, held = lease.acquire(cp.dir, st.scheduler_clock, tmp_path / "other")  # a live run holds it
    wl = WORKLOADS / "test_30_delay10_job.json"
    code, output, _ = run_on(cp, tmp_path / "busy", workload=wl)
    assert code != 0 and "is busy: run" in output and "--private-controlplane" in output
    assert not (tmp_path / "busy" / "batsim_cmdline.txt").exists()  # Batsim never started
    code, output, s = run_cli(tmp_path / "private", wl, "--private-controlplane")
    assert code == 0 and s["complete"], output
    held.unlink()
    code, output, s = run_on(cp, tmp_path / "free", workload=wl)
    assert code == 0 and s["complete"], output
