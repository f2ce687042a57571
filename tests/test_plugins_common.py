"""Shared builders for the plugin fidelity tests (nodes from host properties, pods from job JSON).

Also holds `CountingPlugin`, the custom plugin test_config.py imports by path.
"""

from __future__ import annotations

import numpy as np
from kubernetes import client

from batkube_py.adapter import podshape, translate
from batkube_py.protocol.models import Resource
from batkube_py.scheduler.framework import SKIP, CycleState, Plugin
from batkube_py.scheduler.podinfo import PodInfo, pod_info
from batkube_py.scheduler.snapshot import NodeTable


def table(*specs: dict, names: list[str] | None = None) -> NodeTable:
    out = []
    for i, props in enumerate(specs):
        props = {"cpu": "4", **props}
        name = names[i] if names else f"n{i}"
        r = Resource(id=i, name=name, state="idle", properties=props, zone_properties={})
        out.append(translate.node_from_resource(r))
    return NodeTable(out)


def pod(name: str = "p", **job) -> PodInfo:
    spec = {"res": 1, "profile": "p", **job}
    p = podshape.pod_from_job(name, spec, {"type": "delay", "delay": 1}, name)
    assert isinstance(p, client.V1Pod), p
    return pod_info(p, name, 0.0, 0)


def place(nodes: NodeTable, node: int, name: str, **job) -> PodInfo:
    info = pod(name, **job)
    info.node = node
    nodes.assume(node, info)
    return info


def run_filter(plugin: Plugin, p: PodInfo, nodes: NodeTable):
    state = CycleState()
    why = plugin.pre_filter(state, p, nodes)
    assert why in (None, SKIP), why
    if why == SKIP:  # upstream does not run this Filter: every node passes it
        assert plugin.filter(state, p, nodes, nodes.all).reasons == {}
        return [True] * len(nodes), {}
    res = plugin.filter(state, p, nodes, nodes.all)
    feasible = [True] * len(nodes) if res.feasible is None else res.feasible.tolist()
    return feasible, res.reasons


def run_score(plugin: Plugin, p: PodInfo, nodes: NodeTable, idx=None) -> list[int]:
    """PreScore → Score → NormalizeScore over `idx` (all nodes by default)."""
    idx = nodes.all if idx is None else np.asarray(idx)
    state = CycleState()
    plugin.pre_filter(state, p, nodes)
    plugin.pre_score(state, p, nodes, idx)
    return plugin.normalize(state, plugin.score(state, p, nodes, idx)).tolist()


class CountingPlugin(Plugin):
    """A custom scorer: prefers nodes with fewer pods; `args` may set a different name of the label."""

    name = "CountingPlugin"
    scores = True

    def __init__(self, args: dict | None = None):
        self.args = args or {}

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> np.ndarray:
        return 100 - np.minimum(nodes.pod_count[idx], 100)
