"""`batsim-double` / `python -m batkube_py.batsim_double`: the double behind a ZeroMQ REQ socket.

Takes Batsim 4.2.1's command line and answers it as Batsim does: docopt's verdict
(argv.py: a message on stderr, the help on stdout, exit 255), then Batsim's own checks
(mainargs.py: logged errors, exit code from the file checks).  Options whose effect the
double cannot reproduce (energy, Redis, workflows, batexec, SimGrid settings) are
refused before simulating, in one line naming the option (exit 2), rather than
ignored: a run that silently differs from Batsim is worse than no run.  Like Batsim,
it blocks forever if the decision process never answers, unless the double's own
debug option --max-wait is given.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import xml.etree.ElementTree as ET
from typing import TextIO

import zmq

from . import jsonfmt
from .argv import DocoptError, HelpRequested, Parsed, VersionRequested, parse
from .context import Options
from .double import CRASHED, BatsimDouble
from .errors import BatsimAbort
from .mainargs import MainArgs, check
from .usage import SIMGRID_VERSION, VERSION, help_text

# Options the double refuses, with what it lacks to honour them (docs/batsim_double.md lists them too).
REFUSED = {
    "--energy": "no energy model (pstates, consumed energy)",
    "--enable-redis": "no Redis client",
    "--workflow": "no workflow support",
    "--WS": "no workflow support",
    "--workflow-start": "no workflow support",
    "--workflow-jobs-limit": "no workflow support",
    "--ignore-beyond-last-workflow": "no workflow support",
    "--no-sched": "no batexec mode (jobs run without a scheduler)",
    "--sg-cfg": "no SimGrid configuration options",
    "--sg-log": "no SimGrid logging options",
}
REFUSED_EXIT = 2


def refusal(p: Parsed) -> str | None:
    """The one-line error for the first option the double cannot honour, if any."""
    names = [n for n in p.given if n in REFUSED]
    if p.positionals:
        names.append("--WS")
    if not names:
        return None
    return (f"batsim double: option {names[0]} is not supported: the double has {REFUSED[names[0]]} "
            "(see docs/batsim_double.md)")


def dump_context(a: MainArgs, p: Parsed) -> str:
    """--dump-execution-context: Batsim's JSON object, compact, in its key order."""
    return jsonfmt.dumps({
        "socket_endpoint": a.socket_endpoint, "redis_enabled": p.flag("--enable-redis"),
        "redis_hostname": a.redis_hostname, "redis_port": a.redis_port, "redis_prefix": a.redis_prefix,
        "export_prefix": a.export_prefix, "external_scheduler": not p.flag("--no-sched"),
    })


def read_sched_config(a: MainArgs, err: TextIO) -> str | None:
    if a.sched_config or not a.sched_config_file:
        return a.sched_config
    try:
        with open(a.sched_config_file, encoding="utf-8") as f:
            return f.read()
    except OSError:  # an uncaught std::runtime_error in Batsim's main: std::terminate, SIGABRT
        err.write("terminate called after throwing an instance of 'std::runtime_error'\n"
                  f"  what():  cannot read scheduler configuration file '{a.sched_config_file}'\n")
        return None


def _max_wait(p: Parsed) -> float | None:
    raw = p.values.get("--max-wait")
    if raw is None:
        return None
    try:
        value = float(str(raw))
    except ValueError:
        value = -1.0
    if value <= 0:
        raise ValueError(f"batsim double: --max-wait expects a positive number of seconds, got '{raw}'")
    return value


def build(a: MainArgs, p: Parsed, sched_config: str, err: TextIO) -> BatsimDouble:
    options = Options(storage_sharing=not p.flag("--disable-storage-sharing"), sched_config=sched_config,
                      forward_unknown_events=a.forward_unknown_events,
                      redis=(a.redis_hostname, a.redis_port, a.redis_prefix),
                      trace_machine_states=not p.flag("--disable-machine-state-tracing"),
                      trace_schedule=not p.flag("--disable-schedule-tracing"))
    return BatsimDouble(a.platform, a.workloads, compute_sharing=p.flag("--enable-compute-sharing"),
                        forward_profiles=p.flag("--forward-profiles-on-submission"),
                        dynamic_jobs=p.flag("--enable-dynamic-jobs"),
                        ack_dynamic_jobs=p.flag("--acknowledge-dynamic-jobs"),
                        profile_reuse=p.flag("--enable-profile-reuse"), events_path=a.events,
                        export_prefix=a.export_prefix, master_host=a.master_host, log_stream=err,
                        verbosity=a.verbosity, mmax=a.mmax, mmax_workload=a.mmax_workload, roles=a.roles,
                        options=options)


def main(argv: list[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        p = parse(argv)
    except HelpRequested:
        out.write(help_text() + "\n")
        return 0
    except VersionRequested:
        out.write(VERSION + "\n")
        return 0
    except DocoptError as exc:  # docopt-cpp: message on stderr (no newline), help on stdout, exit(-1)
        err.write(str(exc))
        out.write("\n" + help_text() + "\n")
        return 255
    if p.simgrid_version:
        out.write(SIMGRID_VERSION + "\n")
        return 0
    try:
        a = check(p, err)
    except BatsimAbort as exc:
        err.write(f"[0.000000] {exc.where}: [root/CRITICAL] {exc.message}\n")
        return 134
    if p.flag("--dump-execution-context"):
        out.write(dump_context(a, p) + "\n")
        return 0
    if a.error:
        return a.return_code
    problem = refusal(p)
    try:
        max_wait = _max_wait(p)
    except ValueError as exc:
        problem = problem or str(exc)
    if problem is not None:
        err.write(problem + "\n")
        return REFUSED_EXIT
    sched_config = read_sched_config(a, err)
    if sched_config is None:
        return 134
    try:
        double = build(a, p, sched_config, err)
    except ET.ParseError as exc:  # SimGrid's surf_parse_error: one line, then xbt_die (SIGABRT)
        err.write(f"[0.000000] [surf_parse/ERROR] Parse error at {a.platform}:{exc.position[0]}: {exc}\n")
        return 134
    except OSError:  # the export directory (-e): Batsim's WriteBuffer asserts on its first output file
        first = next(suffix for flag, suffix in (("--disable-schedule-tracing", "_schedule.trace"),
                     ("--disable-machine-state-tracing", "_machine_states.csv"), ("", "_jobs.csv"))
                     if not flag or not p.flag(flag))  # fmt: skip
        err.write(f"[0.000000] ../src/export.cpp:122: [root/CRITICAL] Cannot write file "
                  f"'{a.export_prefix}{first}'\n")  # fmt: skip
        return 134
    except (KeyError, ValueError, TypeError) as exc:
        err.write(f"batsim double: platform {a.platform} is not a SimGrid platform it can load: {exc!r}\n")
        return 134
    return serve(double, a.socket_endpoint, max_wait, err)


def serve(double: BatsimDouble, endpoint: str, max_wait: float | None, err: TextIO) -> int:
    """Batsim's side of the protocol: send, block for the reply, apply it, until the end."""
    text = double.start()
    if text is None:
        return double.exit_code or 0
    ctx = zmq.Context()
    sock = ctx.socket(zmq.REQ)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    timeout_ms = int(max_wait * 1000) if max_wait else None
    try:
        while text is not None:
            sock.send(text.encode("utf-8"))
            if timeout_ms is not None and not sock.poll(timeout_ms):
                err.write(f"batsim double: no reply within {max_wait} s, giving up\n")
                return 124
            raw = sock.recv().decode("utf-8")
            text = double.on_reply(raw)
    finally:
        sock.close()
        ctx.term()
    return double.exit_code if double.exit_code is not None else 0


def run() -> None:
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    if code == CRASHED:  # die of the signal, as Batsim does: its parent sees SIGSEGV, not an exit code
        faulthandler.disable()
        signal.signal(signal.SIGSEGV, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGSEGV)
    os._exit(code)
