"""Offline RL with differential privacy (Qiao & Wang 2022): the algorithm layer.

    dataset:   OfflineDataset (validated trajectories, runs first), TabularCounts, sample_counts
    apvi:      DPAPVI (Algorithm 1; Gaussian rho-zCDP or Laplace eps-DP, or any OfflineCountPrivatizer, the
               interface re-exported here; Bernstein or Hoeffding penalty), APVI (non-private; docs/derivations.md#readings), penalty, PenaltyConstants, APVIResult
    vapvi:     DPVAPVI (Algorithm 2, 5H fresh Gaussian releases declared as PrivateStatistic / DpEvents; the
               released statistics' privatizer is a RegressionPrivatizer, GaussianRegressionPrivatizer the paper's),
               VAPVI, PEVI, LinearResult, VAPVINoise
    instances: tab_full, tab_partial, lin_tab, appendix_f (TAB-FULL, TAB-PARTIAL, LIN-TAB, Appendix F),
               OfflineInstance (.coverage(), .feature_figures()), feature_figures, empirical_kappa,
               xi_two_state

Steps are 0-based in arrays: the paper's step h is index h - 1.
"""
from dpcheck.algorithms.offline.dataset import OfflineDataset, TabularCounts, sample_counts, check_features
from dpcheck.algorithms.offline.apvi import DPAPVI, APVI, APVIResult, PenaltyConstants, penalty
from dpcheck.algorithms.privatizers.offline import OfflineCountPrivatizer
from dpcheck.algorithms.offline.vapvi import (
    DPVAPVI, VAPVI, PEVI, LinearResult, VAPVINoise, PrivateStatistic, RegressionPrivatizer, GaussianRegressionPrivatizer,
    gaussian_noise, gaussian_widths, gaussian_dp_event,
)
from dpcheck.algorithms.offline.instances import (
    OfflineInstance, Coverage, FeatureFigures, tab_full, tab_partial, lin_tab, appendix_f, action_code,
    feature_figures, empirical_coverage, empirical_kappa, xi_two_state,
)

__all__ = [
    "OfflineDataset", "TabularCounts", "sample_counts", "check_features",
    "DPAPVI", "APVI", "APVIResult", "PenaltyConstants", "penalty", "OfflineCountPrivatizer",
    "DPVAPVI", "VAPVI", "PEVI", "LinearResult", "VAPVINoise", "PrivateStatistic", "RegressionPrivatizer",
    "GaussianRegressionPrivatizer", "gaussian_noise", "gaussian_widths", "gaussian_dp_event",
    "OfflineInstance", "Coverage", "FeatureFigures", "tab_full", "tab_partial", "lin_tab", "appendix_f",
    "action_code", "feature_figures", "empirical_coverage", "empirical_kappa", "xi_two_state",
]
