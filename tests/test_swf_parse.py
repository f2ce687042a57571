"""SWF parsing on the real archive traces and on broken fixtures."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from shared_support import requires_shared

from swf_tools.cli import main
from swf_tools.errors import SwfHeaderError, SwfParseError
from swf_tools.swf import COLUMNS, parse_swf, parse_swf_text, write_swf

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
NASA = SHARED / "traces" / "NASA-iPSC-1993-3.1-cln.swf"
KIT = SHARED / "reference" / "KIT-10-80.swf"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "swf"

def needs_shared(test):
    test = requires_shared("reference", "KIT-10-80.swf")(test)
    return requires_shared("traces", "NASA-iPSC-1993-3.1-cln.swf")(test)


@needs_shared
def test_nasa_keeps_every_job_including_the_first() -> None:
    trace = parse_swf(NASA)
    assert len(trace.jobs) == 18239  # evalys' reader gives 18238
    assert list(trace.jobs.columns) == COLUMNS
    first = trace.jobs.iloc[0]
    assert (first["jobID"], first["submission_time"], first["execution_time"], first["proc_alloc"]) == (
        1, 0, 1451, 128)
    assert trace.line_of(0) == 33
    assert trace.malformed == []


@needs_shared
def test_nasa_header() -> None:
    header = parse_swf(NASA).header
    assert header.integer("MaxProcs") == 128
    assert header.integer("UnixStartTime") == 749458803
    assert header.value("TimeZoneString") == "US/Pacific"
    assert header.all("Queue") == ["0  interactive", "1  batch"]
    assert header.value("Information") == "http://www.nas.nasa.gov/\nhttp://www.cs.huji.ac.il/labs/parallel/workload/"
    assert len(header.all("Note")) == 4


@needs_shared
def test_nasa_parses_well_under_a_second() -> None:
    parse_swf(NASA)  # warm imports and caches
    start = time.perf_counter()
    parse_swf(NASA)
    assert time.perf_counter() - start < 0.5


@needs_shared
def test_kit_round_trip_is_byte_identical(tmp_path: Path) -> None:
    trace = parse_swf(KIT)
    assert len(trace.jobs) == 39 and trace.jobs["jobID"].iloc[0] == 982
    out = tmp_path / "kit.swf"
    write_swf(out, trace.header, trace.jobs)
    assert out.read_text() == KIT.read_text()


def test_tabs_spaces_trailing_comments_and_continuations() -> None:
    trace = parse_swf(FIXTURES / "mixed.swf")
    assert trace.jobs["jobID"].tolist() == [1, 2, 3, 4, 5, 6, 7]
    assert trace.jobs["mem_used"].iloc[0] == 2048
    assert trace.header.integer("MaxProcs") == 16
    assert trace.header.value("MaxProcs") == "16\nindented note line without key"
    assert trace.lines.tolist() == [3, 4, 5, 6, 7, 8, 9]


def test_round_trip_keeps_values(tmp_path: Path) -> None:
    trace = parse_swf(FIXTURES / "mixed.swf")
    out = tmp_path / "mixed.swf"
    write_swf(out, trace.header, trace.jobs)
    again = parse_swf(out)
    assert again.jobs.equals(trace.jobs)


def test_float_fields_survive_round_trip(tmp_path: Path) -> None:
    trace = parse_swf_text("1 0.5 0 12.25 1 -1 -1 1 -1 -1 1 1 1 -1 1 1 -1 -1\n")
    out = tmp_path / "f.swf"
    write_swf(out, trace.header, trace.jobs)
    assert parse_swf(out).jobs.equals(trace.jobs)


def test_wrong_field_count_is_skipped_and_counted() -> None:
    trace = parse_swf(FIXTURES / "wrong_field_count.swf")
    assert trace.jobs["jobID"].tolist() == [1, 2, 4]
    assert [(i.line, i.message) for i in trace.malformed] == [
        (7, "expected 18 whitespace-separated fields, found 5")]


def test_strict_fails_with_file_line_and_field() -> None:
    with pytest.raises(SwfParseError) as info:
        parse_swf(FIXTURES / "non_numeric.swf", strict=True)
    message = str(info.value)
    assert "non_numeric.swf:3: field 4 (run time, execution_time): expected a number, got 'abc'" in message
    assert "--strict" in message


def test_bad_job_number_and_nan_are_reported() -> None:
    trace = parse_swf(FIXTURES / "bad_values.swf")
    assert trace.jobs["jobID"].tolist() == [1]
    described = [i.describe() for i in trace.malformed]
    assert described == [
        "line 3: field 1 (job number, jobID): expected a non-negative integer, got 2.5",
        "line 4: field 4 (run time, execution_time): expected a finite number, got 'nan'",
    ]


def test_no_jobs_is_an_error() -> None:
    with pytest.raises(SwfParseError, match="no job lines found"):
        parse_swf(FIXTURES / "no_jobs.swf")


def test_bad_header_value_names_the_line() -> None:
    trace = parse_swf(FIXTURES / "bad_header.swf")
    expected = r"bad_header.swf:1: header MaxProcs: expected an integer, got 'many'"
    with pytest.raises(SwfHeaderError, match=expected):
        _ = trace.max_procs


def test_missing_file_is_a_clear_error() -> None:
    with pytest.raises(SwfParseError, match="cannot read trace"):
        parse_swf(FIXTURES / "does-not-exist.swf")


@pytest.mark.parametrize(("fixture", "expected"), [
    ("non_numeric.swf", "non_numeric.swf:3: field 4 (run time, execution_time): expected a number"),
    ("wrong_field_count.swf", "wrong_field_count.swf:7: expected 18 whitespace-separated fields, found 5"),
    ("bad_values.swf", "bad_values.swf:3: field 1 (job number, jobID)"),
])
def test_cli_strict_reports_line_numbers(tmp_path: Path, fixture: str, expected: str) -> None:
    result = CliRunner().invoke(main, ["convert", str(FIXTURES / fixture), "--strict", "-o",
                                       str(tmp_path / "out.json")])
    assert result.exit_code == 1
    assert expected in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "out.json").exists()


def test_cli_default_skips_with_a_count(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["convert", str(FIXTURES / "wrong_field_count.swf"), "-o",
                                       str(tmp_path / "out.json")])
    assert result.exit_code == 0, result.output
    assert "skipped 1 malformed line(s)" in result.output
    assert "wrong_field_count.swf:7" in result.output


def test_cli_bad_header_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["extract", str(FIXTURES / "bad_header.swf"), "--period", "1h",
                                       "--utilization", "0.5", "-o", str(tmp_path / "o.swf")])
    assert result.exit_code == 1
    assert "bad_header.swf:1: header MaxProcs: expected an integer, got 'many'" in result.output
