"""The double refuses every workload real Batsim 4.2.1 refuses while loading it, with Batsim's message.

Each bad workload goes to ../shared's real Batsim and to the double (its command line, in process): both
must abort (real Batsim by SIGABRT, the double with exit code 134) and print the same line, Batsim's
`[root/CRITICAL]` line (file:line included) or rapidjson's assertion. The corpus walks through the checks
of Batsim's workload.cpp, jobs.cpp and profiles.cpp; bad platforms (machines.cpp) and events files
(events.cpp) are compared the same way. The valid workloads below compare SIMULATION_BEGINS, whose
profiles Batsim lists in its unordered map's order and prunes by reference counts.
"""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import pytest
import zmq
from shared_support import real_batsim

from batkube_py.batsim_double import BatsimDouble
from batkube_py.batsim_double.cli import main

pytestmark = pytest.mark.timeout(120)
PLATFORM = str(Path(__file__).resolve().parents[1] / "platforms" / "cluster_16x1core.xml")
D = {"type": "delay", "delay": 1}


def W(jobs=None, profiles=None, nb_res=1, **top) -> str:  # noqa: N802
       doc = {"nb_res": nb_res, "jobs": [J()] if jobs is None else jobs, "profiles": profiles or {"p": D}}
       return json.dumps({**doc, **top})


def J(**fields) -> dict:  # noqa: N802
       """A job; a field given as ... is left out."""
       job = {"id": "1", "subtime": 0, "res": 1, "profile": "p", **fields}
       return {k: v for k, v in job.items() if v is not ...}


def P(**profile) -> str:  # noqa: N802
       return W(profiles={"p": profile})


BAD = {
    "not-json": "{nb_res: 1}",
    "nan": '{"nb_res":1,"jobs":[],"profiles":{"p":{"type":"delay","delay":NaN}}}',
    "huge-number": '{"nb_res":1,"jobs":[],"profiles":{"p":{"type":"delay","delay":1e400}}}',
    "array": "[]",
    "no-nb_res": json.dumps({"jobs": [], "profiles": {}}),
    "nb_res-float": W(nb_res=1.0),
    "nb_res-zero": W(nb_res=0),
    "nb_res-negative": W(nb_res=-3),
    "nb_res-int64": W(nb_res=2**40),
    "no-profiles": json.dumps({"nb_res": 1, "jobs": []}),
    "profiles-array": json.dumps({"nb_res": 1, "jobs": [], "profiles": []}),
    "profile-not-object": W(profiles={"p": 5}),
    "profile-no-type": P(delay=1),
    "profile-type-int": P(type=3),
    "ret-string": P(type="delay", delay=1, ret="x"),
    "ret-float": P(type="delay", delay=1, ret=1.0),
    "delay-zero": P(type="delay", delay=0),
    "delay-negative": P(type="delay", delay=-2.5),
    "delay-missing": P(type="delay"),
    "delay-string": P(type="delay", delay="10"),
    "parallel-no-cpu": P(type="parallel", com=[0]),
    "parallel-no-com": P(type="parallel", cpu=[1]),
    "parallel-cpu-scalar": P(type="parallel", cpu=1, com=[0]),
    "parallel-cpu-empty": P(type="parallel", cpu=[], com=[]),
    "parallel-cpu-string": P(type="parallel", cpu=["1"], com=[0]),
    "parallel-cpu-negative": P(type="parallel", cpu=[-1], com=[0]),
    "parallel-com-scalar": P(type="parallel", cpu=[1], com=0),
    "parallel-com-size": P(type="parallel", cpu=[1, 1], com=[0, 0, 0]),
    "parallel-com-negative": P(type="parallel", cpu=[1], com=[-1]),
    "parallel-res-mismatch": W(profiles={"p": {"type": "parallel", "cpu": [1, 1], "com": [0, 0, 0, 0]}}),
    "ph-no-cpu": P(type="parallel_homogeneous", com=0),
    "ph-cpu-negative": P(type="parallel_homogeneous", cpu=-1e9, com=0),
    "ph-com-string": P(type="parallel_homogeneous", cpu=1, com="0"),
    "pht-com-negative": P(type="parallel_homogeneous_total", cpu=1, com=-0.5),
    "pht-no-com": P(type="parallel_homogeneous_total", cpu=1),
    "composed-no-seq": P(type="composed"),
    "composed-seq-empty": P(type="composed", seq=[]),
    "composed-seq-string": P(type="composed", seq="d"),
    "composed-seq-int": P(type="composed", seq=[1]),
    "composed-repeat-zero": W(profiles={"p": {"type": "composed", "seq": ["d"], "repeat": 0}, "d": D}),
    "composed-repeat-negative": W(profiles={"p": {"type": "composed", "seq": ["d"], "repeat": -2}, "d": D}),
    "composed-repeat-float": W(profiles={"p": {"type": "composed", "seq": ["d"], "repeat": 1.5}, "d": D}),
    "composed-unknown-member": W(profiles={"p": {"type": "composed", "seq": ["nope"]}}),
    "composed-unused-unknown-member": W(profiles={"p": D, "c": {"type": "composed", "seq": ["nope"]}}),
    "unknown-type": P(type="sleep", delay=1),
    "smpi-no-trace": P(type="smpi"),
    "usage-trace-missing-file": P(type="usage_trace", trace="nope.txt"),
    "pfs-nothing": P(type="parallel_homogeneous_pfs"),
    "pfs-bytes-string": P(type="parallel_homogeneous_pfs", bytes_to_read="1"),
    "pfs-storage-int": P(type="parallel_homogeneous_pfs", bytes_to_read=1, storage=3),
    "staging-negative": P(type="data_staging", nb_bytes=-1, **{"from": "a", "to": "b"}),
    "staging-no-to": P(type="data_staging", nb_bytes=1, **{"from": "a"}),
    "send-no-msg": P(type="send"),
    "send-msg-string": P(type="send", msg="x"),
    "send-sleeptime-zero": P(type="send", msg={}, sleeptime=0),
    "recv-regex-int": P(type="recv", regex=5),
    "recv-polltime-negative": P(type="recv", polltime=-1),
    "duplicate-profile": '{"nb_res":1,"jobs":[],"profiles":{"p":{"type":"delay","delay":1},'
                         '"p":{"type":"delay","delay":2}}}',
    "no-jobs": json.dumps({"nb_res": 1, "profiles": {"p": D}}),
    "jobs-object": json.dumps({"nb_res": 1, "jobs": {}, "profiles": {"p": D}}),
    "job-not-object": W(jobs=[5]),
    "job-no-id": W(jobs=[J(id=...)]),
    "job-id-float": W(jobs=[J(id=1.5)]),
    "job-id-int64": W(jobs=[J(id=2**40)]),
    "job-id-bang": W(jobs=[J(id="a!b")]),
    "job-id-three-parts": W(jobs=[J(id="w0!a!b")]),
    "job-id-workload-only": W(jobs=[J(id="xw0y")]),
    "job-id-comma": W(jobs=[J(id="a,b")]),
    "job-no-subtime": W(jobs=[J(subtime=...)]),
    "job-subtime-string": W(jobs=[J(subtime="0")]),
    "walltime-negative": W(jobs=[J(walltime=-5)]),
    "walltime-zero": W(jobs=[J(walltime=0)]),
    "walltime-fraction": W(jobs=[J(walltime=-0.25)]),
    "walltime-string": W(jobs=[J(walltime="10")]),
    "job-no-res": W(jobs=[J(res=...)]),
    "job-res-float": W(jobs=[J(res=1.0)]),
    "job-res-negative": W(jobs=[J(res=-1)]),
    "job-no-profile": W(jobs=[J(profile=...)]),
    "job-profile-int": W(jobs=[J(profile=1)]),
    "job-profile-unknown": W(jobs=[J(profile="q")]),
    "duplicate-job": W(jobs=[J(), J(id=1)]),
    "duplicate-job-prefixed": W(jobs=[J(id="w0!1"), J(id="1")]),
}


def _critical(stderr: str) -> str | None:
    lines = stderr.splitlines()
    keep = ("[root/CRITICAL]", "Assertion", "[xbt_exception/CRITICAL] Uncaught")
    return next((line for line in lines if any(k in line for k in keep)), None)


@pytest.mark.parametrize("case", BAD)
def test_the_double_refuses_what_real_batsim_refuses_with_its_message(case, tmp_path):
    workload = tmp_path / "w.json"
    workload.write_text(BAD[case])
    _both_refuse(tmp_path, PLATFORM, workload)


@pytest.mark.parametrize("case", BAD)
def test_the_double_alone_refuses_each_bad_workload(case, tmp_path):
    """The same corpus without ../shared: the double aborts before simulating, in one line."""
    workload = tmp_path / "w.json"
    workload.write_text(BAD[case])
    err = io.StringIO()
    args = ["-p", PLATFORM, "-w", str(workload), "-s", "tcp://127.0.0.1:1", "-e", str(tmp_path / "d")]
    assert main([*args, "--max-wait", "1"], io.StringIO(), err) == 134
    assert _critical(err.getvalue()) is not None and "Traceback" not in err.getvalue()


_HOSTS = '<host id="node-0" speed="1Gf"/><host id="node-1" speed="{}"/><host id="master_host" speed="1Gf"/>'
_MASTER = '"node-1" speed="1Gf"><prop id="role" value="master"/></host>'
BAD_PLATFORMS = {
    "compute-host-speed-0": _HOSTS.format("0f"),
    "no-master-host": _HOSTS.format("1Gf").replace("master_host", "other"),
    "two-masters": _HOSTS.format("1Gf").replace('"node-1" speed="1Gf"/>', _MASTER),
}


@pytest.mark.parametrize("case", BAD_PLATFORMS)
def test_the_double_refuses_the_platforms_real_batsim_refuses(case, tmp_path):
    platform = tmp_path / "p.xml"
    platform.write_text('<?xml version="1.0"?><!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">'
                        '<platform version="4.1"><zone id="z" routing="Full">'
                        f"{BAD_PLATFORMS[case]}</zone></platform>")
    workload = tmp_path / "w.json"
    workload.write_text(W())
    _both_refuse(tmp_path, str(platform), workload)


_UNAVAILABLE = {"timestamp": 1, "type": "machine_unavailable", "resources": "0"}
BAD_EVENTS = {
    "not-json": "xx",
    "array": "[1]",
    "blank-line": " ",
    "no-type": json.dumps({"timestamp": 1, "resources": "0"}),
    "type-int": json.dumps({**_UNAVAILABLE, "type": 5}),
    "no-timestamp": json.dumps({"type": "machine_unavailable", "resources": "0"}),
    "timestamp-string": json.dumps({**_UNAVAILABLE, "timestamp": "1"}),
    "timestamp-negative": json.dumps({**_UNAVAILABLE, "timestamp": -1}),
    "unknown-type": json.dumps({"timestamp": 1, "type": "foo"}),
    "no-resources": json.dumps({"timestamp": 1, "type": "machine_available"}),
    "resources-int": json.dumps({**_UNAVAILABLE, "resources": 0}),
    "resources-words": json.dumps({**_UNAVAILABLE, "resources": "a-b"}),
}


@pytest.mark.parametrize("case", BAD_EVENTS)
def test_the_double_refuses_the_events_real_batsim_refuses(case, tmp_path):
    events = tmp_path / "events.txt"
    events.write_text(json.dumps({**_UNAVAILABLE, "timestamp": 0.5}) + "\n" + BAD_EVENTS[case] + "\n")
    workload = tmp_path / "w.json"
    workload.write_text(W())
    _both_refuse(tmp_path, PLATFORM, workload, "--events", str(events))


def _both_refuse(tmp_path: Path, platform: str, workload: Path, *extra: str) -> None:
    batsim = real_batsim()
    args = ["-p", platform, "-w", str(workload), "-s", "tcp://127.0.0.1:1", *extra]
    real = subprocess.run([str(batsim), *args, "-e", str(tmp_path / "r")], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    err = io.StringIO()
    code = main([*args, "-e", str(tmp_path / "d"), "--max-wait", "1"], io.StringIO(), err)
    assert real.returncode == -6 and code == 134, (real.returncode, code, real.stderr[-500:])
    line = _critical(real.stderr)
    assert line is not None and _critical(err.getvalue()) == line


VALID = {
    "many-profiles": W(jobs=[J(id=str(i), profile=f"p{(7 * i) % 40}") for i in range(30)],
                       profiles={f"p{i}": {"type": "delay", "delay": i + 1, "x": i} for i in range(40)}),
    "composed-members": W(
        jobs=[J(profile="c1"), J(id="2", profile="d3")],
        profiles={"c1": {"type": "composed", "seq": ["c2", "d1"], "repeat": 2},
                  "c2": {"type": "composed", "seq": ["d2", "d2"]}, "d1": D, "d2": D, "d3": D,
                  **{f"u{i}": {"type": "composed", "seq": [f"m{i}"]} for i in range(12)},
                  **{f"m{i}": {"type": "delay", "delay": 2} for i in range(12)}}),
    "odd-ids": W(jobs=[J(id="w0!!5"), J(id="w0!"), J(id=7, res=0), J(id="x#1", walltime=-1)]),
}  # fmt: skip


def _real_first_message(batsim: Path, workload: Path, out: Path) -> str:
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.REP)
    sock.setsockopt(zmq.LINGER, 0)
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    proc = subprocess.Popen([str(batsim), "-p", PLATFORM, "-w", str(workload), "-e", str(out), "-q",
                             "-s", f"tcp://127.0.0.1:{port}"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        assert sock.poll(60_000), "real Batsim sent nothing"
        return sock.recv().decode()
    finally:
        proc.kill()
        proc.wait()
        sock.close()


@pytest.mark.parametrize("case", VALID)
def test_simulation_begins_lists_profiles_as_real_batsim_does(case, tmp_path):
    batsim = real_batsim()
    workload = tmp_path / "w.json"
    workload.write_text(VALID[case])
    recorded = _real_first_message(batsim, workload, tmp_path / "r")
    assert BatsimDouble(PLATFORM, [str(workload)]).start() == recorded
