"""A pod whose nodeSelector / required node affinity no node satisfies is refused at submission with that
reason, not with resource numbers of nodes it could never use (issue 15: misleading rejections)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner
from kubernetes import client

from batkube_py.adapter import podshape, translate
from batkube_py.cli.app import main
from batkube_py.cluster import fit
from batkube_py.cluster.embedded import EmbeddedCluster
from batkube_py.protocol.models import Resource
from batkube_py.scheduler.snapshot import NodeTable


def nodes(*specs: dict) -> list[client.V1Node]:
    return [
        translate.node_from_resource(
            Resource(id=i, name=f"n{i}", state="idle", properties=props, zone_properties={})
        )
        for i, props in enumerate(specs)
    ]


def pod(cpu: str, **fields: object) -> client.V1Pod:
    p = podshape.pod_from_job(
        "j", {"res": 1, "profile": "p"}, {"type": "delay", "delay": 1, "cpu": cpu, **fields}, "j"
    )
    assert isinstance(p, client.V1Pod)
    return p


AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]
        }
    }
}


def test_a_selector_no_node_matches_is_the_reason_not_the_resources() -> None:
    c = EmbeddedCluster(nodes({"cpu": "4", "disk": "hdd"}, {"cpu": "4"}), seed=0)
    why = c.fits_empty_cluster(pod("1", nodeSelector={"disk": "ssd"}))
    assert why == "its nodeSelector disk=ssd matches no node (no node has those labels)"
    assert "its required node affinity matches no node" in c.fits_empty_cluster(pod("1", affinity=AFFINITY))
    # the same requests without the selector fit: the cache keys on the constraint too
    assert c.fits_empty_cluster(pod("1")) is None
    assert c.fits_empty_cluster(pod("1", nodeSelector={"disk": "hdd"})) is None


def test_requests_too_big_for_the_selected_nodes_say_so_among_those_nodes() -> None:
    c = EmbeddedCluster(nodes({"cpu": "1", "disk": "ssd"}, {"cpu": "8"}), seed=0)
    assert c.fits_empty_cluster(pod("4", nodeSelector={"disk": "ssd"})) == (
        "cpu request 4 exceeds every node's allocatable cpu (max 1) (among the 1 node(s) its nodeSelector "
        "disk=ssd matches)"
    )
    assert c.fits_empty_cluster(pod("4")) is None


def test_the_real_scheduler_backend_uses_the_same_check() -> None:
    """ApiServerCluster.fits_empty_cluster hands its per-node fit to fit.never_fits with its node table."""
    table = NodeTable(nodes({"cpu": "4"}, {"cpu": "4"}))
    rooms = [(4000, float("inf"), 110)] * 2
    ok = np.array([True, True])
    assert fit.never_fits(pod("1"), table, ok, rooms) is None
    assert "nodeSelector disk=ssd matches no node" in fit.never_fits(
        pod("1", nodeSelector={"disk": "ssd"}), table, ok, rooms
    )


def test_a_run_rejects_the_unmatched_pod_with_the_selector_reason(tmp_path: Path) -> None:
    platform = tmp_path / "p.xml"
    workload = tmp_path / "w.json"
    assert (
        CliRunner().invoke(main, ["platform", "--nodes", "2", "--cores", "1", "-o", str(platform)]).exit_code
        == 0
    )
    workload.write_text(json.dumps({
        "nb_res": 1,
        "jobs": [{"id": "1", "subtime": 0, "res": 1, "profile": "sel"},
                 {"id": "2", "subtime": 0, "res": 1, "profile": "p"}],
        "profiles": {"sel": {"type": "delay", "delay": 5, "cpu": "1", "nodeSelector": {"disk": "ssd"}},
                     "p": {"type": "delay", "delay": 5, "cpu": "1"}},
    }))  # fmt: skip
    out = tmp_path / "out"
    r = CliRunner().invoke(
        main, ["run", "-p", str(platform), "-w", str(workload), "-o", str(out), "--batsim", "double"]
    )
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader((out / "rejected.csv").open()))
    assert [row["job_id"] for row in rows] == ["w0!1"]
    reason = rows[0]["reason"]
    assert "nodeSelector disk=ssd matches no node" in reason
    assert "Insufficient" not in reason and "didn't match" not in reason and "0/2 nodes" not in reason
    assert rows[0]["field"] == "nodeSelector" and rows[0]["value"] == "nodeSelector disk=ssd"
