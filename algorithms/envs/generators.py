"""Seeded instance generators: random MDPs and games and matrix games.

Choices that are ours (the papers fix none of them): the initial state is the fixed
s_1 = 0 unless ``init="uniform"`` or ``init="random"`` (a Dirichlet(1) draw) is asked for; the
draw order is transitions, then rewards, then init, so adding an init option never changes the
kernel a seed produces.
"""
from __future__ import annotations

import numpy as np

from dpcheck.errors import InputError
from dpcheck.algorithms.envs._validate import check_rng
from dpcheck.algorithms.envs.games import MarkovGame
from dpcheck.algorithms.envs.tabular import TabularMDP


def _positive(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InputError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _init(init, S, rng):
    if init == "fixed":
        return 0
    if init == "uniform":
        return np.full(S, 1.0 / S)
    if init == "random":
        return rng.dirichlet(np.ones(S))
    raise InputError(f"init must be 'fixed', 'uniform' or 'random', got {init!r}")


def _dirichlet_rows(rng, shape, S):
    # Dirichlet(1, ..., 1) = normalised Exp(1) draws; one vectorised call for every row.
    g = rng.standard_exponential(shape + (S,))
    return g / g.sum(axis=-1, keepdims=True)


def random_mdp(S: int, A: int, H: int, rng: np.random.Generator, *, init: str = "fixed",
               reward_noise: str = "deterministic") -> TabularMDP:
    """P_h(. | s, a) ~ Dirichlet(1, ..., 1), r_h(s, a) ~ U[0, 1], independently for every (h, s, a)."""
    check_rng(rng)
    S, A, H = _positive("S", S), _positive("A", A), _positive("H", H)
    P = _dirichlet_rows(rng, (H, S, A), S)
    r = rng.random((H, S, A))
    return TabularMDP(P, r, _init(init, S, rng), reward_noise, name=f"random-mdp-S{S}A{A}H{H}")


def random_game(S: int, A: int, B: int, H: int, rng: np.random.Generator, *,
                init: str = "fixed") -> MarkovGame:
    """T3: P_h(. | s, a, b) ~ Dirichlet(1, ..., 1), r_h(s, a, b) ~ U[0, 1] fixed and known."""
    check_rng(rng)
    S, A, B, H = _positive("S", S), _positive("A", A), _positive("B", B), _positive("H", H)
    P = _dirichlet_rows(rng, (H, S, A, B), S)
    r = rng.random((H, S, A, B))
    return MarkovGame(P, r, _init(init, S, rng), name=f"random-game-S{S}A{A}B{B}H{H}")


def matrix_game(payoff, name: str = "matrix-game") -> MarkovGame:
    """A one-shot (S = 1, H = 1) zero-sum game with payoff matrix (A, B) in [0, 1] to the max-player."""
    M = np.asarray(payoff, dtype=np.float64)
    if M.ndim != 2:
        raise InputError(f"payoff must be an (A, B) matrix, got shape {M.shape}")
    A, B = M.shape
    return MarkovGame(np.ones((1, 1, A, B, 1)), M[None, None], 0, name=name)


def matching_pennies() -> MarkovGame:
    """T1: r = [[1, 0], [0, 1]]; value 1/2, unique Nash (1/2, 1/2) for both players."""
    return matrix_game([[1.0, 0.0], [0.0, 1.0]], name="matching-pennies")


def rock_paper_scissors() -> MarkovGame:
    """T1: rock-paper-scissors, payoff (win, draw, loss) = (1, 0, -1) rescaled by (x + 1) / 2 to
    (1, 1/2, 0); value 1/2, unique Nash uniform for both players."""
    win_loss = np.array([[0, -1, 1], [1, 0, -1], [-1, 1, 0]], dtype=np.float64)
    return matrix_game((win_loss + 1.0) / 2.0, name="rock-paper-scissors")
