"""The Privatizer of Section 6.1-2.8: calibration (worked numbers), flags, privacy as data, PD shift."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dpcheck.algorithms.linear import (
    COUNTERS, LinearSizes, Privatizer, RidgeRegularizer, confidence_radii,
)
from dpcheck.errors import InputError

WORKED = LinearSizes(K=10 ** 4, H=3, d1=2, d2=2)          # proofs of Theorems 6.4-6.5, docs/derivations.md#noise-calibration scale warning: eps = 1, delta = 0.1, alpha = 0.05


def test_worked_numbers_of_the_scale_warning():
    p = Privatizer(1.0, 0.1)
    assert WORKED.m == 14
    s = p.noise_stds(WORKED)
    R = p.noise_radii(WORKED, 0.05)
    assert s["p1"] == pytest.approx(2.5e3, rel=0.01)
    assert R["Sigma_p1"] == pytest.approx(1.6e5, rel=0.03)
    assert R["Sigma_r"] == pytest.approx(8.7e3, rel=0.01)
    beta_p, beta_r = confidence_radii(p.constants(WORKED, 0.05), WORKED, 0.05)
    assert beta_p == pytest.approx(1.1e3, rel=0.02)
    assert beta_r == pytest.approx(2.7e2, rel=0.01)
    beta_p, beta_r = confidence_radii(RidgeRegularizer(1.0).constants(WORKED, 0.05), WORKED, 0.05)
    assert beta_p == pytest.approx(9.8, abs=0.05) and beta_r == pytest.approx(3.9, abs=0.05)


def test_sigma_formula_and_assumption_2_constants():
    sizes = LinearSizes(K=100, H=2, d1=3, d2=2, d=4)
    p = Privatizer(0.5, 0.01)
    m = sizes.m
    assert m == 7                                                   # ceil(log2 100)
    root = math.sqrt(32 * m * math.log(8 / 0.01))
    s = p.noise_stds(sizes)
    assert s["p1"] == pytest.approx(2 * 3 * 4 / 0.5 * root)        # H Delta / eps, Delta_{p,1} = d1 H^2
    assert s["p2"] == pytest.approx(2 * math.sqrt(3) * 4 / 0.5 * root)
    assert s["r1"] == s["r2"] == pytest.approx(2 / 0.5 * root)
    R = p.noise_radii(sizes, 0.1)
    c = p.constants(sizes, 0.1)
    assert (c.lambda_min_p, c.lambda_max_p) == (R["Sigma_p1"], 3 * R["Sigma_p1"])
    assert c.nu_p == pytest.approx(s["p2"] * math.sqrt(m / R["Sigma_p1"]) * (math.sqrt(3) + math.sqrt(2 * math.log(4 * 200 / 0.1))))
    assert p.shifts(sizes, 0.1) == (2 * R["Sigma_p1"], 2 * R["Sigma_r"])


def test_radius_dim_flag_switches_sqrt_d_for_sqrt_d1_in_Sigma_p1_only():
    sizes = LinearSizes(K=64, H=3, d1=2, d2=2, d=9)                 # d = 9 > d1 = 2
    a, b = Privatizer(1.0, 0.1, radius_dim="d"), Privatizer(1.0, 0.1, radius_dim="d1")
    assert a.noise_stds(sizes) == b.noise_stds(sizes)              # the node noise is unchanged (Lemma B.4)
    Ra, Rb = a.noise_radii(sizes, 0.05), b.noise_radii(sizes, 0.05)
    tail = math.sqrt(8 * math.log(8 * 64 * 3 / 0.05))
    assert Ra["Sigma_p1"] / Rb["Sigma_p1"] == pytest.approx((4 * 3 + tail) / (4 * math.sqrt(2) + tail))
    assert Ra["Sigma_r"] == Rb["Sigma_r"]
    same = LinearSizes(K=64, H=3, d1=2, d2=2)                      # d = d1: no difference
    assert a.noise_radii(same, 0.05) == b.noise_radii(same, 0.05)


def test_replacement_mode_scales_sigma_by_the_A7_factors():
    sizes = LinearSizes(K=50, H=3, d1=2, d2=2)
    paper = Privatizer(1.0, 0.1).noise_stds(sizes)
    repl = Privatizer(1.0, 0.1, sensitivity_mode="replacement").noise_stds(sizes)
    nonneg = Privatizer(1.0, 0.1, sensitivity_mode="replacement", nonnegative_items=True).noise_stds(sizes)
    for c, f in zip(COUNTERS, (math.sqrt(2), 2, math.sqrt(2), 2)):
        assert repl[c] == pytest.approx(f * paper[c])
    assert nonneg["p2"] == pytest.approx(math.sqrt(2) * paper["p2"])


@settings(max_examples=30, deadline=None)
@given(eps=st.floats(0.01, 50), delta=st.floats(1e-6, 0.5), H=st.integers(1, 6), K=st.integers(1, 5000),
       d1=st.integers(1, 6), d2=st.integers(1, 6))
def test_privacy_declaration_matches_the_paper_accounting(eps, delta, H, K, d1, d2):
    sizes = LinearSizes(K=K, H=H, d1=d1, d2=d2)
    p = Privatizer(eps, delta)
    L = math.log(4 * H / delta)
    # Theorem 6.4: total GDP mu of the 4H counters (matching neighbour relation) = eps / sqrt(8 H ln(4H/delta))
    assert p.gdp_mu(sizes, "add_remove") == pytest.approx(eps / math.sqrt(8 * H * L), rel=1e-9)
    assert p.zcdp_rho(sizes) == pytest.approx(eps ** 2 / (16 * H * L), rel=1e-9)      # Theorem 6.4
    claim = p.claim(sizes)
    assert claim.notion == "JDP" and claim.delta == delta and claim.neighbouring == "replacement"
    assert claim.epsilon == pytest.approx(eps + eps ** 2 / (16 * H * L))                # Theorem 6.4
    # replacement neighbours under the 'paper' calibration: mu grows by the factors (sqrt 2 and 2)
    mu_r = p.gdp_mu(sizes, "replacement")
    assert mu_r > p.gdp_mu(sizes, "add_remove")
    assert Privatizer(eps, delta, sensitivity_mode="replacement").gdp_mu(sizes, "replacement") == pytest.approx(
        eps / math.sqrt(8 * H * L), rel=1e-9)
    # the DpEvents are the declared trees' events: sigma / (sqrt(H m) Delta)
    ev = p.dp_event(sizes, "add_remove")
    stds, sens = p.noise_stds(sizes), p.sensitivities(sizes, "add_remove")
    for event, c in zip(ev.events, COUNTERS):
        assert event.noise_multiplier == pytest.approx(stds[c] / (math.sqrt(H * sizes.m) * sens[c]))
    # target "exact": the paper total equals eps
    q = Privatizer(eps, delta, target="exact")
    assert q.claim(sizes).epsilon == pytest.approx(eps, rel=1e-9)


def test_dp_accounting_agrees_with_the_closed_form_delta():
    import dp_accounting
    from scipy.stats import norm
    sizes = LinearSizes(K=2 ** 10, H=3, d1=2, d2=2)
    p = Privatizer(1.0, 0.1)
    acc = dp_accounting.rdp.RdpAccountant()
    acc.compose(p.dp_event(sizes, "add_remove"))
    mu = p.gdp_mu(sizes, "add_remove")
    exact = norm.cdf(-1 / mu + mu / 2) - math.e * norm.cdf(-1 / mu - mu / 2)
    assert exact < 1e-20 and acc.get_delta(1.0) < 0.1                # Theorem 6.4 worked value: delta(1) ~ 0


def test_noise_off_privatizer_is_the_ridge_regulariser():
    sizes = LinearSizes(K=30, H=2, d1=3, d2=2)
    p, r = Privatizer(math.inf, 0.1, ridge=0.7), RidgeRegularizer(0.7)
    assert p.constants(sizes, 0.05) == r.constants(sizes, 0.05)
    assert p.shifts(sizes, 0.05) == r.shifts(sizes, 0.05)
    assert all(t.node_scale == 0 for t in p.trees(sizes).values())
    import dp_accounting
    assert isinstance(p.dp_event(sizes), dp_accounting.NonPrivateDpEvent)
    with pytest.raises(InputError, match="no privacy claim"):
        p.claim(sizes)


@pytest.mark.parametrize("kw, match", [
    (dict(epsilon=0.0), "epsilon must be > 0"),
    (dict(epsilon=-1.0), "epsilon must be > 0"),
    (dict(epsilon=float("nan")), "finite"),
    (dict(epsilon=math.inf), "ridge must be > 0"),
    (dict(delta=1.0), r"delta must lie in \(0, 1\)"),
    (dict(delta=0.0), "delta must be > 0"),
    (dict(radius_dim="D"), "radius_dim"),
    (dict(sensitivity_mode="strict"), "sensitivity_mode"),
    (dict(target="tight"), "target"),
    (dict(ridge=-1.0), "ridge must be >= 0"),
])
def test_bad_privatizer_parameters(kw, match):
    with pytest.raises(InputError, match=match):
        Privatizer(**kw)


def test_pd_shift_makes_Z_positive_definite_with_the_stated_probability():
    """Lemmas B.4-B.5 on a small instance: noise only (zero items), all k <= K, h <= H, 300 runs. Assumption 2 must
    hold in >= 1 - alpha of the runs (expected: all); without the shift Z = N is indefinite about half
    the time (the shift is what does the work), and the entry std of N_k is sqrt(popcount(k-1)) sigma."""
    sizes = LinearSizes(K=16, H=2, d1=3, d2=2)
    alpha = 0.05
    p = Privatizer(1.0, 0.1)
    c = p.constants(sizes, alpha)
    R = p.noise_radii(sizes, alpha)
    runs = 300
    state = p.start(runs, sizes, np.random.default_rng(11), alpha)
    zeros = (np.zeros((runs, 2, 3)), np.zeros((runs, 2)), np.zeros((runs, 2, 2)), np.zeros((runs, 2)))
    ok = np.ones(runs, dtype=bool)
    unshifted_indefinite = []
    sigma = p.noise_stds(sizes)["p1"]
    for k in range(1, sizes.K + 1):
        Zp, zp, Zr, zr = state.regularization()
        wp, wr = np.linalg.eigvalsh(Zp), np.linalg.eigvalsh(Zr)
        ok &= (wp[..., 0] >= c.lambda_min_p).all(-1) & (wp[..., -1] <= c.lambda_max_p).all(-1)
        ok &= (wr[..., 0] >= c.lambda_min_r).all(-1) & (wr[..., -1] <= c.lambda_max_r).all(-1)
        ok &= (np.linalg.norm(zp, axis=-1) <= R["z_p"]).all(-1) & (np.linalg.norm(zr, axis=-1) <= R["z_r"]).all(-1)
        N = Zp - 2 * R["Sigma_p1"] * np.eye(3)
        if k > 1:
            unshifted_indefinite.append((np.linalg.eigvalsh(N)[..., 0] < 0).mean())
            pop = bin(k - 1).count("1")
            assert N[..., 0, 1].std() == pytest.approx(math.sqrt(pop) * sigma, rel=0.15)
            assert N[..., 1, 1].std() == pytest.approx(math.sqrt(pop) * sigma, rel=0.15)
        state.observe(*zeros)
    assert ok.mean() >= 1 - alpha
    assert ok.all()
    assert np.mean(unshifted_indefinite) > 0.5


@settings(max_examples=60, deadline=None)
@given(K=st.integers(1, 5000))
def test_tree_depth_is_ceil_log2_K_and_every_tree_has_m_levels(K):
    """C1: the trees hold episodes 1..K-1 (episode K is never released), so they have
    m = max(1, ceil(log2 K)) levels and every item lies in at most m nodes (the declared sqrt(H m))."""
    sizes = LinearSizes(K=K, H=2, d1=2, d2=1)
    assert sizes.m == max(1, math.ceil(math.log2(K)))
    for tree in Privatizer(1.0, 0.1).trees(sizes).values():
        assert tree.horizon == max(1, K - 1) and tree.levels == sizes.m
