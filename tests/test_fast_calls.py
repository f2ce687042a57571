"""The real backend's hot paths without the generated client: background writes that keep their order,
the lean JSON calls (the same bodies as the generated client's), and the clock endpoint's client."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from batkube_py.cluster.apicalls import ApiCalls
from batkube_py.cluster.base import BackendError
from batkube_py.controlplane.clock import ClockError, SchedulerClock
from batkube_py.controlplane.kubehttp import KubeHttp, body_of


def test_ordered_background_calls_keep_their_order_and_failures_surface_at_drain():
    calls, seen, lock = ApiCalls(retries=1), [], threading.Lock()

    def write(i: int, _request_timeout=None):
        time.sleep(0.002 * (5 - i % 5))  # later calls would overtake earlier ones if run at once
        with lock:
            seen.append(i)

    for i in range(10):
        calls.later(f"create pod {i}", write, i, ordered=True)
    calls.drain()
    assert seen == list(range(10))

    def refused(_request_timeout=None):
        raise ApiException(status=422, reason="Unprocessable")

    calls.later("create pod bad", refused, ordered=True)
    calls.later("delete pod x", write, 99)
    with pytest.raises(BackendError, match="create pod bad failed: 422"):
        calls.drain()
    assert 99 in seen  # the other call ran to its end
    calls.drain()  # nothing left: a drain after a failure starts afresh
    calls.close()


def _pod() -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name="w0-1", namespace="ns", labels={"app": "db"}),
        spec=client.V1PodSpec(
            scheduler_name="default-scheduler",
            priority_class_name="batkube-x-10",
            automount_service_account_token=False,
            containers=[
                client.V1Container(
                    name="job",
                    image="none",
                    resources=client.V1ResourceRequirements(requests={"cpu": "250m", "memory": "512Mi"}),
                )
            ],  # fmt: skip
            tolerations=[client.V1Toleration(key="simulated", operator="Exists", effect="NoSchedule")],
            affinity=client.V1Affinity(
                node_affinity=client.V1NodeAffinity(
                    required_during_scheduling_ignored_during_execution=client.V1NodeSelector(
                        node_selector_terms=[
                            client.V1NodeSelectorTerm(
                                match_expressions=[
                                    client.V1NodeSelectorRequirement(
                                        key="rank", operator="In", values=["1", "2"]
                                    )
                                ]
                            )
                        ]
                    )
                )
            ),  # fmt: skip
        ),
    )


def test_lean_bodies_are_the_generated_clients():
    api = client.ApiClient()
    assert json.loads(body_of(_pod())) == api.sanitize_for_serialization(_pod())


class _Recorder(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    requests: list = []

    def _answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        _Recorder.requests.append((self.command, self.path, headers, body))
        url = urlparse(self.path)
        if url.path.endswith("/gone"):
            out, status = b'{"kind":"Status","code":404}', 404
        elif url.path == "/settle" or url.path == "/begin":
            q = parse_qs(url.query)
            reply = {"echo": {k: v[0] for k, v in q.items()}, "popped": ["p"] * 3000}
            out, status = json.dumps(reply).encode(), 200
        elif url.path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"2\r\n{}\r\n0\r\n\r\n")
            return
        else:
            out, status = body or b"{}", 201
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_POST = do_DELETE = do_PATCH = _answer

    def log_message(self, *args):
        pass


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server():
    _Recorder.requests = []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv
    srv.shutdown()


def test_lean_calls_send_what_the_api_expects(server):
    cfg = client.Configuration()
    cfg.host = f"http://127.0.0.1:{server.server_port}"
    cfg.api_key = {"authorization": "token"}
    cfg.api_key_prefix = {"authorization": "Bearer"}
    http = KubeHttp(client.ApiClient(cfg))
    made = http.create_pod("ns", _pod())
    assert made == json.loads(body_of(_pod()))
    http.delete_pod("w0-1", "ns")
    http.patch_node("node-1", {"spec": {"unschedulable": True}})
    (m1, p1, h1, _), (m2, p2, _, b2), (m3, p3, h3, b3) = _Recorder.requests
    assert (m1, p1, h1["authorization"], h1["content-type"]) == (
        "POST", "/api/v1/namespaces/ns/pods", "Bearer token", "application/json")  # fmt: skip
    assert (m2, p2, b2) == ("DELETE", "/api/v1/namespaces/ns/pods/w0-1?gracePeriodSeconds=0", b"")
    assert (m3, p3, h3["content-type"]) == ("PATCH", "/api/v1/nodes/node-1", "application/merge-patch+json")
    assert json.loads(b3) == {"spec": {"unschedulable": True}}
    with pytest.raises(ApiException) as err:
        http.request("DELETE", "/api/v1/namespaces/ns/pods/gone")
    assert err.value.status == 404 and "Status" in err.value.body  # what ApiCalls' `ok=(404,)` reads


def test_clock_client_reads_long_replies_and_never_reconnects(server):
    clock = SchedulerClock(f"127.0.0.1:{server.server_port}", "run1", timeout=5)
    st = clock.settle({"UnscheduledPodAdd": 3, "NodeAdd": 2}, tick=30.0, t=31.5)
    assert st["echo"] == {"run": "run1", "want": "NodeAdd:2,UnscheduledPodAdd:3", "timeout": "5",
                          "tick": "30.0", "t": "31.5"}  # fmt: skip
    assert len(st["popped"]) == 3000  # beyond one read
    with pytest.raises(ClockError, match="Content-Length"):
        SchedulerClock(clock.address, "run1", timeout=5)._call("/chunked")
    # the endpoint never closes a connection: a drop is a dead (or restarted) scheduler, whose queue is gone
    clock._sock.close()
    with pytest.raises(ClockError, match="kube-scheduler died or was restarted"):
        clock.begin(32.0)
    with pytest.raises(ClockError, match="died or was restarted"):
        clock.begin(32.0)  # and stays lost: never a fresh connection to a new scheduler mid-run
    with pytest.raises(ClockError, match="refused the connection.*is kube-scheduler running"):
        SchedulerClock(f"127.0.0.1:{_closed_port()}", "run2", timeout=1).ready()
