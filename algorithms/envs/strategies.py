"""Hypothesis strategies for the environments of dpcheck.algorithms.envs: MDPs, Markov games, trajectory
datasets, user sequences and neighbouring trajectory datasets.

They live beside the classes they build (the core, :mod:`dpcheck.strategies`, imports no algorithm;
it keeps the environment-free strategies: seeds, policies, :func:`dpcheck.strategies.neighbouring`
and the array drawers used here). Sizes default to 1..3 so that properties can be checked against
brute force; every size argument takes an int or a strategy. How arrays are drawn is described in
:mod:`dpcheck.strategies`.
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from hypothesis.strategies import SearchStrategy

from dpcheck.algorithms.envs.games import MarkovGame
from dpcheck.algorithms.envs.tabular import TabularMDP, Trajectories
from dpcheck.algorithms.envs.users import FixedTrajectoryUsers, HashedUsers, random_table_users, users_from_model
from dpcheck.strategies import (SMALL, as_strategy, initial_distribution, neighbouring, reward_arrays, seeds,
                                stochastic_rows)

__all__ = ["tabular_mdps", "markov_games", "trajectories", "user_sequences", "neighbouring_trajectories"]


def tabular_mdps(S=SMALL, A=SMALL, H=SMALL, *, reward_noise="deterministic",
                 rewards="float", init="fixed") -> SearchStrategy:
    """Strategy for :class:`dpcheck.algorithms.envs.TabularMDP` (P (H, S, A, S), r (H, S, A), init).

    S, A, H: ints or strategies. reward_noise: "deterministic", "bernoulli" or a strategy.
    rewards: "float" | "grid" | "binary" (how the means are drawn). init: "fixed" (s_1 = 0) or
    "any" (a drawn distribution).
    """
    @st.composite
    def build(draw):
        s, a, h = draw(as_strategy(S)), draw(as_strategy(A)), draw(as_strategy(H))
        P = stochastic_rows(draw, (h, s, a), s)
        r = reward_arrays(draw, (h, s, a), rewards)
        init_dist = initial_distribution(draw, s, init)
        return TabularMDP(P, r, init_dist, draw(as_strategy(reward_noise)), name="hypothesis")
    return build()


def markov_games(S=SMALL, A=SMALL, B=SMALL, H=SMALL, *, rewards="float",
                 init="fixed") -> SearchStrategy:
    """Strategy for :class:`dpcheck.algorithms.envs.MarkovGame` (P (H, S, A, B, S), r (H, S, A, B))."""
    @st.composite
    def build(draw):
        s, a, b, h = draw(as_strategy(S)), draw(as_strategy(A)), draw(as_strategy(B)), draw(as_strategy(H))
        P = stochastic_rows(draw, (h, s, a, b), s)
        r = reward_arrays(draw, (h, s, a, b), rewards)
        return MarkovGame(P, r, initial_distribution(draw, s, init), name="hypothesis")
    return build()


def trajectories(mdp, n=st.integers(1, 4), *, feasible=True, policy=None) -> SearchStrategy:
    """Datasets of n trajectories of ``mdp`` (a TabularMDP or a strategy for one), as
    :class:`dpcheck.algorithms.envs.Trajectories` with states (n, H+1), actions (n, H), rewards (n, H).

    feasible=True: simulated with ``policy`` (default: uniformly random actions) from a drawn
    seed, so every trajectory has positive probability under the MDP (offline datasets, Section 2 of
    Qiao & Wang 2022). feasible=False: arbitrary states, actions and rewards in range --
    the "ANY two trajectories" of the LDP definition and the arbitrary user of JDP.
    """
    @st.composite
    def build(draw):
        m = draw(as_strategy(mdp))
        if not isinstance(m, TabularMDP):
            raise TypeError(f"trajectories() needs a TabularMDP, got {type(m).__name__}")
        k = draw(as_strategy(n))
        if feasible:
            pol = policy if policy is not None else np.full((m.H, m.S, m.A), 1.0 / m.A)
            return m.rollout(pol, np.random.default_rng(draw(seeds())), runs=k)
        states = draw(hnp.arrays(np.int64, (k, m.H + 1), elements=st.integers(0, m.S - 1)))
        actions = draw(hnp.arrays(np.int64, (k, m.H), elements=st.integers(0, m.A - 1)))
        rew = reward_arrays(draw, (k, m.H), "binary" if m.reward_noise == "bernoulli" else "float")
        return Trajectories(states, actions, rew)
    return build()


def user_sequences(mdp, K=st.integers(1, 4), *, kind="model") -> SearchStrategy:
    """Fixed user sequences U = (u_1..u_K) (JDP user trees) for ``mdp`` (or a strategy for one).

    kind: "model" (response trees sampled from the MDP, :func:`dpcheck.algorithms.envs.users_from_model`),
    "hashed" (arbitrary pseudo-random trees), "table" (explicit random trees; tiny H only) or
    "fixed" (users who report one trajectory whatever the actions).
    """
    @st.composite
    def build(draw):
        m = draw(as_strategy(mdp))
        k = draw(as_strategy(K))
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


def neighbouring_trajectories(mdp, n=st.integers(1, 4), *, feasible=True,
                              relation="replacement") -> SearchStrategy:
    """Neighbouring trajectory datasets of ``mdp``: ``neighbouring(pair_of=trajectories(...))``.

    The replacement trajectory is drawn the same way as the data (feasible or arbitrary).
    """
    @st.composite
    def build(draw):
        m = draw(as_strategy(mdp))
        k = draw(as_strategy(n))
        return draw(neighbouring(trajectories(m, k, feasible=feasible), relation=relation))
    return build()
