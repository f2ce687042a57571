"""The enabled elements of an LMM system as columns, for the compiled FairBottleneck solve.

Walking the components and building arrays at every event cost more than solving them. Here elements get
a row when their variable is enabled (appended in the variable's order, so each constraint's rows are its
enabled list, oldest first) and lose it when the variable leaves; the compiled kernel
(_fairbottleneck.pyx) solves every row at once, and the values are copied back to the variables.
"""

from __future__ import annotations

from typing import Any

import numpy as np

try:
    from ._fairbottleneck import fair_bottleneck
except ImportError:  # no C compiler at install time: lmm.System solves per component in Python
    fair_bottleneck = None


def _grow(a: np.ndarray, fill: Any) -> np.ndarray:
    return np.concatenate([a, np.full(len(a), fill, dtype=a.dtype)])


class Flat:
    """Element rows (constraint, variable slot, weight), constraint columns and variable slots."""

    def __init__(self, precision: float) -> None:
        self.precision = precision
        self.cix: dict[Any, int] = {}
        self.c_bound = np.zeros(64)
        self.c_fat = np.zeros(64, dtype=np.uint8)
        self.ne = 0
        self.dead = 0
        self.e_c = np.zeros(256, dtype=np.intc)
        self.e_v = np.full(256, -1, dtype=np.intc)
        self.e_w = np.zeros(256)
        self.vars: list[Any] = []
        self.free: list[int] = []
        self.v_bound = np.zeros(64)
        self.v_on = np.zeros(64, dtype=np.uint8)
        self._scratch()

    def _scratch(self) -> None:
        nc, nv = len(self.c_bound), len(self.v_bound)
        self.value, self.mu, self.inc = np.zeros(nv), np.zeros(nv), np.zeros(nv)
        self.linked = np.zeros(nv, dtype=np.uint8)
        self.rem, self.usage = np.zeros(nc), np.zeros(nc)
        self.nb = np.zeros(nc, dtype=np.intc)
        self.c_act = np.zeros(nc, dtype=np.uint8)

    def _constraint(self, cnst: Any) -> int:
        ix = self.cix.get(cnst)
        if ix is None:
            ix = self.cix[cnst] = len(self.cix)
            if ix == len(self.c_bound):
                self.c_bound, self.c_fat = _grow(self.c_bound, 0.0), _grow(self.c_fat, 0)
                self._scratch()
            self.c_bound[ix] = cnst.bound
            self.c_fat[ix] = cnst.fatpipe
        return ix

    def enable(self, var: Any) -> None:
        if self.free:
            slot = self.free.pop()
            self.vars[slot] = var
        else:
            slot = len(self.vars)
            self.vars.append(var)
            if slot == len(self.v_bound):
                self.v_bound, self.v_on = _grow(self.v_bound, 0.0), _grow(self.v_on, 0)
                self._scratch()
        var.vslot = slot
        self.v_bound[slot] = var.bound
        self.v_on[slot] = 1
        elems = var.elems
        start, end = self.ne, self.ne + len(elems)
        while end > len(self.e_c):
            self.e_c, self.e_v, self.e_w = _grow(self.e_c, 0), _grow(self.e_v, -1), _grow(self.e_w, 0.0)
        self.e_c[start:end] = [self._constraint(e.cnst) for e in elems]
        self.e_v[start:end] = slot
        self.e_w[start:end] = [e.weight for e in elems]
        var.estart = start
        self.ne = end

    def remove(self, var: Any) -> None:
        slot, n = var.vslot, len(var.elems)
        self.e_v[var.estart : var.estart + n] = -1
        self.dead += n
        self.v_on[slot] = 0
        self.vars[slot] = None
        self.free.append(slot)
        var.vslot = -1
        if self.dead > 256 and self.dead * 2 > self.ne:
            self._compact()

    def _compact(self) -> None:
        """Drops dead rows, keeping the others' order (each constraint's enabled order)."""
        ne = self.ne
        alive = self.e_v[:ne] >= 0
        moved = np.cumsum(alive) - 1
        for var in self.vars:
            if var is not None:
                var.estart = int(moved[var.estart])
        n = int(alive.sum())
        for a in (self.e_c, self.e_v, self.e_w):
            a[:n] = a[:ne][alive]
        self.e_v[n:ne] = -1
        self.ne, self.dead = n, 0

    def solve(self) -> None:
        nv = len(self.vars)
        fair_bottleneck(
            self.e_c, self.e_v, self.e_w, self.ne,
            self.c_bound, self.c_fat, len(self.cix),
            self.v_bound, self.v_on, nv,
            self.value, self.mu, self.precision,
            self.rem, self.usage, self.nb, self.c_act, self.linked, self.inc,
        )  # fmt: skip
        values, mus = self.value[:nv].tolist(), self.mu[:nv].tolist()
        for slot, var in enumerate(self.vars):
            if var is not None:
                var.value, var.mu = values[slot], mus[slot]
