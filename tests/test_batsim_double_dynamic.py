"""Dynamic jobs, kills and registration in the Batsim 4.2.1 double, driven in-process.

The expected behaviour comes from Batsim's source (protocol.cpp JsonProtocolReader::handle_register_job /
handle_register_profile / handle_notify, server.cpp server_on_register_* / server_on_killing_done /
is_simulation_finished, jobs.cpp JobIdentifier and Job::from_json); no real transcript of these paths exists
yet, so timestamps are the double's SimGrid model (the same one the transcript tests pin down).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from shared_support import shared

from batkube_py.batsim_double import BatsimDouble

PLATFORM = Path(__file__).resolve().parents[2] / "shared" / "batsim" / "transcripts" / "a_4hosts_6delays"
PLATFORM_XML = str(PLATFORM / "platform.xml")


@pytest.fixture(autouse=True)
def _needs_shared() -> None:
    shared("batsim", "transcripts", "a_4hosts_6delays")


WORKLOAD = {
    "nb_res": 4,
    "jobs": [{"id": "5", "subtime": 0, "res": 1, "walltime": 100, "profile": "d10"}],
    "profiles": {"d10": {"type": "delay", "delay": 10}},
}


def ev(t: float, etype: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": t, "type": etype, "data": data}


class Driver:
    def __init__(self, tmp_path: Path, **kwargs: Any) -> None:
        wl = tmp_path / "workload.json"
        wl.write_text(json.dumps(WORKLOAD))
        self.prefix = tmp_path / "out"
        self.double = BatsimDouble(PLATFORM_XML, [str(wl)], export_prefix=str(self.prefix), **kwargs)
        text = self.double.start()
        assert text is not None
        self.msg: dict[str, Any] | None = json.loads(text)

    def reply(self, now: float | None = None, *events: dict[str, Any]) -> dict[str, Any] | None:
        assert self.msg is not None
        now = self.msg["now"] if now is None else now
        text = self.double.on_reply(json.dumps({"now": now, "events": list(events)}))
        self.msg = json.loads(text) if text is not None else None
        return self.msg

    @property
    def now(self) -> float:
        assert self.msg is not None
        return float(self.msg["now"])

    def events(self) -> list[tuple[str, dict[str, Any]]]:
        assert self.msg is not None
        return [(e["type"], e["data"]) for e in self.msg["events"]]

    def csv(self, suffix: str) -> list[str]:
        return (self.prefix.parent / f"out_{suffix}.csv").read_text().splitlines()


def _submitted_then_notified(d: Driver) -> None:
    """Real Batsim sends the static NOTIFY in a message of its own after the submissions (it reaches the
    server once the first message went out: k_burst_graphene16)."""
    d.reply()
    assert [t for t, _ in d.events()] == ["JOB_SUBMITTED"]
    d.reply()
    assert [t for t, _ in d.events()] == ["NOTIFY"]


def _start_job5(d: Driver) -> None:
    """JOB_SUBMITTED w0!5 at 0.0018, NOTIFY, run it on host 0, wake up at 4."""
    _submitted_then_notified(d)
    d.reply(
        None,
        ev(d.now, "EXECUTE_JOB", {"job_id": "w0!5", "alloc": "0"}),
        ev(d.now, "CALL_ME_LATER", {"timestamp": 4.0}),
    )
    assert d.events() == [("REQUESTED_CALL", {})]


def test_config_flags_in_simulation_begins(tmp_path: Path) -> None:
    d = Driver(tmp_path, dynamic_jobs=True, ack_dynamic_jobs=True, profile_reuse=True)
    assert d.msg is not None
    cfg = d.msg["events"][0]["data"]["config"]
    assert (cfg["dynamic-jobs-enabled"], cfg["dynamic-jobs-acknowledged"], cfg["profile-reuse-enabled"]) == (
        True,
        True,
        True,
    )
    d2 = Driver(tmp_path)
    assert d2.msg is not None
    cfg2 = d2.msg["events"][0]["data"]["config"]
    assert not (
        cfg2["dynamic-jobs-enabled"] or cfg2["dynamic-jobs-acknowledged"] or cfg2["profile-reuse-enabled"]
    )


def test_cli_flags_reach_the_double() -> None:
    from batkube_py.batsim_double.argv import parse

    a = parse(["-p", "x", "--enable-dynamic-jobs", "--acknowledge-dynamic-jobs", "--enable-profile-reuse"])
    flags = ("--enable-dynamic-jobs", "--acknowledge-dynamic-jobs", "--enable-profile-reuse")
    assert [a.flag(f) for f in flags] == [True, True, True]


def test_kill_then_resubmit_as_dynamic_job(tmp_path: Path) -> None:
    d = Driver(tmp_path, dynamic_jobs=True, ack_dynamic_jobs=True)
    _start_job5(d)
    assert d.now == pytest.approx(4.0006)
    d.reply(4.0, ev(4.0, "KILL_JOB", {"job_ids": ["w0!5"]}))
    # JOB_COMPLETED (COMPLETED_KILLED) precedes JOB_KILLED; delay progress = elapsed / delay.
    assert d.msg == {
        "now": 4.0024,
        "events": [
            ev(
                4.0024,
                "JOB_COMPLETED",
                {"job_id": "w0!5", "job_state": "COMPLETED_KILLED", "return_code": -1, "alloc": "0"},
            ),
            ev(
                4.0024,
                "JOB_KILLED",
                {"job_ids": ["w0!5"], "job_progress": {"w0!5": {"profile_name": "d10", "progress": 0.39976}}},
            ),
        ],
    }
    t = d.now
    job = {"id": "w0!5#1", "subtime": t, "res": 1, "walltime": 100, "profile": "d10"}
    d.reply(
        t,
        ev(t, "REGISTER_JOB", {"job_id": "w0!5#1", "job": job}),
        ev(
            t,
            "REGISTER_PROFILE",
            {"workload_name": "dyn", "profile_name": "p3", "profile": {"type": "delay", "delay": 3}},
        ),
        ev(
            t,
            "REGISTER_JOB",
            {"job_id": "dyn!a", "job": {"id": "a", "subtime": 4, "res": 2, "profile": "p3", "x": "y"}},
        ),
    )
    # Acknowledged with the job as sent (id rewritten to wl!name, custom fields kept, subtime from the job).
    assert d.events() == [
        ("JOB_SUBMITTED", {"job_id": "w0!5#1", "job": {**job, "subtime": 4.0024}}),
        (
            "JOB_SUBMITTED",
            {"job_id": "dyn!a", "job": {"id": "dyn!a", "subtime": 4, "res": 2, "profile": "p3", "x": "y"}},
        ),
    ]
    assert [e["timestamp"] for e in d.msg["events"]] == [4.003, 4.0042]  # type: ignore[index]
    t = d.now
    d.reply(
        t,
        ev(t, "EXECUTE_JOB", {"job_id": "w0!5#1", "alloc": "0"}),
        ev(t, "EXECUTE_JOB", {"job_id": "dyn!a", "alloc": "1-2"}),
    )
    assert d.events() == [
        (
            "JOB_COMPLETED",
            {"job_id": "dyn!a", "job_state": "COMPLETED_SUCCESSFULLY", "return_code": 0, "alloc": "1-2"},
        )
    ]
    d.reply()
    assert d.events()[0][1]["job_id"] == "w0!5#1"
    # All jobs done, but registration is still open: Batsim sends nothing more until registration_finished.
    d.reply(None, ev(d.now, "NOTIFY", {"type": "registration_finished"}))
    assert [t for t, _ in d.events()] == ["SIMULATION_ENDS"]
    assert d.reply() is None
    assert d.double.outcome.status == "finished"
    rows = d.csv("jobs")
    assert rows[1:] == [
        '5,w0,d10,0.000000,1,100.000000,0,COMPLETED_KILLED,0.003600,3.997600,4.001200,0.003600,4.001200,1.000901,0,-1.000000,""',
        'a,dyn,p3,4.000000,2,-1.000000,1,COMPLETED_SUCCESSFULLY,4.006000,3.000000,7.006000,0.006000,3.006000,1.002000,1-2,-1.000000,""',
        '5#1,w0,d10,4.002400,1,100.000000,1,COMPLETED_SUCCESSFULLY,4.005400,10.000000,14.005400,0.003000,10.003000,1.000300,0,-1.000000,""',
    ]
    sched = dict(zip(*[line.split(",") for line in d.csv("schedule")], strict=True))
    assert (
        sched["nb_jobs"],
        sched["nb_jobs_finished"],
        sched["nb_jobs_killed"],
        sched["nb_jobs_success"],
    ) == ("3", "3", "1", "2")
    assert sched["success_rate"] == "0.666667"


def test_no_ack_without_flag_and_no_end_before_registration_finished(tmp_path: Path) -> None:
    d = Driver(tmp_path, dynamic_jobs=True)
    _submitted_then_notified(d)
    t = d.now
    d.reply(
        t,
        ev(
            t,
            "REGISTER_JOB",
            {"job_id": "w0!6", "job": {"id": "6", "subtime": 0, "res": 1, "profile": "d10"}},
        ),
        ev(t, "EXECUTE_JOB", {"job_id": "w0!6", "alloc": "1"}),  # usable in the same message
        ev(t, "EXECUTE_JOB", {"job_id": "w0!5", "alloc": "0"}),
    )
    completed = [data["job_id"] for typ, data in d.events() if typ == "JOB_COMPLETED"]
    assert sorted(completed) == ["w0!5", "w0!6"]  # no JOB_SUBMITTED echo without --acknowledge-dynamic-jobs
    assert all(typ != "JOB_SUBMITTED" for typ, _ in d.events())
    assert d.reply() is None  # nothing left to do, registration open: Batsim stays silent (SimGrid deadlock)
    assert d.double.outcome.status == "deadlock"


def test_continue_registration_reopens(tmp_path: Path) -> None:
    d = Driver(tmp_path, dynamic_jobs=True)
    _submitted_then_notified(d)
    t = d.now
    d.reply(
        t,
        ev(t, "NOTIFY", {"type": "registration_finished"}),
        ev(t, "NOTIFY", {"type": "continue_registration"}),
        ev(
            t,
            "REGISTER_JOB",
            {"job_id": "w0!7", "job": {"id": "w0!7", "subtime": 0, "res": 1, "profile": "d10"}},
        ),
        ev(t, "EXECUTE_JOB", {"job_id": "w0!5", "alloc": "0"}),
        ev(t, "EXECUTE_JOB", {"job_id": "w0!7", "alloc": "1"}),
        ev(t, "NOTIFY", {"type": "registration_finished"}),
    )
    assert len([1 for typ, _ in d.events() if typ == "JOB_COMPLETED"]) == 2
    assert [t for t, _ in d.events()] == ["JOB_COMPLETED", "JOB_COMPLETED"]
    d.reply()
    assert [t for t, _ in d.events()] == ["SIMULATION_ENDS"]


def test_kill_racing_with_completion(tmp_path: Path) -> None:
    d = Driver(tmp_path, dynamic_jobs=True)
    _start_job5(d)
    # The decision process answers with a `now` past the job's end (10.003): the job completes while the
    # reply is applied, then the kill finds a completed job -> JOB_KILLED with an empty progress map.
    d.reply(10.5, ev(10.5, "KILL_JOB", {"job_ids": ["w0!5"]}))
    assert d.events() == [
        (
            "JOB_COMPLETED",
            {"job_id": "w0!5", "job_state": "COMPLETED_SUCCESSFULLY", "return_code": 0, "alloc": "0"},
        ),
        ("JOB_KILLED", {"job_ids": ["w0!5"], "job_progress": {}}),
    ]
    assert [e["timestamp"] for e in d.msg["events"]] == [10.0052, 10.5018]  # type: ignore[index]
    assert d.double.jobs_csv().splitlines()[1].split(",")[7] == "COMPLETED_SUCCESSFULLY"
    # The completed job was deleted from memory once the message was sent: killing it again aborts.
    d.reply(None, ev(d.now, "KILL_JOB", {"job_ids": ["w0!5"]}))
    assert d.msg is None
    assert d.double.outcome.status == "aborted"
    assert d.double.outcome.message == "Cannot get job 'w0!5': it does not exist"
    assert d.csv("jobs") == []  # an xbt_assert abort leaves the outputs empty


def _abort(d: Driver, *events: dict[str, Any]) -> str:
    d.reply(None, *events)
    assert d.msg is None and d.double.outcome.status == "aborted" and d.double.exit_code == 134
    return d.double.outcome.message


JOB7 = {"id": "7", "subtime": 0, "res": 1, "profile": "d10"}
ERRORS = {
    "disabled": (
        {},
        [("REGISTER_JOB", {"job_id": "w0!7", "job": JOB7})],
        "Invalid JSON message: dynamic job registration received but the option seems disabled... "
        "It can be activated with the '--enable-dynamic-jobs' command line option.",
    ),
    "profile_disabled": (
        {},
        [
            (
                "REGISTER_PROFILE",
                {"workload_name": "w0", "profile_name": "x", "profile": {"type": "delay", "delay": 1}},
            )
        ],
        "Invalid JSON message: dynamic profile registration received but the option seems disabled... "
        "It can be activated with the '--enable-dynamic-jobs' command line option.",
    ),
    "after_finished": (
        {"dynamic_jobs": True},
        [("NOTIFY", {"type": "registration_finished"}), ("REGISTER_JOB", {"job_id": "w0!7", "job": JOB7})],
        "Invalid JSON message: dynamic job registration received but the option has been disabled "
        "(a registration_finished message have already been received)",
    ),
    "duplicate_job": (
        {"dynamic_jobs": True},
        [("REGISTER_JOB", {"job_id": "w0!5", "job": {**JOB7, "id": "5"}})],
        "Cannot register new job 'w0!5', it already exists in the workload.",
    ),
    "unknown_profile": (
        {"dynamic_jobs": True},
        [("REGISTER_JOB", {"job_id": "w0!7", "job": {**JOB7, "profile": "nope"}})],
        "Invalid JSON job submitted by the scheduler: the profile nope for job w0!7 does not exist",
    ),
    "unknown_workload": (
        {"dynamic_jobs": True},
        [("REGISTER_JOB", {"job_id": "zz!7", "job": JOB7})],
        "Internal error: Workload 'zz' should exist.",
    ),
    "no_subtime": (
        {"dynamic_jobs": True},
        [("REGISTER_JOB", {"job_id": "w0!7", "job": {k: v for k, v in JOB7.items() if k != "subtime"}})],
        "Invalid JSON job submitted by the scheduler: job 'w0!7' has no 'subtime' field",
    ),
    "no_job_object": (
        {"dynamic_jobs": True},
        [("REGISTER_JOB", {"job_id": "w0!7"})],
        "Invalid JSON message: in event 0 (REGISTER_JOB): ['data']['job'] is unset but redis seems "
        "disabled...",
    ),
    "bad_job_id": (
        {"dynamic_jobs": True},
        [("REGISTER_JOB", {"job_id": "w0!7!8", "job": JOB7})],
        "Invalid string job identifier 'w0!7!8': should be formatted as two '!'-separated parts, the "
        "second one being any string without '!'. Example: 'some_text!42'.",
    ),
    "mismatched_id": (
        {"dynamic_jobs": True},
        [("REGISTER_JOB", {"job_id": "w0!7", "job": {**JOB7, "id": "8"}})],
        "Internal error",
    ),
    "duplicate_profile": (
        {"dynamic_jobs": True},
        [
            (
                "REGISTER_PROFILE",
                {"workload_name": "w0", "profile_name": "d10", "profile": {"type": "delay", "delay": 1}},
            )
        ],
        # protocol.cpp:1541 in v4.2.1 (checked on the real binary)
        "Invalid new profile registration: profile 'd10' already existed in workload 'w0'",
    ),
    "profile_missing_key": (
        {"dynamic_jobs": True},
        [("REGISTER_PROFILE", {"workload_name": "w0", "profile_name": "x"})],
        "Invalid JSON message: the 'data' value of event 0 (REGISTER_PROFILE) should have a 'profile' key",
    ),
    "unknown_notify": (
        {"dynamic_jobs": True},
        [("NOTIFY", {"type": "submission_finished"})],
        "Unknown NOTIFY type received ('submission_finished').",
    ),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_abort_like_batsim(tmp_path: Path, case: str) -> None:
    kwargs, events, message = ERRORS[case]
    d = Driver(tmp_path, **kwargs)
    _submitted_then_notified(d)
    assert _abort(d, *[ev(d.now, t, data) for t, data in events]) == message


def test_extra_members_are_not_checked(tmp_path: Path) -> None:
    """Unlike EXECUTE_JOB & co, REGISTER_JOB / REGISTER_PROFILE have no member-count check in Batsim."""
    d = Driver(tmp_path, dynamic_jobs=True, ack_dynamic_jobs=True)
    _submitted_then_notified(d)
    t = d.now
    d.reply(
        t,
        ev(
            t,
            "REGISTER_PROFILE",
            {"workload_name": "w1", "profile_name": "q", "profile": {"type": "delay", "delay": 1}, "z": 1},
        ),
        ev(
            t,
            "REGISTER_JOB",
            {"job_id": "w1!q1", "job": {"id": "q1", "subtime": 0, "res": 1, "profile": "q"}, "z": 2},
        ),
    )
    assert d.events() == [
        ("JOB_SUBMITTED", {"job_id": "w1!q1", "job": {"id": "w1!q1", "subtime": 0, "res": 1, "profile": "q"}})
    ]
