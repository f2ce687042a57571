"""Which feasible nodes a cycle finds, in which order, and how many nodes it goes through (1.32 and 1.37).

schedule_one.go findNodesThatPassFilters checks the n nodes from nextStartNodeIndex through
Parallelizer.Until (framework/parallelize/parallelism.go): the n pieces are cut into chunks of
chunkSizeFor(n, parallelism) = max(1, min(⌊√n⌋, n/parallelism + 1)) and handed out in order, over a
channel, to min(parallelism, chunks) workers (client-go workqueue.ParallelizeUntil), each checking its
chunk piece by piece. A node that passes takes the next slot of the feasible list through an atomic
counter, so the list is in completion order. The (want+1)-th feasible node (want: numFeasibleNodesToFind)
cancels the context and is dropped; every worker checks the cancellation before its next piece, so the
pieces already begun still finish, and those that fail count as processed: nextStartNodeIndex moves by
want + the failed nodes checked.

`parallelism: 1` makes that exact: the rotation order, and `processed` is the position of the
(want+1)-th feasible node. With more workers the possible orders are the interleavings of the chunks'
sequences in which chunk k begins only when fewer than `workers` chunks before it are unfinished. The
twin draws one from the seed: on its worker, each piece waits an exponential time (mean 1/2: the
worker reaching its cancellation check) and then takes another (its filters), and each chunk goes to the
first free worker, so every possible interleaving, and every possible set of nodes checked before the
cancellation, has a positive probability. The probabilities are a model, not a measurement:
which interleaving a real kube-scheduler produces depends on its cores and Go's goroutine scheduling.
"""

from __future__ import annotations

import functools
import heapq
import math

import numpy as np


@functools.lru_cache(maxsize=64)  # asked once per cycle with the same few arguments
def num_feasible_nodes_to_find(n: int, percentage: int) -> int:
    """schedule_one.go numFeasibleNodesToFind: all nodes below 100, else an adaptive share (≥ 5 %)."""
    if n < 100 or percentage >= 100:
        return n
    if percentage <= 0:
        percentage = max(5, 50 - n // 125)
    return max(100, n * percentage // 100)


def chunk_size(n: int, parallelism: int) -> int:
    """parallelism.go chunkSizeFor."""
    return max(1, min(math.isqrt(n), n // parallelism + 1))


def timeline(n: int, parallelism: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(when each piece's check ended, when it began), by position from the start index, for one draw."""
    size = chunk_size(n, parallelism)
    starts = np.arange(0, n, size)
    workers = min(parallelism, starts.size)
    pause = rng.standard_exponential(n) / 2  # before a piece: reaching the cancellation check
    took = rng.standard_exponential(n) / 2  # the piece itself
    cum = np.cumsum(pause + took)
    before = np.concatenate(([0.0], cum[starts[1:] - 1]))  # work done before each chunk, in piece order
    length = np.append(before[1:], cum[-1]) - before
    begins = np.zeros(starts.size)
    if starts.size > workers:  # later chunks wait for the first free worker
        free = [0.0] * workers
        for k in range(starts.size):
            begins[k] = heapq.heappop(free)
            heapq.heappush(free, begins[k] + length[k])
    chunk = np.arange(n) // size
    done = cum - before[chunk] + begins[chunk]
    begun = done - took
    return done, begun


def completion_order(pos: np.ndarray, n: int, parallelism: int, rng: np.random.Generator) -> np.ndarray:
    """The order (indices into `pos`, positions from the start index) in which a draw finds every node."""
    return np.argsort(timeline(n, parallelism, rng)[0][pos], kind="stable")


def cut(pos: np.ndarray, n: int, want: int, parallelism: int, rng: np.random.Generator):
    """Upstream stopping after `want` of the len(pos) > want feasible nodes (positions `pos`, ascending).

    Returns (indices into `pos` of the nodes found, in the list's order; how many nodes were processed;
    which positions were checked before the cancellation, None meaning the first `processed`).
    """
    if parallelism <= 1:
        return np.arange(want), int(pos[want]), None
    done, begun = timeline(n, parallelism, rng)
    t = done[pos]
    part = np.argpartition(t, want)
    found = part[:want][np.argsort(t[part[:want]], kind="stable")]
    checked = begun < t[part[want]]  # begun before the (want+1)-th feasible node cancelled
    checked[pos] = False
    processed = want + int(np.count_nonzero(checked))
    checked[pos[found]] = True
    return found, processed, checked


def recount(levels: list, examined: np.ndarray) -> tuple[dict[str, int], set[str]]:
    """Reasons and rejecting plugins over the `examined` nodes (a mask over all nodes), from the masks of
    the filters that rejected some (plugin name, nodes given, FilterResult)."""
    reasons: dict[str, int] = {}
    rejected: set[str] = set()
    for name, given, result in levels:
        seen = examined[given]
        for reason, bad in result.masks.items():
            if (k := int(np.count_nonzero(bad & seen))) > 0:
                rejected.add(name)
                reasons[reason] = reasons.get(reason, 0) + k
    return reasons, rejected
