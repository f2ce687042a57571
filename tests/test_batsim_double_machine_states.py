"""The double's machine states (batkube_py/batsim_double/machine_states.py): out_machine_states.csv with
unavailable machines, and Batsim 4.2.1's aborts on machine events (server.cpp's xbt_asserts). The
byte-for-byte comparison with real Batsim's files is in the transcript replays."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from batkube_py.batsim_double import BatsimDouble
from batkube_py.batsim_double.machine_states import machine_ids
from batkube_py.inputs.platforms import cluster_platform

WORKLOAD = {
    "nb_res": 4,
    "jobs": [{"id": "1", "subtime": 0, "res": 1, "walltime": 100, "profile": "d10"}],
    "profiles": {"d10": {"type": "delay", "delay": 10}},
}


def _inputs(tmp_path: Path, *events: tuple[float, str, str]) -> tuple[Path, Path, Path]:
    (tmp_path / "p.xml").write_text(cluster_platform(4, "1"))
    (tmp_path / "w.json").write_text(json.dumps(WORKLOAD))
    lines = [json.dumps({"timestamp": t, "type": kind, "resources": res}) for t, kind, res in events]
    (tmp_path / "e.jsonl").write_text("".join(line + "\n" for line in lines))
    return tmp_path / "p.xml", tmp_path / "w.json", tmp_path / "e.jsonl"


def _drive(double: BatsimDouble) -> None:
    """A decision process that runs every submitted job on machine 0."""
    text = double.start()
    while text is not None:
        msg = json.loads(text)
        now = msg["now"]
        jobs = [e["data"]["job_id"] for e in msg["events"] if e["type"] == "JOB_SUBMITTED"]
        out = [{"timestamp": now, "type": "EXECUTE_JOB", "data": {"job_id": j, "alloc": "0"}} for j in jobs]
        text = double.on_reply(json.dumps({"now": now, "events": out}))


def test_a_machine_unavailable_under_its_job_is_neither_idle_nor_computing(tmp_path: Path) -> None:
    p, w, e = _inputs(tmp_path, (5, "machine_unavailable", "0-1"), (20, "machine_available", "0-1"))
    double = BatsimDouble(str(p), [str(w)], events_path=str(e), export_prefix=str(tmp_path / "out"))
    _drive(double)
    assert double.exit_code == 0
    rows = (tmp_path / "out_machine_states.csv").read_text().splitlines()
    assert rows[0] == "time,nb_sleeping,nb_switching_on,nb_switching_off,nb_idle,nb_computing"
    # the start (3 idle, 1 computing); at the end machine 0 is unavailable: it does not turn idle, and
    # machine 1 (unavailable, no job) is counted nowhere
    assert [r.split(",")[1:] for r in rows[1:]] == [["0", "0", "0", "3", "1"], ["0", "0", "0", "2", "0"]]
    assert float(rows[2].split(",")[0]) > 10


def _run_double(tmp_path: Path, *events: tuple[float, str, str]) -> subprocess.CompletedProcess:
    p, w, e = _inputs(tmp_path, *events)
    fcfs = (
        "import json, sys, zmq\n"
        "s = zmq.Context().socket(zmq.REP); s.bind(sys.argv[1])\n"
        "while True:\n"
        "    m = json.loads(s.recv())\n"
        "    ev = [{'timestamp': m['now'], 'type': 'EXECUTE_JOB', 'data': {'job_id': x['data']['job_id'],"
        " 'alloc': '0'}} for x in m['events'] if x['type'] == 'JOB_SUBMITTED']\n"
        "    s.send(json.dumps({'now': m['now'], 'events': ev}).encode())\n"
    )
    endpoint = f"ipc://{tmp_path}/s"
    dp = subprocess.Popen([sys.executable, "-c", fcfs, endpoint])
    try:
        return subprocess.run(
            [sys.executable, "-m", "batkube_py.batsim_double", "-p", str(p), "-w", str(w), "--events", str(e),
             "-e", str(tmp_path / "out"), "-s", endpoint],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    finally:
        dp.kill()
        dp.wait()


def test_a_machine_made_unavailable_twice_aborts_like_batsim(tmp_path: Path) -> None:
    r = _run_double(tmp_path, (5, "machine_unavailable", "3"), (6, "machine_unavailable", "2-3"))
    assert r.returncode == 134 and "Traceback" not in r.stderr
    assert (
        "../src/server.cpp:343: [root/CRITICAL] The making of machine 3 ('node-3') unavailable was requested "
        "but this machine was already in UNAVAILABLE state." in r.stderr
    )
    assert (tmp_path / "out_machine_states.csv").read_text() == ""  # an abort flushes nothing


def test_an_available_machine_made_available_aborts_like_batsim(tmp_path: Path) -> None:
    r = _run_double(tmp_path, (5, "machine_available", "1"))
    assert r.returncode == 134
    assert (
        "../src/server.cpp:370: [root/CRITICAL] The making of machine 1 ('node-1') available was requested "
        "but this machine was not in UNAVAILABLE state (current state: idle)." in r.stderr
    )


def test_interval_sets_as_batsim_writes_them() -> None:
    assert machine_ids("0-2 5") == [0, 1, 2, 5] and machine_ids("7") == [7] and machine_ids("") == []
