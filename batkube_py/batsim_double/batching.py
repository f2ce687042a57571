"""Not Batsim: a seeded perturbation of how the events of an instant are batched, for tests.

Real Batsim groups and orders the events of one instant as SimGrid's actor order dictates; another
platform, workload or actor order groups the same events otherwise. The adapter's decisions must not
depend on it (batkube_py/adapter/instant.py), and a RandomBatching lets a test check that, within what Batsim
may do. The unit is what one server handler appended (the events of one internal message: a batch of
same-time submissions, a kill's completions): Batsim never cuts or reorders inside it. The server
- splits: keeps back the last units stamped with the current time for its next message (as if their
  actors had run after the send);
- merges: holds its message when an actor of the current sub-round is already sending it an internal
  message that arrives within the same printed microsecond (as if that actor had run first);
- reorders: shuffles the units of one timestamp between the NOTIFY / SIMULATION_* units around them.
Events of different timestamps are never regrouped: that would move them to other instants.
"""

from __future__ import annotations

import random

_BARRIERS = ('"type":"NOTIFY"', '"type":"SIMULATION_BEGINS"', '"type":"SIMULATION_ENDS"')
Unit = list[tuple[str, int]]


def _ts(event: str) -> str:
    return event.split('"timestamp":', 1)[1].split(",", 1)[0]


class RandomBatching:
    def __init__(self, seed: int, split: float = 0.4, hold: float = 0.5) -> None:
        self.rng = random.Random(seed)
        self.split, self.hold_p = split, hold
        self.splits = self.holds = self.shuffles = 0

    def hold(self, now: float, arrival: float | None) -> bool:
        """`arrival`: when the next internal message reaches the server, if one is on its way."""
        if arrival is not None and f"{arrival:f}" == f"{now:f}" and self.rng.random() < self.hold_p:
            self.holds += 1
            return True
        return False

    def arrange(
        self, events: list[str], units: list[int], now: str
    ) -> tuple[list[str], list[str], list[int]]:
        """(events to send now, events kept for the next message, their units)."""
        blocks: list[Unit] = []
        for event, unit in zip(events, units, strict=True):
            if blocks and blocks[-1][0][1] == unit:
                blocks[-1].append((event, unit))
            else:
                blocks.append([(event, unit)])
        blocks = self._shuffled(blocks)
        tail = 0
        while tail < len(blocks) - 1 and _ts(blocks[-1 - tail][0][0]) == now:
            tail += 1
        cut = len(blocks)
        if tail and self.rng.random() < self.split:
            cut -= self.rng.randint(1, tail)
            self.splits += 1
        sent = [e for b in blocks[:cut] for e, _ in b]
        kept = [pair for b in blocks[cut:] for pair in b]
        return sent, [e for e, _ in kept], [u for _, u in kept]

    def _shuffled(self, blocks: list[Unit]) -> list[Unit]:
        out: list[Unit] = []
        run: list[Unit] = []
        run_ts = None
        for block in blocks:
            ts = _ts(block[0][0])
            barrier = any(b in e for e, _ in block for b in _BARRIERS)
            if barrier or ts != run_ts:
                out += self._shuffle(run)
                run, run_ts = [], ts
            if barrier:
                out.append(block)
                run_ts = None
            else:
                run.append(block)
        return out + self._shuffle(run)

    def _shuffle(self, run: list[Unit]) -> list[Unit]:
        if len(run) > 1:
            before = list(run)
            self.rng.shuffle(run)
            self.shuffles += run != before
        return run
