"""Command-line values checked at the edge: finite numbers in sane ranges, so that `nan`, `inf` or a
billion jobs end in one line naming the option instead of a hang, a MemoryError or a JSON file that is
not JSON."""

from __future__ import annotations

import math

import click


class Finite(click.ParamType):
    """A finite float within [low, high] (`low_open`: strictly above low)."""

    name = "number"

    def __init__(self, low: float = 0.0, high: float = 1e9, low_open: bool = False):
        self.low, self.high, self.low_open = low, high, low_open

    def convert(self, value, param, ctx):
        if isinstance(value, float | int) and not isinstance(value, bool):
            x = float(value)
        else:
            try:
                x = float(value)
            except ValueError:
                self.fail(f"{value!r} is not a number", param, ctx)
        below = x <= self.low if self.low_open else x < self.low
        if not math.isfinite(x) or below or x > self.high:
            bound = ">" if self.low_open else ">="
            want = f"a finite number {bound} {self.low:g} and <= {self.high:g}"
            self.fail(f"expected {want}, got {value}", param, ctx)
        return x


SECONDS = Finite(0.0, 1e7, low_open=True)  # a timeout: positive, finite, under four months
MAX_JOBS = 1_000_000
MAX_NODES = 1_000_000


def guard_options(f):
    """`batkube run`'s options against clobbered directories and waits without end."""
    f = click.option("--overwrite", is_flag=True,
                     help="Replace the outputs of an earlier run in --out (emptied first).")(f)  # fmt: skip
    f = click.option("--connect-timeout", type=SECONDS, default=120.0, show_default=True,
                     help="Seconds for Batsim to start and send its first message.")(f)  # fmt: skip
    return click.option("--idle-timeout", type=SECONDS, default=600.0, show_default=True,
                        help="Seconds of Batsim's silence (the adapter waiting) before giving up.",
                        )(f)  # fmt: skip
