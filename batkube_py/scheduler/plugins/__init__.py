"""Default plugins, one module per plugin, registered by their upstream names."""

from __future__ import annotations

from typing import Any

from batkube_py.scheduler.framework import Plugin
from batkube_py.scheduler.plugins.imagelocality import ImageLocality
from batkube_py.scheduler.plugins.interpodaffinity import InterPodAffinity
from batkube_py.scheduler.plugins.nodeaffinity import NodeAffinity
from batkube_py.scheduler.plugins.nodename import NodeName
from batkube_py.scheduler.plugins.noderesources import BalancedAllocation, NodeResourcesFit
from batkube_py.scheduler.plugins.nodeunschedulable import NodeUnschedulable
from batkube_py.scheduler.plugins.noop import NOOP_PLUGINS, ONLY_137
from batkube_py.scheduler.plugins.podtopologyspread import PodTopologySpread
from batkube_py.scheduler.plugins.tainttoleration import TaintToleration

REGISTRY: dict[str, type[Plugin]] = {
    cls.name: cls
    for cls in (
        NodeUnschedulable,
        NodeName,
        TaintToleration,
        NodeAffinity,
        NodeResourcesFit,
        BalancedAllocation,
        PodTopologySpread,
        InterPodAffinity,
        ImageLocality,
        *NOOP_PLUGINS,
    )
}


def build_plugin(cls: type[Plugin], name: str, args: Any) -> Plugin:
    """A plugin instance from its (typed or raw) args: `from_args` when the class has one."""
    from_args = getattr(cls, "from_args", None)
    if from_args is not None:
        return from_args(args)
    if REGISTRY.get(cls.name) is cls:
        return cls()  # built-in without arguments that change its decisions
    return cls(args) if args else cls()


__all__ = [
    "ONLY_137",
    "REGISTRY",
    "BalancedAllocation",
    "ImageLocality",
    "InterPodAffinity",
    "NodeAffinity",
    "NodeName",
    "NodeResourcesFit",
    "NodeUnschedulable",
    "PodTopologySpread",
    "TaintToleration",
    "build_plugin",
]
