"""The group cycle's score cache (scheduler/scorecache.py) changes no placement: the same groups on the
same clusters bind to the same nodes with the cache as with every member scored afresh."""

from types import SimpleNamespace

import numpy as np
import pytest
from kubernetes import client

from batkube_py import gangjobs, translate
from batkube_py.cluster.embedded import EmbeddedCluster
from batkube_py.protocol.models import Resource
from batkube_py.scheduler import scorecache


def _nodes(n: int, memory: bool, rng: np.random.Generator):
    out = []
    for i in range(n):
        props = {"core": str(int(rng.choice([1, 2, 4, 8])))}
        if memory:
            props["memory"] = f"{int(rng.choice([4, 8, 16]))}Gi"
        out.append(translate.node_from_resource(Resource(id=i, name=f"n{i}", state="idle", properties=props)))
    return out


def _pod(name: str, cpu: str, memory: str | None, grp: str | None = None) -> client.V1Pod:
    requests = {"cpu": cpu, **({"memory": memory} if memory else {})}
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, namespace="default"),
        spec=client.V1PodSpec(
            scheduler_name="default-scheduler",
            priority=0,
            scheduling_group=client.V1PodSchedulingGroup(pod_group_name=grp) if grp else None,
            containers=[
                client.V1Container(name="c", resources=client.V1ResourceRequirements(requests=requests))
            ],
        ),
    )


def _placements(memory: bool, seed: int) -> list[tuple[str, str]]:
    rng = np.random.default_rng(seed)
    c = EmbeddedCluster(_nodes(150, memory, rng), seed=seed)
    out = []
    for i in range(120):  # single pods of several sizes fill part of the cluster first
        c.add_pod(_pod(f"s{i}", str(rng.choice(["500m", "1", "2"])), "1Gi" if memory else None), "j", 0.0)
    out += [(b.pod, b.node) for b in c.schedule(0.0)]
    for g in range(25):
        size = int(rng.integers(2, 40))
        cpu = str(rng.choice(["250m", "1", "3"]))
        c.add_pod_group(gangjobs.pod_group(f"g{g}", size, SimpleNamespace(priority=0), None), 1.0)
        for i in range(size):
            c.add_pod(_pod(f"g{g}-{i}", cpu, "512Mi" if memory else None, f"g{g}"), f"j{g}", 1.0)
        out += [(b.pod, b.node) for b in c.schedule(1.0)]
    return out


@pytest.mark.parametrize("memory", [False, True], ids=["cpu-only", "cpu-and-memory"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_cache_changes_no_placement(monkeypatch, memory, seed):
    cached = _placements(memory, seed)
    monkeypatch.setattr(scorecache.ScoreCache, "usable", staticmethod(lambda members: False))
    fresh = _placements(memory, seed)
    assert sum(p.startswith("g") for p, _ in fresh) > 50  # groups were placed, not only single pods
    assert cached == fresh
