"""Reusable checks of DP-Nash-VI (Qiao & Wang 2024, arXiv 2404.07559): the pieces audits/dp_nash_vi.py
assembles, public so that tests, benchmarks and other game audits can call them one by one.

* Privacy: :func:`jdp_scenario` / :func:`jdp_target` (the algorithm's observable outputs, black box:
  scripted user pairs, the adversary sees the action pairs sent to the other pairs), :func:`ldp_target`
  (one pair's message), :func:`dataflow_check` (a recorded release stream replayed on neighbouring pairs: the
  other pairs' actions and everything planned unchanged), :func:`privatizer_checks` (the privatizer audits of audits/lib/privatizers/ in the
  games setting: joint actions A*B, rewards=False, so 2 stream families).
* Assumptions: :func:`assumption_checks` -- Assumption 3.1 and the good event of Lemma 5.8 (from
  audits/lib/tabular.CountAssumptionMonitor, fed every release the algorithm planned with), CCE,
  UCB/LCB (Lemma B.7; Lemma B.8) and the certificate (Theorem 4.2), in theory or practical mode; vacuous
  where the bound is true by construction at almost every entry (:data:`MIN_INFORMATIVE`, :func:`untested`).
* Regret: :func:`regret_curves` (exact duality-gap regret), :func:`regret_job` (one run of the regret
  grid, common random numbers), :func:`nonprivate_exponent_check` (the one check that can FAIL),
  :func:`regret_checks` (increment exponent, privacy cost against eps and K), :func:`cost_K_comparison`
  (JDP vs LDP cost growth in K), with the plots the reports show. A user's privatizer is swept where it
  declares the built-in sweep's widths (:func:`width_matched_grid`) and its cost in eps is checked against
  its own width law (:func:`cost_eps_slope`).

Practical-mode constants void the paper's guarantees: every check computed with them goes through
:meth:`dpcheck.audit.Audit.soften` (a miss is inconclusive, never FAIL). Sources cite Qiao & Wang 2024 and
docs/derivations.md.

One module a concern, their names re-exported here (``lib.nash.regret_checks`` in a claim table): ``scenario``
(constants, scripted users, black-box targets), ``assumptions``, ``privatizers`` (by name, widths, privatizer
audits), ``regret``.
"""
from __future__ import annotations

from dpcheck.audits.lib.nash.scenario import (SOURCE, BETA, REGRET_TOLERANCE, soften, vacuous, jdp_scenario,
                                              audit_constants, jdp_mechanism, jdp_target, ldp_target, dataflow_check)
from dpcheck.audits.lib.nash.assumptions import (assumption_batch, assumption_checks, MIN_INFORMATIVE, untested,
                                                 EXACT_CONSTANTS, exact_model_game, is_exact_model,
                                                 trajectory_counts_check)
from dpcheck.audits.lib.nash.privatizers import (theorem_privacy_term, cost_eps_slope, declared_width,
                                                 width_matched_grid, _width_matched, privatizer_checks,
                                                 privatizer_factory, accepts, BLACKBOX_H, PLANNER_VIEW_SAMPLES,
                                                 NASH_NOISE_LAW_K, noise_law_games, noise_law_task)
from dpcheck.audits.lib.nash.regret import (regret_curves, NONPRIVATE_FROM, EXPONENT_INTERVAL, k_grid, plot_grid,
                                            regret_job, regret_chunks, regret_stack_job, STACK_MEMBERS,
                                            nonprivate_exponent_check, regret_checks, cost_K_comparison, band_series,
                                            regime, with_reason, regret_plot, local_slopes_plot)

__all__ = ['SOURCE', 'BETA', 'REGRET_TOLERANCE', 'soften', 'vacuous', 'jdp_scenario', 'audit_constants',
           'jdp_mechanism', 'jdp_target', 'ldp_target', 'dataflow_check', 'assumption_batch', 'assumption_checks',
           'MIN_INFORMATIVE', 'untested', 'EXACT_CONSTANTS', 'exact_model_game', 'is_exact_model',
           'trajectory_counts_check', 'theorem_privacy_term', 'cost_eps_slope', 'declared_width',
           'width_matched_grid', '_width_matched', 'privatizer_checks', 'privatizer_factory', 'accepts', 'BLACKBOX_H',
           'PLANNER_VIEW_SAMPLES', 'NASH_NOISE_LAW_K', 'noise_law_games', 'noise_law_task', 'regret_curves', 'NONPRIVATE_FROM', 'EXPONENT_INTERVAL', 'k_grid', 'plot_grid',
           'regret_job', 'regret_chunks', 'regret_stack_job', 'STACK_MEMBERS', 'nonprivate_exponent_check',
           'regret_checks', 'cost_K_comparison', 'band_series', 'regime', 'with_reason', 'regret_plot',
           'local_slopes_plot']
