"""Exact MDP planners: RiverSwim reference numbers, brute force on tiny instances, properties."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dpcheck.errors import InputError
from dpcheck.algorithms.envs import (
    TabularMDP, evaluate, expected_return, greedy, occupancy, optimal_return, optimal_values,
    policy_values, random_mdp, riverswim, suboptimality, value_iteration,
)


def brute_force_value(mdp, policy):
    """E[sum of rewards] by enumerating every trajectory (s_1, a_1, ..., s_{H+1}) exactly."""
    H, S, A = mdp.H, mdp.S, mdp.A
    total = 0.0
    for traj in itertools.product(range(S), *([range(A), range(S)] * H)):
        s = traj[0]
        prob = mdp.init[s]
        ret = 0.0
        for h in range(H):
            a, s_next = traj[1 + 2 * h], traj[2 + 2 * h]
            prob *= policy[h, s, a] * mdp.P[h, s, a, s_next]
            ret += mdp.r[h, s, a]
            s = s_next
        total += prob * ret
    return total


def all_deterministic_policies(H, S, A):
    return np.array(list(itertools.product(range(A), repeat=H * S))).reshape(-1, H, S)


seeds = st.integers(0, 2**32 - 1)


# --------------------------------------------------------------- RiverSwim (Qiao & Wang 2023, Section 7)
def test_riverswim_reference_values():
    m = riverswim(H=20)
    Q, V = optimal_values(m)
    assert Q.shape == (20, 6, 2) and V.shape == (21, 6)
    assert V[0, 0] == pytest.approx(3.397264, abs=5e-7)
    assert np.all(V[20] == 0)
    _, V_right = policy_values(m, np.ones((20, 6), dtype=int))
    _, V_left = policy_values(m, np.zeros((20, 6), dtype=int))
    assert V_right[0, 0] == pytest.approx(3.396637, abs=5e-7)
    assert V_left[0, 0] == pytest.approx(0.1, abs=1e-12)


def test_riverswim_optimal_policy_structure():
    Q, _ = optimal_values(riverswim(H=20))
    pi = greedy(Q)
    # paper step h (1-based) -> states where left is optimal
    left_states = {15: [0], 16: [0], 17: [0, 1], 18: [0, 1, 2], 19: [0, 1, 2, 3], 20: [0, 1, 2, 3, 4]}
    for h in range(1, 21):
        expected = np.ones(6, dtype=int)
        expected[left_states.get(h, [])] = 0
        np.testing.assert_array_equal(pi[h - 1], expected, err_msg=f"step h={h}")
        # robust to tie-breaking: the listed action is (weakly) optimal
        assert np.all(Q[h - 1, np.arange(6), expected] >= Q[h - 1].max(axis=1) - 1e-12)


# --------------------------------------------------------------- brute force
def test_optimal_equals_best_deterministic_policy_by_enumeration():
    m = random_mdp(2, 2, 3, np.random.default_rng(0), init="random")
    pols = all_deterministic_policies(3, 2, 2)                  # 64 policies, one batched call
    v = expected_return(m, pols)
    assert v.shape == (64,)
    assert v.max() == pytest.approx(optimal_return(m), abs=1e-12)
    Q, _ = optimal_values(m)
    assert expected_return(m, greedy(Q)) == pytest.approx(v.max(), abs=1e-12)


def test_policy_values_match_trajectory_enumeration():
    rng = np.random.default_rng(1)
    m = random_mdp(2, 2, 3, rng, init="random")
    pi = rng.dirichlet(np.ones(2), size=(3, 2))
    assert expected_return(m, pi) == pytest.approx(brute_force_value(m, pi), abs=1e-12)


def test_policy_values_match_monte_carlo():
    m = random_mdp(3, 2, 4, np.random.default_rng(2), reward_noise="bernoulli")
    pi = np.random.default_rng(3).dirichlet(np.ones(2), size=(4, 3))
    t = m.rollout(pi, np.random.default_rng(4), runs=100_000)
    returns = t.rewards.sum(axis=1)
    assert abs(returns.mean() - expected_return(m, pi)) < 5 * returns.std() / np.sqrt(len(returns))


# --------------------------------------------------------------- properties
@settings(max_examples=40, deadline=None)
@given(seed=seeds, S=st.integers(1, 4), A=st.integers(1, 3), H=st.integers(1, 4))
def test_bellman_properties(seed, S, A, H):
    rng = np.random.default_rng(seed)
    m = random_mdp(S, A, H, rng, init="random")
    Q, V = optimal_values(m)
    pols = rng.dirichlet(np.ones(A), size=(5, H, S))
    Qp, Vp = policy_values(m, pols)
    assert Qp.shape == (5, H, S, A) and Vp.shape == (5, H + 1, S)
    # V* dominates every policy, values lie in [0, H - h]
    assert np.all(Vp <= V + 1e-12)
    assert np.all(V >= -1e-12) and np.all(V[:H] <= (H - np.arange(H))[:, None] + 1e-12)
    # greedy w.r.t. Q* attains V*; deterministic and one-hot stochastic agree
    g = greedy(Q)
    _, Vg = policy_values(m, g)
    np.testing.assert_allclose(Vg, V, atol=1e-12)
    _, Vg1 = policy_values(m, np.eye(A)[g])
    np.testing.assert_allclose(Vg1, Vg, atol=1e-12)
    # batched evaluation equals one-at-a-time evaluation
    for i in range(5):
        np.testing.assert_allclose(policy_values(m, pols[i])[1], Vp[i], atol=1e-12)
    assert np.all(suboptimality(m, pols) >= -1e-12)
    # occupancy: each step is a distribution, and v^pi = sum d^pi_h(s,a) r_h(s,a)
    d = occupancy(m, pols)
    np.testing.assert_allclose(d.sum(axis=(-1, -2)), 1.0, atol=1e-12)
    np.testing.assert_allclose((d * m.r).sum(axis=(-1, -2, -3)), expected_return(m, pols), atol=1e-10)


def test_array_level_planners_batch_over_models():
    rng = np.random.default_rng(5)
    ms = [random_mdp(3, 2, 3, rng) for _ in range(4)]
    P = np.stack([m.P for m in ms])
    r = np.stack([m.r for m in ms])
    Q, V = value_iteration(P, r)
    pi = np.eye(2)[greedy(Q)]
    Qe, Ve = evaluate(P, r, pi)
    for i, m in enumerate(ms):
        np.testing.assert_allclose(V[i], optimal_values(m)[1])
        np.testing.assert_allclose(Ve[i], V[i])


def test_planner_input_errors():
    m = riverswim(H=3)
    with pytest.raises(InputError, match="TabularMDP"):
        optimal_values("riverswim")
    with pytest.raises(InputError, match="shape"):
        policy_values(m, np.zeros((3, 5), dtype=int))
    with pytest.raises(InputError, match="sum to 1"):
        policy_values(m, np.full((3, 6, 2), 0.7))
    with pytest.raises(InputError, match="dtype"):
        policy_values(m, np.zeros((3, 6), dtype=bool))
    with pytest.raises(InputError):
        greedy(np.zeros((3, 2)))
