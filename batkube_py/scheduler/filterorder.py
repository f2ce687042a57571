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
twin draws one from the seed: on its worker, each piece waits an exponential time (the worker reaching
its cancellation check) and then takes another of the same mean (its filters), and each chunk goes to
the first free worker, so every possible interleaving, and every possible set of nodes checked before the
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


@functools.lru_cache(maxsize=64)
def _layout(n: int, parallelism: int) -> tuple[int, int, np.ndarray]:
    """(chunk size, workers, the chunks' first pieces) of Parallelizer.Until over n pieces."""
    size = chunk_size(n, parallelism)
    starts = np.arange(0, n, size)
    return size, min(parallelism, starts.size), starts


def _draws(rng: np.random.Generator, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Per piece: the wait before its cancellation check, then its check (exponential, equal means)."""
    e = rng.standard_exponential(2 * m)
    return e[:m], e[m:]


def _timeline_numpy(n: int, parallelism: int, pause: np.ndarray, took: np.ndarray):
    """(done, begun) of the first len(pause) pieces (whole chunks, or all n), and when the next chunk
    begins (inf when there is none): the compiled loop's reference, adding in the same order."""
    size, workers, starts = _layout(n, parallelism)
    m = pause.size
    done, begun = np.empty(m), np.empty(m)
    free = [0.0] * workers
    for k in starts[starts < m].tolist():  # each chunk to the first free worker
        end = min(k + size, m)
        steps = np.empty(2 * (end - k) + 1)
        steps[0], steps[1::2], steps[2::2] = heapq.heappop(free), pause[k:end], took[k:end]
        times = np.add.accumulate(steps)
        begun[k:end], done[k:end] = times[1::2], times[2::2]
        heapq.heappush(free, float(times[-1]))
    return done, begun, (free[0] if m < n else math.inf)


def _timeline(n: int, parallelism: int, pause: np.ndarray, took: np.ndarray):
    if race_timeline is None:
        return _timeline_numpy(n, parallelism, pause, took)
    size, workers, _ = _layout(n, parallelism)
    done, begun = np.empty(pause.size), np.empty(pause.size)
    following = race_timeline(n, size, workers, pause, took, done, begun)
    return done, begun, following


try:
    from batkube_py.scheduler._kernels import race_cut, race_timeline
except ImportError:  # installed without a C compiler, or an older build
    race_cut = race_timeline = None


def timeline(n: int, parallelism: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(when each piece's check ended, when it began), by position from the start index, for one draw."""
    done, begun, _ = _timeline(n, parallelism, *_draws(rng, n))
    return done, begun


def completion_order(pos: np.ndarray, n: int, parallelism: int, rng: np.random.Generator) -> np.ndarray:
    """The order (indices into `pos`, positions from the start index) in which a draw finds every node."""
    return np.argsort(timeline(n, parallelism, rng)[0][pos], kind="stable")


def cut(pos: np.ndarray, n: int, want: int, parallelism: int, rng: np.random.Generator):
    """Upstream stopping after `want` of the len(pos) > want feasible nodes (positions `pos`, ascending).

    Returns (indices into `pos` of the nodes found, in the list's order; how many nodes were processed;
    the positions checked before the cancellation, None meaning the first `processed`).

    Only the chunks that can begin before the cancellation are drawn: first those up to the one holding
    the (want+1)-th feasible node, or one per worker if more, and four more; all of them if the
    cancellation comes later than the next chunk's start.
    """
    if parallelism <= 1:
        return np.arange(want), int(pos[want]), None
    size, workers, _ = _layout(n, parallelism)
    m = min(n, (max(int(pos[want]) // size + 1, workers) + 4) * size)
    pause, took = _draws(rng, m)
    while (got := _cut(pos, n, want, parallelism, pause, took)) is None:
        more = _draws(rng, n - m)
        pause, took, m = np.concatenate((pause, more[0])), np.concatenate((took, more[1])), n
    return got


def _cut(pos: np.ndarray, n: int, want: int, parallelism: int, pause: np.ndarray, took: np.ndarray):
    """cut() over the drawn pieces, None when a chunk not drawn could have begun before the cancellation."""
    if race_cut is not None:
        size, workers, _ = _layout(n, parallelism)
        found, checked = np.empty(want, dtype=np.int64), np.empty(pause.size, dtype=np.int64)
        r = race_cut(n, size, workers, pause, took, pos, want, found, checked)
        return None if r < 0 else (found, want + r, np.concatenate((pos[found], checked[:r])))
    return _cut_numpy(pos, n, want, parallelism, pause, took)


def _cut_numpy(pos: np.ndarray, n: int, want: int, parallelism: int, pause: np.ndarray, took: np.ndarray):
    """The compiled race_cut's reference."""
    done, begun, following = _timeline_numpy(n, parallelism, pause, took)
    inside = pos[: int(pos.searchsorted(pause.size))]
    t = done[inside]
    if t.size <= want:
        return None
    part = np.argpartition(t, want)
    cancel = t[part[want]]  # when the (want+1)-th feasible node ended its check and cancelled
    if cancel > following:  # a later chunk began before it
        return None
    found = part[:want][np.argsort(t[part[:want]], kind="stable")]
    checked = begun < cancel
    checked[inside] = False
    rejected = checked.nonzero()[0]
    return found, want + rejected.size, np.concatenate((inside[found], rejected))


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
