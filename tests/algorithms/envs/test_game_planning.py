"""Game planners: Nash values (LP), best responses, duality gap; brute force and properties."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dpcheck.errors import InputError
from dpcheck.algorithms.envs import (
    MarkovGame, best_response_values, correlated_policy_values, duality_gap, marginals,
    matching_pennies, matrix_game, nash_values, optimal_values, product_policy,
    product_policy_values, random_game, random_mdp, riverswim, rock_paper_scissors,
    solve_matrix_game,
)

seeds = st.integers(0, 2**32 - 1)


def test_matrix_games_t1():
    for game in (matching_pennies(), rock_paper_scissors()):
        sol = nash_values(game)
        n = game.A
        assert sol.V[0, 0] == pytest.approx(0.5, abs=1e-9)
        np.testing.assert_allclose(sol.mu[0, 0], np.full(n, 1 / n), atol=1e-7)
        np.testing.assert_allclose(sol.nu[0, 0], np.full(n, 1 / n), atol=1e-7)
        assert duality_gap(game, sol.mu, sol.nu) == pytest.approx(0.0, abs=1e-8)
        # a pure strategy in matching pennies is exploited down to 0 / up to 1
    pure = np.array([[[1.0, 0.0]]])
    gap = duality_gap(matching_pennies(), pure, pure)
    assert gap == pytest.approx(1.0)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_solve_matrix_game_against_nashpy():
    nashpy = pytest.importorskip("nashpy")
    rng = np.random.default_rng(0)
    for _ in range(10):
        M = rng.random((3, 4))
        v, x, y = solve_matrix_game(M)
        # vertex enumeration (not support enumeration, which returns nothing on degenerate games:
        # nashpy 0.0.43, the 5th game here); every equilibrium of a zero-sum game has the value v
        eqs = list(nashpy.Game(M, -M).vertex_enumeration())
        assert eqs, "nashpy found no equilibrium"
        for x_eq, y_eq in eqs:
            assert v == pytest.approx(x_eq @ M @ y_eq, abs=1e-8)
        assert (x @ M).min() == pytest.approx(v, abs=1e-8)      # x guarantees v
        assert (M @ y).max() == pytest.approx(v, abs=1e-8)      # y concedes at most v


def test_pure_saddle_point_skips_lp():
    M = np.array([[0.2, 0.9], [0.4, 0.6]])  # saddle at (1, 0): row min max = 0.4 = col max min
    v, x, y = solve_matrix_game(M)
    assert v == 0.4 and x.tolist() == [0, 1] and y.tolist() == [1, 0]


def test_best_response_matches_enumeration():
    """V^{dagger,nu} = max over all deterministic mu of V^{mu,nu} (and symmetrically), tiny game."""
    rng = np.random.default_rng(1)
    g = random_game(2, 2, 2, 2, rng)
    nu = rng.dirichlet(np.ones(2), size=(2, 2))
    mu = rng.dirichlet(np.ones(2), size=(2, 2))
    det = np.array(list(itertools.product(range(2), repeat=4))).reshape(-1, 2, 2)
    v_vs_nu = product_policy_values(g, det, nu)[1][:, 0] @ g.init
    v_vs_mu = product_policy_values(g, mu, det)[1][:, 0] @ g.init
    br = best_response_values(g, mu, nu)
    assert br.V_dagger_nu[0] @ g.init == pytest.approx(v_vs_nu.max(), abs=1e-12)
    assert br.V_mu_dagger[0] @ g.init == pytest.approx(v_vs_mu.min(), abs=1e-12)
    # the returned best responses attain those values
    assert product_policy_values(g, br.best_response_max, nu)[1][0] @ g.init == pytest.approx(v_vs_nu.max())
    assert product_policy_values(g, mu, br.best_response_min)[1][0] @ g.init == pytest.approx(v_vs_mu.min())


def test_correlated_values_match_monte_carlo():
    rng = np.random.default_rng(2)
    g = random_game(3, 2, 2, 3, rng)
    pi = rng.dirichlet(np.ones(4), size=(3, 3)).reshape(3, 3, 2, 2)
    _, V = correlated_policy_values(g, pi)
    t = g.rollout(pi, np.random.default_rng(3), runs=100_000)
    ret = t.rewards.sum(axis=1)
    assert abs(ret.mean() - V[0] @ g.init) < 5 * ret.std() / np.sqrt(ret.size)


@settings(max_examples=25, deadline=None)
@given(seed=seeds, S=st.integers(1, 3), A=st.integers(1, 3), B=st.integers(1, 3), H=st.integers(1, 3))
def test_nash_properties(seed, S, A, B, H):
    rng = np.random.default_rng(seed)
    g = random_game(S, A, B, H, rng, init="random")
    sol = nash_values(g)
    # Nash strategies are distributions
    np.testing.assert_allclose(sol.mu.sum(-1), 1.0, atol=1e-9)
    np.testing.assert_allclose(sol.nu.sum(-1), 1.0, atol=1e-9)
    # best responses to the Nash pair give V* (Qiao & Wang 2024, Section 2.1), gap 0
    br = best_response_values(g, sol.mu, sol.nu)
    np.testing.assert_allclose(br.V_dagger_nu, sol.V, atol=1e-7)
    np.testing.assert_allclose(br.V_mu_dagger, sol.V, atol=1e-7)
    # V^{dagger,nu} >= V* >= V^{mu,dagger} for a batch of arbitrary policies
    mus = rng.dirichlet(np.ones(A), size=(6, H, S))
    nus = rng.dirichlet(np.ones(B), size=(6, H, S))
    br = best_response_values(g, mus, nus)
    assert np.all(br.V_dagger_nu >= sol.V - 1e-7)
    assert np.all(br.V_mu_dagger <= sol.V + 1e-7)
    gaps = duality_gap(g, mus, nus)
    assert gaps.shape == (6,) and np.all(gaps >= -1e-9)
    # V^{mu,dagger} <= V^{mu,nu} <= V^{dagger,nu}
    _, V = product_policy_values(g, mus, nus)
    assert np.all(br.V_mu_dagger <= V + 1e-9) and np.all(V <= br.V_dagger_nu + 1e-9)
    # marginals of a product policy are its factors
    m1, m2 = marginals(product_policy(mus, nus))
    np.testing.assert_allclose(m1, mus, atol=1e-12)
    np.testing.assert_allclose(m2, nus, atol=1e-12)


@settings(max_examples=20, deadline=None)
@given(seed=seeds, S=st.integers(1, 4), A=st.integers(1, 3), H=st.integers(1, 4))
def test_b_equals_one_reduces_to_the_mdp(seed, S, A, H):
    m = random_mdp(S, A, H, np.random.default_rng(seed))
    g = MarkovGame.from_mdp(m)
    sol = nash_values(g)
    Q, V = optimal_values(m)
    np.testing.assert_allclose(sol.V, V, atol=1e-12)
    np.testing.assert_allclose(sol.Q[..., 0], Q, atol=1e-12)


def test_riverswim_as_game_t2():
    sol = nash_values(MarkovGame.from_mdp(riverswim()))
    assert sol.V[0, 0] == pytest.approx(3.397264, abs=5e-7)


def test_game_planner_input_errors():
    g = matching_pennies()
    with pytest.raises(InputError, match="MarkovGame"):
        nash_values(riverswim())
    with pytest.raises(InputError, match="shape"):
        correlated_policy_values(g, np.full((1, 1, 2, 3), 1 / 6))
    with pytest.raises(InputError, match="sum to 1"):
        correlated_policy_values(g, np.full((1, 1, 2, 2), 0.3))
    with pytest.raises(InputError, match="mu"):
        best_response_values(g, np.full((1, 1, 3), 1 / 3), np.full((1, 1, 2), 0.5))
    with pytest.raises(InputError):
        matrix_game([[2.0, 0.0]])
