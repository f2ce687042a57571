"""Fidelity of NodeResourcesFit's strategies, extended resources and BalancedAllocation.

Expected numbers are hand-computed from kube-scheduler 1.32's formulas (least_allocated.go,
most_allocated.go, requested_to_capacity_ratio.go, balanced_allocation.go); the cpu/memory cases reuse
the shapes of upstream's TestLeastAllocatedScoringStrategy / TestMostAllocatedScoringStrategy /
TestRequestedToCapacityRatioScoringStrategy (node 4000m/10000 and 6000m/10000, pod 3000m/5000).
"""

from __future__ import annotations

import numpy as np
import pytest
from kubernetes import client
from test_plugins_common import place, pod, run_filter, table

from batkube_py.adapter import podshape, translate
from batkube_py.protocol.models import Resource
from batkube_py.scheduler.plugins import BalancedAllocation, NodeResourcesFit
from batkube_py.scheduler.plugins.resourcescoring import broken_linear


def score(plugin, p, nodes):
    return plugin.score(None, p, nodes, nodes.all).tolist()


def two_nodes():
    return table({"cpu": "4", "memory": "10000"}, {"cpu": "6", "memory": "10000"})


def test_least_allocated_unchanged():
    # cpu (4000-3000)·100/4000 = 25, memory (10000-5000)·100/10000 = 50 → (25+50)/2 = 37; node 2: 50, 50
    assert score(NodeResourcesFit(), pod("a", cpu="3", memory="5000"), two_nodes()) == [37, 50]


def test_most_allocated_and_weights():
    p = pod("a", cpu="3", memory="5000")
    # cpu 3000·100/4000 = 75, memory 50 → 62; node 2: 50, 50 → 50
    assert score(NodeResourcesFit(strategy="MostAllocated"), p, two_nodes()) == [62, 50]
    # weights cpu 2, memory 1: (75·2 + 50)/3 = 66; (50·2 + 50)/3 = 50
    assert score(NodeResourcesFit({"cpu": 2, "memory": 1}, "MostAllocated"), p, two_nodes()) == [66, 50]
    # over capacity counts as capacity: 100
    big = pod("b", cpu="5", memory="5000")
    assert score(NodeResourcesFit(strategy="MostAllocated"), big, two_nodes())[0] == (100 + 50) // 2


def test_non_zero_requested_counts_100m_and_200mi():
    nodes = table({"cpu": "1", "memory": "1Gi"})
    # cpu (1000-100)·100/1000 = 90; memory (1073741824-209715200)·100/1073741824 = 80 → 85
    assert score(NodeResourcesFit(), pod("empty"), nodes) == [85]


def test_broken_linear_function_truncates_like_go():
    shape = [(0, 100), (30, 0)]  # decreasing: (0-100)·(p-0)/30 truncates toward zero
    p = np.array([0, 1, 10, 29, 30, 50])
    assert broken_linear(shape, p).tolist() == [100, 100 - 3, 100 - 33, 100 - 96, 0, 0]
    assert broken_linear([(10, 20), (20, 40)], np.array([0, 15, 99])).tolist() == [20, 30, 40]


def test_requested_to_capacity_ratio():
    shape = [(0, 0), (100, 10)]  # bin packing: score = utilisation
    plugin = NodeResourcesFit(strategy="RequestedToCapacityRatio", shape=shape)
    # node 1: cpu 75, memory 50 → round(125/2) = 63 (math.Round half up); node 2: 50, 50 → 50
    assert score(plugin, pod("a", cpu="3", memory="5000"), two_nodes()) == [63, 50]
    # resources scoring 0 drop out of the weighted mean
    spread = NodeResourcesFit(strategy="RequestedToCapacityRatio", shape=[(0, 10), (100, 0)])
    assert score(spread, pod("b", cpu="4", memory="5000"), two_nodes()) == [
        50,
        42,
    ]  # node 1: cpu at 100 % scores 0 and drops out; node 2: cpu 100-66 = 34, memory 50 → 42


def test_extended_resources_from_host_properties_and_jobs():
    r = Resource(
        id=0,
        name="g0",
        state="idle",
        properties={
            "cpu": "8",
            "nvidia.com/gpu": "2",
            "example.com/rack": "r1",
            "topology.kubernetes.io/zone": "3",
        },
        zone_properties={},
    )
    node = translate.node_from_resource(r)
    assert node.status.allocatable["nvidia.com/gpu"] == "2" and "nvidia.com/gpu" not in node.metadata.labels
    assert node.metadata.labels["example.com/rack"] == "r1"  # not a count: a label
    assert node.metadata.labels["topology.kubernetes.io/zone"] == "3"  # kubernetes.io names are native
    p = podshape.pod_from_job(
        "j", {"res": 1, "extendedResources": {"nvidia.com/gpu": 1}}, {"type": "delay"}, "j"
    )
    assert isinstance(p, client.V1Pod)
    assert (
        p.spec.containers[0].resources.requests
        == {"nvidia.com/gpu": "1"}
        == p.spec.containers[0].resources.limits
    )
    for bad in ({"gpu": "1"}, {"nvidia.com/gpu": "0.5"}, {"nvidia.com/gpu": "-1"}, ["x"]):
        rej = podshape.pod_from_job("j", {"res": 1}, {"type": "delay", "resources": bad}, "j")
        assert isinstance(rej, translate.Rejection) and rej.field.startswith("profile.resources"), bad


def test_extended_resource_fit_and_scoring():
    nodes = table({"nvidia.com/gpu": "2"}, {"nvidia.com/gpu": "4"}, {})
    assert nodes.ext_names == ["nvidia.com/gpu"]
    p = pod("a", cpu="1", extendedResources={"nvidia.com/gpu": "3"})
    ok, reasons = run_filter(NodeResourcesFit(), p, nodes)
    assert ok == [False, True, False] and reasons == {"Insufficient nvidia.com/gpu": 2}
    place(nodes, 1, "x", extendedResources={"nvidia.com/gpu": "2"})
    assert run_filter(NodeResourcesFit(), p, nodes)[0] == [False, False, False]
    assert nodes.req_ext["nvidia.com/gpu"].tolist() == [0, 2, 0]
    # MostAllocated over the gpu alone: node 0: 1/2 → 50, node 1: (2+1)/4 → 75
    q = pod("b", cpu="1", extendedResources={"nvidia.com/gpu": "1"})
    plugin = NodeResourcesFit({"nvidia.com/gpu": 1}, "MostAllocated")
    assert score(plugin, q, nodes)[:2] == [50, 75]
    # a pod not requesting the extended resource skips it: no gpu term at all → 0
    assert score(plugin, pod("c", cpu="1"), nodes) == [0, 0, 0]


def balanced(version, resources=None):
    plugin = BalancedAllocation(resources)
    plugin.kube_version = version
    return plugin


def test_balanced_allocation_default_and_three_resources():
    p = pod("a", cpu="3", memory="5000")
    assert balanced("1.32").score(None, p, two_nodes(), np.arange(2)).tolist() == [87, 100]
    nodes = table({"cpu": "4", "memory": "10000", "nvidia.com/gpu": "4"})
    q = pod("b", cpu="2", memory="2500", extendedResources={"nvidia.com/gpu": "1"})
    # fractions 0.5, 0.25, 0.25: mean 1/3, std = sqrt((1/36 + 1/144 + 1/144)/3) = 0.1178 → 88
    three = ["cpu", "memory", "nvidia.com/gpu"]
    assert balanced("1.32", three).score(None, q, nodes, np.arange(1)).tolist() == [88]
    # 1.37: without the pod the node is empty (std 0 → 100): 50 + (50 + 88 − 100) / 2 = 69
    assert balanced("1.37", three).score(None, q, nodes, np.arange(1)).tolist() == [69]


@pytest.mark.parametrize("cpu", ["100m", "2500m"])
def test_fast_and_general_least_allocated_agree(cpu):
    nodes = table(*({"cpu": str(c), "memory": f"{m}Gi"} for c, m in ((1, 2), (3, 8), (8, 1), (2, 64))))
    place(nodes, 1, "x", cpu="1", memory="1Gi")
    p = pod("a", cpu=cpu, memory="512Mi")
    fast = NodeResourcesFit().score(None, p, nodes, nodes.all).tolist()
    general = (
        NodeResourcesFit({"cpu": 1, "memory": 1, "example.com/x": 1})
        .score(None, p, nodes, nodes.all)
        .tolist()
    )
    assert fast == general
