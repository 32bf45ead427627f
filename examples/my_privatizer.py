"""A complete user privatizer: the binary tree mechanism with GAUSSIAN node noise, for (eps, delta)-JDP.

Use it with
    dpcheck audit dp_ucbvi --privatizer examples/my_privatizer.py:GaussianTreePrivatizer
    dpcheck audit central_privatizer --privatizer examples/my_privatizer.py:GaussianTreePrivatizer

It implements exactly the hooks that docs/privatizers.md lists, and the optional ``declare`` (claim, DpEvent
and width from the parameters and the sizes); the base class does validation, the true counts (for the
checkers), the post-processing LP and the PrivateCounts record.
"""
import functools
import math

import numpy as np

from dpcheck.accounting import gaussian_delta, gaussian_multiplier_for
from dpcheck.algorithms.privatizers import BinaryMechanism, CountPrivatizer, Declaration, TreeCounter, tree_levels
from dpcheck import Claim

DELTA = 1e-5


def analytic_gaussian_delta(noise_multiplier: float, epsilon: float) -> float:
    """delta(eps) of the Gaussian mechanism with sigma = noise_multiplier x (l2 sensitivity), exact
    (Balle & Wang 2018, Theorem 8; dpcheck.accounting.gaussian_delta)."""
    return gaussian_delta(noise_multiplier, epsilon)


def analytic_gaussian_multiplier(epsilon: float, delta: float) -> float:
    """The smallest sigma / sensitivity with analytic_gaussian_delta <= delta (dpcheck.accounting's analytic
    Gaussian calibration). Valid for every eps > 0, unlike the classic sqrt(2 log(1.25/delta)) / eps,
    which needs eps <= 1 (Dwork & Roth 2014, Thm A.1)."""
    return gaussian_multiplier_for(epsilon, delta)


class GaussianTreePrivatizer(CountPrivatizer):
    """Tree mechanism with N(0, sigma^2) node noise.

    One user changes, per family, 2 H L node p-sums by at most 1 each (replacement; H L under
    add/remove, ``calibration="paper"``), so the l2 sensitivity of all F families' nodes together is
    Delta = sqrt(n F H L) with n = ``sensitivity_factor``. sigma = m Delta with m from the analytic
    Gaussian mechanism (Balle & Wang 2018, Theorem 8) makes the noisy nodes (eps, delta)-DP for every
    eps > 0; every release is post-processing of them, and the Billboard lemma gives (eps, delta)-JDP.
    ``dp_event()`` declares exactly this noise: per family a Gaussian with multiplier sigma / sqrt(n H L),
    composed over the F families (equivalent to one Gaussian of multiplier m).
    """

    name = "gaussian_tree"
    notion = "JDP"

    # --- the one parameter both the noise and the declaration read ------------------------------
    def sensitivity_for(self, H: int, K: int, families: int) -> float:
        """l2 sensitivity of all F families' node p-sums under the calibration's neighbouring relation."""
        return math.sqrt(self.sensitivity_factor * families * H * tree_levels(K))

    def sigma_for(self, H: int, K: int, families: int) -> float:
        return analytic_gaussian_multiplier(self.epsilon, DELTA) * self.sensitivity_for(H, K, families)

    def sensitivity(self) -> float:
        return self.sensitivity_for(self.H, self.K, self.families)

    def sigma(self) -> float:
        return self.sigma_for(self.H, self.K, self.families)

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
        return self.width_for(self.H, self.S, self.A, self.K, self.rewards)

    def width_for(self, H: int, S: int, A: int, K: int, rewards: bool) -> float:
        # |N^ - N| is a sum of <= L Gaussians: std <= sqrt(L) sigma; union bound over m releases
        L = tree_levels(K)
        m = H * S * A * (S + (2 if rewards else 1)) * max(K - 1, 1)
        tail = math.sqrt(2 * math.log(2 * 3 * m / self.beta))
        return max(4 * math.sqrt(L) * self.sigma_for(H, K, 3 if rewards else 2) * tail, 1.0)

    # --- privacy as data --------------------------------------------------------------------------
    def event_for(self, H: int, K: int, families: int, neighbouring: str = "replacement"):
        import dp_accounting
        n = 2 if neighbouring == "replacement" else 1
        L = tree_levels(K)
        fam = dp_accounting.GaussianDpEvent(noise_multiplier=self.sigma_for(H, K, families) / math.sqrt(n * H * L))
        return dp_accounting.ComposedDpEvent([fam] * families)

    def dp_event(self, neighbouring="replacement"):
        return self.event_for(self.H, self.K, self.families, neighbouring)

    def declare(self, H: int, S: int, A: int, K: int, rewards: bool = True, *, rng=None) -> Declaration:
        """Optional: claim, DpEvent and width from the parameters and the sizes, without starting (the
        audits read it; a class without it is declared from a started copy instead)."""
        families = 3 if rewards else 2
        return Declaration(claim=self.claim, width=self.width_for(H, S, A, K, rewards),
                           event=functools.partial(self.event_for, H, K, families),
                           scale=self.sigma_for(H, K, families), sensitivity=self.sensitivity_for(H, K, families))

    @property
    def claim(self) -> Claim:
        return Claim(epsilon=self.epsilon, delta=DELTA, notion="JDP",
                     source="examples/my_privatizer.py: analytic Gaussian mechanism (Balle & Wang 2018, "
                            "Theorem 8) on the tree's nodes + Billboard lemma")
