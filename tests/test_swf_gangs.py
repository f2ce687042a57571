"""swf-tools convert keeping node counts (pod groups) and `batkube workload --pods-per-job`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from batkube_py.cli.app import main as batkube
from batkube_py.inputs.platforms import cluster_platform
from swf_tools.cli import main
from swf_tools.convert import ConvertOptions, convert
from swf_tools.errors import ConversionError
from swf_tools.swf import parse_swf_text

# job, submit, wait, runtime, procs alloc, cpu, mem used (KB/proc), procs req, ... (18 SWF fields)
TRACE = """; MaxProcs: 32
1 0 0 100 1 -1 1000 1 100 -1 1 1 1 -1 1 1 -1 -1
2 5 0 100 4 -1 1000 4 100 -1 1 1 1 -1 1 1 -1 -1
3 9 0 100 10 -1 1000 10 100 -1 1 1 1 -1 1 1 -1 -1
4 12 0 100 16 -1 1000 16 100 -1 1 1 1 -1 1 1 -1 -1
"""


def test_flattening_stays_the_default():
    workload, report = convert(parse_swf_text(TRACE), ConvertOptions())
    assert [j.res for j in workload.jobs] == [1, 1, 1, 1] and report.groups == 0


def test_node_counts_kept_give_ceil_p_over_cores_pods_each_asking_its_share():
    options = ConvertOptions(cores_per_node=4, memory_from="used")
    workload, report = convert(parse_swf_text(TRACE), options)
    res = {j.id: j.res for j in workload.jobs}
    assert res == {"1": 1, "2": 1, "3": 3, "4": 4} and report.groups == 2
    cpu = {j.id: workload.profiles[j.profile].cpu for j in workload.jobs}
    assert cpu == {"1": 1, "2": 4, "3": 3.333, "4": 4}  # 10 procs on 3 pods: 3.333 each, under 4
    memory = {j.id: workload.profiles[j.profile].memory for j in workload.jobs}
    assert memory["4"] == memory["2"]  # memory per pod: its share of the job's


def test_keeping_node_counts_refuses_flattening_options():
    with pytest.raises(ConversionError, match="share of the job's processors"):
        convert(parse_swf_text(TRACE), ConvertOptions(cores_per_node=4, normalize_cpu=4))
    with pytest.raises(ConversionError, match="--one-pod-per-node needs"):
        convert(parse_swf_text(TRACE), ConvertOptions(one_pod_per_node=True))


def test_cli_reads_cores_per_node_from_the_platform(tmp_path: Path):
    (tmp_path / "t.swf").write_text(TRACE)
    (tmp_path / "p.xml").write_text(cluster_platform(8, "4"))
    out = tmp_path / "w.json"
    result = CliRunner().invoke(main, ["convert", str(tmp_path / "t.swf"), "-o", str(out), "--platform",
                                       str(tmp_path / "p.xml"), "--one-pod-per-node"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "2 jobs are pod groups" in result.output
    doc = json.loads(out.read_text())
    assert [j["res"] for j in doc["jobs"]] == [1, 1, 3, 4]
    assert all(p["onePodPerNode"] is True for p in doc["profiles"].values())
    both = CliRunner().invoke(main, ["convert", str(tmp_path / "t.swf"), "-o", str(out), "--platform",
                                     str(tmp_path / "p.xml"), "--cores-per-node", "2"])  # fmt: skip
    assert both.exit_code != 0 and "mutually exclusive" in both.output


def test_batkube_workload_generates_gangs(tmp_path: Path):
    out = tmp_path / "w.json"
    result = CliRunner().invoke(batkube, ["workload", "spaced", "-n", "3", "--pods-per-job", "4",
                                          "--one-pod-per-node", "-o", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert [j["res"] for j in doc["jobs"]] == [4, 4, 4] and doc["profiles"]["delay"]["onePodPerNode"] is True
    bad = CliRunner().invoke(batkube, ["workload", "burst", "--one-pod-per-node", "-o", str(out)])
    assert bad.exit_code != 0 and "needs --pods-per-job" in bad.output
