"""LinOpt-VI-Reg / LinOpt-PO-Reg (Zhou 2022, Algorithms 1-2, Section 3): the reduction check, regret, optimism,
billboard structure, frozen rows floor, bad input. Seeds fixed; runs short."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dpcheck.algorithms.envs import random_mdp
from dpcheck.algorithms.linear import (
    LinOptPO, LinOptVI, OPPO, UCRLVTR, LinearMixtureMDP, Privatizer, PrivateLinOptPO, PrivateLinOptVI,
    RidgeRegularizer, floored_inverse, lm2, random_linear_mixture, tabular_as_linear,
)
from dpcheck.errors import InputError

ARRAYS = ("regret", "values", "theta_hat_p", "theta_hat_r", "policies", "states", "actions", "containment_p", "containment_r",
          "lower_clips", "ties", "optimism_gap", "Lambda_p", "u_p", "Lambda_r", "u_r")


def _tab2():
    return tabular_as_linear(random_mdp(2, 2, 3, np.random.default_rng(7), reward_noise="bernoulli"))


@pytest.mark.parametrize("private, plain, env_fn, K", [
    (PrivateLinOptVI, UCRLVTR, lm2, 60),
    (PrivateLinOptPO, OPPO, lm2, 60),
    (PrivateLinOptVI, UCRLVTR, _tab2, 40),
    (PrivateLinOptPO, OPPO, _tab2, 40),
])
def test_noise_off_private_algorithm_equals_its_non_private_instantiation_exactly(private, plain, env_fn, K):
    env = env_fn()
    a = private(math.inf, ridge=1.0).run(env, K, np.random.default_rng(3), runs=3)
    b = plain(1.0).run(env, K, np.random.default_rng(3), runs=3)
    assert (a.beta_p, a.beta_r) == (b.beta_p, b.beta_r)
    for name in ARRAYS:
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    # and the real noise does change the run
    c = private(1e6).run(env, K, np.random.default_rng(3), runs=3)
    assert not np.array_equal(c.Lambda_p, b.Lambda_p)


@pytest.mark.slow
def test_ucrl_vtr_regret_on_lm2_is_sublinear():
    res = UCRLVTR(1.0).run(lm2(), 2048, np.random.default_rng(1), runs=4, )
    R = res.cumulative_regret.mean(axis=0)
    assert R[2047] / R[1023] < 1.5                                  # linear regret would give 2
    assert res.regret[:, -200:].mean() < 0.05                       # near 0 within a few thousand episodes
    # Lemma 3.1 / Lemma 7.2 / eqs. 3, 7 on the good event (figures recorded per episode)
    assert res.good_event.all()
    assert res.optimism_gap.min() >= -1e-9
    assert res.iota_min.min() >= -1e-9 and res.iota_excess.max() <= 1e-9
    assert res.lower_clips.sum() == 0
    assert res.assumption2_held.all()


def test_oppo_and_private_po_run_with_the_theory_step_size():
    env = lm2()
    res = OPPO().run(env, 64, np.random.default_rng(0), runs=2)
    assert res.config["eta"] == pytest.approx(math.sqrt(2 * math.log(2) / (9 * 64)))
    np.testing.assert_allclose(res.policies.sum(-1), 1.0)
    assert res.policies[:, 0].std() == 0                            # pi^1 uniform
    assert res.iota_min.min() >= -1e-9 and res.iota_excess.max() <= 1e-9   # eqs. 3, 7 for Algorithm 2 too
    assert LinOptPO(RidgeRegularizer(), eta=0.3).run(env, 5, np.random.default_rng(0)).config["eta"] == 0.3


def test_private_run_records_assumption_2_figures_and_the_claim():
    env = lm2()
    res = PrivateLinOptVI(1.0, delta=0.1).run(env, 64, np.random.default_rng(5), runs=3)
    c, P = res.constants, res.privacy
    assert res.shift_p == pytest.approx(2 * P["Sigma_p1"]) and res.shift_r == pytest.approx(2 * P["Sigma_r"])
    assert (res.noise_norm_p <= P["Sigma_p1"]).all() and (res.noise_norm_r <= P["Sigma_r"]).all()
    assert (res.z_eig_min_p >= c.lambda_min_p).all() and (res.z_eig_max_p <= c.lambda_max_p).all()
    assert res.assumption2_held.all() and res.good_event.all()
    assert not res.floored_p.any()
    assert (res.noise_norm_p[:, 0] == 0).all()                      # k = 1: no node released yet
    assert (res.noise_norm_p[:, 1:] > 0).all()
    assert res.claim.notion == "JDP" and res.claim.epsilon == pytest.approx(1 + 1 / (16 * 3 * math.log(120)))
    assert res.dp_event is not None
    # the noise-dominated regime of the scale warning: Q clipped almost everywhere
    assert res.upper_clip_fraction.mean() > 0.9


def test_policy_is_a_function_of_the_releases_only():
    """Theorem 6.4 (billboard): re-plan from the logged releases alone and get the played policies back."""
    env = _tab2()
    log = []
    alg = PrivateLinOptVI(2.0e3, tie_breaking="lowest")
    res = alg.run(env, 20, np.random.default_rng(9), runs=2, release_hook=lambda k, rel: log.append(rel))
    sizes = alg.sizes(env, 20)
    betas = alg.radii(sizes)
    floors = alg.regularizer.floors(sizes, alg.alpha)
    for k, rel in enumerate(log):
        Q = alg.plan(env, rel, betas, floors)["Q"]
        assert np.array_equal(np.eye(env.A)[Q.argmax(-1)], res.policies[:, k])


def test_rows_are_frozen_with_the_episodes_own_value_function():
    """Lambda^{k+1} - Lambda^k = x x^T with x = phi_h^k(s_h, a_h) computed from V_{h+1}^k (ridge)."""
    env = lm2()
    log = []
    alg = UCRLVTR(1.0, tie_breaking="lowest")
    alg.run(env, 6, np.random.default_rng(2), runs=1, release_hook=lambda k, rel: log.append(rel))
    assert np.array_equal(log[0][0], np.broadcast_to(np.eye(2), (1, 3, 2, 2)))   # Lambda^1 = Z^1 (docs/derivations.md#readings)
    sizes = alg.sizes(env, 6)
    for k in range(5):
        phi = alg.plan(env, log[k], alg.radii(sizes), (1.0, 1.0))["phi"][0]     # (H, S, A, d1)
        diff = log[k + 1][0][0] - log[k][0][0]                                   # (H, d1, d1)
        for h in range(3):
            cands = [np.outer(x, x) for x in phi[h].reshape(-1, 2)]
            assert any(np.allclose(diff[h], c, atol=1e-12) for c in cands)


def test_floored_inverse_flags_and_floors_indefinite_matrices():
    L = np.array([[[2.0, 0.0], [0.0, -1.0]], [[3.0, 1.0], [1.0, 2.0]]])
    inv, floored, low = floored_inverse(L, 0.5)
    assert floored.tolist() == [True, False] and low[0] == pytest.approx(-1.0)
    np.testing.assert_allclose(inv[0], np.diag([0.5, 2.0]))
    np.testing.assert_allclose(inv[1], np.linalg.inv(L[1]))


@pytest.mark.parametrize("make, match", [
    (lambda: UCRLVTR().run("LM-2", 5, np.random.default_rng(0)), "LinearMixtureMDP"),
    (lambda: UCRLVTR().run(lm2(), 0, np.random.default_rng(0)), "K must be an integer >= 1"),
    (lambda: UCRLVTR().run(lm2(), 5, np.random.default_rng(0), runs=0), "runs"),
    (lambda: UCRLVTR(alpha=1.5), r"alpha must lie in \(0, 1\]"),
    (lambda: UCRLVTR(lam=0.0), "lam must be a finite number > 0"),
    (lambda: UCRLVTR(lam=float("nan")), "lam must be a finite number > 0"),
    (lambda: UCRLVTR(tie_breaking="first"), "tie_breaking"),
    (lambda: OPPO(eta=-1.0), "eta must be"),
    (lambda: LinOptVI("ridge"), "regularizer must be a Regularizer"),
    (lambda: PrivateLinOptVI(1.0, sensitivity_mode="replacement", nonnegative_items=True).run(
        _signed_env(), 3, np.random.default_rng(0)), "non-negative"),
])
def test_bad_input_gives_one_line_input_errors(make, match):
    with pytest.raises(InputError, match=match) as info:
        make()
    assert "\n" not in str(info.value)


def _signed_env():
    """A valid instance with a signed transition feature: psi = (1{s'=a}, 1{s'=a} - 1{s'=1-a}) / 2 ..."""
    env = lm2()
    psi = np.array(env.psi)
    psi2 = np.stack([psi[..., 0] + psi[..., 1], psi[..., 0] - psi[..., 1]], axis=-1) / 2.0
    q = env.theta_p[:, 0]
    theta = np.stack([np.ones_like(q), 2 * q - 1], axis=-1)                      # P(s' = a) = q
    return LinearMixtureMDP(psi2, env.varphi, theta, env.theta_r, init=0)


@pytest.mark.parametrize("K", [1, 2, 8])
def test_short_horizons_run_and_never_insert_episode_K(K):
    """K = 1 and (K a power of two): the run completes; the trees hold K - 1 items."""
    env = lm2()
    log = []
    res = PrivateLinOptVI(1.0).run(env, K, np.random.default_rng(0), runs=2,
                                   release_hook=lambda k, rel: log.append(k))
    assert log == list(range(1, K + 1)) and res.regret.shape == (2, K)
    assert np.all(res.regret >= -1e-12)


@settings(max_examples=10, deadline=None)
@given(S=st.integers(1, 3), A=st.integers(1, 3), H=st.integers(1, 3), seed=st.integers(0, 2 ** 16),
       po=st.booleans(), eps=st.sampled_from([math.inf, 1e3, 1.0]), tabular=st.booleans())
def test_invariants_on_random_instances(S, A, H, seed, po, eps, tabular):
    """Q_h^k in [0, H - h + 1] (Algorithms 1-2), exact regret in [0, H], policies are distributions, and on the good
    event optimism (Lemma 7.2, VI) and eqs. 3, 7 hold; tabular-as-linear and low-dimensional random linear mixtures."""
    rng = np.random.default_rng(seed)
    env = (tabular_as_linear(random_mdp(S, A, H, rng, reward_noise="bernoulli")) if tabular
           else random_linear_mixture(S, A, H, 2, 3, rng))
    cls = (PrivateLinOptPO if po else PrivateLinOptVI)
    kw = {"ridge": 1.0} if math.isinf(eps) else {}
    log = []
    res = cls(eps, **kw).run(env, 12, np.random.default_rng(seed), runs=2, release_hook=lambda k, r: log.append(r))
    assert np.all(res.regret >= -1e-12) and np.all(res.regret <= H + 1e-12)
    np.testing.assert_allclose(res.policies.sum(-1), 1.0)
    alg = cls(eps, **kw)
    sizes = alg.sizes(env, 12)
    plan = alg.plan(env, log[-1], alg.radii(sizes), alg.regularizer.floors(sizes, alg.alpha),
                    res.policies[:, -1] if po else None)
    caps = (H - np.arange(H))[None, :, None, None]
    assert np.all(plan["Q"] >= 0) and np.all(plan["Q"] <= caps)
    good = res.good_event
    if not po:
        assert np.all(res.optimism_gap[good] >= -1e-9)
    assert np.all(res.iota_min[good] >= -1e-9) and np.all(res.iota_excess[good] <= 1e-9)


def test_scripted_users_replace_the_simulation_and_user_k_cannot_change_her_own_policy():
    """With fixed users the algorithm is the only randomness (Section 2.2). Replacing user j changes no release
    up to and including the one for episode j (it uses prefix(j - 1)), hence not pi^j; it changes the next."""
    from dpcheck.algorithms.envs import users_from_model
    env = lm2()
    K, j = 12, 6                                           # 0-based: user j answers episode j + 1
    U = users_from_model(env.tabular, K, np.random.default_rng(1))
    other = users_from_model(env.tabular, 4, np.random.default_rng(2))
    U2 = U.replace(j, other, 3)
    alg = PrivateLinOptPO(1e4)
    logs = ([], [], [])
    a, b, c = (alg.run(env, K, np.random.default_rng(4), runs=3, users=u, release_hook=lambda k, r, log=log: log.append(r))
               for u, log in zip((U, U, U2), logs))
    assert np.array_equal(a.actions, b.actions) and np.array_equal(a.policies, b.policies)
    assert np.array_equal(a.policies[:, : j + 1], c.policies[:, : j + 1])
    assert np.array_equal(a.actions[:, :j], c.actions[:, :j])
    for k in range(K):
        same = all(np.array_equal(x, y) for x, y in zip(logs[0][k], logs[2][k]))
        assert same == (k <= j), k
    with pytest.raises(InputError, match="cannot serve"):
        alg.run(env, K + 1, np.random.default_rng(4), users=U)


def test_explicit_regret_bounds_hold_and_have_the_documented_form():
    """Theorem 4.1 / Theorem 5.1: exact pseudo-regret <= the explicit bound (it is large; the ratio is what audits report)."""
    from dpcheck.algorithms.linear import LinearSizes, regret_bound_vi
    env = lm2()
    for alg in (UCRLVTR(), OPPO(), PrivateLinOptVI(1.0), PrivateLinOptPO(1.0)):
        res = alg.run(env, 64, np.random.default_rng(0), runs=2)
        assert np.all(res.cumulative_regret[:, -1] <= res.config["regret_bound"])
    sizes = LinearSizes(K=100, H=3, d1=2, d2=2)
    alg = UCRLVTR(1.0, alpha=0.05)
    bp, br = alg.radii(sizes)
    T1 = 2 * bp * math.sqrt(300) * math.sqrt(2 * 3 * 2 * math.log(1 + 900))
    T2 = 2 * 3 * br * math.sqrt(300) * math.sqrt(2 * 3 * 2 * math.log(1 + 50))
    T3 = 3 * math.sqrt(2 * 300 * math.log(20))
    assert alg.regret_bound(sizes, 2) == pytest.approx(T1 + T2 + T3)
    assert regret_bound_vi(sizes, alg.regularizer.constants(sizes, 0.05), bp, br, 0.05) == pytest.approx(T1 + T2 + T3)
    po = OPPO(1.0, alpha=0.05)
    assert po.regret_bound(sizes, 2) == pytest.approx(
        math.sqrt(2 * 27 * 300 * math.log(2)) + 12 * math.sqrt(600 * math.log(20)) + T1 + T2)


class _RedrawingPrivatizer(Privatizer):
    """Planted defect at the algorithm level: every release redraws the noise of all its nodes."""

    def start(self, runs, sizes, rng, alpha):
        from dpcheck.algorithms.privatizers.binary_mechanism import BinaryMechanism, release_nodes

        class Redraw(BinaryMechanism):
            def release(self):
                out = self.exact()
                for _ in release_nodes(self.t):
                    out = out + self.counter.draw(self.rng, self.shape)
                return out

        state = super().start(runs, sizes, rng, alpha)
        for tree in state.trees.values():
            tree.__class__ = Redraw
        return state


def _consecutive_release_spread(privatizer, runs=400):
    """std over runs of (Lambda^{4} - Lambda^{3})_{h=0}[0, 1] / sigma_{p,1}: releases after 3 and 2 episodes.
    Correct tree: B(3) - B(2) = item 3 + one leaf noise -> ~1. Redrawn: 2 + 1 fresh nodes -> ~sqrt(3)."""
    env = lm2()
    log = []
    alg = LinOptVI(privatizer, record_figures=False, record_estimates=False)
    alg.run(env, 8, np.random.default_rng(12), runs=runs, release_hook=lambda k, r: log.append(r[0]))
    sigma = privatizer.noise_stds(alg.sizes(env, 8))["p1"]
    return (log[3] - log[2])[:, 0, 0, 1].std() / sigma


def test_a_privatizer_that_redraws_node_noise_is_detectable_from_the_releases():
    good = _consecutive_release_spread(Privatizer(1.0, 0.1))
    bad = _consecutive_release_spread(_RedrawingPrivatizer(1.0, 0.1))
    assert 0.85 < good < 1.15
    assert bad > 1.45                                       # sqrt(3) = 1.73


class _UnshiftedPrivatizer(Privatizer):
    """Planted defect: no 2 Sigma shift, so the released Lambda is indefinite about half the time."""

    def shifts(self, sizes, alpha):
        return 1e-3, 1e-3


def test_indefinite_releases_are_floored_flagged_and_break_assumption_2():
    res = LinOptVI(_UnshiftedPrivatizer(1.0, 0.1)).run(lm2(), 16, np.random.default_rng(0), runs=4)
    assert res.floored_p.any() and res.floored_r.any()
    assert np.all(res.lambda_min_eig_p[res.floored_p] <= 0)
    assert np.all(np.isfinite(res.regret)) and np.all(np.isfinite(res.containment_p))
    assert not res.assumption2_held.any()
    assert np.isinf(res.z_norm_p).any()


def test_a_regularizer_releasing_wrong_shapes_is_a_mechanism_error():
    from dpcheck.errors import MechanismError

    class Broken(RidgeRegularizer):
        def start(self, runs, sizes, rng, alpha):
            state = super().start(runs, sizes, rng, alpha)
            state.release = lambda: (np.eye(2), np.zeros(2), np.eye(2), np.zeros(2))
            return state

    with pytest.raises(MechanismError, match="must return"):
        LinOptVI(Broken()).run(lm2(), 3, np.random.default_rng(0))
