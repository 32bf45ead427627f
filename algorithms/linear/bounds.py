"""The explicit regret bounds of the proofs of Thms 4.1 and 5.1 (Zhou 2022).

These are what the proofs actually show, with the per-component constants (the generic O(.) statements
drop an H in front of the reward-side term). They hold with probability >= 1 - 4 alpha under
Assumptions 1 and 2; a run whose exact pseudo-regret exceeds them is a counterexample only on that event.

    T1 = 2 beta_p sqrt(K H) sqrt(2 H d1 ln(1 + K H^2 / lambda_min_p))
    T2 = 2 H beta_r sqrt(K H) sqrt(2 H d2 ln(1 + K / (d2 lambda_min_r)))
    T3 = H sqrt(2 K H ln(1/alpha))                               (Azuma, Algorithm 1)
    Algorithm 2: sqrt(2 H^3 T ln|A|) (mirror descent) + 4 H sqrt(2 T ln(1/alpha)) (martingale) + T1 + T2
"""
from __future__ import annotations

import math

from dpcheck.algorithms.linear.regularizers import Assumption2, LinearSizes


def bonus_terms(sizes: LinearSizes, c: Assumption2, beta_p: float, beta_r: float) -> tuple[float, float]:
    """(T1, T2) of the proof of Theorem 4.1."""
    K, H, d1, d2 = sizes.K, sizes.H, sizes.d1, sizes.d2
    root = math.sqrt(K * H)
    T1 = 2.0 * beta_p * root * math.sqrt(2.0 * H * d1 * math.log1p(K * H * H / c.lambda_min_p))
    T2 = 2.0 * H * beta_r * root * math.sqrt(2.0 * H * d2 * math.log1p(K / (d2 * c.lambda_min_r)))
    return T1, T2


def regret_bound_vi(sizes: LinearSizes, c: Assumption2, beta_p: float, beta_r: float, alpha: float) -> float:
    """T1 + T2 + T3: the explicit regret bound of Algorithm 1 after K episodes (Theorem 4.1)."""
    T1, T2 = bonus_terms(sizes, c, beta_p, beta_r)
    K, H = sizes.K, sizes.H
    return T1 + T2 + H * math.sqrt(2.0 * K * H * math.log(1.0 / alpha))


def regret_bound_po(sizes: LinearSizes, c: Assumption2, beta_p: float, beta_r: float, alpha: float, A: int) -> float:
    """(i) + (ii) + T1 + T2: the explicit regret bound of Algorithm 2 after K episodes (Theorem 5.1)."""
    T1, T2 = bonus_terms(sizes, c, beta_p, beta_r)
    H, T = sizes.H, sizes.K * sizes.H
    mirror = math.sqrt(2.0 * H ** 3 * T * math.log(A))
    martingale = 4.0 * H * math.sqrt(2.0 * T * math.log(1.0 / alpha))
    return mirror + martingale + T1 + T2
