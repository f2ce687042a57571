"""libstdc++'s std::unordered_map<std::string, T> order, which Batsim's profiles follow (hashorder.py).

Expected values printed by a C++ program built with GCC 12 (the C++ library of real Batsim 4.2.1's
build): std::hash<std::string> of a few keys (empty, shorter than, exactly and longer than 8 bytes) and
the iteration order of maps filled in key order, across the first rehash (13 → 29 buckets). The order
against real Batsim itself: tests/test_batsim_double_refusals.py and the transcript replays.
"""

from __future__ import annotations

import pytest

from batkube_py.batsim_double.hashorder import map_order, string_hash

HASHES = {
    "": 6142509188972423790,
    "a": 4993892634952068459,
    "w0!1": 10415325931094239946,
    "delay_170": 17873515277926020909,
    "exactly8": 13580205909952649287,
    "more than eight bytes": 1613473499332008224,
}


@pytest.mark.parametrize("key", HASHES)
def test_string_hash_is_libstdcxx_hash_bytes(key):
    assert string_hash(key) == HASHES[key]


def test_iteration_order_of_small_and_rehashed_maps():
    assert map_order(["a", "b", "c"]) == ["c", "b", "a"]
    assert map_order([f"p{i}" for i in range(20)]) == [
        "p19", "p18", "p17", "p16", "p14", "p13", "p0", "p9", "p12", "p1",
        "p5", "p6", "p2", "p15", "p4", "p11", "p7", "p3", "p8", "p10",
    ]  # fmt: skip


def test_a_repeated_key_is_an_assignment():
    assert map_order(["a", "b", "a", "c"]) == map_order(["a", "b", "c"])
