"""A user's offline count privatizer for DP-APVI: DISCRETE Laplace (geometric) noise, pure eps-DP.

Use it with
    dpcheck audit offline_count_privatizer --privatizer examples/offline_privatizer.py:GeometricCountPrivatizer
    dpcheck audit dp_apvi --privatizer examples/offline_privatizer.py:GeometricCountPrivatizer --epsilon 1

Counts are integers, so integer noise keeps the release an integer count (no floating-point attack
surface, Mironov 2012): the two-sided geometric mechanism of Ghosh, Roughgarden & Sundararajan (2009),
P(Z = z) proportional to exp(-a |z|), a = eps / Delta_1. Replacing one trajectory moves H pair counts and
H triple counts by -1 and as many by +1 (Qiao & Wang, docs/derivations.md#neighbouring-relation): l1 sensitivity Delta_1 = 4H over both
families, and the geometric mechanism with a = eps / (4H) is eps-DP (the likelihood ratio of two integer
shifts at l1 distance <= 4H is at most exp(a 4H)).

``GeometricCountPrivatizerOneFamily`` is the planted-bug twin: it calibrates to ONE family's l1
sensitivity 2H (forgetting that the pair and the triple counts both move), so it is only 2 eps-DP.
"""
import math

import numpy as np

from dpcheck import Claim
from dpcheck.algorithms.privatizers import OfflineCountPrivatizer


class GeometricCountPrivatizer(OfflineCountPrivatizer):
    """Two-sided geometric noise on every pair and triple count, a = eps / (4H): eps-DP in one trajectory."""

    name = "geometric_counts"

    def __init__(self, epsilon: float = 1.0, beta: float = 0.1):
        if not (isinstance(epsilon, (int, float)) and 0 < epsilon < math.inf):
            raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}")
        if not 0 < beta < 1:
            raise ValueError(f"beta must lie in (0, 1), got {beta!r}")
        self.epsilon, self.beta = float(epsilon), float(beta)

    def sensitivity(self, H: int) -> float:
        """l1 change of both families together when one trajectory is replaced."""
        return 4.0 * H

    def decay(self, H: int) -> float:
        """a = eps / Delta_1: P(Z = z) proportional to exp(-a |z|)."""
        return self.epsilon / self.sensitivity(H)

    def noisy_counts(self, pair, triple, rng):
        a = self.decay(pair.shape[1])
        p = -math.expm1(-a)                      # success probability of each geometric variable

        def noise(shape):
            # the difference of two i.i.d. Geometric(p) (support 1, 2, ...) is two-sided geometric
            return (rng.geometric(p, size=shape) - rng.geometric(p, size=shape)).astype(float)

        return pair + noise(pair.shape), triple + noise(triple.shape)

    def width(self, H: int, S: int, A: int) -> float:
        """E with P(|Z| > E/2 for some count) <= beta: P(|Z| >= k) = 2 e^{-a k} / (1 + e^{-a}) <= 2 e^{-a k},
        union over the m = H S A (S + 1) counts, so k = ceil(log(2 m / beta) / a) and E = 2 (k - 1)."""
        m = H * S * A * (S + 1)
        k = math.ceil(math.log(2.0 * m / self.beta) / self.decay(H))
        return 2.0 * (k - 1)

    def noise_variance(self, H: int) -> float:
        """Var Z = 2 e^{-a} / (1 - e^{-a})^2."""
        a = self.decay(H)
        return 2.0 * math.exp(-a) / math.expm1(-a) ** 2

    def dp_event(self, H: int):
        # dp_accounting has no discrete-Laplace event: declare the pure-eps Laplace event of the same epsilon
        # (noise multiplier 1/eps), whose privacy loss is bounded by eps exactly as the geometric mechanism's is
        import dp_accounting
        return dp_accounting.LaplaceDpEvent(noise_multiplier=1.0 / self.epsilon)

    @property
    def claim(self) -> Claim:
        return Claim(epsilon=self.epsilon, notion="DP",
                     source="Ghosh, Roughgarden & Sundararajan 2009 (geometric mechanism); Qiao & Wang, docs/derivations.md#neighbouring-relation")


class GeometricCountPrivatizerOneFamily(GeometricCountPrivatizer):
    """PLANTED BUG: calibrated to one family's l1 sensitivity 2H instead of 4H -- only 2 eps-DP."""

    name = "geometric_counts_one_family"

    def sensitivity(self, H: int) -> float:
        return 2.0 * H
