"""dpcheck.strategies and dpcheck.algorithms.envs.strategies: valid, small, composable; neighbouring pairs differ in exactly one unit."""
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dpcheck.algorithms.envs import MarkovGame, TabularMDP, Trajectories, optimal_values, policy_values, riverswim
from dpcheck.algorithms.envs.strategies import (
    markov_games, neighbouring_trajectories, tabular_mdps, trajectories, user_sequences,
)
from dpcheck.strategies import neighbouring, policies

FAST = settings(max_examples=30, deadline=None)


def test_dpcheck_strategies_import_no_algorithm():
    code = ("import sys, dpcheck.strategies; "
            "assert not any(m.startswith(('algorithms', 'dpcheck.algorithms')) for m in sys.modules), 'imported algorithms'")
    subprocess.run([sys.executable, "-c", code], check=True)


@FAST
@given(tabular_mdps(reward_noise=st.sampled_from(["deterministic", "bernoulli"]), init="any"))
def test_tabular_mdps_are_valid_and_small(m):
    assert isinstance(m, TabularMDP)
    assert 1 <= m.S <= 3 and 1 <= m.A <= 3 and 1 <= m.H <= 3
    np.testing.assert_allclose(m.P.sum(-1), 1.0)
    assert m.r.min() >= 0 and m.r.max() <= 1


@FAST
@given(tabular_mdps(S=2, A=st.just(3), H=4, rewards="grid"))
def test_fixed_sizes_and_grid_rewards(m):
    assert (m.S, m.A, m.H) == (2, 3, 4)
    np.testing.assert_array_equal(m.r * 4, np.round(m.r * 4))


@FAST
@given(markov_games(B=1))
def test_markov_games(g):
    assert isinstance(g, MarkovGame) and g.B == 1
    np.testing.assert_allclose(g.P.sum(-1), 1.0)


@FAST
@given(st.data())
def test_policies_compose_with_mdps(data):
    m = data.draw(tabular_mdps())
    pi = data.draw(policies(m.H, m.S, m.A, batch=(2,)))
    Q, V = policy_values(m, pi)
    assert V.shape == (2, m.H + 1, m.S)
    assert np.all(V <= optimal_values(m)[1] + 1e-12)


@FAST
@given(trajectories(tabular_mdps(), n=3))
def test_feasible_trajectories_have_positive_probability(t):
    assert isinstance(t, Trajectories) and t.states.shape[0] == 3


@FAST
@given(st.data())
def test_feasible_trajectories_follow_the_kernel(data):
    m = data.draw(tabular_mdps())
    t = data.draw(trajectories(m, n=3))
    h = np.arange(m.H)
    assert np.all(m.P[h, t.states[:, :-1], t.actions, t.states[:, 1:]] > 0)
    assert np.all(m.init[t.states[:, 0]] > 0)


@pytest.mark.slow
@FAST
@given(neighbouring_trajectories(riverswim(H=3), n=4, feasible=False))
def test_neighbouring_trajectories_differ_in_exactly_one(pair):
    D, D2 = pair
    rows = [np.any(a != b, axis=1) for a, b in zip(D, D2)]
    differing = np.flatnonzero(rows[0] | rows[1] | rows[2])
    assert len(differing) == 1 and all(a.shape == b.shape for a, b in zip(D, D2))


@FAST
@given(neighbouring(pair_of=trajectories(riverswim(H=2), n=3), relation="add_remove"))
def test_add_remove(pair):
    D, D2 = pair
    assert D2.states.shape[0] == D.states.shape[0] - 1


@FAST
@given(neighbouring(pair_of=st.lists(st.integers(0, 5), min_size=1, max_size=5)))
def test_neighbouring_generic_lists(pair):
    a, b = pair
    assert len(a) == len(b) and sum(x != y for x, y in zip(a, b)) == 1


@settings(max_examples=15, deadline=None)
@given(neighbouring(pair_of=user_sequences(riverswim(H=2), K=3, kind="model")))
def test_neighbouring_user_sequences(pair):
    U, U2 = pair
    assert len(U.differing_users(U2)) == 1


@settings(max_examples=10, deadline=None)
@given(st.sampled_from(["hashed", "table", "fixed"]).flatmap(
    lambda kind: user_sequences(riverswim(H=2), K=2, kind=kind)))
def test_user_sequence_kinds(U):
    s, r = U.responses(np.array([0, 1]), np.array([[0, 1], [1, 1]]))
    assert s.shape == (2, 3) and r.shape == (2, 2)
