"""Hypothesis searches whose examples depend on their seed and arguments only (docs/interfaces.md#searched-figures).

The white-box sensitivity checks and :class:`dpcheck.search.PairSearch` over a strategy let hypothesis
search an input space, steered by ``hypothesis.target``. Two things in a plain ``@given`` run make the
examples it draws depend on more than the search itself:

* ``derandomize=True`` seeds the run from a digest of the test function's *source text*: editing a comment
  in the search changes every figure, and a build without sources falls back to the function's name.
* hypothesis (6.155, the release this was written against) draws about 5% of its integers, floats and
  strings from constants, half of those (when both pools hold a permitted value) from a pool it mines from
  every *local* module loaded in the process (not stdlib, not site-packages). Which modules count and
  which are loaded differ between an editable and a wheel install, between the main process and a dask or
  loky worker, and with whatever the user's own project has imported; the mining also writes cache files
  under ``.hypothesis/`` in the working directory.

:func:`explore` runs a search with an explicit seed (``hypothesis.seed``) and, while it runs, an empty local
pool (hypothesis's built-in constants stay: they are part of the hypothesis version). What remains is the
hypothesis version itself, which every check that runs a search records (:func:`provenance`) and the chunk
cache keys on.

The pool is reached through hypothesis internals (``providers._get_local_constants``). If a hypothesis
release removes them, searches still run and :func:`provenance` says the pool is not controlled;
tests/core/test_hypothesis_search.py fails on such a release, so the change is seen before it ships.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Callable

import hypothesis      # a module-level name: the chunk cache keys a search on hypothesis.__version__ (fingerprint)


class _PoolGuard:
    """The pool is process-wide: one pinned search at a time per process. The guard orders work and computes
    nothing, so a computation that runs a search is keyed by this class alone (dpcheck.fingerprint's memo rule),
    not refused as unpicklable state."""
    __fingerprint_memo__ = True

    def __init__(self):
        self.lock = threading.RLock()


_GUARD = _PoolGuard()


def _pool_hooks():
    """(providers module, empty Constants) when this hypothesis has the local-constants pool, else None."""
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants
    except ImportError:
        return None
    if not (callable(getattr(providers, "_get_local_constants", None))
            and hasattr(getattr(providers, "CONSTANTS_CACHE", None), "cache")):
        return None
    return providers, Constants()


def controls_local_constants() -> bool:
    """Whether the installed hypothesis exposes the pool :func:`without_local_constants` empties."""
    return _pool_hooks() is not None


@contextmanager
def without_local_constants():
    """Within the block, hypothesis draws no constants mined from the loaded modules (see the module doc).

    CONSTANTS_CACHE holds per-type tuples built from the pool, so it is cleared on entry (entries built from
    the full pool) and on exit (entries built from the empty one)."""
    hooks = _pool_hooks()
    if hooks is None:
        yield False
        return
    providers, empty = hooks
    with _GUARD.lock:
        mined = providers._get_local_constants
        providers._get_local_constants = lambda: empty
        providers.CONSTANTS_CACHE.cache.clear()
        try:
            yield True
        finally:
            providers._get_local_constants = mined
            providers.CONSTANTS_CACHE.cache.clear()


def provenance(seed: int, pinned: bool | None = None) -> dict:
    """What a searched figure depends on, for a check's details; ``pinned``: whether the search ran without the
    mined pool (default: whether this hypothesis lets :func:`without_local_constants` empty it)."""
    pinned = controls_local_constants() if pinned is None else pinned
    return {"engine": f"hypothesis {hypothesis.__version__}", "seed": int(seed),
            "local_constants": "excluded" if pinned else
            "not controlled (this hypothesis version has no pool dpcheck knows how to empty)"}


def explore(body: Callable, *strategies, examples: int, seed: int, phases=None) -> dict:
    """Run ``body(*drawn)`` on ``examples`` draws of ``strategies`` (``body`` may call ``hypothesis.target``),
    seeded by ``seed``, without local constants, without a database, deadline or health checks. Exceptions
    ``body`` raises propagate (as hypothesis reports a failing example: catch inside ``body`` to go on).
    Returns :func:`provenance`."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, seed as fix_seed, settings
    # every setting that changes the examples or the output is given here, so that a profile the user (or a
    # test suite) has loaded cannot: a profile with fewer phases would silently skip the search
    kw = dict(max_examples=int(examples), database=None, deadline=None, derandomize=False,
              suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet, print_blob=False,
              phases=tuple(phases) if phases is not None else (Phase.generate, Phase.target))
    if hasattr(settings, "backend"):        # an alternative backend (crosshair, ...) draws other examples
        kw["backend"] = "hypothesis"
    run = fix_seed(int(seed))(settings(**kw)(given(*strategies)(body)))
    with without_local_constants() as pinned:
        run()
    return provenance(seed, pinned)
