"""The order parallel Filter workers find the feasible nodes in (scheduler/filterorder.py), against every
outcome upstream's mechanism allows, enumerated (schedule_one.go findNodesThatPassFilters, 1.37.2)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from batkube_py.scheduler import filterorder
from batkube_py.scheduler.filterorder import chunk_size, cut, timeline


def _go_chunk_size(n: int, parallelism: int) -> int:
    s = int(math.sqrt(n))  # parallelism.go chunkSizeFor, statement by statement
    r = n // parallelism + 1
    if s > r:
        s = r
    elif s < 1:
        s = 1
    return s


def test_chunk_size_is_chunk_size_for():
    for parallelism in (1, 2, 3, 16, 64):
        for n in range(1, 2100):
            assert chunk_size(n, parallelism) == _go_chunk_size(n, parallelism)
    assert [chunk_size(n, 16) for n in (16, 100, 1000, 5000)] == [2, 7, 31, 70]


def outcomes(n: int, parallelism: int, feasible: set[int], want: int) -> set[tuple[tuple[int, ...], int]]:
    """Every (feasible list, processed) ParallelizeUntil + checkNode can produce, by enumerating every
    interleaving of the workers' steps: take the next chunk; check the cancellation and begin a piece;
    end the piece (append through the atomic counter, or cancel past `want`, or record a status)."""
    size = chunk_size(n, parallelism)
    chunks = [list(range(s, min(s + size, n))) for s in range(0, n, size)]
    workers = min(parallelism, len(chunks))
    seen: set[tuple[tuple[int, ...], int]] = set()
    # a worker: (pieces left of its chunk, the piece it is checking or None, done)
    start = (tuple((None, None, False) for _ in range(workers)), 0, (), 0, False)
    stack, visited = [start], set()
    while stack:
        state = stack.pop()
        if state in visited:
            continue
        visited.add(state)
        ws, next_chunk, found, statuses, cancelled = state
        moved = False
        for w, (left, piece, done) in enumerate(ws):
            if done:
                continue
            if piece is not None:  # end the piece in progress
                f, s_, c = found, statuses, cancelled
                if piece in feasible:
                    if len(found) + 1 > want:
                        c = True
                    else:
                        f = found + (piece,)
                else:
                    s_ = statuses + 1
                nws = ws[:w] + ((left, None, False),) + ws[w + 1 :]
                stack.append((nws, next_chunk, f, s_, c))
            elif left:  # check the cancellation, then begin the next piece of the chunk
                nw = ((), None, True) if cancelled else (left[1:], left[0], False)
                stack.append((ws[:w] + (nw,) + ws[w + 1 :], next_chunk, found, statuses, cancelled))
            elif next_chunk < len(chunks):  # take the next chunk off the channel
                nw = (tuple(chunks[next_chunk]), None, False)
                stack.append((ws[:w] + (nw,) + ws[w + 1 :], next_chunk + 1, found, statuses, cancelled))
            else:  # the channel is empty: the worker returns
                nw = (None, None, True)
                stack.append((ws[:w] + (nw,) + ws[w + 1 :], next_chunk, found, statuses, cancelled))
            moved = True
        if not moved:
            seen.add((found, len(found) + statuses))
    return seen


@pytest.mark.parametrize(
    "n, parallelism, feasible, want",
    [(6, 2, {0, 2, 3, 5}, 2), (7, 3, {1, 2, 4, 6}, 1), (5, 16, {0, 1, 3, 4}, 2), (9, 2, {0, 4, 5, 8}, 3)],
)
def test_drawn_outcomes_are_exactly_the_possible_ones(n, parallelism, feasible, want):
    """Every draw is an outcome upstream can produce, and every outcome upstream can produce is drawn."""
    possible = outcomes(n, parallelism, feasible, want)
    pos = np.array(sorted(feasible))
    rng = np.random.default_rng(5)
    drawn = set()
    for _ in range(20000):
        order, processed, checked = cut(pos, n, want, parallelism, rng)
        drawn.add((tuple(int(p) for p in pos[order]), processed))
        assert checked.size == len(set(checked.tolist())) == processed
    assert drawn <= possible
    assert drawn == possible


def test_one_worker_is_the_rotation_and_counts_the_rejected_nodes_up_to_the_next_feasible_one():
    """parallelism 1: the first `want` feasible nodes in order, and the nodes rejected before the
    (want+1)-th feasible one (which cancels) count as processed as upstream's statuses do."""
    pos = np.array([0, 2, 3, 7, 9])
    order, processed, checked = cut(pos, 10, 3, 1, np.random.default_rng(0))
    assert pos[order].tolist() == [0, 2, 3] and processed == 7 and checked is None
    assert outcomes(10, 1, set(pos.tolist()), 3) == {((0, 2, 3), 7)}


def test_timeline_runs_each_chunk_in_order_on_at_most_parallelism_workers():
    rng = np.random.default_rng(1)
    for n, parallelism in ((1000, 16), (37, 4), (100, 16), (16, 1)):
        done, begun = timeline(n, parallelism, rng)
        size = chunk_size(n, parallelism)
        assert np.all(begun < done)
        for s in range(0, n, size):  # within a chunk, one piece after the other
            assert np.all(begun[s + 1 : s + size] > done[s : min(s + size, n) - 1])
        t = np.sort(np.concatenate((begun, done)))  # never more pieces at once than workers
        busy = np.searchsorted(np.sort(begun), t, "right") - np.searchsorted(np.sort(done), t, "right")
        assert busy.max() <= min(parallelism, -(-n // size))
        if parallelism == 1:
            assert np.all(np.diff(done) > 0)


def _full_cut(pos, n, want, parallelism, rng):
    """cut() without drawing only the chunks that can begin before the cancellation: every piece drawn
    (the same draws, in the same order), the whole timeline simulated."""
    size, workers, _ = filterorder._layout(n, parallelism)
    m = min(n, (max(int(pos[want]) // size + 1, workers) + 4) * size)
    first, rest = filterorder._draws(rng, m), filterorder._draws(rng, n - m)
    pause, took = np.concatenate((first[0], rest[0])), np.concatenate((first[1], rest[1]))
    done, begun, _ = filterorder._timeline(n, parallelism, pause, took)
    t = done[pos]
    order = np.argsort(t, kind="stable")
    cancel = t[order[want]]
    checked = begun < cancel
    checked[pos] = False
    found = pos[order[:want]].tolist()
    return found, want + int(checked.sum()), sorted(found + checked.nonzero()[0].tolist())


@pytest.mark.parametrize("feasible", ["late", "sparse", "all"])
def test_drawing_only_the_chunks_that_can_begin_changes_nothing(feasible):
    """1,000 nodes, 16 workers: a cancellation that comes only after later chunks began (feasible nodes
    at the end of the first chunk and far away) makes cut() draw the rest; either way its outcome is
    the whole simulation's."""
    n = 1000
    pos = {"late": np.array([28, 29, 30, 999]), "sparse": np.arange(0, n, 3), "all": np.arange(n)}[feasible]
    want = 2 if feasible == "late" else 200
    extended = 0
    for seed in range(200):
        rng = np.random.default_rng(seed)
        found, processed, checked = cut(pos, n, want, 16, rng)
        drawn = rng.bit_generator.state["state"]["state"]
        ref = np.random.default_rng(seed)
        assert (pos[found].tolist(), processed, sorted(checked.tolist())) == _full_cut(pos, n, want, 16, ref)
        extended += drawn == ref.bit_generator.state["state"]["state"]
    if feasible == "late":
        assert 0 < extended < 200  # both branches taken


def test_the_compiled_timeline_adds_as_its_reference_does():
    """_kernels.race_timeline against the numpy reference: the same bits, prefixes and whole runs."""
    assert filterorder.race_timeline is not None, "_kernels lacks race_timeline: rebuild (pip install -e .)"
    rng = np.random.default_rng(3)
    for n, parallelism in ((1000, 16), (100, 16), (37, 4), (5000, 16), (16, 1), (1000, 64), (7, 3)):
        size, _, _ = filterorder._layout(n, parallelism)
        for m in {n, min(n, 3 * size)}:
            pause, took = filterorder._draws(rng, m)
            fast = filterorder._timeline(n, parallelism, pause, took)
            slow = filterorder._timeline_numpy(n, parallelism, pause, took)
            assert np.array_equal(fast[0], slow[0]) and np.array_equal(fast[1], slow[1])
            assert fast[2] == slow[2] and (fast[2] == np.inf) == (m == n)


def test_the_compiled_cut_picks_what_its_reference_picks():
    """_kernels.race_cut against the numpy reference: the same nodes in the same order, the same nodes
    checked, the same refusals when a chunk not drawn could have begun before the cancellation."""
    assert filterorder.race_cut is not None, "_kernels lacks race_cut: rebuild (pip install -e .)"
    rng = np.random.default_rng(9)
    refused = 0
    for n, parallelism in ((1000, 16), (150, 16), (5000, 16), (300, 4), (120, 64)):
        size, _, _ = filterorder._layout(n, parallelism)
        for share in (1, 2, 5):
            pos = np.sort(rng.choice(n, size=n // share, replace=False)).astype(np.int64)
            for want in (1, 7, min(100, pos.size - 1)):
                for m in {n, min(n, (int(pos[want]) // size + 2) * size)}:
                    pause, took = filterorder._draws(rng, m)
                    fast = filterorder._cut(pos, n, want, parallelism, pause, took)
                    slow = filterorder._cut_numpy(pos, n, want, parallelism, pause, took)
                    refused += fast is None
                    assert (fast is None) == (slow is None)
                    if fast is not None:
                        assert fast[0].tolist() == slow[0].tolist() and fast[1] == slow[1]
                        assert fast[2].tolist() == slow[2].tolist()
    assert refused > 0


def test_without_the_compiled_loops_every_draw_is_the_same(monkeypatch):
    """A build without a C compiler draws the same orders from the same seeds."""
    pos, n = np.arange(0, 1000, 2), 1000

    def draws():
        rng = np.random.default_rng(4)
        out = []
        for want in (100, 420, 3):
            found, processed, checked = cut(pos, n, want, 16, rng)
            out.append((found.tolist(), processed, checked.tolist()))
        out.append(filterorder.completion_order(pos, n, 16, rng).tolist())
        return out

    fast = draws()
    monkeypatch.setattr(filterorder, "race_cut", None)
    monkeypatch.setattr(filterorder, "race_timeline", None)
    assert draws() == fast
