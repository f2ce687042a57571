"""Go's sort.Slice, element for element: where it leaves elements the less function calls equal.

kube-scheduler sorts preemption victims with sort.Slice (SelectVictimsOnNode), which is not stable:
victims of equal importance end up in an order that depends on the algorithm. Go (1.19 on, go1.26 here:
sort/zsortfunc.go) runs pattern-defeating quicksort: insertion sort on 12 elements or fewer (stable),
otherwise a pivot from a median of three (Tukey's ninther from 50), a partition that swaps from both
ends, a shortcut for runs that look sorted, a fall-back to heapsort after too many unbalanced
partitions, and a deterministic xorshift (seeded with the length) to break patterns. This module
reproduces those steps over a Python list so that the twin's victims come out in the same order; it is
checked against sort.Slice's own output in tests/test_gosort.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
_INSERTION = 12
_NINTHER = 50
_MAX_SWAPS = 12
_MASK64 = (1 << 64) - 1


class _Data:
    """The slice and its less, as Go's lessSwap sees them (indices)."""

    def __init__(self, items: list, less: Callable) -> None:
        self.items, self._less = items, less

    def less(self, i: int, j: int) -> bool:
        return self._less(self.items[i], self.items[j])

    def swap(self, i: int, j: int) -> None:
        self.items[i], self.items[j] = self.items[j], self.items[i]


def sort_slice(items: list[T], less: Callable[[T, T], bool]) -> list[T]:
    """`items` sorted in place as Go's sort.Slice(items, less) leaves them; returns `items`."""
    n = len(items)
    _pdq(_Data(items, less), 0, n, n.bit_length())
    return items


def _insertion(d: _Data, a: int, b: int) -> None:
    for i in range(a + 1, b):
        j = i
        while j > a and d.less(j, j - 1):
            d.swap(j, j - 1)
            j -= 1


def _sift_down(d: _Data, lo: int, hi: int, first: int) -> None:
    root = lo
    while (child := 2 * root + 1) < hi:
        if child + 1 < hi and d.less(first + child, first + child + 1):
            child += 1
        if not d.less(first + root, first + child):
            return
        d.swap(first + root, first + child)
        root = child


def _heapsort(d: _Data, a: int, b: int) -> None:
    hi = b - a
    for i in range((hi - 1) // 2, -1, -1):
        _sift_down(d, i, hi, a)
    for i in range(hi - 1, -1, -1):
        d.swap(a, a + i)
        _sift_down(d, 0, i, a)


def _pdq(d: _Data, a: int, b: int, limit: int) -> None:
    balanced = partitioned = True
    while True:
        length = b - a
        if length <= _INSERTION:
            _insertion(d, a, b)
            return
        if limit == 0:
            _heapsort(d, a, b)
            return
        if not balanced:
            _break_patterns(d, a, b)
            limit -= 1
        pivot, hint = _choose_pivot(d, a, b)
        if hint < 0:  # decreasing: reverse, and the pivot with it
            i, j = a, b - 1
            while i < j:
                d.swap(i, j)
                i, j = i + 1, j - 1
            pivot, hint = (b - 1) - (pivot - a), 1
        if balanced and partitioned and hint > 0 and _partial_insertion(d, a, b):
            return
        if a > 0 and not d.less(a - 1, pivot):  # many equal to the pivot: those first
            a = _partition_equal(d, a, b, pivot)
            continue
        mid, partitioned = _partition(d, a, b, pivot)
        left, right = mid - a, b - mid
        if left < right:
            balanced = left >= length // 8
            _pdq(d, a, mid, limit)
            a = mid + 1
        else:
            balanced = right >= length // 8
            _pdq(d, mid + 1, b, limit)
            b = mid


def _partition(d: _Data, a: int, b: int, pivot: int) -> tuple[int, bool]:
    d.swap(a, pivot)
    i, j = a + 1, b - 1
    while i <= j and d.less(i, a):
        i += 1
    while i <= j and not d.less(j, a):
        j -= 1
    if i > j:
        d.swap(j, a)
        return j, True
    d.swap(i, j)
    i, j = i + 1, j - 1
    while True:
        while i <= j and d.less(i, a):
            i += 1
        while i <= j and not d.less(j, a):
            j -= 1
        if i > j:
            break
        d.swap(i, j)
        i, j = i + 1, j - 1
    d.swap(j, a)
    return j, False


def _partition_equal(d: _Data, a: int, b: int, pivot: int) -> int:
    d.swap(a, pivot)
    i, j = a + 1, b - 1
    while True:
        while i <= j and not d.less(a, i):
            i += 1
        while i <= j and d.less(a, j):
            j -= 1
        if i > j:
            return i
        d.swap(i, j)
        i, j = i + 1, j - 1


def _partial_insertion(d: _Data, a: int, b: int) -> bool:
    """Sorted already, or after at most 5 shifts of out-of-order pairs (none below 50 elements)."""
    i = a + 1
    for _ in range(5):
        while i < b and not d.less(i, i - 1):
            i += 1
        if i == b:
            return True
        if b - a < 50:
            return False
        d.swap(i, i - 1)
        if i - a >= 2:
            j = i - 1
            while j >= 1 and d.less(j, j - 1):
                d.swap(j, j - 1)
                j -= 1
        if b - i >= 2:
            j = i + 1
            while j < b and d.less(j, j - 1):
                d.swap(j, j - 1)
                j += 1
    return False


def _break_patterns(d: _Data, a: int, b: int) -> None:
    length = b - a
    if length < 8:
        return
    state = length
    modulus = 1 << length.bit_length()
    mid = a + (length // 4) * 2
    for idx in range(mid - 1, mid + 2):
        state ^= (state << 13) & _MASK64
        state ^= state >> 7
        state ^= (state << 17) & _MASK64
        other = state & (modulus - 1)
        if other >= length:
            other -= length
        d.swap(idx, a + other)


def _choose_pivot(d: _Data, a: int, b: int) -> tuple[int, int]:
    """(pivot, hint): hint 1 increasing (no swap), -1 decreasing (every comparison swapped), 0 unknown."""
    n = b - a
    swaps = [0]
    i, j, k = a + n // 4, a + n // 4 * 2, a + n // 4 * 3
    if n >= 8:
        if n >= _NINTHER:
            i, j, k = (_median(d, x - 1, x, x + 1, swaps) for x in (i, j, k))
        j = _median(d, i, j, k, swaps)
    if swaps[0] == 0:
        return j, 1
    return j, -1 if swaps[0] == _MAX_SWAPS else 0


def _median(d: _Data, x: int, y: int, z: int, swaps: list[int]) -> int:
    x, y = _order2(d, x, y, swaps)
    y, z = _order2(d, y, z, swaps)
    x, y = _order2(d, x, y, swaps)
    return y


def _order2(d: _Data, x: int, y: int, swaps: list[int]) -> tuple[int, int]:
    if d.less(y, x):
        swaps[0] += 1
        return y, x
    return x, y
