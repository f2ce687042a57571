"""The vectorised and the compiled FairBottleneck solves equal the step-by-step one bit for bit (values,
frozen increments)."""

from __future__ import annotations

import random

import pytest

from batkube_py.batsim_double import lmmflat
from batkube_py.batsim_double.lmm import Constraint, System, expand, solve_numpy


class Var:
    __slots__ = ("value", "mu", "bound", "linked", "elems", "seen", "ix", "vslot", "estart")

    def __init__(self, bound: float) -> None:
        self.value, self.mu, self.bound, self.linked, self.elems, self.seen, self.ix = (
            0.0,
            0.0,
            bound,
            False,
            [],
            0,
            0,
        )
        self.vslot, self.estart = -1, 0


def system(seed: int) -> tuple[list[Var], list[Constraint]]:
    """Ptask-like components: bounded variables (one core per executor), CPU and link constraints, a few
    FATPIPE loopbacks, weights of flops and bytes, repeated elements on a CPU (mappings)."""
    rng = random.Random(seed)
    cnsts = [
        Constraint(f"c{i}", rng.choice([4e9, 1.25e9, 2.5e9, 0.125e9, 1e10]), rng.random() < 0.1)
        for i in range(rng.randint(2, 60))
    ]
    variables = []
    for _ in range(rng.randint(1, 30)):
        v = Var(rng.choice([0.5, 0.2, 0.25, 1 / 3, 0.1, 6.25, 0.125]))
        for c in rng.sample(cnsts, rng.randint(1, min(8, len(cnsts)))):
            expand(v.elems, c, v, rng.choice([1.0, 2e8, 1e9, 5e9, 3e9, 4e8]), rng.random() > 0.2)
        variables.append(v)
    for v in variables:
        for e in v.elems:
            e.cnst.enabled.append(e)
    return variables, cnsts


def test_numpy_solve_is_the_loop() -> None:
    compared = 0
    for seed in range(400):
        variables, cnsts = system(seed)
        System(1e-5)._solve(variables, cnsts)
        loop = [(v.value, v.mu) for v in variables]
        variables, cnsts = system(seed)
        if solve_numpy(variables, cnsts, 1e-5):
            assert [(v.value, v.mu) for v in variables] == loop, seed
            compared += 1
    assert compared > 390


def test_the_solver_is_built() -> None:
    """`pip install` compiles it (a C compiler is needed); without it the double solves in Python."""
    assert lmmflat.fair_bottleneck is not None, "batsim_double._fairbottleneck is missing: reinstall"


def churn(seed: int, compiled: bool) -> list[list[tuple[float, float]]]:
    """Variables enabled and removed at random on shared constraints (several components at once, rows
    dropped and compacted), solved after every change: each solve's (value, mu) of the enabled ones."""
    rng = random.Random(seed)
    cnsts = [
        Constraint(f"c{i}", rng.choice([4e9, 1.25e9, 2.5e9, 0.125e9, 1e10]), rng.random() < 0.1)
        for i in range(rng.randint(5, 80))
    ]
    system = System(1e-5, compiled=compiled)
    assert (system.flat is not None) == compiled
    enabled: list[Var] = []
    out = []
    for _ in range(700):
        if enabled and (len(enabled) > 40 or rng.random() < 0.45):
            system.remove(enabled.pop(rng.randrange(len(enabled))))
        else:
            v = Var(rng.choice([0.5, 0.2, 0.25, 1 / 3, 0.1, 6.25, 0.125]))
            for c in rng.sample(cnsts, rng.randint(1, min(8, len(cnsts)))):
                expand(v.elems, c, v, rng.choice([1.0, 2e8, 1e9, 5e9, 3e9, 4e8]), rng.random() > 0.2)
            system.enable(v)
            enabled.append(v)
        system.solve()
        out.append([(v.value, v.mu) for v in enabled])
    return out


def test_compiled_solve_is_the_loop() -> None:
    if lmmflat.fair_bottleneck is None:
        pytest.fail("batsim_double._fairbottleneck is missing")
    for seed in range(6):
        assert churn(seed, True) == churn(seed, False), seed
