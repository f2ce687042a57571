"""Cluster backends behind one interface: embedded (in-process twin) and apiserver (real Kubernetes)."""

from batkube_py.cluster.base import Backend, Binding, Unschedulable

__all__ = ["Backend", "Binding", "Unschedulable"]
