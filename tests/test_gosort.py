"""scheduler/gosort.py against Go's own sort.Slice (go1.26.8): the permutations in
fixtures/go_sort_slice.txt were printed by a Go program sorting indices by keys with many ties, so every
pdqsort path (insertion, median of three, ninther, equal partitions, pattern breaking) leaves equal
elements where Go leaves them."""

from __future__ import annotations

from pathlib import Path

import pytest

from batkube_py.scheduler.gosort import sort_slice

CASES = [
    line.split(" ", 3)
    for line in (Path(__file__).parent / "fixtures" / "go_sort_slice.txt").read_text().splitlines()
    if not line.startswith("#")
]


@pytest.mark.parametrize(("n", "seed", "mod", "want"), CASES, ids=[f"n{c[0]}-mod{c[2]}" for c in CASES])
def test_equal_elements_land_where_go_puts_them(n, seed, mod, want):
    n, seed, mod = int(n), int(seed), int(mod)
    key = [(31 * i * i + 7919 * i + 104729 * seed) % mod for i in range(n)]
    got = sort_slice(list(range(n)), lambda a, b: key[a] < key[b])
    assert got == [int(x) for x in want.strip("[]").split()]
    assert [key[i] for i in got] == sorted(key)


def test_up_to_12_elements_it_is_stable():
    key = [2, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2]
    got = sort_slice(list(range(12)), lambda a, b: key[a] < key[b])
    assert got == sorted(range(12), key=lambda i: key[i])
