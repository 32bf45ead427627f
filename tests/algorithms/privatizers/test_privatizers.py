"""Count privatizers: calibrations, widths, releases, the interface and the loader (Qiao & Wang 2023, Section 5, docs/derivations.md#neighbouring-relation)."""
import math
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dpcheck.algorithms.privatizers import (CentralPrivatizer, LocalPrivatizer, NoPrivatizer, OfflineGaussianPrivatizer,
                                    OfflineLaplacePrivatizer, dataset_counts, load_privatizer)
from dpcheck.algorithms.privatizers.width import (confidence_width, laplace_sum_threshold, nominal_width,
                                          rigorous_width, simulate_max_noise)
from dpcheck.errors import InputError, MechanismError


def episodes(rng, runs, H, S, A):
    return rng.integers(0, S, (runs, H + 1)), rng.integers(0, A, (runs, H)), rng.random((runs, H))


# ------------------------------------------------------------------ configuration
@pytest.mark.parametrize("cls", [CentralPrivatizer, LocalPrivatizer])
@pytest.mark.parametrize("kw", [dict(epsilon=0), dict(epsilon=-1), dict(epsilon=float("inf")),
                                dict(epsilon=float("nan")), dict(epsilon="abc"), dict(beta=0), dict(beta=1),
                                dict(calibration="loose"), dict(width_mode="tight")])
def test_bad_configuration_is_input_error(cls, kw):
    with pytest.raises(InputError):
        cls(**kw)


def test_constructor_stores_and_start_computes():
    p = CentralPrivatizer(0.5, beta=0.2, calibration="paper", width_mode="nominal")
    assert p.get_params() == {"epsilon": 0.5, "beta": 0.2, "calibration": "paper", "width_mode": "nominal"}
    assert "CentralPrivatizer(epsilon=0.5" in repr(p)
    with pytest.raises(InputError):
        p.width                                         # not started: no sizes yet


@pytest.mark.parametrize("cal,rewards,factor", [("paper", True, 3), ("strict", True, 6),
                                                ("paper", False, 2), ("strict", False, 4)])
def test_noise_scales_follow_the_spec(cal, rewards, factor):
    """b_c = F H L / eps (paper), 2 F H L / eps (strict); b_l = F H / eps, 2 F H / eps (Section 5.1; Section 5.2; docs/derivations.md#neighbouring-relation)."""
    H, K, eps = 5, 100, 0.7
    L = 7
    c = CentralPrivatizer(eps, calibration=cal).start(1, H, 2, 2, K, np.random.default_rng(0), rewards=rewards)
    assert c.levels == L
    assert c.node_scale() == pytest.approx(factor * H * L / eps)
    loc = LocalPrivatizer(eps, calibration=cal).start(1, H, 2, 2, K, np.random.default_rng(0), rewards=rewards)
    assert loc.noise_scale() == pytest.approx(factor * H / eps)


@pytest.mark.slow
def test_declared_events_give_eps_strict_and_2eps_paper_under_replacement():
    from dpcheck.accounting import pld_epsilon
    for cls in (CentralPrivatizer, LocalPrivatizer):
        for rewards in (True, False):
            s = cls(1.0, calibration="strict").start(1, 3, 2, 2, 9, np.random.default_rng(0), rewards=rewards)
            p = cls(1.0, calibration="paper").start(1, 3, 2, 2, 9, np.random.default_rng(0), rewards=rewards)
            assert pld_epsilon(s.dp_event("replacement")) == pytest.approx(1.0, abs=2e-3)
            assert pld_epsilon(p.dp_event("replacement")) == pytest.approx(2.0, abs=2e-3)
            assert pld_epsilon(p.dp_event("add_remove")) == pytest.approx(1.0, abs=2e-3)


def test_claims():
    c = CentralPrivatizer(2.0)
    assert c.claim.notion == "JDP" and c.claim.epsilon == 2.0 and "Lemma 5.1" in c.claim.source
    loc = LocalPrivatizer(2.0).start(1, 1, 2, 1, 2, np.random.default_rng(0), rewards=False)
    assert loc.claim.notion == "LDP" and "DP-Nash-VI" in loc.claim.source
    assert NoPrivatizer().claim is None


# ------------------------------------------------------------------ widths (docs/derivations.md#widths-e)
def test_width_reference_values_riverswim():
    """docs/derivations.md#widths-e: S=6, A=2, H=20, K=50,000, beta=0.1, paper scales: E_central ~ 207,952/eps, E_local ~ 719,580/eps."""
    assert rigorous_width("central", H=20, S=6, A=2, K=50_000, scale=960, beta=0.1) == pytest.approx(207_952, rel=1e-5)
    assert rigorous_width("local", H=20, S=6, A=2, K=50_000, scale=60, beta=0.1) == pytest.approx(719_580, rel=1e-5)
    p = CentralPrivatizer(1.0, calibration="paper").start(1, 20, 6, 2, 50_000, np.random.default_rng(0))
    assert p.width == pytest.approx(207_952, rel=1e-5)


def test_width_floor_and_modes():
    p = CentralPrivatizer(1e9).start(1, 2, 2, 2, 10, np.random.default_rng(0))
    assert p.width == 1.0                                   # E := max(E, 1) (docs/derivations.md#widths-e)
    assert confidence_width("central", "rigorous", H=2, S=2, A=2, K=1, scale=5.0, epsilon=1, beta=0.1) == 1.0
    x = 20 * 6 * 2 * 20 * 1000 / 0.1
    assert nominal_width("central", H=20, S=6, A=2, K=1000, epsilon=2.0, beta=0.1) == pytest.approx(10 * math.log(x) ** 2)
    assert nominal_width("local", H=20, S=6, A=2, K=1000, epsilon=2.0, beta=0.1) == pytest.approx(10 * math.sqrt(1000 * math.log(x)))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 400), st.floats(0.1, 10), st.floats(1e-9, 0.5))
def test_laplace_tail_threshold_is_monotone_and_a_valid_bound(n, b, delta):
    tau = laplace_sum_threshold(n, b, delta)
    assert tau >= laplace_sum_threshold(max(n - 1, 1), b, delta) - 1e-9
    # the bound really is a tail bound: Chebyshev-free sanity, tau exceeds 1 std of the sum
    assert tau >= b * math.sqrt(2 * n) * 0.99


def test_laplace_tail_bound_by_monte_carlo():
    rng = np.random.default_rng(0)
    for n in (1, 4, 30):
        tau = laplace_sum_threshold(n, 1.0, 0.05)
        y = rng.laplace(0, 1.0, (200_000, n)).sum(1)
        assert np.mean(np.abs(y) >= tau) <= 0.05


def test_calibrated_width_is_the_noise_quantile_and_below_rigorous():
    rng = np.random.default_rng(1)
    H, S, A, K = 2, 2, 2, 64
    p = CentralPrivatizer(1.0, width_mode="calibrated").start(1, H, S, A, K, rng)
    rig = CentralPrivatizer(1.0).start(1, H, S, A, K, np.random.default_rng(1)).width
    assert 1.0 <= p.width < rig
    # the calibrated E/4 is exceeded by the simulated max noise in about beta/3 of repetitions
    sims = simulate_max_noise("central", counters=H * S * A * (S + 2), K=K, scale=p.node_scale(), reps=600,
                              rng=np.random.default_rng(9))
    assert np.mean(sims > p.width / 4) <= 0.1


# ------------------------------------------------------------------ releases
def test_noprivatizer_gives_exact_counts():
    rng = np.random.default_rng(2)
    p = NoPrivatizer().start(3, 4, 3, 2, 10, rng)
    N = np.zeros((3, 4, 3, 2))
    for _ in range(6):
        s, a, r = episodes(rng, 3, 4, 3, 2)
        p.observe(s, a, r)
        N[np.arange(3)[:, None], np.arange(4)[None], s[:, :4], a] += 1
    out = p.release()
    assert p.width == 0.0 and out.width == 0.0
    np.testing.assert_array_equal(out.visits, N)
    np.testing.assert_array_equal(out.visits, out.transitions.sum(-1))
    np.testing.assert_array_equal(out.rewards, p.true_counts().rewards)


def test_first_release_is_post_processed_zero_counts():
    """docs/derivations.md#readings: before any data N~(s,a,s') = E/(2S), N~(s,a) = E/2, uniform P~, R~ = 0."""
    for cls in (CentralPrivatizer, LocalPrivatizer):
        p = cls(1.0).start(2, 3, 4, 2, 16, np.random.default_rng(0))
        out = p.release()
        np.testing.assert_allclose(out.visits, p.width / 2)
        np.testing.assert_allclose(out.kernel, 0.25)
        np.testing.assert_array_equal(out.rewards, 0.0)


def test_central_errors_are_tree_noise_of_the_declared_scale():
    """N^ - N after k episodes is a sum of popcount(k) Lap(b_c) nodes: variance popcount(k) 2 b_c^2."""
    rng = np.random.default_rng(3)
    runs, H, S, A, K = 4000, 1, 2, 1, 8
    p = CentralPrivatizer(1.0).start(runs, H, S, A, K, rng)
    b = p.node_scale()
    for k in range(1, 8):
        s, a, r = episodes(rng, runs, H, S, A)
        p.observe(s, a, r)
        out, true = p.release(), p.true_counts()
        err = (out.noisy_transitions - true.transitions).ravel()
        assert np.var(err) == pytest.approx(bin(k).count("1") * 2 * b * b, rel=0.08)
        np.testing.assert_allclose(out.visits, out.transitions.sum(-1), rtol=1e-12)


def test_local_message_noises_every_coordinate_and_sums():
    rng = np.random.default_rng(4)
    runs, H, S, A = 3000, 2, 3, 2
    p = LocalPrivatizer(1.0).start(runs, H, S, A, 5, rng)
    s, a, r = episodes(rng, runs, H, S, A)
    m1 = p.message(s, a, r, np.random.default_rng(7))
    m2 = p.message(s, a, r, np.random.default_rng(7))
    np.testing.assert_array_equal(m1.flat(), m2.flat())                    # noise only from the rng passed
    assert m1.flat().shape == (runs, H * S * A * (S + 2))                  # all coordinates are sent (docs/derivations.md#noise-calibration)
    assert np.all(m1.visits != np.round(m1.visits))                        # zeros are noised too
    b = p.noise_scale()
    for _ in range(3):
        p.observe(*episodes(rng, runs, H, S, A))
    err = p.release().noisy_visits - p.true_counts().visits
    assert np.var(err) == pytest.approx(3 * 2 * b * b, rel=0.05)


@pytest.mark.parametrize("cls", [CentralPrivatizer, LocalPrivatizer, NoPrivatizer])
def test_observe_validates_input(cls):
    p = cls().start(2, 3, 2, 2, 2, np.random.default_rng(0))
    good = (np.zeros((2, 4), int), np.zeros((2, 3), int), np.zeros((2, 3)))
    with pytest.raises(InputError):
        p.observe(np.zeros((2, 3), int), good[1], good[2])                   # wrong H
    with pytest.raises(InputError):
        p.observe(good[0] + 2, good[1], good[2])                             # state out of range
    with pytest.raises(InputError):
        p.observe(good[0], good[1], good[2] + 1.5)                           # reward outside [0,1]
    with pytest.raises(InputError):
        p.observe(good[0], good[1], None)                                    # rewards missing
    p.observe(*good)
    p.observe(*good)
    with pytest.raises(InputError):
        p.observe(*good)                                                     # more than K episodes
    with pytest.raises(InputError):
        cls().start(0, 1, 1, 1, 1, np.random.default_rng(0))
    with pytest.raises(InputError):
        cls().start(1, 1, 1, 1, 1, rng=42)


def test_games_use_two_families_and_no_rewards():
    p = CentralPrivatizer(1.0).start(2, 3, 2, 6, 8, np.random.default_rng(0), rewards=False)
    p.observe(np.zeros((2, 4), int), np.full((2, 3), 5), None)
    out = p.release()
    assert out.rewards is None and out.visits.shape == (2, 3, 2, 6)
    assert p.families == 2


# ------------------------------------------------------------------ loader
USER = textwrap.dedent('''
    import numpy as np
    from dpcheck.algorithms.privatizers import CountPrivatizer

    class Broken(CountPrivatizer):
        name = "broken"
        def _start_noise(self, rng):
            raise RuntimeError("boom")
        def _compute_width(self):
            return 1.0

    class NotAPrivatizer:
        def start(self):
            pass
''')


def test_load_builtins_and_files(tmp_path):
    assert isinstance(load_privatizer("central", epsilon=2.0), CentralPrivatizer)
    assert isinstance(load_privatizer("LOCAL"), LocalPrivatizer)
    assert isinstance(load_privatizer("none"), NoPrivatizer)
    assert isinstance(load_privatizer("dpcheck.algorithms.privatizers.central:CentralPrivatizer"), CentralPrivatizer)
    f = tmp_path / "mine.py"
    f.write_text(USER)
    with pytest.raises(InputError, match="no such file"):
        load_privatizer(str(tmp_path / "nope.py") + ":X")
    with pytest.raises(InputError, match="has no attribute .Missing."):
        load_privatizer(f"{f}:Missing")
    with pytest.raises(InputError, match="does not implement"):
        load_privatizer(f"{f}:NotAPrivatizer")
    notes = tmp_path / "notes.md"
    notes.write_text("# not python")
    with pytest.raises(InputError, match="not a Python file"):
        load_privatizer(f"{notes}:X")
    with pytest.raises(InputError, match="unknown privatizer"):
        load_privatizer("centrale")
    p = load_privatizer(f"{f}:Broken", epsilon=1.0)
    with pytest.raises(MechanismError, match="Broken.*RuntimeError.*boom"):
        p.start(1, 1, 2, 1, 2, np.random.default_rng(0))


def test_example_privatizer_file_runs():
    """docs/privatizers.md's complete example loads, starts, observes and releases valid counts."""
    import os
    path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "my_privatizer.py")
    p = load_privatizer(f"{path}:GaussianTreePrivatizer", epsilon=1.0)
    p.start(2, 3, 2, 2, 8, np.random.default_rng(0))
    for _ in range(3):
        p.observe(np.zeros((2, 4), int), np.ones((2, 3), int), np.full((2, 3), 0.5))
    out = p.release()
    assert np.all(out.transitions > 0)
    np.testing.assert_allclose(out.visits, out.transitions.sum(-1))
    assert p.claim.delta > 0


# ------------------------------------------------------------------ offline (DP-APVI)
def test_offline_gaussian_formulas_and_post_processing():
    rng = np.random.default_rng(5)
    priv = OfflineGaussianPrivatizer(rho=0.5, beta=0.1)
    H, S, A = 3, 4, 2
    assert priv.sigma(H) ** 2 == pytest.approx(2 * H / 0.5)                      # a variance (eq. 1)
    assert priv.width(H, S, A) == pytest.approx(4 * math.sqrt(H * math.log(4 * H * S * S * A / 0.1) / 0.5))
    st_ = rng.integers(0, S, (2000, 30, H + 1))
    ac = rng.integers(0, A, (2000, 30, H))
    pair, triple = dataset_counts(st_, ac, S, A)
    np.testing.assert_array_equal(pair, triple.sum(-1))
    out = priv.privatize(pair, triple, rng)
    assert np.all(out.noisy_visits >= 0) and np.all(out.transitions >= 0)
    np.testing.assert_allclose(out.visits, out.transitions.sum(-1))
    assert np.all(np.abs(out.visits - out.noisy_visits) <= out.width / 2 + 1e-9)
    P = out.kernel
    assert np.allclose(P.sum(-1), 1) and np.all(P >= 0)
    assert np.all(P[out.visits <= out.width] == 1 / S)
    # far from the clip at 0 the injected noise has the declared variance 2H/rho (noise variance)
    big = priv.privatize(np.full((500, H, S, A), 1e3), np.full((500, H, S, A, S), 1e3), rng)
    assert np.var(big.noisy_transitions - 1e3) == pytest.approx(priv.sigma(H) ** 2, rel=0.03)


def test_offline_laplace_and_conversions():
    priv = OfflineLaplacePrivatizer(epsilon=2.0)
    assert priv.scale(3) == pytest.approx(6.0)
    assert priv.width(3, 2, 2) == pytest.approx(12 * math.log(2 * 3 * 4 * 2 / 0.1))
    from dpcheck.accounting import pld_epsilon
    assert pld_epsilon(priv.dp_event(3)) == pytest.approx(2.0, abs=2e-3)
    g = OfflineGaussianPrivatizer.from_approx_dp(1.0, 1e-5)
    L = math.log(1e5)
    assert g.rho + 2 * math.sqrt(g.rho * L) == pytest.approx(1.0)
    with pytest.raises(InputError):
        OfflineGaussianPrivatizer(rho=-1)
    with pytest.raises(InputError):
        priv.privatize(-np.ones((1, 1, 2, 1)), np.zeros((1, 1, 2, 1, 2)), np.random.default_rng(0))


# ------------------------------------------------------------------ review (issue #3): loader messages
def test_module_that_raises_on_import_is_a_mechanism_error_naming_it(tmp_path, monkeypatch):
    """pkg.module:Class whose module raises (not ImportError) on import: MechanismError naming it,
    as for file.py:Class (before the fix the RuntimeError escaped as an internal error)."""
    (tmp_path / "badmod_p7.py").write_text("raise RuntimeError('boom at import')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(MechanismError, match="badmod_p7.*RuntimeError.*boom at import"):
        load_privatizer("badmod_p7:X")


def test_subclass_missing_a_hook_names_the_hook(tmp_path):
    """A CountPrivatizer subclass that forgets a hook: the message says which one (it was empty)."""
    f = tmp_path / "half.py"
    f.write_text("from dpcheck.algorithms.privatizers import CountPrivatizer\nclass Half(CountPrivatizer):\n    pass\n")
    p = load_privatizer(f"{f}:Half")
    with pytest.raises(MechanismError, match="Half.*_start_noise"):
        p.start(1, 1, 2, 1, 2, np.random.default_rng(0))
    with pytest.raises(MechanismError, match="Half.*claim"):
        p.claim
    with pytest.raises(MechanismError, match="Half.*dp_event"):
        p.dp_event()


def test_release_of_a_privatizer_without_sizes_is_a_mechanism_error(tmp_path):
    """A duck-typed user class whose start() does not record runs/H/S/A: release() validation must
    not crash with a bare AttributeError."""
    f = tmp_path / "duck.py"
    f.write_text(textwrap.dedent('''
        import numpy as np
        from dpcheck.algorithms.privatizers.base import PrivateCounts
        class Duck:
            def __init__(self, **kw): pass
            def start(self, runs, H, S, A, K, rng, rewards=True): return self
            def observe(self, *a): pass
            def release(self):
                z = np.zeros((1, 1, 2, 1))
                return PrivateCounts(z, z[..., None].repeat(2, -1), None, z, z[..., None].repeat(2, -1), 1.0)
            width = 1.0
            claim = None
            def dp_event(self, neighbouring="replacement"): return None
            def true_counts(self): return None
    '''))
    p = load_privatizer(f"{f}:Duck")
    p.start(1, 1, 2, 1, 2, np.random.default_rng(0))
    assert p.release().visits.shape == (1, 1, 2, 1)          # right sizes: accepted
    q = load_privatizer(f"{f}:Duck")
    q.start(3, 1, 2, 1, 2, np.random.default_rng(0))         # asked for 3 runs, returns 1
    with pytest.raises(MechanismError, match="Duck.*visits has shape"):
        q.release()


# ------------------------------------------------------------------ review (issue #3): widths, Nash values
def test_nash_rigorous_widths_equal_the_spec_closed_forms():
    """docs/derivations.md#widths-e: C = H S A B (S+1), m = C (K-1), paper b_c = 2 H L/eps, b_l = 2 H/eps:
    E_central = (16 H L/eps)(log(6m/beta) + L log(4/3)); E_local = 4 b_l sqrt(8 (K-1) log(6m/beta))."""
    H, S, AB, K, beta, eps = 10, 4, 9, 20_000, 0.1, 0.5
    m = H * S * AB * (S + 1) * (K - 1)
    L = 15
    lg = math.log(6 * m / beta)
    p = CentralPrivatizer(eps, beta=beta, calibration="paper").start(1, H, S, AB, K, np.random.default_rng(0),
                                                                     rewards=False)
    assert p.levels == L and p.node_scale() == pytest.approx(2 * H * L / eps)
    assert p.width == pytest.approx(16 * H * L / eps * (lg + L * math.log(4 / 3)), rel=1e-12)
    q = LocalPrivatizer(eps, beta=beta, calibration="paper").start(1, H, S, AB, K, np.random.default_rng(0),
                                                                   rewards=False)
    assert q.width == pytest.approx(4 * (2 * H / eps) * math.sqrt(8 * (K - 1) * lg), rel=1e-12)
    # strict doubles the scale and so the width
    r = CentralPrivatizer(eps, beta=beta).start(1, H, S, AB, K, np.random.default_rng(0), rewards=False)
    assert r.width == pytest.approx(2 * p.width, rel=1e-12)


def test_local_width_uses_bound_A_when_K_is_small():
    """(B) needs n >= log(2/delta); with K - 1 < log(6m/beta) the local width is bound (A)."""
    H, S, A, K, beta, b = 3, 3, 2, 8, 0.1, 2.0
    m = H * S * A * (S + 2) * (K - 1)
    lg = math.log(6 * m / beta)
    assert K - 1 < lg
    assert rigorous_width("local", H=H, S=S, A=A, K=K, scale=b, beta=beta) == pytest.approx(
        8 * b * (lg + (K - 1) * math.log(4 / 3)), rel=1e-12)


@pytest.mark.parametrize("mechanism,K", [("central", 64), ("local", 64), ("local", 6)])
def test_rigorous_width_achieves_assumption_3_1_by_monte_carlo(mechanism, K):
    """The good event |N^ - N| <= E/4 for every counter and release k = 2..K, simulated from the noise
    alone (data-independent, docs/derivations.md#widths-e) in R = 400 repetitions: 0 failures, and the exact (Clopper-Pearson)
    upper bound on the failure rate at confidence 0.99 is <= beta/3."""
    from scipy.stats import beta as beta_dist
    H, S, A, beta, R = 2, 3, 2, 0.1, 400
    cls = CentralPrivatizer if mechanism == "central" else LocalPrivatizer
    p = cls(1.0, beta=beta).start(1, H, S, A, K, np.random.default_rng(0))
    b = p.node_scale() if mechanism == "central" else p.noise_scale()
    sims = simulate_max_noise(mechanism, counters=H * S * A * (S + 2), K=K, scale=b, reps=R,
                              rng=np.random.default_rng(11))
    failures = int(np.sum(sims > p.width / 4))
    upper = beta_dist.ppf(0.99, failures + 1, R - failures)
    assert failures == 0 and upper <= beta / 3


@pytest.mark.parametrize("make", [lambda: OfflineGaussianPrivatizer("x"), lambda: OfflineGaussianPrivatizer(None),
                                  lambda: OfflineLaplacePrivatizer("1e"), lambda: OfflineGaussianPrivatizer(1.0, beta="b"),
                                  lambda: OfflineGaussianPrivatizer.from_approx_dp("a", 1e-5),
                                  lambda: OfflineGaussianPrivatizer.from_approx_dp(1.0, 1.0)])
def test_offline_bad_numbers_are_input_errors(make):
    """Non-numeric budgets raised ValueError/TypeError (exit 'internal error') before the review fix."""
    with pytest.raises(InputError):
        make()


@pytest.mark.parametrize("K", [2, 3, 64, 100])
def test_simulated_max_noise_is_the_tree_and_the_local_sums_on_zero_data(K):
    """simulate_max_noise draws the privatizers' noise in their order and must reproduce their releases:
    the binary mechanism's B(t) (resp. the running sum of the local noise) on all-zero data."""
    from dpcheck.algorithms.privatizers.binary_mechanism import BinaryMechanism, TreeCounter
    from dpcheck.algorithms.privatizers.noise import laplace
    c, b = 7, 2.5
    tree = BinaryMechanism(TreeCounter(horizon=K, node_scale=b), (c,), np.random.default_rng(4))
    worst = 0.0
    for _ in range(K - 1):
        tree.step(np.zeros(c))
        worst = max(worst, float(np.abs(tree.release()).max()))
    sim = simulate_max_noise("central", counters=c, K=K, scale=b, reps=1, rng=np.random.default_rng(4), block=10)
    assert sim[0] == pytest.approx(worst, rel=1e-12)
    rng = np.random.default_rng(5)
    local = np.abs(np.cumsum(np.stack([laplace(rng, b, c) for _ in range(K - 1)]), axis=0)).max()
    sim = simulate_max_noise("local", counters=c, K=K, scale=b, reps=1, rng=np.random.default_rng(5), block=10)
    assert sim[0] == pytest.approx(local, rel=1e-12)
