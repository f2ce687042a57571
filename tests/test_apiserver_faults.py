"""Faults the real backend must survive or report: expired watches, a silent scheduler, and API errors
(bounded retries). The control-plane faults mid-run (restarts, a paused etcd, closed watches, 429/5xx, a
killed scheduler, a busy control plane) are in test_controlplane_faults.py."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from apiserver_support import WORKLOADS, run_cli, start
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from batkube_py.cluster.apicalls import ApiCalls
from batkube_py.cluster.base import BackendError
from batkube_py.cluster.sync import SyncOptions
from batkube_py.controlplane.podwatch import PodWatch


@pytest.fixture
def cp(tmp_path: Path):
    plane = start(tmp_path / "cp")
    yield plane
    plane.down(remove=True)


def test_watch_410_gone_relists_without_losing_a_binding(cp):
    """Bindings made while the watch is expired are recovered by the relist, in order."""
    st = cp.state()
    api = config.new_client_from_config(config_file=str(st.kubeconfig))
    core = client.CoreV1Api(api)
    ns = "w410"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    core.create_namespaced_service_account(
        ns, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="default"))
    )
    node = client.V1Node(
        metadata=client.V1ObjectMeta(name="n410"),
        status=client.V1NodeStatus(allocatable={"cpu": "100", "pods": "110"}),
    )
    core.create_node(node)
    w = PodWatch(core, ns)
    w.start()
    names = [f"p{i}" for i in range(30)]
    for n in names:
        w.track(n)
        pod = client.V1Pod(
            metadata=client.V1ObjectMeta(name=n),
            spec=client.V1PodSpec(
                scheduler_name="nobody", containers=[client.V1Container(name="c", image="x")]
            ),
        )
        core.create_namespaced_pod(ns, pod)
    for i, n in enumerate(names):
        if i % 10 == 0:
            w._rv = "1"  # far older than the watch cache: the next (re)connect gets 410 Gone
            w.reconnects_before = w.reconnects
        body = client.V1Binding(
            metadata=client.V1ObjectMeta(name=n), target=client.V1ObjectReference(kind="Node", name="n410")
        )
        core.create_namespaced_binding(ns, body, _preload_content=False)
    deadline = time.monotonic() + 20
    while len(w.bound) < 30 and time.monotonic() < deadline:
        time.sleep(0.05)
    got = [p for p, _ in w.take_bindings()]
    w.stop()
    core.delete_node("n410")
    api.close()
    assert sorted(got) == sorted(names)


def test_watch_drops_and_expiries_during_a_run(cp, tmp_path: Path, monkeypatch):
    """Every few events the pod watch expires (410 Gone) or its connection drops: no job is lost."""
    import urllib3

    from batkube_py.controlplane.kubehttp import KubeHttp

    real_stream = KubeHttp.watch_pods
    counter = {"events": 0, "faults": 0}

    def faulty_stream(self, *args, **kw):
        for ev in real_stream(self, *args, **kw):
            counter["events"] += 1
            if counter["events"] % 37 == 0:
                counter["faults"] += 1
                if counter["faults"] % 2:
                    raise ApiException(status=410, reason="Gone (injected)")
                raise urllib3.exceptions.ProtocolError("connection dropped (injected)")
            yield ev

    monkeypatch.setattr(KubeHttp, "watch_pods", faulty_stream)
    watches: list[PodWatch] = []
    orig_start = PodWatch.start

    def start_and_register(self):
        watches.append(self)
        orig_start(self)

    monkeypatch.setattr(PodWatch, "start", start_and_register)
    code, output, s = run_cli(
        tmp_path / "run", WORKLOADS / "spaced_200_delay170.json", "--controlplane-dir", str(cp.dir)
    )
    assert code == 0, output
    assert counter["faults"] >= 4 and watches[0].relists >= 3 and watches[0].reconnects >= 2
    assert s["jobs_succeeded"] == 200 and s["over_allocations"] == 0
    assert s["makespan"] == pytest.approx(2280.0, rel=0.01)
    assert s["mean_waiting_time"] == pytest.approx(57.6, rel=0.01)


def test_scheduler_that_never_answers(cp, tmp_path: Path):
    from apiserver_support import workload

    wl = workload(tmp_path / "w.json", 5, 1, ["ghost"])
    st = cp.state()
    code, output, s = run_cli(
        tmp_path / "run",
        wl,
        "--kubeconfig",
        str(st.kubeconfig),
        "--scheduler-name",
        "ghost",
        "--scheduler-crash-timeout",
        "2",
    )
    assert code != 0
    assert "no scheduler answered" in s["error"] and "schedulerName" in s["error"]
    assert s["jobs_rejected"] == 5


class _Flaky:
    def __init__(self, failures: int, status: int | None = 503):
        self.failures, self.status, self.calls = failures, status, 0

    def __call__(self, *args, **kw):
        self.calls += 1
        if self.calls <= self.failures:
            if self.status is None:
                raise ConnectionRefusedError("down")
            raise ApiException(status=self.status, reason="flaky")
        return "ok"


def test_api_errors_are_retried_a_bounded_number_of_times():
    calls = ApiCalls(retries=3, patience=0)
    assert calls("x", _Flaky(2)) == "ok"
    assert not calls.outage
    assert calls("x", _Flaky(2, None)) == "ok"
    assert calls.outage  # connection errors: the settle policy must rebase its event counts
    # each kind of fault is one episode, its retries counted, closed by the next success
    faults = calls.faults.summary()
    assert [(f["fault"], f["retries"], f["outcome"]) for f in faults["faults"]] == [
        ("answered 503 flaky", 2, "recovered"), ("unreachable (ConnectionRefusedError)", 2, "recovered")]
    assert faults["fault_retries"] == 4
    calls.diagnose = lambda: "kube-apiserver: exited"
    with pytest.raises(BackendError, match=r"unreachable.*pod p: 4 attempts in 0 s; kube-apiserver: exit"):
        calls("create pod p", _Flaky(10, None))
    assert calls.faults.summary()["faults"][-1]["outcome"] == "stopped the run"
    # once a call gave up, the others fail at once with its line (no second wait on a dead apiserver)
    quick = _Flaky(0)
    with pytest.raises(BackendError, match="pod p: 4 attempts"):
        calls("delete pod q", quick)
    assert quick.calls == 0
    calls = ApiCalls(retries=3, patience=0)
    # without `retries`, the attempts go on for `patience` seconds (an apiserver restart takes seconds)
    t0 = time.monotonic()
    assert ApiCalls(patience=0.5)("x", _Flaky(3, None)) == "ok"
    with pytest.raises(BackendError, match="unreachable"):
        ApiCalls(patience=0.3)("x", _Flaky(100, None))
    assert time.monotonic() - t0 < 5
    with pytest.raises(BackendError, match="503"):
        calls("create pod p", _Flaky(10))
    calls = ApiCalls(retries=3, patience=0)
    with pytest.raises(BackendError, match="422"):
        calls("create pod p", _Flaky(1, 422))  # not transient: no retry
    # several at once: all run, and the first failure is raised once they are done
    flaky = [_Flaky(1), _Flaky(0), _Flaky(1)]
    calls.all([("p", f, (), {}) for f in flaky])
    assert [f.calls for f in flaky] == [2, 1, 2]
    with pytest.raises(BackendError, match="422"):
        calls.all([("p", _Flaky(0), (), {}), ("q", _Flaky(1, 422), (), {})])
    calls.close()
    assert SyncOptions().policy == "auto"


def test_the_schedulers_own_waits_are_recorded_as_recovered_faults():
    from batkube_py.cluster.faults import FaultLog

    faults = FaultLog(lambda: 170.0)
    faults.seen_by_scheduler({"refused": 3, "cut": 2}, {"refused": 1, "cut": 2})
    (f,) = faults.summary()["faults"]
    assert (f["component"], f["fault"], f["first"], f["retries"], f["outcome"], f["sim_time"]) == (
        "kube-apiserver", "refused kube-scheduler's connections", "kube-scheduler", 2, "recovered", 170.0)
    assert faults.summary()["fault_retries"] == 2


class _View:
    """Just what TimeoutPolicy reads."""

    def __init__(self, bindings: int, running: int = 1, unbound: int = 1):
        self.bindings, self._running, self._unbound = bindings, running, unbound

    def new_bindings(self) -> int:
        return self.bindings

    def wait_event(self, timeout: float) -> None:
        time.sleep(timeout)

    def running(self) -> int:
        return self._running

    def unbound(self, kube) -> int:
        return self._unbound


def test_timeout_policy_hands_out_one_binding_per_step_even_with_min_delay_above_the_timeout():
    from batkube_py.cluster.sync import TimeoutPolicy

    policy = TimeoutPolicy(SyncOptions(policy="timeout", timeout=0.005, min_delay=0.02))
    t0 = time.monotonic()
    assert policy.settle(_View(3)) == 1  # seen before the timeout: emitted (Batkube emits when it sees)
    assert time.monotonic() - t0 < 0.02  # the step ends at the timeout, not at min-delay
    assert policy.settle(_View(0)) == 0
    quick = TimeoutPolicy(SyncOptions(policy="timeout", timeout=0.05, min_delay=0.0))
    t0 = time.monotonic()
    assert quick.settle(_View(1)) == 1 and time.monotonic() - t0 < 0.05


def test_timeout_policy_wakes_up_for_bindings_not_yet_handed_out():
    """Found in the max-timestep sweep: with fast-forward on, the last pods bound but still queued for
    one-per-step hand-out, and nothing running, no wake-up was asked and Batsim deadlocked."""
    from batkube_py.cluster.sync import TimeoutPolicy

    opts = SyncOptions(policy="timeout", fast_forward=True, base_step=0.01, max_step=100)
    policy = TimeoutPolicy(opts)
    policy.first_decision = True
    assert policy.next_wakeup(500.0, _View(3, running=0, unbound=0)) is not None
    assert policy.next_wakeup(500.0, _View(0, running=2, unbound=0)) is None  # fast-forward
    assert policy.next_wakeup(500.0, _View(0, running=0, unbound=0)) is None  # nothing left at all
    assert TimeoutPolicy(SyncOptions(policy="timeout")).next_wakeup(9.0, _View(2, running=0, unbound=0)) > 9.0


def test_priority_class_not_yet_admitted_is_retried():
    """Creating a PriorityClass and then its pod at once: the Priority admission plugin's informer may not
    have the class yet (403 "no PriorityClass with name ... was found"); that one 403 is retried."""
    missing = ApiException(status=403, reason="Forbidden")
    missing.body = '{"message": "pods is forbidden: no PriorityClass with name batkube-1-10 was found"}'
    tries = []

    def create(*a, **kw):
        tries.append(1)
        if len(tries) <= 2:
            raise missing
        return "ok"

    calls = ApiCalls(retries=3, patience=0)
    assert calls("create pod p", create) == "ok" and len(tries) == 3
    with pytest.raises(BackendError, match="403"):
        calls("create pod q", _Flaky(1, 403))  # any other 403 is not retried
