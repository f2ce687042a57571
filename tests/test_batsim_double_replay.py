"""Replay every real Batsim 4.2.1 transcript through the double.

The recorded decision-process replies are fed to the double; every message it sends
must equal the recorded Batsim message.  Tolerance: none on timestamps (the double
prints them with the same %f formatting, so parsed values must be identical); the
only masked field is SIMULATION_BEGINS `workloads` (absolute path of the recording
machine).  SIMULATION_BEGINS is compared raw too: the double lists profiles in Batsim's
std::unordered_map order (batsim_double/hashorder.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from batsim_messages import same_simulation_begins
from shared_support import shared

from batkube_py.batsim_double import BatsimDouble

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
TR = SHARED / "batsim" / "transcripts"


@pytest.fixture(autouse=True)
def _needs_shared() -> None:
    shared("batsim", "transcripts")

CASES = {
    # name: (directory, compute_sharing, forward_profiles)
    "a_4hosts_6delays": ("a_4hosts_6delays", False, False),
    "b_extra_fields_multires": ("b_extra_fields_multires", False, True),
    "c_compute_sharing": ("c_compute_sharing", True, False),
    "e_host_properties": ("e_host_properties", False, True),
    "g_batsim_started_first": ("g_batsim_started_first", False, False),
    "pybatsim_schedFcfs_small_platform": ("pybatsim_schedFcfs_small_platform", False, False),
}
BAD = ["alloc_out_of_range", "bad_alloc_string", "drop_job", "event_after_now", "future_now",
       "malformed_json",
       "missing_now", "overlap_alloc", "time_travel", "unknown_event_type", "unknown_job", "wrong_alloc_size",
       "die", "no_decision_process"]
for _b in BAD:
    CASES[f"bad_replies/{_b}"] = (f"bad_replies/{_b}", False, False)

# Cases (or details) the double cannot reproduce, with the reason.  Nothing else is skipped.
UNSUPPORTED: dict[str, str] = {}  # every recorded case is replayed
UNSUPPORTED_DETAILS = [
    "out_schedule.csv scheduling_time / simulation_time are wall-clock values and are not compared",
]


def _load(case_dir: Path) -> list[dict]:
    rebuilt = case_dir / "transcript_from_batsim_log.jsonl"  # pybatsim case: rebuilt from Batsim's log
    if rebuilt.exists():
        return [json.loads(line) for line in rebuilt.read_text().splitlines() if line]
    if not (case_dir / "transcript.jsonl").exists():  # no_decision_process: nothing was ever received
        return [{"seq": 0, "dir": "batsim->sched", "raw": "", "msg": None}]
    return [json.loads(line) for line in (case_dir / "transcript.jsonl").read_text().splitlines() if line]


def _normalise(msg: dict) -> dict:
    msg = json.loads(json.dumps(msg))
    for ev in msg.get("events", []):
        if ev["type"] == "SIMULATION_BEGINS":
            ev["data"]["workloads"] = {k: Path(v).name for k, v in ev["data"]["workloads"].items()}
    return msg


def replay(name: str, tmp_path: Path) -> tuple[BatsimDouble, Path]:
    sub, sharing, fwd = CASES[name]
    case_dir = TR / sub
    prefix = tmp_path / "out"
    double = BatsimDouble(str(case_dir / "platform.xml"), [str(case_dir / "workload.json")],
                          compute_sharing=sharing, forward_profiles=fwd, export_prefix=str(prefix))
    records = _load(case_dir)
    text = double.start()
    for rec in records:
        if rec["dir"] == "batsim->sched":
            assert text is not None, f"seq {rec['seq']}: double sent nothing, Batsim sent {rec['raw'][:200]}"
            got = json.loads(text)
            if rec["msg"] is None:
                assert got["events"][0]["type"] == "SIMULATION_BEGINS"
                text = None
                continue
            assert _normalise(got) == _normalise(rec["msg"]), f"seq {rec['seq']}"
            if "SIMULATION_BEGINS" in rec["raw"]:
                assert same_simulation_begins(text, rec["raw"]), "SIMULATION_BEGINS: raw text differs"
            else:
                assert text == rec["raw"], f"seq {rec['seq']}: raw text differs"
            text = None
        else:
            text = double.on_reply(rec["raw"])
    assert text is None, f"double sent an extra message: {text[:200]}"
    return double, case_dir


def _csv_rows(path: Path) -> list[list[str]]:
    return [line.split(",") for line in path.read_text().splitlines()]


CSV_TOL = 1.5e-6  # one unit of %f's last digit: Batsim derives stretch with long doubles


def _same(got: str, ref: str) -> None:
    if got == ref:
        return
    try:
        assert abs(float(got) - float(ref)) <= CSV_TOL, (got, ref)
    except ValueError:
        assert got == ref


def check_outputs(double: BatsimDouble, case_dir: Path, tmp_path: Path) -> None:
    states = case_dir / "out" / "out_machine_states.csv"  # byte for byte (machine_states.py)
    assert (tmp_path / "out_machine_states.csv").read_bytes() == states.read_bytes()
    ref_jobs = _csv_rows(case_dir / "out" / "out_jobs.csv")
    my_jobs = _csv_rows(tmp_path / "out_jobs.csv")
    assert len(my_jobs) == len(ref_jobs)
    for mine_row, ref_row in zip(my_jobs, ref_jobs, strict=True):
        assert len(mine_row) == len(ref_row)
        for got, ref in zip(mine_row, ref_row, strict=True):
            _same(got, ref)
    ref_sched = case_dir / "out" / "out_schedule.csv"
    mine = tmp_path / "out_schedule.csv"
    if not ref_sched.exists():
        assert not mine.exists()
        return
    ref_rows, my_rows = _csv_rows(ref_sched), _csv_rows(mine)
    assert my_rows[0] == ref_rows[0]
    for key, ref, got in zip(ref_rows[0], ref_rows[1], my_rows[1], strict=True):
        if key in ("scheduling_time", "simulation_time"):
            continue
        _same(got, ref)


@pytest.mark.parametrize("name", list(CASES))
def test_replay(name: str, tmp_path: Path) -> None:
    double, case_dir = replay(name, tmp_path)
    expected = int((case_dir / "batsim_exit_code.txt").read_text().split()[0])
    if expected == 124:  # Batsim blocked forever waiting for a reply: the double is still waiting too
        assert double.outcome.status == "running"
        return
    assert double.exit_code == expected
    check_outputs(double, case_dir, tmp_path)


CRITICAL = {
    "alloc_out_of_range": "Cannot get machine 45: it does not exist",
    "event_after_now": "Invalid JSON message: timestamp 10.0024 of event 0 should be lower than or equal to "
    "now=0.0024.",
    "malformed_json": "Invalid JSON message: could not be parsed",
    "missing_now": "Invalid JSON message: no 'now' key",
    "unknown_event_type": "Invalid JSON message: event 1 has an unknown 'type' value 'MAKE_COFFEE'",
    "unknown_job": "Cannot get job 'w0!does_not_exist': it does not exist",
    "bad_alloc_string": "Invalid JSON message: stoi",
}


@pytest.mark.parametrize("bad", list(CRITICAL))
def test_abort_messages_match_batsim_log(bad: str, tmp_path: Path) -> None:
    double, case_dir = replay(f"bad_replies/{bad}", tmp_path)
    assert double.outcome.status == "aborted"
    assert double.outcome.message == CRITICAL[bad]
    assert CRITICAL[bad] in (case_dir / "batsim.stderr").read_text()
    stamp = next(line for line in (case_dir / "batsim.stderr").read_text().splitlines()
                 if CRITICAL[bad] in line and "CRITICAL" in line or "Runtime error" in line)
    assert f"{double.outcome.time:f}]" in stamp


@pytest.mark.parametrize("bad", ["overlap_alloc", "wrong_alloc_size"])
def test_server_side_abort_text(bad: str, tmp_path: Path) -> None:
    double, case_dir = replay(f"bad_replies/{bad}", tmp_path)
    log = (case_dir / "batsim.stderr").read_text()
    assert double.outcome.exit_code == 134
    assert f"[root/CRITICAL] {double.outcome.message}" in log


def test_drop_job_is_a_deadlock(tmp_path: Path) -> None:
    double, _ = replay("bad_replies/drop_job", tmp_path)
    assert double.outcome.status == "deadlock"
    assert double.outcome.time == pytest.approx(33.004)
    assert "w0,delay20" not in (tmp_path / "out_jobs.csv").read_text()


def test_master_named_master_host_with_role_prop() -> None:
    case_dir = TR / "pitfall_master_named_master_host_with_role_prop"
    double = BatsimDouble(str(case_dir / "platform.xml"), [str(case_dir / "workload.json")],
                          forward_profiles=True)
    assert double.start() is None
    assert double.exit_code == 134
    assert "Cannot create any role from string description 'master,master'" in double.outcome.message


def test_unsupported_list_is_explicit() -> None:
    for name in UNSUPPORTED:
        assert (TR / name).is_dir()
        assert name not in CASES
