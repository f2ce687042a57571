"""SWF's own fields as Kueue queues: `swf-tools convert --queue-from user|group|queue|partition`.

Each distinct value of the field (SWF's user id, group id, queue number or partition number) becomes a
LocalQueue its jobs name with `queue`, in front of a ClusterQueue per distinct value of
`--cluster-queue-from` (by default the same field); every ClusterQueue is in one cohort, so an idle queue's
quota can be borrowed. Quotas follow one stated rule (QUOTA_RULE), so that a file is reproducible from
the trace and the platform's size, not hand-tuned.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

# --queue-from choice → SWF column (swf.FIELDS) and the prefix of the Kubernetes names it gives
SOURCES = {"user": "uid", "group": "gid", "queue": "queue", "partition": "partition"}
STRATEGIES = ("BestEffortFIFO", "StrictFIFO")
COHORT = "swf"
FLAVOR = "default-flavor"
QUOTA_RULE = (
    "each ClusterQueue's nominal cpu quota is the platform's cores split in proportion to its jobs' share "
    "of the converted trace's core-seconds (cpu x pods x run time), rounded down, at least 1 core; the "
    "cores left over go one each to the largest remainders, so the quotas add up to the platform's cores "
    "(more only by what the 1-core floor adds); every ClusterQueue may borrow the cohort's idle quota, "
    "with no borrowing or lending limit and no preemption (Kueue's defaults)"
)
FAIR_SHARING_RULE = (
    "Kueue's fair sharing on (Configuration.fairSharing, preemption strategies LessThanOrEqualToFinalShare "
    "then LessThanInitialShare), every ClusterQueue of weight 1 with reclaimWithinCohort: Any, so a "
    "ClusterQueue below its share takes back its quota from the borrowers above theirs"
)
FAIR_SHARING_STRATEGIES = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")


def names(jobs: pd.DataFrame, source: str) -> np.ndarray:
    """`user-3`, `group-1`, ... per job: valid Kubernetes names; a missing value (-1) is `user-none`."""
    values = jobs[SOURCES[source]].to_numpy()
    return np.array([f"{source}-{int(v)}" if v >= 0 else f"{source}-none" for v in values], dtype=object)


@dataclass
class QueuePlan:
    """The LocalQueue of each kept job and the ClusterQueues with their quotas."""

    strategy: str
    cores: int
    job_queues: list[str]  # aligned with the converted jobs
    local_queues: dict[str, str]  # LocalQueue -> ClusterQueue
    core_seconds: dict[str, float]  # ClusterQueue -> its jobs' core-seconds
    quotas: dict[str, int] = field(default_factory=dict)
    split: list[str] = field(default_factory=list)  # values whose jobs span several ClusterQueues
    fair_sharing: bool = False  # FAIR_SHARING_RULE


def plan(queue_names: np.ndarray, cq_names: np.ndarray, core_seconds: np.ndarray, cores: int,
         strategy: str, fair_sharing: bool = False) -> QueuePlan:  # fmt: skip
    """LocalQueues per value; a value whose jobs fall in several ClusterQueues (a user of two groups)
    gets one LocalQueue per ClusterQueue, named `<value>-<cluster queue>`, and is listed in `split`."""
    pairs = pd.DataFrame({"lq": queue_names, "cq": cq_names})
    spans = pairs.drop_duplicates().groupby("lq")["cq"].nunique()
    split = sorted(spans[spans > 1].index)
    lq = np.where(pairs["lq"].isin(split), pairs["lq"] + "-" + pairs["cq"], pairs["lq"])
    local = dict(sorted(zip(lq.tolist(), pairs["cq"].tolist(), strict=True)))
    used = pd.Series(core_seconds, dtype=float).groupby(cq_names).sum()
    result = QueuePlan(strategy, cores, lq.tolist(), local, {str(k): float(v) for k, v in used.items()},
                       split=split, fair_sharing=fair_sharing)  # fmt: skip
    result.quotas = quotas(result.core_seconds, cores)
    return result


def quotas(core_seconds: dict[str, float], cores: int) -> dict[str, int]:
    """QUOTA_RULE: largest remainders over the core-second shares, at least one core each."""
    keys = sorted(core_seconds)
    used = np.array([core_seconds[k] for k in keys], dtype=float)
    total = used.sum()
    share = used / total * cores if total > 0 else np.full(len(keys), cores / len(keys))
    base = np.maximum(np.floor(share + 1e-9), 1).astype(np.int64)
    left = cores - int(base.sum())
    if left > 0:
        remainder = share - np.floor(share + 1e-9)
        order = sorted(range(len(keys)), key=lambda i: (-remainder[i], keys[i]))
        for i in order[:left]:
            base[i] += 1
    return {k: int(q) for k, q in zip(keys, base, strict=True)}


def _document(kind: str, name: str, spec: Sequence[str]) -> list[str]:
    head = ["---", "apiVersion: kueue.x-k8s.io/v1beta2", f"kind: {kind}", f"metadata: {{name: {name}}}"]
    return head + list(spec)


def render(queue_plan: QueuePlan, header: Sequence[str]) -> str:
    """The queues file: Kueue v1beta2 objects for `batkube run --queues`, the rule in its header."""
    lines = [f"# {h}" if h else "#" for h in header]
    lines += _document("ResourceFlavor", FLAVOR, [])
    lines += _document("Cohort", COHORT, [])
    for cq, quota in queue_plan.quotas.items():
        lines += _document("ClusterQueue", cq, [
            f"# {queue_plan.core_seconds[cq]:.0f} core-seconds of the trace",
            "spec:", f"  cohortName: {COHORT}", "  namespaceSelector: {}",
            f"  queueingStrategy: {queue_plan.strategy}", "  resourceGroups:",
            "  - coveredResources: [cpu]", "    flavors:", f"    - name: {FLAVOR}", "      resources:",
            f"      - {{name: cpu, nominalQuota: {quota}}}",
            *(["  preemption: {reclaimWithinCohort: Any}"] if queue_plan.fair_sharing else []),
        ])  # fmt: skip
    for lq, cq in queue_plan.local_queues.items():
        lines += _document("LocalQueue", lq, [f"spec: {{clusterQueue: {cq}}}"])
    if queue_plan.fair_sharing:
        lines += ["---", "apiVersion: config.kueue.x-k8s.io/v1beta2", "kind: Configuration", "fairSharing:",
                  f"  preemptionStrategies: [{', '.join(FAIR_SHARING_STRATEGIES)}]"]  # fmt: skip
    return "\n".join(lines[:len(header)] + lines[len(header) + 1:]) + "\n"
