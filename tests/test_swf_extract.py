"""Period extraction on the NASA trace: evalys' search, checked by an independent utilisation measure."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from shared_support import shared

from swf_tools.cli import main
from swf_tools.extract import EVALYS_CONVERSION, PeriodSearch, extract_period, find_periods
from swf_tools.swf import SwfTrace, parse_swf
from swf_tools.workload import load_workload

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
NASA = SHARED / "traces" / "NASA-iPSC-1993-3.1-cln.swf"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "swf"

@pytest.fixture(autouse=True)
def _needs_nasa() -> None:
    shared("traces", "NASA-iPSC-1993-3.1-cln.swf")


def naive_utilisation(trace: SwfTrace, begin: float, end: float) -> float:
    """Deliberately plain Python, sharing no code with swf_tools.stats."""
    used = 0.0
    for _, job in trace.jobs.iterrows():
        if job.status > 1 or job.execution_time < 0 or job.proc_alloc <= 0:
            continue
        start = job.submission_time + max(job.waiting_time, 0)
        stop = start + job.execution_time
        used += max(0.0, min(stop, end) - max(start, begin)) * job.proc_alloc
    return used / ((end - begin) * 128)


@pytest.fixture(scope="module")
def nasa() -> SwfTrace:
    return parse_swf(shared("traces", "NASA-iPSC-1993-3.1-cln.swf"))


@pytest.fixture(scope="module")
def search(nasa: SwfTrace) -> PeriodSearch:
    return find_periods(nasa, 10 * 3600, 0.8, 0.01)


def test_periods_have_the_asked_utilisation(nasa: SwfTrace, search: PeriodSearch) -> None:
    assert search.periods, "NASA has 10 h periods at 0.8 ± 0.01"
    assert search.rejected_by_check == 0
    for period in search.periods:
        assert period.end - period.begin == 36000
        measured = naive_utilisation(nasa, period.begin, period.end)
        assert abs(measured - 0.8) <= 0.01
        assert measured == pytest.approx(period.utilisation, abs=1e-12)
        assert period.evalys_utilisation == pytest.approx(period.utilisation, abs=1e-9)


def test_extracted_rows_are_the_original_jobs_of_the_period(nasa: SwfTrace, search: PeriodSearch) -> None:
    period = search.periods[-1]
    header, jobs = extract_period(nasa, period)
    submit = nasa.jobs["submission_time"]
    expected = nasa.jobs[(submit >= period.begin) & (submit < period.end)].reset_index(drop=True)
    assert jobs.equals(expected)
    assert [e.key for e in header.entries] == ["Conversion", "UnixStartTime", "TimeZoneString", "MaxProcs",
                                               "Note"]
    assert header.value("UnixStartTime") == "749458803"  # an epoch, not evalys' period begin


def test_rebase_moves_times_and_epoch(nasa: SwfTrace, search: PeriodSearch) -> None:
    period = search.periods[-1]
    header, jobs = extract_period(nasa, period, rebase=True)
    assert jobs["submission_time"].min() >= 0 and jobs["submission_time"].max() < 36000
    assert header.integer("UnixStartTime") == 749458803 + int(period.begin)


def test_change_submit_times_keeps_start_times(nasa: SwfTrace, search: PeriodSearch) -> None:
    period = search.periods[-1]
    _, plain = extract_period(nasa, period)
    _, merged = extract_period(nasa, period, merge="change-submit-times")
    assert len(merged) > len(plain)
    # evalys' semantics: running jobs are resubmitted at their start, queued ones at the period start
    assert ((merged["submission_time"] >= period.begin) | (merged["waiting_time"] <= 0)).all()
    original = nasa.jobs.set_index("jobID")
    for _, job in merged.iterrows():
        source = original.loc[job.jobID]
        start = source.submission_time + max(source.waiting_time, 0)
        assert job.submission_time + max(job.waiting_time, 0) == start


def test_seeded_search_is_reproducible_and_leaves_numpy_alone(nasa: SwfTrace) -> None:
    np.random.seed(1234)
    expected_next = np.random.random()
    np.random.seed(1234)
    first = find_periods(nasa, 10 * 3600, 0.5, 0.05, seed=7)
    assert np.random.random() == expected_next
    second = find_periods(nasa, 10 * 3600, 0.5, 0.05, seed=7)
    assert first.periods == second.periods
    for period in first.periods:
        assert abs(period.utilisation - 0.5) <= 0.05


def test_cli_extract_then_convert(tmp_path: Path, search: PeriodSearch) -> None:
    out = tmp_path / "nasa-10h-80.swf"
    result = CliRunner().invoke(main, ["extract", str(NASA), "--period", "10h", "--utilization", "0.8",
                                       "--variation", "0.01", "--index", "1", "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text().splitlines()
    assert text[0] == f"; Conversion: {EVALYS_CONVERSION}"
    extracted = parse_swf(out, strict=True)
    period = search.periods[1]
    assert len(extracted.jobs) == period.nb_jobs
    assert extracted.jobs["submission_time"].between(period.begin, period.end, inclusive="left").all()
    wl = tmp_path / "wl.json"
    result = CliRunner().invoke(main, ["convert", str(out), "--normalize-cpu", "6", "--cpu-headroom", "0.1",
                                       "--max-duration", "1h", "-o", str(wl)])
    assert result.exit_code == 0, result.output
    workload = load_workload(wl)
    assert max(workload.profiles[j.profile].cpu or 0 for j in workload.jobs) <= 5.9
    assert json.loads(wl.read_text())["nb_res"] == 1


def test_cli_no_matching_period_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["extract", str(NASA), "--period", "10h", "--utilization", "0.999",
                                       "--variation", "0.0001", "-o", str(tmp_path / "o.swf")])
    assert result.exit_code == 1
    assert "no 10 h period" in result.output and "has a mean utilisation of 0.999" in result.output
    assert not (tmp_path / "o.swf").exists()


def test_cli_index_out_of_range(tmp_path: Path, search: PeriodSearch) -> None:
    result = CliRunner().invoke(main, ["extract", str(NASA), "--period", "10h", "--utilization", "0.8",
                                       "--index", str(len(search.periods)), "-o", str(tmp_path / "o.swf")])
    assert result.exit_code == 1
    assert f"only {len(search.periods)} matching period(s)" in result.output


def test_cli_info(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["info", str(NASA), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["jobs"] == 18239
    assert summary["max_procs_header"] == 128
    assert 0.4 < summary["utilisation"] < 0.5
    assert sum(summary["sizes"].values()) == 18239
    result = CliRunner().invoke(main, ["info", str(NASA)])
    assert result.exit_code == 0 and "utilisation" in result.output


def test_missing_max_procs_needs_the_option(tmp_path: Path) -> None:
    trace = tmp_path / "nomax.swf"
    trace.write_text((FIXTURES / "mixed.swf").read_text().replace("; MaxProcs: 16\n", ""))
    result = CliRunner().invoke(main, ["extract", str(trace), "--period", "10s", "--utilization", "0.5",
                                       "-o", str(tmp_path / "o.swf")])
    assert result.exit_code == 1
    assert "no usable 'MaxProcs' header" in result.output and "--max-procs" in result.output
