"""The compiled loops give exactly what the plugins' general numpy code gives (their fallback).

Tables are filled by placing random pods (so every kept column is consistent), including pods over a
node's capacity via reservations, zero requests, hosts without memory and nodes of different sizes.
"""

import numpy as np
import pytest
from test_plugins_common import pod, table

from batkube_py.scheduler.plugins import noderesources

kernels = noderesources._kernels


def both(monkeypatch, method, *args):
    """`method(None, *args)` with the compiled loops, then with the numpy code."""
    with_loops = method(None, *args)
    with monkeypatch.context() as m:
        m.setattr(noderesources, "_kernels", None)
        return with_loops, method(None, *args)


CPUS = ["250m", "500m", "1", "2", "4", None]
MEMS = ["64Mi", "256Mi", "1Gi", "4Gi", None]


def test_the_kernels_are_built():
    """`pip install` compiles them (a C compiler is needed); without them cycles are slower."""
    assert kernels is not None, "batkube_py.scheduler._kernels is missing: reinstall with a C compiler"


def filled(seed: int, uniform: bool, memory: bool = True):
    rng = np.random.default_rng(seed)
    sizes = (
        [("8", "32Gi")] * 60 if uniform else [(c, m) for c in ("4", "8", "16") for m in ("8Gi", "32Gi")] * 10
    )
    specs = [{"cpu": c, **({"memory": m} if memory else {}), "pods": "6"} for c, m in sizes]
    nodes = table(*specs)
    for k in range(420):
        job = {"cpu": CPUS[rng.integers(len(CPUS))], "memory": MEMS[rng.integers(len(MEMS))]}
        info = pod(f"p{k}", **{f: v for f, v in job.items() if v is not None})
        i = int(rng.integers(len(nodes)))
        if k >= 400:  # counted without fit checks, as nominated pods are: some columns go over capacity
            nodes.reserve(i, info, +1)
        elif noderesources.NodeResourcesFit().feasible_mask(None, info, nodes)[i]:
            nodes.assume(i, info)
    return nodes, rng


def probes():
    yield pod("none")
    for c in CPUS:
        for m in MEMS:
            yield pod("x", **{f: v for f, v in {"cpu": c, "memory": m}.items() if v is not None})
    yield pod("big", cpu="64", memory="512Gi")


@pytest.mark.parametrize("uniform", [True, False])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_scores_equal_the_numpy_versions(monkeypatch, seed, uniform):
    assert kernels is not None
    nodes, rng = filled(seed, uniform)
    assert nodes.models_cpu_mem and (len(set(nodes.alloc_cpu.tolist())) == 1) == uniform
    windows = [nodes.all, rng.permutation(nodes.all)[:17], np.concatenate((nodes.all[40:], nodes.all[:40]))]
    fit, balanced = noderesources.NodeResourcesFit(), noderesources.BalancedAllocation()
    checked = 0
    for p in probes():
        for idx in windows:
            least, least_np = both(monkeypatch, fit.score, p, nodes, idx)
            assert least.tolist() == least_np.tolist()
            bal, bal_np = both(monkeypatch, balanced.score, p, nodes, idx)
            assert bal.tolist() == bal_np.tolist()
            checked += int((least == 0).sum() > 0) + int(len(set(bal.tolist())) > 1)
    assert checked > 10  # the tables do reach over-capacity nodes and varied balances


@pytest.mark.parametrize("uniform", [True, False])
@pytest.mark.parametrize("seed", [4, 5])
def test_cpu_only_scores_equal_the_numpy_versions(monkeypatch, seed, uniform):
    """Nodes without memory: LeastAllocated's cpu-only loop, and BalancedAllocation's constant, equal to
    the general code (the resource columns, as a custom resource list computes them)."""
    assert kernels is not None
    nodes, rng = filled(seed, uniform, memory=False)
    assert nodes.models_cpu_only
    windows = [nodes.all, rng.permutation(nodes.all)[:17], np.concatenate((nodes.all[40:], nodes.all[:40]))]
    fit, balanced = noderesources.NodeResourcesFit(), noderesources.BalancedAllocation()
    general = noderesources.BalancedAllocation(["cpu", "memory"])
    general._default = False  # the per-resource columns: no shortcut
    seen = set()
    for version in ("1.32", "1.37"):
        balanced.kube_version = general.kube_version = version
        for p in probes():
            for idx in windows:
                least, least_np = both(monkeypatch, fit.score, p, nodes, idx)
                assert least.tolist() == least_np.tolist()
                seen.update(least.tolist())
                shortcut, columns = (b.score(None, p, nodes, idx).tolist() for b in (balanced, general))
                assert shortcut == columns
    assert len(seen) > 3 and 0 in seen


@pytest.mark.parametrize("memory", [True, False])
def test_fit_mask_equals_the_numpy_version(monkeypatch, memory):
    assert kernels is not None
    nodes, _ = filled(7, uniform=False, memory=memory)
    fit = noderesources.NodeResourcesFit()
    seen = set()
    for p in probes():
        mask, mask_np = both(monkeypatch, fit.feasible_mask, p, nodes)
        assert mask.dtype == bool and mask.tolist() == mask_np.tolist()
        seen.add(int(mask.sum()))
    assert len(seen) > 3 and 0 in seen


@pytest.mark.parametrize("seed", range(20))
def test_first_max_matches_numpy(seed):
    """The pick's (first highest, tie count) on scores with many ties, few ties and a single node."""
    from batkube_py.scheduler import framework

    rng = np.random.default_rng(seed)
    for size in (1, 2, 7, 420, 1000):
        total = rng.integers(0, 3 if seed % 2 else 300, size=size).astype(np.int64)
        got = framework.first_max(total)
        assert got == framework.first_max_numpy(total)
        assert total[got[0]] == total.max() and got[1] == np.count_nonzero(total == total.max())
    assert framework.first_max is not framework.first_max_numpy  # the compiled loop is the one in use
