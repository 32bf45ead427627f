"""Online private RL algorithms.

DP-UCBVI and the non-private UCBVI baseline (specs/dp_ucbvi.md): :mod:`algorithms.online.ucbvi`,
the private Bernstein bonus: :mod:`algorithms.online.bonus`.
"""
from algorithms.online.bonus import BonusConstants, bernstein_bonus, correction_g, iota
from algorithms.online.ucbvi import DPUCBVI, UCBVI, UCBVIRun, backward_induction, greedy_policy, private_estimates

__all__ = ["BonusConstants", "bernstein_bonus", "correction_g", "iota", "DPUCBVI", "UCBVI", "UCBVIRun",
           "backward_induction", "greedy_policy", "private_estimates"]
