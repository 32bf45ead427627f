"""A user's private selection mechanism for Algorithms 1 and 2 (general function approximation):
report-noisy-max with exponential noise, i.e. permute-and-flip, in place of the exponential mechanism.

Use it with
    dpcheck audit gfa_selection_mechanism --privatizer examples/my_selection.py:PermuteAndFlip
    dpcheck audit private_gfa             --privatizer examples/my_selection.py:PermuteAndFlip

Report-noisy-max adds i.i.d. Exponential noise of scale 2 Delta / eps to every score and returns the argmax;
this is distributed exactly as permute-and-flip (Ding, Kifer et al. 2021, "The permute-and-flip mechanism is
identical to report-noisy-max with exponential noise"), which is eps-DP for scores of sensitivity Delta and
never has a larger expected error than the exponential mechanism (McKenna & Sheldon 2020, Thms 1 and 2); its
utility bound is the exponential mechanism's, Pr[gap > 2 (Delta / eps)(ln N + t)] <= e^-t (the largest of N
Exp(b) noises exceeds b (ln N + t) with probability <= e^-t). No closed-form law is declared: the audits
test it black box.

``NoFactorTwoNoisyMax`` is its planted-bug twin: the noise scale Delta / eps of report-noisy-max for
*monotone* scores (counting queries), which is only 2 eps-DP for the He & Zhou scores (a neighbour can move
one score up and another down); ``dpcheck audit gfa_selection_mechanism`` fails it.
"""
import numpy as np

from dpcheck.algorithms.gfa import SelectionMechanism


class PermuteAndFlip(SelectionMechanism):
    """argmax_f (S(f) + Z_f), Z_f i.i.d. Exponential(scale 2 Delta / eps), one draw per run."""

    name = "permute_and_flip"
    utility_constant = 2.0            # Pr[gap > 2 (Delta/eps)(ln N + t)] <= e^-t

    scale_factor = 2.0                # noise scale = scale_factor x Delta / eps

    def select(self, scores, epsilon, sensitivity, rng):
        scale = self.scale_factor * sensitivity / epsilon
        return np.argmax(scores + rng.exponential(scale, size=scores.shape), axis=1)


class NoFactorTwoNoisyMax(PermuteAndFlip):
    """PLANTED BUG: noise scale Delta / eps (monotone-query calibration): 2 eps-DP, not eps-DP."""

    name = "noisy_max_no_factor_two"
    scale_factor = 1.0
