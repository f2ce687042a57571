"""Which kube-scheduler release the twin follows, and what differs between the two it knows.

"1.32" is kube-scheduler 1.32.6, the release the parity suite and the recorded transcripts were checked
against; "1.37" is kube-scheduler 1.37.2 (../shared/KUBE_SCHEDULER_1.37.md lists every change). The
version is chosen once per run (`batkube run --kube-version`) and recorded in summary.json and the log.
What depends on it lives here when it is a table or a formula, and in the mechanism otherwise:
the default plugin list (below), the backoff (below and queue.py), tie-breaking (ties.py),
BalancedAllocation and NodeResourcesFit's unresolvable nodes (plugins/noderesources.py, preemption.py).
"""

from __future__ import annotations

import math
from typing import Literal, get_args

KubeVersion = Literal["1.32", "1.37"]
KUBE_VERSIONS: tuple[str, ...] = get_args(KubeVersion)
DEFAULT_KUBE_VERSION: KubeVersion = "1.37"
FULL_VERSION = {"1.32": "1.32.6", "1.37": "1.37.2"}

# pkg/scheduler/apis/config/v1/default_plugins.go, getDefaultPlugins: MultiPoint, in this order, with
# these weights (0: no Score weight). 1.37 swaps NodeName before NodeUnschedulable, inserts
# DynamicResources (weight 2) before DefaultPreemption and appends NodeDeclaredFeatures (applyFeatureGates
# with the default gates); both are inert for pods without claims or declared-feature requirements.
_MULTIPOINT_132: list[tuple[str, int]] = [
    ("SchedulingGates", 0), ("PrioritySort", 0), ("NodeUnschedulable", 0), ("NodeName", 0),
    ("TaintToleration", 3), ("NodeAffinity", 2), ("NodePorts", 0), ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0), ("NodeVolumeLimits", 0), ("VolumeBinding", 0), ("VolumeZone", 0),
    ("PodTopologySpread", 2), ("InterPodAffinity", 2), ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1), ("ImageLocality", 1), ("DefaultBinder", 0),
]  # fmt: skip
_MULTIPOINT_137: list[tuple[str, int]] = [
    ("SchedulingGates", 0), ("PrioritySort", 0), ("NodeName", 0), ("NodeUnschedulable", 0),
    ("TaintToleration", 3), ("NodeAffinity", 2), ("NodePorts", 0), ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0), ("NodeVolumeLimits", 0), ("VolumeBinding", 0), ("VolumeZone", 0),
    ("PodTopologySpread", 2), ("InterPodAffinity", 2), ("DynamicResources", 2), ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1), ("ImageLocality", 1), ("DefaultBinder", 0),
    ("NodeDeclaredFeatures", 0),
]  # fmt: skip


def default_multipoint(version: KubeVersion) -> list[tuple[str, int]]:
    return list(_MULTIPOINT_137 if version == "1.37" else _MULTIPOINT_132)


def check_version(version: str, where: str = "--kube-version") -> KubeVersion:
    if version not in KUBE_VERSIONS:
        raise ValueError(f"{where}: {version!r} is not a kube-scheduler version the twin follows "
                         f"(expected one of {', '.join(KUBE_VERSIONS)})")  # fmt: skip
    return version  # type: ignore[return-value]


def backoff_duration(count: int, size: int, initial: float, maximum: float) -> float:
    """backoff_queue.go calculateBackoffDuration(count, size): initial·2^(count−1), capped at the maximum,
    which a pod group of `size` queued pods scales by sqrt(size) (1.37); no backoff for count 0 or a
    maximum of 0. 1.32's count is Attempts, 1.37's UnschedulableCount or ConsecutiveErrorsCount. A pod
    tried a thousand times is at the cap, as upstream's shift test says (2 ** count overflowed a float)."""
    if count <= 0 or maximum <= 0:
        return 0.0
    cap = maximum * math.sqrt(size) if size > 1 else maximum
    return min(initial * 2.0 ** min(count - 1, 1000), cap)


def backoff_count(unschedulable: int, errors: int) -> int:
    """1.37's counter: ConsecutiveErrorsCount while the last failures were errors, else UnschedulableCount."""
    return errors if errors > 0 else unschedulable


def retryable_at(version: KubeVersion, failed_at: float, duration: float) -> float:
    """The first time the entity is no longer backing off. 1.32: Timestamp + d (isPodBackingoff:
    expiry.After(now)). 1.37 (SchedulerPopFromBackoffQ): the expiry is truncated to its 1-s ordering
    window (alignToWindow) and the entity backs off while expiry ≥ truncate(now, 1 s)
    (isEntityBackingoff), hence floor(T + d) + 1 s."""
    if duration <= 0 or version == "1.32":
        return failed_at + duration
    return float(math.floor(round(failed_at + duration, 9)) + 1)
