"""The iteration order of a libstdc++ `std::unordered_map<std::string, T>` (GCC 12, the C++ library real
Batsim 4.2.1 runs with), built by inserting keys one by one.

Batsim keeps a workload's profiles (and jobs) in such maps and lists them in that order: the
profiles of SIMULATION_BEGINS, the order in which it checks composed profiles and drops unreferenced
ones. The order follows from three things: `std::hash<std::string>` (libstdc++'s `_Hash_bytes`, a
64-bit MurmurHash2 variant with seed 0xc70f6907), the prime rehash policy (bucket counts 1, 13, 29, ...,
max load factor 1), and how a node is linked in: at the front of its bucket's run when the bucket
already has nodes, else at the front of the whole list; a rehash relinks the nodes in their current
order the same way.
"""

from __future__ import annotations

from collections.abc import Iterable

_MASK = (1 << 64) - 1
_MUL = (0xC6A4A793 << 32) + 0x5BD1E995
_SEED = 0xC70F6907
# libstdc++'s bucket counts as a map grows from empty: _Prime_rehash_policy::_M_next_bkt of twice the
# current count, from the 13 buckets of the first insertion (measured with GCC 12's libstdc++).
_BUCKETS = (13, 29, 59, 127, 257, 541, 1109, 2357, 5087, 10273, 20753, 42043, 85229, 172933, 351061,
            712697, 1447153, 2938679, 5967347, 12117689, 24607243, 49969847, 101473717)  # fmt: skip


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def string_hash(text: str) -> int:
    """std::hash<std::string> of the UTF-8 bytes (`_Hash_bytes(data, len, 0xc70f6907)`)."""
    buf = text.encode("utf-8", "surrogateescape")
    n = len(buf)
    h = (_SEED ^ (n * _MUL)) & _MASK
    aligned = n & ~7
    for i in range(0, aligned, 8):
        data = (_shift_mix((int.from_bytes(buf[i:i + 8], "little") * _MUL) & _MASK) * _MUL) & _MASK
        h = ((h ^ data) * _MUL) & _MASK
    if n & 7:
        h = ((h ^ int.from_bytes(buf[aligned:], "little")) * _MUL) & _MASK
    h = (_shift_mix(h) * _MUL) & _MASK
    return _shift_mix(h)


def map_order(keys: Iterable[str]) -> list[str]:
    """The keys in the order a range-for over the map visits them, after `map[key] = ...` for each key in
    turn (a repeated key is an assignment: it moves nothing)."""
    nxt: dict[str | None, str | None] = {None: None}  # None: the list head (_M_before_begin)
    hashes: dict[str, int] = {}
    buckets: dict[int, str | None] = {}  # bucket → the node before its first node
    nbkt, grown = 1, 0
    for key in keys:
        if key in hashes:
            continue
        h = hashes[key] = string_hash(key)
        if len(hashes) > (_BUCKETS[grown - 1] if grown else 0):  # _M_need_rehash with max load factor 1
            nbkt = _BUCKETS[grown]
            grown += 1
            buckets = _relink(nxt, hashes, nbkt)
        _link(nxt, buckets, hashes, nbkt, key, h % nbkt)
    out, node = [], nxt[None]
    while node is not None:
        out.append(node)
        node = nxt[node]
    return out


def _link(nxt: dict, buckets: dict, hashes: dict, nbkt: int, key: str, bkt: int) -> None:
    """_M_insert_bucket_begin."""
    if bkt in buckets:
        before = buckets[bkt]
        nxt[key], nxt[before] = nxt[before], key
        return
    nxt[key], nxt[None] = nxt[None], key
    if nxt[key] is not None:
        buckets[hashes[nxt[key]] % nbkt] = key
    buckets[bkt] = None


def _relink(nxt: dict, hashes: dict, nbkt: int) -> dict[int, str | None]:
    """_M_rehash_aux for unique keys: the nodes in their current order, each put in its new bucket."""
    node, nxt[None] = nxt[None], None
    buckets: dict[int, str | None] = {}
    first_bkt = 0
    while node is not None:
        after = nxt[node]
        bkt = hashes[node] % nbkt
        if bkt in buckets:
            before = buckets[bkt]
            nxt[node], nxt[before] = nxt[before], node
        else:
            nxt[node], nxt[None] = nxt[None], node
            buckets[bkt] = None
            if nxt[node] is not None:
                buckets[first_bkt] = node
            first_bkt = bkt
        node = after
    return buckets
