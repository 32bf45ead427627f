"""Exact planners for two-player zero-sum Markov games (Qiao & Wang 2024, Section 2.1).

Backward induction on the true game, batched over leading policy axes. Nash values solve the
matrix game Q*_h(s, ., .) at every (h, s) with an LP (scipy HiGHS): H*S small LPs, offline, once
per instance, which is what the definition allows; a pure saddle point (checked exactly first) or a
single-action player needs no LP.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.optimize import linprog

from dpcheck.errors import InputError
from dpcheck.algorithms.envs._validate import as_policy, check_distributions, one_hot
from dpcheck.algorithms.envs.games import MarkovGame
from dpcheck.algorithms.envs.planning import evaluate


def _check_game(game):
    if not isinstance(game, MarkovGame):
        raise InputError(f"expected a MarkovGame, got {type(game).__name__}")


def _stochastic(policy, H, S, n, name):
    pol, deterministic = as_policy(policy, H, S, n, name=name)
    return one_hot(pol, n) if deterministic else pol.astype(np.float64)


def _correlated(game, pi):
    pi = np.asarray(pi, dtype=np.float64)
    H, S, A, B = game.H, game.S, game.A, game.B
    if pi.ndim < 4 or pi.shape[-4:] != (H, S, A, B):
        raise InputError(f"correlated policy pi must have shape (..., H, S, A, B) = (..., {H}, {S}, {A}, {B}), "
                         f"got {pi.shape}")
    if not np.all(np.isfinite(pi)):
        raise InputError("correlated policy pi contains NaN or infinite entries")
    check_distributions("pi", pi.reshape(pi.shape[:-2] + (A * B,)), what="joint action distributions")
    return pi


def marginals(pi) -> tuple[np.ndarray, np.ndarray]:
    """mu_h(a|s) = sum_b pi_h(a, b|s), nu_h(b|s) = sum_a pi_h(a, b|s): shapes (..., H, S, A), (..., H, S, B)."""
    pi = np.asarray(pi, dtype=np.float64)
    if pi.ndim < 4:
        raise InputError(f"pi must have shape (..., H, S, A, B), got {pi.shape}")
    return pi.sum(axis=-1), pi.sum(axis=-2)


def product_policy(mu, nu) -> np.ndarray:
    """The correlated policy pi_h(a, b|s) = mu_h(a|s) nu_h(b|s) of independent play, (..., H, S, A, B)."""
    mu = np.asarray(mu, dtype=np.float64)
    nu = np.asarray(nu, dtype=np.float64)
    return mu[..., :, None] * nu[..., None, :]


def correlated_policy_values(game: MarkovGame, pi) -> tuple[np.ndarray, np.ndarray]:
    """(Q^pi (..., H, S, A, B), V^pi (..., H+1, S)) of a correlated policy pi (..., H, S, A, B)."""
    _check_game(game)
    pi = _correlated(game, pi)
    H, S, A, B = game.H, game.S, game.A, game.B
    mdp = game.joint_mdp()
    Q, V = evaluate(mdp.P, mdp.r, pi.reshape(pi.shape[:-2] + (A * B,)))
    return Q.reshape(Q.shape[:-1] + (A, B)), V


def product_policy_values(game: MarkovGame, mu, nu) -> tuple[np.ndarray, np.ndarray]:
    """(Q^{mu,nu}, V^{mu,nu}) of independent play; mu, nu deterministic or stochastic, batches broadcast."""
    _check_game(game)
    mu = _stochastic(mu, game.H, game.S, game.A, "mu")
    nu = _stochastic(nu, game.H, game.S, game.B, "nu")
    return correlated_policy_values(game, product_policy(mu, nu))


class BestResponseValues(NamedTuple):
    """Values against a best-responding opponent (Qiao & Wang 2024, Section 2.1).

    V_dagger_nu (nu_batch..., H+1, S)        V^{dagger,nu} = sup_mu V^{mu,nu}
    Q_dagger_nu (nu_batch..., H, S, A, B)    Q^{dagger,nu}
    V_mu_dagger (mu_batch..., H+1, S)        V^{mu,dagger} = inf_nu V^{mu,nu}
    Q_mu_dagger (mu_batch..., H, S, A, B)    Q^{mu,dagger}
    best_response_max (nu_batch..., H, S) int  a deterministic mu^dagger(nu)
    best_response_min (mu_batch..., H, S) int  a deterministic nu^dagger(mu)
    """
    V_dagger_nu: np.ndarray
    Q_dagger_nu: np.ndarray
    V_mu_dagger: np.ndarray
    Q_mu_dagger: np.ndarray
    best_response_max: np.ndarray
    best_response_min: np.ndarray


def _best_response(game, policy, player):
    # player "max" responds to nu (policy over B); "min" responds to mu (policy over A).
    H, S = game.H, game.S
    P, r = game.P, game.r
    batch = policy.shape[:-3]
    Q = np.empty(batch + (H, S, game.A, game.B))
    V = np.zeros(batch + (H + 1, S))
    response = np.empty(batch + (H, S), dtype=np.int64)
    for h in range(H - 1, -1, -1):
        Q[..., h, :, :, :] = r[h] + np.einsum("sabt,...t->...sab", P[h], V[..., h + 1, :])
        if player == "max":
            # V^{dagger,nu}_h(s) = max_a sum_b nu_h(b|s) Q^{dagger,nu}_h(s, a, b)
            payoff = np.einsum("...sab,...sb->...sa", Q[..., h, :, :, :], policy[..., h, :, :])
            response[..., h, :] = payoff.argmax(axis=-1)
            V[..., h, :] = payoff.max(axis=-1)
        else:
            # V^{mu,dagger}_h(s) = min_b sum_a mu_h(a|s) Q^{mu,dagger}_h(s, a, b)
            payoff = np.einsum("...sab,...sa->...sb", Q[..., h, :, :, :], policy[..., h, :, :])
            response[..., h, :] = payoff.argmin(axis=-1)
            V[..., h, :] = payoff.min(axis=-1)
    return Q, V, response


def best_response_values(game: MarkovGame, mu, nu) -> BestResponseValues:
    """V^{dagger,nu}, Q^{dagger,nu}, V^{mu,dagger}, Q^{mu,dagger} by backward induction on the true game.

    mu (..., H, S, A) and nu (..., H, S, B), deterministic int (..., H, S) also accepted; each
    result keeps the batch axes of the policy it responds to.
    """
    _check_game(game)
    mu = _stochastic(mu, game.H, game.S, game.A, "mu")
    nu = _stochastic(nu, game.H, game.S, game.B, "nu")
    Q_dn, V_dn, br_max = _best_response(game, nu, "max")
    Q_md, V_md, br_min = _best_response(game, mu, "min")
    return BestResponseValues(V_dn, Q_dn, V_md, Q_md, br_max, br_min)


def duality_gap(game: MarkovGame, mu, nu) -> np.ndarray:
    """E_{s_1 ~ d_1}[V^{dagger,nu}_1(s_1) - V^{mu,dagger}_1(s_1)] >= 0, batched (Qiao & Wang 2024, Section 2.1).

    The paper has a fixed s_1; with an initial distribution we take the expectation (equal to the
    paper's quantity when d_1 is a point mass). Batch axes of mu and nu broadcast.
    """
    br = best_response_values(game, mu, nu)
    return br.V_dagger_nu[..., 0, :] @ game.init - br.V_mu_dagger[..., 0, :] @ game.init


class NashSolution(NamedTuple):
    """Q* (H, S, A, B), V* (H+1, S), mu* (H, S, A), nu* (H, S, B) of Qiao & Wang 2024, Section 2.1."""
    Q: np.ndarray
    V: np.ndarray
    mu: np.ndarray
    nu: np.ndarray


def solve_matrix_game(M: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """(value, x, y) of the zero-sum matrix game max_x min_y x^T M y, M (A, B).

    Exact shortcuts first (one action for either player; a pure saddle point, where
    max_a min_b M = min_b max_a M); otherwise two HiGHS LPs, one per player:
        max v  s.t.  sum_a x_a M[a, b] >= v  for all b,  x in the simplex;
        min w  s.t.  sum_b M[a, b] y_b <= w  for all a,  y in the simplex.
    LP solutions are clipped to >= 0 and renormalised (HiGHS returns -1e-17 entries).
    """
    M = np.asarray(M, dtype=np.float64)
    A, B = M.shape
    row_min, col_max = M.min(axis=1), M.max(axis=0)
    a, b = int(row_min.argmax()), int(col_max.argmin())
    if row_min[a] == col_max[b]:
        return float(M[a, b]), np.eye(A)[a], np.eye(B)[b]
    x = _lp_strategy(M)
    y = _lp_strategy(-M.T)
    return float(x @ M @ y), x, y


def _lp_strategy(M):
    # Maximin strategy of the row player of M: variables (x_1..x_A, v), minimise -v.
    A, B = M.shape
    c = np.zeros(A + 1)
    c[-1] = -1.0
    A_ub = np.hstack([-M.T, np.ones((B, 1))])
    A_eq = np.hstack([np.ones((1, A)), np.zeros((1, 1))])
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(B), A_eq=A_eq, b_eq=[1.0],
                  bounds=[(0, None)] * A + [(None, None)], method="highs")
    if res.status != 0:  # cannot happen for a finite matrix; kept as a loud internal error
        raise RuntimeError(f"matrix-game LP failed: {res.message}")
    x = np.clip(res.x[:A], 0.0, None)
    return x / x.sum()


def nash_values(game: MarkovGame) -> NashSolution:
    """Nash Q*, V*, mu*, nu* by backward induction, solving the matrix game Q*_h(s, ., .) at each (h, s)."""
    _check_game(game)
    H, S, A, B = game.H, game.S, game.A, game.B
    Q = np.empty((H, S, A, B))
    V = np.zeros((H + 1, S))
    mu = np.empty((H, S, A))
    nu = np.empty((H, S, B))
    for h in range(H - 1, -1, -1):
        Q[h] = game.r[h] + game.P[h] @ V[h + 1]
        for s in range(S):  # H*S LPs, allowed here: offline, once per instance (see module doc)
            V[h, s], mu[h, s], nu[h, s] = solve_matrix_game(Q[h, s])
    return NashSolution(Q, V, mu, nu)
