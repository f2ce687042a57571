"""A delete with nothing pending is written at once on a backend that asks for it (adapter/decision.py).

The real control plane (`--sync queue`) sets `deletes_ahead`: a finished pod's delete then leaves the
next cycle's critical path. The rule is only sound if it changes nothing: the schedule must be the one of
a backend that stages every delete for the next cycle, whatever Batsim's batching of an instant, and a
delete must still be staged when a pod is pending or a change is already staged.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from batkube_py.adapter.decision import DecisionProcess
from batkube_py.batsim_double import BatsimDouble
from batkube_py.batsim_double.batching import RandomBatching
from batkube_py.cluster.embedded import EmbeddedCluster
from batkube_py.scheduler.config import build_profiles, default_config

ROOT = Path(__file__).resolve().parents[1]
CLUSTER16 = ROOT / "platforms" / "cluster_16x1core.xml"


class Recording(EmbeddedCluster):
    """The twin, logging each delete and cycle against the Batsim message being handled."""

    def __init__(self, nodes, ahead: bool, log: list):
        config = default_config()
        config.parallelism = 1
        super().__init__(nodes, profiles=build_profiles(config, 0))
        self.deletes_ahead = ahead
        self.log = log

    def delete_pod(self, name: str, now: float) -> None:
        self.log.append(("delete", name, now))
        super().delete_pod(name, now)

    def schedule(self, now: float):
        self.log.append(("cycle", now))
        return super().schedule(now)


def run(workload: Path, ahead: bool, batching: RandomBatching | None = None):
    log: list = []
    double = BatsimDouble(str(CLUSTER16), [str(workload)], compute_sharing=True, dynamic_jobs=True,
                          ack_dynamic_jobs=True, batching=batching)  # fmt: skip
    process = DecisionProcess(lambda nodes: Recording(nodes, ahead, log))
    text, messages = double.start(), 0
    while text is not None:
        log.append(("message", messages))
        messages += 1
        text = double.on_reply(process.handle(text.encode()).decode())
    assert double.exit_code == 0 and process.fatal is None
    schedule = {job: (r.start_time, r.node, r.state, r.finish_time) for job, r in process.records.items()}
    return schedule, log


def write(path: Path, jobs: list[dict], profiles: dict) -> Path:
    path.write_text(json.dumps({"nb_res": 16, "jobs": jobs, "profiles": profiles}))
    return path


def message_of(log: list, entry: tuple) -> int:
    """The Batsim message during whose handling `entry` was logged."""
    k = log.index(entry)
    return next(e[1] for e in reversed(log[:k]) if e[0] == "message")


def test_a_delete_with_nothing_pending_is_written_with_the_completion(tmp_path):
    profiles = {"short": {"type": "delay", "delay": 10, "cpu": "1"}}
    jobs = [{"id": "1", "subtime": 0, "res": 1, "profile": "short"},
            {"id": "2", "subtime": 20, "res": 1, "profile": "short"}]  # fmt: skip
    workload = write(tmp_path / "w.json", jobs, profiles)
    staged, staged_log = run(workload, ahead=False)
    ahead, ahead_log = run(workload, ahead=True)
    assert ahead == staged
    d_staged = next(e for e in staged_log if e[0] == "delete" and e[1] == "w0-1")
    d_ahead = next(e for e in ahead_log if e[0] == "delete" and e[1] == "w0-1")
    assert d_staged[2] == d_ahead[2] and 10 <= d_ahead[2] < 11  # the completion's time, both ways
    # staged: applied by the cycle of job 2's window, messages later; ahead: with the completion itself
    cycle_of_2 = next(e for e in staged_log if e[0] == "cycle" and e[1] >= 20)
    assert message_of(staged_log, d_staged) == message_of(staged_log, cycle_of_2)
    cycle_of_2 = next(e for e in ahead_log if e[0] == "cycle" and e[1] >= 20)
    assert message_of(ahead_log, d_ahead) < message_of(ahead_log, cycle_of_2)


def test_a_delete_with_a_pod_pending_waits_for_the_cycle(tmp_path):
    """Sixteen one-core nodes, seventeen jobs: the seventeenth waits, so the first completion's delete
    is staged and applied by the cycle that binds the waiting pod, in both modes."""
    profiles = {"p": {"type": "delay", "delay": 10, "cpu": "1"},
                "long": {"type": "delay", "delay": 30, "cpu": "1"}}  # fmt: skip
    jobs = [{"id": "0", "subtime": 0, "res": 1, "profile": "p"}]
    jobs += [{"id": str(i), "subtime": 0, "res": 1, "profile": "long"} for i in range(1, 17)]
    workload = write(tmp_path / "w.json", jobs, profiles)
    staged, staged_log = run(workload, ahead=False)
    ahead, ahead_log = run(workload, ahead=True)
    assert ahead == staged
    waited = [job for job, (start, node, _, _) in staged.items() if start > 10]
    assert len(waited) == 1 and staged[waited[0]][1] == staged["w0!0"][1]  # it waited for w0!0's node
    for log in (staged_log, ahead_log):
        delete = next(e for e in log if e[0] == "delete" and e[1] == "w0-0")
        cycle = next(e for e in log if e[0] == "cycle" and e[1] > delete[2])
        assert message_of(log, delete) == message_of(log, cycle)


@pytest.mark.parametrize("seed", range(4))
def test_random_workloads_and_batchings_give_the_staged_schedule(tmp_path, seed):
    rng = random.Random(seed)
    profiles = {f"d{d}c{c}": {"type": "delay", "delay": d, "cpu": c}
                for d in (5, 10, 25) for c in ("500m", "1", "2")}  # fmt: skip
    jobs = [{"id": str(i), "subtime": rng.choice([0, 3, 7, 12, 20, 41, 60]) + rng.random(), "res": 1,
             "profile": rng.choice(sorted(profiles))} for i in range(50)]  # fmt: skip
    workload = write(tmp_path / "w.json", jobs, profiles)
    staged, _ = run(workload, ahead=False)
    ahead, log = run(workload, ahead=True, batching=RandomBatching(seed))
    assert ahead == staged
    assert any(e[0] == "delete" for e in log)
