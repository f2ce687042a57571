"""What the adapter must never send: each bad reply Batsim aborts on (transcripts/bad_replies) is
impossible to build, and on every recorded transcript's inputs the adapter drives Batsim (the test
double, which enforces Batsim's checks) to a clean SIMULATION_ENDS."""

import json
from pathlib import Path

import pytest
from procset import ProcSet
from shared_support import shared, shared_cases

from batkube_py.adapter.decision import DecisionProcess
from batkube_py.batsim_double import BatsimDouble
from batkube_py.cluster.embedded import EmbeddedCluster
from batkube_py.protocol.models import RejectJob
from batkube_py.protocol.reply import MIN_WAKEUP_GAP, Reply, ReplyRuleError

TRANSCRIPTS = Path(__file__).resolve().parents[1].parent / "shared" / "batsim" / "transcripts"


def test_event_after_now_cannot_be_sent():
    with pytest.raises(ReplyRuleError, match="later than"):
        Reply(0.0024).add(RejectJob(job_id="w0!1"), timestamp=10.0024)


def test_decreasing_timestamps_cannot_be_sent():
    r = Reply(5.0)
    r.add(RejectJob(job_id="w0!1"), timestamp=4.0)
    with pytest.raises(ReplyRuleError, match="earlier"):
        r.add(RejectJob(job_id="w0!2"), timestamp=3.0)


def test_wrong_alloc_size_and_empty_alloc_cannot_be_sent():
    with pytest.raises(ReplyRuleError, match="needs 1"):
        Reply(1.0).execute("w0!1", ProcSet((0, 3)), 1)
    with pytest.raises(ReplyRuleError):
        Reply(1.0).execute("w0!1", ProcSet(), 0)


def test_call_me_later_never_in_the_past():
    r = Reply(5.0)
    assert not r.call_me_later(5.0) and not r.call_me_later(4.0)
    assert r.call_me_later(5.000001)
    assert r.call_me_later(7.0) and not r.call_me_later(7.0)
    stamps = [data["timestamp"] for _, kind, data in r.events if kind == "CALL_ME_LATER"]
    assert stamps == [5.0 + MIN_WAKEUP_GAP, 7.0]
    assert r.call_me_later(9.0) == 9.0 and r.call_me_later(float("nan")) is None


def test_non_finite_times_cannot_be_sent():
    """JSON has no NaN or infinity (the encoder would write null): refused where they would enter."""
    with pytest.raises(ReplyRuleError, match="finite"):
        Reply(float("nan"))
    with pytest.raises(ReplyRuleError, match="finite"):
        Reply(1.0).add(RejectJob(job_id="w0!1"), timestamp=float("-inf"))
    with pytest.raises(ReplyRuleError, match="infinity"):
        Reply(1.0).call_me_later(float("inf"))


def test_replies_are_valid_json_with_now_and_known_types():
    r = Reply(3.5)
    r.execute("w0!1", ProcSet(2), 1)
    doc = json.loads(r.encode())
    assert doc == {"now": 3.5, "events": [{"timestamp": 3.5, "type": "EXECUTE_JOB",
                                          "data": {"job_id": "w0!1", "alloc": "2"}}]}  # fmt: skip


def _cases():
    if not TRANSCRIPTS.is_dir():
        yield from shared_cases(("batsim", "transcripts"))
    for cmd in sorted(TRANSCRIPTS.rglob("batsim_cmdline.txt")):
        case = cmd.parent
        if "pitfall" in case.name:
            continue  # Batsim itself refuses that platform before talking to anyone
        yield pytest.param(case, id=str(case.relative_to(TRANSCRIPTS)))


@pytest.mark.parametrize("case", list(_cases()))
def test_adapter_never_makes_batsim_abort_on_recorded_inputs(case):
    shared("batsim", "transcripts")
    flags = (case / "batsim_cmdline.txt").read_text()
    double = BatsimDouble(
        case / "platform.xml",
        [case / "workload.json"],
        compute_sharing=True,
        forward_profiles="--forward-profiles-on-submission" in flags,
    )
    dp = DecisionProcess(lambda nodes: EmbeddedCluster(nodes, seed=0))
    msg = double.start()
    exchanges = 0
    while msg is not None:
        msg = double.on_reply(dp.handle(msg.encode()).decode())
        exchanges += 1
        assert exchanges < 10_000
    assert double.outcome.status == "finished", double.outcome
    assert double.outcome.exit_code == 0 and dp.ended and dp.fatal is None
    states = {r.state for r in dp.records.values()}
    assert states <= {"Succeeded", "Failed", "Rejected"}, states
    assert dp.summary()["over_allocations"] == 0


def test_a_victim_that_finished_in_the_same_message_is_not_killed():
    """Batsim 4.2.1 aborts on KILL_JOB of a finished job ("Cannot get job": jobs.cpp, Workloads::job_at);
    a cycle run before the JOB_COMPLETED of the same message may already have chosen it as a victim."""
    from batkube_py.adapter.disruption import Disruptions

    d, reply = Disruptions(), Reply(40.02)
    for job in ("w0!1", "w0!2"):
        d.kill(job)
    d.flush_kills(reply)
    d.kill("w0!3")
    d.finished_unsent("w0!2", reply)
    d.finished_unsent("w0!3", reply)
    d.flush_kills(reply)
    assert [(k, e["job_ids"]) for _, k, e in reply.events] == [("KILL_JOB", ["w0!1"])]
    d.finished_unsent("w0!1", reply)
    assert reply.events == []
