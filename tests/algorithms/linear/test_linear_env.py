"""Linear mixture MDPs (Zhou 2022, Assumption 1): known answers of LM-2, the tabular reduction, bad input."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dpcheck.algorithms.envs import random_mdp, value_iteration
from dpcheck.algorithms.envs._validate import one_hot
from dpcheck.algorithms.linear import (
    LinearMixtureMDP, lm2, max_integrated_feature_norm, random_linear_mixture, tabular_as_linear,
)
from dpcheck.errors import InputError


def test_lm2_ground_truth_of_section_6_1():
    env = lm2()
    assert (env.H, env.S, env.A, env.d1, env.d2, env.d) == (3, 2, 2, 2, 2, 2)
    Q, V = env.optimal_values()
    np.testing.assert_allclose(V[2], [0.1, 0.9])                 # V_3^* = r
    np.testing.assert_allclose(V[1], [0.8, 1.6])                 # V_2^* = r + 0.7
    assert env.optimal_value() == pytest.approx(1.54)
    assert Q[0, 0].argmax() == 1 and Q[1, 0].argmax() == 0 and Q[1, 1].argmax() == 0

    def det(a1, a2):
        pol = np.zeros((3, 2), dtype=int)
        pol[0] = a1
        pol[1] = a2
        return one_hot(pol, 2)

    assert env.policy_values(det(0, 1)) == pytest.approx(0.66)    # worst deterministic policy
    assert env.policy_values(det(0, 0)) == pytest.approx(1.06)    # always-0: regret 0.48
    # P_h(s' = a | s, a) = q_h
    np.testing.assert_allclose(env.P[:, 0, 1, 1], [0.8, 0.25, 0.7])
    assert env.nonnegative


def test_lm2_integrated_feature_bound_is_tight_at_V_equal_H():
    env = lm2()
    phi = env.integrated_features(np.full(2, 3.0))
    np.testing.assert_allclose(np.linalg.norm(phi, axis=-1), np.sqrt(2) * 3)
    assert max_integrated_feature_norm(env.psi, 3) == pytest.approx(np.sqrt(2) * 3)


@settings(max_examples=15, deadline=None)
@given(S=st.integers(1, 3), A=st.integers(1, 3), H=st.integers(1, 4), seed=st.integers(0, 2 ** 16))
def test_tabular_as_linear_has_the_tabular_model_and_values(S, A, H, seed):
    mdp = random_mdp(S, A, H, np.random.default_rng(seed))
    env = tabular_as_linear(mdp)
    assert (env.d1, env.d2) == (S * S * A, S * A)
    np.testing.assert_allclose(env.P, mdp.P, atol=1e-15)
    np.testing.assert_array_equal(env.r, mdp.r)
    Q, V = value_iteration(mdp.P, mdp.r)
    np.testing.assert_allclose(env.optimal_values()[1], V, atol=1e-12)


def test_enumeration_finds_the_max_for_signed_features():
    rng = np.random.default_rng(0)
    psi = rng.normal(size=(3, 2, 3, 2))
    brute = max(np.linalg.norm(np.einsum("satd,t->sad", psi, np.array(v)), axis=-1).max()
                for v in itertools.product((0.0, 2.0), repeat=3))
    assert max_integrated_feature_norm(psi, 2.0) == pytest.approx(brute)


# ----------------------------------------------------------------------------- bad input: one InputError line
def _lm2_parts():
    env = lm2()
    return dict(psi=np.array(env.psi), varphi=np.array(env.varphi), theta_p=np.array(env.theta_p),
                theta_r=np.array(env.theta_r))


def _bad(**change):
    parts = _lm2_parts()
    extra = {k: change.pop(k) for k in ("d", "init", "reward_noise") if k in change}
    parts.update(change)
    return lambda: LinearMixtureMDP(**parts, **extra)


@pytest.mark.parametrize("make, match", [
    (_bad(theta_p=np.array([[0.8, 0.2, 0.0]] * 3)), "theta_p has dimension 3"),
    (_bad(varphi=np.ones((2, 2, 2))), r"varphi\(0,0\)\|\| = 1.41"),               # ||varphi|| > 1
    (_bad(psi=_lm2_parts()["psi"] * 2, theta_p=np.array([[0.4, 0.1]] * 3)), "exceeds sqrt\\(d1\\) H"),
    (_bad(theta_p=np.array([[0.8, 0.3]] * 3)), "not a distribution"),             # rows sum to 1.1
    (_bad(theta_p=np.array([[1.2, -0.2]] * 3)), "not a distribution"),            # negative probability
    (_bad(theta_r=np.array([[0.1, 1.2]] * 3)), r"\[0, 1\]"),
    (_bad(theta_r=np.array([[0.1, np.nan]] * 3)), "NaN or infinite"),
    (_bad(psi=np.full((2, 2, 2, 2), np.inf)), "NaN or infinite"),
    (_bad(d=1), "declared dimension d"),
    (_bad(theta_r=np.array([[0.1, 0.9]] * 2)), "theta_r must have shape"),
    (_bad(varphi=np.zeros((2, 3, 2))), "varphi must have shape"),
    (_bad(init=5), "out of range"),
])
def test_bad_instances_raise_one_line_input_errors(make, match):
    with pytest.raises(InputError, match=match) as info:
        make()
    assert "\n" not in str(info.value)


def test_theta_norm_bound_of_assumption_1():
    psi = np.zeros((1, 1, 1, 1))
    psi[..., 0] = 0.5
    # P = 0.5 * theta = 1 needs theta = 2 > sqrt(d1) = 1
    with pytest.raises(InputError, match=r"theta_p\[0\]"):
        LinearMixtureMDP(psi, np.zeros((1, 1, 1)), np.array([[2.0]]), np.array([[0.0]]))


@settings(max_examples=20, deadline=None)
@given(S=st.integers(1, 5), A=st.integers(1, 4), H=st.integers(1, 4), d1=st.integers(1, 4), d2=st.integers(1, 4),
       seed=st.integers(0, 2 ** 16))
def test_random_linear_mixtures_satisfy_assumption_1(S, A, H, d1, d2, seed):
    env = random_linear_mixture(S, A, H, d1, d2, np.random.default_rng(seed))   # validated on construction
    assert (env.d1, env.d2, env.d) == (d1, d2, max(d1, d2))
    np.testing.assert_allclose(env.P.sum(-1), 1.0)
    assert max_integrated_feature_norm(env.psi, H) <= np.sqrt(d1) * H + 1e-9
