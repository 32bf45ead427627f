"""Does a plug-in privatizer draw its randomness from the rng it is given? (issue-level contract:
docs/privatizers.md "What your privatizer must do").

Every audit seeds a privatizer through ``start(..., rng)``; its verdicts (and ``--cache``, and identical
results across ``--workers``) rest on the releases being a function of the data and that rng alone. A
plug-in that draws from numpy's global state, its own generator or the clock gives different releases
for the same rng; one that seeds itself gives the same releases for different rngs. Both are caught
here, once per plug-in configuration, before the audit starts, on a tiny model (a few milliseconds) and
reported as a MechanismError naming the plug-in and what it did (exit 2). A privatizer that adds no noise
at all releases the true counts for every rng: that is a privacy failure for the audits to show (FAIL),
not a malfunction, so it passes this probe.
"""
from __future__ import annotations

import numpy as np

from dpcheck.fingerprint import Memo
from dpcheck.loading import probe_rng_use

SIZES = dict(runs=2, H=2, S=2, A=2, K=3)
_PROBED: Memo = Memo()      # configurations probed in this process (a declared memo: not part of any cache key)


FIELDS = ("visits", "transitions", "rewards", "noisy_visits", "noisy_transitions")


def _releases(make, rng: np.random.Generator, rewards: bool) -> list[tuple]:
    """Per episode: (every array field of the release, the true visits then, the released visits before
    post-processing)."""
    z = SIZES
    p = make()
    p.start(z["runs"], z["H"], z["S"], z["A"], z["K"], rng, rewards=rewards)
    data = np.random.default_rng(2024)          # the same episodes in every probe run
    out = []
    for _ in range(z["K"]):
        states = data.integers(z["S"], size=(z["runs"], z["H"] + 1))
        actions = data.integers(z["A"], size=(z["runs"], z["H"]))
        rw = data.random((z["runs"], z["H"])) if rewards else None
        p.observe(states, actions, rw)
        r = p.release()
        fields = [np.array(getattr(r, f), dtype=float, copy=True) for f in FIELDS if getattr(r, f, None) is not None]
        raw = getattr(r, "noisy_visits", None)       # before post-processing (the LP moves exact counts too)
        out.append((fields, np.array(p.true_counts().visits, dtype=float, copy=True),
                    np.array(r.visits if raw is None else raw, dtype=float, copy=True)))
    return out


def _same(a, b) -> bool:
    """The same releases: every field of every episode equal (NaN equal to NaN)."""
    fa = [x for fields, *_ in a for x in fields]
    fb = [x for fields, *_ in b for x in fields]
    return len(fa) == len(fb) and all(x.shape == y.shape and np.array_equal(x, y, equal_nan=True)
                                      for x, y in zip(fa, fb))


class _CannotRun(Exception):
    """The plug-in raised on the probe's tiny model."""


def check_rng_use(make, label: str, key=None, rewards: bool = True) -> None:
    """MechanismError unless the privatizer ``make()`` builds (a started-fresh object each call) gives
    identical releases for the same rng and different releases for different rngs
    (:func:`dpcheck.loading.probe_rng_use`). ``key``: probe a configuration once per process."""
    if key is not None and key in _PROBED:
        return

    def release(rng):
        try:
            return _releases(make, rng, rewards)
        except Exception as e:
            raise _CannotRun from e

    try:
        probe_rng_use(
            release, (11, 12), same=_same,
            conclusive=lambda out: any(not np.array_equal(raw, truth) for _, truth, raw in out),
            nondeterministic=f"privatizer {label!r}: two runs started with the same rng released different counts: "
            "it draws randomness outside the rng passed to start() (numpy's global state, its own generator, the "
            "clock); draw every noise value from that rng",
            ignores=f"privatizer {label!r}: runs started with different rngs released identical noisy counts: it "
            "ignores the rng passed to start() (a fixed seed of its own?); draw every noise value from that rng")
    except _CannotRun:  # a plug-in that cannot run the tiny model: the audit itself reports what it did
        return
    if key is not None:
        _PROBED[key] = True
