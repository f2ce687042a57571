"""The adapter gives, byte for byte, the replies it gave real Batsim 4.2.1 (transcripts-batkube).

Each case's Batsim messages (../shared/batsim/transcripts-batkube) are handed to a fresh DecisionProcess
(embedded backend, seed 0) in order; every reply must equal the recorded one. This pins speed work on
the adapter (translate, codec, the twin) to identical decisions, including the 19,932-message 10k bench.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from batkube_py.decision import DecisionProcess
from batkube_py.run import embedded_factory

TR = Path(__file__).resolve().parents[2] / "shared" / "batsim" / "transcripts-batkube"
CASES = sorted(p.name for p in TR.iterdir() if p.is_dir()) if TR.is_dir() else []


@pytest.mark.parametrize("name", CASES)
def test_replies_are_the_recorded_ones(name: str) -> None:
    lines = (TR / name / "transcript_from_batsim_log.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines if line]
    process = DecisionProcess(embedded_factory(0))
    reply = None
    replies = 0
    for rec in records:
        if rec["dir"] == "batsim->sched":
            reply = process.handle(rec["raw"].encode())
        else:
            assert reply == rec["raw"].encode(), f"{name} seq {rec['seq']}"
            replies += 1
    assert process.ended and replies == sum(r["dir"] != "batsim->sched" for r in records) > 0
