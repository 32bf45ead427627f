"""Online private RL algorithms.

DP-UCBVI and the non-private UCBVI baseline (Qiao & Wang 2023): :mod:`dpcheck.algorithms.online.ucbvi`,
the private Bernstein bonus: :mod:`dpcheck.algorithms.online.bonus`.
"""
from dpcheck.algorithms.online.bonus import BonusConstants, bernstein_bonus, correction_g, iota
from dpcheck.algorithms.online.ucbvi import DPUCBVI, UCBVI, UCBVIRun, backward_induction, greedy_policy, private_estimates

__all__ = ["BonusConstants", "bernstein_bonus", "correction_g", "iota", "DPUCBVI", "UCBVI", "UCBVIRun",
           "backward_induction", "greedy_policy", "private_estimates"]
