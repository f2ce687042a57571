"""Property tests: whatever the trace, convert emits a valid workload and accounts for every job."""

from __future__ import annotations

import math
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swf_tools.convert import ConvertOptions, convert
from swf_tools.errors import ConversionError
from swf_tools.swf import parse_swf, parse_swf_text, write_swf
from swf_tools.workload import BatsimWorkload

missing_or = st.one_of(st.just(-1), st.integers(0, 10**6))
row = st.tuples(
    st.one_of(st.just(-1), st.integers(0, 10**7)),  # submit
    st.one_of(st.just(-1), st.integers(0, 5000)),  # wait
    st.one_of(st.just(-1), st.just(0), st.integers(-5, 200000)),  # runtime, some negative
    st.one_of(st.just(-1), st.integers(0, 4096)),  # allocated procs
    missing_or,  # used memory
    st.one_of(st.just(-1), st.integers(1, 4096)),  # requested procs
    missing_or,  # requested memory
    st.sampled_from([-1, 0, 1, 2, 5]),  # status
)


def _swf(rows: list[tuple[int, ...]]) -> str:
    lines = ["; MaxProcs: 4096\n"]
    for number, (submit, wait, runtime, procs, mem, req, req_mem, status) in enumerate(rows, start=1):
        lines.append(f"{number}\t{submit} {wait} {runtime} {procs} -1 {mem} {req} -1 {req_mem} {status} "
                     "1 1 -1 1 1 -1 -1\n")
    return "".join(lines)


@st.composite
def options(draw: st.DrawFn) -> ConvertOptions:
    mode = draw(st.sampled_from(["normalize", "uniform", "raw"]))
    normalize = uniform = None
    headroom = 0.0
    if mode == "normalize":
        normalize = draw(st.floats(0.01, 256, allow_nan=False))
        headroom = draw(st.floats(0, 0.9)) * normalize
    elif mode == "uniform":
        uniform = draw(st.floats(0.001, 64))
    return ConvertOptions(
        normalize_cpu=normalize, uniform_cpu=uniform, cpu_headroom=headroom,
        normalize_against=draw(st.sampled_from(["max-job", "max-procs"])),
        max_duration=draw(st.one_of(st.none(), st.floats(1, 10**5))),
        memory_from=draw(st.sampled_from(["none", "used", "requested"])),
        walltime_factor=draw(st.one_of(st.none(), st.floats(1, 10))),
        keep_ids=draw(st.booleans()),
        jobs_from_time=draw(st.one_of(st.none(), st.integers(0, 10**7))),
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(row, min_size=1, max_size=40), options())
def test_convert_never_emits_an_invalid_workload(rows: list[tuple[int, ...]], opts: ConvertOptions) -> None:
    trace = parse_swf_text(_swf(rows))
    assert len(trace.jobs) == len(rows) and not trace.malformed
    try:
        workload, report = convert(trace, opts)
    except ConversionError as exc:
        assert "no job left to convert" in str(exc)
        return
    assert report.kept + report.nb_skipped == report.total == len(rows)
    assert len(workload.jobs) == report.kept

    again = BatsimWorkload.model_validate_json(workload.to_json())  # what batkube will read back
    assert again == workload
    profiles = workload.profiles
    keys = [(p.delay, p.cpu, p.memory) for p in profiles.values()]
    assert len(keys) == len(set(keys))
    assert min(j.subtime for j in workload.jobs) == 0
    assert len({j.id for j in workload.jobs}) == len(workload.jobs)
    for job in workload.jobs:
        profile = profiles[job.profile]
        assert profile.cpu is not None and profile.cpu >= 0.001
        assert profile.delay > 0
        if opts.normalize_cpu is not None:
            assert profile.cpu <= opts.normalize_cpu
            assert profile.cpu <= opts.normalize_cpu - opts.cpu_headroom + 1e-9
        if opts.max_duration is not None:
            assert profile.delay <= opts.max_duration
        if opts.walltime_factor is not None:
            assert job.walltime is not None and job.walltime >= profile.delay
        assert math.isclose(profile.cpu * 1000, round(profile.cpu * 1000), abs_tol=1e-6)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(row, min_size=1, max_size=40))
def test_write_then_parse_is_identity(tmp_path: Path, rows: list[tuple[int, ...]]) -> None:
    trace = parse_swf_text(_swf(rows))
    out = tmp_path / "t.swf"
    write_swf(out, trace.header, trace.jobs)
    again = parse_swf(out)
    assert again.jobs.equals(trace.jobs)
    assert again.header.integer("MaxProcs") == 4096
