"""A complete user privatizer: the binary tree mechanism with GAUSSIAN node noise, for (eps, delta)-JDP.

Use it with
    dpcheck audit dp_ucbvi --privatizer examples/my_privatizer.py:GaussianTreePrivatizer
    dpcheck audit central_privatizer --privatizer examples/my_privatizer.py:GaussianTreePrivatizer

It implements exactly the hooks that docs/privatizers.md lists; the base class does validation, the true
counts (for the checkers), the post-processing LP and the PrivateCounts record.
"""
import math

import numpy as np

from algorithms.privatizers import BinaryMechanism, CountPrivatizer, TreeCounter, tree_levels
from dpcheck import Claim

DELTA = 1e-5


class GaussianTreePrivatizer(CountPrivatizer):
    """Tree mechanism with N(0, sigma^2) node noise.

    One user changes, per family, 2 H L node p-sums by at most 1 each (replacement), so the l2
    sensitivity of all F families' nodes together is sqrt(2 F H L); the classic Gaussian mechanism
    (Dwork & Roth 2014, Thm A.1) with sigma = sqrt(2 F H L) sqrt(2 log(1.25/delta)) / eps is
    (eps, delta)-DP for eps <= 1, and the Billboard lemma gives (eps, delta)-JDP.
    """

    name = "gaussian_tree"
    notion = "JDP"

    def __init__(self, epsilon=1.0, beta=0.1, calibration="strict", width_mode="rigorous"):
        super().__init__(epsilon=epsilon, beta=beta, calibration=calibration, width_mode=width_mode)
        if self.epsilon > 1:
            raise ValueError("the classic Gaussian mechanism needs epsilon <= 1")

    # --- the one parameter both the noise and the declaration read ------------------------------
    def sigma(self) -> float:
        L = tree_levels(self.K)
        sens = math.sqrt(self.sensitivity_factor * self.families * self.H * L)
        return sens * math.sqrt(2 * math.log(1.25 / DELTA)) / self.epsilon

    # --- hooks ------------------------------------------------------------------------------------
    def _start_noise(self, rng):
        HSA = self.H * self.S * self.A
        self._sizes = (HSA, HSA * self.S, HSA if self.rewards else 0)
        tree = TreeCounter(self.K, node_scale=self.sigma(), noise="gaussian")
        self._tree = BinaryMechanism(tree, (self.runs, sum(self._sizes)), rng)

    def _ingest(self, visits, transitions, rewards):
        parts = [visits.reshape(self.runs, -1), transitions.reshape(self.runs, -1)]
        if rewards is not None:
            parts.append(rewards.reshape(self.runs, -1))
        self._tree.step(np.concatenate(parts, axis=1))

    def _noisy_counts(self):
        nv, nt, _ = self._sizes
        B = self._tree.release()
        shape = (self.runs, self.H, self.S, self.A)
        rew = B[:, nv + nt:].reshape(shape) if self.rewards else None
        return B[:, :nv].reshape(shape), B[:, nv:nv + nt].reshape(shape + (self.S,)), rew

    def _compute_width(self) -> float:
        # |N^ - N| is a sum of <= L Gaussians: std <= sqrt(L) sigma; union bound over m releases
        L = tree_levels(self.K)
        m = self.H * self.S * self.A * (self.S + (2 if self.rewards else 1)) * max(self.K - 1, 1)
        tail = math.sqrt(2 * math.log(2 * 3 * m / self.beta))
        return max(4 * math.sqrt(L) * self.sigma() * tail, 1.0)

    # --- privacy as data --------------------------------------------------------------------------
    def dp_event(self, neighbouring="replacement"):
        import dp_accounting
        n = 2 if neighbouring == "replacement" else 1
        L = tree_levels(self.K)
        fam = dp_accounting.GaussianDpEvent(noise_multiplier=self.sigma() / math.sqrt(n * self.H * L))
        return dp_accounting.ComposedDpEvent([fam] * self.families)

    @property
    def claim(self) -> Claim:
        return Claim(epsilon=self.epsilon, delta=DELTA, notion="JDP",
                     source="examples/my_privatizer.py: Gaussian mechanism (Dwork & Roth 2014, Thm A.1) + Billboard lemma")
