"""The enabled elements of an LMM system as columns, for the compiled FairBottleneck solve.

Walking the components and building arrays at every event cost more than solving them. Here elements get
a row when their variable is enabled (appended in the variable's order, so each constraint's rows are its
enabled list, oldest first) and lose it when the variable leaves; their constraints are marked dirty, and
the compiled kernel (_fairbottleneck.pyx) solves the components of the dirty constraints, whose values
are copied back to the variables (the others' values are unchanged). A constraint's bound is read when
it first gets a row: the double never changes a host's speed or a link's bandwidth.
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
        self.c_dirty = np.zeros(64, dtype=np.uint8)
        self.ne = 0
        self.dead = 0
        self.e_c = np.zeros(256, dtype=np.intc)
        self.e_v = np.full(256, -1, dtype=np.intc)
        self.e_w = np.zeros(256)
        self.vars: list[Any] = []
        self.free: list[int] = []
        self.v_bound = np.zeros(64)
        self.v_start = np.zeros(64, dtype=np.intc)
        self.v_cnt = np.zeros(64, dtype=np.intc)
        self.value, self.mu = np.zeros(64), np.zeros(64)
        self.solved = np.zeros(64, dtype=np.intc)

    def _constraint(self, cnst: Any) -> int:
        ix = self.cix.get(cnst)
        if ix is None:
            ix = self.cix[cnst] = len(self.cix)
            if ix == len(self.c_bound):
                self.c_bound, self.c_fat = _grow(self.c_bound, 0.0), _grow(self.c_fat, 0)
                self.c_dirty = _grow(self.c_dirty, 0)
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
                self.v_bound, self.v_start, self.v_cnt = (
                    _grow(self.v_bound, 0.0),
                    _grow(self.v_start, 0),
                    _grow(self.v_cnt, 0),
                )
                self.value, self.mu = _grow(self.value, 0.0), _grow(self.mu, 0.0)
                self.solved = _grow(self.solved, 0)
        var.vslot = slot
        self.v_bound[slot] = var.bound
        elems = var.elems
        start, end = self.ne, self.ne + len(elems)
        while end > len(self.e_c):
            self.e_c, self.e_v, self.e_w = _grow(self.e_c, 0), _grow(self.e_v, -1), _grow(self.e_w, 0.0)
        self.e_c[start:end] = [self._constraint(e.cnst) for e in elems]
        self.e_v[start:end] = slot
        self.e_w[start:end] = [e.weight for e in elems]
        self.c_dirty[self.e_c[start:end]] = 1
        var.estart = self.v_start[slot] = start
        self.v_cnt[slot] = len(elems)
        self.ne = end

    def touch(self, var: Any) -> None:
        self.v_bound[var.vslot] = var.bound
        self.c_dirty[self.e_c[var.estart : var.estart + len(var.elems)]] = 1

    def remove(self, var: Any) -> None:
        slot, n = var.vslot, len(var.elems)
        self.c_dirty[self.e_c[var.estart : var.estart + n]] = 1
        self.e_v[var.estart : var.estart + n] = -1
        self.dead += n
        self.v_cnt[slot] = 0
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
                var.estart = self.v_start[var.vslot] = int(moved[var.estart])
        n = int(alive.sum())
        for a in (self.e_c, self.e_v, self.e_w):
            a[:n] = a[:ne][alive]
        self.e_v[n:ne] = -1
        self.ne, self.dead = n, 0

    def solve(self) -> None:
        n = fair_bottleneck(
            self.e_c, self.e_v, self.e_w, self.ne,
            self.c_bound, self.c_fat, self.c_dirty, len(self.cix),
            self.v_bound, self.v_start, self.v_cnt, len(self.vars),
            self.value, self.mu, self.precision, self.solved,
        )  # fmt: skip
        variables, value, mu = self.vars, self.value, self.mu
        for slot in self.solved[:n].tolist():
            var = variables[slot]
            var.value, var.mu = value.item(slot), mu.item(slot)
