"""Cluster backends behind one interface: embedded (in-process twin) and apiserver (real Kubernetes),
and for the real one: when a wall-clock scheduler is done with an instant (sync) and the twin checking its
bindings (parity)."""

from batkube_py.cluster.base import Backend, Binding, Unschedulable

__all__ = ["Backend", "Binding", "Unschedulable"]
