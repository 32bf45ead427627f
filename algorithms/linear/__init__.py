"""Linear mixture MDPs under joint DP (Zhou 2022): the algorithm layer.

    mixture:       LinearMixtureMDP (Assumption 1, validated; exact planners through the tabular model
                   underneath), lm2 (LM-2), tabular_as_linear, random_linear_mixture,
                   max_integrated_feature_norm
    regularizers:  Regularizer (the Section 3, eqs. 1-2 interface), RidgeRegularizer (Section 3, Z = lambda I), LinearSizes, Assumption2,
                   confidence_radii (Lemma 3.1), TreeStatistics (the running G, g sums in binary trees)
    stream_privatizer: StreamPrivatizer (the plug-in interface of the released statistics, Thm 6.4),
                   GuardedStreamPrivatizer, load_stream_privatizer
    privatizer:    Privatizer (Section 6.1-2.8: four Gaussian binary counters per step, shifts, calibration,
                   Claim and DpEvents from the same parameters)
    bounds:        regret_bound_vi, regret_bound_po, bonus_terms (the explicit bounds of Theorem 4.1 / Theorem 5.1)
    linopt:        LinOptVI / LinOptPO (Algorithms 1-2 with any Regularizer), UCRLVTR, OPPO,
                   PrivateLinOptVI, PrivateLinOptPO, LinOptResult, floored_inverse

Arrays: runs first, then the paper's indices; steps are 0-based (the paper's step h is index h - 1).
"""
from dpcheck.algorithms.linear.mixture import (
    LinearMixtureMDP, lm2, tabular_as_linear, max_integrated_feature_norm, random_linear_mixture,
)
from dpcheck.algorithms.linear.regularizers import (
    Regularizer, RidgeRegularizer, LinearSizes, Assumption2, confidence_radii, TreeStatistics, COUNTERS,
)
from dpcheck.algorithms.linear.stream_privatizer import StreamPrivatizer, GuardedStreamPrivatizer
from dpcheck.algorithms.linear.loader import load_stream_privatizer
from dpcheck.algorithms.linear.privatizer import Privatizer
from dpcheck.algorithms.linear.bounds import bonus_terms, regret_bound_po, regret_bound_vi
from dpcheck.algorithms.linear.linopt import (
    LinOptVI, LinOptPO, UCRLVTR, OPPO, PrivateLinOptVI, PrivateLinOptPO, LinOptResult, floored_inverse,
)

__all__ = [
    "LinearMixtureMDP", "lm2", "tabular_as_linear", "max_integrated_feature_norm", "random_linear_mixture",
    "Regularizer", "RidgeRegularizer", "LinearSizes", "Assumption2", "confidence_radii", "TreeStatistics",
    "COUNTERS", "Privatizer", "StreamPrivatizer", "GuardedStreamPrivatizer", "load_stream_privatizer",
    "LinOptVI", "LinOptPO", "UCRLVTR", "OPPO", "PrivateLinOptVI", "PrivateLinOptPO", "LinOptResult",
    "floored_inverse", "bonus_terms", "regret_bound_vi", "regret_bound_po",
]
