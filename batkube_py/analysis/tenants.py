"""Waits per tenant (Kueue LocalQueue and ClusterQueue) and Jain's fairness index across tenants.

A run without Kueue has no queue columns, yet "which user waited" is the question a comparison with it
asks; so a job's tenants come from the workload it ran (each job's `queue`, or the workload's top-level
`queue`) and the queues file (each LocalQueue's ClusterQueue), the way `batkube run --queues` assigns
them, or else from a Kueue run's own pods.csv. Either way every run of a comparison is cut the same way.

Jain's index of x_1..x_n is (sum x)^2 / (n sum x^2): 1 when every tenant fares the same, 1/n when one
tenant takes all the waiting. It is taken over the tenants' mean waits and over their mean bounded
slowdowns (tenants with at least one started job; an index of all-zero waits is 1).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from batkube_py.analysis import metrics as m
from batkube_py.analysis.loading import AnalysisError
from batkube_py.inputs.queues import QueuesError, load_queues

LEVELS = ("cluster_queue", "queue")  # ClusterQueues first: fewer rows, the coarser question
PATTERN = (r"^(jain_(mean_waiting_time|mean_bounded_slowdown)|worst_mean_waiting_time)"
           r"\[(queue|cluster_queue)\]$")
PER_TENANT = r"^(mean|max)_waiting_time\[(queue|cluster_queue)=[^\]]+\]$"


def _bare(ids: pd.Series) -> pd.Series:
    return ids.astype(str).str.rsplit("!", n=1).str[-1]


def from_inputs(workload: Path, queues: Path | None) -> pd.DataFrame:
    """job id → queue, cluster_queue ("" when unknown), from the run's workload and queues file."""
    try:
        doc = json.loads(Path(workload).read_text(encoding="utf-8"))
        default = doc.get("queue")
        jobs = doc["jobs"]
        rows = {str(j["id"]): j.get("queue", default) for j in jobs}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise AnalysisError(f"{workload}: not a workload whose jobs name their queue ({exc})") from None
    table = pd.DataFrame({"queue": pd.Series(rows, dtype=object).fillna("")})
    table["cluster_queue"] = ""
    if queues is not None:
        try:
            local = load_queues(Path(queues)).local_queues
        except QueuesError as exc:
            raise AnalysisError(str(exc)) from None
        table["cluster_queue"] = table["queue"].map({n: lq.spec.cluster_queue for n, lq in local.items()})
        table["cluster_queue"] = table["cluster_queue"].fillna("")
    return table


def from_pods(pods: pd.DataFrame | None) -> pd.DataFrame | None:
    """The same table from a Kueue run's pods.csv (its queue columns), or None without them."""
    if pods is None or "queue" not in pods.columns or not pods["queue"].fillna("").astype(str).any():
        return None
    first = pods.drop_duplicates("job_id")
    table = pd.DataFrame({lvl: first[lvl].fillna("").astype(str).to_numpy() for lvl in LEVELS},
                         index=_bare(first["job_id"]).to_numpy())  # fmt: skip
    return table[["queue", "cluster_queue"]]


def jain(values: np.ndarray) -> float | None:
    values = np.asarray(values, dtype=float)
    if len(values) == 0:
        return None
    square = float((values**2).sum())
    return 1.0 if square == 0 else float(values.sum() ** 2 / (len(values) * square))


def tenant_metrics(jobs: pd.DataFrame, tenancy: pd.DataFrame, bsld_tau: float = 10.0) -> dict[str, float]:
    """Per ClusterQueue and per LocalQueue mean and max wait, Jain's indices and the worst mean wait."""
    started = jobs[jobs["starting_time"].notna() & (jobs["state"] != "rejected")]
    ids = _bare(started["job_id"])
    bsld = np.maximum(1.0, started["turnaround_time"] / np.maximum(started["execution_time"], bsld_tau))
    frame = pd.DataFrame({"wait": started["waiting_time"].to_numpy(), "bsld": bsld.to_numpy()})
    out: dict[str, float] = {}
    for level in LEVELS:
        frame["tenant"] = ids.map(tenancy[level]).fillna("").to_numpy() if level in tenancy else ""
        known = frame[frame["tenant"] != ""]
        if known.empty:
            continue
        per = known.groupby("tenant").agg(mean=("wait", "mean"), max=("wait", "max"), bsld=("bsld", "mean"))
        per = per.loc[sorted(per.index, key=m.natural_key)]
        out[f"jain_mean_waiting_time[{level}]"] = jain(per["mean"].to_numpy())  # type: ignore[assignment]
        out[f"jain_mean_bounded_slowdown[{level}]"] = jain(per["bsld"].to_numpy())  # type: ignore[assignment]
        out[f"worst_mean_waiting_time[{level}]"] = float(per["mean"].max())
        for tenant, row in per.iterrows():
            out[f"mean_waiting_time[{level}={tenant}]"] = float(row["mean"])
            out[f"max_waiting_time[{level}={tenant}]"] = float(row["max"])
    return out


def keys(metrics: list[dict]) -> tuple[str, ...]:
    """The tenant metrics some run has, in one order for every table: summary rows, then each tenant."""
    found = dict.fromkeys(k for mt in metrics for k in mt if "[" in k and k.split("[")[0] in _NAMES)
    summary = [k for k in found if "=" not in k]
    per = sorted((k for k in found if "=" in k), key=_tenant_order)
    return tuple(summary + per)


def _tenant_order(key: str) -> tuple:
    """ClusterQueues before LocalQueues, tenants in natural order, each one's mean wait before its max."""
    name, _, rest = key.partition("[")
    level, _, tenant = rest.rstrip("]").partition("=")
    return LEVELS.index(level), m.natural_key(tenant), not name.startswith("mean")


_NAMES = {"jain_mean_waiting_time", "jain_mean_bounded_slowdown", "worst_mean_waiting_time",
          "mean_waiting_time", "max_waiting_time"}  # fmt: skip
