"""Hypothesis strategies for tabular RL: MDPs, games, policies, datasets, users, neighbouring pairs.

Small by default (S, A, B <= 3, H <= 3) so that properties can be checked against brute force,
and composable: every size argument takes an int or a strategy, and :func:`neighbouring` turns
any strategy for a dataset into one for neighbouring pairs::

    from hypothesis import given
    from dpcheck.strategies import tabular_mdps, trajectories, neighbouring

    @given(neighbouring(pair_of=trajectories(riverswim(H=3), n=5)))
    def test_counts_sensitivity(pair):
        D, D_prime = pair
        ...

How arrays are drawn (so that failures shrink to readable instances): every transition row is
a vector of small integer weights in 0..3 normalised (rows that draw all zeros become uniform),
which covers deterministic, sparse and uniform kernels and shrinks towards uniform; rewards
are floats in [0, 1] (or, with ``rewards="grid"``, multiples of 1/4).

``dpcheck`` imports no algorithm at module level (DESIGN.md), so the environment classes are
imported inside the strategies.
"""
from __future__ import annotations

import numpy as np
from hypothesis import assume, strategies as st
from hypothesis.extra import numpy as hnp
from hypothesis.strategies import SearchStrategy

__all__ = ["tabular_mdps", "markov_games", "policies", "trajectories", "user_sequences",
           "neighbouring", "neighbouring_trajectories", "seeds"]

_SMALL = st.integers(1, 3)


def _strategy(x) -> SearchStrategy:
    return x if isinstance(x, SearchStrategy) else st.just(x)


def seeds() -> SearchStrategy:
    """Seeds for ``np.random.default_rng`` (the one place a test's randomness enters)."""
    return st.integers(0, 2**32 - 1)


def _kernel(draw, shape, S):
    w = draw(hnp.arrays(np.int64, shape + (S,), elements=st.integers(0, 3)))
    w = w.astype(np.float64)
    empty = w.sum(axis=-1) == 0
    w[empty] = 1.0
    return w / w.sum(axis=-1, keepdims=True)


def _rewards(draw, shape, rewards):
    if rewards == "grid":
        return draw(hnp.arrays(np.int64, shape, elements=st.integers(0, 4))) / 4.0
    if rewards == "binary":
        return draw(hnp.arrays(np.int64, shape, elements=st.integers(0, 1))).astype(np.float64)
    return draw(hnp.arrays(np.float64, shape, elements=st.floats(0.0, 1.0, allow_subnormal=False)))


def _init(draw, S, init):
    if init == "fixed":
        return 0
    if init == "any":
        return _kernel(draw, (), S)
    raise ValueError(f"init must be 'fixed' or 'any', got {init!r}")


def tabular_mdps(S=_SMALL, A=_SMALL, H=_SMALL, *, reward_noise="deterministic",
                 rewards="float", init="fixed") -> SearchStrategy:
    """Strategy for :class:`algorithms.envs.TabularMDP` (P (H, S, A, S), r (H, S, A), init).

    S, A, H: ints or strategies. reward_noise: "deterministic", "bernoulli" or a strategy.
    rewards: "float" | "grid" | "binary" (how the means are drawn). init: "fixed" (s_1 = 0) or
    "any" (a drawn distribution).
    """
    @st.composite
    def build(draw):
        from algorithms.envs import TabularMDP
        s, a, h = draw(_strategy(S)), draw(_strategy(A)), draw(_strategy(H))
        P = _kernel(draw, (h, s, a), s)
        r = _rewards(draw, (h, s, a), rewards)
        return TabularMDP(P, r, _init(draw, s, init), draw(_strategy(reward_noise)), name="hypothesis")
    return build()


def markov_games(S=_SMALL, A=_SMALL, B=_SMALL, H=_SMALL, *, rewards="float",
                 init="fixed") -> SearchStrategy:
    """Strategy for :class:`algorithms.envs.MarkovGame` (P (H, S, A, B, S), r (H, S, A, B))."""
    @st.composite
    def build(draw):
        from algorithms.envs import MarkovGame
        s, a, b, h = draw(_strategy(S)), draw(_strategy(A)), draw(_strategy(B)), draw(_strategy(H))
        P = _kernel(draw, (h, s, a, b), s)
        r = _rewards(draw, (h, s, a, b), rewards)
        return MarkovGame(P, r, _init(draw, s, init), name="hypothesis")
    return build()


def policies(H, S, A, *, deterministic=None, batch=()) -> SearchStrategy:
    """Markov policies: deterministic int (*batch, H, S) or stochastic float (*batch, H, S, A).

    ``deterministic=None`` draws either kind. Sizes may be ints or strategies; pass
    ``mdp.H, mdp.S, mdp.A`` for a given MDP (or use ``st.flatmap`` over :func:`tabular_mdps`).
    """
    @st.composite
    def build(draw):
        h, s, a = draw(_strategy(H)), draw(_strategy(S)), draw(_strategy(A))
        det = draw(st.booleans()) if deterministic is None else deterministic
        shape = tuple(batch) + (h, s)
        if det:
            return draw(hnp.arrays(np.int64, shape, elements=st.integers(0, a - 1)))
        return _kernel(draw, shape, a)
    return build()


def trajectories(mdp, n=st.integers(1, 4), *, feasible=True, policy=None) -> SearchStrategy:
    """Datasets of n trajectories of ``mdp`` (a TabularMDP or a strategy for one), as
    :class:`algorithms.envs.Trajectories` with states (n, H+1), actions (n, H), rewards (n, H).

    feasible=True: simulated with ``policy`` (default: uniformly random actions) from a drawn
    seed, so every trajectory has positive probability under the MDP (offline datasets, §1.2 of
    offline_dp_apvi_vapvi.md). feasible=False: arbitrary states, actions and rewards in range --
    the "ANY two trajectories" of the LDP definition and the arbitrary user of JDP.
    """
    @st.composite
    def build(draw):
        from algorithms.envs import TabularMDP, Trajectories
        m = draw(_strategy(mdp))
        if not isinstance(m, TabularMDP):
            raise TypeError(f"trajectories() needs a TabularMDP, got {type(m).__name__}")
        k = draw(_strategy(n))
        if feasible:
            pol = policy if policy is not None else np.full((m.H, m.S, m.A), 1.0 / m.A)
            return m.rollout(pol, np.random.default_rng(draw(seeds())), runs=k)
        states = draw(hnp.arrays(np.int64, (k, m.H + 1), elements=st.integers(0, m.S - 1)))
        actions = draw(hnp.arrays(np.int64, (k, m.H), elements=st.integers(0, m.A - 1)))
        rew = _rewards(draw, (k, m.H), "binary" if m.reward_noise == "bernoulli" else "float")
        return Trajectories(states, actions, rew)
    return build()


def user_sequences(mdp, K=st.integers(1, 4), *, kind="model") -> SearchStrategy:
    """Fixed user sequences U = (u_1..u_K) (JDP user trees) for ``mdp`` (or a strategy for one).

    kind: "model" (response trees sampled from the MDP, :func:`algorithms.envs.users_from_model`),
    "hashed" (arbitrary pseudo-random trees), "table" (explicit random trees; tiny H only) or
    "fixed" (users who report one trajectory whatever the actions).
    """
    @st.composite
    def build(draw):
        from algorithms.envs.users import (FixedTrajectoryUsers, HashedUsers, random_table_users,
                                           users_from_model)
        m = draw(_strategy(mdp))
        k = draw(_strategy(K))
        rng = np.random.default_rng(draw(seeds()))
        if kind == "model":
            return users_from_model(m, k, rng)
        if kind == "hashed":
            return HashedUsers.random(k, m.S, m.A, m.H, rng)
        if kind == "table":
            return random_table_users(k, m.S, m.A, m.H, rng)
        if kind == "fixed":
            t = draw(trajectories(m, k, feasible=False))
            return FixedTrajectoryUsers(m.H, m.S, m.A, t.states, t.rewards)
        raise ValueError(f"unknown kind {kind!r}")
    return build()


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


def neighbouring_trajectories(mdp, n=st.integers(1, 4), *, feasible=True,
                              relation="replacement") -> SearchStrategy:
    """Neighbouring trajectory datasets of ``mdp``: ``neighbouring(pair_of=trajectories(...))``.

    The replacement trajectory is drawn the same way as the data (feasible or arbitrary).
    """
    @st.composite
    def build(draw):
        m = draw(_strategy(mdp))
        k = draw(_strategy(n))
        return draw(neighbouring(trajectories(m, k, feasible=feasible), relation=relation))
    return build()
