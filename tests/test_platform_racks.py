"""`batkube platform --racks`: racks as SimGrid clusters joined by one backbone, the rack as a node label."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from batkube_py.batsim_double.machines import Machines
from batkube_py.batsim_double.simplatform import Platform
from batkube_py.cli.app import main
from batkube_py.inputs.platforms import RACK_LABEL, rack_platform


def test_racks_are_clusters_joined_by_the_chosen_backbone(tmp_path: Path) -> None:
    path = tmp_path / "p.xml"
    path.write_text(rack_platform(4, 16, "4", "16Gi", backbone_bw="0.125GBps", backbone_lat="2ms"))
    pf = Platform(str(path))
    machines = Machines(pf)
    assert machines.nb_compute == 16
    assert {m.properties[RACK_LABEL] for m in machines.machines} == {"rack0", "rack1", "rack2", "rack3"}
    assert pf.hosts["node-5"].props[RACK_LABEL] == "rack1" and pf.hosts["node-5"].cores == 4
    same, lat_same = pf.route("node-0", "node-1")
    assert [x.name for x in same] == ["rack0_link_0_UP", "rack0_backbone", "rack0_link_1_DOWN"]
    assert lat_same == pytest.approx(105e-6, abs=1e-15)
    cross, lat = pf.route("node-0", "node-15")
    assert [x.name for x in cross] == [
        "rack0_link_0_UP",
        "rack0_backbone",
        "backbone",
        "rack3_backbone",
        "rack3_link_15_DOWN",
    ]
    assert cross[2].bandwidth == 0.125e9
    assert lat == pytest.approx(50e-6 + 5e-6 + 2e-3 + 5e-6 + 50e-6, abs=1e-15)
    to_master = [x.name for x in pf.route("node-0", "master_host0")[0]]
    assert "backbone" not in to_master and "master_link" in to_master


def test_cli_writes_racks_and_refuses_what_does_not_divide(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "r.xml"
    result = runner.invoke(
        main,
        [
            "platform",
            "-n",
            "8",
            "--racks",
            "2",
            "-c",
            "4",
            "--rack-bandwidth",
            "0.125GBps",
            "--rack-label",
            "example.com/rack",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert 'id="example.com/rack" value="rack1"' in out.read_text()
    for args, words in (
        (["-n", "7", "--racks", "2"], "multiple of --racks"),
        (["-n", "8", "--racks", "2", "--rack-bandwidth", "fast"], "--rack-bandwidth"),
        (["-n", "8", "--racks", "2", "--rack-latency", "-1s"], "--rack-latency"),
    ):
        result = runner.invoke(main, ["platform", *args])
        assert result.exit_code != 0 and words in result.output
