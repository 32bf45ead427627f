"""Reusable checks of DP-APVI (Qiao & Wang 2022, Algorithm 1, Theorem 3.4, Lemmas C.1-C.10, Lemma E.15): the tabular offline audit.

Everything here runs the ALGORITHM's own code paths -- ``DPAPVI.private_counts`` (privatizer, clip,
Section 3.3 consistency), ``DPAPVI.run`` (P~, penalty, backward induction) and ``OfflineDataset.counts`` -- so a
defect planted in a subclass of :class:`dpcheck.algorithms.offline.DPAPVI` is seen by the check that should see
it. The count privatizer's own checks (brute-force sensitivity, PLD of the declared DpEvent) are reused
from :mod:`dpcheck.audits.lib.privatizers`. One module per concern; the public names are re-exported here
(``offline.rate_checks`` in dp_apvi's claim table is :func:`dpcheck.audits.lib.offline.rates.rate_checks`):

* ``spec`` -- :class:`APVISpec` (the algorithm under audit: class, mechanism, budget, utility delta, constants
  by mode; ``make(budget)`` builds it at any budget) and :class:`OfflinePlugin` (a user's count privatizer).
* ``targets`` -- privacy, black box: :func:`counts_target` (the released noisy counts n' of datasets that
  differ in ONE trajectory, replaced in a step-dependent way so noise shared across steps h is exposed),
  :func:`policy_target` (the output policy).
* ``whitebox`` -- privacy, white box: :func:`dp_event_check`, :func:`zcdp_conversion_check` (Lemma E.15),
  :func:`sensitivity_checks`, :func:`noise_calibration_checks` (noise variance at three budgets; fresh noise
  per step h), :func:`dataflow_check` (post-processing).
* ``assumptions`` -- :func:`count_checks` (Lemma C.2 noise bound, eqs. 3-4 consistency, Lemma C.3 accuracy,
  eq. 5 valid P~), :func:`pessimism_checks` (Lemma C.6, Lemma C.10, exact values from the true model),
  :func:`coverage_check` (d_m, Assumption 2.1, Theorem 3.4's sample-size condition).
* ``counting`` -- :func:`counting_check` (the engine that counts a user's dataset, compiled when numba imports,
  against the numpy reference and a direct tally; shared with dp_vapvi).
* ``rates`` -- :func:`rate_checks` (data-dependent bound and privacy cost vs n and vs the budget, eq. 31 /
  eq. 7), :func:`suboptimality_rate_check` / :func:`suboptimality_budget_check` (realised gap).
* ``userdata`` -- a user's dataset: :func:`check_data_size`, :func:`user_model`.

Steps are 0-based in arrays (the paper's h is index h - 1).
"""
from dpcheck.audits.lib.offline.spec import SOURCE, MECHANISMS, MODES, THEORY, PRACTICAL, TOL, OfflinePlugin, APVISpec
from dpcheck.audits.lib.offline.targets import (
    step_swap_pair, scripted_background, counts_target, policy_datasets, policy_reward, policy_target,
    qualify_policy,
)
from dpcheck.audits.lib.offline.whitebox import (
    dp_event_check, zcdp_conversion_check, sensitivity_search_check, sensitivity_checks, noise_calibration_checks, CALIBRATION_RUNS,
    dataflow_check, LARGE_LEVEL, KURTOSIS_TOLERANCE,
)
from dpcheck.audits.lib.offline.assumptions import count_checks, pessimism_checks, penalty_composition, coverage_check
from dpcheck.audits.lib.offline.counting import counting_check
from dpcheck.audits.lib.offline.rates import (
    data_bound, bounds_on_grid, rate_checks, suboptimality_rate_check, suboptimality_budget_check,
)
from dpcheck.audits.lib.offline.userdata import (
    NS_BLACKBOX, NS_COUNT_CHECKS, BYTES_PER_ENTRY, NS_STEP, BLACKBOX_BATCH, data_cost, check_data_size, user_model,
)

__all__ = [
    "SOURCE", "MECHANISMS", "MODES", "THEORY", "PRACTICAL", "TOL", "OfflinePlugin", "APVISpec", "step_swap_pair",
    "scripted_background", "counts_target", "policy_datasets", "policy_reward", "policy_target", "qualify_policy",
    "dp_event_check", "zcdp_conversion_check", "sensitivity_search_check", "sensitivity_checks",
    "noise_calibration_checks", "CALIBRATION_RUNS", "LARGE_LEVEL", "KURTOSIS_TOLERANCE", "dataflow_check", "count_checks", "pessimism_checks", "coverage_check",
    "penalty_composition", "counting_check",
    "data_bound", "bounds_on_grid", "rate_checks", "suboptimality_rate_check", "suboptimality_budget_check",
    "NS_BLACKBOX", "NS_COUNT_CHECKS", "BYTES_PER_ENTRY", "NS_STEP", "BLACKBOX_BATCH", "data_cost",
    "check_data_size", "user_model",
]
