"""Gangs under topology-aware flavors (Kueue pod groups with or without a topology request) on the real
backend: the real Kueue v0.17.0 finds each gang its domains, its topology ungater gives every member its
node, the real kube-scheduler 1.37.2 places the group, on the Batsim 4.2.1 double (docs/kueue.md).
Checked against a hand-computed expectation and against the twins, job by job (admission instant,
ClusterQueue, flavor, start, set of nodes) and member by member (node).

The cases are data (TAS_GANG_CASES, as test_kueue_real_gangs.GANG_CASES) for a parity suite to reuse.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from kueue_support import cq, flavor, lq
from parity_cases import Case
from test_kueue_real_gangs import _job, at, kueue, run_both  # noqa: F401  (kueue: a fixture)
from test_kueue_tas import HOST, POOL, ZONE, topology

from batkube_py.inputs.platforms import rack_platform

pytestmark = pytest.mark.usefixtures("kueue")
REQUIRED, PREFERRED = {"required": ZONE}, {"preferred": ZONE}


def on_racks(name: str, cores: int, jobs: list[dict]) -> tuple[Case, list[dict]]:
    """2 racks of 4 nodes of CORES cores, one TAS flavor over rack and host with all of them as quota,
    one-core pods of 100 s in queue q."""
    case = Case(name, [(8, {})], [{**j, "queue": "q"} for j in jobs],
                platform_xml=rack_platform(2, 8, str(cores), labels=POOL))  # fmt: skip
    racks = flavor("racks", topologyName="dc", nodeLabels=POOL)
    quota = cq("cq", {"racks": {"cpu": 8 * cores}})
    return case, [topology(levels=(ZONE, HOST)), racks, quota, lq("q", "cq")]


# name → (case, the queues file's objects), as test_kueue_real_gangs.GANG_CASES, for a parity suite
TAS_GANG_CASES: dict[str, tuple[Case, list[dict]]] = {
    "tas-gangs-racks": on_racks("tas-gangs-racks", 1, [
        _job("g1", 0, 3, topology=REQUIRED), _job("g2", 10, 3, topology=REQUIRED),
        _job("j3", 20, 2, topology=REQUIRED), _job("j4", 20, 2, topology=PREFERRED),
    ]),  # fmt: skip
    "tas-gangs-whole-racks": on_racks("tas-gangs-whole-racks", 1, [
        _job("a", 0, 4, topology=REQUIRED), _job("b", 0, 4, topology=REQUIRED),
        _job("c", 10, 5, topology=REQUIRED), _job("d", 10, 5, topology=PREFERRED),
    ]),  # fmt: skip
    "tas-gangs-unconstrained": on_racks("tas-gangs-unconstrained", 2, [
        _job("s", 0), _job("g", 10, 3), _job("h", 20, 4), _job("k", 30, 3, topology={"preferred": HOST}),
    ]),  # fmt: skip
}


def run_on_racks(tmp: Path, name: str) -> tuple[dict, dict, dict, dict]:
    """The case on the real pair and on the twins (run_both), each member on the same node on both sides:
    Kueue's ungater hands the domains out by the members' ranks (their pod-group-pod-index label), the
    twin in member order."""
    out = run_both(tmp, name, TAS_GANG_CASES)
    assert members(tmp / "real") == members(tmp / "twin")
    return out


def members(out: Path) -> dict[str, str]:
    with (out / "pods.csv").open() as f:
        return {r["pod"]: r["node"] for r in csv.DictReader(f)}


def nodes(*ids: int) -> set[str]:
    return {f"node-{i}" for i in ids}


def test_gangs_find_their_racks_as_in_the_twin(tmp_path):
    # g1 (3 pods, one rack) at 0: both racks hold 4, BestFit keeps the first: rack0. g2 at 10: rack0 has
    # 1 slot, so rack1. At 20 j3 (2 pods, one rack) fits no rack and waits; j4 (2 pods preferring one
    # rack) falls back to both: node-3 and node-7. At 100 g1 ends; j3 takes two nodes of rack0.
    real, summary, twin, _ = run_on_racks(tmp_path, "tas-gangs-racks")
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
    real, summary, twin, _ = run_on_racks(tmp_path, "tas-gangs-whole-racks")
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
    real, summary, twin, _ = run_on_racks(tmp_path, "tas-gangs-unconstrained")
    assert real == twin
    expected = {"s": (0, nodes(0)), "g": (10, nodes(0, 1)), "h": (20, nodes(2, 3)), "k": (30, nodes(4, 5))}
    assert {j: (int(at(r)), r["nodes"]) for j, r in real.items()} == expected
    assert all(at(r) == at(r, "start_time") and r["flavor"] == "racks" for r in real.values())
    assert summary["jobs_succeeded"] == 4
