"""The gang experiments (experiments/gangs.yaml, racks.yaml) at toy size on the Batsim double, the PodGroup
`basic` policy (pods bound one by one, holding their nodes) against gangs, and the communicating
workload generator."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from click.testing import CliRunner

from batkube_py.cli.app import main
from batkube_py.inputs import commworkload
from batkube_py.inputs.platforms import cluster_platform
from batkube_py.runs.run import RunConfig, run

ROOT = Path(__file__).resolve().parents[1]
DOUBLE = str(ROOT / "tests" / "batsim_double" / "batsim")
EXPERIMENTS = ROOT / "experiments"
RACK = "topology.kubernetes.io/zone"


def experiment(name: str, out: Path, *extra: str) -> str:
    result = CliRunner().invoke(
        main, ["experiment", "run", str(EXPERIMENTS / f"{name}.yaml"), "--out", str(out), "--batsim", DOUBLE,
               "-r", "1", "-j", "2", "--no-progress", *extra], catch_exceptions=False)  # fmt: skip
    assert result.exit_code == 0, result.output
    return result.output


def _jobs(run_dir: Path) -> dict[str, dict]:
    return {r["job_id"]: r for r in csv.DictReader((run_dir / "out_jobs.csv").open())}


def test_basic_pods_hold_their_nodes_while_a_gang_waits_whole(tmp_path: Path) -> None:
    # two 1-core nodes: `long` holds one; the 2-pod group comes next, then a 1-pod job
    jobs = [
        {"id": "long", "subtime": 0, "res": 1, "profile": "long"},
        {"id": "pair", "subtime": 1, "res": 2, "profile": "short"},
        {"id": "late", "subtime": 2, "res": 1, "profile": "short"},
    ]
    starts = {}
    for policy in ("gang", "basic"):
        short = {"type": "delay", "delay": 10, "cpu": "1"}
        if policy == "basic":
            short["groupPolicy"] = "basic"
        profiles = {"long": {"type": "delay", "delay": 100, "cpu": "1"}, "short": short}
        d = tmp_path / policy
        d.mkdir()
        (d / "p.xml").write_text(cluster_platform(2, "1"))
        (d / "w.json").write_text(json.dumps({"nb_res": 2, "jobs": jobs, "profiles": profiles}))
        summary = run(RunConfig(d / "p.xml", d / "w.json", d / "out", batsim=DOUBLE, progress=False))
        assert summary["error"] is None and summary["jobs_succeeded"] == 3
        starts[policy] = {k: float(r["starting_time"]) for k, r in _jobs(d / "out").items()}
    # a gang leaves the free node to `late`; a basic group's first pod takes it at t = 1 and holds it idle,
    # so `late` waits for `long`'s node (and passes the group, which is in its backoff then)
    assert starts["gang"]["late"] < 3 and starts["gang"]["pair"] >= 100
    assert starts["basic"]["late"] >= 100 and starts["basic"]["pair"] >= 100


def test_a_bad_group_policy_is_rejected_with_the_field(tmp_path: Path) -> None:
    (tmp_path / "p.xml").write_text(cluster_platform(2, "1"))
    wl = {"nb_res": 2, "jobs": [{"id": "a", "subtime": 0, "res": 2, "profile": "d"}],
          "profiles": {"d": {"type": "delay", "delay": 1, "cpu": "1", "groupPolicy": "loose"}}}  # fmt: skip
    (tmp_path / "w.json").write_text(json.dumps(wl))
    cfg = RunConfig(tmp_path / "p.xml", tmp_path / "w.json", tmp_path / "o", batsim=DOUBLE, progress=False)
    summary = run(cfg)
    assert summary["jobs_rejected"] == 1
    text = (tmp_path / "o" / "rejected.csv").read_text()
    assert "profile.groupPolicy" in text and "'gang' or 'basic'" in text


def test_gangs_experiment_at_toy_size(tmp_path: Path) -> None:
    # 8 one-processor nodes; MaxProcs 8: the flattened case asks 8 x P / 8 cores of one 8-core node
    lines = ["; MaxProcs: 8"] + [
        f"{i} {10 * i} -1 {50 + 5 * i} {p} -1 -1 {p} -1 -1 1 1 1 -1 1 -1 -1 -1"
        for i, p in enumerate((8, 4, 4, 2, 6, 1, 3, 8), start=1)
    ]
    (tmp_path / "toy.swf").write_text("\n".join(lines) + "\n")
    output = experiment("gangs", tmp_path / "o", "--var", f"trace={tmp_path / 'toy.swf'}", "--var", "nodes=8")
    table = (tmp_path / "o" / "table.md").read_text()
    for case in ("gang", "basic", "flat"):
        assert f"| {case} |" in table, output
    for case in ("gang", "flat"):
        done = _jobs(tmp_path / "o" / "runs" / case / "embedded" / "rep0")
        assert len(done) == 8 and all(r["final_state"] == "COMPLETED_SUCCESSFULLY" for r in done.values())
    # basic groups deadlock: jobs 2 (4 pods) and 5 (6 pods) hold 3 + 5 of the 8 nodes, neither completes,
    # nothing runs any more; the run ends, rejecting them and the jobs queued behind them
    basic_run = tmp_path / "o" / "runs" / "basic" / "embedded" / "rep0"
    rejected = {r["job_id"]: r["reason"] for r in csv.DictReader((basic_run / "rejected.csv").open())}
    assert sorted(rejected) == ["w0!2", "w0!5", "w0!7", "w0!8"]
    assert "3 of minCount 1 pods could be placed" in rejected["w0!2"]
    assert "0 of its 1 unbound" in rejected["w0!2"]
    gang = _jobs(tmp_path / "o" / "runs" / "gang" / "embedded" / "rep0")
    assert gang["1"]["allocated_resources"] == "0-7" and gang["4"]["requested_number_of_resources"] == "2"
    basic = json.loads((tmp_path / "o" / "inputs" / "basic.json").read_text())
    assert {p.get("groupPolicy") for p in basic["profiles"].values()} == {"basic"}


def test_racks_experiment_at_toy_size_keeps_constrained_groups_in_one_rack(tmp_path: Path) -> None:
    output = experiment("racks", tmp_path / "o", "--var", "jobs=12", "--var", "interval=2")
    table = (tmp_path / "o" / "table.md").read_text()
    for case in ("gang", "rack-constrained", "flat"):
        assert f"| {case} |" in table, output
    per_rack = 8  # 32 nodes in 4 racks: node-0..7 in rack0, ...
    run_dir = tmp_path / "o" / "runs" / "rack-constrained" / "embedded" / "rep0"
    node_of = {int(r["resource_id"]): r["node"] for r in csv.DictReader((run_dir / "nodes.csv").open())}
    kept = _jobs(run_dir)
    assert len(kept) == 12
    for job in kept.values():
        hosts = [int(h) for part in job["allocated_resources"].split() for h in _span(part)]
        assert len(hosts) == int(job["requested_number_of_resources"])
        assert len({int(node_of[h].removeprefix("node-")) // per_rack for h in hosts}) == 1, job
    flat = json.loads((tmp_path / "o" / "inputs" / "flat.json").read_text())
    assert all(j["res"] == 1 for j in flat["jobs"])


def _span(part: str) -> range:
    lo, _, hi = part.partition("-")
    return range(int(lo), int(hi or lo) + 1)


def test_the_three_shapes_are_the_same_jobs() -> None:
    gang = commworkload.comm_jobs(20, 3, 2, 8, 8, 5, "gang")
    topo = commworkload.comm_jobs(20, 3, 2, 8, 8, 5, "topology", RACK)
    flat = commworkload.comm_jobs(20, 3, 2, 8, 8, 5, "flat")
    assert [j["subtime"] for j in gang["jobs"]] == [j["subtime"] for j in flat["jobs"]]
    assert all(2 <= j["res"] <= 8 for j in gang["jobs"])
    assert all(p["groupTopology"] == RACK and p["onePodPerNode"] for p in topo["profiles"].values())
    for job in flat["jobs"]:
        profile = flat["profiles"][job["profile"]]
        res = int(job["profile"].split("-")[0][1:])
        assert profile["type"] == "delay" and profile["delay"] > 0 and profile["cpu"] == str(8 * res)
