"""Reading a run's files into normalised DataFrames.

Everything downstream (metrics, figures, comparison) works on the frames built here, so this is the one
place that knows about file formats: Batsim's ``out_jobs.csv`` (including the thesis's emulated runs with
their extra ``scheduled,pulling,pulled,created`` columns), batkube-py's ``pods.csv`` / ``nodes.csv`` /
``decisions.jsonl`` / ``summary.json`` and Batsim's ``out_schedule.csv``. Errors are raised as
:class:`AnalysisError` naming the file and what was expected, so the CLI can show them without a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import ValidationError

JOBS_FILE = "out_jobs.csv"
SCHEDULE_FILE = "out_schedule.csv"
PODS_FILE = "pods.csv"
NODES_FILE = "nodes.csv"
DECISIONS_FILE = "decisions.jsonl"
SUMMARY_FILE = "summary.json"
REJECTED_FILE = "rejected.csv"

JOB_REQUIRED = ("job_id", "submission_time", "starting_time", "finish_time")
POD_REQUIRED = ("job_id", "node", "cpu_request", "bind_time", "finish_time", "state")
NODE_REQUIRED = ("node", "cpu")

# Batsim final states grouped the way its out_schedule.csv counts them: walltime-reached jobs are "killed".
STATE_OF_FINAL = {
    "COMPLETED_SUCCESSFULLY": "succeeded",
    "COMPLETED_FAILED": "failed",
    "COMPLETED_WALLTIME_REACHED": "killed",
    "COMPLETED_KILLED": "killed",
    "REJECTED": "rejected",
}


class AnalysisError(Exception):
    """A user-facing problem with an input file (missing file or column, unparsable value)."""


@contextmanager
def json_line(path: Path, lineno: int) -> Iterator[None]:
    """Bad JSON or a bad field on one line of a run's JSON-lines file: one error naming the line."""
    try:
        yield
    except json.JSONDecodeError as exc:
        raise AnalysisError(f"{path}: line {lineno} is not valid JSON ({exc.msg})") from exc
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise AnalysisError(f"{path}: line {lineno}: field {where!r}: {err['msg']}") from exc


@dataclass
class Run:
    """One run's data. ``pods``/``nodes`` are None for a plain Batsim output directory."""

    source: Path
    jobs: pd.DataFrame
    pods: pd.DataFrame | None = None
    nodes: pd.DataFrame | None = None
    schedule: dict[str, float | str] | None = None
    decisions: pd.DataFrame | None = None
    summary: dict | None = None
    rejected: pd.DataFrame | None = None
    nb_resources: int | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.source.name if self.source.is_dir() else self.source.name.removesuffix(".csv")


def _read_csv(path: Path, required: tuple[str, ...], **kwargs) -> pd.DataFrame:
    try:
        df = pd.read_csv(path, **kwargs)
    except FileNotFoundError as exc:
        raise AnalysisError(f"{path}: file not found") from exc
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise AnalysisError(f"{path}: not a readable CSV file ({exc})") from exc
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise AnalysisError(
            f"{path}: missing column(s) {', '.join(missing)}; expected at least {', '.join(required)}"
        )
    return df


def _numeric(df: pd.DataFrame, path: Path, columns: tuple[str, ...]) -> None:
    """Coerce columns to float in place, failing loudly on text that is not a number (empty is fine)."""
    for col in columns:
        if col not in df.columns:
            continue
        raw = df[col]
        if pd.api.types.is_numeric_dtype(raw):
            df[col] = raw.astype(float)
            continue
        values = pd.to_numeric(raw, errors="coerce")
        suspect = np.flatnonzero((values.isna() & raw.notna()).to_numpy())
        for row in suspect:
            if str(raw.iloc[row]).strip():
                raise AnalysisError(
                    f"{path}: column {col!r} row {row + 2}: {raw.iloc[row]!r} is not a number"
                )
        df[col] = values.astype(float)


def read_jobs(path: Path) -> pd.DataFrame:
    """Load an out_jobs.csv into one row per job, with a Batsim-style full id and a coarse ``state``.

    Derived columns are recomputed only when absent, so values stay exactly Batsim's (6-decimal) ones.
    """
    df = _read_csv(
        path, JOB_REQUIRED, dtype={"job_id": str, "workload_name": str, "allocated_resources": str}
    )
    return _jobs_frame(df, path)


def _jobs_frame(df: pd.DataFrame, path: Path) -> pd.DataFrame:
    if "final_state" not in df.columns and "success" not in df.columns:
        raise AnalysisError(f"{path}: missing column final_state (or success); cannot tell job outcomes")
    times = (
        "submission_time",
        "starting_time",
        "execution_time",
        "finish_time",
        "waiting_time",
        "turnaround_time",
        "stretch",
        "requested_number_of_resources",
        "requested_time",
    )
    _numeric(df, path, times)
    if "workload_name" in df.columns:
        wl = df["workload_name"].fillna("w0")
        has_bang = df["job_id"].str.contains("!", regex=False)
        df["job_id"] = df["job_id"].where(has_bang, wl + "!" + df["job_id"])
    if "execution_time" not in df.columns:
        df["execution_time"] = df["finish_time"] - df["starting_time"]
    if "waiting_time" not in df.columns:
        df["waiting_time"] = df["starting_time"] - df["submission_time"]
    if "turnaround_time" not in df.columns:
        df["turnaround_time"] = df["finish_time"] - df["submission_time"]
    if "stretch" not in df.columns:
        df["stretch"] = df["turnaround_time"] / df["execution_time"]
    if "requested_number_of_resources" not in df.columns:
        df["requested_number_of_resources"] = 1.0
    if "final_state" in df.columns:
        final = df["final_state"].fillna("").astype(str).str.strip()
        unknown = sorted(set(final) - set(STATE_OF_FINAL))
        if unknown:
            raise AnalysisError(
                f"{path}: unknown final_state value(s) {unknown}; expected one of {sorted(STATE_OF_FINAL)}"
            )
        df["state"] = final.map(STATE_OF_FINAL)
    else:
        started = df["starting_time"].notna()
        df["state"] = np.where(df["success"] == 1, "succeeded", np.where(started, "failed", "rejected"))
    if "allocated_resources" not in df.columns:
        df["allocated_resources"] = ""
    alloc = df["allocated_resources"]
    df["allocated_resources"] = alloc.fillna("").astype(str).str.strip()
    return df.reset_index(drop=True)


def read_schedule(path: Path) -> dict[str, float | str]:
    """Batsim's out_schedule.csv: one header row, one value row."""
    df = _read_csv(path, ("makespan",))
    if len(df) != 1:
        raise AnalysisError(f"{path}: expected exactly one value row, found {len(df)}")
    row = df.iloc[0].to_dict()
    return {k: (v if isinstance(v, str) else float(v)) for k, v in row.items()}


def read_pods(path: Path) -> pd.DataFrame:
    df = _read_csv(path, POD_REQUIRED, dtype={"job_id": str, "node": str, "pod": str, "reason": str})
    _numeric(
        df,
        path,
        (
            "cpu_request",
            "memory_request",
            "resource_id",
            "priority",
            "submit_time",
            "bind_time",
            "finish_time",
        ),
    )
    df["cpu_request"] = df["cpu_request"].fillna(0.0)
    return df


def read_nodes(path: Path) -> pd.DataFrame:
    df = _read_csv(path, NODE_REQUIRED, dtype={"node": str})
    _numeric(df, path, ("cpu", "memory", "pods", "resource_id"))
    if df["cpu"].isna().any():
        raise AnalysisError(f"{path}: column 'cpu' must be set for every node")
    return df


def read_decisions(path: Path) -> pd.DataFrame:
    """decisions.jsonl → one row per scheduling attempt (``reasons`` kept as a dict)."""
    rows = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise AnalysisError(f"{path}: line {lineno} is not valid JSON ({exc.msg})") from exc
            if not isinstance(obj, dict) or "result" not in obj:
                raise AnalysisError(f"{path}: line {lineno}: expected an object with a 'result' key")
            rows.append(obj)
    df = pd.DataFrame(
        rows,
        columns=sorted({"time", "pod", "job_id", "result", "node", "reasons"} | {k for r in rows for k in r}),
    )
    return df


_FINAL_OF_POD = {
    "Succeeded": "COMPLETED_SUCCESSFULLY",
    "Failed": "COMPLETED_FAILED",
    "Killed": "COMPLETED_KILLED",
    "Rejected": "REJECTED",
}


def jobs_from_pods(path: Path) -> pd.DataFrame:
    """The jobs of a run stopped before Batsim wrote out_jobs.csv (Batsim writes it at its end), from the
    pods that reached a final state, which batkube-py writes as they go."""
    pods = read_pods(path)
    done = pods[pods["state"].isin(list(_FINAL_OF_POD))]
    start = pd.to_numeric(done["start_time"], errors="coerce") if "start_time" in done else done["bind_time"]
    df = pd.DataFrame(
        {
            "job_id": done["job_id"].astype(str),
            "submission_time": done["submit_time"],
            "starting_time": start,
            "finish_time": done["finish_time"],
            "final_state": done["state"].map(_FINAL_OF_POD),
            "allocated_resources": done["resource_id"].map(lambda r: "" if pd.isna(r) else str(int(r))),
        }
    )
    return _jobs_frame(df.reset_index(drop=True), path)


def read_summary(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise AnalysisError(f"{path}: not valid JSON ({exc.msg})") from exc


def load_run(path: Path) -> Run:
    """Load a run directory, or a single jobs CSV (then only the jobs are known)."""
    path = Path(path)
    if path.is_file():
        return Run(source=path, jobs=read_jobs(path))
    if not path.is_dir():
        raise AnalysisError(f"{path}: no such run directory or jobs CSV file")
    jobs_path = path / JOBS_FILE
    partial = not jobs_path.exists() or jobs_path.stat().st_size == 0
    if partial and not (path / PODS_FILE).exists():
        what = "is missing" if not jobs_path.exists() else "is empty (Batsim stopped before writing it)"
        raise AnalysisError(f"{path}: not a run directory, {JOBS_FILE} {what} and there is no {PODS_FILE}")
    run = Run(source=path, jobs=jobs_from_pods(path / PODS_FILE) if partial else read_jobs(jobs_path))
    if partial:
        run.notes.append(
            f"partial run: {JOBS_FILE} {'is missing' if not jobs_path.exists() else 'is empty'} (Batsim was "
            f"stopped before its end); the {len(run.jobs)} jobs that reached a final state, from {PODS_FILE}"
        )
    if (path / SCHEDULE_FILE).exists() and (path / SCHEDULE_FILE).stat().st_size > 0:
        run.schedule = read_schedule(path / SCHEDULE_FILE)
    if (path / PODS_FILE).exists():
        run.pods = read_pods(path / PODS_FILE)
    if (path / NODES_FILE).exists():
        run.nodes = read_nodes(path / NODES_FILE)
    if (path / DECISIONS_FILE).exists():
        run.decisions = read_decisions(path / DECISIONS_FILE)
    if (path / SUMMARY_FILE).exists():
        run.summary = read_summary(path / SUMMARY_FILE)
    if (path / REJECTED_FILE).exists():
        run.rejected = _read_csv(path / REJECTED_FILE, ("job_id", "field"), dtype=str)
    if run.nodes is not None:
        run.nb_resources = len(run.nodes)
    elif run.schedule is not None and "nb_computing_machines" in run.schedule:
        run.nb_resources = int(run.schedule["nb_computing_machines"])
    if run.pods is not None and run.nodes is None:
        run.notes.append(f"{PODS_FILE} without {NODES_FILE}: node capacities unknown")
    return run
