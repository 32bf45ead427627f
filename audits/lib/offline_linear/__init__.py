"""Checks of DP-VAPVI (Qiao & Wang, "Offline Reinforcement Learning with Differential Privacy", Algorithm 2;
Qiao & Wang 2022, Algorithm 2, Theorem 4.1, Lemmas D.1-D.18, Lemma E.15) used by ``dpcheck audit dp_vapvi``.

Everything here recomputes the paper's statistics from the raw counts with its OWN code (not the
algorithm's), so a defect in the algorithm's statistics, noise or calibration shows up as a difference. One
module per concern; the public names are re-exported here (``offline_linear.rate_checks`` in dp_vapvi's claim
table is :func:`dpcheck.audits.lib.offline_linear.rates.rate_checks`):

* ``setup`` -- :class:`Setup` (an instance with its true model, or user data), :func:`algorithm` (DP-VAPVI
  with the mode's constants), :func:`instance_setup`, :func:`variance_setup` (LIN-TAB(COIN): sigtil^2 > 1).
* ``statistics`` -- :func:`true_statistics`, :func:`residuals` (released minus noiseless, as iid-coordinate
  vectors, Theorem 4.1 / Lemma D.1), :func:`claimed_stds` (the std the CLAIM needs, Lemma D.1's table).
* ``whitebox`` -- :func:`noise_calibration_check`, :func:`noise_independence_check`, :func:`sensitivity_check`,
  :func:`dp_event_checks` (the declared 5H DpEvents accounted with the PLD, Lemma E.15), :func:`dataflow_check`
  (the output a function of the releases alone).
* ``targets`` -- black box: :func:`statistics_target` (the log-likelihood ratio of the whole released
  transcript for datasets differing in ONE trajectory), :func:`policy_target` (the output policy).
* ``assumptions`` -- :func:`noise_bound_check` (Lemma D.2), :func:`utility_checks` (penalty validity Lemma D.13,
  pessimism Lemma D.3), :func:`coverage_check` (kappa, Assumption 2.2), :func:`feature_norm_check` (Section 2).
* :func:`counting_check` -- the counting engine a user's dataset goes through (dpcheck.audits.lib.offline.counting).
* ``rates`` -- :func:`rate_checks` (sub-optimality and value error vs K, the privacy cost vs K and vs rho),
  :func:`saturated_rate_checks` (the same rows when the theory penalties exceed H), :func:`sample_size_floor`
  (the stated part of Theorem 4.1's max M_i).
* ``standalone`` -- the regression privatizer alone (``offline_regression_privatizer``).
* ``userdata`` -- :func:`load_linear_data` (an .npz with states, actions, rewards and features),
  :func:`user_setup`, :func:`check_data_size`.
"""
from dpcheck.audits.lib.offline_linear.setup import (
    SOURCE, STATS, PRACTICAL, THEORY, Setup, algorithm, plugin_width_exponent, instance_setup, variance_setup,
)
from dpcheck.audits.lib.offline_linear.userdata import (
    load_linear_data, user_setup, NS_UNIT, BYTES_UNIT, NS_STEP, CHUNK, FEATURE_SCALE, data_cost, check_data_size,
)
from dpcheck.audits.lib.offline_linear.statistics import (
    sym_vector, true_statistics, residuals, claimed_sensitivities, claimed_stds, replicate,
)
from dpcheck.audits.lib.offline_linear.whitebox import (
    noise_calibration_check, noise_independence_check, release_independence_check, sensitivity_search, feature_worst_case, sensitivity_check,
    equivalent_gaussian, dp_event_checks, dataflow_check, DATAFLOW_FIELDS, event_noise_finding, value_range,
)
from dpcheck.audits.lib.offline_linear.targets import (
    neighbour_datasets, transcript_llr, statistics_target, policy_target,
)
from dpcheck.audits.lib.offline_linear.assumptions import (
    noise_bound_check, coverage_check, feature_norm_check, true_errors, sample_split, utility_checks,
)
from dpcheck.audits.lib.offline_linear.rates import rate_checks, sample_size_floor, saturated_rate_checks
from dpcheck.audits.lib.offline.counting import counting_check       # shared with dp_apvi (Algorithm 2's counts)
from dpcheck.audits.lib.offline_linear.standalone import (
    standalone_sensitivities, regression_release_target, regression_noise_checks,
)

__all__ = [
    "SOURCE", "STATS", "PRACTICAL", "THEORY", "Setup", "algorithm", "plugin_width_exponent", "instance_setup",
    "variance_setup", "load_linear_data", "user_setup", "NS_UNIT", "BYTES_UNIT", "NS_STEP", "CHUNK", "FEATURE_SCALE",
    "data_cost",
    "check_data_size", "sym_vector", "true_statistics", "residuals", "claimed_sensitivities", "claimed_stds",
    "replicate", "noise_calibration_check", "noise_independence_check", "release_independence_check", "sensitivity_search", "value_range", "feature_worst_case",
    "sensitivity_check", "equivalent_gaussian", "dp_event_checks", "dataflow_check", "DATAFLOW_FIELDS", "neighbour_datasets", "transcript_llr",
    "statistics_target", "policy_target", "noise_bound_check", "coverage_check", "feature_norm_check",
    "true_errors", "sample_split", "utility_checks", "rate_checks", "sample_size_floor", "saturated_rate_checks",
    "standalone_sensitivities",
    "regression_release_target", "regression_noise_checks", "event_noise_finding", "counting_check",
]
