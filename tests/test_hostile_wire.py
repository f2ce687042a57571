"""Hostile input on the wire: malformed job fields, messages Batsim would never send, junk on the port.

Each case asserts its outcome class: `rejected` (that job alone is REJECT_JOB with the field named in
rejected.csv, the next job still runs), `stopped` (the run ends with the reason, Batsim told to stop by
draining), or `error` (a ProtocolError naming the message). Every case has a time bound (timeout mark).
"""

from __future__ import annotations

import csv
import json
import socket
import threading

import orjson
import pytest
import zmq
from batsim_messages import begins, completed, decided, ends, host, message, notify, reply_events, submitted
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batkube_py.adapter.decision import DecisionProcess
from batkube_py.adapter.outputs import RunOutputs
from batkube_py.cluster.embedded import EmbeddedCluster
from batkube_py.protocol.codec import ProtocolError, decode_message
from batkube_py.protocol.reply import Reply
from batkube_py.runs.endpoint import Endpoint, EndpointError, PeerGone, check_address

pytestmark = pytest.mark.timeout(30)
PROFILES = {"p": {"type": "delay", "delay": 10, "cpu": "1"}}


def started(tmp_path=None, hosts=2):
    p = DecisionProcess(
        lambda nodes: EmbeddedCluster(nodes, seed=0), RunOutputs(tmp_path) if tmp_path else None
    )
    p.handle(message(0.0, begins([host(i, core="1", zone="a") for i in range(hosts)], PROFILES)))
    return p


BAD_FIELDS = [
    ("tolerations", [{"key": 1}]),
    ("tolerations", [{"operator": "Bogus"}]),
    ("tolerations", [{"operator": "Exists", "value": "x"}]),
    ("tolerations", [{"effect": "Sometimes"}]),
    ("tolerations", [{"tolerationSeconds": "soon"}]),
    ("tolerations", {"key": "a"}),
    ("tolerations", ["a"]),
    ("tolerations", "NoSchedule"),
    ("nodeSelector", ["zone=a"]),
    ("nodeSelector", {"zone": 1}),
    ("nodeSelector", {"zone": None}),
    ("nodeSelector", {"bad key!": "a"}),
    ("nodeSelector", "zone=a"),
    ("labels", ["a"]),
    ("labels", {"app": 3}),
    ("labels", {"app": "x" * 64}),
    ("labels", {"": "v"}),
    ("labels", {"app": "has space"}),
    ("affinity", 5),
    ("affinity", []),
    ("affinity", {"nodeAffinity": 5}),
    (
        "affinity",
        {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": "x"}}},
    ),
    (
        "affinity",
        {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "Near", "values": ["a"]}]}
                    ]
                }
            }
        },
    ),
    (
        "affinity",
        {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In"}]}]
                }
            }
        },
    ),
    (
        "affinity",
        {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "Gt", "values": ["1", "2"]}]}
                    ]
                }
            }
        },
    ),
    (
        "affinity",
        {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 0, "preference": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}}
                ]
            }
        },
    ),
    (
        "affinity",
        {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": "heavy"}]}},
    ),
    (
        "affinity",
        {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": [1]}]}},
    ),
    (
        "affinity",
        {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"a": "b"}}}
                ]
            }
        },
    ),
    (
        "affinity",
        {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "topologyKey": "zone",
                        "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Gt"}]},
                    }
                ]
            }
        },
    ),
    (
        "affinity",
        {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"topologyKey": "zone", "labelSelector": {"matchLabels": {"a": 1}}}
                ]
            }
        },
    ),
    ("affinity", {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 50}]}}),
    ("affinity", {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": "all"}}),
    (
        "topologySpreadConstraints",
        [{"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}],
    ),
    ("topologySpreadConstraints", [{"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}]),
    ("topologySpreadConstraints", [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Maybe"}]),
    (
        "topologySpreadConstraints",
        [
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]},
            }
        ],
    ),
    ("topologySpreadConstraints", {"maxSkew": 1}),
    ("cpu", "lots"),
    ("cpu", -1),
    ("cpu", "1e400"),
    ("cpu", [1]),
    ("cpu", True),
    ("memory", "4Zi"),
    ("memory", {"a": 1}),
    ("priority", 2**40),
    ("priority", "high"),
    ("priority", 1.5),
    ("scheduler", 7),
    ("scheduler", ""),
    ("resources", {"cpu": "1"}),
    ("resources", {"example.com/gpu": "half"}),
    ("resources", [1]),
    ("res", 0),
    ("res", 2.5),
    ("res", True),
]


@pytest.mark.parametrize(
    ("field", "value"), BAD_FIELDS, ids=[f"{f}-{i}" for i, (f, _) in enumerate(BAD_FIELDS)]
)
def test_a_malformed_job_field_rejects_that_job_alone(tmp_path, field, value):
    p = started(tmp_path)
    out = decided(p, message(1.0, submitted(1.0, "w0!bad", **{field: value}), submitted(1.0, "w0!ok")))
    assert ("REJECT_JOB", {"job_id": "w0!bad"}) in out
    assert any(kind == "EXECUTE_JOB" and data["job_id"] == "w0!ok" for kind, data in out)
    assert p.fatal is None
    p.outputs.close()
    rows = list(csv.DictReader((tmp_path / "rejected.csv").open()))
    assert rows and rows[0]["job_id"] == "w0!bad" and field in rows[0]["field"] and rows[0]["expected"]


def test_a_malformed_field_in_the_profile_is_named_as_the_profiles(tmp_path):
    p = DecisionProcess(lambda nodes: EmbeddedCluster(nodes, seed=0), RunOutputs(tmp_path))
    bad = {"type": "delay", "delay": 1, "tolerations": [{"operator": 3}]}
    p.handle(message(0.0, begins([host(0, core="1")], {"p": PROFILES["p"], "bad": bad})))
    out = reply_events(p.handle(message(1.0, submitted(1.0, "w0!1", "bad"))))
    assert out == [("REJECT_JOB", {"job_id": "w0!1"})]
    assert "profile.tolerations" in p.records["w0!1"].reason


STOPPING = [
    (
        "second SIMULATION_BEGINS",
        lambda: message(1.0, begins([host(0, core="2")], PROFILES)),
        "a second time",
    ),
    ("resources abc", lambda: message(1.0, notify(1.0, "event_machine_unavailable", resources="abc")), "abc"),
    ("negative host", lambda: message(1.0, notify(1.0, "event_machine_unavailable", resources="-1")), "-1"),
    (
        "reversed interval",
        lambda: message(1.0, notify(1.0, "event_machine_available", resources="5-2")),
        "5-2",
    ),
]


@pytest.mark.parametrize(("name", "raw", "needle"), STOPPING, ids=[s[0] for s in STOPPING])
def test_a_message_batsim_would_never_send_drains_the_run_with_the_reason(name, raw, needle):
    p = started()
    decided(p, message(0.5, submitted(0.5, "w0!1"), submitted(0.5, "w0!2"), submitted(0.5, "w0!3")))
    out = reply_events(p.handle(raw()))
    assert needle in p.fatal
    assert ("KILL_JOB", {"job_ids": ["w0!1", "w0!2"]}) in out and ("REJECT_JOB", {"job_id": "w0!3"}) in out


def test_a_machine_interval_of_1e11_hosts_is_intersected_not_expanded():
    p = started()
    p.handle(message(1.0, notify(1.0, "event_machine_unavailable", resources="0-100000000000")))
    out = decided(p, message(2.0, submitted(2.0, "w0!1")))
    assert out == [] and p.fatal is None  # both nodes are down: the pod waits


ERRORS = [
    b"",
    b"\xff\xfe\x00",
    b"GET / HTTP/1.1\r\n\r\n",
    b"[]",
    b"null",
    b'{"now": 0}',
    b'{"events": []}',
    b'{"now": "0", "events": []}',
    b'{"now": 0, "events": {}}',
    b'{"now": 0, "events": [1]}',
    b'{"now": 0, "events": [{"type": "JOB_SUBMITTED"}]}',
    b'{"now": 0, "events": [{"timestamp": 0, "type": "JOB_SUBMITTED", "data": []}]}',
    b'{"now": 0, "events": [{"timestamp": 0, "type": "JOB_SUBMITTED", "data": {"job_id": 5}}]}',
    b'{"now": 0, "events": [{"timestamp": 0, "type": "NOTIFY", "data": {"type": "x", "resources": 5}}]}',
    b'{"now": 1e400, "events": []}',
    b'{"now": NaN, "events": []}',
    b"[" * 100_000,
    b'{"now": 0, "events": [' * 3000,
]


@pytest.mark.parametrize("raw", ERRORS, ids=range(len(ERRORS)))
def test_undecodable_messages_are_a_protocol_error(raw):
    with pytest.raises(ProtocolError):
        started().handle(raw)


def test_time_going_back_is_a_protocol_error():
    p = started()
    p.handle(message(5.0))
    with pytest.raises(ProtocolError, match="clock never goes back"):
        p.handle(message(1.0))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_decoder_on_random_bytes_returns_or_names_the_problem(raw):
    try:
        decode_message(raw)
    except ProtocolError as exc:
        assert str(exc)


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=20,
)
_event = st.fixed_dictionaries(
    {
        "timestamp": st.floats(0, 10) | _json,
        "type": st.sampled_from(
            [
                "JOB_SUBMITTED",
                "NOTIFY",
                "JOB_KILLED",
                "JOB_COMPLETED",
                "SIMULATION_ENDS",
                "REQUESTED_CALL",
                "ANSWER",
                "X",
            ]
        )
        | _json,
        "data": _json,
    }
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_event, max_size=4))
def test_adapter_on_random_events_replies_or_names_the_problem(events):
    p = started()
    try:
        reply = p.handle(orjson.dumps({"now": 1.0, "events": events}))
    except ProtocolError as exc:
        assert str(exc)
        return
    assert isinstance(orjson.loads(reply), dict)


_k8s_field = st.sampled_from(
    [
        "tolerations",
        "nodeSelector",
        "affinity",
        "labels",
        "topologySpreadConstraints",
        "priority",
        "cpu",
        "memory",
        "resources",
        "scheduler",
    ]
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(_k8s_field, _json, min_size=1, max_size=3))
def test_any_job_json_is_executed_or_rejected_and_the_run_goes_on(fields):
    p = started()
    out = decided(p, message(1.0, submitted(1.0, "w0!x", **fields)))
    assert p.fatal is None
    kinds = {k for k, d in out if d.get("job_id") == "w0!x"}
    assert kinds <= {"EXECUTE_JOB", "REJECT_JOB"}
    assert kinds or p.records["w0!x"].state == "Pending"


# ---- the socket --------------------------------------------------------------------------------------


BAD_ENDPOINTS = [
    "",
    "28000",
    "udp://127.0.0.1:1",
    "tcp://127.0.0.1",
    "tcp://127.0.0.1:99999",
    "tcp://:1:2",
    "tcp://127.0.0.1:abc",
    "ipc://",
    "ipc:///no/such/dir/sock",
    "inproc://x",
    "tcp://host name:1",
]


@pytest.mark.parametrize("address", BAD_ENDPOINTS)
def test_malformed_endpoints_are_refused_in_one_line(address):
    with pytest.raises(EndpointError) as err:
        check_address(address)
    assert "\n" not in str(err.value) and repr(address) in str(err.value)


def test_a_taken_port_is_refused_in_one_line():
    first = Endpoint()
    try:
        with pytest.raises(EndpointError, match="already in use"):
            Endpoint(first.address)
    finally:
        first.close()


def _peer(address: str, msgs: list[bytes], replies: list, hold: threading.Event | None = None):
    ctx = zmq.Context.instance()
    s = ctx.socket(zmq.REQ)
    s.setsockopt(zmq.LINGER, 0)
    s.connect(address)
    for raw in msgs:
        s.send(raw)
        replies.append(s.recv())
    if hold is not None:
        hold.wait(10)
    s.close()


def _batsim_script(now: float = 1.0) -> list[bytes]:
    return [
        message(0.0, begins([host(0, core="1")], PROFILES)),
        message(now, submitted(now, "w0!1")),
        message(now + 1, ends(now + 1)),
    ]


JUNK = [
    b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    b'\x01\x00\x01\x01\x0a\x00{"now":1}',
    b"\xff" * 64,
    b"\xff\x00\x00\x00\x00\x00\x00\x00\x01\x7f\x03\x00NULL" + b"\x00" * 60,
    bytes(range(256)),
]


@pytest.mark.parametrize("junk", JUNK, ids=range(len(JUNK)))
@pytest.mark.parametrize("when", ["before", "during"])
def test_raw_tcp_junk_never_reaches_or_blocks_the_batsim_peer(junk, when):
    ep = Endpoint()
    port = int(ep.address.rsplit(":", 1)[1])
    replies: list = []
    msgs = _batsim_script()
    socks = []

    def junk_in():
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(junk)
        socks.append(s)

    if when == "before":
        junk_in()
    t = threading.Thread(target=_peer, args=(ep.address, msgs, replies))
    t.start()
    if when == "during":
        junk_in()
    p = DecisionProcess(lambda nodes: EmbeddedCluster(nodes, seed=0))
    try:
        ep.serve(p, connect_timeout=10, idle_timeout=10, poll_seconds=0.05)
    finally:
        t.join(5)
        ep.close()
        for s in socks:
            s.close()
    assert len(replies) == 3 and p.ended and ep.messages == 3


def test_a_second_zmq_peer_is_ignored_while_batsim_is_served():
    ep = Endpoint()
    p = DecisionProcess(lambda nodes: EmbeddedCluster(nodes, seed=0))
    junk_replies: list = []
    ctx = zmq.Context.instance()
    intruder = ctx.socket(zmq.REQ)
    intruder.setsockopt(zmq.LINGER, 0)
    intruder.connect(ep.address)
    intruder.send(b'{"now": 0, "events": []}')  # junk first: never pinned
    replies: list = []
    t = threading.Thread(target=_peer, args=(ep.address, _batsim_script(), replies))
    t.start()
    try:
        ep.serve(p, connect_timeout=10, idle_timeout=10, poll_seconds=0.05)
    finally:
        t.join(5)
        intruder.close()
        ep.close()
    assert len(replies) == 3 and not junk_replies and ep.ignored == 1


def test_a_multipart_message_from_batsim_is_a_protocol_error():
    ep = Endpoint()
    ctx = zmq.Context.instance()
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    s.connect(ep.address)
    s.send_multipart([b"", message(0.0, begins([host(0, core="1")], PROFILES))])
    p = DecisionProcess(lambda nodes: EmbeddedCluster(nodes, seed=0))

    def second():
        s.recv_multipart()
        s.send_multipart([b"", b'{"now": 1, "events": []}', b"extra"])

    t = threading.Thread(target=second)
    t.start()
    try:
        with pytest.raises(ProtocolError, match="2 parts"):
            ep.serve(p, connect_timeout=10, idle_timeout=10, poll_seconds=0.05)
    finally:
        t.join(5)
        s.close()
        ep.close()


@pytest.mark.parametrize(
    "script", [[], [b"junk"], [b'{"now": 0, "events": []}']], ids=["silent", "junk", "empty"]
)
def test_no_batsim_within_the_connect_timeout_is_said(script):
    ep = Endpoint()
    replies: list = []
    ctx = zmq.Context.instance()
    s = ctx.socket(zmq.REQ)
    s.setsockopt(zmq.LINGER, 0)
    s.connect(ep.address)
    for raw in script:
        s.send(raw)
    try:
        with pytest.raises(PeerGone, match="no Batsim message") as err:
            ep.serve(DecisionProcess(lambda n: EmbeddedCluster(n)), connect_timeout=0.3, poll_seconds=0.05)
    finally:
        s.close()
        ep.close()
    assert ("ignored" in str(err.value)) == bool(script) and not replies


def test_silence_after_simulation_begins_is_bounded():
    ep = Endpoint()
    replies: list = []
    hold = threading.Event()  # connected but silent: only the idle timeout can tell
    t = threading.Thread(target=_peer, args=(ep.address, _batsim_script()[:1], replies, hold))
    t.start()
    try:
        with pytest.raises(PeerGone, match="no message from Batsim for 0.3 s"):
            ep.serve(DecisionProcess(lambda n: EmbeddedCluster(n)), idle_timeout=0.3, poll_seconds=0.05)
    finally:
        hold.set()
        t.join(5)
        ep.close()
    assert len(replies) == 1 and json.loads(replies[0])["now"] == 0.0


def test_a_host_with_a_negative_id_is_a_protocol_error():
    p = DecisionProcess(lambda nodes: EmbeddedCluster(nodes, seed=0))
    with pytest.raises(ProtocolError, match=r"compute_resources\.0\.id.*greater than or equal to 0"):
        p.handle(message(0.0, begins([host(-1, core="1"), host(0, core="1")], PROFILES)))


@pytest.mark.parametrize("now", [1.7e308, 1e15, 2.0**33 + 1])
def test_a_clock_too_far_to_resolve_is_a_protocol_error_not_a_hang(now):
    """Once t + 0.02 == t the adapter's instants (instant.py) stopped moving: it neither answered nor
    exited. The case is bounded by the module's timeout mark."""
    p = started()
    with pytest.raises(ProtocolError, match="within 8589934592 s"):
        p.handle(message(now, submitted(now, "w0!1")))


def test_a_clock_of_a_century_still_runs():
    p = started()
    t = 3.2e9  # about a century: still resolved to Batsim's 1e-6 s
    assert [kind for kind, _ in decided(p, message(t, submitted(t, "w0!1")))] == ["EXECUTE_JOB"]


@pytest.mark.parametrize("executed", [False, None], ids=["pending", "unknown"])
def test_job_completed_for_a_job_never_executed_is_a_protocol_error(executed):
    p = started()
    job = "w0!1" if executed is False else "w0!9"
    with pytest.raises(ProtocolError, match=f"JOB_COMPLETED for job '{job}'"):
        p.handle(message(1.0, submitted(1.0, "w0!1"), completed(1.0, job, "0")))


def _killed(p):
    p.disruptions.kill("w0!1")
    p.disruptions.flush_kills(Reply(11.0))
    p.handle(message(11.0, {"timestamp": 11.0, "type": "JOB_KILLED", "data": {"job_ids": ["w0!1"]}}))


def _completed(state):
    return lambda p: p.handle(message(11.0, completed(11.0, "w0!1", "0", state)))


@pytest.mark.parametrize(
    "first", [_completed("COMPLETED_SUCCESSFULLY"), _completed("COMPLETED_FAILED"), _killed],
    ids=["succeeded", "failed", "killed"],
)
def test_a_second_job_completed_is_a_protocol_error_not_a_second_execution(first):
    """Batsim completes a job once; acting on a repeat would EXECUTE_JOB or KILL_JOB a finished job,
    both of which Batsim aborts on."""
    p = started(hosts=1)
    assert decided(p, message(1.0, submitted(1.0, "w0!1"), submitted(1.0, "w0!2")))[0][0] == "EXECUTE_JOB"
    first(p)
    with pytest.raises(ProtocolError, match="JOB_COMPLETED for job 'w0!1', which was already completed"):
        p.handle(message(12.0, completed(12.0, "w0!1", "0")))


def test_job_completed_for_a_rejected_job_is_a_protocol_error():
    p = started()
    assert decided(p, message(1.0, submitted(1.0, "w0!1", res=0))) == [("REJECT_JOB", {"job_id": "w0!1"})]
    with pytest.raises(ProtocolError, match="JOB_COMPLETED for job 'w0!1', which was rejected"):
        p.handle(message(2.0, completed(2.0, "w0!1", "0")))


def test_job_completed_after_execution_is_accepted():
    p = started()
    assert decided(p, message(1.0, submitted(1.0, "w0!1")))[0][0] == "EXECUTE_JOB"
    p.handle(message(11.0, completed(11.0, "w0!1", "0")))
    assert p.fatal is None and p.records["w0!1"].state == "Succeeded"


def test_serve_ends_at_once_when_its_batsim_disconnects(tmp_path):
    """Not after --idle-timeout (600 s): the socket monitor sees the peer's connection close, and the
    outputs so far are kept with the reason."""
    import subprocess
    import sys
    import time

    sock = tmp_path / "s"
    out = tmp_path / "out"
    serve = subprocess.Popen(
        [sys.executable, "-m", "batkube_py.cli", "serve", "--socket", f"ipc://{sock}", "-o", str(out),
         "--idle-timeout", "600"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        replies: list = []
        _peer(f"ipc://{sock}", _batsim_script()[:2], replies)  # SIMULATION_BEGINS, a job; then it hangs up
        t0 = time.monotonic()
        output, _ = serve.communicate(timeout=15)
        waited = time.monotonic() - t0
    finally:
        serve.kill()
    assert len(replies) == 2
    assert serve.returncode != 0 and "closed its connection" in output, output
    assert "Traceback" not in output and waited < 10
    summary = json.loads((out / "summary.json").read_text())
    assert "closed its connection" in summary["error"] and summary["jobs_total"] == 1
