"""Hypothesis strategies for tabular RL that need no environment: policies, neighbouring pairs, seeds.

Small by default (S, A, B <= 3, H <= 3) so that properties can be checked against brute force,
and composable: every size argument takes an int or a strategy, and :func:`neighbouring` turns
any strategy for a dataset into one for neighbouring pairs::

    from hypothesis import given
    from dpcheck.strategies import neighbouring
    from dpcheck.algorithms.envs.strategies import tabular_mdps, trajectories

    @given(neighbouring(pair_of=trajectories(riverswim(H=3), n=5)))
    def test_counts_sensitivity(pair):
        D, D_prime = pair
        ...

How arrays are drawn (so that failures shrink to readable instances): every transition row is
a vector of small integer weights in 0..3 normalised (rows that draw all zeros become uniform),
which covers deterministic, sparse and uniform kernels and shrinks towards uniform; rewards
are floats in [0, 1] (or, with ``rewards="grid"``, multiples of 1/4).

This module holds the strategies that need no environment (seeds, policies as arrays,
:func:`neighbouring` for any dataset, the array drawers); the ones that build environments,
datasets and users live beside those classes, in :mod:`dpcheck.algorithms.envs.strategies`, because the
core imports neither ``algorithms`` nor ``audits`` (tests/project/test_layering.py).
"""
from __future__ import annotations

import numpy as np
from hypothesis import assume, strategies as st
from hypothesis.extra import numpy as hnp
from hypothesis.strategies import SearchStrategy

__all__ = ["policies", "neighbouring", "seeds", "stochastic_rows", "reward_arrays", "initial_distribution",
           "as_strategy", "SMALL", "episode_sizes", "episode_states", "episode_actions"]

SMALL = st.integers(1, 3)     # the default of every size argument


def as_strategy(x) -> SearchStrategy:
    """``x`` itself if it is a strategy, else the strategy that always draws ``x``."""
    return x if isinstance(x, SearchStrategy) else st.just(x)


def seeds() -> SearchStrategy:
    """Seeds for ``np.random.default_rng`` (the one place a test's randomness enters)."""
    return st.integers(0, 2**32 - 1)


def stochastic_rows(draw, shape, S):
    """An array shape + (S,) of probability rows: integer weights 0..3 normalised (all-zero: uniform)."""
    w = draw(hnp.arrays(np.int64, shape + (S,), elements=st.integers(0, 3)))
    w = w.astype(np.float64)
    empty = w.sum(axis=-1) == 0
    w[empty] = 1.0
    return w / w.sum(axis=-1, keepdims=True)


def reward_arrays(draw, shape, rewards):
    """Mean rewards of ``shape`` in [0, 1]: rewards = "float", "grid" (multiples of 1/4) or "binary"."""
    if rewards == "grid":
        return draw(hnp.arrays(np.int64, shape, elements=st.integers(0, 4))) / 4.0
    if rewards == "binary":
        return draw(hnp.arrays(np.int64, shape, elements=st.integers(0, 1))).astype(np.float64)
    return draw(hnp.arrays(np.float64, shape, elements=st.floats(0.0, 1.0, allow_subnormal=False)))


def initial_distribution(draw, S, init):
    """The initial state: init = "fixed" (state 0) or "any" (a drawn distribution over S states)."""
    if init == "fixed":
        return 0
    if init == "any":
        return stochastic_rows(draw, (), S)
    raise ValueError(f"init must be 'fixed' or 'any', got {init!r}")


def policies(H, S, A, *, deterministic=None, batch=()) -> SearchStrategy:
    """Markov policies: deterministic int (*batch, H, S) or stochastic float (*batch, H, S, A).

    ``deterministic=None`` draws either kind. Sizes may be ints or strategies; pass
    ``mdp.H, mdp.S, mdp.A`` for a given MDP (or use ``st.flatmap`` over :func:`tabular_mdps`).
    """
    @st.composite
    def build(draw):
        h, s, a = draw(as_strategy(H)), draw(as_strategy(S)), draw(as_strategy(A))
        det = draw(st.booleans()) if deterministic is None else deterministic
        shape = tuple(batch) + (h, s)
        if det:
            return draw(hnp.arrays(np.int64, shape, elements=st.integers(0, a - 1)))
        return stochastic_rows(draw, shape, a)
    return build()


# ----------------------------------------------------------------------------- one episode, as lists
def episode_sizes(draw, *, min_states: int = 1) -> tuple[int, int, int]:
    """(H, S, A) drawn in that order: H in 1..3, S in ``min_states``..3, A in 1..2 (for composite strategies:
    small enough that a search over neighbours covers them)."""
    return draw(st.integers(1, 3)), draw(st.integers(min_states, 3)), draw(st.integers(1, 2))


def episode_states(H: int, S: int) -> SearchStrategy:
    """The H + 1 states s_1 .. s_{H+1} of one episode, a list of ints in 0..S-1."""
    return st.lists(st.integers(0, S - 1), min_size=H + 1, max_size=H + 1)


def episode_actions(H: int, A: int) -> SearchStrategy:
    """The H actions of one episode, a list of ints in 0..A-1."""
    return st.lists(st.integers(0, A - 1), min_size=H, max_size=H)


# ----------------------------------------------------------------------------- neighbouring pairs
def _size(data) -> int:
    if hasattr(data, "K") and hasattr(data, "replace") and hasattr(data, "per_episode"):
        return data.K                                   # ScriptedUsers
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return len(data[0])                             # Trajectories-like NamedTuple of arrays
    return len(data)


def _replace(data, i, other, j):
    if hasattr(data, "per_episode") and hasattr(data, "replace"):
        return data.replace(i, other, j)
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        fields = []
        for a, b in zip(data, other):
            a = np.array(a)
            a[i] = np.asarray(b)[j]
            fields.append(a)
        return type(data)(*fields)
    if isinstance(data, np.ndarray):
        out = data.copy()
        out[i] = other[j]
        return out
    out = list(data)
    out[i] = other[j]
    return type(data)(out) if isinstance(data, tuple) else out


def _remove(data, i):
    if hasattr(data, "per_episode") and hasattr(data, "select"):
        return data.select([k for k in range(data.K) if k != i])
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(np.delete(np.asarray(a), i, axis=0) for a in data))
    if isinstance(data, np.ndarray):
        return np.delete(data, i, axis=0)
    out = [x for k, x in enumerate(data) if k != i]
    return type(data)(out) if isinstance(data, tuple) else out


def _equal_item(a, i, b, j) -> bool:
    if hasattr(a, "per_episode"):
        return len(a.select([i]).differing_users(b.select([j]))) == 0
    if isinstance(a, tuple) and hasattr(a, "_fields"):
        return all(np.array_equal(np.asarray(x)[i], np.asarray(y)[j]) for x, y in zip(a, b))
    return bool(np.all(np.asarray(a[i]) == np.asarray(b[j])))


def neighbouring(pair_of: SearchStrategy, *, relation="replacement", distinct=True) -> SearchStrategy:
    """Pairs (D, D') of neighbouring datasets drawn from ``pair_of``.

    A dataset is a sequence whose items are the privacy unit: a list / tuple / array (leading
    axis), a Trajectories-like NamedTuple of arrays (one trajectory per row), or ScriptedUsers
    (one user per index). relation="replacement": D' = D with item i replaced by item j of a
    second draw from ``pair_of`` (the papers' neighbouring relation; items must be compatible,
    so draw fixed-size items); "add_remove": D' = D without item i. ``distinct`` rejects
    replacements equal to the original (so the pair really differs).
    """
    if relation not in ("replacement", "add_remove"):
        raise ValueError(f"relation must be 'replacement' or 'add_remove', got {relation!r}")

    @st.composite
    def build(draw):
        D = draw(pair_of)
        size = _size(D)
        assume(size >= 1)
        i = draw(st.integers(0, size - 1))
        if relation == "add_remove":
            return D, _remove(D, i)
        other = draw(pair_of)
        assume(_size(other) >= 1)
        j = draw(st.integers(0, _size(other) - 1))
        if distinct:
            assume(not _equal_item(D, i, other, j))
        return D, _replace(D, i, other, j)
    return build()
