"""A user's privatizer of DP-VAPVI's released regression statistics: Gaussian noise with an UNEQUAL budget split.

Use it with
    dpcheck audit offline_regression_privatizer --privatizer examples/regression_privatizer.py:SplitBudgetGaussian
    dpcheck audit dp_vapvi --privatizer examples/regression_privatizer.py:SplitBudgetGaussian --set rho=1

The paper (Qiao & Wang, Offline RL with DP; docs/derivations.md#noise-calibration) gives each of the 5H releases the same budget rho / (5H).
But the width E of the two Gram matrices enters the penalty constant through H^4 E sqrt(d) / kappa^1.5, the
dominant term of Dpen, while the vectors enter through H^2 L / kappa: spending more of rho on the matrices
buys a smaller penalty for the same privacy. Here statistic k gets rho_k = w_k rho / H at every step
(sum_k w_k = 1), noise N(0, Delta_k^2 / (2 rho_k)) per coordinate; the 5H Gaussian releases compose to
sum_h sum_k rho_k = rho-zCDP (Bun & Steinke 2016, Lemma 2.3).

``SplitBudgetGaussianNotPerStep`` is the planted-bug twin: it forgets to divide the budget over the H
steps (rho_k = w_k rho), so the composition is H rho-zCDP; it declares what it draws, honestly.
"""
import math

from dpcheck import Claim
from dpcheck.algorithms.offline import RegressionPrivatizer, gaussian_dp_event, gaussian_noise, gaussian_widths

STATS = ("sigma_matrix", "beta_vector", "theta_vector", "lambda_matrix", "w_vector")
WEIGHTS = {"sigma_matrix": 0.3, "lambda_matrix": 0.3, "beta_vector": 0.4 / 3, "theta_vector": 0.4 / 3,
           "w_vector": 0.4 / 3}


class SplitBudgetGaussian(RegressionPrivatizer):
    """rho-zCDP with statistic k's share w_k of the budget (WEIGHTS: 60% to the two Gram matrices)."""

    name = "split_budget_gaussian"

    def __init__(self, rho: float = 1.0, weights: dict | None = None):
        if not (isinstance(rho, (int, float)) and 0 < rho < math.inf):
            raise ValueError(f"rho must be a finite number > 0, got {rho!r}")
        self.rho = float(rho)
        self.weights = dict(weights or WEIGHTS)
        if set(self.weights) != set(STATS) or abs(sum(self.weights.values()) - 1) > 1e-12:
            raise ValueError(f"weights must give each of {STATS} a share, summing to 1")

    def step_budget(self, H: int) -> dict:
        """rho_k: what statistic k spends at ONE step."""
        return {k: w * self.rho / H for k, w in self.weights.items()}

    def noise_stds(self, H, sensitivities):
        r = self.step_budget(H)
        return {k: sensitivities[k] / math.sqrt(2.0 * r[k]) for k in STATS}

    # Gaussian noise at these stds: the paper's law, so the library's Gaussian helpers draw it, bound it and
    # declare it. draw: fresh N(0, std_k^2) per coordinate, matrices (Z + Z^T)/sqrt(2) (the Gaussian mechanism on
    # (upper off-diagonal, diagonal/sqrt(2))); widths: Lemma D.2's form with these stds, ||N_i|| <= E/2 with
    # E = sqrt(8 d) s_Z (2 + (log(5H/delta) / d)^(2/3)) (s_Z the larger matrix std), ||g|| <= L =
    # s_g sqrt(2 d log(10 H d / delta)), s_g the largest of std(g2), std(g3), std(g1)/H (so ||g1|| <= H L);
    # dp_event: the 5H Gaussian releases, each at noise multiplier std_k / Delta_k, composed.
    def draw(self, rng, runs, H, d, sensitivities):
        return gaussian_noise(rng, runs, H, d, self.noise_stds(H, sensitivities))

    def widths(self, H, d, sensitivities, delta):
        return gaussian_widths(self.noise_stds(H, sensitivities), H, d, delta)

    def dp_event(self, H, sensitivities):
        return gaussian_dp_event(self.noise_stds(H, sensitivities), sensitivities, H)

    @property
    def claim(self):
        return Claim(rho=self.rho, notion="zCDP", source="Qiao & Wang, Offline RL with DP, Theorem 4.1 (budget split "
                                                         "by statistic); Bun & Steinke 2016, Lemma 2.3")


class SplitBudgetGaussianNotPerStep(SplitBudgetGaussian):
    """PLANTED BUG: rho_k = w_k rho at every step (not / H): H rho-zCDP, claimed rho."""

    name = "split_budget_gaussian_not_per_step"

    def step_budget(self, H):
        return {k: w * self.rho for k, w in self.weights.items()}
