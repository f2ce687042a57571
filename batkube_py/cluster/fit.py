"""Whether a pod can ever run on the empty cluster, and if not, why, in words a user can act on.

Both backends reject at submission a pod that no node could ever take (labels and allocatable never
change during a run). The node labels its nodeSelector / required node affinity ask for are checked
first: a selector that matches no node is the reason, not the resource numbers of nodes it cannot use.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from kubernetes import client

from batkube_py import quantities
from batkube_py.scheduler.plugins.helpers import required_node_affinity
from batkube_py.scheduler.podinfo import pod_info
from batkube_py.scheduler.snapshot import NodeTable


def node_constraint(pod: client.V1Pod) -> str | None:
    """What the pod asks of node labels, as the user wrote it, or None."""
    spec = pod.spec
    parts = []
    if spec.node_selector:
        parts.append("nodeSelector " + ", ".join(f"{k}={v}" for k, v in sorted(spec.node_selector.items())))
    na = spec.affinity.node_affinity if spec.affinity is not None else None
    if na is not None and na.required_during_scheduling_ignored_during_execution is not None:
        parts.append("required node affinity")
    return " and ".join(parts) or None


def constraint_key(pod: client.V1Pod) -> tuple:
    """What, besides the requests, decides whether a pod fits the empty cluster (a cache key)."""
    spec = pod.spec
    na = spec.affinity.node_affinity if spec.affinity is not None else None
    required = na.required_during_scheduling_ignored_during_execution if na is not None else None
    return tuple(sorted((spec.node_selector or {}).items())), None if required is None else str(required)


def never_fits(
    pod: client.V1Pod,
    table: NodeTable,
    resources_fit: np.ndarray,
    rooms: Sequence[tuple[float, float, float]],
    extra: Sequence[str] = (),
) -> str | None:
    """None if some node both matches the pod's node constraints and holds its requests (`resources_fit`,
    per node of `table`; `rooms` as quantities.unfit_reason takes them), else the reason."""
    selected = required_node_affinity(pod_info(pod, "", 0.0, 0), table)
    what = node_constraint(pod)
    if selected is not None and not selected.any():
        return f"its {what} matches no node (no node has those labels)"
    ok = resources_fit if selected is None else resources_fit & selected
    if len(table) and ok.any():
        return None
    cpu, mem = quantities.pod_requests(pod)
    if selected is None:
        return quantities.unfit_reason(cpu, mem, rooms, extra)
    chosen = [room for room, s in zip(rooms, selected.tolist(), strict=True) if s]
    n = len(chosen)
    return f"{quantities.unfit_reason(cpu, mem, chosen, extra)} (among the {n} node(s) its {what} matches)"
