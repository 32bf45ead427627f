"""The checks of private RL with general function approximation (He & Zhou, arXiv 2605.07049;
He & Zhou 2026), one function per claim, for Algorithm 1 (``private_gfa``) and Algorithm 2
(``private_gfa_outcome``).

``audits/private_gfa.py`` is the registered audit (its claim table says which function checks which claim).
Every function takes the learner under audit as an OBJECT (a :class:`dpcheck.algorithms.gfa.PrivateGeneralMDP` /
:class:`dpcheck.algorithms.gfa.PrivateOutcomeRL` or a subclass -- a variant, a planted defect) and returns finished
:class:`dpcheck.checks.Check` objects:

* privacy: :func:`jdp_blackbox_check` (black box on the selected functions f^(k) and the actions sent to the
  other scripted users, Def 2.3), :func:`sensitivity_check` (hypothesis search of max_f |S_D(f) - S_D'(f)|
  over neighbouring datasets against the declared 8H / (H+1)^2, docs/derivations.md#noise-calibration), :func:`selection_check` (empirical
  selection frequencies of the mechanism against the closed form exp(beta S)/Z at the DECLARED temperature,
  chi-square), :func:`composition_check` (the M = ceil(K/B) updates at the temperature actually used,
  accounted exactly with dp_accounting's PLD, Section 3.3), :func:`score_dataset_check` (the scores the mechanism
  samples from are S_{D_[k]} on exactly the episodes before the batch start);
* assumptions: :func:`assumption_checks` (realizability, completeness, coverability computed exactly with
  its certificate, Appendix D's coverability facts, determinism for Algorithm 2);
* regret: :func:`regret_curves` + :func:`regret_checks` (increment exponents of the privacy term against
  K^(3/5) and of the non-private batched learner against sqrt(K), the eps scaling of the privacy cost,
  the output policy's sub-optimality = Regret / K, Theorems 3.1, 3.4).

User classes come as arrays: :func:`load_function_class` reads ``--set function_class=PATH.npz``.

One module a concern, their names re-exported here (``gfa.regret_checks`` in a claim table): ``instance``
(the class, the MDP, the learner and their cost), ``privacy`` (black and white box), ``composition``
(whitebox.composition), ``assumptions``, ``regret``, ``mechanism`` (the selection mechanism alone,
``gfa_selection_mechanism``).
"""
from __future__ import annotations

from dpcheck.audits.lib.gfa.instance import (SOURCE, THEOREM, NPZ_KEYS, load_function_class, SEC_EPISODE, SEC_N2,
                                             SEC_NL, CLASS_COPIES, audit_episodes, class_cost, check_class_size,
                                             default_instance, instance_with_class, make_agent, public_init, describe)
from dpcheck.audits.lib.gfa.privacy import (_RUN_CHUNK, UsersWithInit, jdp_users, SelectionsAndActions,
                                            jdp_blackbox_check, pair_reach, _dataset_strategy, _arrays, extreme_class,
                                            sensitivity_search, sensitivity_check, _chisq_power, selection_check,
                                            _literal_scores, score_dataset_check, _outcome_rewards)
from dpcheck.audits.lib.gfa.composition import (trace_updates, _leads, DECISIVE_DOUBLINGS, decisive_trace,
                                                observed_updates, composition_check)
from dpcheck.audits.lib.gfa.assumptions import (assumption_checks, REFERENCE)
from dpcheck.audits.lib.gfa.regret import (tuned, _final_regret, regret_curves, appendix_bound, _bound_vacuity,
                                           _soft_fail, _difference, ONE_SIDED, _upper_bound_fit,
                                           _one_sided_confidence, regret_checks, private_exponent_check, RateSetting,
                                           privacy_cost_eps_check,
                                           SETTLED_SHARE, settled_runs,
                                           _settled_regime, _ols_slope, _declared_sensitivity, _regime,
                                           output_policy_check)
from dpcheck.audits.lib.gfa.mechanism import (SELECTION_SOURCE, selection_pairs, reference_law, SelectionDraws,
                                              selection_blackbox_check, selection_utility_check,
                                              selection_dp_event_check)

__all__ = ['SOURCE', 'THEOREM', 'NPZ_KEYS', 'load_function_class', 'SEC_EPISODE', 'SEC_N2', 'SEC_NL', 'CLASS_COPIES',
           'audit_episodes', 'class_cost', 'check_class_size', 'default_instance', 'instance_with_class',
           'make_agent', 'public_init', 'describe', '_RUN_CHUNK', 'UsersWithInit', 'jdp_users',
           'SelectionsAndActions', 'jdp_blackbox_check', 'pair_reach', '_dataset_strategy', '_arrays', 'extreme_class',
           'sensitivity_search', 'sensitivity_check', '_chisq_power', 'selection_check', 'trace_updates', '_leads',
           'DECISIVE_DOUBLINGS', 'decisive_trace', 'observed_updates', 'composition_check', '_literal_scores',
           'score_dataset_check', '_outcome_rewards', 'assumption_checks',
           'REFERENCE', 'tuned', '_final_regret', 'regret_curves', 'appendix_bound', '_bound_vacuity', '_soft_fail',
           '_difference', 'ONE_SIDED', '_upper_bound_fit', '_one_sided_confidence', 'regret_checks',
           'private_exponent_check', 'RateSetting', 'privacy_cost_eps_check', 'SETTLED_SHARE',
           'settled_runs', '_settled_regime', '_ols_slope', '_declared_sensitivity', '_regime', 'output_policy_check',
           'SELECTION_SOURCE', 'selection_pairs', 'reference_law', 'SelectionDraws', 'selection_blackbox_check',
           'selection_utility_check', 'selection_dp_event_check']
