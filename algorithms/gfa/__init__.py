"""Private RL with general function approximation (He & Zhou 2026): the algorithm layer.

    function_class: FunctionClass (finite class as data: .product(layers), .from_values(values (N,H,S,A)))
    batched_em:     PrivateGeneralMDP (= Algorithm1: Bellman error + inf term, 8H), PrivateOutcomeRL
                    (= Algorithm2: outcome Bellman residual, (H+1)^2), NonPrivateGeneralMDP, NonPrivateOutcomeRL,
                    remark_3_7_batch_size
    privacy:        GFAPrivacy (declaration: eps0, beta_EM, M = ceil(K/B), composed epsilon, Claim, dp_event),
                    per_update_epsilon, advanced_composition, number_of_updates, sensitivity
    selection:      SelectionMechanism (the plug-in interface of the private selection), ExponentialMechanism
                    (the paper's), GuardedSelection, load_selection_mechanism
    mechanism:      exponential_mechanism (Gumbel-max), selection_log_probabilities (log-softmax),
                    argmax_with_ties, chain_sample / chain_log_partition (backward messages)
    losses:         bellman_error_loss / _score, outcome_model, outcome_loss / _score (literal reference),
                    BellmanErrorStatistics, OutcomeLossStatistics (incremental)
    evaluation:     policy_returns, optimal_return, max_return, occupancies, coverability,
                    per_start_coverability, realizability, completeness, bellman_backup
    instances:      gf3, appendix_d(kind, H) (Appendix D), GFAInstance, hypothesis, hypothesis_entry
    results:        GFARun (per-run record), MixturePolicy (pi_hat = Unif(pi_1..pi_K))
    tuning:         theory_parameters (Appendix E), poc_default (docs/private_gfa.md)

Steps are 0-based in arrays: the paper's step h is index h - 1; episodes likewise.
"""
from dpcheck.algorithms.gfa.function_class import FunctionClass
from dpcheck.algorithms.gfa.privacy import (
    GFAPrivacy, EPS0_RULES, advanced_composition, per_update_epsilon, number_of_updates, sensitivity,
)
from dpcheck.algorithms.gfa.mechanism import (
    exponential_mechanism, selection_log_probabilities, argmax_with_ties, chain_sample, chain_log_partition,
)
from dpcheck.algorithms.gfa.selection import (
    SelectionMechanism, ExponentialMechanism, GuardedSelection, load_selection_mechanism,
)
from dpcheck.algorithms.gfa.losses import (
    bellman_error_loss, bellman_error_score, outcome_model, outcome_loss, outcome_score,
    BellmanErrorStatistics, OutcomeLossStatistics,
)
from dpcheck.algorithms.gfa.evaluation import (
    policy_returns, optimal_return, max_return, occupancies, coverability, per_start_coverability,
    realizability, completeness, bellman_backup, next_state_table, Coverability, PerStartCoverability,
    Realizability, Completeness,
)
from dpcheck.algorithms.gfa.instances import GFAInstance, gf3, appendix_d, hypothesis, hypothesis_entry
from dpcheck.algorithms.gfa.results import GFARun, MixturePolicy
from dpcheck.algorithms.gfa.batched_em import (
    PrivateGeneralMDP, PrivateOutcomeRL, NonPrivateGeneralMDP, NonPrivateOutcomeRL, Algorithm1, Algorithm2,
    remark_3_7_batch_size,
)
from dpcheck.algorithms.gfa.tuning import TheoryParameters, theory_parameters, poc_default

__all__ = [
    "FunctionClass", "GFAPrivacy", "EPS0_RULES", "advanced_composition", "per_update_epsilon",
    "number_of_updates", "sensitivity", "exponential_mechanism", "selection_log_probabilities",
    "argmax_with_ties", "SelectionMechanism", "ExponentialMechanism", "GuardedSelection",
    "load_selection_mechanism", "chain_sample", "chain_log_partition", "bellman_error_loss", "bellman_error_score",
    "outcome_model", "outcome_loss", "outcome_score", "BellmanErrorStatistics", "OutcomeLossStatistics",
    "policy_returns", "optimal_return", "max_return", "occupancies", "coverability", "per_start_coverability",
    "realizability", "completeness", "bellman_backup", "next_state_table", "Coverability",
    "PerStartCoverability", "Realizability", "Completeness", "GFAInstance", "gf3", "appendix_d", "hypothesis",
    "hypothesis_entry", "GFARun", "MixturePolicy", "PrivateGeneralMDP", "PrivateOutcomeRL",
    "NonPrivateGeneralMDP", "NonPrivateOutcomeRL", "Algorithm1", "Algorithm2", "remark_3_7_batch_size",
    "TheoryParameters", "theory_parameters", "poc_default",
]
