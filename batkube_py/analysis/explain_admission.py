"""The admission part of ``batkube explain`` (--queues): what Kueue decided about a job before
kube-scheduler saw its pods, and why.

With the Kueue twin (embedded backend) and ``--record-decisions`` the run has admissions.jsonl
(kueue/record.py): Kueue's own messages per attempt, the flavors considered, the quota short, the
victims, the evictions and what woke the workload. A run with the real Kueue (apiserver backend) has
what pods.csv and queues.csv keep: queues, flavor, admission instant, evictions, resubmissions. A
preempted job is resubmitted under a new id (pods.csv's reason says which): the story follows it.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

from pydantic import BaseModel

from batkube_py.analysis.loading import AnalysisError, json_line

ADMISSIONS_FILE = "admissions.jsonl"  # kueue/record.py writes it
QUEUES_FILE = "queues.csv"
RESUBMITTED = re.compile(r"resubmitted as (\S+)")


class AdmissionLine(BaseModel):
    """One line of admissions.jsonl (see batkube_py/kueue/record.py)."""

    time: float
    event: str
    workload: str
    queue: str = ""
    cluster_queue: str = ""
    priority: int = 0
    position: int = 0
    pending: int = 0
    strategy: str = ""
    order: int = 0
    heads: int = 0
    outcome: str = ""
    message: str = ""
    assigned: dict[str, str] = {}
    borrowing: int = 0
    flavors: list[tuple[str, str, int, list[str]]] = []
    quota: list[dict[str, str]] = []
    targets: list[tuple[str, str, str]] = []
    requeued: str = ""
    blocks: int = 0
    woken: str = ""
    by: str = ""
    reason: str = ""
    count: int = 0
    since: float = 0.0
    wakes: int = 0


class AdmissionStep(BaseModel):
    """One step of the story: from `time` (until `until` for a span), what happened, in Kueue's words."""

    time: float
    until: float | None = None
    workload: str
    event: str
    text: str


def _line(path: Path, lineno: int, text: str) -> AdmissionLine:
    with json_line(path, lineno):
        return AdmissionLine.model_validate(json.loads(text))


def read_lines(path: Path, names: set[str], cqs: set[str]) -> tuple[list[AdmissionLine], list[AdmissionLine]]:
    """The lines of the workloads `names`, and the attempts of other heads of their ClusterQueues (the
    heads a StrictFIFO queue made them wait behind)."""
    own: list[AdmissionLine] = []
    heads: list[AdmissionLine] = []
    needles = [json.dumps(n) for n in names]
    cq_needles = [f'"cluster_queue":{json.dumps(cq)}' for cq in cqs]
    with path.open(encoding="utf-8") as fh:
        for lineno, text in enumerate(fh, 1):
            mine = any(n in text for n in needles)
            if not mine and not ('"event":"attempt"' in text and any(n in text for n in cq_needles)):
                continue
            line = _line(path, lineno, text)
            if line.workload in names:
                own.append(line)
            elif line.event == "attempt" and line.cluster_queue in cqs:
                heads.append(line)
    return own, heads


def s(value: float) -> str:
    return f"{value:.6f}".rstrip("0").rstrip(".")


def quota_text(q: dict[str, str]) -> str:
    limits = [f"{k.replace('_', ' ')} {q[k]}" for k in ("borrowing_limit", "lending_limit") if k in q]
    cohort = [f"cohort {q['cohort']} has {q.get('cohort_available', '?')} left"] if "cohort" in q else []
    extra = f" ({', '.join([*limits, *cohort])})" if limits or cohort else ""
    return (f"{q['resource']} in flavor {q['flavor']}: requested {q['requested']}, nominal {q['nominal']}, "
            f"in use {q['used']}, available {q['available']}{extra}")  # fmt: skip


def _ordinal(line: AdmissionLine) -> str:
    where = f"position {line.position} of {line.pending} pending in ClusterQueue {line.cluster_queue}"
    if line.heads > 1:
        where += f"; head {line.order} of {line.heads} in the cycle's order"
    return where


def attempt_text(line: AdmissionLine) -> str:
    """An attempt as its ClusterQueue's head: the outcome in Kueue's words, then the detail."""
    parts = [f"as head ({_ordinal(line)}): {line.message or line.outcome}"]
    if line.outcome == "Admitted":
        by_flavor: dict[str, list[str]] = {}
        for r, f in sorted(line.assigned.items()):
            by_flavor.setdefault(f, []).append(r)
        flavors = ", ".join(f"flavor {f} for {' '.join(rs)}" for f, rs in by_flavor.items())
        parts.append(flavors + (f", borrowing (level {line.borrowing})" if line.borrowing else ""))
        parts += [f"borrowed: {quota_text(q)}" for q in line.quota]
    else:
        parts += [f"quota short: {quota_text(q)}" for q in line.quota]
        if line.targets:
            victims = ", ".join(f"{n} (ClusterQueue {cq}, {why})" for n, cq, why in line.targets)
            parts.append(f"victims: {victims}")
        if line.requeued == "inadmissible":
            parts.append("moved to the inadmissible set until quota is freed in its cohort tree")
        elif line.blocks:
            parts.append(f"stays the head (StrictFIFO), blocking the {line.blocks} workload(s) behind it")
    if line.woken:
        parts.append(f"woken from the inadmissible set: {line.woken}")
    return "; ".join(parts)


def _blocked_by(heads: list[AdmissionLine], start: float, end: float) -> list[AdmissionStep]:
    """The StrictFIFO heads that failed while this workload waited behind them (from `start`, its
    submission, to `end`, its first attempt), each with the span it blocked it."""
    first: dict[str, AdmissionLine] = {}
    admitted: dict[str, float] = {}
    for h in heads:
        if h.outcome == "Admitted":
            admitted.setdefault(h.workload, h.time)
        elif h.time < end:
            first.setdefault(h.workload, h)
    steps = []
    for name, h in first.items():
        until = min(admitted.get(name, end), end)
        if until > start:
            text = (f"waited behind the head {name} (StrictFIFO: a head that cannot be admitted keeps its "
                    f"place and blocks its ClusterQueue): {h.message}")  # fmt: skip
            step = AdmissionStep(
                time=max(h.time, start), until=until, workload=name, event="behind head", text=text
            )
            steps.append(step)
    return steps


def twin_story(name: str, own: list[AdmissionLine], heads: list[AdmissionLine]) -> list[AdmissionStep]:
    """One workload's steps from its admissions.jsonl lines."""
    steps: list[AdmissionStep] = []
    submitted = next((x for x in own if x.event == "submitted"), None)
    first = next((x.time for x in own if x.event == "attempt"), float("inf"))
    for x in own:
        if x.event == "submitted":
            text = (f"submitted to LocalQueue {x.queue} → ClusterQueue {x.cluster_queue} ({x.strategy}, "
                    f"priority {x.priority}): position {x.position} of {x.pending} pending")  # fmt: skip
            steps.append(AdmissionStep(time=x.time, workload=name, event="submitted", text=text))
            if x.strategy == "StrictFIFO":
                end = first if first != float("inf") else max((h.time for h in heads), default=x.time)
                steps += _blocked_by(heads, x.time, end)
        elif x.event == "attempt":
            event = "admitted" if x.outcome == "Admitted" else x.outcome
            steps.append(AdmissionStep(time=x.time, workload=name, event=event, text=attempt_text(x)))
        elif x.event == "repeated":
            woke = f"; woken {x.wakes} time(s), last: {x.woken}" if x.wakes else ""
            text = f"{x.count} more attempt(s) with the same outcome{woke}"
            steps.append(
                AdmissionStep(time=x.since, until=x.time, workload=name, event="repeated", text=text)
            )
        elif x.event == "evicted":
            steps.append(AdmissionStep(time=x.time, workload=name, event="evicted", text=x.message))
    if submitted is None and own:
        raise AnalysisError(f"{ADMISSIONS_FILE} has no submission of {name}: cut, or not this run's")
    return sorted(steps, key=lambda st: st.time)


def _rows(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def incarnations(rows: list[dict[str, str]], final: dict[str, str]) -> list[dict[str, str]]:
    """The job's pods.csv row, then those of the jobs it was resubmitted as after each eviction."""
    by_job: dict[str, dict[str, str]] = {}
    for r in rows:
        by_job.setdefault(r["job_id"], r)
    chain = [final]
    while (m := RESUBMITTED.search(chain[-1].get("reason", ""))) and m.group(1) in by_job:
        if len(chain) > len(by_job):
            break
        chain.append(by_job[m.group(1)])
    return chain


def workload_of(row: dict[str, str]) -> str:
    return row.get("group") or row["pod"]


def _queue_at(queues: list[dict[str, str]], cq: str, t: float) -> str:
    """The ClusterQueue's usage and pending count in queues.csv as of `t` (the last row at or before)."""
    last: dict[str, dict[str, str]] = {}
    for r in queues:
        if r["cluster_queue"] == cq and float(r["time"]) <= t:
            last[f"{r['resource']} in flavor {r['flavor']}"] = r
    if not last:
        return ""
    use = ", ".join(f"{k}: {r['usage']} of nominal {r['nominal']} in use (borrowed {r['borrowed']})"
                    for k, r in last.items())  # fmt: skip
    pending = next(iter(last.values()))["pending"]
    return f"; ClusterQueue {cq} then: {use}, {pending} pending (queues.csv)"


def csv_story(row: dict[str, str], queues: list[dict[str, str]]) -> list[AdmissionStep]:
    """What pods.csv and queues.csv say (a real-Kueue run, or a twin run without admissions.jsonl)."""
    name, cq = workload_of(row), row.get("cluster_queue", "")
    submit = float(row.get("submit_time") or 0)
    steps = [AdmissionStep(time=submit, workload=name, event="submitted",
                           text=f"submitted to LocalQueue {row.get('queue')} → ClusterQueue {cq}"
                                + _queue_at(queues, cq, submit))]  # fmt: skip
    if row.get("admitted_at"):
        at = float(row["admitted_at"])
        steps.append(AdmissionStep(time=at, workload=name, event="admitted",
                                   text=f"admitted to ClusterQueue {cq}, flavor {row.get('flavor')}, after a "
                                        f"quota wait of {s(at - submit)} s"))  # fmt: skip
    if "by Kueue" in row.get("reason", ""):
        end = row.get("finish_time") or row.get("admitted_at") or submit
        steps.append(AdmissionStep(time=float(end), workload=name, event="evicted", text=row["reason"]))
    return steps


def admission_story(run_dir: Path, final: dict[str, str] | None) -> tuple[list[AdmissionStep], str]:
    """The job's admission steps across its incarnations, and where they come from ("" without Kueue)."""
    if not final or not final.get("cluster_queue"):
        return [], ""
    chain = incarnations(_rows(run_dir / "pods.csv"), final)
    path = run_dir / ADMISSIONS_FILE
    steps: list[AdmissionStep] = []
    if path.exists():
        names = {workload_of(r) for r in chain}
        own, heads = read_lines(path, names, {r["cluster_queue"] for r in chain if r.get("cluster_queue")})
        for r in chain:
            name = workload_of(r)
            mine = [x for x in own if x.workload == name]
            steps += twin_story(name, mine, [h for h in heads if h.cluster_queue == r.get("cluster_queue")])
            steps += _resubmission(r)
        return steps, ADMISSIONS_FILE
    queues = _rows(run_dir / QUEUES_FILE)
    for r in chain:
        steps += csv_story(r, queues) + _resubmission(r)
    return steps, "pods.csv, queues.csv"


def _resubmission(row: dict[str, str]) -> list[AdmissionStep]:
    m = RESUBMITTED.search(row.get("reason", ""))
    if m is None:
        return []
    t = float(row.get("finish_time") or 0)
    return [AdmissionStep(time=t, workload=workload_of(row), event="resubmitted",
                          text=f"its job was killed and resubmitted as {m.group(1)}")]  # fmt: skip
