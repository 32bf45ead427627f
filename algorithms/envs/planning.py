"""Exact planners for tabular MDPs (Qiao & Wang 2023, Section 2.1 Bellman equations; Qiao & Wang 2022, Section 2).

Everything is backward induction on the true model, batched: a policy with leading axes (...)
is evaluated for every index of (...) at once, because regret needs one exact evaluation per
episode (regret is exact, never sampled). The only Python loop is over the H steps.

The array-level functions (:func:`value_iteration`, :func:`evaluate`) take (P, r) with their own
leading batch axes, so algorithms can plan in their (batched) estimated models with the same code.
"""
from __future__ import annotations

import numpy as np

from dpcheck.errors import InputError
from dpcheck.algorithms.envs._validate import as_policy, one_hot
from dpcheck.algorithms.envs.tabular import TabularMDP


def _check_mdp(mdp):
    if not isinstance(mdp, TabularMDP):
        raise InputError(f"expected a TabularMDP, got {type(mdp).__name__}")


def value_iteration(P: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Optimal (Q (..., H, S, A), V (..., H+1, S)) of models P (..., H, S, A, S), r (..., H, S, A).

    Q*_h = r_h + P_h V*_{h+1}, V*_h(s) = max_a Q*_h(s, a), V*_{H+1} = 0. Leading axes broadcast.
    """
    P = np.asarray(P, dtype=np.float64)
    r = np.asarray(r, dtype=np.float64)
    H, S = P.shape[-4], P.shape[-3]
    batch = np.broadcast_shapes(P.shape[:-4], r.shape[:-3])
    Q = np.empty(batch + r.shape[-3:])
    V = np.zeros(batch + (H + 1, S))
    for h in range(H - 1, -1, -1):
        Q[..., h, :, :] = r[..., h, :, :] + np.einsum("...sat,...t->...sa", P[..., h, :, :, :], V[..., h + 1, :])
        V[..., h, :] = Q[..., h, :, :].max(axis=-1)
    return Q, V


def evaluate(P: np.ndarray, r: np.ndarray, policy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(Q^pi (..., H, S, A), V^pi (..., H+1, S)) for a stochastic policy (..., H, S, A).

    Q^pi_h = r_h + P_h V^pi_{h+1}, V^pi_h(s) = sum_a pi_h(a|s) Q^pi_h(s, a). Leading axes of the
    model and of the policy broadcast against each other.
    """
    P = np.asarray(P, dtype=np.float64)
    r = np.asarray(r, dtype=np.float64)
    H, S = P.shape[-4], P.shape[-3]
    batch = np.broadcast_shapes(P.shape[:-4], r.shape[:-3], policy.shape[:-3])
    Q = np.empty(batch + r.shape[-3:])
    V = np.zeros(batch + (H + 1, S))
    for h in range(H - 1, -1, -1):
        Q[..., h, :, :] = r[..., h, :, :] + np.einsum("...sat,...t->...sa", P[..., h, :, :, :], V[..., h + 1, :])
        V[..., h, :] = np.einsum("...sa,...sa->...s", policy[..., h, :, :], Q[..., h, :, :])
    return Q, V


def optimal_values(mdp: TabularMDP) -> tuple[np.ndarray, np.ndarray]:
    """(Q* (H, S, A), V* (H+1, S)) of ``mdp`` (V*[H] = 0 is the terminal V*_{H+1})."""
    _check_mdp(mdp)
    return value_iteration(mdp.P, mdp.r)


def policy_values(mdp: TabularMDP, policy) -> tuple[np.ndarray, np.ndarray]:
    """(Q^pi (..., H, S, A), V^pi (..., H+1, S)) for a batch of policies.

    policy: deterministic int (..., H, S) or stochastic float (..., H, S, A).
    """
    _check_mdp(mdp)
    pol, deterministic = as_policy(policy, mdp.H, mdp.S, mdp.A)
    if deterministic:
        pol = one_hot(pol, mdp.A)
    return evaluate(mdp.P, mdp.r, pol)


def greedy(Q: np.ndarray) -> np.ndarray:
    """Deterministic greedy policy (..., H, S) int from Q (..., H, S, A); ties go to the lowest action."""
    Q = np.asarray(Q)
    if Q.ndim < 3:
        raise InputError(f"Q must have shape (..., H, S, A), got {Q.shape}")
    return np.argmax(Q, axis=-1)


def expected_return(mdp: TabularMDP, policy) -> np.ndarray:
    """v^pi = E_{s ~ d_1} V^pi_1(s), shape (...) for a policy batch (...)."""
    _, V = policy_values(mdp, policy)
    return V[..., 0, :] @ mdp.init


def optimal_return(mdp: TabularMDP) -> float:
    """v* = E_{s ~ d_1} V*_1(s)."""
    _, V = optimal_values(mdp)
    return float(V[0] @ mdp.init)


def suboptimality(mdp: TabularMDP, policy) -> np.ndarray:
    """v* - v^pi (>= 0) for a policy batch (...): the per-episode expected regret of Qiao & Wang 2023, Section 2.1
    (averaged over s_1 ~ d_1) and the offline sub-optimality of Qiao & Wang 2022, Section 2."""
    return optimal_return(mdp) - expected_return(mdp, policy)


def occupancy(mdp: TabularMDP, policy) -> np.ndarray:
    """d^pi_h(s, a) = Pr[s_h = s | s_1 ~ d_1, pi] pi_h(a|s), shape (..., H, S, A) (Qiao & Wang 2022, Section 2)."""
    _check_mdp(mdp)
    pol, deterministic = as_policy(policy, mdp.H, mdp.S, mdp.A)
    if deterministic:
        pol = one_hot(pol, mdp.A)
    d = np.empty(pol.shape)
    state_dist = np.broadcast_to(mdp.init, pol.shape[:-3] + (mdp.S,))
    for h in range(mdp.H):
        d[..., h, :, :] = state_dist[..., :, None] * pol[..., h, :, :]
        state_dist = np.einsum("...sa,sat->...t", d[..., h, :, :], mdp.P[h])
    return d
