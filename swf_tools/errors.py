"""Typed errors: the CLI turns them into one clear message instead of a traceback."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class LineIssue:
    """One problem on one line, kept so that a report can name the exact spot to fix."""

    line: int
    message: str
    field: str | None = None

    def describe(self, path: Path | str | None = None) -> str:
        where = f"{path}:{self.line}" if path is not None else f"line {self.line}"
        if self.field:
            return f"{where}: field {self.field}: {self.message}"
        return f"{where}: {self.message}"


class SwfError(Exception):
    """Base class of every error swf-tools reports to its user."""


class SwfParseError(SwfError):
    """A trace could not be read; carries every offending line, not just the first one."""

    def __init__(self, path: Path | str, issues: list[LineIssue], summary: str | None = None) -> None:
        self.path = Path(path)
        self.issues = issues
        shown = "\n".join("  " + issue.describe(self.path) for issue in issues[:10])
        more = f"\n  … and {len(issues) - 10} more" if len(issues) > 10 else ""
        head = summary or f"{self.path}: {len(issues)} malformed line(s)"
        super().__init__(f"{head}\n{shown}{more}" if issues else head)


class SwfHeaderError(SwfError):
    """A header value the requested operation needs is missing or unusable."""


class ConversionError(SwfError):
    """The options or the trace make a Batsim workload impossible to build."""
