"""Replay the real Batsim 4.2.1 runs of multi-host and communicating jobs (../shared/batsim/transcripts-gang).

Each case's recorded replies go into the double; every message it sends must equal Batsim's, raw text
included, and out_jobs.csv must be identical. The cases cover parallel / parallel_homogeneous /
parallel_homogeneous_total / composed profiles on two racks of SimGrid <cluster>s (packed, spread across the
slow inter-rack link, shared hosts under --enable-compute-sharing), EXECUTE_JOB with a `mapping` (four
executors on two hosts, alone and shared), and graphene-16 (Full routing with per-host links).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from batsim_messages import same_simulation_begins
from shared_support import shared

from batkube_py.batsim_double import BatsimDouble

CASES = [
    "p1_ptask_tworacks_packed",
    "p2_ptask_tworacks_spread",
    "p3_ptask_tworacks_sharing",
    "p4_gang_mapping_packed2",
    "p5_gang_mapping_sharing",
    "p6_ptask_graphene16",
]


def test_every_case_is_listed() -> None:
    root = shared("batsim", "transcripts-gang")
    assert sorted(p.name for p in root.iterdir() if p.is_dir()) == CASES


@pytest.mark.parametrize("name", CASES)
def test_replay(name: str, tmp_path: Path) -> None:
    case = shared("batsim", "transcripts-gang", name)
    sharing = "--enable-compute-sharing" in (case / "batsim_cmdline.txt").read_text()
    records = [json.loads(line) for line in (case / "transcript.jsonl").read_text().splitlines() if line]
    double = BatsimDouble(
        str(case / "platform.xml"),
        [str(case / "workload.json")],
        compute_sharing=sharing,
        export_prefix=str(tmp_path / "out"),
    )
    text = double.start()
    sent = 0
    for rec in records:
        if rec["dir"] == "batsim->sched":
            assert text is not None, f"seq {rec['seq']}: the double sent nothing ({double.outcome})"
            if "SIMULATION_BEGINS" in rec["raw"]:
                assert same_simulation_begins(text, rec["raw"])
            else:
                assert text == rec["raw"], f"seq {rec['seq']}"
            sent += 1
            text = None
        else:
            text = double.on_reply(rec["raw"])
    assert text is None
    assert sent > 10
    assert double.exit_code == int((case / "batsim_exit_code.txt").read_text().split()[0])
    assert (tmp_path / "out_jobs.csv").read_text() == (case / "out" / "out_jobs.csv").read_text()
    states = tmp_path / "out_machine_states.csv"  # machine_states.py
    assert states.read_bytes() == (case / "out" / "out_machine_states.csv").read_bytes()
