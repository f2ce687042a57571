"""Job by job, two runs of one workload with queues: the real Kueue + kube-scheduler against the twins.

Each pod row of pods.csv (a job's attempt: `w0!j`, then `w0!j#r1` after an eviction) is compared on
what Kueue and kube-scheduler decide: the admission instant, the ClusterQueue, the flavor, the node,
the start and the final state; each job on its evictions (how many, and when). Every difference is a
Mismatch. One kind of difference is upstream's randomness, not the twin's error: among preemption
candidates of equal priority in the same ClusterQueue that reserved quota in the same second (the API
keeps condition times to the second), Kueue's last tie-break is the Workloads' random UIDs
(pkg/scheduler/preemption/common/ordering.go). When the first difference of the two runs is such a swap of
victims, it and every difference after it are marked as following that tie.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

# the column whose instant a difference of each field shows at (on either side, the earlier)
WHEN = {"admitted_at": "admitted_at", "start_time": "start_time", "cluster_queue": "admitted_at",
        "flavor": "admitted_at", "node": "start_time", "state": "finish_time"}  # fmt: skip
FIELDS = ("admitted_at", "cluster_queue", "flavor", "node", "start_time", "state")
COLUMNS = ("job", "field", "real", "twin", "tie")


@dataclass
class Mismatch:
    job: str
    field: str
    real: str
    twin: str
    at: float  # the earliest instant the difference shows at
    tie: str = ""

    def row(self) -> dict[str, str]:
        return {"job": self.job, "field": self.field, "real": self.real, "twin": self.twin, "tie": self.tie}


def read_pods(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="") as f:
        return {r["job_id"]: r for r in csv.DictReader(f)}


def base_job(job_id: str) -> str:
    return job_id.split("#r", 1)[0]


def _num(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _same(a: str, b: str) -> bool:
    x, y = _num(a), _num(b)
    if x is not None and y is not None:
        return math.isclose(x, y, rel_tol=0, abs_tol=1e-6)
    return a == b


def _instant(col: str, *rows: dict[str, str] | None) -> float:
    """The earliest of the rows' `col`, else of their submissions (a resubmission's: its kill)."""
    for c in (col, "submit_time"):
        times = [t for r in rows if r and (t := _num(r[c])) is not None]
        if times:
            return min(times)
    return math.inf


def evictions(rows: dict[str, dict[str, str]]) -> dict[str, list[float]]:
    """Each job's evictions: the instants its running attempts were killed (Kueue's or kube-scheduler's
    preemptions, node failures)."""
    out: dict[str, list[float]] = {}
    for job_id, r in rows.items():
        out.setdefault(base_job(job_id), [])
        if r["state"] == "Killed" and (t := _num(r["finish_time"])) is not None:
            out[base_job(job_id)].append(t)
    return {j: sorted(ts) for j, ts in out.items()}


def compare(real: dict[str, dict[str, str]], twin: dict[str, dict[str, str]]) -> list[Mismatch]:
    out: list[Mismatch] = []
    for job_id in sorted(real.keys() | twin.keys(), key=lambda j: (base_job(j), j)):
        r, t = real.get(job_id), twin.get(job_id)
        if r is None or t is None:
            seen = ["" if x is None else "present" for x in (r, t)]
            out.append(Mismatch(job_id, "attempt", *seen, _instant("submit_time", r, t)))
            continue
        for f in FIELDS:
            if not _same(r[f], t[f]):
                out.append(Mismatch(job_id, f, r[f], t[f], _instant(WHEN[f], r, t)))
    ev_real, ev_twin = evictions(real), evictions(twin)
    for job in sorted(ev_real.keys() | ev_twin.keys()):
        a, b = ev_real.get(job, []), ev_twin.get(job, [])
        same = [math.isclose(x, y, abs_tol=1e-6) for x, y in zip(a, b, strict=False)]
        first = same.index(False) if False in same else (None if len(a) == len(b) else len(same))
        if first is not None:
            at = min(x[first] for x in (a, b) if first < len(x))
            out.append(Mismatch(job, "evictions", _instants(a), _instants(b), at))
    return out


def _killed(rows: dict[str, dict[str, str]]) -> set[tuple[float, str]]:
    return {(round(float(r["finish_time"]), 6), j) for j, r in rows.items() if r["state"] == "Killed"}


def _instants(ts: list[float]) -> str:
    return f"{len(ts)}" + (" at " + " ".join(f"{x:g}" for x in ts) if ts else "")


def victim_tie(real: dict[str, dict[str, str]], twin: dict[str, dict[str, str]], mismatches: list[Mismatch],
               priority_of: Callable[[dict[str, str]], int]) -> str:  # fmt: skip
    """If the runs first differ by a swap of Kueue's victims tied up to its random UID tie-break, the tie
    (one line), and every mismatch is marked as following it; else ""."""
    if not mismatches:
        return ""
    killed = {side: _killed(rows) for side, rows in (("real", real), ("twin", twin))}
    diff = killed["real"] ^ killed["twin"]
    if not diff:
        return ""
    t0 = min(t for t, _ in diff)
    # the victims were chosen in the step that admitted their preemptor, a few ms before Batsim killed them
    admissions = [_num(r["admitted_at"]) for rows in (real, twin) for r in rows.values()]
    chosen = max((a for a in admissions if a is not None and t0 - 1 <= a <= t0), default=t0)
    if min(m.at for m in mismatches) < chosen - 1e-6:
        return ""  # something differed before the victims did
    # the victims Batsim killed in the step that chose them (a few ms apart), on one side only
    step = {side: {j for t, j in k if t0 <= t < t0 + 0.5} for side, k in killed.items()}
    only_real, only_twin = sorted(step["real"] - step["twin"]), sorted(step["twin"] - step["real"])

    def key(rows: dict[str, dict[str, str]], job_id: str) -> tuple | None:
        r = rows.get(job_id)
        if r is None or _num(r["admitted_at"]) is None:
            return None
        # the reservation's second, as the API keeps it (Kueue's clock starts on a whole second)
        return r["cluster_queue"], priority_of(r), math.floor(float(r["admitted_at"]))

    # one victim each side, of one ClusterQueue and priority, reserved in one second: Kueue's choice
    # between them is its random UID; what else differs in that step follows from that choice
    shared = ({key(real, j) for j in only_real} & {key(twin, j) for j in only_twin}) - {None}
    if not shared:
        return ""
    cq, prio, second = min(shared)
    tie = (f"t={t0:g}: Kueue preempted {' '.join(only_real)}, the twin {' '.join(only_twin)}: equal "
           f"priority {prio} in ClusterQueue {cq}, quota reserved in the same second ({second} s): Kueue's "
           "last tie-break is the Workloads' random UIDs (docs/kueue.md)")  # fmt: skip
    for m in mismatches:
        m.tie = f"after the victim tie at t={t0:g}"
    return tie


def write(path: Path, mismatches: list[Mismatch]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(m.row() for m in mismatches)
