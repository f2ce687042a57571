"""Which backing-off pods the real backend recreates at a step (cluster/expedite.py), by hand."""

import math

from batkube_py.cluster.expedite import Request, fits, next_round, room

CORE = 1000
GI = 2**30


def _free(*nodes: tuple[int, int, int]) -> dict[str, list[int]]:
    return {f"n{i}": list(f) for i, f in enumerate(nodes)}


def test_one_freed_core_recreates_the_head_and_stops_the_round():
    free = _free((CORE, GI, 10), (0, GI, 10))
    reqs = {f"p{i}": Request(CORE, 0) for i in range(5)}
    now, left = next_round(list(reqs), reqs, free, 0)
    assert (now, left) == (["p0"], [])
    # the round bound p0: on that real state the others fit nowhere and stay in backoff
    now, left = next_round(["p1", "p2", "p3", "p4"], reqs, _free((0, GI, 9), (0, GI, 10)), 0)
    assert (now, left) == ([], ["p1", "p2", "p3", "p4"])


def test_the_round_is_the_prefix_that_fits_a_tentative_placement():
    free = _free((2 * CORE, GI, 10), (CORE, GI, 10))
    reqs = {"a": Request(CORE, 0), "b": Request(CORE, 0), "c": Request(CORE, 0), "d": Request(500, 0)}
    now, left = next_round(list(reqs), reqs, free, 0)
    # a and b take n0 (most free cpu first), c takes n1; d would fit nowhere after them: the round ends
    # there and d is judged on what the round really did, not left out on a guess
    assert (now, left) == (["a", "b", "c"], [])
    assert free == _free((2 * CORE, GI, 10), (CORE, GI, 10))  # the real state is not modified


def test_a_pod_too_big_for_every_node_is_left_and_smaller_ones_behind_it_still_go():
    free = _free((CORE, GI, 10))
    reqs = {"big": Request(2 * CORE, 0), "small": Request(CORE, 0), "after": Request(CORE, 0)}
    now, left = next_round(list(reqs), reqs, free, 0)
    assert (now, left) == (["small"], ["big"])


def test_memory_pods_slots_and_zero_requests():
    free = _free((4 * CORE, GI, 1), (4 * CORE, GI // 2, 10))
    reqs = {"mem": Request(CORE, GI), "mem2": Request(CORE, GI), "zero": Request(0, 0)}
    now, left = next_round(list(reqs), reqs, free, 0)
    # mem takes n0's only pod slot; mem2 needs 1 GiB, n1 has 0.5: round ends
    assert (now, left) == (["mem"], [])
    after = _free((3 * CORE, 0, 0), (4 * CORE, GI // 2, 10))
    now, left = next_round(["mem2", "zero"], reqs, after, 0)
    assert (now, left) == (["zero"], ["mem2"])
    # a node that models no memory never refuses on memory (its room is unlimited, see room())
    assert fits(Request(CORE, 10 * GI), [CORE, math.inf, 1])
    assert not fits(Request(CORE, 0), [CORE, GI, 0])
    assert fits(Request(0, 0), [0, 0, 1])


def test_a_pod_that_may_preempt_is_always_retried():
    free = _free((0, 0, 0))
    reqs = {"high": Request(CORE, 0, priority=10), "same": Request(CORE, 0, priority=0)}
    now, left = next_round(list(reqs), reqs, free, 0)
    assert (now, left) == (["high"], [])  # "same" is judged once the preemption has happened or not
    # nothing runs with a lower priority: no victim, no preemption, so no retry either
    now, left = next_round(["high"], reqs, free, 10)
    assert (now, left) == ([], ["high"])


def test_room_counts_bindings_not_taken_yet():
    alloc = {"n0": (4 * CORE, 8 * GI, 110), "n1": (2 * CORE, -1, 110)}
    used = {"n0": [CORE, GI, 1], "n1": [0, 0, 0]}
    assert room(alloc, used, [("n1", (500, GI)), ("gone", (CORE, 0))]) == {
        "n0": [3 * CORE, 7 * GI, 109],
        "n1": [1500, math.inf, 109],
    }
