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
so the others keep their values (SimGrid re-solves everything; the values are the same).
"""

from __future__ import annotations

from typing import Any

DBL_MAX = 1.7976931348623157e308


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

    def __init__(self, precision: float) -> None:
        self.precision = precision
        self.dirty: list[Constraint] = []
        self._stamp = 0

    def enable(self, var: Any) -> None:
        """System::enable_var: the variable's elements join their constraints at the front, in its order."""
        for e in var.elems:
            e.cnst.enabled.append(e)
            self.dirty.append(e.cnst)

    def remove(self, var: Any) -> None:
        """disable_var / var_free of an enabled variable: its elements leave their constraints."""
        for e in var.elems:
            e.cnst.enabled.remove(e)
            self.dirty.append(e.cnst)
        var.value = 0.0

    def touch(self, var: Any) -> None:
        """update_variable_bound: the variable's constraints are solved again."""
        self.dirty.extend(e.cnst for e in var.elems)

    def solve(self) -> None:
        """System::solve restricted to the components of the constraints touched since the last call."""
        dirty, self.dirty = self.dirty, []
        if not dirty:
            return
        self._stamp += 1
        stamp = self._stamp
        for seed in dirty:
            if seed.seen == stamp:
                continue
            seed.seen = stamp
            cnsts, variables, stack, known = [seed], [], [seed], set()
            while stack:
                c = stack.pop()
                for e in c.enabled:
                    v = e.var
                    if id(v) not in known:
                        known.add(id(v))
                        variables.append(v)
                        for e2 in v.elems:
                            c2 = e2.cnst
                            if c2.seen != stamp:
                                c2.seen = stamp
                                cnsts.append(c2)
                                stack.append(c2)
            if variables:
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
