"""SWF → Batsim workload conversion, including the thesis' KIT_10h_80 acceptance check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from shared_support import requires_shared

from swf_tools.cli import main
from swf_tools.convert import (
    SKIP_BEFORE_FROM_TIME,
    SKIP_CANCELLED,
    SKIP_NEGATIVE_RUNTIME,
    SKIP_ZERO_RUNTIME,
    ConvertOptions,
    convert,
    profile_name,
)
from swf_tools.errors import ConversionError
from swf_tools.swf import parse_swf, parse_swf_text
from swf_tools.workload import load_workload

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
KIT = SHARED / "reference" / "KIT-10-80.swf"
KIT_JSON = SHARED / "reference" / "workloads" / "KIT_10h_80.json"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "swf"

def needs_kit(test):
    test = requires_shared("reference", "workloads", "KIT_10h_80.json")(test)
    return requires_shared("reference", "KIT-10-80.swf")(test)


def _job_values(doc: dict) -> list[tuple]:
    return [(j["id"], j["subtime"], j["res"], doc["profiles"][j["profile"]]["delay"],
             doc["profiles"][j["profile"]]["cpu"], doc["profiles"][j["profile"]]["scheduler"],
             doc["profiles"][j["profile"]]["type"], j.get("walltime")) for j in doc["jobs"]]


@needs_kit
def test_kit_acceptance_matches_the_thesis_workload_exactly(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    result = CliRunner().invoke(main, ["convert", str(KIT), "--normalize-cpu", "6", "--cpu-headroom", "0.1",
                                       "--max-duration", "3600", "-o", str(out)])
    assert result.exit_code == 0, result.output
    ours = json.loads(out.read_text())
    reference = json.loads(KIT_JSON.read_text())
    assert ours["nb_res"] == reference["nb_res"] == 1
    assert len(ours["jobs"]) == 39
    assert _job_values(ours) == _job_values(reference)
    # same JSON types as the thesis file (ints stay ints), not just equal values
    assert [type(v) for row in _job_values(ours) for v in row] == [
        type(v) for row in _job_values(reference) for v in row]
    load_workload(out)


@needs_kit
def test_kit_profiles_are_per_delay_cpu_memory() -> None:
    workload, report = convert(parse_swf(KIT), ConvertOptions(normalize_cpu=6, cpu_headroom=0.1,
                                                              max_duration=3600))
    keys = [(p.delay, p.cpu, p.memory) for p in workload.profiles.values()]
    assert len(keys) == len(set(keys)) == 29
    assert workload.profiles["delay3600-cpu5900m"].cpu == 5.9
    assert report.capped == 2 and report.trimmed == 12 and report.cpu_reference == 1024


def test_thesis_profile_sharing_bug_is_fixed() -> None:
    # Same runtime, different sizes: swf-to-json.go gave job 2 the cpu of job 1.
    text = ("1 0 0 100 4 -1 -1 4 -1 -1 1 1 1 -1 1 1 -1 -1\n"
            "2 5 0 100 2 -1 -1 2 -1 -1 1 1 1 -1 1 1 -1 -1\n")
    workload, _ = convert(parse_swf_text(text), ConvertOptions(normalize_cpu=4))
    cpus = [workload.profiles[j.profile].cpu for j in workload.jobs]
    assert cpus == [4, 2]


def test_skips_are_counted_by_reason() -> None:
    workload, report = convert(parse_swf(FIXTURES / "mixed.swf"), ConvertOptions())
    assert [j.id for j in workload.jobs] == ["1", "5", "6", "7"]
    assert report.total == 7 and report.kept == 4
    assert dict(report.skipped) == {SKIP_ZERO_RUNTIME: 1, SKIP_NEGATIVE_RUNTIME: 1, SKIP_CANCELLED: 1}
    assert report.kept + report.nb_skipped == report.total
    # job 5 has no allocation (-1): its requested 3 processors are used
    assert workload.profiles[workload.jobs[1].profile].cpu == 3


def test_subtimes_rebased_to_zero_and_renumbering() -> None:
    workload, _ = convert(parse_swf(FIXTURES / "mixed.swf"), ConvertOptions(keep_ids=False))
    assert [(j.id, j.subtime) for j in workload.jobs] == [("0", 0), ("1", 25), ("2", 30), ("3", 31)]


def test_jobs_from_time() -> None:
    workload, report = convert(parse_swf(FIXTURES / "mixed.swf"), ConvertOptions(jobs_from_time=26))
    assert [(j.id, j.subtime) for j in workload.jobs] == [("6", 0), ("7", 1)]
    assert report.skipped[SKIP_BEFORE_FROM_TIME] == 2


def test_uniform_cpu_walltime_scheduler() -> None:
    options = ConvertOptions(uniform_cpu=0.5, walltime_factor=2, scheduler="my-sched", max_duration=80)
    workload, _ = convert(parse_swf(FIXTURES / "mixed.swf"), options)
    profiles = {j.id: workload.profiles[j.profile] for j in workload.jobs}
    assert {p.cpu for p in profiles.values()} == {0.5}
    assert {p.scheduler for p in profiles.values()} == {"my-sched"}
    assert [(j.id, j.walltime, profiles[j.id].delay) for j in workload.jobs] == [
        ("1", 160, 80), ("5", 140, 70), ("6", 160, 80), ("7", 160, 80)]


def test_memory_from_used_and_normalised() -> None:
    trace = parse_swf(FIXTURES / "mixed.swf")
    workload, report = convert(trace, ConvertOptions(memory_from="used"))
    memory = {j.id: workload.profiles[j.profile].memory for j in workload.jobs}
    # KB per processor × processors; job 7 has no memory value
    assert memory == {"1": "8Mi", "5": "1536Ki", "6": "16Mi", "7": None}
    assert report.without_memory == 1
    workload, _ = convert(trace, ConvertOptions(memory_from="used", normalize_memory_kib=4 * 1024 * 1024))
    memory = {j.id: workload.profiles[j.profile].memory for j in workload.jobs}
    assert memory == {"1": "2Gi", "5": "384Mi", "6": "4Gi", "7": None}


def test_min_cpu_floor_and_headroom_cap() -> None:
    text = "".join(f"{i} {i} 0 10 {p} -1 -1 {p} -1 -1 1 1 1 -1 1 1 -1 -1\n"
                   for i, p in enumerate([1, 10000, 9999], start=1))
    workload, report = convert(parse_swf_text(text), ConvertOptions(normalize_cpu=1, cpu_headroom=0.1))
    assert [workload.profiles[j.profile].cpu for j in workload.jobs] == [0.001, 0.9, 0.9]
    assert report.capped == 2


def test_duplicate_ids_need_renumbering() -> None:
    expected = r"job number 7 appears more than once \(line 2, line 3\).*--renumber"
    with pytest.raises(ConversionError, match=expected):
        convert(parse_swf(FIXTURES / "duplicate_ids.swf"), ConvertOptions())
    workload, _ = convert(parse_swf(FIXTURES / "duplicate_ids.swf"), ConvertOptions(keep_ids=False))
    assert [j.id for j in workload.jobs] == ["0", "1"]


@pytest.mark.parametrize(("args", "message"), [
    (["--normalize-cpu", "6", "--uniform-cpu", "1"], "mutually exclusive"),
    (["--cpu-headroom", "0.1"], "needs --normalize-cpu"),
    (["--normalize-cpu", "1", "--cpu-headroom", "1"], "--cpu-headroom must be in [0, 1.0)"),
    (["--min-cpu", "0.0001"], "--min-cpu must be at least 0.001"),
    (["--walltime-factor", "0.5"], "--walltime-factor must be >= 1"),
    (["--max-duration", "soon"], "expected a duration"),
    (["--normalize-memory", "4Gi"], "--normalize-memory needs --memory-from"),
])
def test_bad_options_are_clear_errors(tmp_path: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, ["convert", str(FIXTURES / "mixed.swf"), "-o", str(tmp_path / "o.json"),
                                       *args])
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output


def test_nothing_left_is_an_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["convert", str(FIXTURES / "mixed.swf"), "--jobs-from-time", "1000",
                                       "-o", str(tmp_path / "o.json")])
    assert result.exit_code == 1
    assert "no job left to convert (4 submitted before --jobs-from-time, 1 zero runtime" in result.output


def test_profile_names_are_container_names() -> None:
    assert profile_name(3600, 5.9, None) == "delay3600-cpu5900m"
    assert profile_name(12.5, 0.001, "512Mi") == "delay12p5-cpu1m-mem512mi"
