"""The double's command-line interface: Batsim 4.2.1's options, described in our own words.

One table drives both the `--help` text (docopt format: a usage pattern, then option
sections) and the argv parser (argv.py), so the two cannot drift apart.  The usage
pattern, the option names, their arguments, defaults and their order are Batsim
4.2.1's (src/batsim.cpp): docopt resolves abbreviated long options and reports
ambiguities in that order, so it is part of the interface.  `--max-wait` is the
double's own debug option.
"""

from __future__ import annotations

from dataclasses import dataclass

VERSION = "4.2.1"
SIMGRID_VERSION = "3.32.0"  # the SimGrid the reference Batsim 4.2.1 was built against (Debian's 3.32)


@dataclass(frozen=True)
class Opt:
    short: str | None
    long: str
    arg: str | None  # metavariable when the option takes a value
    default: str | bool | None
    repeat: bool  # may be given several times (a list, e.g. -w)
    section: str
    help: str


def _o(short: str | None, long: str, arg: str | None, section: str, help: str, default: str | None = None,
       repeat: bool = False) -> Opt:
    dflt: str | bool | None = default if arg is not None else False
    return Opt(short, long, arg, dflt, repeat, section, help)


INPUT, COMMON, CONTEXT, OUTPUT, SIZE, JOBS, VERB, FLOW, OTHER = (
    "Input options", "Most common options", "Execution context options", "Output options",
    "Platform size limit options", "Job-related options", "Verbosity options", "Workflow options",
    "Other options")

OPTIONS: tuple[Opt, ...] = (
    _o("-p", "--platform", "<platform_file>", INPUT, "SimGrid platform file (XML) describing the machines."),
    _o("-w", "--workload", "<workload_file>", INPUT, "Batsim JSON workload; may be repeated.", repeat=True),
    _o("-W", "--workflow", "<workflow_file>", INPUT, "Workflow (DAX) file; may be repeated.", repeat=True),
    _o(None, "--workflow-start", "<cut_workflow_file> <start_time>", INPUT,
       "Workflow file and the time it starts at; may be repeated."),
    _o(None, "--events", "<events_file>", INPUT, "External events, one JSON object a line; may be repeated.",
       repeat=True),
    _o("-m", "--master-host", "<name>", COMMON,
       "Platform host that plays the resource manager (it computes no job).", "master_host"),
    _o("-r", "--add-role-to-hosts", "<hosts_role_map>", COMMON,
       "<host>,<host>...:<role> gives those hosts a role (master, storage or compute_node,\n"
       "the default); may be repeated, e.g. -r h1,h2:storage.", repeat=True),
    _o("-E", "--energy", None, COMMON, "Turn SimGrid's energy plugin on and write energy files."),
    _o("-s", "--socket-endpoint", "<endpoint>", CONTEXT, "ZeroMQ endpoint of the decision process.",
       "tcp://localhost:28000"),
    _o(None, "--enable-redis", None, CONTEXT, "Talk to the scheduler through Redis as well."),
    _o(None, "--redis-hostname", "<redis_host>", CONTEXT, "Redis host (used with --enable-redis).",
       "127.0.0.1"),
    _o(None, "--redis-port", "<redis_port>", CONTEXT, "Redis port (used with --enable-redis).", "6379"),
    _o(None, "--redis-prefix", "<prefix>", CONTEXT, "Redis key prefix (with --enable-redis).", "default"),
    _o("-e", "--export", "<prefix>", OUTPUT, "Prefix of the output files (<prefix>_jobs.csv ...).", "out"),
    _o(None, "--disable-schedule-tracing", None, OUTPUT, "Do not write the Paje schedule trace."),
    _o(None, "--disable-machine-state-tracing", None, OUTPUT, "Do not write the machine-state file."),
    _o(None, "--mmax", "<nb>", SIZE, "Use only the first <nb> compute machines (0: all of them).", "0"),
    _o(None, "--mmax-workload", None, SIZE,
       "Use only as many compute machines as the largest 'nb_res' of the workloads."),
    _o(None, "--forward-profiles-on-submission", None, JOBS,
       "Put each job's profile in its JOB_SUBMITTED event."),
    _o(None, "--enable-dynamic-jobs", None, JOBS, "Let the scheduler register jobs and profiles."),
    _o(None, "--acknowledge-dynamic-jobs", None, JOBS, "Answer each REGISTER_JOB with a JOB_SUBMITTED."),
    _o(None, "--enable-profile-reuse", None, JOBS,
       "Keep profiles of finished jobs for dynamic jobs (needs --enable-dynamic-jobs)."),
    _o("-v", "--verbosity", "<verbosity_level>", VERB,
       "Log level: quiet, network-only, information or debug.", "information"),
    _o("-q", "--quiet", None, VERB, "Same as --verbosity quiet."),
    _o(None, "--workflow-jobs-limit", "<job_limit>", FLOW,
       "At most this many workflow jobs at once (0: no limit).", "0"),
    _o(None, "--ignore-beyond-last-workflow", None, FLOW,
       "Drop workload jobs submitted after the last workflow."),
    _o(None, "--dump-execution-context", None, OTHER, "Print the execution context as JSON and stop."),
    _o(None, "--enable-compute-sharing", None, OTHER, "Allow several jobs on one compute machine."),
    _o(None, "--disable-storage-sharing", None, OTHER, "Forbid several jobs on one storage machine."),
    _o(None, "--no-sched", None, OTHER, "Run the jobs one after the other with no scheduler (batexec)."),
    _o(None, "--sched-cfg", "<cfg_str>", OTHER, "String handed to the scheduler in SIMULATION_BEGINS."),
    _o(None, "--sched-cfg-file", "<cfg_file>", OTHER,
       "Like --sched-cfg, the string being this file's content."),
    _o(None, "--sg-cfg", "<opt_name:opt_value>", OTHER, "SimGrid configuration option; may be repeated.",
       repeat=True),
    _o(None, "--sg-log", "<log_option>", OTHER, "SimGrid logging option; may be repeated.", repeat=True),
    _o(None, "--forward-unknown-events", None, OTHER,
       "Send events of unknown type to the scheduler as NOTIFY (needs --events)."),
    _o("-h", "--help", None, OTHER, "Print this text."),
    _o(None, "--max-wait", "<seconds>", OTHER,
       "Double only, for debugging: exit with code 124 after waiting this long for a reply."),
)

# Long options that only the usage pattern names (docopt adds them after the described ones).
PATTERN_ONLY = ("--WS", "--version", "--simgrid-version")

USAGE = """\
Usage:
  batsim -p <platform_file> [-w <workload_file>...]
                            [-W <workflow_file>...]
                            [--WS (<cut_workflow_file> <start_time>)...]
                            [--sg-cfg <opt_name:opt_value>...]
                            [--sg-log <log_option>...]
                            [-r <hosts_roles_map>...]
                            [--events <events_file>...]
                            [--sched-cfg <cfg_str> | --sched-cfg-file <cfg_file>]
                            [options]
  batsim --help
  batsim --version
  batsim --simgrid-version"""


def help_text() -> str:
    """The `--help` text, also printed after a command-line error (as docopt does)."""
    lines = ["Batsim 4.2.1 double: simulates a platform and workloads for a decision process,",
             "speaking Batsim's protocol.", "", USAGE]
    section = ""
    for o in OPTIONS:
        if o.section != section:
            section = o.section
            lines += ["", f"{section}:"]
        names = f"{o.short}, {o.long}" if o.short else o.long
        head = f"  {names} {o.arg}" if o.arg else f"  {names}"
        text = o.help + (f" [default: {o.default}]" if isinstance(o.default, str) else "")
        first, *rest = text.split("\n")
        lines.append(f"{head:<37}{first}" if len(head) < 36 else f"{head}  {first}")
        lines += [" " * 37 + r for r in rest]
    return "\n".join(lines)
