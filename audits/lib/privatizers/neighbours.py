"""Neighbouring users and the likelihood-ratio statistics of the count-privatizer audits.

The worst case of Qiao & Wang 2023 Lemma 5.6, Qiao & Wang 2024 Lemma 5.4 and Qiao & Wang 2022 Lemma C.1
(:func:`worst_case_pair`): at every step the two trajectories visit different (s,a) and (s,a,s') and both
earn reward 1, so every family moves by 2H in l1; all other users are fixed (:func:`background`).
:func:`laplace_llr` / :func:`gaussian_llr`: the Neyman-Pearson log-likelihood ratios of the declared noise.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


UCBVI_SOURCE = "Qiao & Wang 2023 (DP-UCBVI)"
NASH_SOURCE = "Qiao & Wang 2024 (DP-Nash-VI)"


# ============================================================ neighbouring users (the papers' worst cases)
@dataclass(frozen=True)
class Trajectory:
    """One user's episode: states (H+1,), actions (H,), rewards (H,) in [0, 1]."""

    states: tuple
    actions: tuple
    rewards: tuple

    def arrays(self, runs: int):
        st = np.broadcast_to(np.asarray(self.states, dtype=np.int64), (runs, len(self.states)))
        ac = np.broadcast_to(np.asarray(self.actions, dtype=np.int64), (runs, len(self.actions)))
        rw = np.broadcast_to(np.asarray(self.rewards, dtype=float), (runs, len(self.rewards)))
        return st, ac, rw


def worst_case_pair(H: int, S: int, A: int) -> tuple[Trajectory, Trajectory]:
    """Two trajectories that differ in (s,a) and (s,a,s') at every step, both with reward 1 (Lemma 5.6; Lemma 5.4):
    every family's per-trajectory vector moves by 2H in l1 (replacement sensitivity)."""
    if S < 2:
        raise ValueError("the worst-case pair needs S >= 2")
    x = Trajectory(states=(0,) * (H + 1), actions=(0,) * H, rewards=(1.0,) * H)
    y = Trajectory(states=(1,) * (H + 1), actions=(A - 1,) * H, rewards=(1.0,) * H)
    return x, y


def background(H: int) -> Trajectory:
    """A scripted other user (fixed responses): stays in state 0, action 0, reward 0."""
    return Trajectory(states=(0,) * (H + 1), actions=(0,) * H, rewards=(0.0,) * H)


# ============================================================ likelihood-ratio statistics
def laplace_llr(x: np.ndarray, mu: np.ndarray, mu_prime: np.ndarray) -> np.ndarray:
    """sum_i |x_i - mu'_i| - |x_i - mu_i| over the coordinates that differ: b x the log-likelihood
    ratio of Laplace noise of scale b (any b: the ordering, hence the events, does not depend on it).
    x (size, d); mu, mu' (d,)."""
    diff = mu != mu_prime
    llr = (np.abs(x[:, diff] - mu_prime[diff]) - np.abs(x[:, diff] - mu[diff])).sum(axis=1)
    # the ratio is constant on the saturated plateau (an event of positive probability); rounding
    # keeps float noise from splitting the plateau into spurious, unequal halves
    return np.round(llr, 9)


def gaussian_llr(x: np.ndarray, mu: np.ndarray, mu_prime: np.ndarray) -> np.ndarray:
    """sigma^2 x the Gaussian log-likelihood ratio: (x - (mu + mu')/2) . (mu - mu')."""
    d = mu - mu_prime
    return (x - 0.5 * (mu + mu_prime)) @ d
