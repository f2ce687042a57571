#!/usr/bin/env python3
"""The embedded twin in upstream scheduler_perf's shapes, driven directly as scheduler_perf drives the
scheduler: nodes, init pods scheduled first (not measured), then the measured pods, pods/s over them.

Shapes and thresholds from kubernetes/kubernetes test/integration/scheduler_perf performance-config
(the 5000-node `performance` workloads; thresholds as in v1.32+: SchedulingBasic 810, NodeAffinity 220,
PodAffinity 35, PodAntiAffinity 60, PreferredPodAffinity 90, PreferredPodAntiAffinity 90,
TopologySpreading 460, PreemptionAsync 570). Nodes are node-default (4 cpu, 32Gi, 110 pods), pods
pod-default (100m, 500Mi) unless the shape says otherwise. Upstream's pods live in two namespaces that
every affinity term lists; here they all live in one, which selects the same pods.

PreemptionBasic at 5,000 nodes is commented out upstream ("always seems to fail"): its 1,000-node
workload (4,000 low-priority init pods, 1,000 high-priority preemptors) runs instead. PreemptionAsync
injects one high-priority preemptor per 100 measured pods (upstream: 5/s against ~600 pods/s); the
victims are deleted as Batsim's kill reports would delete them, and only the default pods are counted.

The podgroup workloads (podgroup/gangscheduling and podgroup/basicscheduling performance-config,
GenericWorkload on: PodGroups created first, then their pods, 100m / 100Mi, no init pods) carry no
threshold upstream, so the upstream column shows none; their 50,000-pod 5000PerGroup workload is left out.

    python benchmarks/scheduler_perf.py [--only NAME[,NAME]] [--scale 0.1] [--kube-version 1.32]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout, not an installed copy

from kubernetes import client  # noqa: E402

from batkube_py.adapter import gangjobs, podshape, translate  # noqa: E402
from batkube_py.cluster.embedded import EmbeddedCluster  # noqa: E402
from batkube_py.protocol.models import Resource  # noqa: E402
from batkube_py.scheduler.plugins import noderesources  # noqa: E402

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
DEFAULT = {"cpu": "100m", "memory": "500Mi"}


def _selector(key: str, *values: str) -> dict:
    return {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}


def _term(color: str, topology: str) -> dict:
    return {"labelSelector": _selector("color", color), "topologyKey": topology}


POD_AFFINITY = {"labels": {"color": "blue"},
                "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    _term("blue", ZONE)]}}}  # fmt: skip
POD_ANTI_AFFINITY = {"labels": {"color": "green"},
                     "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                         _term("green", HOST)]}}}  # fmt: skip
PREFERRED_AFFINITY = {"labels": {"color": "red"},
                      "affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                          {"weight": 1, "podAffinityTerm": _term("red", HOST)}]}}}  # fmt: skip
PREFERRED_ANTI_AFFINITY = {"labels": {"color": "yellow"}, "affinity": {"podAntiAffinity": {
    "preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "podAffinityTerm": _term("yellow", HOST)}]}}}  # fmt: skip
NODE_AFFINITY = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [_selector(ZONE, "zone1", "zone2")]}}}}  # fmt: skip
SPREAD = {"labels": {"color": "blue"},
          "topologySpreadConstraints": [{"maxSkew": 5, "topologyKey": ZONE,
                                         "whenUnsatisfiable": "DoNotSchedule",
                                         "labelSelector": {"matchLabels": {"color": "blue"}}}]}  # fmt: skip
GROUP_POD = {"cpu": "100m", "memory": "100Mi"}  # podgroup/*/templates: gang-pod.yaml, basic-pod.yaml
LOW = {"cpu": "900m", "memory": "500Mi", "priority": 0}
HIGH = {"cpu": "3000m", "memory": "500Mi", "priority": 10}


@dataclass
class Shape:
    name: str
    threshold: int | None
    nodes: int
    init: int
    measure: int
    measure_pod: dict = field(default_factory=dict)
    init_pod: dict | None = None  # None: the same template as the measured pods
    zones: tuple[str, ...] = ()
    preemptor_every: int = 0  # PreemptionAsync: one HIGH pod per this many measured pods
    group: int = 0  # podgroup workloads: measured pods in PodGroups of this many (GenericWorkload on)
    policy: str = "gang"


SHAPES = [
    Shape("SchedulingBasic/5000Nodes_50000Pods", 810, 5000, 5000, 50000),
    Shape("SchedulingNodeAffinity/5000Nodes_10000Pods", 220, 5000, 5000, 10000, NODE_AFFINITY,
          zones=("zone1",)),
    Shape("SchedulingPodAffinity/5000Nodes_5000Pods", 35, 5000, 5000, 5000, POD_AFFINITY, zones=("zone1",)),
    Shape("SchedulingPodAntiAffinity/5000Nodes_2000Pods", 60, 5000, 1000, 2000, POD_ANTI_AFFINITY),
    Shape("SchedulingPreferredPodAffinity/5000Nodes_5000Pods", 90, 5000, 5000, 5000, PREFERRED_AFFINITY),
    Shape("SchedulingPreferredPodAntiAffinity/5000Nodes_5000Pods", 90, 5000, 5000, 5000,
          PREFERRED_ANTI_AFFINITY),
    Shape("TopologySpreading/5000Nodes_5000Pods", 460, 5000, 5000, 5000, SPREAD, init_pod={},
          zones=("moon-1", "moon-2", "moon-3")),
    Shape("PreemptionBasic/1000Nodes", None, 1000, 4000, 1000, HIGH, init_pod=LOW),
    Shape("PreemptionAsync/5000Nodes", 570, 5000, 20000, 5000, {}, init_pod=LOW, preemptor_every=100),
    Shape("GangScheduling/5000Nodes_1000Gangs_3000Pods", None, 5000, 0, 3000, GROUP_POD, group=3),
    Shape("GangScheduling/5000Nodes_3Gangs_3000Pods_1000PerGroup", None, 5000, 0, 3000, GROUP_POD,
          group=1000),
    Shape("BasicScheduling/5000Nodes_1000Groups_3000Pods", None, 5000, 0, 3000, GROUP_POD, group=3,
          policy="basic"),
]  # fmt: skip


def make_nodes(n: int, zones: tuple[str, ...]) -> list[client.V1Node]:
    out = []
    for i in range(n):
        props = {"core": "4", "memory": "32Gi", "pods": "110"}
        if zones:
            props[ZONE] = zones[i % len(zones)]
        r = Resource(id=i, name=f"node-{i}", state="idle", properties=props, zone_properties={})
        out.append(translate.node_from_resource(r))
    return out


def make_pods(prefix: str, count: int, template: dict) -> list[client.V1Pod]:
    job = {"res": 1, **DEFAULT, **template}
    profile = {"type": "delay", "delay": 1}
    pods = [podshape.pod_from_job(f"{prefix}{i}", job, profile, f"{prefix}{i}") for i in range(count)]
    bad = next((p for p in pods if isinstance(p, translate.Rejection)), None)
    if bad is not None:
        sys.exit(f"template refused: {bad.reason}")
    return pods  # type: ignore[return-value]


def make_groups(count: int, size: int, template: dict, policy: str) -> tuple[list, list[client.V1Pod]]:
    """`count` PodGroups of `size` pods each (upstream's createPodGroups, then createPods naming them)."""
    shape = podshape.pod_shape("g", {"res": 1, **template}, {"type": "delay", "delay": 1})
    if isinstance(shape, translate.Rejection):
        sys.exit(f"template refused: {shape.reason}")
    groups, pods = [], []
    for g in range(count):
        name = f"gang-{g}"
        groups.append(gangjobs.pod_group(name, size, shape, None, policy))
        pods.extend(gangjobs.member_pod(name, name, f"{name}-{i}", i, shape, False) for i in range(size))
    return groups, pods


class Driver:
    """Submits pods and schedules until they are bound, deleting preemption victims as they go."""

    def __init__(self, cluster: EmbeddedCluster):
        self.cluster, self.now, self.bound = cluster, 0.0, set()

    def submit(self, pods: list[client.V1Pod]) -> None:
        for p in pods:
            self.cluster.add_pod(p, p.metadata.name, self.now)

    def run_until(self, names: set[str]) -> None:
        stalls = 0
        while not names <= self.bound:
            bindings = self.cluster.schedule(self.now)
            self.bound.update(b.pod for b in bindings)
            victims = self.cluster.take_evictions()
            for v in victims:
                self.cluster.delete_pod(v.pod, self.now)
                self.bound.discard(v.pod)
            if bindings or victims:
                stalls = 0
                continue
            wake = self.cluster.next_wakeup()
            stalls += 1
            if wake is None or stalls > 1000:
                left = len(names - self.bound)
                sys.exit(f"{left} pod(s) never bound (pending {self.cluster.pending()})")
            self.now = max(self.now, wake)


def run(shape: Shape, scale: float, version: str | None = None) -> tuple[int, float, float]:
    """(measured pods, wall seconds, CPU seconds) for the measured phase; `version`: the twin's
    kube-scheduler release (None: the default)."""
    init, measure = int(shape.init * scale), max(1, int(shape.measure * scale))
    if shape.init:
        init = max(1, init)
    nodes = max(1, int(shape.nodes * scale)) if scale < 1 else shape.nodes
    kw = {}
    if version is not None:
        from batkube_py.scheduler.backoffq import QueueConfig
        from batkube_py.scheduler.config import build_profiles, default_config

        kw = {
            "profiles": build_profiles(default_config(version), 0),
            "queue_config": QueueConfig(kube_version=version),
        }
    driver = Driver(EmbeddedCluster(make_nodes(nodes, shape.zones), seed=0, **kw))
    init_pods = make_pods("init-", init, shape.measure_pod if shape.init_pod is None else shape.init_pod)
    if init_pods:
        driver.submit(init_pods)
        driver.run_until({p.metadata.name for p in init_pods})
    groups = []
    if shape.group:
        size = min(shape.group, measure)
        groups, pods = make_groups(max(1, measure // size), size, shape.measure_pod, shape.policy)
        measure = len(pods)
    else:
        pods = make_pods("m-", measure, shape.measure_pod)
    batch: list[client.V1Pod] = []
    if shape.preemptor_every:
        high = make_pods("high-", measure // shape.preemptor_every, HIGH)
        for i, p in enumerate(pods):
            batch.append(p)
            if (i + 1) % shape.preemptor_every == 0 and high:
                batch.append(high.pop(0))
    else:
        batch = pods
    names = {p.metadata.name for p in pods}
    t0, c0 = time.perf_counter(), time.process_time()
    for group in groups:
        driver.cluster.add_pod_group(group, driver.now)
    driver.submit(batch)
    driver.run_until(names)
    return measure, time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="", help="comma-separated name prefixes (e.g. SchedulingBasic)")
    ap.add_argument("--scale", type=float, default=1.0, help="scale nodes and pod counts (a quick look)")
    ap.add_argument("--kube-version", choices=["1.32", "1.37"], default=None,
                    help="the kube-scheduler release the twin follows (default: its default)")  # fmt: skip
    args = ap.parse_args()
    only = [s for s in args.only.split(",") if s]
    loops = "compiled loops" if noderesources._kernels is not None else "numpy loops (no compiled kernels)"
    from batkube_py.scheduler.versions import DEFAULT_KUBE_VERSION

    version = args.kube_version or DEFAULT_KUBE_VERSION
    print(f"embedded twin (kube-scheduler {version}), {loops}; scale {args.scale:g}", flush=True)
    print(f"{'workload':55s} {'pods':>6s} {'pods/s':>9s} {'cpu pods/s':>11s} {'upstream':>9s} {'x':>6s}")
    for shape in SHAPES:
        if only and not any(shape.name.startswith(o) for o in only):
            continue
        n, wall, cpu = run(shape, args.scale, args.kube_version)
        rate = n / wall
        ref = f"{shape.threshold:>9d}" if shape.threshold else f"{'-':>9s}"
        times = f"{rate / shape.threshold:>5.1f}x" if shape.threshold else f"{'-':>6s}"
        print(f"{shape.name:55s} {n:>6d} {rate:>9,.0f} {n / cpu:>11,.0f} {ref} {times}", flush=True)


if __name__ == "__main__":
    main()
