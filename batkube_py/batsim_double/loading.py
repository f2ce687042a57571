"""Batsim 4.2.1's checks on a profile and a job (Profile::from_json in profiles.cpp, Job::from_json in
jobs.cpp), in its order and with its messages: a workload file and the decision process's dynamic
registrations go through the same ones, with different message prefixes.

Values are typed as rapidjson types them: an `Int` is a whole number within 32 bits, a `Number` any
number; rapidjson's own assertions (GetInt or GetString on a value of another type) end Batsim like
its own checks, through glibc's assert.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from typing import Any

from . import jsonfmt
from .errors import BatsimAbort, check

PROF = "../src/profiles.cpp"
JOBS = "../src/jobs.cpp"
_DOC = "/usr/include/rapidjson/document.h"
_RJ = "rapidjson::GenericValue<Encoding, Allocator>"
_TPL = "Encoding = rapidjson::UTF8<>; Allocator = rapidjson::MemoryPoolAllocator<>"
GET_INT = (f"batsim: {_DOC}:1645: int {_RJ}::GetInt() const [with {_TPL}]: "
           "Assertion `data_.f.flags & kIntFlag' failed.")  # fmt: skip
GET_STRING = (f"batsim: {_DOC}:1681: const {_RJ}::Ch* {_RJ}::GetString() const [with {_TPL}; Ch = char]: "
              "Assertion `IsString()' failed.")  # fmt: skip
# Batsim rewrites the job's id in its JSON text with this regular expression (every match, at any depth)
ID_FIELD = re.compile(r'"id"\s*:\s*(?:"*[^(,|})]*"*)\s*')


class Obj(dict):
    """A JSON object as rapidjson holds it: a lookup finds a key's first member; `pairs` keeps them all."""

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        if len(self) != len(pairs):  # a repeated key: the first one wins, in its place
            self.clear()
            for key, value in pairs:
                self.setdefault(key, value)
        self.pairs = pairs


class ParseError(ValueError):
    pass


def _no_constant(name: str) -> Any:
    raise ParseError(name)


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ParseError(text)  # rapidjson: kParseErrorNumberTooBig
    return value


def parse(text: str) -> Any:
    """rapidjson's Document::Parse with default flags; ParseError where it sets HasParseError."""
    try:
        return json.loads(text, object_pairs_hook=Obj, parse_constant=_no_constant, parse_float=_finite)
    except (ValueError, RecursionError) as exc:
        raise ParseError(str(exc)) from None


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and -(2**31) <= v < 2**31


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def get_int(v: Any) -> int:
    if not is_int(v):
        raise BatsimAbort(GET_INT, raw=True)
    return v


def get_string(v: Any) -> str:
    if not isinstance(v, str):
        raise BatsimAbort(GET_STRING, raw=True)
    return v


def _fmt_g(value: float) -> str:
    return jsonfmt.fmt_g(float(value))


def profile_from_json(name: str, desc: Any, prefix: str, filename: str | None = None) -> str:
    """Profile::from_json's checks; returns the type Batsim gives the profile (an unknown type with a
    readable trace file is a usage trace). `filename`: the workload file, None for a registration."""
    p = f"{prefix}: profile '{name}'"
    check(isinstance(desc, dict), f"{p} value must be an object", f"{PROF}:281")
    check("type" in desc, f"{p} has no 'type' field", f"{PROF}:283")
    check(isinstance(desc["type"], str), f"{p} has a non-string 'type' field", f"{PROF}:285")
    ptype = desc["type"]
    if "ret" in desc:
        get_int(desc["ret"])
    if ptype == "delay":
        _number(desc, "delay", p, 308)
        check(desc["delay"] > 0, f"{p} has a non-strictly-positive 'delay' field ({_fmt_g(desc['delay'])})",
              f"{PROF}:314")  # fmt: skip
    elif ptype == "parallel":
        _parallel(desc, p)
    elif ptype in ("parallel_homogeneous", "parallel_homogeneous_total"):
        at = 391 if ptype == "parallel_homogeneous" else 421
        for key, line in (("cpu", at), ("com", at + 8)):
            _number(desc, key, p, line)
            check(desc[key] >= 0, f"{p} has a non-positive '{key}' field ({_fmt_g(desc[key])})",
                  f"{PROF}:{line + 5}")  # fmt: skip
    elif ptype == "composed":
        _composed(desc, p)
    elif ptype == "parallel_homogeneous_pfs":
        _pfs(desc, p)
    elif ptype == "data_staging":
        _number(desc, "nb_bytes", p, 543)
        check(desc["nb_bytes"] >= 0, f"{p} has a non-positive 'nb_bytes' field ({_fmt_g(desc['nb_bytes'])})",
              f"{PROF}:548")  # fmt: skip
        for key, line in (("from", 551), ("to", 558)):
            check(key in desc, f"{p} has no '{key}' field", f"{PROF}:{line}")
            check(isinstance(desc[key], str), f"{p} has a non-string '{key}' field", f"{PROF}:{line + 2}")
    elif ptype == "send":
        check("msg" in desc, f"{p} has no 'msg' field", f"{PROF}:572")
        check(isinstance(desc["msg"], dict), f"{p} field 'msg' is no object", f"{PROF}:574")
        _positive_if_set(desc, "sleeptime", p, 581)
    elif ptype == "recv":
        for key in ("regex", "success", "failure", "timeout"):
            if key in desc:
                get_string(desc[key])
        _positive_if_set(desc, "polltime", p, 626)
    else:
        return _trace(name, desc, p, filename)
    return ptype


def _number(desc: dict, key: str, p: str, line: int) -> None:
    check(key in desc, f"{p} has no '{key}' field", f"{PROF}:{line}")
    check(is_number(desc[key]), f"{p} has a non-number '{key}' field", f"{PROF}:{line + 2}")


def _positive_if_set(desc: dict, key: str, p: str, line: int) -> None:
    if key in desc:
        check(is_number(desc[key]), f"{p} has a non-number '{key}' field", f"{PROF}:{line}")
        check(desc[key] > 0, f"{p} has a non-positive '{key}' field ({_fmt_g(desc[key])})",
              f"{PROF}:{line + 4}")  # fmt: skip


def _parallel(desc: dict, p: str) -> None:
    check("cpu" in desc, f"{p} has no 'cpu' field", f"{PROF}:335")
    check("com" in desc, f"{p} has no 'com' field", f"{PROF}:337")
    cpu, com = desc["cpu"], desc["com"]
    check(isinstance(cpu, list), f"{p} has a non-array 'cpu' field", f"{PROF}:342")
    check(len(cpu) > 0, f"{p} has an invalid-sized array 'cpu' (size={len(cpu)}): must be strictly positive",
          f"{PROF}:344")  # fmt: skip
    for what, values, line in (("computation", cpu, 352), ("communication", com, 370)):
        if what == "communication":
            check(isinstance(com, list), f"{p} has a non-array 'com' field", f"{PROF}:361")
            n = len(cpu) * len(cpu)
            check(len(com) == n, f"{p} is incoherent: com array has size {len(com)} whereas the required "
                  f"array size is {n}", f"{PROF}:363")  # fmt: skip
        for v in values:
            check(is_number(v), f"{p} {what} array is invalid: all elements must be numbers",
                  f"{PROF}:{line}")  # fmt: skip
            check(v >= 0, f"{p} {what} array is invalid: all elements must be non-negative",
                  f"{PROF}:{line + 3}")  # fmt: skip


def _composed(desc: dict, p: str) -> None:
    if "repeat" in desc:
        check(is_int(desc["repeat"]), f"{p} has a non-integral 'repeat' field", f"{PROF}:454")
        check(desc["repeat"] >= 0, f"{p} has a negative 'repeat' field ({desc['repeat']})", f"{PROF}:456")
        check(desc["repeat"] > 0, f"{p} has a non-strictly-positive 'repeat' field (0)", f"{PROF}:462")
    check("seq" in desc, f"{p} has no 'seq' field", f"{PROF}:465")
    check(isinstance(desc["seq"], list), f"{p} has a non-array 'seq' field", f"{PROF}:467")
    check(len(desc["seq"]) > 0, f"{p} has an invalid array 'seq': its size must be strictly positive",
          f"{PROF}:470")  # fmt: skip
    for sub in desc["seq"]:
        get_string(sub)


def _pfs(desc: dict, p: str) -> None:
    check("bytes_to_read" in desc or "bytes_to_write" in desc,
          f"{p} has no 'bytes_to_read' or 'bytes_to_write' field (0 if not set)", f"{PROF}:493")  # fmt: skip
    for key, line in (("bytes_to_read", 497), ("bytes_to_write", 503)):
        if key in desc:
            check(is_number(desc[key]), f"{p} has a non-number '{key}' field", f"{PROF}:{line}")
    key = "storage" if "storage" in desc else "host" if "host" in desc else None
    if key is not None:
        check(isinstance(desc[key], str), f"{p} has a non-string '{key}' field", f"{PROF}:521")


def _trace(name: str, desc: dict, p: str, filename: str | None) -> str:
    """The smpi / usage_trace branch, which every unknown type reaches too (`type == "smpi" ||
    "usage_trace"` is always true in profiles.cpp)."""
    check("trace" in desc, f"{p} has no 'trace' field", f"{PROF}:642")
    check(isinstance(desc["trace"], str), f"{p} has a non-string 'trace' field", f"{PROF}:644")
    check(filename is not None, "Trying to create a SMPI profile from another source than a file workload, "
          "which is not implemented at the moment.", f"{PROF}:648")  # fmt: skip
    base = os.path.dirname(filename or "")
    check(os.path.isdir(base), f"directory '{base}' does not exist or is not a directory", f"{PROF}:655")
    trace = f"{base}/{desc['trace']}"
    check(os.path.isfile(trace), f"Invalid JSON: profile '{name}' has an invalid 'trace' field "
          f"('{desc['trace']}'), which leads to a non-existent file ('{trace}')", f"{PROF}:661")  # fmt: skip
    return "smpi" if desc["type"] == "smpi" else "usage_trace"


def split_job_identifier(raw: str) -> tuple[str, str]:
    """`JobIdentifier(string)`: boost::split on '!' with token_compress_on, exactly 2 parts ("a!!b" is
    ("a", "b"); empty parts are allowed)."""
    parts = re.split("!+", raw)
    check(len(parts) == 2, f"Invalid string job identifier '{raw}': should be formatted as two '!'-separated "
          "parts, the second one being any string without '!'. Example: 'some_text!42'.",
          f"{JOBS}:47")  # fmt: skip
    return parts[0], parts[1]


def job_identifier(raw_id: str, workload: str) -> str:
    """The id Batsim gives a job of `workload` whose `id` field reads `raw_id`."""
    if workload in raw_id:
        wl, name = split_job_identifier(raw_id)
        return f"{wl}!{name}"
    check("!" not in raw_id, f"Invalid job_name '{raw_id}': contains a '!'.", f"{JOBS}:92")
    return f"{workload}!{raw_id}"


def job_from_json(desc: Any, workload: str, prefix: str, profiles: dict[str, Any],
                  log: Callable[[str, str], None] | None = None) -> tuple[str, str]:
    """Job::from_json's checks; returns (job id, its JSON text with the id rewritten as Batsim does).
    `profiles`: the workload's profile names, a removed one mapping to None."""
    check(isinstance(desc, dict), f"{prefix}: one job is not an object", f"{JOBS}:394")
    check("id" in desc, f"{prefix}: one job has no 'id' field", f"{JOBS}:397")
    raw = desc["id"]
    check(isinstance(raw, str) or is_int(raw),
          f"{prefix}: on job id field is invalid, it should be a string or an integer",
          f"{JOBS}:398")  # fmt: skip
    jid = job_identifier(str(raw), workload)
    check("subtime" in desc, f"{prefix}: job '{jid}' has no 'subtime' field", f"{JOBS}:420")
    check(is_number(desc["subtime"]), f"{prefix}: job '{jid}' has a non-number 'subtime' field",
          f"{JOBS}:422")  # fmt: skip
    walltime = -1.0
    if "walltime" not in desc and log is not None:
        log("jobs", f"job '{jid}' has no 'walltime' field")
    if "walltime" in desc:
        check(is_number(desc["walltime"]), f"{prefix}: job {jid} has a non-number 'walltime' field",
              f"{JOBS}:433")  # fmt: skip
        walltime = float(desc["walltime"])
    check(walltime == -1 or walltime > 0,
          f"{prefix}: job '{jid}' has an invalid walltime ({_fmt_g(walltime)}). It should either be -1 "
          "(no walltime) or a strictly positive number.", f"{JOBS}:437")  # fmt: skip
    check("res" in desc, f"{prefix}: job {jid} has no 'res' field", f"{JOBS}:443")
    check(is_int(desc["res"]), f"{prefix}: job {jid} has a non-number 'res' field", f"{JOBS}:445")
    check(desc["res"] >= 0, f"{prefix}: job {jid} has a negative 'res' field ({desc['res']})", f"{JOBS}:447")
    check("profile" in desc, f"{prefix}: job {jid} has no 'profile' field", f"{JOBS}:452")
    prof = desc["profile"]
    check(isinstance(prof, str), f"{prefix}: job {jid} has a non-string 'profile' field", f"{JOBS}:454")
    check(prof in profiles, f"{prefix}: the profile {prof} for job {jid} does not exist", f"{JOBS}:459")
    check(profiles[prof] is not None,
          f"Cannot get profile '{prof}': it existed some time ago but is no longer accessible", f"{PROF}:62")
    return jid, _rewritten(desc, jid)


def _rewritten(desc: dict, jid: str) -> str:
    text = ID_FIELD.sub(lambda _: f'"id":"{jid}"', jsonfmt.dumps(desc))
    what = "A problem occured when replacing the job_id by its WLOAD!job_name counterpart:"
    try:  # the text is jsonfmt's (no NaN, no duplicate key) but for the rewritten ids
        doc = json.loads(text)
    except ValueError:
        raise BatsimAbort(f"{what}The output string '{text}' is not valid JSON.", f"{JOBS}:482") from None
    check(isinstance(doc, dict), f"{what} The output string '{text}' is not valid JSON.", f"{JOBS}:485")
    return text
