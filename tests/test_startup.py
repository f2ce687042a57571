from pathlib import Path

import pytest
from batsim_messages import begins, completed, decided, host, message, reply_events, submitted
from shared_support import shared

from batkube_py.adapter.decision import DecisionProcess
from batkube_py.adapter.startup import LatencySpecError, parse_latency
from batkube_py.cluster.embedded import EmbeddedCluster
from batkube_py.runs import RunError
from batkube_py.runs.run import RunConfig, run

ROOT = Path(__file__).resolve().parents[1]


def test_specs_and_presets():
    assert parse_latency(None) is None and parse_latency("off") is None
    assert parse_latency("fixed:2.5").sample() == 2.5
    a, b = parse_latency("k3s", seed=1), parse_latency("k3s", seed=1)
    xs = [a.sample() for _ in range(2000)]
    assert xs[:5] == [b.sample() for _ in range(5)]
    assert 2.2 < sum(xs) / len(xs) < 2.8  # the emulated k3s mean start latency is 2.5 s
    for bad in ("gamma:1", "fixed", "fixed:-1", "uniform:3,1", "lognormal:a,b", "fixed:nan"):
        with pytest.raises(LatencySpecError, match="startup latency"):
            parse_latency(bad)


def test_execute_goes_out_after_the_latency_with_the_node_held():
    p = DecisionProcess(lambda nodes: EmbeddedCluster(nodes), startup=parse_latency("fixed:2"))
    p.handle(message(0.0, begins([host(0, core="1")], {"p": {"type": "delay", "delay": 10, "cpu": "1"}})))
    out = decided(p, message(0.0, submitted(0.0, "w0!1"), submitted(0.0, "w0!2")), wakeups=True)
    assert out == [("CALL_ME_LATER", {"timestamp": 2.02})]  # bound at the end of the instant, t=0.02
    assert p.records["w0!1"].state == "Starting" and p.records["w0!2"].state == "Pending"
    out = reply_events(p.handle(message(2.0206, {"timestamp": 2.0206, "type": "REQUESTED_CALL", "data": {}})))
    assert out == [("EXECUTE_JOB", {"job_id": "w0!1", "alloc": "0"})]
    out = decided(p, message(12.0222, completed(12.0222, "w0!1", "0")), wakeups=True)
    assert out == [("CALL_ME_LATER", {"timestamp": 14.0422})]
    r = p.records["w0!1"]
    assert (r.bind_time, r.start_time) == (0.02, 2.0206)


def test_burst_with_the_k3s_latency_end_to_end(tmp_path):
    shared("reference", "platforms", "platform_graphene_16nodes.xml")
    cfg = RunConfig(
        platform=ROOT.parent / "shared" / "reference" / "platforms" / "platform_graphene_16nodes.xml",
        workload=ROOT / "workloads" / "burst_200_delay170.json",
        out=tmp_path,
        batsim=str(ROOT / "tests" / "batsim_double" / "batsim"),
        progress=False,
        startup_latency="k3s",
    )
    summary = run(cfg)
    assert summary["error"] is None and summary["jobs_succeeded"] == 200
    # 13 waves, each delayed by a ~2.5 s start: slower than the ideal 2210, far from the emulated 2467
    assert 2215 < summary["makespan"] < 2300
    with pytest.raises(RunError, match="startup latency"):
        run(RunConfig(cfg.platform, cfg.workload, tmp_path / "x", batsim=cfg.batsim, startup_latency="bad"))
