"""CCE subroutine of DP-Nash-VI (Qiao & Wang 2024, Algorithm 1 line 14)."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from dpcheck.algorithms.games.cce import (constraint_matrix, cce_residual, highs_cce, marginals, pure_cce,
                                  simplex_cce, solve_cce)
from dpcheck.errors import InputError


def brute_force_violation(pi, Qb, Qu):
    """Both CCE constraint families written out with loops, independently of constraint_matrix."""
    A, B = Qb.shape
    worst = -np.inf
    vb = sum(pi[a, b] * Qb[a, b] for a in range(A) for b in range(B))
    vu = sum(pi[a, b] * Qu[a, b] for a in range(A) for b in range(B))
    for a2 in range(A):
        dev = sum(pi[a, b] * Qb[a2, b] for a in range(A) for b in range(B))
        worst = max(worst, dev - vb)
    for b2 in range(B):
        dev = sum(pi[a, b] * Qu[a, b2] for a in range(A) for b in range(B))
        worst = max(worst, vu - dev)
    return worst


def stage_games(max_a=4, max_b=4, H=5.0):
    """Pairs (Qb, Qu) of A x B matrices with entries in [0, H], including ties (rounded values)."""
    return st.tuples(st.integers(1, max_a), st.integers(1, max_b), st.booleans()).flatmap(
        lambda t: st.tuples(*[hnp.arrays(float, (t[0], t[1]),
                                         elements=st.floats(0, H) if not t[2] else
                                         st.sampled_from([0.0, 1.0, 2.5, H]))
                              for _ in range(2)]))


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(stage_games())
def test_solution_is_a_cce_checked_by_brute_force(game):
    Qb, Qu = game
    sol = solve_cce(Qb, Qu, H=5.0)
    pi = sol.pi
    assert pi.shape == Qb.shape
    assert np.all(pi >= 0) and abs(pi.sum() - 1) < 1e-12
    assert brute_force_violation(pi, Qb, Qu) <= 1e-8 * 5.0
    # the consequences used in the proofs (Algorithm 1 line 14): value vs deviations against the marginals
    mu, nu = marginals(pi)
    assert (pi * Qb).sum() >= (Qb @ nu).max() - 1e-8 * 5
    assert (pi * Qu).sum() <= (mu @ Qu).min() + 1e-8 * 5


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(stage_games(3, 3))
def test_simplex_agrees_with_scipy_feasibility(game):
    Qb, Qu = game
    M = constraint_matrix(Qb, Qu)[None]
    pi, conv = simplex_cce(M)
    assert conv[0]
    assert np.max(M[0] @ pi[0]) <= 1e-9
    ref = highs_cce(M[0])
    # HiGHS's own primal feasibility tolerance is 1e-7 (hypothesis found 6e-8 on a 1.2e-7 entry)
    assert np.max(M[0] @ ref) <= 1e-6


def test_constraint_matrix_matches_brute_force():
    rng = np.random.default_rng(1)
    for A, B in [(1, 1), (2, 3), (3, 2), (4, 4)]:
        Qb, Qu = rng.uniform(0, 3, (2, A, B))
        for _ in range(10):
            pi = rng.dirichlet(np.ones(A * B)).reshape(A, B)
            assert np.isclose(cce_residual(pi, Qb, Qu), brute_force_violation(pi, Qb, Qu))


def test_nash_equilibria_from_nashpy_are_accepted_as_cces():
    nashpy = pytest.importorskip("nashpy")
    rng = np.random.default_rng(2)
    for _ in range(20):
        A, B = rng.integers(2, 4, size=2)
        Qb, Qu = rng.uniform(0, 2, (2, A, B))
        # max-player payoff Qb, min-player payoff -Qu (it minimises its cost Qu)
        game = nashpy.Game(Qb, -Qu)
        for mu, nu in itertools.islice(game.support_enumeration(), 3):
            assert cce_residual(np.outer(mu, nu), Qb, Qu) <= 1e-8


def test_zero_sum_matrix_games_have_nash_marginals():
    # T1 test beds: matching pennies and rock-paper-scissors in [0, 1]. In a zero-sum game every
    # CCE's marginals are minimax strategies and its value is the game value.
    pennies = np.array([[1.0, 0.0], [0.0, 1.0]])
    rps = (np.array([[0, -1, 1], [1, 0, -1], [-1, 1, 0]]) + 1) / 2
    for Q, value in [(pennies, 0.5), (rps, 0.5)]:
        sol = solve_cce(Q, Q, H=1.0)
        mu, nu = sol.marginals
        n = Q.shape[0]
        assert np.allclose(mu, 1 / n, atol=1e-9) and np.allclose(nu, 1 / n, atol=1e-9)
        assert np.isclose((sol.pi * Q).sum(), value)
        assert sol.n_pure == 0


def test_b_equals_one_is_greedy():
    rng = np.random.default_rng(3)
    Qb = rng.uniform(0, 5, (200, 4, 1))
    Qb[:20, 2] = Qb[:20].max(axis=1)  # ties: the lowest index wins
    Qu = rng.uniform(0, 5, (200, 4, 1))
    sol = solve_cce(Qb, Qu, H=5)
    assert np.array_equal(sol.pi[..., 0].argmax(axis=1), Qb[..., 0].argmax(axis=1))
    assert np.all(sol.pi.max(axis=(1, 2)) == 1.0)


def test_pure_profiles_are_found_and_degenerate_games_are_pure():
    Qb = np.full((7, 3, 2), 4.0)
    Qu = np.zeros((7, 3, 2))
    found, j = pure_cce(Qb, Qu)
    assert found.all() and (j == 0).all()
    # a strictly dominant profile (a=2, b=1) must be the unique answer
    Qb = np.array([[0, 1], [0, 1], [2, 3.0]])
    Qu = np.array([[3, 0], [3, 0], [3, 0.5]])
    sol = solve_cce(Qb, Qu)
    assert sol.pi[2, 1] == 1.0


def test_batch_shapes_and_all_methods_agree_on_feasibility():
    rng = np.random.default_rng(4)
    Qb, Qu = rng.uniform(0, 3, (2, 5, 4, 3, 3))
    for method in ("auto", "simplex", "highs"):
        sol = solve_cce(Qb, Qu, H=3, method=method)
        assert sol.pi.shape == (5, 4, 3, 3)
        assert np.all(sol.residual <= 3e-8)
        assert sol.n_pure + sol.n_simplex + sol.n_highs == 20
    assert solve_cce(Qb, Qu, H=3, method="highs").n_highs == 20


def test_bad_shapes_raise_input_error():
    with pytest.raises(InputError):
        solve_cce(np.zeros((2, 2)), np.zeros((2, 3)))
    with pytest.raises(InputError):
        solve_cce(np.zeros(3), np.zeros(3))


def test_hints_are_used_only_where_they_verify():
    rng = np.random.default_rng(5)
    Qb, Qu = rng.uniform(0, 3, (2, 300, 3, 3))
    first = solve_cce(Qb, Qu, H=3)
    # the same games: every hint that is not a pure CCE is accepted as is
    again = solve_cce(Qb, Qu, H=3, hint=first.pi)
    assert again.n_hint == 300 - again.n_pure and again.n_simplex == 0
    # a bad hint (uniform play) is rejected wherever uniform is not a CCE; results stay verified
    bad = solve_cce(Qb, Qu, H=3, hint=np.full((300, 3, 3), 1 / 9))
    assert np.all(bad.residual <= 3e-8)
    uniform_ok = cce_residual(np.full((300, 3, 3), 1 / 9), Qb, Qu) <= 3e-8
    assert bad.n_hint <= int(uniform_ok.sum())


def test_simplex_warm_start_from_last_basis_is_exact_and_falls_back_safely():
    rng = np.random.default_rng(11)
    Qb = rng.uniform(0, 3, (200, 3, 3))
    Qu = Qb - rng.uniform(0, 0.3, (200, 3, 3))
    M = constraint_matrix(Qb, Qu)
    pi0, conv0, basis = simplex_cce(M, return_basis=True)
    assert conv0.all()
    # the same games from their own optimal bases: nothing to pivot, same answer
    pi1, conv1 = simplex_cce(M, basis0=basis, max_iter=1)
    assert conv1.all() and np.allclose(pi1, pi0)
    # slightly moved games (as from one episode to the next): still exact CCEs
    M2 = constraint_matrix(Qb + rng.normal(0, 1e-3, Qb.shape), Qu + rng.normal(0, 1e-3, Qu.shape))
    pi2, conv2 = simplex_cce(M2, basis0=basis)
    assert conv2.all() and np.max(np.einsum("nij,nj->ni", M2, pi2)) <= 3e-8
    # unusable bases (singular: a repeated column; out of range) fall back to the cold start
    bad = basis.copy()
    bad[:, 1] = bad[:, 0]
    pi3, conv3 = simplex_cce(M, basis0=bad)
    assert conv3.all() and np.max(np.einsum("nij,nj->ni", M, pi3)) <= 3e-8
    pi4, conv4 = simplex_cce(M, basis0=np.full_like(basis, 99))
    assert conv4.all() and np.allclose(pi4, pi0)


def test_solve_cce_returns_bases_for_warm_starts():
    rng = np.random.default_rng(12)
    Qb = rng.uniform(0, 3, (40, 3, 3))
    Qu = Qb - 0.1
    sol = solve_cce(Qb, Qu, H=3.0, method="simplex")
    assert sol.basis.shape == (40, 6) and (sol.basis >= 0).all()
    again = solve_cce(Qb, Qu, H=3.0, method="simplex", hint_basis=sol.basis)
    assert np.allclose(again.pi, sol.pi) and np.all(cce_residual(again.pi, Qb, Qu) <= 3e-8)
