"""`batkube run --transcript` and `batkube replay`: Batsim driven by the recorded replies runs the same
schedule; a Batsim that says something else is refused; Batsim is quiet unless its log is asked for."""

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner
from shared_support import need

from batkube_py.cli.app import main
from batkube_py.runs.transcript import TranscriptError, TranscriptWriter, load, replay, where

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DOUBLE = ROOT / "tests" / "batsim_double" / "batsim"
INPUTS = (
    SHARED / "reference" / "platforms" / "3node_6core.xml",
    SHARED / "reference" / "workloads" / "spaced_150_delay200_varied_cpu.json",
)
PLATFORM, WORKLOAD = (p.resolve() for p in INPUTS)  # the run resolves links


def _run(out: Path, *extra: str):
    need(*INPUTS)
    args = ["run", "-p", str(PLATFORM), "-w", str(WORKLOAD), "-o", str(out), "--batsim", str(DOUBLE), *extra]
    return CliRunner().invoke(main, args)


def _double(out: Path, endpoint: str) -> subprocess.CompletedProcess:
    need(*INPUTS)
    cmd = [sys.executable, str(DOUBLE), "-p", str(PLATFORM), "-w", str(WORKLOAD), "-e", str(out / "out"),
           "-s", endpoint, "--enable-compute-sharing", "--enable-dynamic-jobs", "--acknowledge-dynamic-jobs",
           "--enable-profile-reuse", "-q", "--max-wait", "30"]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("run")
    result = _run(out / "o", "--transcript", str(out / "t"))
    assert result.exit_code == 0, result.output
    return out


def test_transcript_holds_every_exchange_raw(recorded):
    lines = load(recorded / "t")
    summary = json.loads((recorded / "o" / "summary.json").read_text())
    assert len(lines) == 2 * summary["messages"]
    first, last = json.loads(lines[0]), json.loads(lines[-2])
    assert first["events"][0]["type"] == "SIMULATION_BEGINS"
    assert last["events"][-1]["type"] == "SIMULATION_ENDS"
    executed = sum(line.count(b'"EXECUTE_JOB"') for line in lines[1::2])
    assert executed == summary["jobs_succeeded"] == 150


def test_replay_runs_the_same_schedule(recorded, tmp_path):
    endpoint = f"ipc://{tmp_path}/sock"
    served = []
    server = threading.Thread(target=lambda: served.append(replay(load(recorded / "t"), endpoint, 60)))
    server.start()
    sim = _double(tmp_path, endpoint)
    server.join(timeout=60)
    assert sim.returncode == 0, sim.stderr[-2000:]
    assert served == [len(load(recorded / "t")) // 2]
    assert (tmp_path / "out_jobs.csv").read_text() == (recorded / "o" / "out_jobs.csv").read_text()


def test_replay_refuses_a_different_batsim(recorded, tmp_path):
    lines = load(recorded / "t")
    lines[2] = lines[2].replace(b'"now":', b'"now": ', 1)  # the second message no longer matches
    endpoint = f"ipc://{tmp_path}/sock"
    errors = []

    def serve():
        try:
            replay(lines, endpoint, 60)
        except TranscriptError as exc:
            errors.append(str(exc))

    server = threading.Thread(target=serve)
    server.start()
    sim = _double(tmp_path, endpoint)
    server.join(timeout=60)
    assert sim.returncode == 124  # the double gives up: no reply came
    assert errors and errors[0].startswith("message 2 from Batsim differs from the recorded one at byte 7")


def test_a_replay_mismatch_shows_where_the_messages_part():
    """SIMULATION_BEGINS holds the whole platform: cutting both at the same length hid the difference."""
    head = b'{"now":0.0,"events":[{"type":"SIMULATION_BEGINS","data":{"hosts":"' + b"h" * 900
    shown = where(head + b'node-3"}}]}', head + b'node-4"}}]}')
    assert shown.startswith(f"at byte {len(head) + 5}:")
    got, recorded = shown.splitlines()[1:]
    assert got.endswith('node-3"}}]}') and recorded.endswith('node-4"}}]}')
    assert got.startswith("  got      …hhh") and len(got) < 140
    assert where(b"abc", b"abcdef").splitlines() == ["at byte 3:", "  got      abc", "  recorded abcdef"]


def test_writer_keeps_one_message_per_line(tmp_path):
    writer = TranscriptWriter(tmp_path / "t")
    writer.record(b'{"now": 0,\n"events": []}', b'{"now":0,"events":[]}')
    writer.close()
    assert load(tmp_path / "t") == [b'{"now": 0, "events": []}', b'{"now":0,"events":[]}']


def test_odd_transcript_is_refused(tmp_path):
    (tmp_path / "t").write_bytes(b"{}\n")
    result = CliRunner().invoke(main, ["replay", str(tmp_path / "t"), "--socket", f"ipc://{tmp_path}/s"])
    assert result.exit_code == 1
    assert "expected message and reply lines in pairs, got 1 line(s)" in result.output


def test_batsim_is_quiet_unless_its_log_is_asked_for(recorded, tmp_path):
    assert (recorded / "o" / "batsim_cmdline.txt").read_text().split()[-1] == "-q"
    assert b"Sending" not in (recorded / "o" / "batsim.stderr").read_bytes()
    result = _run(tmp_path / "o", "--batsim-log")
    assert result.exit_code == 0, result.output
    assert " -q" not in (tmp_path / "o" / "batsim_cmdline.txt").read_text()
    assert b"Sending" in (tmp_path / "o" / "batsim.stderr").read_bytes()


def test_unwritable_transcript_is_one_line(tmp_path):
    result = _run(tmp_path / "o", "--transcript", str(tmp_path / "missing" / "t"))
    assert result.exit_code == 1
    assert "cannot write transcript" in result.output and "Traceback" not in result.output
