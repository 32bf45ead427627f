"""Algorithms 1 and 2 (He & Zhou 2026, Algorithms 1-2): the loop, the losses, the batching schedule, the
epsilon = inf reduction, exact regret, the results record and input validation."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dpcheck.errors import InputError
from dpcheck.algorithms.envs import TabularMDP, users_from_model
from dpcheck.algorithms.gfa import (
    BellmanErrorStatistics, FunctionClass, GFARun, NonPrivateGeneralMDP, NonPrivateOutcomeRL, OutcomeLossStatistics,
    PrivateGeneralMDP, PrivateOutcomeRL, advanced_composition, appendix_d, bellman_error_loss, gf3,
    outcome_loss, outcome_score, policy_returns,
)


@pytest.fixture(scope="module")
def gf():
    return gf3()


@pytest.fixture(scope="module")
def small_d():
    return appendix_d("hard", H=2)


def _gf3_data(rng, runs, n):
    s = rng.integers(3, size=(runs, n, 4))
    a = rng.integers(2, size=(runs, n, 3))
    r = rng.dirichlet(np.ones(4), size=(runs, n))[..., :3]
    return s, a, r


# ------------------------------------------------------------------------------------------ losses
def test_incremental_bellman_error_equals_the_literal_loss(gf):
    rng = np.random.default_rng(0)
    s, a, r = _gf3_data(rng, 2, 9)
    st_ = BellmanErrorStatistics(gf.fclass, 2)
    st_.add(s[:, :4], a[:, :4], r[:, :4])
    st_.add(s[:, 4:], a[:, 4:], r[:, 4:])                                  # two increments
    for run in range(2):
        lit = bellman_error_loss(gf.fclass, s[run], a[run], r[run])
        np.testing.assert_allclose(st_.loss("product")[run], lit, atol=1e-10)
        np.testing.assert_allclose(st_.loss("literal")[run], lit, atol=1e-10)   #: identical on a product
    assert np.all(st_.loss() >= -1e-10)                                    # inf over F includes f itself
    # the chain losses sum to L^BE along every entry
    idx = gf.fclass.index
    chain = st_.chain_losses()
    total = sum(chain[h][:, idx[:, h], idx[:, h + 1] if h < 2 else 0] for h in range(3))
    np.testing.assert_allclose(total, st_.loss(), atol=1e-10)


def test_literal_inf_differs_from_decomposition_on_a_non_product_list(gf):
    rng = np.random.default_rng(1)
    s, a, r = _gf3_data(rng, 1, 12)
    sub = FunctionClass.from_values(gf.fclass.values[rng.choice(192, size=20, replace=False)])
    assert not sub.is_product
    st_ = BellmanErrorStatistics(sub, 1)
    st_.add(s, a, r)
    lit = bellman_error_loss(sub, s[0], a[0], r[0])
    np.testing.assert_allclose(st_.loss()[0], lit, atol=1e-10)
    assert np.all(st_.infimum("product") <= st_.infimum("literal") + 1e-12)
    assert np.any(st_.infimum("product") < st_.infimum("literal") - 1e-9)


def test_from_values_recognises_a_product_given_as_a_list(gf):
    perm = np.random.default_rng(2).permutation(192)
    fc = FunctionClass.from_values(gf.fclass.values[perm])
    assert fc.is_product and fc.N == 192 and sorted(fc.sizes) == sorted(gf.fclass.sizes)
    # entry_at_position inverts the C-order grid position of every entry's step indices
    pos = np.ravel_multi_index(fc.index[fc.entry_at_position].T, fc.sizes)
    np.testing.assert_array_equal(pos, np.arange(192))
    np.testing.assert_array_equal(np.sort(fc.values.reshape(192, -1), axis=0),
                                  np.sort(gf.fclass.values.reshape(192, -1), axis=0))


def test_incremental_outcome_loss_equals_the_literal_loss(small_d):
    rng = np.random.default_rng(3)
    pol = rng.integers(2, size=(2 * 7, 2, small_d.mdp.S))
    tr = small_d.mdp.rollout(pol, rng)
    s, a, out = tr.states.reshape(2, 7, 3), tr.actions.reshape(2, 7, 2), tr.rewards.sum(-1).reshape(2, 7)
    st_ = OutcomeLossStatistics(small_d.fclass, 2)
    st_.add(s[:, :3], a[:, :3], out[:, :3])
    st_.add(s[:, 3:], a[:, 3:], out[:, 3:])
    for run in range(2):
        np.testing.assert_array_equal(st_.loss()[run], outcome_loss(small_d.fclass, s[run], a[run], out[run]))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 6))
def test_score_sensitivity_alg2(seed, n):
    """Theorem 3.4's sensitivity: replacing one trajectory moves S by <= (H+1)^2; by <= 1 on the binary Appendix D class."""
    inst = appendix_d("easy", H=2)
    rng = np.random.default_rng(seed)
    tr = inst.mdp.rollout(rng.integers(2, size=(n + 1, 2, inst.mdp.S)), rng)
    s, a, out = tr.states, tr.actions, tr.rewards.sum(-1)
    S1 = outcome_score(inst.fclass, s[:n], a[:n], out[:n], eta=3.0, rho=inst.mdp.init)
    S2 = outcome_score(inst.fclass, np.r_[s[:n - 1], s[n:]], np.r_[a[:n - 1], a[n:]], np.r_[out[:n - 1], out[n:]],
                       eta=3.0, rho=inst.mdp.init)
    assert np.max(np.abs(S1 - S2)) <= 1.0 <= 9.0


def test_dataset_scores_are_the_literal_scores(gf, small_d):
    rng = np.random.default_rng(8)
    s, a, r = _gf3_data(rng, 1, 6)
    agent = PrivateGeneralMDP(gf.fclass, eta=2.5)
    np.testing.assert_allclose(agent.dataset_scores(s[0], a[0], r[0], 0),
                               2.5 * gf.fclass.initial_values(0) - bellman_error_loss(gf.fclass, s[0], a[0], r[0]),
                               atol=1e-10)
    np.testing.assert_allclose(agent.dataset_scores(s[0, :0], a[0, :0], r[0, :0], 0), 2.5 * gf.fclass.initial_values(0))
    tr = small_d.mdp.rollout(rng.integers(2, size=(5, 2, small_d.mdp.S)), rng)
    alg2 = PrivateOutcomeRL(small_d.fclass, eta=0.5)
    np.testing.assert_allclose(alg2.dataset_scores(tr.states, tr.actions, tr.rewards, small_d.mdp.init),
                               outcome_score(small_d.fclass, tr.states, tr.actions, tr.rewards.sum(-1), eta=0.5,
                                             rho=small_d.mdp.init))
    lp = alg2.declared_log_probabilities(np.zeros((1, 27)), K=10)
    np.testing.assert_allclose(np.exp(lp), 1 / 27)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_score_sensitivity_alg1_on_binary_classes(seed):
    """Theorem 3.1's sensitivity: |S_D(f) - S_D'(f)| <= 8H on random classes with values in {0, 1} (the extremes) and adversarial
    replacements (rewards 0 or 1 at one step)."""
    rng = np.random.default_rng(seed)
    H, S, A, n = 2, 2, 2, 4
    fc = FunctionClass.product([rng.integers(2, size=(3, S, A)).astype(float) for _ in range(H)])
    s = rng.integers(S, size=(n, H + 1))
    a = rng.integers(A, size=(n, H))
    r = np.eye(H + 1)[rng.integers(H + 1, size=n)][:, :H]
    s2, a2, r2 = s.copy(), a.copy(), r.copy()
    s2[0], a2[0], r2[0] = rng.integers(S, size=H + 1), rng.integers(A, size=H), np.eye(H + 1)[rng.integers(H + 1)][:H]
    d = np.abs(bellman_error_loss(fc, s, a, r) - bellman_error_loss(fc, s2, a2, r2))
    assert d.max() <= 8 * H


# ------------------------------------------------------------------------------------------ the loop
def test_run_record_and_exact_regret(gf):
    agent = PrivateGeneralMDP(gf.fclass, epsilon=5.0, delta=1e-5, B=4, eta=2.0)
    res = agent.run(gf.mdp, 10, np.random.default_rng(0), runs=3)
    assert isinstance(res, GFARun) and (res.K, res.B, res.M, res.runs) == (10, 4, 3, 3)
    assert res.selected.shape == (3, 3) and res.actions.shape == (3, 10, 3) and res.states.shape == (3, 10, 4)
    np.testing.assert_array_equal(res.update_episodes, [0, 4, 8])
    np.testing.assert_array_equal(res.episode_entries, np.repeat(res.selected, 4, axis=1)[:, :10])
    # actions are the greedy policies of the selected entries (Lemma E.4)
    pol = gf.fclass.greedy_policies(res.episode_entries)                     # (runs, K, H, S)
    r_, k_, h_ = np.indices(res.actions.shape)
    np.testing.assert_array_equal(res.actions, pol[r_, k_, h_, res.states[..., :3]])
    J = policy_returns(gf.mdp, gf.fclass.greedy_policies())
    np.testing.assert_allclose(res.regret, 0.886 - J[res.episode_entries], atol=1e-12)
    assert res.optimal_return == pytest.approx(0.886)
    np.testing.assert_allclose(res.output_policy.expected_return(J), J[res.episode_entries].mean(axis=1))
    np.testing.assert_allclose(res.output_policy.weights().sum(axis=1), 1.0)
    assert res.output_policy.sample(np.random.default_rng(1)).shape == (3, 3, 3)
    # PAC conversion: J* - J(pi_hat) = Reg / K
    np.testing.assert_allclose(0.886 - res.output_policy.expected_return(J), res.cumulative_regret[:, -1] / 10)
    assert res.plateau_episode() >= 1 and res.per_run_plateaus().shape == (3,) and "K=10" in res.summary()


def test_update_uses_only_data_before_the_batch(gf):
    """the score at the update of batch i is computed on episodes 1..iB exactly."""
    agent = PrivateGeneralMDP(gf.fclass, epsilon=3.0, B=3)
    res = agent.run(gf.mdp, 9, np.random.default_rng(4), runs=2, record_scores=True)
    for i in range(res.M):
        k0 = i * 3
        for run in range(2):
            want = 1.0 * gf.fclass.initial_values(0) - (
                bellman_error_loss(gf.fclass, res.states[run, :k0], res.actions[run, :k0], res.rewards[run, :k0])
                if k0 else 0.0)
            np.testing.assert_allclose(res.scores[run, i], want, atol=1e-9)


class _CountingEM(PrivateOutcomeRL):
    def _select(self, scores, beta, rng):
        self.calls = getattr(self, "calls", 0) + 1
        self.betas = getattr(self, "betas", []) + [beta]
        return super()._select(scores, beta, rng)


def test_exactly_ceil_k_over_b_updates_in_the_declared_epsilon(small_d):
    agent = _CountingEM(small_d.fclass, epsilon=4.0, delta=1e-5, B=4)
    res = agent.run(small_d.mdp, 25, np.random.default_rng(0), runs=2)
    decl = agent.privacy(25)
    assert agent.calls == res.M == decl.M == 7                             # ceil(25 / 4)
    assert all(b == decl.beta_em for b in agent.betas) and res.extra["beta_em_used"] == decl.beta_em
    assert advanced_composition(decl.eps0, decl.M, decl.delta) <= decl.epsilon
    assert res.privacy == decl


@pytest.mark.parametrize("kind", ["gf3", "appendix_d"])
def test_epsilon_inf_selects_the_argmax_like_the_non_private_learner(kind, gf, small_d):
    if kind == "gf3":
        inst, P, NP = gf, PrivateGeneralMDP, NonPrivateGeneralMDP
    else:
        inst, P, NP = small_d, PrivateOutcomeRL, NonPrivateOutcomeRL
    priv = P(inst.fclass, epsilon=math.inf, B=3, eta=1.5)
    nonp = NP(inst.fclass, B=3, eta=1.5)
    r1 = priv.run(inst.mdp, 12, np.random.default_rng(7), runs=4, record_scores=True)
    r2 = nonp.run(inst.mdp, 12, np.random.default_rng(7), runs=4)
    np.testing.assert_array_equal(r1.selected, r2.selected)
    np.testing.assert_array_equal(r1.actions, r2.actions)
    chosen = np.take_along_axis(r1.scores, r1.selected[..., None], axis=2)[..., 0]
    np.testing.assert_array_equal(chosen, r1.scores.max(axis=2))          # an exact maximiser every time
    assert priv.privacy(12).claim is None


def test_non_private_learners_find_the_optimum(gf):
    res = NonPrivateGeneralMDP(gf.fclass, B=1, eta=1.0).run(gf.mdp, 150, np.random.default_rng(0), runs=4)
    assert np.all(res.regret[:, -20:] < 1e-12)
    inst = appendix_d("easy")
    res = NonPrivateOutcomeRL(inst.fclass, B=1).run(inst.mdp, 120, np.random.default_rng(0), runs=4)
    assert np.all(res.regret[:, -10:] == 0) and np.all(np.isin(res.selected[:, -1], (10, 13)))


def test_messages_and_enumeration_agree_at_epsilon_inf(gf):
    a = NonPrivateGeneralMDP(gf.fclass, B=2, tie_breaking="lowest", sampler="messages")
    b = NonPrivateGeneralMDP(gf.fclass, B=2, tie_breaking="lowest", sampler="enumerate")
    ra = a.run(gf.mdp, 20, np.random.default_rng(3), runs=3)
    rb = b.run(gf.mdp, 20, np.random.default_rng(3), runs=3)
    np.testing.assert_array_equal(ra.selected, rb.selected)


def test_runs_against_per_episode_users(gf):
    users = users_from_model(gf.mdp, 8, np.random.default_rng(0))
    res = PrivateGeneralMDP(gf.fclass, epsilon=2.0, B=3).run(users, 8, np.random.default_rng(1), runs=2)
    assert res.regret.shape == (2, 8) and res.actions.shape == (2, 8, 3)


# ------------------------------------------------------------------------------------------ bad inputs
@pytest.mark.parametrize("build, msg", [
    (lambda: FunctionClass.from_values(np.full((2, 3, 3, 2), 1.5)), r"\[0, 1\]"),
    (lambda: FunctionClass.from_values(np.full((2, 3, 3, 2), -0.1)), r"\[0, 1\]"),
    (lambda: FunctionClass.from_values(np.zeros((0, 3, 3, 2))), "empty"),
    (lambda: FunctionClass.from_values(np.zeros((3, 3, 2))), "4 axes"),
    (lambda: FunctionClass.from_values(np.full((2, 3, 3, 2), np.nan)), "NaN"),
    (lambda: FunctionClass.product([]), "at least one"),
    (lambda: FunctionClass.product([np.zeros((2, 3, 2)), np.zeros((2, 4, 2))]), "same"),
    (lambda: FunctionClass.product([np.zeros((2, 3, 2)), np.zeros((0, 3, 2))]), "empty"),
    (lambda: FunctionClass((np.zeros((2, 3, 2)),) * 2, np.zeros((2, 2), dtype=int), is_product=True), "grid"),
    (lambda: FunctionClass((np.zeros((2, 3, 2)),), np.array([[2]])), "index"),
    (lambda: PrivateGeneralMDP(np.zeros((2, 3, 3, 2))), "FunctionClass"),
    (lambda: PrivateGeneralMDP(gf3().fclass, B=0), "batch size"),
    (lambda: PrivateGeneralMDP(FunctionClass.from_values(gf3().fclass.values[:5]), sampler="messages"), "product"),
    (lambda: PrivateOutcomeRL(appendix_d("easy", H=2).fclass, sensitivity="octal"), "sensitivity"),
])
def test_bad_classes_and_parameters(build, msg):
    with pytest.raises(InputError, match=msg) as err:
        build()
    assert "\n" not in str(err.value)


def test_bad_run_inputs(gf, small_d):
    agent = PrivateGeneralMDP(gf.fclass, epsilon=1.0)
    with pytest.raises(InputError, match="has"):
        agent.run(small_d.mdp, 5, np.random.default_rng(0))                 # wrong (H, S, A)
    with pytest.raises(InputError, match="K"):
        agent.run(gf.mdp, 0, np.random.default_rng(0))
    stoch_init = TabularMDP(gf.mdp.P, gf.mdp.r, np.full(3, 1 / 3))
    with pytest.raises(InputError, match="fixed public initial state"):
        agent.run(stoch_init, 5, np.random.default_rng(0))
    with pytest.raises(InputError, match="always starts in state 0"):
        PrivateGeneralMDP(gf.fclass, s1=1).run(gf.mdp, 2, np.random.default_rng(0))
    r = np.array(gf.mdp.r)
    r[0] = 0.5                                                             # sum_h r_h can reach 1.5
    with pytest.raises(InputError, match="normalisation"):
        agent.run(TabularMDP(gf.mdp.P, r, 0), 5, np.random.default_rng(0))


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), N=st.integers(1, 12), B=st.integers(1, 5))
def test_a_users_own_class_runs_on_a_random_mdp(seed, N, B):
    """A class passed as plain arrays (a non-product list: literal inf) on a random MDP whose rewards are
    scaled so that sum_h r_h <= 1; regret is exact and non-negative."""
    from dpcheck.algorithms.envs import random_mdp
    rng = np.random.default_rng(seed)
    base = random_mdp(3, 2, 3, rng)
    mdp = TabularMDP(base.P, base.r / 3, 1)
    fc = FunctionClass.from_values(rng.random((N, 3, 3, 2)))
    res = PrivateGeneralMDP(fc, epsilon=1.0, B=B).run(mdp, 7, rng, runs=2)
    assert res.selected.shape == (2, -(-7 // B)) and np.all((res.selected >= 0) & (res.selected < N))
    assert np.all(res.regret >= -1e-12)
