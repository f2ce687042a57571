"""Which of the best-scored nodes wins: seeded reservoir sampling (1.32) or the root of a Go heap (1.37).

1.32 (schedule_one.go, selectHost): among the nodes sharing the highest score, each is chosen with equal
probability; the twin draws that choice from the profile's seeded generator.

1.37 (since 1.35, #135231): schedulePod puts the scored nodes, in the order filtering found them, into
framework.NewSortedScoredNodes (framework/sorted_nodes.go) — a container/heap whose Less is "higher total
score, or an equal score and a higher Randomizer" — and pops the root. Randomizer is only set for nodes an
extender scored, so without extenders it is 0 everywhere and the winner is whatever heap.Init leaves at
index 0. That is not simply the first best node: Init sifts down from n/2−1 to 0, moving a node down only
below a strictly better child, and preferring the left child unless the right one is strictly better.
With `parallelism: 1` the filtering order is the rotation from nextStartNodeIndex; with more workers it
is the order they found the nodes in, which the twin draws from the seed (filterorder.py), so that the
1.37 winner among tied nodes varies with `--seed` as it varies from run to run upstream.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def go_heap_root_numpy(total: np.ndarray) -> int:
    """Index (into `total`) of the root after Go's heap.Init with Less(i, j) = total[i] > total[j]."""
    h = list(range(total.size))
    s = total.tolist()
    n = len(h)
    for i0 in range(n // 2 - 1, -1, -1):  # heap.Init: down(i) for i = n/2-1 … 0
        i = i0
        while True:
            j = 2 * i + 1
            if j >= n:
                break
            if j + 1 < n and s[h[j + 1]] > s[h[j]]:  # right child only if strictly better
                j += 1
            if not s[h[j]] > s[h[i]]:
                break
            h[i], h[j] = h[j], h[i]
            i = j
    return h[0]


try:
    from batkube_py.scheduler._kernels import go_heap_root
except ImportError:  # installed without a C compiler
    go_heap_root = go_heap_root_numpy


def pick(
    total: np.ndarray,
    first: int,
    count: int,
    version: str,
    rng: np.random.Generator,
    found_order: Callable[[], np.ndarray] | None = None,
) -> int:
    """Index into `total` of the chosen node; `first`/`count`: the first best index and how many tie.

    `total` is in the order filtering found the nodes, or, when `found_order` is given, in rotation
    order with `found_order()` drawing the order parallel workers found them in (filterorder.py): drawn
    only when 1.37's heap needs it, since 1.32's uniform choice does not depend on the order."""
    if count == 1:
        return first
    if version == "1.32":
        return int((total == total[first]).nonzero()[0][rng.integers(count)])
    if found_order is not None:
        order = found_order()
        return int(order[go_heap_root(total[order])])
    return int(go_heap_root(total))


def rule(version: str, parallelism: int) -> str:
    """How a profile breaks ties, as the decision record names it (`batkube explain` says it in words)."""
    if version == "1.32":
        return "uniform"
    return "heap-drawn-order" if parallelism > 1 else "heap-rotation"
