"""Input validation shared by the tabular environments (one clear InputError per defect)."""
from __future__ import annotations

import numpy as np

from dpcheck.errors import InputError

# Rows of a transition kernel must sum to 1 within this tolerance: loose enough for kernels
# built by normalising float counts (error ~1e-15 * S), tight enough to catch a wrong axis.
ROW_SUM_TOL = 1e-9


def as_float_array(name: str, value, ndim: int, shape: tuple | None = None) -> np.ndarray:
    """A read-only float64 copy of ``value`` with ``ndim`` axes (and ``shape`` if given)."""
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be a numeric array: {exc}") from None
    if arr.ndim != ndim:
        raise InputError(f"{name} must have {ndim} axes, got shape {arr.shape}")
    if shape is not None and arr.shape != tuple(shape):
        raise InputError(f"{name} must have shape {tuple(shape)}, got {arr.shape}")
    if any(n == 0 for n in arr.shape):
        raise InputError(f"{name} must not have an empty axis, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InputError(f"{name} contains NaN or infinite entries")
    arr.setflags(write=False)
    return arr


def check_distributions(name: str, arr: np.ndarray, what: str = "rows") -> None:
    """Every slice along the last axis is a probability distribution."""
    if np.any(arr < 0):
        idx = tuple(int(i) for i in np.argwhere(arr < 0)[0])
        raise InputError(f"{name} has a negative entry {arr[idx]:.3g} at index {idx}")
    sums = arr.sum(axis=-1)
    bad = np.abs(sums - 1.0) > ROW_SUM_TOL
    if np.any(bad):
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise InputError(f"{name} {what} must sum to 1 (within {ROW_SUM_TOL:g}); "
                         f"the one at index {idx} sums to {sums[idx]!r}")


def check_unit_interval(name: str, arr: np.ndarray) -> None:
    bad = (arr < 0) | (arr > 1)
    if np.any(bad):
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise InputError(f"{name} must lie in [0, 1]; entry {idx} is {arr[idx]!r}")


def as_initial_distribution(init, S: int) -> np.ndarray:
    """``init`` as an (S,) distribution; an integer means a fixed initial state."""
    if isinstance(init, (int, np.integer)) and not isinstance(init, bool):
        if not 0 <= int(init) < S:
            raise InputError(f"initial state {int(init)} is out of range for S = {S}")
        d = np.zeros(S)
        d[int(init)] = 1.0
        d.setflags(write=False)
        return d
    d = as_float_array("init", init, 1, (S,))
    check_distributions("init", d, what="distribution")
    return d


def cumulative(probs: np.ndarray) -> np.ndarray:
    """CDFs along the last axis whose final entry is exactly 1 (for inverse-CDF sampling).

    Dividing by the total makes the entry at the last positive-probability index exactly 1.0
    (x / x == 1 in IEEE arithmetic), so ``(cdf <= u).sum(-1)`` with u in [0, 1) can never
    land on an index past the support or on a zero-probability index.
    """
    cdf = np.cumsum(probs, axis=-1)
    cdf /= cdf[..., -1:]
    cdf[..., -1] = 1.0
    cdf.setflags(write=False)
    return cdf


def sample_from_cdf(cdf: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw per leading index from CDFs stacked as (..., n): inverse CDF, no Python loop."""
    u = rng.random(cdf.shape[:-1])
    return (cdf <= u[..., None]).sum(axis=-1)


def check_rng(rng) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise InputError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


def check_runs(runs) -> int:
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 1:
        raise InputError(f"runs must be a positive integer, got {runs!r}")
    return int(runs)


def as_index_array(name: str, value, upper: int) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu":
        raise InputError(f"{name} must be integers, got dtype {arr.dtype}")
    if arr.size and (arr.min() < 0 or arr.max() >= upper):
        raise InputError(f"{name} must lie in 0..{upper - 1}")
    return arr


def as_policy(policy, H: int, S: int, A: int, name: str = "policy") -> tuple[np.ndarray, bool]:
    """Validate a Markov policy and say whether it is deterministic.

    Deterministic: integer array (..., H, S) of actions. Stochastic: float array (..., H, S, A)
    whose last axis is a distribution. The dtype decides which, never the shape: an (H, S, A)
    array could be either a stochastic policy or a batch of deterministic ones, so integer
    means deterministic and float means stochastic.
    """
    arr = np.asarray(policy)
    if arr.dtype.kind in "iu":
        if arr.ndim < 2 or arr.shape[-2:] != (H, S):
            raise InputError(f"deterministic {name} must have shape (..., H, S) = (..., {H}, {S}), "
                             f"got {arr.shape}")
        if arr.size and (arr.min() < 0 or arr.max() >= A):
            raise InputError(f"deterministic {name} has actions outside 0..{A - 1}")
        return arr, True
    if arr.dtype.kind == "b" or arr.dtype.kind not in "f":
        raise InputError(f"{name} must be an integer (..., H, S) or float (..., H, S, A) array, "
                         f"got dtype {arr.dtype}")
    if arr.ndim < 3 or arr.shape[-3:] != (H, S, A):
        raise InputError(f"stochastic {name} must have shape (..., H, S, A) = (..., {H}, {S}, {A}), "
                         f"got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InputError(f"{name} contains NaN or infinite entries")
    check_distributions(name, arr, what="action distributions")
    return arr, False


def one_hot(actions: np.ndarray, A: int) -> np.ndarray:
    """Deterministic policy (..., H, S) -> stochastic (..., H, S, A)."""
    return (actions[..., None] == np.arange(A)).astype(np.float64)


class axis_length:
    """A read-only int attribute: the length of axis ``axis`` of the array attribute ``array`` -- the sizes a
    model or a result reads off its arrays (``H = axis_length("P", 0)`` for P of shape (H, S, A, S)). Like a
    property, it cannot be assigned."""

    def __init__(self, array: str, axis: int):
        self.array, self.axis = array, axis

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        return getattr(obj, self.array).shape[self.axis]

    def __set__(self, obj, value):
        raise AttributeError(f"{self.name} is read off {self.array}.shape and cannot be set")


class ReadOnlyArrays:
    """Mixin: arrays stay read-only after unpickling (pickle does not keep numpy's write flag),
    so an instance shipped to a joblib / dask worker is as immutable as the original."""

    def __setstate__(self, state):
        for value in state.values():
            if isinstance(value, np.ndarray):
                value.setflags(write=False)
        self.__dict__.update(state)


class TabularModel(ReadOnlyArrays):
    """Shared by TabularMDP and MarkovGame: the validated arrays, their sampling CDFs, and the sizes
    H, S, A read off P's leading axes (P is (H, S, A, ...), next state last)."""

    def _store_model(self, P: np.ndarray, r: np.ndarray, init: np.ndarray) -> None:
        object.__setattr__(self, "P", P)
        object.__setattr__(self, "r", r)
        object.__setattr__(self, "init", init)
        object.__setattr__(self, "_cdf", cumulative(P))
        object.__setattr__(self, "_init_cdf", cumulative(init))

    def sampling_tables(self) -> tuple[np.ndarray, np.ndarray]:
        """(init_cdf (S,), cdf (H, S, A[, B], S)): the cumulative sums of ``init`` and of every row of
        P that :meth:`reset` / :meth:`step` sample with (next state = number of entries <= a uniform,
        ``sample_from_cdf``). Read-only; an engine that simulates the model itself (the compiled
        UCBVI engine, batched user trees) reads these to draw exactly the same states."""
        init_cdf, cdf = self._init_cdf.view(), self._cdf.view()
        init_cdf.setflags(write=False)
        cdf.setflags(write=False)
        return init_cdf, cdf

    H = axis_length("P", 0)
    S = axis_length("P", 1)
    A = axis_length("P", 2)
