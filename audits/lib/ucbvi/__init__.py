"""The checks of DP-UCBVI (Qiao & Wang, AISTATS 2023; Qiao & Wang 2023), one function per claim.

``audits/dp_ucbvi.py`` is the registered audit (its claim table says which function checks which
claim); the functions here take an :class:`AgentSpec` -- a picklable description of the agent, so any
agent class (a variant, a planted defect) can be audited from a test -- and return finished
:class:`dpcheck.checks.Check` objects:

* privacy: :func:`jdp_blackbox_check` (eps-JDP of the actions sent to the other users, black box, with its
  positive control :class:`ExactCounts` / :class:`ExactCountsActions`),
  :func:`ldp_message_check` (eps-LDP of one user's message), :func:`dataflow_check` (the agent reads only
  the release: the Billboard lemma's premise), :func:`whitebox_check` (the declared DpEvent, PLD);
* Assumption 3.1 and the lemmas built on it: :func:`monitored_run` + :func:`assumption_checks`,
  :func:`count_error_order_check`, :func:`optimism_check`;
* regret: :func:`explicit_bound_check` (eq. 75), :func:`regret_checks` / :func:`rate_checks` (the exponent
  and the privacy-cost scaling in K and eps, practical mode, reports/reproductions/dp_ucbvi_fig1/README.md).

Expensive batches go through :func:`dpcheck.parallel.cached_call`, so ``--cache DIR`` stores them and a
rerun resumes from them.

One module a concern, their names re-exported here (``ucbvi.rate_checks`` in a claim table): ``spec``
(:class:`AgentSpec`), ``privacy``, ``assumptions``, ``regret``.
"""
from __future__ import annotations

from dpcheck.audits.lib.ucbvi.spec import (SOURCE, VACUOUS, AgentSpec, claim_for)
from dpcheck.audits.lib.ucbvi.privacy import (jdp_users, OtherUsersActions, ExactCounts, ExactCountsActions,
                                              jdp_blackbox_check, ReplayPrivatizer,
                                              Recorder, dataflow_check, LocalMessage, ldp_message_check,
                                              whitebox_check)
from dpcheck.audits.lib.ucbvi.assumptions import (monitored_run, _monitored_run, assumption_checks,
                                                  count_error_order_check, optimism_check, explicit_bound,
                                                  explicit_bound_check)
from dpcheck.audits.lib.ucbvi.regret import (regret_curves, _regret_curves, _agent_run, practical_noise,
                                             regret_checks, EXPONENT_BOUND, COST_K_PASS, COST_K_FAIL, COST_EPS,
                                             rate_checks, width_slope, _band, burn_in_end,
                                             burn_in_unmeasurable, mark_unmeasurable,
                                             PLUGIN_MIN_RUNS, BURN_IN_MARGIN, regret_curve_set)
from dpcheck.audits.lib.ucbvi.planner import REL_TOL, VAR_TOL, PlannerMonitor, reference_bonus, bonus_check
from dpcheck.audits.lib.ucbvi.engine import ENGINE_RUNS, engine_check

__all__ = ['SOURCE', 'VACUOUS', 'AgentSpec', 'claim_for', 'jdp_users', 'OtherUsersActions', 'ExactCounts', 'ExactCountsActions', 'jdp_blackbox_check',
           'ReplayPrivatizer', 'Recorder', 'dataflow_check', 'LocalMessage', 'ldp_message_check', 'whitebox_check',
           'monitored_run', '_monitored_run', 'assumption_checks', 'count_error_order_check', 'optimism_check',
           'explicit_bound', 'explicit_bound_check', 'regret_curves', '_regret_curves', '_agent_run',
           'practical_noise', 'regret_checks', 'EXPONENT_BOUND', 'COST_K_PASS', 'COST_K_FAIL', 'COST_EPS',
           'rate_checks', 'width_slope', '_band', 'burn_in_end', 'burn_in_unmeasurable', 'PLUGIN_MIN_RUNS', 'BURN_IN_MARGIN',
           'mark_unmeasurable', 'regret_curve_set', 'REL_TOL', 'VAR_TOL', 'PlannerMonitor', 'reference_bonus',
           'bonus_check', 'ENGINE_RUNS', 'engine_check']
