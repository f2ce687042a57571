"""Cluster fragmentation: free cores that no pending pod group can use.

Gang scheduling leaves cores idle on purpose: a group waits until it fits whole, and cores freed in the
meantime may be too few, or too scattered, for any waiting group. At each instant of the run:

- a node's free cores are its cpu minus the cpu requests of the pods bound to it (from their binding to
  their end; a group's pods from the group's binding, `bind_time`);
- a pending group (submitted, not yet bound; groups that were never bound are left out) *can use* the
  free cores if it fits whole: the sum over nodes of floor(free cores / its pods' cpu request) is at
  least its size. It can then use every node with room for one of its pods;
- the fragmented cores are the free cores on nodes that no pending group can use; none while no group
  is pending (idle cores nobody waits for are not fragmentation).

Only cpu is counted (memory, taints, affinities and topology constraints are not). Reported over
[first submission, makespan]: `fragmented_core_seconds`, `mean_fragmented_cores` (the same over the
span) and `fragmentation` (fragmented over free core-seconds while some group was pending; None if no
group ever waited).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from kubernetes import client

from batkube_py import quantities

KEYS = ("fragmented_core_seconds", "mean_fragmented_cores", "fragmentation")


def fragmentation(
    node_cpu: np.ndarray,
    pods: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    groups: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    t0: float,
    t1: float,
) -> dict[str, float | None]:
    """`pods`: (node index, cpu, bind time, end time) of bound pods; `groups`: (submit time, bind time,
    size, cpu per pod) of bound groups; cpu in cores."""
    milli = np.rint(np.asarray(node_cpu, dtype=float) * 1000).astype(np.int64)
    p_node, p_cpu, p_on, p_off = (np.asarray(a) for a in pods)
    g_sub, g_bind, g_size, g_cpu = (np.asarray(a) for a in groups)
    p_milli = np.rint(p_cpu.astype(float) * 1000).astype(np.int64)
    g_milli = np.rint(g_cpu.astype(float) * 1000).astype(np.int64)
    waited = g_bind > g_sub
    g_sub, g_bind, g_size, g_milli = g_sub[waited], g_bind[waited], g_size[waited], g_milli[waited]
    span = t1 - t0
    if span <= 0 or not g_sub.size:
        return {"fragmented_core_seconds": 0.0, "mean_fragmented_cores": 0.0 if span > 0 else None,
                "fragmentation": None}  # fmt: skip
    # usage changes, ordered by time
    ev_t = np.concatenate((p_on, p_off)).astype(float)
    ev_node = np.concatenate((p_node, p_node)).astype(np.int64)
    ev_d = np.concatenate((p_milli, -p_milli))
    order = np.argsort(ev_t, kind="stable")
    ev_t, ev_node, ev_d = ev_t[order], ev_node[order], ev_d[order]
    times = np.unique(np.concatenate((ev_t, g_sub, g_bind, [t0, t1])))
    times = times[(times >= t0) & (times <= t1)]
    pending = np.searchsorted(np.sort(g_sub), times, "right") - np.searchsorted(
        np.sort(g_bind), times, "right"
    )
    used = np.zeros(milli.size, dtype=np.int64)
    applied = 0
    frag = free_while_pending = 0.0
    for k in np.flatnonzero(pending[:-1] > 0).tolist():
        t, dt = times[k], times[k + 1] - times[k]
        upto = int(np.searchsorted(ev_t, t, side="right"))
        if upto > applied:
            np.add.at(used, ev_node[applied:upto], ev_d[applied:upto])
            applied = upto
        waiting = (g_sub <= t) & (g_bind > t)
        free = np.maximum(milli - used, 0)
        usable = np.zeros(milli.size, dtype=bool)
        for size, cpu in zip(g_size[waiting].tolist(), g_milli[waiting].tolist(), strict=True):
            if cpu <= 0 or (free // cpu).sum() >= size:
                usable |= free >= cpu
        total = int(free.sum())
        free_while_pending += total * dt
        frag += (total - int(free[usable].sum())) * dt
    frag /= 1000.0
    return {
        "fragmented_core_seconds": float(frag),
        "mean_fragmented_cores": float(frag / span),
        "fragmentation": float(frag / (free_while_pending / 1000.0)) if free_while_pending > 0 else None,
    }


def from_frames(pods, nodes) -> dict[str, float | None]:
    """From pods.csv and nodes.csv (analysis/loading.py's frames)."""
    index = {name: i for i, name in enumerate(nodes["node"].astype(str))}
    submit = pods["submit_time"].astype(float)
    t0 = float(submit.min()) if len(pods) else 0.0
    t1 = float(pods["finish_time"].astype(float).max()) if len(pods) else 0.0
    bound = pods[pods["bind_time"].notna() & pods["node"].astype(str).isin(index.keys())]
    end = bound["finish_time"].astype(float).fillna(t1)
    placed = (
        bound["node"].astype(str).map(index).to_numpy(),
        bound["cpu_request"].to_numpy(dtype=float),
        bound["bind_time"].to_numpy(dtype=float),
        end.to_numpy(dtype=float),
    )
    grouped = pods[(pods["group"].fillna("").astype(str) != "") & pods["bind_time"].notna()]
    jobs = grouped.drop_duplicates("job_id")
    waiting = (
        jobs["submit_time"].to_numpy(dtype=float),
        jobs["bind_time"].to_numpy(dtype=float),
        jobs["group_size"].to_numpy(dtype=np.int64),
        jobs["cpu_request"].to_numpy(dtype=float),
    )
    return fragmentation(nodes["cpu"].to_numpy(dtype=float), placed, waiting, t0, t1)


def node_cores(nodes: Iterable[client.V1Node]) -> dict[str, float]:
    """Each node's allocatable cores, by name."""
    return {n.metadata.name: quantities.milli_cpu(n.status.allocatable["cpu"]) / 1000 for n in nodes}


def from_records(records: Iterable, node_cpu: dict[str, float]) -> dict[str, float | None]:
    """From the run's pod records (outputs.PodRecord), for summary.json."""
    recs = list(records)
    if not any(r.group for r in recs):
        return fragmentation(np.zeros(0), (np.zeros(0),) * 4, (np.zeros(0),) * 4, 0.0, 1.0)
    index = {name: i for i, name in enumerate(node_cpu)}
    submits = [float(r.submit_time) for r in recs if r.submit_time != ""]
    ends = [float(r.finish_time) for r in recs if r.finish_time != ""]
    t0, t1 = (min(submits), max(ends)) if submits and ends else (0.0, 0.0)
    placed: list[tuple[int, float, float, float]] = []
    waiting: list[tuple[float, float, int, float]] = []
    for r in recs:
        if r.bind_time == "":
            continue
        on, off = float(r.bind_time), float(r.finish_time) if r.finish_time != "" else t1
        nodes = [node for _, node, _ in r.members] if r.members else [r.node]
        placed.extend((index[n], r.cpu_request, on, off) for n in nodes if n in index)
        if r.group:
            waiting.append((float(r.submit_time), on, r.group_size, r.cpu_request))
    pods = tuple(np.array(col) for col in zip(*placed, strict=True)) if placed else (np.zeros(0),) * 4
    groups = tuple(np.array(col) for col in zip(*waiting, strict=True)) if waiting else (np.zeros(0),) * 4
    return fragmentation(np.array(list(node_cpu.values()), dtype=float), pods, groups, t0, t1)
