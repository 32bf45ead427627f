"""The checks of Private-LinOpt-VI / -PO (Zhou, "Differentially Private RL with Linear Function Approximation";
Zhou 2022, Lemmas 3.1, 6.1, 7.2 and Theorems 4.1-6.5), one function per claim; audits/private_linopt.py assembles them.

Every function takes a :class:`LinOptSpec` -- a picklable description of the agent (which algorithm, the
Privatizer's parameters, and optionally a subclass of the algorithm or of the Privatizer, so a variant or a
planted defect is audited by the same code) -- and returns a finished :class:`dpcheck.checks.Check`.

* privacy: :func:`jdp_blackbox_check` (the actions sent to the other scripted users, black box, Def 2.2),
  :func:`release_blackbox_check` (the Privatizer's released statistics, black box with the optimal Gaussian
  statistic on a replayed transcript, Theorem 6.4), :func:`dp_event_check` (the declared Gaussian trees accounted
  exactly by PLD against the claim, and the epsilon the calibration really achieves, Theorem 6.4),
  :func:`calibration_check` (proof of Theorem 6.4: the noise actually drawn against the sensitivities Assumption 1 implies for
  the instance), :func:`stream_sensitivity_check` (hypothesis search over neighbouring users on a replayed
  transcript: how many tree nodes one user's data enters and by how much it moves them, Lemma 6.1, Assumption 1, docs/derivations.md#neighbouring-relation;
  and the billboard premise Theorem 6.4, ``privacy.dataflow``), :func:`tree_reuse_check` (the release noise of
  every counter, matrix counters included, has the tree's covariance and exact symmetry, footnote 3, fixed node noise),
  :func:`noise_law_checks` (the node noise drawn at the instance's H, d1, d2 over every tree level: its variance
  against the declared trees and its independence across steps, counter kinds and entries, Section 6.1);
* assumptions: :func:`assumption_checks` (Assumption 2's lambda_min, lambda_max, nu over repetitions,
  Lemma 3.1's containment, optimism Lemma 7.2 / eqs. 3, 7);
* regret: :func:`regret_grid` (cached curves) + :func:`exponent_check` (increment exponent after the
  over-exploration phase, Theorem 6.5, eq. 4 / Theorem 6.5, eq. 5 / Theorems 4.1, 5.1), :func:`scaling_checks` (privacy cost vs eps, Theorem 6.5),
  :func:`radius_scaling_check` (beta_p ~ eps^(-1/2), Theorem 6.5), :func:`explicit_bound_check` (Theorem 4.1; Theorem 5.1).

Instances: :func:`load_instance` (LM-2, tabular-as-linear, or a user's .npz).

One module a concern, their names re-exported here (``linopt.exponent_check`` in a claim table): ``spec``
(the agent, the instance, their cost), ``privacy`` (JDP black box, accounting, calibration), ``transcript``
(checks on a replayed transcript), ``drawn_noise`` (the noise drawn vs the declared trees), ``assumptions``, ``regret``.
"""
from __future__ import annotations

from dpcheck.audits.lib.linopt.spec import (SOURCE, SPEC, REL_TOL, INSTANCE_KEYS, LinOptSpec, sizes_for,
                                            load_instance, SEC_STEP, BYTES_STEP, audit_episodes, check_instance_size)
from dpcheck.audits.lib.linopt.privacy import (jdp_users, OtherUsersActions, jdp_blackbox_check,
                                               required_sensitivities, dp_event_check, calibration_check, tree_depth,
                                               tree_based, drawn_trees,
                                               not_tree_based, plugin_calibration_check, COUNTERS_)
from dpcheck.audits.lib.linopt.transcript import (_regularizer_base, ReplayRegularizer, _ReplayState, implied_nodes,
                                                  _upper, stream_difference, random_transcript,
                                                  stream_sensitivity_check, _node_vector, ReleaseStatistic,
                                                  release_blackbox_check, release_noise, tree_reuse_check)
from dpcheck.audits.lib.linopt.drawn_noise import LINOPT_NOISE_RUNS, noise_nodes, noise_law_checks
from dpcheck.audits.lib.linopt.assumptions import (monitored_run, _monitored_run, assumption_checks, random_rows,
                                                   assumption2_alone_check)
from dpcheck.audits.lib.linopt.regret import (_curve, regret_grid, k_grid, learning_window, exponent_check,
                                              _exploration_ends_in_last_doubling, equivalent_eps_grid, scaling_checks,
                                              radius_scaling_check, explicit_bound_check)

__all__ = ['SOURCE', 'SPEC', 'REL_TOL', 'INSTANCE_KEYS', 'LinOptSpec', 'sizes_for', 'load_instance', 'SEC_STEP',
           'BYTES_STEP', 'audit_episodes', 'check_instance_size', 'jdp_users', 'OtherUsersActions',
           'jdp_blackbox_check', 'required_sensitivities', 'dp_event_check', 'calibration_check', 'tree_depth',
           'tree_based', 'drawn_trees',
           'not_tree_based', 'plugin_calibration_check', 'COUNTERS_', '_regularizer_base', 'ReplayRegularizer',
           '_ReplayState', 'implied_nodes', '_upper', 'stream_difference', 'random_transcript',
           'stream_sensitivity_check', '_node_vector', 'ReleaseStatistic', 'release_blackbox_check', 'release_noise',
           'tree_reuse_check', 'LINOPT_NOISE_RUNS', 'noise_nodes', 'noise_law_checks',
           'monitored_run', '_monitored_run', 'assumption_checks', 'random_rows',
           'assumption2_alone_check', '_curve', 'regret_grid', 'k_grid', 'learning_window', 'exponent_check',
           '_exploration_ends_in_last_doubling', 'equivalent_eps_grid', 'scaling_checks', 'radius_scaling_check',
           'explicit_bound_check']
