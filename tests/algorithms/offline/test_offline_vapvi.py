"""DP-VAPVI / VAPVI / PEVI (Qiao & Wang 2022, Algorithm 2, claims Theorem 4.1, Lemma D.2, Lemma D.3)."""
import math

import numpy as np
import pytest

from dpcheck.errors import InputError
from dpcheck.algorithms.envs.planning import policy_values
from dpcheck.algorithms.offline import (
    DPVAPVI, PEVI, VAPVI, OfflineDataset, VAPVINoise, appendix_f, lin_tab, tab_full,
)


def _lin_tab(seed=0, S=2, A=2, H=3):
    rng = np.random.default_rng(seed)
    return lin_tab(tab_full(rng, S=S, A=A, H=H)), rng


def _beta_noise(res, data, features, split):
    """g1_h recovered from the RELEASED statistic: released beta_vector minus the exact
    sum_tau phibar Vtil_{h+1}(sbar')^2 recomputed from the raw trajectories and the run's own Vtil."""
    D_prime = data.split()[1] if split else data
    runs, K, H = D_prime.actions.shape
    g = np.empty_like(res.statistics["beta_vector"])
    r_idx = np.arange(runs)[:, None]
    for h in range(H):
        Vn = res.values[r_idx, h + 1, D_prime.states[:, :, h + 1]]                     # (runs, K)
        feats = features[D_prime.states[:, :, h], D_prime.actions[:, :, h]]            # (runs, K, d)
        g[:, h] = res.statistics["beta_vector"][:, h] - np.einsum("rkd,rk->rd", feats, Vn ** 2)
    return g


def _max_cross_step_correlation(noise):
    """max over h != h' and coordinates of |corr over runs of noise[:, h, i] and noise[:, h', i]|."""
    runs, H, d = noise.shape
    best = 0.0
    for i in range(d):
        c = np.corrcoef(noise[:, :, i].T)
        best = max(best, float(np.max(np.abs(c - np.eye(H)))))
    return best


class ReusedNoiseVAPVI(DPVAPVI):
    """Planted defect (the wrong reading of Algorithm 2 against footnote 8): one draw at initialisation, reused for every h."""

    def draw_noise(self, rng, runs, H, d):
        z = super().draw_noise(rng, runs, H, d)
        first = lambda x: np.repeat(x[:, :1], H, axis=1)
        return VAPVINoise(first(z.g1), first(z.g2), first(z.g3), first(z.N1), first(z.N2))


def test_fresh_noise_per_step_and_a_reused_draw_is_detected():
    """Algorithm 2, footnote 8: g1_h recovered from the released statistics is uncorrelated across h (|corr| over 300
    runs stays below 0.25: the null sd of a sample correlation is 1/sqrt(300) = 0.058, and 0.25 is > 4 sd,
    so the max over 3 step pairs x 4 coordinates exceeds it with probability ~1e-4); the planted one-draw variant has corr = 1 and is caught."""
    inst, rng = _lin_tab(1)
    data = inst.collect(40, rng, runs=300)
    good = DPVAPVI(rho=1.0, Dpen=1.0).run(data, inst.features, rng)
    g_good = _beta_noise(good, data, inst.features, split=True)
    assert np.allclose(g_good, good.noise.g1, atol=1e-6 * np.abs(good.noise.g1).max())   # record = release
    assert _max_cross_step_correlation(g_good) < 0.25
    bad = ReusedNoiseVAPVI(rho=1.0, Dpen=1.0).run(data, inst.features, rng)
    assert _max_cross_step_correlation(_beta_noise(bad, data, inst.features, split=True)) > 0.99


def test_declared_and_empirical_noise_variances():
    """Lemma D.1: stds 2H^4/rho0, 2H^2/rho0, 1/(4 rho0) (variances) with rho0 = rho/(5H); the
    symmetrised matrix noise has off-diagonal variance 1/(4 rho0), diagonal 1/(2 rho0); the 5H declared
    releases compose to rho; each DpEvent's noise multiplier is std / sensitivity."""
    import dp_accounting
    H, d, rho = 3, 4, 2.0
    alg = DPVAPVI(rho=rho, Dpen=1.0)
    r0 = rho / (5 * H)
    std = alg.noise_stds(H)
    assert std["beta_vector"] ** 2 == pytest.approx(2 * H ** 4 / r0)
    assert std["theta_vector"] ** 2 == pytest.approx(2 * H ** 2 / r0)
    assert std["w_vector"] ** 2 == pytest.approx(2 * H ** 2 / r0)
    assert std["sigma_matrix"] ** 2 == pytest.approx(1 / (4 * r0))
    stats = alg.private_statistics(H)
    assert len(stats) == 5 * H and sum(s.zcdp for s in stats) == pytest.approx(rho)
    ev = alg.dp_event(H)
    assert isinstance(ev, dp_accounting.ComposedDpEvent) and len(ev.events) == 5 * H
    assert all(e.noise_multiplier == pytest.approx(s.noise_std / s.sensitivity) for e, s in zip(ev.events, stats))
    noise = alg.draw_noise(np.random.default_rng(2), 4000, H, d)
    tol = 5 * math.sqrt(2 / (4000 * H * d))
    for g, name in ((noise.g1, "beta_vector"), (noise.g2, "theta_vector"), (noise.g3, "w_vector")):
        assert abs(g.var() / std[name] ** 2 - 1) < tol
    off = ~np.eye(d, dtype=bool)
    for N in (noise.N1, noise.N2):
        assert np.array_equal(N, np.swapaxes(N, -1, -2))
        assert abs(N[..., off].var() / (1 / (4 * r0)) - 1) < 0.05
        assert abs(np.diagonal(N, axis1=-2, axis2=-1).var() / (1 / (2 * r0)) - 1) < 0.05
    # 'replace' doubles the matrix variance feature_bound B scales vectors by B, matrices by B^2
    rep = DPVAPVI(rho=rho, Dpen=1.0, matrix_neighbour="replace", feature_bound=2.0).noise_stds(H)
    assert rep["sigma_matrix"] == pytest.approx(std["sigma_matrix"] * math.sqrt(2) * 4)
    assert rep["w_vector"] == pytest.approx(std["w_vector"] * 2)


def test_widths_match_lemma_d2_formulas():
    H, d, rho, delta = 4, 3, 0.7, 0.05
    alg = DPVAPVI(rho=rho, delta=delta, Dpen=1.0)
    E, L = alg.widths(H, d)
    r0 = rho / (5 * H)
    assert L == pytest.approx(2 * H * math.sqrt(d / r0 * math.log(10 * H * d / delta)))
    assert E == pytest.approx(math.sqrt(2 * d / r0) * (2 + (math.log(5 * H / delta) / d) ** (2 / 3)))
    kap = 0.2
    sur = DPVAPVI(rho=rho, delta=delta, c_D=0.5, kappa=kap).penalty_constant(H, d)
    assert sur == pytest.approx(0.5 * (H ** 2 * L / kap + H ** 4 * E * math.sqrt(d) / kap ** 1.5 + H ** 3 * math.sqrt(d)))


def test_noise_off_is_vapvi_and_the_regressions_are_the_ridge_solutions():
    """docs/derivations.md#readings: rho = inf with Dpen = 2 H^3 sqrt(d) is VAPVI bit for bit; the count-based sums equal the
    per-trajectory ridge regressions of Algorithm 2 (interpretation paragraph) computed from the raw data."""
    inst, rng = _lin_tab(3)
    data = inst.collect(60, rng, runs=2)
    H, d = 3, inst.d
    ref = VAPVI().run(data, inst.features, rng)
    off = DPVAPVI(rho=math.inf, Dpen=2 * H ** 3 * math.sqrt(d)).run(data, inst.features, rng)
    for k in ("policy", "values", "q_values", "bellman", "penalties", "weights", "sigma2"):
        assert np.array_equal(getattr(ref, k), getattr(off, k)), k
    assert ref.noise is None and ref.E == 0 and ref.private_statistics == ()
    D, Dp = data.split()
    phi = inst.features
    for r in range(2):
        for h in range(H):
            Vn = ref.values[r, h + 1]
            fb = phi[Dp.states[r, :, h], Dp.actions[r, :, h]]
            Sig = fb.T @ fb + np.eye(d)
            beta = np.linalg.solve(Sig, fb.T @ Vn[Dp.states[r, :, h + 1]] ** 2)
            theta = np.linalg.solve(Sig, fb.T @ Vn[Dp.states[r, :, h + 1]])
            top = H - h
            var = np.clip(phi @ beta, 0, top ** 2) - np.clip(phi @ theta, 0, top) ** 2
            sig2 = np.maximum(1.0, var)
            assert np.allclose(ref.sigma2[r, h], sig2)
            f = phi[D.states[r, :, h], D.actions[r, :, h]]
            w8 = 1 / sig2[D.states[r, :, h], D.actions[r, :, h]]
            Lam = (f * w8[:, None]).T @ f + np.eye(d)
            y = D.rewards[r, :, h] + Vn[D.states[r, :, h + 1]]
            assert np.allclose(ref.weights[r, h], np.linalg.solve(Lam, f.T @ (w8 * y)))
            quad = np.einsum("sai,ij,saj->sa", phi, np.linalg.inv(Lam), phi)
            assert np.allclose(ref.penalties[r, h], math.sqrt(d) * np.sqrt(quad) + 2 * H ** 3 * math.sqrt(d) / 60 * 2)


def test_positive_definiteness_fallback_is_pessimistic_and_counted():
    """A non-PD Lambdatil_h is counted, and that step gets Gamma = inf (Qhat = 0), never a 0 penalty."""

    class NegativeMatrixNoise(DPVAPVI):
        def draw_noise(self, rng, runs, H, d):
            z = super().draw_noise(rng, runs, H, d)
            N2 = z.N2.copy()
            N2[0, 1] = -1e9 * np.eye(d)            # run 0, step h = 1 (0-based)
            return VAPVINoise(z.g1, z.g2, z.g3, z.N1, N2)

    inst, rng = _lin_tab(4)
    data = inst.collect(100, rng, runs=2)
    res = NegativeMatrixNoise(rho=10.0, Dpen=1.0).run(data, inst.features, rng)
    assert list(res.not_pd_lambda) == [1, 0] and res.min_eig_lambda[0, 1] < 0
    assert np.all(np.isinf(res.penalties[0, 1])) and np.all(res.q_values[0, 1] == 0)
    assert np.all(np.isfinite(res.penalties[1]))


def test_oracle_penalty_gives_exact_pessimism():
    """Lemma D.3 (Lemma D.3): with the oracle penalty Gamma_h = |T_h Vtil_{h+1} - phi^T wtil_h| + 1e-12 (true
    model, computed during the backward pass) Qhat_h <= Q^{pi_hat}_h and Vtil_h <= V^{pi_hat}_h hold on
    EVERY run, noise or not; and on the algorithm's own penalty, every run where it is valid is pessimistic."""
    inst, rng = _lin_tab(5)
    P, r = inst.mdp.P, inst.mdp.r

    class Oracle(DPVAPVI):
        def _penalty(self, h, Lam, phi, additive, min_eig, bellman, V_next):
            T = r[h][None] + np.einsum("sat,rt->rsa", P[h], V_next)
            return np.abs(T - bellman) + 1e-12

    data = inst.collect(200, rng, runs=20)
    for alg in (Oracle(rho=0.5, Dpen=0.0), Oracle(rho=math.inf, Dpen=0.0)):
        res = alg.run(data, inst.features, rng)
        Q, V = policy_values(inst.mdp, res.policy)
        assert np.all(res.values <= V + 1e-9) and np.all(res.q_values <= Q + 1e-9)
    data = inst.collect(2000, rng, runs=20)
    res = DPVAPVI(rho=5.0, Dpen=5.0, C=2.0).run(data, inst.features, rng)
    Tv = r[None] + np.einsum("hsat,rht->rhsa", P, res.values[:, 1:])
    valid = np.all(np.abs(Tv - res.bellman) <= res.penalties, axis=(1, 2, 3))
    Q, V = policy_values(inst.mdp, res.policy)
    pess = np.all(res.values <= V + 1e-9, axis=(1, 2)) & np.all(res.q_values <= Q + 1e-9, axis=(1, 2, 3))
    assert valid.sum() >= 10                       # the implication is exercised on most runs
    assert np.all(pess[valid])


def test_appendix_f_figures_reach_the_result():
    """the noise calibrated for ||phi|| <= 1 is flagged on Appendix F; B = sqrt(7) clears the flag."""
    rng = np.random.default_rng(6)
    f = appendix_f(rng, H=4)
    data = f.collect(30, rng, runs=2)
    res = DPVAPVI(rho=1.0, Dpen=1.0, split=False).run(data, f.features, rng)
    assert res.max_feature_norm == pytest.approx(math.sqrt(7)) and res.feature_bound_violated
    ok = DPVAPVI(rho=1.0, Dpen=1.0, split=False, feature_bound=math.sqrt(7)).run(data, f.features, rng)
    assert not ok.feature_bound_violated
    pevi = PEVI().run(data, f.features)
    assert pevi.policy.shape == (2, 4, 2) and np.all(pevi.values >= 0)
    assert np.all(pevi.values[:, :4] <= (4 - np.arange(4))[None, :, None])


BAD = {
    "no Dpen": lambda: DPVAPVI(rho=1.0),
    "c_D without kappa": lambda: DPVAPVI(rho=1.0, c_D=1.0),
    "kappa = 0": lambda: DPVAPVI(rho=1.0, c_D=1.0, kappa=0.0),
    "Dpen and c_D": lambda: DPVAPVI(rho=1.0, Dpen=1.0, c_D=1.0, kappa=0.1),
    "rho <= 0": lambda: DPVAPVI(rho=0.0, Dpen=1.0),
    "lambda <= 0": lambda: DPVAPVI(rho=1.0, Dpen=1.0, lam=0.0),
    "matrix neighbour": lambda: DPVAPVI(rho=1.0, Dpen=1.0, matrix_neighbour="add"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_configuration(case):
    with pytest.raises(InputError) as e:
        BAD[case]()
    assert "\n" not in str(e.value)


def test_bad_data_and_features():
    inst, rng = _lin_tab(7)
    data = inst.collect(10, rng)
    alg = DPVAPVI(rho=1.0, Dpen=1.0)
    no_rewards = OfflineDataset.from_arrays(data.states, data.actions, S=2, A=2)
    cases = [lambda: alg.run(data, inst.features[..., :3].reshape(2, 2, 3)[:, :1], rng),   # (S, 1, d)
             lambda: alg.run(data, np.ones((2, 2)), rng),                                  # no d axis
             lambda: alg.run(no_rewards, inst.features, rng),
             lambda: alg.run(inst.collect(7, rng), inst.features, rng),                    # odd n, split
             lambda: alg.run(data.counts(), inst.features, rng)]                           # counts, split
    for c in cases:
        with pytest.raises(InputError) as e:
            c()
        assert "\n" not in str(e.value)


def test_dataset_coverage_figures():
    """Empirical dbar_m and kappa of datasets: on LIN-TAB (one-hot features) lambda_min(1/n sum phi phi^T)
    is the smallest visit frequency, and both approach the exact dbar_m = kappa of the instance."""
    from dpcheck.algorithms.offline import empirical_coverage, empirical_kappa
    inst, rng = _lin_tab(8, S=2, A=2, H=3)
    counts = inst.sample_counts(200_000, rng, runs=3)
    k = empirical_kappa(counts, inst.features)
    assert np.allclose(k, empirical_coverage(counts))
    exact = inst.feature_figures().kappa
    assert exact == pytest.approx(inst.coverage().dbar_m)
    assert np.all(np.abs(k - exact) < 0.01)
    f = appendix_f(np.random.default_rng(9), H=3)
    assert np.all(np.abs(empirical_kappa(f.sample_counts(500, rng, runs=2), f.features)) < 1e-12)  # dead coordinate


def test_xi_two_state_matches_a_brute_force_supremum():
    """xi (Section 2) by the closed form against a grid over V in [0, H]^2 on Appendix F (S = 2)."""
    from dpcheck.algorithms.offline import xi_two_state
    f = appendix_f(np.random.default_rng(10), H=5)
    H = 5
    v = np.linspace(0, H, 501)
    V0, V1 = np.meshgrid(v, v, indexing="ij")
    best = 0.0
    for p in np.unique(f.mdp.P[..., 0]):
        var = p * (1 - p) * (V0 - V1) ** 2
        sig = np.sqrt(np.maximum(1.0, var))
        PV = p * V0 + (1 - p) * V1
        if p > 0:
            best = max(best, float(np.max(np.abs(V0 - PV) / sig)))
        if p < 1:
            best = max(best, float(np.max(np.abs(V1 - PV) / sig)))
    xi = xi_two_state(f.mdp)
    assert best <= xi + 1e-12 and xi - best < 1e-2 * max(1.0, xi)
