"""``batkube explain RUN POD``: why one pod went where it went, or why it waited, from decisions.jsonl.

The decision record (``batkube run --record-decisions``) holds one line per scheduling attempt; this
module reads only the lines of the asked pod (a run can record millions), validates them as typed records
and turns them into an :class:`Explanation`, which :mod:`explain_render` prints as tables or JSON.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from pydantic import BaseModel

from batkube_py.analysis.explain_admission import AdmissionStep, admission_story
from batkube_py.analysis.loading import DECISIONS_FILE, PODS_FILE, REJECTED_FILE, AnalysisError, json_line


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
    final: dict[str, str] | None = None  # the pod's pods.csv row (a group's: its nodes, all of them)
    attempts: list[Attempt]
    group: list[str] = []  # a pod group's pods, in executor order
    overtaken: list[str] = []  # why pods submitted after it were bound before it, one line each
    admission: list[AdmissionStep] = []  # Kueue's part (--queues), before the scheduling attempts
    admission_source: str = ""  # the files it was read from

    @property
    def bound(self) -> Attempt | None:
        return next((a for a in reversed(self.attempts) if a.result == "bound"), None)

    @property
    def last_failure(self) -> Attempt | None:
        return next((a for a in reversed(self.attempts) if a.result != "bound"), None)


def _matches(obj: dict, query: str) -> bool:
    job = str(obj.get("job_id", ""))
    return (query in (obj.get("pod"), job, obj.get("group")) or query in (obj.get("members") or ())
            or ("!" not in query and job.rpartition("!")[2] == query))  # fmt: skip


def read_attempts(path: Path, query: str) -> list[Attempt]:
    """The attempts of the pod named ``query`` (pod name, Batsim job id, or a job id without workload)."""
    needle = json.dumps(query)[1:-1]
    found: list[Attempt] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if needle not in line:  # cheap pre-filter: most lines are other pods'
                continue
            with json_line(path, lineno):
                obj = json.loads(line)
                if isinstance(obj, dict) and _matches(obj, query):
                    found.append(Attempt.model_validate(obj))
    pods = sorted({a.pod for a in found})
    if len(pods) > 1:
        raise AnalysisError(
            f"{query!r} names several pods ({', '.join(pods[:5])}); give the pod name or the full job id"
        )
    return found


def _csv_rows(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _csv_row(path: Path, query: str) -> dict[str, str] | None:
    return next((row for row in _csv_rows(path) if _matches(row, query)), None)


def _job_row(rows: list[dict[str, str]], query: str) -> tuple[dict[str, str] | None, list[str]]:
    """The pod's pods.csv row; for a pod group (one row per pod) the first with every node of the group
    in `node`, and the group's pods."""
    hit = next((r for r in rows if _matches(r, query)), None)
    if hit is None or not hit.get("group"):
        return hit, []
    members = [r for r in rows if r["job_id"] == hit["job_id"]]
    nodes = list(dict.fromkeys(r["node"] for r in members if r["node"]))
    return {**hit, "pod": hit["group"], "node": " ".join(nodes)}, [r["pod"] for r in members]


def _num(value: str, default: float = 0.0) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def overtaken(rows: list[dict[str, str]], final: dict[str, str] | None, attempts: list[Attempt]) -> list[str]:
    """Why pods submitted after this one were bound while it waited: kube-scheduler's queue is not FIFO.
    A newer pod wins with a higher priority (the queue pops by priority first), with a smaller request
    (it fits room this pod does not), or, asking as much, while this pod sat in backoff after a failed
    attempt or among the unschedulable pods until an event moved it."""
    if final is None or not attempts or attempts[0].result == "bound":
        return []
    submit, mine = _num(final.get("submit_time", "")), final["job_id"]
    until = _num(final.get("bind_time", ""), float("inf"))
    jobs: dict[str, dict[str, str]] = {}
    for r in rows:
        bind = _num(r.get("bind_time", ""), float("inf"))
        if r["job_id"] != mine and _num(r.get("submit_time", "")) > submit and bind < until:
            jobs.setdefault(r["job_id"], r)
    if not jobs:
        return []
    first = min(jobs.values(), key=lambda r: _num(r["bind_time"]))
    cpu, prio, mem = _num(final.get("cpu_request", "")), _num(final.get("priority", "")), final.get(
        "memory_request", "")  # fmt: skip
    higher = [r for r in jobs.values() if _num(r.get("priority", "")) > prio]
    rest = [r for r in jobs.values() if _num(r.get("priority", "")) <= prio]
    smaller = [r for r in rest if _num(r.get("cpu_request", "")) < cpu or (
        mem and r.get("memory_request") and _num(r["memory_request"]) < _num(mem))]  # fmt: skip
    same = len(rest) - len(smaller)
    failed = [a for a in attempts if a.result != "bound"]
    why = ", ".join(sorted({r for a in failed for r in a.reasons})) or "no node fit"
    lines = [f"{len(jobs)} pod(s) submitted after it were bound while it waited (first: {first['pod']}, "
             f"submitted {first['submit_time']} s, bound {first['bind_time']} s); kube-scheduler's queue is "
             "not first come, first served:"]  # fmt: skip
    if higher:
        lines.append(f"{len(higher)} have a higher priority than its {prio:g}: the queue pops them first")
    if smaller:
        least = min(_num(r.get("cpu_request", "")) for r in smaller)
        lines.append(f"{len(smaller)} ask for less (cpu down to {least:g}, it asks {cpu:g}"
                     f"{f', memory {mem}' if mem else ''}): they fit room freed on a node, which was too "
                     f"little for it ({why} at its {len(failed)} failed attempt(s))")  # fmt: skip
    if same:
        lines.append(f"{same} ask as much at no higher priority: they were tried while it was in backoff "
                     "after a failed attempt (1 s, doubling to 10 s) or among the unschedulable pods until "
                     "a cluster event (a completion) moved it back")  # fmt: skip
    return lines


def seconds(value: float) -> str:
    """Batsim times have at most 6 decimals: all of them, without trailing zeros."""
    return f"{value:.6f}".rstrip("0").rstrip(".")


def admission(final: dict[str, str] | None) -> str:
    """Kueue's part of the story (--queues), from pods.csv: which queues, which flavor, how long it waited
    for quota; empty for a run without queues."""
    row = final or {}
    if not row.get("cluster_queue"):
        return ""
    where = f"LocalQueue {row.get('queue')} → ClusterQueue {row['cluster_queue']}"
    if not row.get("admitted_at"):
        return f"never admitted by Kueue ({where}); "
    waited = float(row["admitted_at"]) - float(row["submit_time"])
    return (
        f"admitted by Kueue ({where}, flavor {row.get('flavor')}) at {seconds(float(row['admitted_at']))} s "
        f"after a quota wait of {seconds(waited)} s; "
    )


def verdict(attempts: list[Attempt], final: dict[str, str] | None) -> str:
    """One sentence: where the pod went and when, or why it is still pending."""
    return admission(final) + _placement(attempts, final)


def _placement(attempts: list[Attempt], final: dict[str, str] | None) -> str:
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
    rows = _csv_rows(run_dir / PODS_FILE)
    final, group = _job_row(rows, query)
    if path.exists():
        attempts = read_attempts(path, query)
    elif final is not None and final.get("cluster_queue"):
        attempts = []  # a run with Kueue but no scheduling record (the real kube-scheduler): admission only
    else:
        raise AnalysisError(
            f"{run_dir}: no {DECISIONS_FILE}; rerun with `batkube run ... --record-decisions` to record "
            "why each pod went where"
        )
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
    story, source = admission_story(run_dir, final)
    return Explanation(
        run=str(run_dir),
        pod=(first.group or first.pod) if first else (final or {}).get("pod", query),
        job_id=first.job_id if first else (final or {}).get("job_id", query),
        profile=first.profile if first else (final or {}).get("scheduler", ""),
        verdict=verdict(attempts, final),
        final=final,
        attempts=attempts,
        group=group,
        overtaken=overtaken(rows, final, attempts),
        admission=story,
        admission_source=source,
    )
