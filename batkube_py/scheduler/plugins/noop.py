"""Default plugins with nothing to decide in a Batsim simulation, registered so configs can name them.

Pods here have no volumes, host ports or scheduling gates, and the queue order (PrioritySort), binding
(DefaultBinder) and preemption (DefaultPreemption, the framework's PostFilter) live outside the plugin
lists. Upstream these plugins pass every node for such pods; keeping them out of the per-cycle lists
gives the same result without the calls. VolumeBinding's Score is skipped upstream unless the alpha
VolumeCapacityPriority gate is on, so it contributes nothing either.

Two join the default profile in 1.37: DynamicResources skips its PreFilter for a pod without resource
claims and scores 0 on every node (dynamicresources.go, Score), its PreEnqueue and PostFilter have
nothing to do; NodeDeclaredFeatures skips its PreFilter when the pod requires no node feature
(nodedeclaredfeatures), and a Batsim job's pod requires none. Pods here have no claims either.
"""

from __future__ import annotations

from batkube_py.scheduler.framework import Plugin


def _noop(plugin_name: str, points: frozenset[str]) -> type[Plugin]:
    return type(plugin_name, (Plugin,), {"name": plugin_name, "extension_points": points, "__doc__": __doc__})


_FILTER = frozenset({"preFilter", "filter"})
SchedulingGates = _noop("SchedulingGates", frozenset({"preEnqueue"}))
PrioritySort = _noop("PrioritySort", frozenset({"queueSort"}))
NodePorts = _noop("NodePorts", _FILTER)
VolumeRestrictions = _noop("VolumeRestrictions", _FILTER)
NodeVolumeLimits = _noop("NodeVolumeLimits", _FILTER)
VolumeBinding = _noop("VolumeBinding", _FILTER | {"reserve", "preBind", "preScore", "score"})
VolumeZone = _noop("VolumeZone", _FILTER)
DefaultPreemption = _noop("DefaultPreemption", frozenset({"postFilter"}))
DefaultBinder = _noop("DefaultBinder", frozenset({"bind"}))
DynamicResources = _noop(
    "DynamicResources",
    _FILTER | {"preEnqueue", "postFilter", "preScore", "score", "reserve", "preBind"},
)
NodeDeclaredFeatures = _noop("NodeDeclaredFeatures", _FILTER)
ONLY_137 = frozenset({"DynamicResources", "NodeDeclaredFeatures"})  # unknown to the 1.32 twin, as today

NOOP_PLUGINS = [
    SchedulingGates, PrioritySort, NodePorts, VolumeRestrictions, NodeVolumeLimits,
    VolumeBinding, VolumeZone, DefaultPreemption, DefaultBinder, DynamicResources, NodeDeclaredFeatures,
]  # fmt: skip
