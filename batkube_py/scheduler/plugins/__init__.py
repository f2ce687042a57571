"""Default plugins, one module per plugin family, registered by their upstream names."""

from batkube_py.scheduler.plugins.noderesources import BalancedAllocation, NodeResourcesFit
from batkube_py.scheduler.plugins.nodeunschedulable import NodeUnschedulable

REGISTRY = {
    NodeUnschedulable.name: NodeUnschedulable,
    NodeResourcesFit.name: NodeResourcesFit,
    BalancedAllocation.name: BalancedAllocation,
}

__all__ = ["REGISTRY", "BalancedAllocation", "NodeResourcesFit", "NodeUnschedulable"]
