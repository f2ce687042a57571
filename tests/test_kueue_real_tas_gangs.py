"""Gangs with a topology request (Kueue pod groups under topology-aware flavors) on the real backend: the
real Kueue v0.17.0 finds each gang its domain, its topology ungater gives every member its node, the real
kube-scheduler 1.37.2 places the group, on the Batsim 4.2.1 double (docs/kueue.md). Checked against a
hand-computed expectation and against the twins, job by job: admission instant, ClusterQueue, flavor,
start and the SET of nodes (Kueue's ungater hands a gang's pods their domains in its own order).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from kueue_support import cq, flavor, lq, write
from test_kueue_real_gangs import at, kueue, run_pair  # noqa: F401  (kueue: a fixture)
from test_kueue_tas import HOST, POOL, ZONE, topology

from batkube_py.inputs.platforms import rack_platform

pytestmark = pytest.mark.usefixtures("kueue")


def run_on_racks(tmp: Path, jobs_: list[dict], cores: int = 1) -> tuple[dict, dict, dict, dict]:
    """2 racks of 4 nodes of CORES cores, one TAS flavor over rack and host with all of them as quota,
    one-core pods of 100 s: the real pair and the twins (run_pair)."""
    inputs = tmp / "in"
    inputs.mkdir()
    (inputs / "racks.xml").write_text(rack_platform(2, 8, str(cores), labels=POOL))
    profiles = {"p": {"type": "delay", "delay": 100, "cpu": "1"}}
    (inputs / "w.json").write_text(json.dumps({"nb_res": 8, "profiles": profiles, "jobs": [
        {"profile": "p", "queue": "q", **j} for j in jobs_]}))  # fmt: skip
    racks = flavor("racks", topologyName="dc", nodeLabels=POOL)
    queues = write(inputs, [topology(levels=(ZONE, HOST)), racks, cq("cq", {"racks": {"cpu": 8 * cores}}),
                            lq("q", "cq")])  # fmt: skip
    real, summary, twin, twin_summary = run_pair(tmp, inputs / "racks.xml", inputs / "w.json", queues)
    # each member on the same node on both sides: Kueue's ungater hands the domains out by the members'
    # ranks (their pod-group-pod-index label), the twin in member order
    assert members(tmp / "real") == members(tmp / "twin")
    return real, summary, twin, twin_summary


def members(out: Path) -> dict[str, str]:
    with (out / "pods.csv").open() as f:
        return {r["pod"]: r["node"] for r in csv.DictReader(f)}


def nodes(*ids: int) -> set[str]:
    return {f"node-{i}" for i in ids}


def test_gangs_find_their_racks_as_in_the_twin(tmp_path):
    # g1 (3 pods, one rack) at 0: both racks hold 4, BestFit keeps the first: rack0. g2 at 10: rack0 has
    # 1 slot, so rack1. At 20 j3 (2 pods, one rack) fits no rack and waits; j4 (2 pods preferring one
    # rack) falls back to both: node-3 and node-7. At 100 g1 ends; j3 takes two nodes of rack0.
    jobs_ = [{"id": "g1", "subtime": 0, "res": 3, "topology": {"required": ZONE}},
             {"id": "g2", "subtime": 10, "res": 3, "topology": {"required": ZONE}},
             {"id": "j3", "subtime": 20, "res": 2, "topology": {"required": ZONE}},
             {"id": "j4", "subtime": 20, "res": 2, "topology": {"preferred": ZONE}}]  # fmt: skip
    real, summary, twin, _ = run_on_racks(tmp_path, jobs_)
    assert real == twin
    expected = {"g1": (0, nodes(0, 1, 2)), "g2": (10, nodes(4, 5, 6)), "j4": (20, nodes(3, 7)),
                "j3": (100, nodes(0, 1))}  # fmt: skip
    assert {j: (int(at(r)), r["nodes"]) for j, r in real.items()} == expected
    assert all((r["cluster_queue"], r["flavor"], r["state"]) == ("cq", "racks", "Succeeded")
               and at(r) == at(r, "start_time") for r in real.values())  # fmt: skip
    assert summary["jobs_succeeded"] == 4
    # nothing left to chance: the real pair's pods.csv is the twins', byte for byte
    assert (tmp_path / "real" / "pods.csv").read_bytes() == (tmp_path / "twin" / "pods.csv").read_bytes()


def test_whole_racks_and_a_gang_no_rack_holds(tmp_path):
    # a and b (4 pods, one rack each) at 0 take a whole rack each. At 10, c (5 pods, one rack) fits no
    # rack even on empty nodes: Kueue never admits it; d (5 pods preferring one rack) waits for quota
    # until 100, then spreads over both racks.
    jobs_ = [{"id": "a", "subtime": 0, "res": 4, "topology": {"required": ZONE}},
             {"id": "b", "subtime": 0, "res": 4, "topology": {"required": ZONE}},
             {"id": "c", "subtime": 10, "res": 5, "topology": {"required": ZONE}},
             {"id": "d", "subtime": 10, "res": 5, "topology": {"preferred": ZONE}}]  # fmt: skip
    real, summary, twin, _ = run_on_racks(tmp_path, jobs_)
    assert real == twin
    expected = {"a": (0, nodes(0, 1, 2, 3)), "b": (0, nodes(4, 5, 6, 7)), "d": (100, nodes(0, 1, 2, 3, 4))}
    assert {j: (int(at(r)), r["nodes"]) for j, r in real.items() if j != "c"} == expected
    assert real["c"]["state"] == "Rejected" and summary["jobs_succeeded"] == 3
    for side in ("real", "twin"):
        with (tmp_path / side / "rejected.csv").open() as f:
            rejected = {r["job_id"]: r["expected"] for r in csv.DictReader(f)}
        assert list(rejected) == ["w0!c"] and "Kueue never admits it" in rejected["w0!c"]
        assert 'topology "dc" allows to fit only 4 out of 5 pod(s)' in rejected["w0!c"], side


def test_gangs_without_a_topology_request_in_a_tas_only_queue(tmp_path):
    # 2 racks of 4 two-core nodes, 16 cores of quota, all in one TAS flavor: Kueue applies TAS to every
    # workload, unconstrained without a request (LeastFreeCapacity at the lowest level, then by name).
    # s (one pod) at 0: node-0. g (3 pods) at 10 fits no host: the least free first, node-0 (1 slot)
    # then node-1 (2). h (4 pods) at 20: node-2, node-3. k (3 pods preferring one host) at 30: no host
    # holds it, so one rack: rack1 (rack0 is full), its hosts by BestFit: node-4 (2), node-5 (1).
    jobs_ = [{"id": "s", "subtime": 0, "res": 1},
             {"id": "g", "subtime": 10, "res": 3},
             {"id": "h", "subtime": 20, "res": 4},
             {"id": "k", "subtime": 30, "res": 3, "topology": {"preferred": HOST}}]  # fmt: skip
    real, summary, twin, _ = run_on_racks(tmp_path, jobs_, 2)
    assert real == twin
    expected = {"s": (0, nodes(0)), "g": (10, nodes(0, 1)), "h": (20, nodes(2, 3)), "k": (30, nodes(4, 5))}
    assert {j: (int(at(r)), r["nodes"]) for j, r in real.items()} == expected
    assert all(at(r) == at(r, "start_time") and r["flavor"] == "racks" for r in real.values())
    assert summary["jobs_succeeded"] == 4
