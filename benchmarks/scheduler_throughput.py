#!/usr/bin/env python3
"""Pods scheduled per second by the embedded twin's default profile, at 100, 1,000 and 5,000 nodes.

Each round submits M pods at once to an EmbeddedCluster of N identical 32-core nodes and times one
`schedule()` call that binds them all, i.e. full cycles (PreFilter → Filter → Score → select →
assume) through the default KubeSchedulerConfiguration's plugins. The cluster never fills, so every
cycle is a successful one, as in scheduler_perf's SchedulingBasic. `--affinity` gives every pod a
preferred node affinity, a soft spread constraint and a preferred pod anti-affinity, to price the
plugins that do work.

    python benchmarks/scheduler_throughput.py [--pods M] [--nodes 100,1000,5000] [--affinity]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from kubernetes import client

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout, not an installed copy

from batkube_py.adapter import podshape, translate
from batkube_py.cluster.embedded import EmbeddedCluster
from batkube_py.protocol.models import Resource
from batkube_py.scheduler.framework import Profile
from batkube_py.scheduler.plugins import (
    BalancedAllocation,
    NodeResourcesFit,
    NodeUnschedulable,
    noderesources,
)


def make_nodes(n: int) -> list[client.V1Node]:
    out = []
    for i in range(n):
        props = {"core": "32", "memory": "128Gi", "topology.kubernetes.io/zone": f"z{i % 4}"}
        r = Resource(id=i, name=f"node{i}", state="idle", properties=props, zone_properties={})
        out.append(translate.node_from_resource(r))
    return out


def make_pod(i: int, affinity: bool) -> client.V1Pod:
    job: dict = {"res": 1, "profile": "p", "cpu": "100m", "memory": "128Mi", "labels": {"app": f"a{i % 10}"}}
    if affinity:
        job["affinity"] = {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 5,
                        "preference": {
                            "matchExpressions": [
                                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["z1"]}
                            ]
                        },
                    }
                ]
            },
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 10,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": {"app": f"a{i % 10}"}},
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    }
                ]
            },
        }
        job["topologySpreadConstraints"] = []
    pod = podshape.pod_from_job(f"j{i}", job, {"type": "delay", "delay": 1}, f"p{i}")
    assert isinstance(pod, client.V1Pod), pod
    return pod


def minimal_profile() -> list[Profile]:
    """The pre-issue-3 profile (NodeUnschedulable, NodeResourcesFit, BalancedAllocation), for comparison."""
    fit = NodeResourcesFit()
    return [
        Profile(
            "default-scheduler",
            [NodeUnschedulable(), fit],
            [(fit, 1), (BalancedAllocation(), 1)],
            np.random.default_rng(0),
        )
    ]


def run(n_nodes: int, n_pods: int, affinity: bool, minimal: bool = False) -> tuple[float, float]:
    """(pods/s on the wall clock, pods/s of this process's CPU time: robust to a busy machine)."""
    cluster = EmbeddedCluster(make_nodes(n_nodes), seed=0, profiles=minimal_profile() if minimal else None)
    pods = [make_pod(i, affinity) for i in range(n_pods)]
    for i, p in enumerate(pods):
        cluster.add_pod(p, f"j{i}", 0.0)
    t0, c0 = time.perf_counter(), time.process_time()
    bound = cluster.schedule(0.0)
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    assert len(bound) == n_pods, f"{len(bound)} of {n_pods} bound"
    return n_pods / dt, n_pods / dc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, default=5000)
    ap.add_argument("--nodes", default="100,1000,5000")
    ap.add_argument("--affinity", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--minimal", action="store_true", help="the pre-issue-3 three-plugin profile instead")
    ap.add_argument("--no-kernels", action="store_true", help="the numpy code instead of the compiled loops")
    args = ap.parse_args()
    if args.no_kernels:
        noderesources._kernels = None
    what = (
        "minimal profile"
        if args.minimal
        else "default profile" + (", affinity pods" if args.affinity else "")
    ) + (", compiled loops" if noderesources._kernels is not None else ", numpy loops")
    for n in (int(x) for x in args.nodes.split(",")):
        runs = [run(n, args.pods, args.affinity, args.minimal) for _ in range(args.repeat)]
        wall, cpu = max(r[0] for r in runs), max(r[1] for r in runs)
        print(f"{n:>6} nodes  {args.pods} pods  {wall:>8,.0f} pods/s wall  {cpu:>8,.0f} pods/s cpu  ({what})")


if __name__ == "__main__":
    main()
