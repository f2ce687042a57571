"""swf-tools convert --queue-from: SWF's users/groups/queues/partitions as Kueue LocalQueues and
ClusterQueues, with quotas by the stated rule, run end to end by `batkube run --queues` on the double."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from batkube_py.inputs.platforms import cluster_platform
from batkube_py.inputs.queues import load_queues
from swf_tools import queues
from swf_tools.cli import main
from swf_tools.convert import ConvertOptions, convert
from swf_tools.errors import ConversionError
from swf_tools.swf import parse_swf

TRACE = Path(__file__).parent / "fixtures" / "swf" / "tenants.swf"


def _convert(**options) -> tuple[dict[str, str | None], queues.QueuePlan]:
    workload, report = convert(parse_swf(TRACE), ConvertOptions(**options))
    assert report.queue_plan is not None
    return {j.id: j.queue for j in workload.jobs}, report.queue_plan


def test_users_in_their_groups_cluster_queues_with_quotas_by_core_seconds():
    # core-seconds (procs x run time): group 1 = 400 + 400 + 100, group 2 = 400 + 300; job 6 (run time 0)
    # is skipped and so makes no queue. 10 cores: 5.625 and 4.375 → 5 and 4, the spare core to group 1.
    jobs, plan = _convert(queue_from="user", cluster_queue_from="group", quota_cores=10)
    assert plan.core_seconds == {"group-1": 900.0, "group-2": 700.0}
    assert plan.quotas == {"group-1": 6, "group-2": 4}
    # user 4 submits in both groups: one LocalQueue per pair
    assert plan.split == ["user-4"]
    assert jobs == {"1": "user-1", "2": "user-2", "3": "user-3", "4": "user-4-group-1", "5": "user-4-group-2"}
    assert plan.local_queues == {"user-1": "group-1", "user-2": "group-1", "user-3": "group-2",
                                 "user-4-group-1": "group-1", "user-4-group-2": "group-2"}  # fmt: skip


def test_each_field_gives_its_own_queues_and_missing_values_are_named_none():
    jobs, plan = _convert(queue_from="partition", quota_cores=16)
    assert jobs == {"1": "partition-1", "2": "partition-1", "3": "partition-2", "4": "partition-none",
                    "5": "partition-2"}  # fmt: skip
    # 800, 700 and 100 core-seconds of 1600 on 16 cores: exactly 8, 7 and 1
    assert plan.quotas == {"partition-1": 8, "partition-2": 7, "partition-none": 1}
    jobs, plan = _convert(queue_from="queue", quota_cores=16)
    assert set(jobs.values()) == {"queue-0", "queue-1"} and plan.local_queues["queue-0"] == "queue-0"


def test_quota_rule_floors_at_one_core_and_shares_the_rest_by_largest_remainder():
    assert queues.quotas({"a": 0.0, "b": 100.0}, 4) == {"a": 1, "b": 4}  # the floor adds a core
    assert queues.quotas({"a": 1.0, "b": 1.0, "c": 1.0}, 10) == {"a": 4, "b": 3, "c": 3}  # ties by name
    assert queues.quotas({"a": 2.0, "b": 1.0}, 3) == {"a": 2, "b": 1}


def test_cli_writes_the_queues_file_beside_the_workload_and_batkube_runs_it(tmp_path: Path):
    (tmp_path / "p.xml").write_text(cluster_platform(4, "4"))
    out = tmp_path / "w.json"
    result = CliRunner().invoke(main, ["convert", str(TRACE), "-o", str(out), "--platform",
                                       str(tmp_path / "p.xml"), "--queue-from", "user",
                                       "--cluster-queue-from", "group", "--queueing-strategy",
                                       "StrictFIFO"])  # fmt: skip
    assert result.exit_code == 0, result.output
    queues_file = tmp_path / "w.queues.yaml"
    assert "cpu quotas of 16 cores: group-1 9, group-2 7" in " ".join(result.output.split())
    text = queues_file.read_text()
    assert text.startswith("# Kueue v1beta2 objects") and "largest remainders" in text
    cfg = load_queues(queues_file)
    cohorts = {n: cq.spec.cohort_name for n, cq in cfg.cluster_queues.items()}
    assert cohorts == {"group-1": "swf", "group-2": "swf"}
    assert {cq.spec.queueing_strategy for cq in cfg.cluster_queues.values()} == {"StrictFIFO"}
    assert {n: lq.spec.cluster_queue for n, lq in cfg.local_queues.items()}["user-3"] == "group-2"
    assert [j["queue"] for j in json.loads(out.read_text())["jobs"]][:3] == ["user-1", "user-2", "user-3"]

    from batkube_py.cli.app import main as batkube

    run = tmp_path / "run"
    result = CliRunner().invoke(batkube, ["run", "-p", str(tmp_path / "p.xml"), "-w", str(out), "--batsim",
                                          "double", "--queues", str(queues_file), "-o", str(run),
                                          "--no-progress"])  # fmt: skip
    assert result.exit_code == 0, result.output
    pods = list(csv.DictReader((run / "pods.csv").open()))
    assert {p["job_id"].split("!")[-1]: (p["queue"], p["cluster_queue"]) for p in pods} == {
        "1": ("user-1", "group-1"), "2": ("user-2", "group-1"), "3": ("user-3", "group-2"),
        "4": ("user-4-group-1", "group-1"), "5": ("user-4-group-2", "group-2")}  # fmt: skip
    assert all(p["state"] == "Succeeded" and p["admitted_at"] for p in pods)


@pytest.mark.parametrize(("args", "message"), [
    (["--queue-from", "user"], "pass --platform or --quota-cores N"),
    (["--queue-from", "user", "--quota-cores", "8", "--memory-from", "used"], "drop --memory-from"),
    (["--cluster-queue-from", "group"], "--cluster-queue-from needs --queue-from"),
    (["--queue-from", "uid"], "Invalid value for '--queue-from'"),
])  # fmt: skip
def test_bad_queue_options_are_one_line_errors(tmp_path: Path, args: list[str], message: str):
    result = CliRunner().invoke(main, ["convert", str(TRACE), "-o", str(tmp_path / "w.json"), *args])
    assert result.exit_code != 0 and message in result.output, result.output
    assert "Traceback" not in result.output and not (tmp_path / "w.json").exists()


def test_without_queue_from_jobs_carry_no_queue():
    workload, report = convert(parse_swf(TRACE), ConvertOptions())
    assert report.queue_plan is None and all(j.queue is None for j in workload.jobs)
    assert '"queue"' not in workload.to_json()
    with pytest.raises(ConversionError, match="--quota-cores needs --queue-from"):
        convert(parse_swf(TRACE), ConvertOptions(quota_cores=4))
