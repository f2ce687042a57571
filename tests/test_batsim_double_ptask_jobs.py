"""Ptask jobs end to end in the double: walltimes, kills, composed sequences, mappings.

No real-Batsim transcript pins these paths yet (../shared/batsim/transcripts-gang has no walltime or kill),
so the expectations are the mechanism read in Batsim 4.2.1 (jobs_execution.cpp, task_execution.cpp,
jobs.cpp) and SimGrid 3.32 (ActivityImpl::wait_for, ExecImpl::post): a ptask waits for at most the
walltime left and is then reported COMPLETED_WALLTIME_REACHED after exactly that long; a killed ptask is
cancelled and its progress is 1 - the action's remaining fraction; a composed job reports the tree.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from batkube_py.batsim_double import BatsimDouble

PLATFORM = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
<zone id="AS0" routing="Full">
  <cluster id="rack0" prefix="node-" suffix="" radical="0-3" speed="1Gf" core="4" bw="1.25GBps" lat="50us"
           bb_bw="2.5GBps" bb_lat="5us" loopback_bw="10GBps" loopback_lat="1us"/>
  <cluster id="master" prefix="master_host" suffix="" radical="0-0" speed="1Gf" bw="1.25GBps" lat="50us"
           bb_bw="2.5GBps" bb_lat="5us"><prop id="role" value="master"/></cluster>
  <link id="up" bandwidth="1.25GBps" latency="500us"/>
  <zoneRoute src="rack0" dst="master" gw_src="node-rack0_router" gw_dst="master_hostmaster_router">
    <link_ctn id="up"/></zoneRoute>
</zone>
</platform>
"""
PROFILES = {
    "ph": {"type": "parallel_homogeneous", "cpu": 10e9, "com": 0},
    "d1": {"type": "delay", "delay": 1},
    "seq": {"type": "composed", "repeat": 2, "seq": ["d1", "ph"]},
    "par": {"type": "parallel", "cpu": [1e9, 2e9], "com": [0, 1e8, 0, 0]},
}


def run(
    tmp_path: Path,
    jobs: list[dict[str, Any]],
    plan: dict[str, dict[str, Any]],
    kill_at: dict[str, float] | None = None,
) -> tuple[list[dict], str]:
    """A tiny decision process: each submitted job starts at once with its plan (alloc, mapping); a job in
    kill_at is killed that many seconds after it started (CALL_ME_LATER)."""
    (tmp_path / "p.xml").write_text(PLATFORM)
    (tmp_path / "w.json").write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": PROFILES}))
    double = BatsimDouble(
        str(tmp_path / "p.xml"), [str(tmp_path / "w.json")], export_prefix=str(tmp_path / "o")
    )
    events: list[dict] = []
    text = double.start()
    kills: dict[float, str] = {}
    while text is not None:
        msg = json.loads(text)
        now = msg["now"]
        out = []
        for ev in msg["events"]:
            events.append(ev)
            if ev["type"] == "JOB_SUBMITTED":
                jid = ev["data"]["job_id"]
                out.append({"timestamp": now, "type": "EXECUTE_JOB", "data": {"job_id": jid, **plan[jid]}})
                if kill_at and jid in kill_at:
                    kills[now + kill_at[jid]] = jid
                    out.append(
                        {"timestamp": now, "type": "CALL_ME_LATER", "data": {"timestamp": now + kill_at[jid]}}
                    )
            elif ev["type"] == "REQUESTED_CALL":
                due = [t for t in kills if t <= now]
                out.append(
                    {"timestamp": now, "type": "KILL_JOB", "data": {"job_ids": [kills.pop(t) for t in due]}}
                )
        text = double.on_reply(json.dumps({"now": now, "events": out}))
    assert double.exit_code == 0, double.outcome
    return events, (tmp_path / "o_jobs.csv").read_text()


def _rows(csv: str) -> dict[str, dict[str, str]]:
    lines = csv.splitlines()
    head = lines[0].split(",")
    return {row.split(",")[0]: dict(zip(head, row.split(","), strict=False)) for row in lines[1:]}


def test_walltime_stops_a_ptask_after_exactly_the_walltime(tmp_path: Path) -> None:
    # 10e9 flops at one core (1e9/s) needs 10 s; the walltime (4 s) times the wait out.
    _, csv = run(
        tmp_path,
        [{"id": "1", "subtime": 0, "res": 1, "profile": "ph", "walltime": 4}],
        {"w0!1": {"alloc": "0"}},
    )
    row = _rows(csv)["1"]
    assert row["final_state"] == "COMPLETED_WALLTIME_REACHED"
    assert float(row["execution_time"]) == 4.0


def test_walltime_is_one_budget_for_a_composed_job(tmp_path: Path) -> None:
    # d1 (1 s) then ph (10 s): with 5 s of walltime the ptask may wait 4 s, so the job stops at 5 s.
    _, csv = run(
        tmp_path,
        [{"id": "1", "subtime": 0, "res": 1, "profile": "seq", "walltime": 5}],
        {"w0!1": {"alloc": "0"}},
    )
    row = _rows(csv)["1"]
    assert row["final_state"] == "COMPLETED_WALLTIME_REACHED"
    assert float(row["execution_time"]) == pytest.approx(5.0, abs=1e-6)


def test_composed_runs_its_sequence_repeat_times(tmp_path: Path) -> None:
    _, csv = run(
        tmp_path,
        [{"id": "1", "subtime": 0, "res": 1, "profile": "seq", "walltime": -1}],
        {"w0!1": {"alloc": "0"}},
    )
    assert float(_rows(csv)["1"]["execution_time"]) == pytest.approx(2 * (1 + 10), abs=1e-6)


def test_killing_a_ptask_reports_its_progress(tmp_path: Path) -> None:
    events, csv = run(
        tmp_path,
        [{"id": "1", "subtime": 0, "res": 1, "profile": "ph", "walltime": -1}],
        {"w0!1": {"alloc": "0"}},
        kill_at={"w0!1": 5.0},
    )
    killed = next(ev for ev in events if ev["type"] == "JOB_KILLED")
    progress = killed["data"]["job_progress"]["w0!1"]
    assert progress["profile_name"] == "ph"
    assert progress["progress"] == pytest.approx(0.5, abs=1e-3)  # 5 s of 10, give or take the messages
    assert _rows(csv)["1"]["final_state"] == "COMPLETED_KILLED"


def test_killing_a_composed_job_reports_the_tree(tmp_path: Path) -> None:
    events, _ = run(
        tmp_path,
        [{"id": "1", "subtime": 0, "res": 1, "profile": "seq", "walltime": -1}],
        {"w0!1": {"alloc": "0"}},
        kill_at={"w0!1": 13.5},
    )
    progress = next(ev for ev in events if ev["type"] == "JOB_KILLED")["data"]["job_progress"]["w0!1"]
    # 13.5 s in: d1, ph (11 s), then d1 again for 1 s, then 1.5 s of the second ph
    assert progress["profile_name"] == "seq"
    assert progress["current_task_index"] == 3
    assert progress["current_task"]["profile_name"] == "ph"
    assert progress["current_task"]["progress"] == pytest.approx(0.15, abs=1e-3)


def test_mapping_runs_executors_on_shared_hosts(tmp_path: Path) -> None:
    # par on one host through a mapping: cpu 1e9 and 2e9 on the same 4-core host (a core each: the rate is
    # bounded by 1e9/2e9 = 0.5), 1e8 bytes over the loopback (1 us): 2 s.
    _, csv = run(
        tmp_path,
        [{"id": "1", "subtime": 0, "res": 2, "profile": "par", "walltime": -1}],
        {"w0!1": {"alloc": "2", "mapping": {"0": "0", "1": "0"}}},
    )
    row = _rows(csv)["1"]
    assert row["allocated_resources"] == "2"
    assert float(row["execution_time"]) == pytest.approx(2.000001, abs=1e-6)


def test_a_mapping_of_the_wrong_size_aborts_as_batsim(tmp_path: Path) -> None:
    (tmp_path / "p.xml").write_text(PLATFORM)
    jobs = [{"id": "1", "subtime": 0, "res": 2, "profile": "par", "walltime": -1}]
    (tmp_path / "w.json").write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": PROFILES}))
    double = BatsimDouble(str(tmp_path / "p.xml"), [str(tmp_path / "w.json")])
    text = double.start()
    while text is not None and "JOB_SUBMITTED" not in text:
        text = double.on_reply(json.dumps({"now": json.loads(text)["now"], "events": []}))
    now = json.loads(text)["now"]
    bad = {
        "timestamp": now,
        "type": "EXECUTE_JOB",
        "data": {"job_id": "w0!1", "alloc": "0", "mapping": {"0": 0}},
    }
    assert double.on_reply(json.dumps({"now": now, "events": [bad]})) is None
    assert double.exit_code == 134
    assert (
        "custom mapping size (1) does not match the job requested number of machines (2)"
        in double.outcome.message
    )
