"""The double's command line answers as Batsim 4.2.1's does (docopt-cpp, then parse_main_args).

Parse errors: docopt-cpp's message on stderr, the help on stdout, exit 255.  Batsim's own
checks: `[0.000000] [batsim/ERROR] ...` lines, exit code from the file checks only.
Options the double cannot honour: one line naming the option, exit 2.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from shared_support import shared

from batkube_py.batsim_double.argv import parse
from batkube_py.batsim_double.cli import REFUSED_EXIT, build, main, read_sched_config
from batkube_py.batsim_double.mainargs import check
from batkube_py.inputs.platforms import cluster_platform
from batkube_py.runs.batsim import DOUBLE
from batkube_py.runs.run import RunConfig, run

CASE = Path(__file__).resolve().parents[2] / "shared" / "batsim" / "transcripts" / "a_4hosts_6delays"
PLATFORM = str(CASE / "platform.xml")
WORKLOAD = str(CASE / "workload.json")


@pytest.fixture(autouse=True)
def _needs_shared() -> None:
    shared("batsim", "transcripts", "a_4hosts_6delays")


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Batsim's default export prefix is `out` in the working directory: keep those files out of the tree."""
    monkeypatch.chdir(tmp_path)


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def begins(*argv: str) -> tuple[Any, dict[str, Any]]:
    """The double the command line builds, and its SIMULATION_BEGINS data."""
    err = io.StringIO()
    p = parse(["-p", PLATFORM, "-w", WORKLOAD, *argv])
    a = check(p, err)
    assert not a.error, err.getvalue()
    double = build(a, p, read_sched_config(a, err) or "", err)
    text = double.start()
    assert text is not None, err.getvalue()
    return double, json.loads(text)["events"][0]["data"]


# --- docopt's verdicts -------------------------------------------------------------------
def test_unknown_option_is_refused_as_batsim_does() -> None:
    code, out, err = cli("-p", PLATFORM, "--some-unknown-flag")
    assert code == 255
    assert err == f"Unexpected argument: -p, {PLATFORM}, --some-unknown-flag"
    assert out.startswith("\nBatsim 4.2.1 double") and "Usage:\n  batsim -p <platform_file>" in out


def test_unknown_option_through_the_installed_entry_point() -> None:
    res = subprocess.run([sys.executable, "-m", "batkube_py.batsim_double", "-p", PLATFORM, "-x"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 255
    assert res.stderr == f"Unexpected argument: -p, {PLATFORM}, -x"
    assert "Usage:" in res.stdout


@pytest.mark.parametrize(("argv", "message"), [
    ((), "Arguments did not match expected patterns"),
    (("-w", "w.json"), "Arguments did not match expected patterns"),
    (("-p",), "-p requires an argument"),
    (("-p", "x", "--mmax"), "--mmax requires an argument"),
    (("-p", "x", "--mmax", "--"), "--mmax requires an argument"),
    (("-p", "x", "--quiet=yes"), "--quiet must not have an argument"),
    (("-p", "x", "--ver"), "'--ver' is not a unique prefix: --verbosity, --version"),
    (("-p", "x", "--mma", "2"), "'--mma' is not a unique prefix: --mmax, --mmax-workload"),
    (("-p", "x", "-q", "-q"), "Unexpected argument: -p, x, -q, -q"),
    (("-p", "x", "-p", "y"), "Unexpected argument: -p, x, -p, y"),
    (("-p", "x", "--mmax", "1", "--mmax", "2"), "Unexpected argument: -p, x, --mmax, 1, --mmax, 2"),
    (("-p", "x", "--sched-cfg", "a", "--sched-cfg-file", "b"),
     "Unexpected argument: -p, x, --sched-cfg, a, --sched-cfg-file, b"),
    (("-p", "x", "lonely"), "Unexpected argument: -p, x, lonely"),
    (("-p", "x", "--simgrid-version"), "Unexpected argument: -p, x, --simgrid-version"),
])
def test_parse_errors(argv: tuple[str, ...], message: str) -> None:
    code, out, err = cli(*argv)
    assert (code, err) == (255, message)
    assert out.startswith("\n") and "Usage:" in out


def test_docopt_forms_batsim_accepts() -> None:
    p = parse(["--plat", "P", "-w", "a", "-wb", "--workload=c", "-qE", "-vdebug", "--mmax", "-1",
               "--events", "e1", "--events", "e2", "-r", "h1:storage", "-r", "h2,h3:master"])
    assert p.text("--platform") == "P"
    assert p.items("--workload") == ["a", "b", "c"] and p.items("--events") == ["e1", "e2"]
    assert p.flag("--quiet") and p.flag("--energy")
    assert (p.text("--verbosity"), p.text("--mmax")) == ("debug", "-1")
    assert p.items("--add-role-to-hosts") == ["h1:storage", "h2,h3:master"]
    defaults = parse(["-p", "P"])
    d = defaults.text
    assert (d("--export"), d("--socket-endpoint"), d("--master-host")) == (
        "out", "tcp://localhost:28000", "master_host")
    assert (d("--mmax"), d("--verbosity"), d("--redis-port")) == (
        "0", "information", "6379")


def test_help_and_versions() -> None:
    code, out, err = cli("-p", "x", "--bogus", "--help")  # help wins over a mismatch, as in docopt
    assert (code, err) == (0, "") and "--mmax <nb>" in out and "[default: information]" in out
    assert cli("--version") == (0, "4.2.1\n", "")
    assert cli("--simgrid-version") == (0, "3.32.0\n", "")


# --- Batsim's checks after parsing -------------------------------------------------------
def test_bad_values_are_logged_and_stop_batsim_with_exit_code_0() -> None:
    code, out, err = cli("-p", PLATFORM, "--mmax", "two", "-v", "loud", "--redis-port", "80x",
                         "--enable-profile-reuse", "--workflow-jobs-limit", "-3")
    assert (code, out) == (0, "")
    assert err.splitlines() == [
        "[0.000000] [batsim/ERROR] Cannot read the Redis port '80x' as a long integer.",
        "[0.000000] [batsim/ERROR] Profile reuse is enabled but dynamic registration is not, have you "
        "missed something?",
        "[0.000000] [batsim/ERROR] Cannot read <M_max> 'two' as an integer.",
        "[0.000000] [batsim/ERROR] Invalid <verbosity_level> 'loud'.",
        "[0.000000] [batsim/ERROR] The <workflow_limit> -3 ('-3') must be positive.",
    ]


def test_missing_files_set_batsim_exit_bits() -> None:
    code, _, err = cli("-p", "nope.xml", "-w", WORKLOAD, "-w", "missing.json", "--events", "gone.jsonl")
    assert code == 0x01 | 0x02
    assert err.splitlines() == [
        "[0.000000] [batsim/ERROR] Platform file 'nope.xml' cannot be read.",
        f"[0.000000] [batsim/INFO] Workload 'w0' corresponds to workload file '{WORKLOAD}'.",
        "[0.000000] [batsim/ERROR] Workload file 'missing.json' cannot be read.",
        "[0.000000] [batsim/ERROR] Events file 'gone.jsonl' cannot be read.",
    ]


def test_relative_workload_paths_are_made_absolute_as_batsim_does(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "w.json").write_text(Path(WORKLOAD).read_text())
    _, _, err = cli("-p", "nope.xml", "-w", "sub/../sub/w.json")
    assert f"workload file '{os.getcwd()}/sub/../sub/w.json'." in err  # cwd + '/' + name, '..' kept


def test_role_map_without_one_colon_aborts() -> None:
    code, _, err = cli("-p", PLATFORM, "-r", "a:b:c")
    assert code == 134
    assert err == ("[0.000000] ../src/batsim.cpp:450: [root/CRITICAL] The roles host mapping should only "
                   "contain one ':' character\n")


def test_dump_execution_context() -> None:
    code, out, _ = cli("-p", PLATFORM, "--dump-execution-context", "-s", "tcp://h:1", "--redis-port", "7000",
                       "-e", "x/y")
    assert code == 0
    assert out == ('{"socket_endpoint":"tcp://h:1","redis_enabled":false,"redis_hostname":"127.0.0.1",'
                   '"redis_port":7000,"redis_prefix":"default","export_prefix":"x/y","external_scheduler":true}\n')


# --- options the double refuses ----------------------------------------------------------
@pytest.mark.parametrize(("argv", "option"), [
    (("-E",), "--energy"), (("--enable-redis",), "--enable-redis"), (("-W", PLATFORM), "--workflow"),
    (("--WS", PLATFORM, "0"), "--WS"), (("--workflow-start", "x"), "--workflow-start"),
    (("--workflow-jobs-limit", "2"), "--workflow-jobs-limit"),
    (("--ignore-beyond-last-workflow",), "--ignore-beyond-last-workflow"), (("--no-sched",), "--no-sched"),
    (("--sg-cfg", "network/model:CM02"), "--sg-cfg"), (("--sg-log", "root.thresh:debug"), "--sg-log"),
])
def test_unsupported_options_are_refused_clearly(argv: tuple[str, ...], option: str) -> None:
    code, out, err = cli("-p", PLATFORM, "-w", WORKLOAD, *argv)
    assert (code, out) == (REFUSED_EXIT, "")
    last = err.splitlines()[-1]
    assert last.startswith(f"batsim double: option {option} is not supported: the double has no ")
    assert "docs/batsim_double.md" in last


def test_max_wait_stays_the_doubles_debug_option() -> None:
    assert parse(["-p", "x", "--max-wait", "5"]).text("--max-wait") == "5"
    code, _, err = cli("-p", PLATFORM, "--max-wait", "soon")
    assert (code, err) == (REFUSED_EXIT, "batsim double: --max-wait expects a positive number of seconds, "
                           "got 'soon'\n")


# --- effects of the implemented options --------------------------------------------------
def test_mmax_keeps_the_first_compute_machines() -> None:
    _, data = begins("--mmax", "2")
    assert (data["nb_resources"], data["nb_compute_resources"]) == (2, 2)
    assert [r["name"] for r in data["compute_resources"]] == ["host0", "host1"]


def test_mmax_workload_uses_nb_res_and_the_smaller_of_both(tmp_path: Path) -> None:
    wl = tmp_path / "w.json"
    wl.write_text(json.dumps({"nb_res": 3, "jobs": [], "profiles": {}}))
    p = parse(["-p", PLATFORM, "-w", str(wl), "--mmax-workload"])
    double = build(check(p, io.StringIO()), p, "", io.StringIO())
    assert json.loads(double.start())["events"][0]["data"]["nb_compute_resources"] == 3  # type: ignore[arg-type]
    _, data = begins("--mmax-workload", "--mmax", "1")  # the workload says 4
    assert data["nb_compute_resources"] == 1


def test_mmax_beyond_the_platform_aborts_as_batsim() -> None:
    code, _, err = cli("-p", PLATFORM, "-w", WORKLOAD, "--mmax", "9")
    assert code == 134
    assert "[0.000000] [batsim/INFO] The maximum number of machines to use is 9.\n" in err
    assert err.endswith("[0.000000] ../src/machines.cpp:272: [root/CRITICAL] Impossible to compute on M=9 "
                        "machines: only 4 machines are described in the PLATFORM_FILE.\n")


def test_mmax_limits_concurrency_in_a_batkube_run(tmp_path: Path) -> None:
    (tmp_path / "p.xml").write_text(cluster_platform(2, "1"))
    jobs = [{"id": str(i), "subtime": 0, "res": 1, "profile": "p"} for i in range(2)]
    profiles = {"p": {"type": "delay", "delay": 10, "cpu": "1"}}
    (tmp_path / "w.json").write_text(json.dumps({"nb_res": 2, "jobs": jobs, "profiles": profiles}))
    starts = {}
    for extra in ((), ("--mmax", "1")):
        out = tmp_path / f"out{len(extra)}"
        run(RunConfig(tmp_path / "p.xml", tmp_path / "w.json", out, batsim=DOUBLE, progress=False,
                      batsim_args=extra))
        rows = csv.DictReader((out / "out_jobs.csv").open())
        starts[extra] = sorted(float(r["starting_time"]) for r in rows)
    assert starts[()][1] < 10 <= starts[("--mmax", "1")][1]  # one machine: the second job waits


def test_roles_move_hosts_out_of_the_compute_set() -> None:
    _, data = begins("-r", "host3:storage", "-r", "host0,host1:compute_node")
    assert [r["name"] for r in data["compute_resources"]] == ["host0", "host1", "host2"]
    assert [(r["id"], r["name"], r["properties"]["role"]) for r in data["storage_resources"]] == [
        (3, "host3", "storage")]
    assert data["compute_resources"][0]["properties"]["role"] == "compute_node"
    assert data["compute_resources"][2]["properties"]["role"] == ""


def test_config_options_reach_simulation_begins(tmp_path: Path) -> None:
    _, data = begins("--sched-cfg", '{"k": 1}', "--redis-hostname", "r", "--redis-port", "7000",
                     "--redis-prefix", "pre", "--disable-storage-sharing", "--enable-compute-sharing",
                     "--forward-profiles-on-submission")
    cfg = data["config"]
    assert (cfg["sched-config"], cfg["redis-hostname"], cfg["redis-port"], cfg["redis-prefix"]) == (
        '{"k": 1}', "r", 7000, "pre")
    assert (data["allow_storage_sharing"], data["allow_compute_sharing"]) == (False, True)
    assert cfg["profiles-forwarded-on-submission"] and not cfg["redis-enabled"]
    cfg_file = tmp_path / "sched.json"
    cfg_file.write_text("from a file\n")
    _, data = begins("--sched-cfg-file", str(cfg_file))
    assert data["config"]["sched-config"] == "from a file\n"


def test_unreadable_sched_cfg_file_terminates_batsim() -> None:
    code, _, err = cli("-p", PLATFORM, "-w", WORKLOAD, "--sched-cfg-file", "/nonexistent/cfg")
    assert code == 134
    assert err.endswith("terminate called after throwing an instance of 'std::runtime_error'\n"
                        "  what():  cannot read scheduler configuration file '/nonexistent/cfg'\n")


def test_unknown_events_are_forwarded_only_on_request(tmp_path: Path) -> None:
    events = tmp_path / "ev.jsonl"
    events.write_text('{"timestamp": 0.5, "type": "coffee_break", "cups": 2}\n')
    code, _, err = cli("-p", PLATFORM, "-w", WORKLOAD, "--events", str(events))
    assert code == 134
    assert err.endswith("[0.000000] ../src/events.cpp:79: [root/CRITICAL] Unknown event type: coffee_break\n")
    double, data = begins("--events", str(events), "--forward-unknown-events")
    assert data["config"]["forward-unknown-events"] is True
    msg = json.loads(double.on_reply('{"now": 0.0, "events": []}'))
    while not any(e["type"] == "NOTIFY" for e in msg["events"]):
        msg = json.loads(double.on_reply(json.dumps({"now": msg["now"], "events": []})))
    notify = next(e for e in msg["events"] if e["type"] == "NOTIFY")
    assert notify["data"] == {"timestamp": 0.5, "type": "coffee_break", "cups": 2}
    _, plain = begins()
    assert plain["config"]["forward-unknown-events"] is False


@pytest.mark.parametrize(("verbosity", "server", "network"), [
    (("-q",), False, False), (("-v", "quiet"), False, False), (("-v", "network-only"), False, True),
    (("-v", "information"), True, True), (("-v", "debug"), True, True), (("-v", "debug", "-q"), False, False),
])
def test_verbosity_levels_filter_batsims_categories(verbosity: tuple[str, ...], server: bool,
                                                    network: bool) -> None:
    err = io.StringIO()
    p = parse(["-p", PLATFORM, "-w", WORKLOAD, *verbosity])
    a = check(p, err)
    double = build(a, p, "", err)
    text = double.start()
    while text is not None:
        msg = json.loads(text)
        text = double.on_reply(json.dumps({"now": msg["now"], "events": []}))
    log = err.getvalue()
    assert "[batsim/INFO] Batsim version: 4.2.1" in log  # batsim stays at INFO whatever the level
    assert ("[server/INFO]" in log) is server
    assert ("[network/INFO] Sending" in log) is network
    assert "[machines/INFO]" not in log or server
