"""``batkube explain RUN POD``: why one pod went where it went, or why it waited, from decisions.jsonl.

The decision record (``batkube run --record-decisions``) holds one line per scheduling attempt; this
module reads only the lines of the asked pod (a run can record millions), validates them as typed records
and turns them into an :class:`Explanation`, which :mod:`explain_render` prints as tables or JSON.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from pydantic import BaseModel, ValidationError

from batkube_py.analysis.loading import DECISIONS_FILE, PODS_FILE, REJECTED_FILE, AnalysisError


class PluginScore(BaseModel):
    raw: int
    normalized: int
    weight: int


class Ranked(BaseModel):
    """One of the best-scored nodes of an attempt."""

    node: str
    total: int
    plugins: dict[str, PluginScore] = {}


class Attempt(BaseModel):
    """One line of decisions.jsonl (see batkube_py/scheduler/record.py)."""

    time: float
    pod: str
    job_id: str
    profile: str = ""
    attempt: int
    result: str
    node: str | None = None
    nodes: int
    evaluated: int = 0
    feasible: int = 0
    reasons: dict[str, int] = {}
    rejected_by: list[str] = []
    filters: dict[str, dict[str, tuple[int, list[str]]]] = {}  # plugin → reason → (count, some nodes)
    top: list[Ranked] = []
    tie_break: str = ""  # scheduler/ties.py rule(); "" in records written before 2026-11-27
    # a pod group's cycle (one attempt for the whole group): its minCount, why it failed, each member's node
    group: str = ""
    min_count: int = 0
    message: str = ""
    members: dict[str, str | None] = {}


class Explanation(BaseModel):
    run: str
    pod: str
    job_id: str
    profile: str
    verdict: str
    final: dict[str, str] | None = None  # the pod's pods.csv row
    attempts: list[Attempt]

    @property
    def bound(self) -> Attempt | None:
        return next((a for a in reversed(self.attempts) if a.result == "bound"), None)

    @property
    def last_failure(self) -> Attempt | None:
        return next((a for a in reversed(self.attempts) if a.result != "bound"), None)


def _matches(obj: dict, query: str) -> bool:
    job = str(obj.get("job_id", ""))
    return query in (obj.get("pod"), job) or ("!" not in query and job.rpartition("!")[2] == query)


def read_attempts(path: Path, query: str) -> list[Attempt]:
    """The attempts of the pod named ``query`` (pod name, Batsim job id, or a job id without workload)."""
    needle = json.dumps(query)[1:-1]
    found: list[Attempt] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if needle not in line:  # cheap pre-filter: most lines are other pods'
                continue
            try:
                obj = json.loads(line)
                if isinstance(obj, dict) and _matches(obj, query):
                    found.append(Attempt.model_validate(obj))
            except json.JSONDecodeError as exc:
                raise AnalysisError(f"{path}: line {lineno} is not valid JSON ({exc.msg})") from exc
            except ValidationError as exc:
                err = exc.errors()[0]
                where = ".".join(str(p) for p in err["loc"])
                raise AnalysisError(f"{path}: line {lineno}: field {where!r}: {err['msg']}") from exc
    pods = sorted({a.pod for a in found})
    if len(pods) > 1:
        raise AnalysisError(
            f"{query!r} names several pods ({', '.join(pods[:5])}); give the pod name or the full job id"
        )
    return found


def _csv_row(path: Path, query: str) -> dict[str, str] | None:
    if not path.exists():
        return None
    with path.open(newline="", encoding="utf-8") as fh:
        return next((row for row in csv.DictReader(fh) if _matches(row, query)), None)


def seconds(value: float) -> str:
    """Batsim times have at most 6 decimals: all of them, without trailing zeros."""
    return f"{value:.6f}".rstrip("0").rstrip(".")


def verdict(attempts: list[Attempt], final: dict[str, str] | None) -> str:
    """One sentence: where the pod went and when, or why it is still pending."""
    state = (final or {}).get("state", "")
    tail = f" (pods.csv: {state})" if state else ""
    if not attempts:
        return f"no scheduling attempt recorded{tail}"
    last = attempts[-1]
    if last.group:
        return group_verdict(attempts, tail)
    if last.result == "bound":
        waited = sum(a.result != "bound" for a in attempts)
        after = f" after {waited} unschedulable attempt(s)" if waited else " at its first attempt"
        return (
            f"bound to {last.node} at {seconds(last.time)} s{after}; "
            f"{last.feasible} of {last.evaluated or last.nodes} examined nodes fit{tail}"
        )
    why = ", ".join(f"{r} ({k})" for r, k in sorted(last.reasons.items(), key=lambda kv: -kv[1]))
    return (
        f"unschedulable at its last attempt ({seconds(last.time)} s, attempt {last.attempt}): "
        f"0 of {last.nodes} nodes fit: {why or 'no reason recorded'}{tail}"
    )


def group_verdict(attempts: list[Attempt], tail: str) -> str:
    """A pod group's sentence: where its pods went and after how many group cycles, or why it waits."""
    last = attempts[-1]
    size = len(last.members)
    if last.result == "bound":
        hosts = sorted({n for n in last.members.values() if n})
        waited = sum(a.result != "bound" for a in attempts)
        after = f" after {waited} unschedulable group cycle(s)" if waited else " at its first group cycle"
        return (
            f"pod group {last.group}: all {size} pods bound at {seconds(last.time)} s{after}, "
            f"on {len(hosts)} node(s): {' '.join(hosts)}{tail}"
        )
    fit = sum(n is not None for n in last.members.values())
    return (
        f"pod group {last.group} unschedulable at its last group cycle ({seconds(last.time)} s, attempt "
        f"{last.attempt}): {last.message or f'{fit} of minCount {last.min_count} pods placed'}{tail}"
    )


def explain_pod(run_dir: Path, query: str) -> Explanation:
    """Raises AnalysisError (one line) when the run has no decision record or does not know the pod."""
    path = run_dir / DECISIONS_FILE
    if not path.exists():
        raise AnalysisError(
            f"{run_dir}: no {DECISIONS_FILE}; rerun with `batkube run ... --record-decisions` to record "
            "why each pod went where"
        )
    attempts = read_attempts(path, query)
    final = _csv_row(run_dir / PODS_FILE, query)
    if not attempts and final is None:
        rejected = _csv_row(run_dir / REJECTED_FILE, query)
        if rejected is not None:
            raise AnalysisError(
                f"job {rejected['job_id']} was rejected before it became a pod: {rejected.get('reason', '')}"
            )
        raise AnalysisError(
            f"{path}: no pod or job {query!r} (give a pod name such as w0-1 or a Batsim job id such as w0!1)"
        )
    first = attempts[0] if attempts else None
    return Explanation(
        run=str(run_dir),
        pod=first.pod if first else (final or {}).get("pod", query),
        job_id=first.job_id if first else (final or {}).get("job_id", query),
        profile=first.profile if first else (final or {}).get("scheduler", ""),
        verdict=verdict(attempts, final),
        final=final,
        attempts=attempts,
    )
