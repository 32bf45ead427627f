"""RiverSwim (Qiao & Wang 2023, Section 7), the DP-UCBVI experiment's environment.

Imported, not stated in the paper: the definition is Chowdhury & Zhou's public code
(``environment.make_riverSwim``), itself from Osband, Russo & Van Roy (2013, p. 6).
Reference values at H = 20 (exact value iteration): V*_1(0) = 3.397264, always-right 3.396637,
always-left 0.1.
"""
from __future__ import annotations

import numpy as np

from dpcheck.errors import InputError
from dpcheck.algorithms.envs.tabular import TabularMDP

LEFT, RIGHT = 0, 1


def riverswim_kernel(S: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """Stationary (P (S, 2, S), r (S, 2)) of the S-state RiverSwim chain (S = 6 in the paper)."""
    if S < 2:
        raise InputError(f"RiverSwim needs at least 2 states, got S = {S}")
    P = np.zeros((S, 2, S))
    states = np.arange(S)
    P[states, LEFT, np.maximum(states - 1, 0)] = 1.0
    for s in range(1, S - 1):          # interior: drift right 0.35, stay 0.60, slip back 0.05
        P[s, RIGHT, s + 1] = 0.35
        P[s, RIGHT, s] = 0.60
        P[s, RIGHT, s - 1] = 0.05
    P[0, RIGHT, 1] = 0.60              # left bank: 0.60 up, 0.40 stay
    P[0, RIGHT, 0] = 0.40
    P[S - 1, RIGHT, S - 1] = 0.60      # right bank: 0.60 stay, 0.40 back
    P[S - 1, RIGHT, S - 2] += 0.40     # += so that S = 2 (where S-2 = 0) still sums to 1
    r = np.zeros((S, 2))
    r[0, LEFT] = 0.005
    r[S - 1, RIGHT] = 1.0
    return P, r


def riverswim(H: int = 20, S: int = 6, reward_noise: str = "deterministic") -> TabularMDP:
    """RiverSwim with horizon H, start s_1 = 0, stationary kernel repeated over steps.

    Rewards are deterministic in the reference (``reward_noise="bernoulli"`` keeps the means and
    makes them random, for testing reward privatisation).
    """
    if isinstance(H, bool) or not isinstance(H, (int, np.integer)) or H < 1:
        raise InputError(f"H must be a positive integer, got {H!r}")
    P, r = riverswim_kernel(S)
    return TabularMDP(np.broadcast_to(P, (H,) + P.shape), np.broadcast_to(r, (H,) + r.shape), 0,
                      reward_noise, name=f"riverswim-{S}")
