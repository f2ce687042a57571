"""Where the double once differed from real Batsim 4.2.1 after loading, each run on both with the same
scripted decision process: they must end the same way (exit, the line Batsim dies with, out_jobs.csv).

- a parallel task with no work: Batsim records a 1e-5 s runtime (and finish time) instead of 0;
- a platform whose routes do not reach the master host: Batsim aborts at the first job completion;
- a composed profile registered by the decision process: Batsim dies of SIGSEGV at its EXECUTE_JOB;
- a finished job's profile named by a job registered later: Batsim aborts, unless profiles are reused.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import zmq
from shared_support import real_batsim

pytestmark = pytest.mark.timeout(120)
DOUBLE = [sys.executable, str(Path(__file__).resolve().parent / "batsim_double" / "batsim")]
SCRIPT = list[tuple[str, list[dict]]]


def scripted(batsim: list[str], script: SCRIPT, args: list[str]) -> tuple[int, str]:
    """Run `batsim` against a decision process that answers the next message holding an event of type
    `script[0][0]` with `script[0][1]` (then drops that entry), and every other message with nothing."""
    script = list(script)
    sock = zmq.Context.instance().socket(zmq.REP)
    sock.setsockopt(zmq.LINGER, 0)
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    proc = subprocess.Popen([*batsim, *args, "-s", f"tcp://127.0.0.1:{port}"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            if not sock.poll(100):
                if proc.poll() is not None:
                    break
                continue
            msg = json.loads(sock.recv())
            types = [ev["type"] for ev in msg["events"]]
            events = script.pop(0)[1] if script and script[0][0] in types else []
            sock.send(json.dumps({"now": msg["now"], "events": [
                {"timestamp": msg["now"], **ev} for ev in events]}).encode())  # fmt: skip
            if "SIMULATION_ENDS" in types:
                break
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        sock.close()
    return proc.returncode, err


def _last_words(stderr: str) -> list[str]:
    keep = ("[root/CRITICAL]", "[xbt_exception/CRITICAL] Uncaught", "Segmentation fault")
    return [line for line in stderr.splitlines() if any(k in line for k in keep)]


def _both(tmp_path: Path, platform: str, workload: dict, script: SCRIPT, *flags: str) -> tuple[tuple, tuple]:
    (tmp_path / "p.xml").write_text(platform)
    (tmp_path / "w.json").write_text(json.dumps(workload))
    out = []
    for name, batsim in (("real", [str(real_batsim())]), ("double", DOUBLE)):
        prefix = tmp_path / name / "out"
        prefix.parent.mkdir()
        code, err = scripted(batsim, script, ["-p", str(tmp_path / "p.xml"), "-w", str(tmp_path / "w.json"),
                                              "-e", str(prefix), *flags])  # fmt: skip
        jobs = prefix.with_name("out_jobs.csv")
        out.append((code if code in (0, -11) else "abort", _last_words(err),
                    jobs.read_text() if jobs.exists() and code == 0 else None))  # fmt: skip
    return out[0], out[1]


def _cluster(master_route: bool) -> str:
    route = ('<zoneRoute src="compute" dst="master" gw_src="node-compute_router" '
             'gw_dst="master_hostmaster_router"><link_ctn id="backbone"/></zoneRoute>')
    route = route if master_route else ""
    cluster = 'speed="1Gf" bw="125MBps" lat="50us" bb_bw="2.25GBps" bb_lat="500us"'
    return (f'<?xml version="1.0"?><!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">'
            f'<platform version="4.1"><zone id="AS0" routing="Full">'
            f'<cluster id="compute" prefix="node-" suffix="" radical="0-1" {cluster}/>'
            f'<cluster id="master" prefix="master_host" suffix="" radical="0-0" {cluster}>'
            f'<prop id="role" value="master"/></cluster>'
            f'<link id="backbone" bandwidth="1.25GBps" latency="500us"/>{route}'
            "</zone></platform>")  # fmt: skip


def _execute(job: str, alloc: str) -> dict:
    return {"type": "EXECUTE_JOB", "data": {"job_id": job, "alloc": alloc}}


def _register(job: str, profile: str, subtime: float = 0) -> dict:
    body = {"id": job, "subtime": subtime, "res": 1, "profile": profile}
    return {"type": "REGISTER_JOB", "data": {"job_id": job, "job": body}}


DELAY = {"type": "delay", "delay": 3}
FINISH = {"type": "NOTIFY", "data": {"type": "registration_finished"}}
JOB = {"id": "1", "subtime": 0, "res": 1, "profile": "d"}


@pytest.mark.parametrize("profile", [
    {"type": "parallel_homogeneous", "cpu": 0, "com": 0},
    {"type": "parallel", "cpu": [0, 0], "com": [0, 0, 0, 0]},
    {"type": "composed", "seq": ["none", "none"]},
], ids=["parallel_homogeneous", "parallel", "composed"])  # fmt: skip
def test_a_parallel_task_with_no_work_runs_for_batsims_epsilon(tmp_path, profile):
    workload = {"nb_res": 2, "jobs": [{"id": "1", "subtime": 0, "res": 2, "profile": "p"}],
                "profiles": {"p": profile, "none": {"type": "parallel_homogeneous", "cpu": 0, "com": 0}}}
    real, double = _both(tmp_path, _cluster(True), workload, [("JOB_SUBMITTED", [_execute("w0!1", "0-1")])])
    assert real[0] == 0 and ",0.000010," in real[2]
    assert double == real


def test_a_platform_whose_routes_miss_the_master_host_aborts_at_the_first_completion(tmp_path):
    workload = {"nb_res": 2, "jobs": [JOB], "profiles": {"d": DELAY}}
    real, double = _both(tmp_path, _cluster(False), workload, [("JOB_SUBMITTED", [_execute("w0!1", "0")])])
    assert real[0] == "abort" and "Bad gateways for route from 'node-0' to 'master_host0'" in real[1][0]
    assert double == real


def test_a_registered_composed_profile_crashes_both_at_its_execution(tmp_path):
    workload = {"nb_res": 2, "jobs": [JOB], "profiles": {"d": DELAY}}
    profile = {"type": "composed", "seq": ["d"]}
    data = {"workload_name": "w0", "profile_name": "c", "profile": profile}
    events = [{"type": "REGISTER_PROFILE", "data": data}, _register("w0!x", "c"), _execute("w0!x", "1")]
    script = [("JOB_SUBMITTED", [*events, _execute("w0!1", "0")])]
    real, double = _both(tmp_path, _cluster(True), workload, script, "--enable-dynamic-jobs")
    assert real[0] == -11 and real[1] == ["Segmentation fault."]
    assert double == real


@pytest.mark.parametrize("reuse", [False, True], ids=["no-profile-reuse", "profile-reuse"])
def test_a_finished_jobs_profile_is_gone_unless_profiles_are_reused(tmp_path, reuse):
    workload = {"nb_res": 2, "jobs": [{"id": "1", "subtime": 0, "res": 1, "profile": "c"}],
                "profiles": {"c": {"type": "composed", "seq": ["d"]}, "d": DELAY}}
    script = [("JOB_SUBMITTED", [_execute("w0!1", "0")]),
              ("JOB_COMPLETED", [{"type": "CALL_ME_LATER", "data": {"timestamp": 5}}]),
              ("REQUESTED_CALL", [_register("w0!y", "c", 3), _execute("w0!y", "1"), FINISH])]  # fmt: skip
    flags = ["--enable-dynamic-jobs", *(["--enable-profile-reuse"] if reuse else [])]
    real, double = _both(tmp_path, _cluster(True), workload, script, *flags)
    if reuse:
        assert real[0] == 0 and "y,w0,c," in real[2]
    else:
        assert real[0] == "abort" and "Cannot get profile 'c': it existed some time ago" in real[1][0]
    assert double == real
