"""Default plugins with nothing to decide in a Batsim simulation, registered so configs can name them.

Pods here have no volumes, host ports or scheduling gates, and the queue order (PrioritySort), binding
(DefaultBinder) and preemption (DefaultPreemption, the framework's PostFilter) live outside the plugin
lists. Upstream these plugins pass every node for such pods; keeping them out of the per-cycle lists
gives the same result without the calls. VolumeBinding's Score is skipped upstream unless the alpha
VolumeCapacityPriority gate is on, so it contributes nothing either.
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

NOOP_PLUGINS = [
    SchedulingGates, PrioritySort, NodePorts, VolumeRestrictions, NodeVolumeLimits,
    VolumeBinding, VolumeZone, DefaultPreemption, DefaultBinder,
]  # fmt: skip
