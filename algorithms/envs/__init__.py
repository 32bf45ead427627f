"""Tabular RL substrate: environments, instance generators and exact planners.

    TabularMDP, MarkovGame                 -- validated, immutable, batched simulation
    riverswim, random_mdp, random_game,    -- instances (Qiao & Wang 2023, Section 7, Qiao & Wang 2024, Section 6)
    matching_pennies, rock_paper_scissors, matrix_game
    planning: optimal_values, policy_values, greedy, ...
    as_policy                              -- validate a Markov policy (deterministic or stochastic)
    axis_length                            -- a read-only size property read off an array axis (H, S, A, ...)
    game_planning: nash_values, best_response_values, duality_gap, ...
    users: ScriptedUsers (JDP user trees), users_from_model  -- the audit's fixed users
    gym_interop: from_gymnasium, TabularMDPEnv, MarkovGameParallelEnv (import it explicitly;
                 gymnasium is an optional extra)

Steps are 0-based in arrays: the paper's step h is index h - 1.
"""
from dpcheck.algorithms.envs._validate import as_policy, axis_length
from dpcheck.algorithms.envs.tabular import TabularMDP, Trajectories
from dpcheck.algorithms.envs.games import MarkovGame, GameTrajectories
from dpcheck.algorithms.envs.riverswim import riverswim
from dpcheck.algorithms.envs.generators import (
    random_mdp, random_game, matrix_game, matching_pennies, rock_paper_scissors,
)
from dpcheck.algorithms.envs.planning import (
    optimal_values, policy_values, greedy, expected_return, optimal_return, suboptimality,
    occupancy, value_iteration, evaluate,
)
from dpcheck.algorithms.envs.users import (
    ScriptedUsers, TableUsers, HashedUsers, ModelUsers, FixedTrajectoryUsers, users_from_model,
    random_table_users, neighbouring_users, UserPairs,
)
from dpcheck.algorithms.envs.game_planning import (
    correlated_policy_values, product_policy_values, best_response_values, marginals,
    product_policy, nash_values, duality_gap, solve_matrix_game,
)

__all__ = [
    "UserPairs", "as_policy", "axis_length",
    "TabularMDP", "Trajectories", "MarkovGame", "GameTrajectories", "riverswim",
    "random_mdp", "random_game", "matrix_game", "matching_pennies", "rock_paper_scissors",
    "optimal_values", "policy_values", "greedy", "expected_return", "optimal_return",
    "suboptimality", "occupancy", "value_iteration", "evaluate",
    "correlated_policy_values", "product_policy_values", "best_response_values", "marginals",
    "product_policy", "nash_values", "duality_gap", "solve_matrix_game",
    "ScriptedUsers", "TableUsers", "HashedUsers", "ModelUsers", "FixedTrajectoryUsers",
    "users_from_model", "random_table_users", "neighbouring_users",
]
