"""protocol/intervals.procset is ProcSet(*ids), built faster: the same set and the same text Batsim reads."""

from __future__ import annotations

import random

from procset import ProcSet

from batkube_py.protocol.intervals import procset


def test_procset_is_procset_of_the_ids_for_any_ids() -> None:
    rng = random.Random(7)
    cases = [[], [5], [3, 3, 1], list(range(0, 256, 2)), list(range(100)), [0, 2, 3, 4, 9, 10, 12]]
    cases += [rng.sample(range(400), rng.randint(1, 300)) for _ in range(300)]
    for ids in cases:
        got, want = procset(ids), ProcSet(*ids)
        assert got == want and str(got) == str(want), ids
