"""Reading and writing Standard Workload Format traces.

evalys' reader passes ``header=0`` to pandas and so silently loses the first job; this reader keeps every job,
remembers the line each one came from (so later steps can point at it), and reports malformed lines instead of
guessing.  It is vectorised: Python only splits lines, pandas' C parser converts the numbers.
"""

from __future__ import annotations

import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from swf_tools.errors import LineIssue, SwfHeaderError, SwfParseError

# (evalys column name, human name) for the 18 standard fields, in file order.
FIELDS: tuple[tuple[str, str], ...] = (
    ("jobID", "job number"),
    ("submission_time", "submit time"),
    ("waiting_time", "wait time"),
    ("execution_time", "run time"),
    ("proc_alloc", "allocated processors"),
    ("cpu_used", "average CPU time used"),
    ("mem_used", "used memory"),
    ("proc_req", "requested processors"),
    ("user_est", "requested time"),
    ("mem_req", "requested memory"),
    ("status", "status"),
    ("uid", "user id"),
    ("gid", "group id"),
    ("exe_num", "executable number"),
    ("queue", "queue number"),
    ("partition", "partition number"),
    ("prev_jobs", "preceding job number"),
    ("think_time", "think time from preceding job"),
)
COLUMNS: list[str] = [name for name, _ in FIELDS]
NB_FIELDS = len(FIELDS)
MISSING = -1

# SWF status codes (swf.html): 0 failed, 1 completed, 2-4 checkpoint/swap partial records, 5 cancelled.
STATUS_CANCELLED = 5

# Header keys in the order evalys' Workload.to_csv writes them (its ``metadata`` dict order).
HEADER_ORDER: tuple[str, ...] = (
    "Version", "Computer", "Installation", "Acknowledge", "Information", "Conversion", "MaxJobs",
    "MaxRecords", "Preemption", "UnixStartTime", "TimeZone", "TimeZoneString", "StartTime", "EndTime",
    "MaxNodes", "MaxProcs", "MaxRuntime", "MaxMemory", "AllowOveruse", "MaxQueues", "Queues", "Queue",
    "MaxPartitions", "Partitions", "Partition", "Note",
)

# A key line is "; Key: value"; indented continuation lines ("; <spaces>more text", or URLs such as
# "http://…" whose colon is not followed by a space) belong to the previous key.
_KEY_RE = re.compile(r"^;\s?([A-Za-z][A-Za-z0-9_]*):(?:\s+(.*))?$")
_INT_RE = re.compile(r"-?\d+")


def field_label(index: int) -> str:
    """Field names as the SWF standard numbers them (1-based), so messages match the archive's docs."""
    name, human = FIELDS[index]
    return f"{index + 1} ({human}, {name})"


@dataclass
class HeaderEntry:
    key: str
    value: str
    line: int


@dataclass
class SwfHeader:
    """Header entries in file order; keys such as Note or Queue legitimately repeat."""

    entries: list[HeaderEntry] = field(default_factory=list)

    def get(self, key: str) -> HeaderEntry | None:
        for entry in self.entries:
            if entry.key == key:
                return entry
        return None

    def value(self, key: str) -> str | None:
        entry = self.get(key)
        return entry.value if entry else None

    def all(self, key: str) -> list[str]:
        return [e.value for e in self.entries if e.key == key]

    def integer(self, key: str, path: Path | str | None = None) -> int | None:
        """First integer of a header value (``MaxProcs: 1024 (512 512)`` → 1024), as evalys reads it."""
        entry = self.get(key)
        if entry is None:
            return None
        match = _INT_RE.search(entry.value)
        if match is None:
            where = f"{path}:{entry.line}" if path else f"line {entry.line}"
            raise SwfHeaderError(f"{where}: header {key}: expected an integer, got {entry.value!r}")
        return int(match.group())

    def set(self, key: str, value: str) -> None:
        """Replace every entry of ``key`` by one value (line 0: it was not read from a file)."""
        self.entries = [e for e in self.entries if e.key != key]
        self.entries.append(HeaderEntry(key, value, 0))


@dataclass
class SwfTrace:
    """A parsed trace: one DataFrame row per job, in file order, with evalys' column names."""

    path: Path
    header: SwfHeader
    jobs: pd.DataFrame
    lines: np.ndarray  # 1-based source line of each job, aligned with ``jobs``
    malformed: list[LineIssue] = field(default_factory=list)

    @property
    def max_procs(self) -> int | None:
        return self.header.integer("MaxProcs", self.path)

    def line_of(self, row: int) -> int:
        return int(self.lines[row])


def _decode(path: Path, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        try:
            # Old archive files are sometimes Latin-1 in their comments; only the numbers matter to us.
            return raw.decode("latin-1")
        except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes every byte
            raise SwfParseError(path, [LineIssue(line, "not valid UTF-8 text")]) from exc


def _check_tokens(line_no: int, tokens: list[str]) -> LineIssue | None:
    """The slow, precise path: only run on lines pandas refused, to say which field and why."""
    for index, token in enumerate(tokens):
        try:
            value = float(token)
        except ValueError:
            return LineIssue(line_no, f"expected a number, got {token!r}", field_label(index))
        if not math.isfinite(value):
            return LineIssue(line_no, f"expected a finite number, got {token!r}", field_label(index))
    return None


def parse_swf_text(text: str, path: Path | str = "<string>", strict: bool = False) -> SwfTrace:
    path = Path(path)
    header = SwfHeader()
    issues: list[LineIssue] = []
    data: list[str] = []
    line_numbers: list[int] = []
    last_entry: HeaderEntry | None = None
    for number, raw_line in enumerate(text.splitlines(), start=1):
        line = raw_line.strip()
        if not line:
            continue
        if line[0] == ";":
            match = _KEY_RE.match(line)
            if match:
                last_entry = HeaderEntry(match.group(1), (match.group(2) or "").strip(), number)
                header.entries.append(last_entry)
            elif last_entry is not None and line[1:].strip():
                last_entry.value += "\n" + line[1:].strip()
            continue
        last_entry = None
        if ";" in line:  # trailing comment after the fields
            line = line.split(";", 1)[0].rstrip()
        nb = len(line.split())
        if nb != NB_FIELDS:
            issues.append(LineIssue(number, f"expected {NB_FIELDS} whitespace-separated fields, found {nb}"))
            continue
        data.append(line)
        line_numbers.append(number)

    values = _to_array(data, line_numbers, issues)
    if issues:
        bad_lines = {issue.line for issue in issues}
        keep = np.array([n not in bad_lines for n in line_numbers], dtype=bool)
        values = values[keep]
        line_numbers = [n for n, k in zip(line_numbers, keep, strict=True) if k]
        issues.sort(key=lambda issue: issue.line)
        if strict:
            raise SwfParseError(path, issues, f"{path}: {len(issues)} malformed line(s) (--strict)")

    jobs = pd.DataFrame(values, columns=COLUMNS)
    jobs["jobID"] = jobs["jobID"].astype(np.int64)
    return SwfTrace(path, header, jobs, np.asarray(line_numbers, dtype=np.int64), issues)


def _to_array(data: list[str], line_numbers: list[int], issues: list[LineIssue]) -> np.ndarray:
    """Convert the field lines at C speed; fall back to per-line checks only to locate errors."""
    if not data:
        return np.empty((0, NB_FIELDS), dtype=np.float64)
    values: np.ndarray | None
    try:
        frame = pd.read_csv(io.StringIO("\n".join(data)), sep=r"\s+", header=None, dtype=np.float64,
                            engine="c", na_filter=False)
        values = frame.to_numpy()
    except ValueError:
        values = None
    if values is None or values.shape != (len(data), NB_FIELDS) or not np.isfinite(values).all():
        values = np.full((len(data), NB_FIELDS), np.nan)
        for row, (line, number) in enumerate(zip(data, line_numbers, strict=True)):
            issue = _check_tokens(number, line.split())
            if issue:
                issues.append(issue)
            else:
                values[row] = [float(token) for token in line.split()]
    ids = values[:, 0]
    bad_id = np.isfinite(ids) & ((ids != np.floor(ids)) | (ids < 0))
    for row in np.flatnonzero(bad_id):
        issues.append(LineIssue(line_numbers[row], f"expected a non-negative integer, got {ids[row]:g}",
                                field_label(0)))
    return values


def parse_swf(path: Path | str, strict: bool = False) -> SwfTrace:
    """Read a trace; malformed lines are skipped and listed in ``malformed`` unless ``strict``."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SwfParseError(path, [], f"{path}: cannot read trace: {exc.strerror or exc}") from exc
    trace = parse_swf_text(_decode(path, raw), path, strict=strict)
    if trace.jobs.empty:
        raise SwfParseError(path, trace.malformed, f"{path}: no job lines found")
    return trace


def _format_column(column: pd.Series) -> pd.Series:
    """Integers stay integers (``-1`` not ``-1.0``): other SWF tools parse fields with ``atoi``."""
    values = column.to_numpy(dtype=np.float64)
    if np.all(values == np.floor(values)):
        return pd.Series(values.astype(np.int64), index=column.index).astype(str)
    return column.map(lambda v: str(int(v)) if float(v).is_integer() else repr(float(v)))


def header_lines(header: SwfHeader) -> list[str]:
    """Known keys in evalys' order, then any other keys, so the result reads like an evalys export."""
    known = [e for key in HEADER_ORDER for e in header.entries if e.key == key]
    others = [e for e in header.entries if e.key not in HEADER_ORDER]
    out: list[str] = []
    for entry in _notes_last(known, others):
        first, *rest = entry.value.split("\n")
        out.append(f"; {entry.key}: {first}".rstrip())
        out.extend(f";       {more}" for more in rest)
    return out


def _notes_last(known: list[HeaderEntry], others: list[HeaderEntry]) -> list[HeaderEntry]:
    notes = [e for e in known if e.key == "Note"]
    return [e for e in known if e.key != "Note"] + others + notes


def write_swf(path: Path | str, header: SwfHeader, jobs: pd.DataFrame) -> None:
    """Write ``; Key: Value`` lines then tab-separated fields, exactly like evalys' ``Workload.to_csv``."""
    buffer = io.StringIO()
    for line in header_lines(header):
        buffer.write(line + "\n")
    if len(jobs):
        table = pd.DataFrame({name: _format_column(jobs[name]) for name in COLUMNS})
        buffer.write("\n".join("\t".join(row) for row in table.itertuples(index=False, name=None)))
        buffer.write("\n")
    Path(path).write_text(buffer.getvalue(), encoding="utf-8")
