"""The timing rule every benchmark here uses: the best (smallest) wall-clock time of a few repeats.

The minimum is the least disturbed by other processes on a shared machine; the benchmarks that also report
CPU time measure it themselves. Imported by the scripts as ``from timing import ...`` (``python
benchmarks/bench_x.py`` puts this folder first on sys.path).
"""
from __future__ import annotations

import time


def timed_best(fn, repeat: int) -> tuple[float, object]:
    """(the smallest wall-clock seconds of ``repeat`` calls of ``fn()``, the last call's result)."""
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def best_of(fn, repeat: int = 5) -> float:
    """The smallest wall-clock seconds of ``repeat`` calls of ``fn()``."""
    return timed_best(fn, repeat)[0]
