"""Resource limits that protect the machine an audit runs on.

Memory: before a black-box audit draws its outputs, :func:`check_sampling_memory` estimates what
they will hold, ``samples x pairs x 2 sides x bytes per output`` (bytes per output measured on a
probe draw of 2 outputs), and refuses a run above the limit with a message that names the
estimate, the limit and the ``--samples`` that would fit. The limit is, in this order: the value
set for the current run (``dpcheck audit --memory-limit SIZE|off``, :func:`memory_limit_set`),
the environment variable ``DPCHECK_MEMORY_LIMIT`` (same syntax), else a sixth of the memory
available now (``MemAvailable`` of /proc/meminfo, or os.sysconf's available pages): the event
search holds about 5 more copies of the outputs (measured: peak / raw = 2.7 for scalar outputs,
5.2-5.4 for vectors of 4-16 coordinates), so 1/6 keeps the whole audit inside available memory.
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


def check_sampling_memory(target, samples: int, cached_chunk=None) -> None:
    """Refuse (InputError) a black-box draw whose outputs would exceed the memory limit.

    cached_chunk: ``cached_chunk()`` returns the first chunk of the draw if ``--cache`` holds it, else
    None (the caller knows the cache; a resumed audit then need not call the mechanism at all).
    """
    limit, source = memory_limit()
    if limit is None or limit == math.inf:
        return
    per = bytes_per_output(target, cached_chunk() if cached_chunk is not None else None)
    sides = 2 * len(target.pairs)
    estimate = float(samples) * sides * per
    if estimate <= limit:
        return
    fit = int(limit // (sides * per))
    hint = (f"--samples {fit} would fit" if fit >= 20 else "no --samples value fits")
    raise InputError(
        f"target {target.name!r}: --samples {samples} needs about {fmt_bytes(estimate)} for its outputs "
        f"({samples} per side x {len(target.pairs)} pair(s) x 2 sides x {per} bytes), above the memory limit "
        f"{fmt_bytes(limit)} ({source}); {hint}, or raise the limit with --memory-limit SIZE (or off)")
