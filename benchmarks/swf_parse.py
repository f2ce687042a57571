"""Parse time of the NASA iPSC trace (18,239 jobs): the issue asks for well under a second."""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from swf_tools.swf import parse_swf

DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "traces" / "NASA-iPSC-1993-3.1-cln.swf"


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    parse_swf(path)  # warm-up: imports, page cache
    times = []
    for _ in range(10):
        start = time.perf_counter()
        trace = parse_swf(path)
        times.append(time.perf_counter() - start)
    print(f"{path.name}: {len(trace.jobs)} jobs, parse median {statistics.median(times) * 1000:.1f} ms "
          f"(min {min(times) * 1000:.1f} ms, max {max(times) * 1000:.1f} ms, 10 runs)")


if __name__ == "__main__":
    main()
