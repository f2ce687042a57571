"""The Kueue parity suite's cases: one Kueue feature each, on 16 one-core nodes, run on the real Kueue
v0.17.0 + kube-scheduler 1.37.2 and on the twins (`batkube parity --queues`), which must agree job by job.

A case is one entry of CASES: its Kueue objects (kueue_support's builders), its jobs (id, subtime, queue,
cpu, delay, and optionally priority_class) and `shows`: what the case must exercise, checked on the
twin's pods.csv so a case cannot pass by testing nothing. Jobs whose victims could tie in Kueue's
candidate order (equal priority, quota reserved in the same second: the random-UID tie, docs/kueue.md)
are spaced so that they do not: every case is strict.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kueue_support import cohort, cq, flavor, lq, wpc, write

ROOT = Path(__file__).resolve().parents[1]
C16 = ROOT / "platforms" / "cluster_16x1core.xml"

Rows = dict[str, dict[str, str]]  # pods.csv by job name (`j` of `w0!j`)


@dataclass
class KueueCase:
    name: str
    objects: list[dict]
    jobs: list[dict]
    shows: Callable[[Rows], bool]  # the feature happened (on the twin's pods.csv)
    platform: Path = C16

    def write(self, d: Path) -> tuple[Path, Path, Path]:
        d.mkdir(parents=True, exist_ok=True)
        profiles, jobs = {}, []
        for j in self.jobs:
            cpu, delay = j.get("cpu", "1"), j.get("delay", 100)
            key = f"d{delay}c{cpu}"
            profiles[key] = {"type": "delay", "delay": float(delay), "cpu": cpu}
            rest = {k: v for k, v in j.items() if k not in ("cpu", "delay")}
            jobs.append({"res": 1, **rest, "profile": key})
        (d / "w.json").write_text(json.dumps({"nb_res": 16, "jobs": jobs, "profiles": profiles}))
        return self.platform, d / "w.json", write(d, self.objects)


def job(id: str, t: float, queue: str, cpu: str = "1", delay: float = 100, pc: str | None = None) -> dict:
    return {"id": id, "subtime": t, "queue": queue, "cpu": cpu, "delay": delay,
            **({"priority_class": pc} if pc else {})}  # fmt: skip


def at(rows: Rows, j: str, col: str = "admitted_at") -> float:
    return float(rows[j][col])


def killed(rows: Rows) -> set[str]:
    return {j for j, r in rows.items() if r["state"] == "Killed"}


def one_cq(strategy: str = "BestEffortFIFO", cpu: str | int = 2, **spec) -> list[dict]:
    return [flavor("f"), cq("cq", {"f": {"cpu": cpu}}, queueingStrategy=strategy, **spec), lq("q", "cq")]


def two_teams(a: dict, b: dict, **spec) -> list[dict]:
    """ClusterQueues team-a and team-b in cohort co, quotas on flavor f; LocalQueues a and b."""
    return [flavor("f"), cohort("co"), cq("team-a", {"f": {"cpu": a}}, "co", **spec),
            cq("team-b", {"f": {"cpu": b}}, "co", **spec), lq("a", "team-a"), lq("b", "team-b")]  # fmt: skip


PRIORITIES = [wpc("low", 10), wpc("high", 1000)]
# a 1-cpu job that does not fit 500m of room blocks (StrictFIFO) or is passed by the 500m one behind it
HEAD = [job("a", 0, "q", delay=60), job("b", 1, "q"), job("c", 2.5, "q", cpu="500m", delay=30)]


def _multi_tenant(
    seed: int = 7, n: int = 40, gaps=(1.5, 2.5, 3.5, 4.5), burst: float | None = None
) -> list[dict]:
    """Three teams, one-core and half-core jobs, some urgent, arrivals `gaps` apart (1.5-4.5 s: no two
    reservations of the same second among the victims' candidates); with `burst`, that share of the jobs
    arrives with the one before."""
    rng = random.Random(seed)
    t, out = 0.0, []
    for i in range(n):
        if burst is None or rng.random() > burst:
            t += rng.choice(gaps)
        team = rng.choice("abc")
        pc = "high" if rng.random() < 0.2 else "low"
        out.append(job(f"{team}{i}", round(t, 1), team, rng.choice(("1", "500m")), rng.choice((20, 45, 80)),
                       pc))  # fmt: skip
    return out


MULTI_TENANT = [
    flavor("f"), *PRIORITIES, cohort("org"),
    cq("team-a", {"f": {"cpu": {"nominalQuota": 4, "borrowingLimit": 2}}}, "org",
       preemption={"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}),
    cq("team-b", {"f": {"cpu": {"nominalQuota": 4, "lendingLimit": 2}}}, "org",
       preemption={"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "LowerPriority",
                   "borrowWithinCohort": {"policy": "LowerPriority"}}),
    cq("team-c", {"f": {"cpu": 4}}, "org", queueingStrategy="StrictFIFO",
       preemption={"reclaimWithinCohort": "Any"}),
    lq("a", "team-a"), lq("b", "team-b"), lq("c", "team-c"),
]  # fmt: skip


CASES = [
    KueueCase(
        "quota-fifo",  # 3 cores, 7 jobs in two bursts: admitted in submission order as quota frees
        one_cq(cpu=3),
        [job(f"j{i}", 0 if i < 4 else 5, "q", delay=40 + 10 * i) for i in range(7)],
        lambda r: at(r, "j0", "finish_time") <= at(r, "j3") < 41 and at(r, "j4") > at(r, "j3"),
    ),
    KueueCase(
        "strict-fifo-head-blocks",  # b needs 1 core, 500m free: c, behind it, waits too
        one_cq("StrictFIFO", "1500m"),
        HEAD,
        lambda r: at(r, "c") >= at(r, "b") > 59,
    ),
    KueueCase(
        "best-effort-requeue",  # the same: c passes b; b comes back from the inadmissible set at 60
        one_cq("BestEffortFIFO", "1500m"),
        HEAD,
        lambda r: at(r, "c") < 3 and 59 < at(r, "b") < 61,
    ),
    KueueCase(
        "borrowing-lending-limits",  # a borrows at most 1 core; b lends at most 1 of its 3
        [flavor("f"), cohort("co"),
         cq("team-a", {"f": {"cpu": {"nominalQuota": 2, "borrowingLimit": 2}}}, "co"),
         cq("team-b", {"f": {"cpu": {"nominalQuota": 3, "lendingLimit": 1}}}, "co"),
         lq("a", "team-a"), lq("b", "team-b")],
        [*(job(f"a{i}", i * 1.5, "a", delay=50 + i) for i in range(5)), job("b0", 10, "b", delay=30)],
        lambda r: at(r, "a2") < 4 and at(r, "a3") > 49,
    ),  # fmt: skip
    KueueCase(
        "hierarchical-cohort",  # dept holds 2 cores of its own for its teams; team-x borrows through it
        [flavor("f"), cohort("org"),
         cohort("dept", "org", resourceGroups=[{"coveredResources": ["cpu"],
                "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": 2}]}]}]),
         cq("team-x", {"f": {"cpu": 1}}, "dept"), cq("team-y", {"f": {"cpu": 1}}, "org"),
         lq("x", "team-x"), lq("y", "team-y")],
        [*(job(f"x{i}", i * 1.5, "x", delay=40 + 5 * i) for i in range(5)), job("y0", 2, "y", delay=20),
         job("y1", 3.5, "y", delay=20)],
        lambda r: at(r, "x2") < 4 and at(r, "x3") > 39,
    ),  # fmt: skip
    KueueCase(
        "preempt-lower-priority",  # urgent h preempts the newest low job, which runs again later
        [*PRIORITIES, *one_cq(cpu=2, preemption={"withinClusterQueue": "LowerPriority"})],
        [job("l0", 0, "q", pc="low"), job("l1", 1.5, "q", pc="low"), job("h", 10, "q", pc="high")],
        lambda r: killed(r) == {"l1"} and 10 <= at(r, "h") < 11,
    ),
    KueueCase(
        "preempt-lower-or-newer-equal",  # b, older, preempts s, newer and of the same priority
        one_cq(cpu=2, preemption={"withinClusterQueue": "LowerOrNewerEqualPriority"}),
        [job("x", 0, "q", cpu="500m", delay=30), job("y", 0, "q", cpu="500m", delay=200),
         job("z", 0, "q", cpu="500m", delay=200), job("b", 1, "q"),
         job("s", 2.5, "q", cpu="500m", delay=200)],
        lambda r: killed(r) == {"s"} and 29 < at(r, "b") < 31,
    ),  # fmt: skip
    KueueCase(
        "reclaim-within-cohort",  # a borrows b's idle cores; b's jobs reclaim them, newest borrower first
        two_teams(2, 2, preemption={"reclaimWithinCohort": "Any"}),
        [*(job(f"a{i}", i * 1.5, "a", delay=100) for i in range(4)), job("b0", 20, "b"),
         job("b1", 21.5, "b")],
        lambda r: killed(r) == {"a2", "a3"} and at(r, "b0") < 21,
    ),  # fmt: skip
    KueueCase(
        # one cycle admits a1 and b2 (borrowing a's last core), the next reclaims b2 for a2 while b2's
        # admission is still being written: the race the real backend's serial admissions remove
        "reclaim-just-admitted",
        two_teams(2, 2, preemption={"reclaimWithinCohort": "Any"}),
        [job("b0", 0, "b", delay=200), job("b1", 0, "b", delay=200), job("a1", 10, "a"),
         job("b2", 10, "b"), job("a2", 10, "a")],
        lambda r: at(r, "a2") < 11 and at(r, "b2") > 100 and "restarted" in r["b2"]["reason"],
    ),  # fmt: skip
    KueueCase(
        "borrow-within-cohort",  # a, at its nominal, borrows by preempting c's lower-priority borrower
        [flavor("f"), *PRIORITIES, cohort("co"),
         cq("team-a", {"f": {"cpu": 1}}, "co", preemption={
             "reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "LowerPriority"}}),
         cq("team-b", {"f": {"cpu": 1}}, "co"), cq("team-c", {"f": {"cpu": 2}}, "co"),
         lq("a", "team-a"), lq("b", "team-b"), lq("c", "team-c")],
        [job("a0", 0, "a", pc="low"), *(job(f"b{i}", 1.5 * (i + 1), "b", pc="low") for i in range(3)),
         job("ah", 10, "a", pc="high")],
        lambda r: killed(r) == {"b2"} and 10 <= at(r, "ah") < 11,
    ),  # fmt: skip
    KueueCase(
        "priority-classes",  # quota frees at 60: the high job, submitted last, goes first
        [*PRIORITIES, *one_cq(cpu=1)],
        [job("r", 0, "q", delay=60), job("lo", 1, "q", pc="low", delay=20), job("mid", 2, "q", delay=20),
         job("hi", 3, "q", pc="high", delay=20)],
        lambda r: at(r, "hi") < at(r, "lo") < at(r, "mid"),
    ),  # fmt: skip
    KueueCase(
        "flavor-fungibility",  # f1 full: jobs go to f2; after that the next one goes back to f1
        [flavor("f1"), flavor("f2"),
         cq("cq", {"f1": {"cpu": 2}, "f2": {"cpu": 3}}), lq("q", "cq")],
        [*(job(f"j{i}", i * 1.5, "q", delay=30 + 10 * i) for i in range(6)), job("late", 40, "q")],
        lambda r: [r[f"j{i}"]["flavor"] for i in range(6)][:5] == ["f1", "f1", "f2", "f2", "f2"]
        and r["late"]["flavor"] == "f1",
    ),  # fmt: skip
    KueueCase(
        "preempted-pod-requeued",  # x's Workload, queued again while x stops, preempts the newer y on f2
        [flavor("f1"), flavor("f2"), *PRIORITIES,
         cq("cq", {"f1": {"cpu": 1}, "f2": {"cpu": 1}},
            preemption={"withinClusterQueue": "LowerOrNewerEqualPriority"}), lq("q", "cq")],
        [job("x", 0, "q", pc="low"), job("y", 1.5, "q", pc="low"), job("h", 10, "q", pc="high")],
        lambda r: killed(r) == {"x", "y"} and r["h"]["flavor"] == "f1",
    ),  # fmt: skip
    KueueCase(
        # at 10 one cycle admits yb by borrowing x0's freed half core (xa, ahead of it, does not fit), the
        # next reclaims it for xb; yb's pod was ungated meanwhile, so it is stopped and comes back as a new
        # Workload behind yc (evicted while still gated, the same Workload would keep its place ahead of
        # yc): the race the real backend's serial admissions remove by waiting for Kueue's pod reconciler
        "reclaimed-before-start-requeued",
        two_teams("1500m", 1, preemption={"reclaimWithinCohort": "Any"}),
        [job("x1", 0, "a"), job("x0", 0, "a", cpu="500m", delay=10), job("y0", 0, "b", cpu="500m", delay=20),
         job("y1", 0, "b", cpu="500m"), job("xa", 1, "a"), job("xb", 2, "a", cpu="500m"),
         job("yb", 3, "b", cpu="500m"), job("yc", 5, "b", cpu="500m")],
        lambda r: 10 <= at(r, "xb") < 11 and "restarted" in r["yb"]["reason"] and 20 <= at(r, "yc") < 21
        and at(r, "yb") > 99,
    ),  # fmt: skip
    KueueCase(
        "flavor-preempt-before-next",  # whenCanPreempt MayStopSearch: h preempts in f1 though f2 is free
        [flavor("f1"), flavor("f2"), *PRIORITIES,
         cq("cq", {"f1": {"cpu": 1}, "f2": {"cpu": 1}}, preemption={"withinClusterQueue": "LowerPriority"},
            flavorFungibility={"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"}),
         lq("q", "cq")],
        [job("l0", 0, "q", pc="low"), job("h", 5, "q", pc="high")],
        lambda r: killed(r) == {"l0"} and r["h"]["flavor"] == "f1",
    ),  # fmt: skip
]

HIERARCHICAL = [
    flavor("f"), *PRIORITIES, cohort("org"), cohort("d1", "org"), cohort("d2", "org"),
    cq("team-a", {"f": {"cpu": 3}}, "d1",
       preemption={"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}),
    cq("team-b", {"f": {"cpu": {"nominalQuota": 3, "lendingLimit": 2}}}, "d1",
       preemption={"reclaimWithinCohort": "Any"}),
    cq("team-c", {"f": {"cpu": 4}}, "d2", queueingStrategy="StrictFIFO",
       preemption={"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "LowerPriority",
                   "borrowWithinCohort": {"policy": "LowerPriority"}}),
    lq("a", "team-a"), lq("b", "team-b"), lq("c", "team-c"),
]  # fmt: skip

CASES.append(
    KueueCase(
        # 45 jobs in bursts on two sub-cohorts: workloads admitted and reclaimed in consecutive cycles of
        # one step, whose real runs differed from each other and from the twin until the next cycle waited
        # for Kueue's controllers after each admission and each preemption (docs/kueue.md)
        "hierarchical-multi-tenant",
        HIERARCHICAL,
        _multi_tenant(1, 45, (0.5, 1.0, 2.5, 4.0), burst=0.3),
        lambda r: "restarted" in r["c17"]["reason"] and 39 < at(r, "b16") < 40 and len(killed(r)) >= 5,
    )
)

MULTI = KueueCase(
    "multi-tenant",  # quotas, borrowing and lending limits, three preemption policies, 40 jobs
    MULTI_TENANT,
    _multi_tenant(),
    lambda r: bool(killed(r)) and any(x["cluster_queue"] == "team-a" for x in r.values()),
)


def cases() -> dict[str, KueueCase]:
    return {c.name: c for c in CASES}
