"""Batsim's checks on a parsed command line (`parse_main_args` in Batsim 4.2.1's src/batsim.cpp).

Batsim logs every problem it finds (`[0.000000] [batsim/ERROR] ...`), then does not
simulate.  Its exit code is a bit set that only the file checks feed (platform 1,
workload or events 2, workflow 4, cut workflow 8/16/32/64): a bad --mmax, verbosity,
Redis port or profile reuse without dynamic jobs stops Batsim with exit code 0.
Integer options are read as C++'s std::stoi reads them (leading blanks, a sign, digits,
then anything), the Redis port as a whole number (docopt's asLong).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import TextIO

from pydantic import BaseModel, Field

from .argv import Parsed
from .errors import check as check_
from .workload import absolute_filename

VERBOSITIES = ("quiet", "network-only", "information", "debug")
INT_MIN, INT_MAX = -(2**31), 2**31 - 1


class MainArgs(BaseModel):
    """What Batsim keeps of its command line; `error` means it would not simulate."""

    platform: str
    workloads: list[str] = Field(default_factory=list)  # absolute, as Batsim makes them
    workflows: list[str] = Field(default_factory=list)
    events: list[str] = Field(default_factory=list)
    master_host: str = "master_host"
    roles: dict[str, str] = Field(default_factory=dict)  # -r, host -> role (the master is added later)
    socket_endpoint: str = "tcp://localhost:28000"
    redis_hostname: str = "127.0.0.1"
    redis_port: int = 0
    redis_prefix: str = "default"
    export_prefix: str = "out"
    mmax: int = 0
    mmax_workload: bool = False
    verbosity: str = "quiet"
    forward_unknown_events: bool = False
    sched_config: str = ""
    sched_config_file: str = ""
    return_code: int = 0
    error: bool = False


def stoi(text: str) -> int | None:
    """std::stoi: None where it throws (no digits, or out of int range)."""
    m = re.match(r"[ \t\n\v\f\r]*([+-]?\d+)", text)
    if m is None:
        return None
    value = int(m.group(1))
    return value if INT_MIN <= value <= INT_MAX else None


def stol_whole(text: str) -> int | None:
    """docopt's value::asLong: std::stol over the whole string."""
    m = re.fullmatch(r"[ \t\n\v\f\r]*([+-]?\d+)", text)
    if m is None or not -(2**63) <= int(m.group(1)) < 2**63:
        return None
    value = int(m.group(1)) & 0xFFFFFFFF  # static_cast<int>
    return value - 2**32 if value > INT_MAX else value


def check(p: Parsed, log: TextIO) -> MainArgs:
    """Batsim's checks, in its order, logging as it does; BatsimAbort where Batsim asserts."""
    a = MainArgs(platform=p.text("--platform"))

    def error(message: str, bit: int = 0) -> None:
        log.write(f"[0.000000] [batsim/ERROR] {message}\n")
        a.error = True
        a.return_code |= bit

    if not os.path.exists(a.platform):
        error(f"Platform file '{a.platform}' cannot be read.", 0x01)
    a.workloads = _input_files(p.items("--workload"), ("Workload", "Workload 'w{}'", "workload"), 0x02,
                               error, log)
    a.workflows = _input_files(p.items("--workflow"), ("Workflow", "Workflow 'wf{}'", "workflow"), 0x04,
                               error, log)
    _cut_workflows(p, a, error, log)
    a.events = _input_files(p.items("--events"), ("Events", "Event list 'we{}'", "events"), 0x02, error, log)
    a.master_host = p.text("--master-host")
    for spec in p.items("--add-role-to-hosts"):
        parts = spec.split(":")
        check_(len(parts) == 2, "The roles host mapping should only contain one ':' character",
               "../src/batsim.cpp:450")
        for host in parts[0].split(","):
            a.roles[host] = parts[1]
    a.socket_endpoint = p.text("--socket-endpoint")
    a.redis_hostname = p.text("--redis-hostname")
    a.redis_port = _integer(p.text("--redis-port"), stol_whole, "Cannot read the Redis port '{}' as a long "
                            "integer.", error, a.redis_port)
    a.redis_prefix = p.text("--redis-prefix")
    a.export_prefix = p.text("--export")
    if p.flag("--enable-profile-reuse") and not p.flag("--enable-dynamic-jobs"):
        error("Profile reuse is enabled but dynamic registration is not, have you missed something?")
    a.mmax = _integer(p.text("--mmax"), stoi, "Cannot read <M_max> '{}' as an integer.", error, a.mmax)
    a.mmax_workload = p.flag("--mmax-workload")
    verbosity = p.text("--verbosity")
    if verbosity in VERBOSITIES:
        a.verbosity = "quiet" if p.flag("--quiet") else verbosity
    else:
        error(f"Invalid <verbosity_level> '{verbosity}'.")
    limit_text = p.text("--workflow-jobs-limit")
    limit = stoi(limit_text)
    if limit is None:
        error(f"Cannot read the <job_limit> '{limit_text}' as an integer.")
    elif limit < 0:
        error(f"The <workflow_limit> {limit} ('{limit_text}') must be positive.")
    a.forward_unknown_events = bool(a.events) and p.flag("--forward-unknown-events")
    cfg = p.values.get("--sched-cfg")
    a.sched_config = cfg if isinstance(cfg, str) else ""
    cfg_file = p.values.get("--sched-cfg-file")
    a.sched_config_file = cfg_file if isinstance(cfg_file, str) else ""
    return a


def _integer(text: str, read: Callable[[str], int | None], message: str, error: Callable[[str, int], None],
             fallback: int) -> int:
    value = read(text)
    if value is None:
        error(message.format(text), 0)
        return fallback
    return value


def _input_files(paths: list[str], words: tuple[str, str, str], bit: int, error: Callable[[str, int], None],
                 log: TextIO) -> list[str]:
    """Input files as Batsim takes them: an error for a missing one, an absolute name for the others."""
    what, name, kind = words
    found: list[str] = []
    for i, path in enumerate(paths):
        if not os.path.exists(path):
            error(f"{what} file '{path}' cannot be read.", bit)
        else:
            found.append(absolute_filename(path))
            log.write(f"[0.000000] [batsim/INFO] {name.format(i)} corresponds to {kind} file "
                      f"'{found[-1]}'.\n")
    return found


def _cut_workflows(p: Parsed, a: MainArgs, error: Callable[[str, int], None], log: TextIO) -> None:
    """`--WS <cut_workflow_file> <start_time>` pairs (the double refuses workflows later)."""
    pairs = list(zip(p.positionals[::2], p.positionals[1::2], strict=True))
    for i, (path, start) in enumerate(pairs):
        if not os.path.exists(path):
            error(f"Cut workflow file '{path}' cannot be read.", 0x10)
            continue
        m = re.match(r"[ \t\n\v\f\r]*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", start)
        if m is None:
            error(f"Cannot read the <start_time> '{start}' as a double.", 0x40)
        elif float(m.group(0)) < 0:
            error(f"<start_time> {float(m.group(0)):g} ('{start}') should be positive.", 0x20)
        else:
            a.workflows.append(absolute_filename(path))
            log.write(f"[0.000000] [batsim/INFO] Cut workflow 'wfc{i}' corresponds to workflow file "
                      f"'{a.workflows[-1]}'.\n")
