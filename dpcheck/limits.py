"""Resource limits that protect the machine an audit runs on.

Memory: before a black-box audit draws its outputs, :func:`check_sampling_memory` estimates what
it holds at once. The audit streams its draw (dpcheck.blackbox): one pair's selection sample (at most
SELECTION_CAP = 2^20 per side) and one chunk per worker, so the estimate is
``(2 x selection + workers x CHUNK) x bytes per output`` (bytes per output measured on a probe draw of 2
outputs), independent of ``samples`` and of the number of pairs once the selection is capped. A run
above the limit is refused with a message that names the estimate, the limit and the ``--samples``
that would fit. The limit is, in this order: the value
set for the current run (``dpcheck audit --memory-limit SIZE|off``, :func:`memory_limit_set`),
the environment variable ``DPCHECK_MEMORY_LIMIT`` (same syntax), else a sixth of the memory
available now (``MemAvailable`` of /proc/meminfo, or os.sysconf's available pages): the event
search holds about 5 more copies of the outputs, so 1/6 keeps the whole audit inside available memory.
Measured (tracemalloc peak of a whole ``dpcheck.audit`` over the estimate here, Laplace outputs, seed 0):
at 4.5M per side (selection capped) 5.7 for scalars and 5.6 for 4-vectors; 2.6 for 256-vectors at 300k
per side. Below the cap the ratio of scalars reaches ~11 (0.4M per side: 23 MB peak), where the absolute
figure is far below any limit; the estimate is meant for the large runs it can refuse.
"""
from __future__ import annotations

import contextlib
import contextvars
import math
import os

import numpy as np

from dpcheck.errors import InputError

ENV = "DPCHECK_MEMORY_LIMIT"
AVAILABLE_SHARE = 1 / 6          # of available memory, for the raw outputs (the analysis needs ~5x more)
PROBE_SIZE = 2

_limit: contextvars.ContextVar = contextvars.ContextVar("dpcheck_memory_limit", default=None)


def available_memory() -> int | None:
    """Bytes of memory available to new allocations now (None when the platform does not say)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def memory_limit() -> tuple[float | None, str]:
    """(limit in bytes or None when unknown, where it comes from); math.inf means no limit."""
    from dpcheck.options import parse_size
    v = _limit.get()
    if v is not None:
        return v, "--memory-limit"
    env = os.environ.get(ENV)
    if env:
        return parse_size(env, flag=ENV), ENV
    avail = available_memory()
    if avail is None:
        return None, "unknown"
    return avail * AVAILABLE_SHARE, f"1/6 of the {fmt_bytes(avail)} available"


@contextlib.contextmanager
def memory_limit_set(limit: float | None):
    """Within the block, the memory limit is ``limit`` bytes (math.inf: none; None: the default)."""
    token = _limit.set(limit)
    try:
        yield
    finally:
        _limit.reset(token)


def fmt_bytes(n: float) -> str:
    if n == math.inf:
        return "unlimited"
    for unit, k in (("TB", 4), ("GB", 3), ("MB", 2), ("KB", 1)):
        if n >= 1024 ** k:
            return f"{n / 1024 ** k:.3g} {unit}"
    return f"{int(n)} B"


def bytes_per_output(target, cached=None) -> int:
    """Bytes one output of ``target`` holds: from ``cached`` (a chunk of its outputs already drawn) when
    given, else from a probe draw of PROBE_SIZE outputs (its own rng: the audit's random numbers are
    unchanged)."""
    out = cached
    if out is None or len(out) == 0:
        out = target.sample(target.pairs[0][0], np.random.default_rng(0x5EED), PROBE_SIZE)
    out = np.asarray(out)
    return max(1, int(math.ceil(out.nbytes / len(out))))


def resident_outputs(samples: int, selection: int | None = None, workers: int = 1) -> int:
    """Outputs a black-box audit of ``samples`` per side holds at once (dpcheck.blackbox streams its draw):
    the selection sample of one pair (2 x ``selection``; default: dpcheck.blackbox.sample_plan's, at most
    SELECTION_CAP per side) plus one chunk per worker in the certification pass. It does not grow with
    ``samples`` beyond 4 x SELECTION_CAP."""
    from dpcheck.layout import CHUNK, SELECTION_FRACTION, SELECTION_CAP
    if selection is None:
        selection = min(max(int(round(samples * SELECTION_FRACTION)), 10), samples - 10, SELECTION_CAP)
    return 2 * int(selection) + max(1, int(workers)) * min(CHUNK, int(samples))


def check_sampling_memory(target, samples: int, cached_chunk=None, *, selection: int | None = None,
                          workers: int = 1) -> None:
    """Refuse (InputError) a black-box audit whose resident outputs (:func:`resident_outputs`) would exceed
    the memory limit.

    cached_chunk: ``cached_chunk()`` returns the first chunk of the draw if ``--cache`` holds it, else
    None (the caller knows the cache; a resumed audit then need not call the mechanism at all).
    selection, workers: the selection sample per side (default: the audit's) and the local workers.
    """
    limit, source = memory_limit()
    if limit is None or limit == math.inf:
        return
    per = bytes_per_output(target, cached_chunk() if cached_chunk is not None else None)
    held = resident_outputs(samples, selection, workers)
    estimate = float(held) * per
    if estimate <= limit:
        return
    fit = _largest(lambda s: resident_outputs(s, None, workers) * per <= limit, 20, max(20, samples - 1))
    hint = (f"--samples {fit} would fit" if fit is not None else "no --samples value fits")
    w = max(1, int(workers))
    sel = (held - w * min(samples, _chunk())) // 2
    raise InputError(
        f"target {target.name!r}: --samples {samples} needs about {fmt_bytes(estimate)} for the outputs it holds "
        f"at once (one pair's selection sample of 2 x {sel} and {w} chunk(s) in flight = {held} outputs x {per} "
        f"bytes; the {len(target.pairs)} pair(s) are streamed), above the memory limit {fmt_bytes(limit)} "
        f"({source}); {hint}, or raise the limit with --memory-limit SIZE (or off)")


def _chunk() -> int:
    from dpcheck.layout import CHUNK
    return CHUNK


# ------------------------------------------------------------------ user inputs (datasets, instances, classes)
# An audit that reads a user's input (a dataset, an instance, a function class) estimates, before any work,
# the memory and the time its input-dependent parts need -- from the sizes in the input and per-unit costs
# measured on the reference machine (2 shared cores; the figures are in each audit's docs/) -- and refuses
# (InputError, exit 2) an input above the memory limit (above) or the time limit, naming the sizes that fit.
# The time limit is ``DPCHECK_TIME_LIMIT`` (seconds, or 'off'), else TIME_LIMIT: an hour of estimated work
# for the input-dependent checks (a --quick audit of a built-in instance takes minutes).
TIME_ENV = "DPCHECK_TIME_LIMIT"
TIME_LIMIT = 3600.0


def time_limit() -> tuple[float, str]:
    """(seconds, where it comes from); math.inf means no limit."""
    env = os.environ.get(TIME_ENV)
    if env:
        if env.strip().lower() == "off":
            return math.inf, TIME_ENV
        try:
            v = float(env)
        except ValueError:
            raise InputError(f"{TIME_ENV}={env!r}: expected seconds (e.g. 7200) or 'off'") from None
        if not v > 0:
            raise InputError(f"{TIME_ENV}={env!r}: expected seconds > 0 or 'off'")
        return v, TIME_ENV
    return TIME_LIMIT, "default"


def fmt_count(x: float) -> str:
    """1000000 -> '10^6', 123456 -> '123456', 2.5e13 -> '2.5e+13' (sizes in messages)."""
    if x >= 1e4 and float(x) == 10 ** round(math.log10(x)):
        return f"10^{round(math.log10(x))}"
    return f"{int(x)}" if x < 1e15 else f"{x:.3g}"


def fmt_seconds(s: float) -> str:
    if s == math.inf:
        return "unlimited"
    if s >= 86400 * 365:
        return f"{s / (86400 * 365):.3g} years"
    if s >= 3600:
        return f"{s / 3600:.3g} h"
    return f"{s:.3g} s"


def _largest(fits, lo: int, hi: int) -> int | None:
    """The largest x in [lo, hi] with fits(x) (fits monotone decreasing in x), None if not even lo."""
    if not fits(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def check_input_cost(what: str, sizes: dict, cost, *, vary=None, unit: str = "") -> None:
    """Refuse (InputError) a user input whose audit would need more memory or time than the limits allow.

    what:  the input, e.g. "--set data=d.npz"; sizes: name -> int (e.g. {"H": 3, "S": 10**12, "A": 2});
    cost:  cost(sizes) -> (bytes, seconds), the estimate of the input-dependent parts of the audit;
    vary:  the sizes to solve for in the message (each alone, the others as given; default all);
    unit:  a short explanation of the estimate (what scales), appended in parentheses.
    The message names the estimate, the limit and, for each size in ``vary``, the largest value that fits.
    """
    mem_limit, mem_src = memory_limit()
    if mem_limit is None:
        mem_limit, mem_src = math.inf, "unknown"
    t_limit, t_src = time_limit()

    def ok(sz) -> bool:
        b, s = cost(sz)
        return b <= mem_limit and s <= t_limit

    if ok(sizes):
        return
    b, s = cost(sizes)
    over = []
    if b > mem_limit:
        over.append(f"about {fmt_bytes(b)} of memory, above the memory limit {fmt_bytes(mem_limit)} ({mem_src})")
    if s > t_limit:
        over.append(f"about {fmt_seconds(s)} of work, above the time limit {fmt_seconds(t_limit)} "
                    f"({t_src}; {TIME_ENV}=SECONDS|off)")
    fits = []
    for k in (vary or tuple(sizes)):
        v = int(sizes[k])
        best = _largest(lambda x: ok({**sizes, k: x}), 1, max(1, v - 1))
        if best is not None:
            fits.append(f"{k} <= {fmt_count(best)}")
    shown = ", ".join(f"{k} = {fmt_count(int(v))}" for k, v in sizes.items())
    hint = ("what fits: " + " or ".join(fits) + " (the other sizes as given)" if fits else
            "no smaller size fits")
    raise InputError(f"{what}: {shown} needs {' and '.join(over)}"
                     + (f" ({unit})" if unit else "") + f"; {hint}")
