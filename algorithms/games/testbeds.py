"""Test beds for the DP-Nash-VI rate checks (Qiao & Wang 2024, Section 6; our proposals, not the paper's).

Why a hand-made game. The duality-gap regret sum_k Gap(mu^k, nu^k) grows like sqrt(K) only while
the gap of the episode policies shrinks like 1/sqrt(k). That needs (i) stage games whose equilibria
are strictly MIXED, so that an O(w) error in the optimistic / pessimistic Q tables moves the CCE
marginals, and the gap, by O(w) (at a strict pure equilibrium a small error changes nothing and the
gap is exactly 0 after finitely many episodes: the regret saturates), and (ii) stochastic transitions
into states with different equilibrium values, so that the 1/sqrt(N) estimation error of P^ reaches
the step-1 Q tables (with deterministic transitions only the 1/N terms of the bonus act and the
regret is ~ log K). The seeded T3 random game of the first audit (S = 2, A = B = 2, H = 2) has a pure
equilibrium: its measured exponent was -0.7 to -1.3 (an uninformative pass).

``stochastic_pennies``: H = 2, S = 2, A = B = 2. Step 1 (state 0): an asymmetric matching-pennies
payoff; the joint action decides the probability of moving to state 1. Step 2: two different
matching-pennies-like games (values 0.50 and 0.55) in states 0 and 1. Every reachable stage game
of Q* has a fully mixed Nash equilibrium (``mixed_margin`` >= 0.2, checked in tests), and the
continuation values differ by 0.05... so P^'s error enters the first step. Measured (non-private,
practical constants, 8 seeds, window K in [500, 4000]): exponent 0.47-0.5 (benchmarks/ and the
audit's report hold the numbers of every run).
"""
from __future__ import annotations

import numpy as np

from dpcheck.algorithms.envs.games import MarkovGame

__all__ = ["stochastic_pennies", "mixed_margin"]


def stochastic_pennies() -> MarkovGame:
    """The regret test bed of the dp_nash_vi audit (module docstring)."""
    H, S, A, B = 2, 2, 2, 2
    r = np.empty((H, S, A, B))
    P = np.empty((H, S, A, B, S))
    r[0, :] = [[0.7, 0.2], [0.1, 0.6]]              # no saddle point (also not in Q*_1)
    p1 = np.array([[0.6, 0.4], [0.4, 0.6]])         # P(s' = 1 | s, a, b) at step 1
    P[0, :, :, :, 1] = p1
    P[0, :, :, :, 0] = 1.0 - p1
    r[1, 0] = [[0.4, 0.0], [0.0, 0.4]]              # value 0.2, Nash (1/2, 1/2)
    r[1, 1] = [[1.0, 0.6], [0.5, 1.0]]              # value ~0.78, mixed
    P[1] = 0.5                                      # after the last step: irrelevant, any distribution
    return MarkovGame(P, r, 0, name="stochastic-pennies-S2A2B2H2")


def mixed_margin(game) -> float:
    """min over steps and states reached with positive probability under the Nash pair of the smallest
    Nash-marginal probability: > 0 means every reached stage game has a fully mixed equilibrium."""
    from dpcheck.algorithms.envs.game_planning import nash_values
    sol = nash_values(game)
    mu, nu = np.asarray(sol.mu), np.asarray(sol.nu)               # (H, S, A), (H, S, B)
    H, S = game.H, game.S
    reach = np.zeros((H, S))
    d = np.asarray(game.init, dtype=float)
    for h in range(H):
        reach[h] = d
        joint = mu[h][:, :, None] * nu[h][:, None, :]              # (S, A, B)
        d = np.einsum("s,sab,sabt->t", d, joint, np.asarray(game.P)[h])
    m = np.minimum(mu.min(axis=-1), nu.min(axis=-1))              # (H, S)
    return float(m[reach > 1e-12].min())
