"""Replay real Batsim 4.2.1 runs driven by batkube (../shared/batsim/transcripts-batkube) through the double.

Batkube's recorded replies go in; every message the double sends must equal Batsim's, raw text included,
and out_jobs.csv must be identical. These cases pin the same-instant mechanics (message splits such as
burst's 11 + 5 completions at t=170, completions vs submissions at one instant, a completion next to a
REQUESTED_CALL) and cluster zone_properties; k_bench_10k has 39,864 messages.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from batsim_messages import same_simulation_begins
from shared_support import shared, shared_cases

from batkube_py.batsim_double import BatsimDouble

TR = Path(__file__).resolve().parents[2] / "shared" / "batsim" / "transcripts-batkube"
CASES = shared_cases(
    ("batsim", "transcripts-batkube"), lambda: sorted(p.name for p in TR.iterdir() if p.is_dir())
)


@pytest.fixture(autouse=True)
def _needs_shared() -> None:
    shared("batsim", "transcripts-batkube")


def test_every_case_is_found() -> None:
    assert len(CASES) == 20


@pytest.mark.parametrize("name", CASES)
def test_replay(name: str, tmp_path: Path) -> None:
    case = TR / name
    lines = (case / "transcript_from_batsim_log.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines if line]
    double = BatsimDouble(str(case / "platform.xml"), [str(case / "workload.json")], compute_sharing=True,
                          dynamic_jobs=True, ack_dynamic_jobs=True, export_prefix=str(tmp_path / "out"))
    text = double.start()
    for rec in records:
        if rec["dir"] == "batsim->sched":
            assert text is not None, f"seq {rec['seq']}: the double sent nothing"
            if "SIMULATION_BEGINS" in rec["raw"]:
                assert same_simulation_begins(text, rec["raw"])
            else:
                assert text == rec["raw"], f"seq {rec['seq']}"
            text = None
        else:
            text = double.on_reply(rec["raw"])
    assert text is None
    assert double.exit_code == int((case / "batsim_exit_code.txt").read_text().split()[0])
    assert (tmp_path / "out_jobs.csv").read_text() == (case / "out" / "out_jobs.csv").read_text()
    states = tmp_path / "out_machine_states.csv"
    assert states.read_bytes() == (case / "out" / "out_machine_states.csv").read_bytes()
