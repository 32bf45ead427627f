"""Reusable checks of count privatizers: black-box targets, the plug-in search, white-box checks.

The privatizer audits (audits/privatizer_audits.py) and the DP-UCBVI / DP-Nash-VI audits build on these. One
module per concern; the public names are re-exported here (``privatizers.sensitivity_check`` in a claim table
is :func:`dpcheck.audits.lib.privatizers.whitebox.sensitivity_check`):

* ``neighbours`` -- the papers' worst-case neighbouring users (Qiao & Wang 2023 Lemma 5.6, Qiao & Wang 2024
  Lemma 5.4, Qiao & Wang 2022 Lemma C.1) and the likelihood-ratio statistics of the declared noise.
* ``targets`` -- black-box targets of the built-in online privatizers: :func:`central_target` (the released
  stream), :func:`local_target` (one user's message).
* ``plugin_search`` -- a user's (plug-in) privatizer, black box only, nothing assumed about its noise:
  :func:`plugin_stream_search`, :func:`plugin_message_search`, :func:`plugin_blackbox`, :func:`plugin_message_blackbox` (the eps-LDP check:
  INCONCLUSIVE for a class without ``message``).
* ``declared`` -- what a privatizer declares (:func:`declaration`, :func:`claim_for_families`,
  :func:`width_eps_slope`) and which kind it is (:func:`privatizer_notion`, :func:`is_plugin`).
* ``whitebox`` -- :func:`dp_event_check` (the declared DpEvent's PLD against the Claim),
  :func:`sensitivity_check` (hypothesis search over neighbouring trajectories), :func:`tree_reuse_check` (the
  tree's noise covariance, docs/derivations.md#readings).
* ``drawn_noise`` -- :func:`noise_law_checks` (``whitebox.noise_scale`` / ``whitebox.noise_independence`` of the
  online privatizers: the release noise drawn at H = 2, S = 3, A = 2 over every tree level up to K = 2^11 (dp_ucbvi: 2^14),
  against the declared scale, and the correlation of every pair of coordinates).
* ``offline_counts`` -- the offline (DP-APVI) count privatizers: :func:`offline_target`,
  :func:`offline_plugin_target`, :func:`offline_sensitivity_check`, :func:`offline_noise_checks` (Lemma C.2,
  sum identity and the LP's band: :func:`consistency_violations`, valid P~).
* ``assumptions`` -- :func:`assumption_checks` (Assumption 3.1 over R repetitions, audits/lib/tabular.py).
* ``post_processing`` -- :func:`post_processing_check` (Lemma 5.4's conclusions on adversarial good-event
  inputs, fed to the privatizer's ``post_processed``).
"""
from dpcheck.audits.lib.privatizers.neighbours import (
    UCBVI_SOURCE, NASH_SOURCE, Trajectory, worst_case_pair, background, laplace_llr, gaussian_llr,
)
from dpcheck.audits.lib.privatizers.declared import (
    privatizer_notion, declaration, width_eps_slope, claim_for_families, privatizer_class, ClaimedTemplate,
    is_plugin,
)
from dpcheck.audits.lib.privatizers.plugin_search import (
    STREAM_CONFIGS, MESSAGE_HORIZONS, PILOT_SAMPLES, Z_KEEP, FORMS, SUBSETS, VIEWS_SEARCHED, STATISTICS,
    STREAM_STEPS, SEARCH_SALT, LONG_STREAM_CONFIGS, LONG_STREAM_STEPS, LONG_PILOT, LONG_MIN_STREAMS,
    StatisticParams, StreamStatistics, MessageStatistics, stream_samples, plugin_stream_search,
    plugin_message_search, PRIVATIZER_SAMPLES, plugin_blackbox, plugin_message_blackbox, stream_degeneracy,
)
from dpcheck.audits.lib.privatizers.degeneracy import (DEGENERACY_K, DEGENERACY_RUNS, judge_null_combination,
                                                       null_combination)
from dpcheck.audits.lib.privatizers.targets import (VIEWS, PLANNER_VIEW_SAMPLES, released_stream, central_target,
                                                     local_target, flat_release, flat_true)
from dpcheck.audits.lib.privatizers.offline_counts import (
    offline_worst_datasets, offline_target, OfflineReleaseStatistics, offline_plugin_target,
    offline_privatizer_plugin_target, offline_sensitivity_check, offline_noise_checks, event_noise_finding,
    consistency_violations,
)
from dpcheck.audits.lib.privatizers.whitebox import (
    EPS_SLACK, dp_event_check, tie_event, family_vectors_central, family_vectors_local, sensitivity_search, sensitivity_check,
    NODE_VARIANCE_K, NODE_VARIANCE_RUNS, tree_covariance_z, tree_noise_structure, release_errors, release_error_structure, implied_nodes, node_variance_ratio, tree_verdict, tree_reuse_check, VARIANCE_RESOLUTION,
    VARIANCE_TOLERANCE, variance_band, correlation_screen,
)
from dpcheck.audits.lib.privatizers.assumptions import assumption_checks
from dpcheck.audits.lib.privatizers.post_processing import (PATTERNS, RUNS_PER_PATTERN, TOLERANCE, adversarial_inputs,
                                                             post_processing_check)
from dpcheck.audits.lib.privatizers.drawn_noise import (NOISE_LAW_K, UCBVI_NOISE_LAW_K, NOISE_LAW_SHAPE,
                                                        NOISE_LAW_RUNS, ODD_MAX, GROUP_RESOLUTION, FAMILIES,
                                                        release_times, declared_noise, noise_pieces,
                                                        noise_scale_check, noise_independence_check, variance_ratio,
                                                        ratio_rule, ratio_text, screen_verdict,
                                                        noise_law_checks)

__all__ = [
    "UCBVI_SOURCE", "NASH_SOURCE", "Trajectory", "worst_case_pair", "background", "laplace_llr", "gaussian_llr",
    "privatizer_notion", "declaration", "width_eps_slope", "claim_for_families", "privatizer_class",
    "ClaimedTemplate", "is_plugin", "STREAM_CONFIGS", "MESSAGE_HORIZONS", "PILOT_SAMPLES", "Z_KEEP", "FORMS",
    "SUBSETS", "VIEWS_SEARCHED", "STATISTICS", "STREAM_STEPS", "SEARCH_SALT", "LONG_STREAM_CONFIGS",
    "LONG_STREAM_STEPS", "LONG_PILOT", "LONG_MIN_STREAMS", "StatisticParams", "StreamStatistics",
    "MessageStatistics", "stream_samples", "plugin_stream_search", "plugin_message_search", "PRIVATIZER_SAMPLES",
    "plugin_blackbox", "plugin_message_blackbox", "VIEWS", "PLANNER_VIEW_SAMPLES", "flat_release", "flat_true", "released_stream", "central_target", "local_target", "offline_worst_datasets",
    "offline_target", "OfflineReleaseStatistics", "offline_plugin_target", "offline_privatizer_plugin_target",
    "offline_sensitivity_check", "offline_noise_checks", "event_noise_finding", "consistency_violations",
    "EPS_SLACK", "dp_event_check", "tie_event", "family_vectors_central",
    "family_vectors_local", "sensitivity_search", "sensitivity_check", "tree_covariance_z", "tree_noise_structure",
    "NODE_VARIANCE_K", "NODE_VARIANCE_RUNS", "release_errors", "release_error_structure", "implied_nodes", "node_variance_ratio", "tree_verdict", "tree_reuse_check", "VARIANCE_RESOLUTION", "VARIANCE_TOLERANCE", "variance_band", "correlation_screen", "DEGENERACY_K", "DEGENERACY_RUNS",
    "stream_degeneracy", "null_combination", "judge_null_combination",
    "assumption_checks", "PATTERNS", "RUNS_PER_PATTERN", "TOLERANCE", "adversarial_inputs", "post_processing_check",
    "NOISE_LAW_K", "UCBVI_NOISE_LAW_K", "NOISE_LAW_SHAPE", "NOISE_LAW_RUNS", "ODD_MAX", "GROUP_RESOLUTION",
    "FAMILIES", "release_times",
    "declared_noise", "noise_pieces", "noise_scale_check", "noise_independence_check", "noise_law_checks",
    "variance_ratio", "ratio_rule", "ratio_text", "screen_verdict",
]
