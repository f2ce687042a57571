"""Hostile input to the file-reading commands and the CLI: each case ends in a one-line error naming the
input (exit code non-zero, no traceback) or is handled (exit 0, valid output). Time-bounded per case."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batkube_py.cli.app import main
from batkube_py.runs import rundir
from batkube_py.safeyaml import YamlError, load_text
from swf_tools.cli import main as swf_main

pytestmark = pytest.mark.timeout(60)
ROOT = Path(__file__).resolve().parents[1]
PLATFORM = ROOT / "platforms" / "cluster_1000x8core.xml"
SMALL_WORKLOAD = {
    "nb_res": 1,
    "jobs": [{"id": "1", "subtime": 0, "res": 1, "profile": "p"}],
    "profiles": {"p": {"type": "delay", "delay": 5, "cpu": "1"}},
}


def clear_error(result, *needles: str) -> None:
    """Outcome class `error`: non-zero exit, one message line, no traceback."""
    assert result.exit_code != 0, result.output
    assert (
        "Traceback" not in result.output
        and result.exception is None
        or isinstance(result.exception, SystemExit)
    )
    lines = [x for x in result.output.splitlines() if x.startswith("Error") or x.startswith("batkube")]
    assert lines, result.output
    for needle in needles:
        assert needle in result.output, result.output


def invoke(args, cmd=main):
    return CliRunner().invoke(cmd, [str(a) for a in args])


WORKLOAD_ARGS = [
    ["--delay", "nan"],
    ["--delay", "inf"],
    ["--delay", "1e400"],
    ["--delay", "-1"],
    ["--delay", "0"],
    ["--interval", "inf"],
    ["--interval", "nan"],
    ["--interval", "-5"],
    ["--jobs", "100000000"],
    ["--jobs", "0"],
    ["--jobs", "-3"],
    ["--jobs", "x"],
    ["--cpu", "lots"],
    ["--memory", "-1Gi"],
    ["--delay", "abc"],
]


@pytest.mark.parametrize("args", WORKLOAD_ARGS, ids=[" ".join(a) for a in WORKLOAD_ARGS])
def test_workload_values_are_checked(args):
    clear_error(invoke(["workload", "spaced", *args]))


def test_workload_output_is_always_json(tmp_path):
    r = invoke(["workload", "spaced", "--delay", "1e9", "--interval", "1e9", "-n", "3"])
    assert r.exit_code == 0 and json.loads(r.output)["jobs"][2]["subtime"] == 2e9


PLATFORM_ARGS = [
    ["--nodes", "1000000000"],
    ["--nodes", "0"],
    ["--nodes", "x"],
    ["--cores", "many"],
    ["--memory", "1Zq"],
    ["--label", "novalue"],
    ["--taints", "k=v:Sometimes"],
    ["--pods", "0"],
]


@pytest.mark.parametrize("args", PLATFORM_ARGS, ids=[" ".join(a) for a in PLATFORM_ARGS])
def test_platform_values_are_checked(args):
    base = [] if args[0] == "--nodes" else ["--nodes", "2"]
    clear_error(invoke(["platform", *base, *args]))


@pytest.mark.parametrize("target", ["file", "dir-as-parent", "devnull"])
def test_output_file_that_cannot_be_written(tmp_path, target):
    (tmp_path / "f").write_text("x")
    out = {"file": tmp_path / "f" / "p.xml", "dir-as-parent": tmp_path, "devnull": Path("/dev/null/p.xml")}[
        target
    ]
    result = invoke(["platform", "--nodes", "2", "-o", out])
    clear_error(result, str(out))
    assert "cannot write" in result.output or "is a directory" in result.output


SERVE_ARGS = [
    ["--socket", ""],
    ["--socket", "tcp://127.0.0.1"],
    ["--socket", "udp://1.2.3.4:5"],
    ["--socket", "ipc:///no/such/dir/s"],
    ["--socket", "tcp://127.0.0.1:70000"],
    ["--idle-timeout", "nan"],
    ["--idle-timeout", "inf"],
    ["--idle-timeout", "0"],
    ["--idle-timeout", "-1"],
    ["--startup-latency", "lognormal:0,1e6"],
    ["--startup-latency", "fixed:nan"],
]


@pytest.mark.parametrize("args", SERVE_ARGS, ids=[" ".join(a) for a in SERVE_ARGS])
def test_serve_refuses_bad_values_in_one_line(args):
    clear_error(invoke(["serve", *args]))


def test_serve_on_a_taken_port(tmp_path):
    import zmq

    s = zmq.Context.instance().socket(zmq.REP)
    port = s.bind_to_random_port("tcp://127.0.0.1")
    try:
        clear_error(
            invoke(["serve", "--socket", f"tcp://127.0.0.1:{port}", "-o", tmp_path / "o"]), "already in use"
        )
    finally:
        s.close(0)
    assert not (tmp_path / "o" / "pods.csv").exists()


def _workload_files(tmp: Path) -> dict[str, Path]:
    files = {
        "not-json": b"{jobs: [",
        "non-utf8": b'{"jobs": [], "x": "\xff\xfe"}',
        "deep": b"[" * 100_000 + b"]" * 100_000,
        "list": b"[]",
        "no-jobs": b'{"profiles": {}}',
        "jobs-not-list": b'{"jobs": 5}',
        "empty": b"",
    }
    for name, data in files.items():
        (tmp / f"{name}.json").write_bytes(data)
    return {name: tmp / f"{name}.json" for name in files}


@pytest.mark.parametrize(
    "kind", ["not-json", "non-utf8", "deep", "list", "no-jobs", "jobs-not-list", "empty"]
)
def test_run_with_a_broken_workload_names_it(tmp_path, kind):
    w = _workload_files(tmp_path)[kind]
    clear_error(invoke(["run", "-p", PLATFORM, "-w", w, "-o", tmp_path / "o", "--batsim", "double"]), str(w))
    assert not (tmp_path / "o").exists()


RUN_ARGS = [
    ["--batsim", "/no/such/batsim"],
    ["--batsim", "no-such-batsim-cmd"],
    ["--connect-timeout", "nan"],
    ["--idle-timeout", "inf"],
    ["--idle-timeout", "0"],
    ["--startup-latency", "uniform:5,1"],
    ["--startup-latency", "lognormal:1,1e300"],
    ["--startup-latency", "bogus"],
    ["--seed", "x"],
]


@pytest.mark.parametrize("args", RUN_ARGS, ids=[" ".join(a) for a in RUN_ARGS])
def test_run_values_are_checked_before_the_directory_is_touched(tmp_path, args):
    w = tmp_path / "w.json"
    w.write_text(json.dumps(SMALL_WORKLOAD))
    clear_error(invoke(["run", "-p", PLATFORM, "-w", w, "-o", tmp_path / "o", *args]))
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("where", ["file", "devnull", "input-inside", "platform-inside", "is-input-dir"])
def test_run_output_directory_that_cannot_be_used(tmp_path, where):
    w = tmp_path / "in" / "w.json"
    w.parent.mkdir()
    w.write_text(json.dumps(SMALL_WORKLOAD))
    (tmp_path / "f").write_text("x")
    out = {
        "file": tmp_path / "f",
        "devnull": Path("/dev/null"),
        "input-inside": tmp_path / "in",
        "platform-inside": PLATFORM.parent,
        "is-input-dir": tmp_path,
    }[where]
    before = w.read_text()
    clear_error(invoke(["run", "-p", PLATFORM, "-w", w, "-o", out, "--batsim", "double"]))
    assert w.read_text() == before


def _run_cmd(out: Path, w: Path, batsim: str = "double", *extra) -> list[str]:
    return [sys.executable, "-m", "batkube_py.cli", "run", "-p", str(PLATFORM), "-w", str(w), "-o", str(out),
            "--batsim", batsim, "--no-progress", *extra]


def _run(out: Path, w: Path, *extra) -> subprocess.CompletedProcess:
    return subprocess.run(_run_cmd(out, w, "double", *extra), capture_output=True, text=True, timeout=120)


def test_a_used_directory_is_refused_then_overwritten_without_stale_files(tmp_path):
    w = tmp_path / "w.json"
    w.write_text(json.dumps(SMALL_WORKLOAD))
    out = tmp_path / "o"
    assert _run(out, w, "--record-decisions").returncode == 0
    good = (out / "pods.csv").read_text()
    again = _run(out, w)
    assert again.returncode == 1 and "--overwrite" in again.stderr and "Traceback" not in again.stderr
    assert (out / "pods.csv").read_text() == good and (out / "decisions.jsonl").exists()
    failed = _run(out, w, "--overwrite", "--batsim", "/no/such/batsim")  # fails before touching anything
    assert failed.returncode == 1 and (out / "pods.csv").read_text() == good
    assert _run(out, w, "--overwrite").returncode == 0
    assert not (out / "decisions.jsonl").exists() and (out / "pods.csv").read_text() == good


def test_two_runs_cannot_write_one_directory(tmp_path):
    w = tmp_path / "w.json"
    w.write_text(json.dumps(SMALL_WORKLOAD))
    with rundir.claimed(tmp_path / "o", {}):
        r = invoke(["run", "-p", PLATFORM, "-w", w, "-o", tmp_path / "o", "--batsim", "double"])
    clear_error(r, "another run", str(os.getpid()))


def test_a_job_with_a_malformed_toleration_is_rejected_and_the_run_succeeds(tmp_path):
    doc = json.loads(json.dumps(SMALL_WORKLOAD))
    doc["jobs"].append({"id": "2", "subtime": 0, "res": 1, "profile": "p", "tolerations": [{"operator": 5}]})
    doc["jobs"].append({"id": "3", "subtime": 0, "res": 1, "profile": "p", "affinity": {"nodeAffinity": []}})
    w = tmp_path / "w.json"
    w.write_text(json.dumps(doc))
    r = _run(tmp_path / "o", w)
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert r.returncode == 0 and summary["jobs_succeeded"] == 1 and summary["jobs_rejected"] == 2
    rejected = (tmp_path / "o" / "rejected.csv").read_text()
    assert "tolerations" in rejected and "affinity" in rejected


def _fake_batsim(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "fake_batsim"
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return path


FAKES = {
    "never-connects": ("import time\ntime.sleep(60)\n", "no Batsim message"),
    "dies": ("import sys\nsys.exit(3)\n", "exited"),
    "stalls-after-begins": (
        """
        import sys, time, zmq, json
        ep = sys.argv[sys.argv.index("-s") + 1]
        s = zmq.Context().socket(zmq.REQ); s.connect(ep)
        host = {"id": 0, "name": "n0", "state": "idle", "properties": {}, "zone_properties": {}}
        s.send(json.dumps({"now": 0, "events": [{"timestamp": 0, "type": "SIMULATION_BEGINS", "data": {
            "nb_resources": 1, "nb_compute_resources": 1, "allow_compute_sharing": True, "config": {},
            "compute_resources": [host]}}]}).encode())
        s.recv(); time.sleep(60)
        """,
        "no message from Batsim for 1 s",
    ),
}


@pytest.mark.parametrize("kind", list(FAKES))
def test_run_never_waits_forever_for_its_batsim(tmp_path, kind):
    body, needle = FAKES[kind]
    w = tmp_path / "w.json"
    w.write_text(json.dumps(SMALL_WORKLOAD))
    fake = _fake_batsim(tmp_path, body)
    r = invoke(
        [
            "run",
            "-p",
            PLATFORM,
            "-w",
            w,
            "-o",
            tmp_path / "o",
            "--batsim",
            fake,
            "--connect-timeout",
            "1",
            "--idle-timeout",
            "1",
        ]
    )
    clear_error(r, needle)
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["error"]


def test_sigterm_stops_the_run_and_its_batsim_group(tmp_path):
    w = tmp_path / "w.json"
    w.write_text(json.dumps(SMALL_WORKLOAD))
    pidfile = tmp_path / "child.pid"
    fake = _fake_batsim(
        tmp_path,
        f"""
        import subprocess, time
        child = subprocess.Popen(["sleep", "60"])
        open({str(pidfile)!r}, "w").write(str(child.pid))
        time.sleep(60)
        """,
    )
    cmd = _run_cmd(tmp_path / "o", w, str(fake))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(200):
        if pidfile.exists() and pidfile.read_text():
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode != 0 and "SIGTERM" in err and "Traceback" not in err
    assert "makespan=" not in out + err and "did not finish" in err  # nothing that reads as a result
    child = int(pidfile.read_text())
    time.sleep(0.2)
    assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]


# ---- experiment files -------------------------------------------------------------------------------------

_BOMB = "a: &a [x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(20)
)
_GOOD = "name: e\ncases: [{name: c, platform: p.xml, workload: w.json}]\nvariants: [{name: v}]\n"
EXPERIMENTS = {
    "alias-bomb": (_BOMB, "expand"),
    "deep": ("a: " + "[" * 5000 + "]" * 5000, "nested"),
    "non-utf8": (b"name: \xff\xfe\n", "UTF-8"),
    "not-yaml": ("name: [unclosed", "not valid YAML"),
    "list": ("- 1\n- 2\n", "expected a mapping"),
    "case-dotdot": (_GOOD.replace("name: c,", "name: '..',"), "not a usable name"),
    "variant-dotdot": (_GOOD.replace("{name: v}", "{name: '..'}"), "not a usable name"),
    "experiment-dot": (_GOOD.replace("name: e", "name: '.'"), "not a usable name"),
    "case-slash": (_GOOD.replace("name: c,", "name: 'a/../../b',"), "cases"),
    "nan-timeout": (_GOOD + "run_timeout: .nan\n", "run_timeout"),
    "inf-sweep": (
        _GOOD.replace(
            "{name: v}", "{name: v, backend: apiserver, sweep: {parameter: min_delay, values: [.inf]}}"
        ),
        "values",
    ),
    "vars-list": (_GOOD + "vars: [1]\n", "vars"),
    "unknown-var": (_GOOD.replace("p.xml", "'${nope}/p.xml'"), "unknown variable"),
}


@pytest.mark.parametrize("kind", list(EXPERIMENTS))
def test_experiment_files_are_checked_at_the_edge(tmp_path, kind):
    text, needle = EXPERIMENTS[kind]
    f = tmp_path / "e.yaml"
    f.write_bytes(text if isinstance(text, bytes) else text.encode())
    r = invoke(["experiment", "check", f])
    assert r.exit_code != 0 and needle in r.output and "Traceback" not in r.output
    r = invoke(["experiment", "run", f, "-o", tmp_path / "out" / "x", "--no-progress"])
    assert r.exit_code != 0 and "Traceback" not in r.output
    assert sorted(p.name for p in tmp_path.iterdir()) <= ["e.yaml", "out"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet="[]{}:&*-ab ,\n'\"!", max_size=80))
def test_yaml_loader_on_random_text_loads_or_names_the_file(text):
    try:
        load_text(text, "f.yaml")
    except YamlError as exc:
        assert str(exc).startswith("f.yaml: ")


# ---- analyze ----


def _run_dir(tmp_path: Path) -> Path:
    d = tmp_path / "run"
    d.mkdir()
    (d / "out_jobs.csv").write_text(
        "job_id,workload_name,profile,submission_time,requested_number_of_resources,requested_time,success,"
        "final_state,starting_time,execution_time,finish_time,waiting_time,turnaround_time,stretch,"
        "allocated_resources,consumed_energy,metadata\n"
        "1,w0,p,0,1,10,1,COMPLETED_SUCCESSFULLY,0,5,5,0,5,1,0,-1,\n"
    )
    return d


ANALYZE = {
    "profiles-list": ("workload", '{"jobs": [], "profiles": []}'),
    "jobs-of-ints": ("workload", '{"jobs": [1], "profiles": {}}'),
    "workload-non-utf8": ("workload", b"\xff\xfe"),
    "workload-deep": ("workload", "[" * 100_000),
    "billion-hosts": (
        "platform",
        '<platform version="4.1"><zone id="z" routing="Full"><cluster id="c" '
        'prefix="n" suffix="" radical="0-999999999" speed="1Gf"/></zone></platform>',
    ),
    "bad-radical": ("platform", '<platform><cluster id="c" prefix="n" suffix="" radical="a-b"/></platform>'),
    "platform-not-xml": ("platform", "<platform"),
    "platform-non-utf8": ("platform", b"\xff\xfe<"),
}


@pytest.mark.parametrize("kind", list(ANALYZE))
def test_analyze_inputs_are_checked(tmp_path, kind):
    option, content = ANALYZE[kind]
    f = tmp_path / f"input.{'xml' if option == 'platform' else 'json'}"
    f.write_bytes(content if isinstance(content, bytes) else content.encode())
    args = ["analyze", _run_dir(tmp_path), f"--{option}", f, "-o", tmp_path / "a"]
    if option == "workload":
        args += ["--platform", PLATFORM]
    clear_error(invoke(args))


@pytest.mark.parametrize("name", ["summary.json", "pods.csv", "decisions.jsonl", "nodes.csv", "rejected.csv"])
def test_analyze_with_a_non_utf8_run_file(tmp_path, name):
    d = _run_dir(tmp_path)
    (d / name).write_bytes(b"\xff\xfe\x00garbage")
    r = invoke(["analyze", d, "-o", tmp_path / "a"])
    assert "Traceback" not in r.output and (r.exit_code != 0 or r.exception is None)


# ---- swf-tools ----

_HEADER = "; MaxProcs: 4\n; UnixStartTime: 0\n"
_ROW = "{id} {sub} 0 {run} 1 -1 -1 1 {req} -1 1 1 1 1 1 -1 -1 -1\n"
SWF = {
    "empty": "",
    "comments-only": _HEADER,
    "negative-run": _HEADER + _ROW.format(id=1, sub=0, run=-50, req=10),
    "negative-submit": _HEADER + _ROW.format(id=1, sub=-100, run=5, req=10),
    "all-negative": _HEADER + "1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1\n",
    "garbage": "\x00\x01\x02 not swf at all\n",
    "non-utf8": b"\xff\xfe\xfd 1 2 3\n",
    "huge-numbers": _HEADER + _ROW.format(id=1, sub="1e400", run="1e400", req=10),
}


@pytest.mark.parametrize("kind", list(SWF))
@pytest.mark.parametrize("command", ["info", "convert", "extract"])
def test_swf_tools_on_hostile_traces(tmp_path, kind, command):
    f = tmp_path / "t.swf"
    data = SWF[kind]
    f.write_bytes(data if isinstance(data, bytes) else data.encode())
    args = {
        "info": ["info", f],
        "convert": ["convert", f, "-o", tmp_path / "w.json"],
        "extract": ["extract", f, "--period", "1h", "-o", tmp_path / "x.swf"],
    }[command]
    r = invoke(args, swf_main)
    assert "Traceback" not in r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    if r.exit_code == 0 and command == "convert":
        json.loads((tmp_path / "w.json").read_text())


@pytest.mark.parametrize("period", ["nan", "inf", "0", "-1h", "1s"])
def test_swf_extract_period_is_bounded(tmp_path, period):
    f = tmp_path / "t.swf"
    f.write_text(
        _HEADER + _ROW.format(id=1, sub=0, run=5, req=10) + _ROW.format(id=2, sub=10**7, run=5, req=10)
    )
    r = invoke(["extract", f, "--period", period, "--utilization", "0.5", "-o", tmp_path / "x.swf"], swf_main)
    assert r.exit_code != 0 and "Traceback" not in r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)


# ---- runs that fail say so ---------------------------------------------------------------------------------


PLATFORM_TEXTS = {
    "text": "not xml at all\n",
    "truncated": '<platform version="4.1"><zone id="z"',
    "other-root": "<jobs><job/></jobs>",
    "workload": json.dumps(SMALL_WORKLOAD),
}


@pytest.mark.parametrize("kind", PLATFORM_TEXTS)
def test_a_platform_that_is_not_a_simgrid_xml_file_stops_before_batsim_starts(tmp_path, kind):
    platform = tmp_path / "p.xml"
    platform.write_text(PLATFORM_TEXTS[kind])
    w = tmp_path / "w.json"
    w.write_text(json.dumps(SMALL_WORKLOAD))
    r = invoke(["run", "-p", platform, "-w", w, "-o", tmp_path / "o", "--batsim", "double", "--no-progress"])
    clear_error(r, f"{platform}: not a SimGrid XML platform (swapped -p/-w?)")
    assert len(r.output.strip().splitlines()) == 1 and not (tmp_path / "o").exists()


def test_a_workload_batsim_refuses_is_named_on_the_console_with_batsims_reason(tmp_path):
    w = tmp_path / "w.json"
    w.write_text(json.dumps({**SMALL_WORKLOAD, "jobs": [{**SMALL_WORKLOAD["jobs"][0], "walltime": -5}]}))
    r = invoke(["run", "-p", PLATFORM, "-w", w, "-o", tmp_path / "o", "--batsim", "double", "--no-progress"])
    clear_error(r, "Batsim exited before the simulation ended", "job 'w0!1' has an invalid walltime (-5)")


def test_swapped_platform_and_workload_name_the_platform(tmp_path):
    w = tmp_path / "w.json"
    w.write_text(json.dumps(SMALL_WORKLOAD))
    r = invoke(["run", "-p", w, "-w", PLATFORM, "-o", tmp_path / "o", "--batsim", "double"])
    clear_error(r, f"{w}: not a SimGrid XML platform (swapped -p/-w?): it reads as JSON")
    assert not (tmp_path / "o").exists()


def test_the_double_aborts_in_one_line_like_batsim_when_the_export_directory_is_missing(tmp_path):
    w = tmp_path / "w.json"
    w.write_text(json.dumps(SMALL_WORKLOAD))
    r = subprocess.run(
        [sys.executable, "-m", "batkube_py.batsim_double", "-p", str(PLATFORM), "-w", str(w),
         "-e", str(tmp_path / "nowhere" / "out"), "-s", f"ipc://{tmp_path}/s", "-q"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    # real Batsim 4.2.1: WriteBuffer's xbt_assert on the first output file it opens (export.cpp), SIGABRT
    assert r.returncode == 134 and "Traceback" not in r.stderr
    assert r.stderr.splitlines()[-1] == (
        "[0.000000] ../src/export.cpp:122: [root/CRITICAL] Cannot write file "
        f"'{tmp_path}/nowhere/out_schedule.trace'"
    )


def test_analyze_reads_what_a_stopped_run_kept(tmp_path):
    """Batsim writes out_jobs.csv at its end, so a stopped run has it empty: the jobs that ended are in
    pods.csv, which batkube-py writes as they end."""
    w = tmp_path / "w.json"
    jobs = [{"id": str(i), "subtime": i, "res": 1, "profile": "p"} for i in range(1, 6)]
    w.write_text(json.dumps({**SMALL_WORKLOAD, "jobs": jobs}))
    assert _run(tmp_path / "o", w).returncode == 0
    (tmp_path / "o" / "out_jobs.csv").write_text("")  # as Batsim leaves it when stopped
    (tmp_path / "o" / "out_schedule.csv").unlink()
    r = invoke(["analyze", tmp_path / "o", "-o", tmp_path / "a", "--no-figures"])
    assert r.exit_code == 0, r.output
    assert "partial run: out_jobs.csv is empty" in r.output
    assert json.loads((tmp_path / "a" / "metrics.json").read_text())["jobs_succeeded"] == 5
    (tmp_path / "o" / "pods.csv").unlink()
    clear_error(invoke(["analyze", tmp_path / "o"]), "out_jobs.csv is empty", "no pods.csv")
