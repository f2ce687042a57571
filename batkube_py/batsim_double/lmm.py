"""SimGrid 3.32's linear max-min system as the L07 model solves it (lmm/System.cpp, lmm/fair_bottleneck.cpp).

Batsim runs `host/model:ptask_L07`, whose solver is FairBottleneck: every round, each constraint's remaining
capacity is split evenly between the variables still growing on it (one share per element: a host that
appears twice in a ptask's host list holds two CPU elements), each variable grows by its smallest share
divided by its consumption weight (and no further than its bound), and a constraint whose remaining capacity
falls under maxmin/precision freezes its variables. The arithmetic is SimGrid's, step for step, because
completion dates are printed to the microsecond and rounding decides ties:

- a constraint's enabled elements are walked front first and an element joins at the front when its
  variable is enabled, so `Constraint.enabled` keeps them oldest first and is walked reversed;
- a frozen variable keeps its last increment (`mu`), which later rounds keep subtracting from the
  constraints it shares with growing variables, as SimGrid does;
- consumption weights add up per (constraint, variable) except on FATPIPE links (the max), and CPU
  elements are never merged (System::expand with force_creation).

Elements of weight 0 change nothing on a shared constraint and are not created. The system is solved per
connected component of the constraints touched since the last solve: components never exchange capacity,
so the others keep their values, as in SimGrid, whose L07 system has selective update on: it solves the
constraints reached from the modified ones (System::update_modified_cnst_set_rec). When the
compiled solve is built (lmmflat.py, _fairbottleneck.pyx), the system keeps its enabled elements as columns
and walks and solves the components in compiled code: same values, without rebuilding arrays.
"""

from __future__ import annotations

from itertools import count
from typing import Any

import numpy as np

from .lmmflat import Flat, fair_bottleneck

DBL_MAX = 1.7976931348623157e308
_STAMPS = count(1)


class Constraint:
    """A resource bound: a CPU (cores x speed) or a link (bandwidth); FATPIPE links are not shared."""

    __slots__ = ("name", "bound", "fatpipe", "enabled", "remaining", "usage", "seen")

    def __init__(self, name: str, bound: float, fatpipe: bool = False) -> None:
        self.name, self.bound, self.fatpipe = name, bound, fatpipe
        self.enabled: list[Element] = []  # oldest first; SimGrid walks them newest first
        self.remaining = 0.0
        self.usage = 0.0
        self.seen = 0


class Element:
    __slots__ = ("cnst", "var", "weight")

    def __init__(self, cnst: Constraint, var: Any, weight: float) -> None:
        self.cnst, self.var, self.weight = cnst, var, weight


def expand(elems: list[Element], cnst: Constraint, var: Any, weight: float, merge: bool) -> None:
    """System::expand: a new element, or (merge) more weight on the variable's element for this constraint."""
    if merge:
        for e in elems:
            if e.cnst is cnst:
                e.weight = max(e.weight, weight) if cnst.fatpipe else e.weight + weight
                return
    elems.append(Element(cnst, var, weight))


def _update(value: float, delta: float, precision: float) -> float:
    value -= delta
    return 0.0 if value < precision else value


class System:
    """The variables are the model's actions (fields value, mu, bound, penalty, elems, linked)."""

    def __init__(self, precision: float, compiled: bool = True) -> None:
        self.precision = precision
        self.dirty: list[Constraint] = []
        self.flat = Flat(precision) if compiled and fair_bottleneck is not None else None
        self.changed = False

    def enable(self, var: Any) -> None:
        """System::enable_var: the variable's elements join their constraints at the front, in its order."""
        if self.flat is not None:
            self.flat.enable(var)
            self.changed = True
            return
        for e in var.elems:
            e.cnst.enabled.append(e)
            self.dirty.append(e.cnst)

    def remove(self, var: Any) -> None:
        """disable_var / var_free of an enabled variable: its elements leave their constraints."""
        if self.flat is not None:
            self.flat.remove(var)
            self.changed = True
            var.value = 0.0
            return
        for e in var.elems:
            e.cnst.enabled.remove(e)
            self.dirty.append(e.cnst)
        var.value = 0.0

    def touch(self, var: Any) -> None:
        """update_variable_bound: the variable's constraints are solved again."""
        if self.flat is not None:
            self.flat.touch(var)
            self.changed = True
            return
        self.dirty.extend(e.cnst for e in var.elems)

    def solve(self) -> None:
        """System::solve restricted to the components of the constraints touched since the last call
        (compiled: the whole system, once something changed)."""
        if self.flat is not None:
            if self.changed:
                self.changed = False
                self.flat.solve()
            return
        dirty, self.dirty = self.dirty, []
        if not dirty:
            return
        stamp = next(_STAMPS)  # one counter for every system: platforms (constraints) may be shared
        for seed in dirty:
            if seed.seen == stamp:
                continue
            seed.seen = stamp
            cnsts, variables, stack = [seed], [], [seed]
            nelems = 0
            while stack:
                c = stack.pop()
                nelems += len(c.enabled)
                for e in c.enabled:
                    v = e.var
                    if v.seen != stamp:
                        v.seen = stamp
                        variables.append(v)
                        for e2 in v.elems:
                            c2 = e2.cnst
                            if c2.seen != stamp:
                                c2.seen = stamp
                                cnsts.append(c2)
                                stack.append(c2)
            if not variables:
                continue
            if nelems < NUMPY_FROM or not solve_numpy(variables, cnsts, self.precision):
                self._solve(variables, cnsts)

    def _solve(self, variables: list[Any], cnsts: list[Constraint]) -> None:
        """FairBottleneck::do_solve on one component (every variable here is enabled)."""
        precision = self.precision
        sat = []
        for v in variables:
            v.value = 0.0
            if v.elems:
                v.linked = True
                sat.append(v)
            else:
                v.value = 1.0
        for c in cnsts:
            c.remaining = c.bound
            c.usage = 0.0
        cl = cnsts
        while sat:
            kept = []
            for c in cl:
                nb = 0
                for e in c.enabled:
                    if e.var.linked:
                        nb += 1
                if nb and c.fatpipe:
                    nb = 1
                if nb == 0:
                    c.remaining = 0.0
                    c.usage = 0.0
                else:
                    c.usage = c.remaining / nb
                    kept.append(c)
            cl = kept
            grow = []
            for v in sat:
                inc = DBL_MAX
                for e in v.elems:
                    x = e.cnst.usage / e.weight
                    if x < inc:
                        inc = x
                bound = v.bound
                if bound > 0:
                    x = bound - v.value
                    if x < inc:
                        inc = x
                v.mu = inc
                v.value += inc
                if v.value == bound:
                    v.linked = False
                else:
                    grow.append(v)
            kept = []
            for c in cl:
                if not c.fatpipe:
                    rem = c.remaining
                    for e in reversed(c.enabled):
                        rem -= e.weight * e.var.mu
                        if rem < precision:
                            rem = 0.0
                    c.remaining = rem
                else:
                    usage = c.usage
                    for e in reversed(c.enabled):
                        x = e.weight * e.var.mu
                        if x < usage:
                            usage = x
                    c.usage = usage
                    c.remaining = _update(c.remaining, usage, precision)
                if c.remaining <= 0.0:
                    for e in c.enabled:
                        e.var.linked = False
                else:
                    kept.append(c)
            cl = kept
            sat = [v for v in grow if v.linked]


NUMPY_FROM = 48  # elements in a component from which the vectorised solver pays off


def solve_numpy(variables: list[Any], cnsts: list[Constraint], precision: float) -> bool:
    """FairBottleneck::do_solve vectorised over one component, bit for bit the loop above: min is exact in
    any order, and each constraint's remaining capacity is one sequential scan (np.add.accumulate along a
    row of its elements, newest first) that reaches SimGrid's clamped value as long as every increment is
    non-negative. False (nothing changed) when one is not: the loop then solves the component."""
    n = len(variables)
    for i, v in enumerate(variables):
        v.ix = i
    ec, ev, ew, cols = [], [], [], []
    width = 0
    for ci, c in enumerate(cnsts):
        k = len(c.enabled)
        width = max(width, k)
        for j, e in enumerate(reversed(c.enabled)):
            ec.append(ci)
            ev.append(e.var.ix)
            ew.append(e.weight)
            cols.append(j + 1)
    ec_a, ev_a, ew_a, cols_a = np.array(ec), np.array(ev), np.array(ew), np.array(cols)
    nc = len(cnsts)
    fat = np.array([c.fatpipe for c in cnsts])
    any_fat = bool(fat.any())
    rem = np.array([c.bound for c in cnsts])
    usage = np.zeros(nc)
    active = np.ones(nc, dtype=bool)
    bound = np.array([v.bound for v in variables])
    bounded = bound > 0
    value = np.zeros(n)
    mu = np.zeros(n)
    linked = np.ones(n, dtype=bool)
    grid = np.zeros((nc, width + 1))
    while linked.any():
        nb = np.bincount(ec_a, weights=linked[ev_a], minlength=nc)
        if any_fat:
            nb[fat & (nb > 0)] = 1
        gone = active & (nb == 0)
        rem[gone] = 0.0
        usage[gone] = 0.0
        active &= ~gone
        usage[active] = rem[active] / nb[active]
        inc = np.full(n, DBL_MAX)
        np.minimum.at(inc, ev_a, usage[ec_a] / ew_a)
        lim = linked & bounded
        inc[lim] = np.minimum(inc[lim], bound[lim] - value[lim])
        mu[linked] = inc[linked]
        value[linked] += inc[linked]
        linked &= ~(value == bound)
        take = mu[ev_a] * ew_a
        if (take < 0).any():
            return False
        grid[:, 0] = rem
        grid[ec_a, cols_a] = -take
        after = np.add.accumulate(grid, axis=1)[:, -1]
        after[after < precision] = 0.0
        if any_fat:
            fat_usage = usage.copy()
            on_fat = fat[ec_a]
            np.minimum.at(fat_usage, ec_a[on_fat], take[on_fat])
            fat_rem = rem - fat_usage
            fat_rem[fat_rem < precision] = 0.0
            usage = np.where(fat & active, fat_usage, usage)
            after = np.where(fat, fat_rem, after)
        rem = np.where(active, after, rem)
        full = active & (rem <= 0.0)
        active &= ~full
        linked[ev_a[full[ec_a]]] = False
    for i, v in enumerate(variables):
        v.value = float(value[i])
        v.mu = float(mu[i])
        v.linked = False
    return True
