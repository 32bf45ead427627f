"""DP-APVI / APVI, the offline dataset type and the tabular instances (Qiao & Wang 2022, Algorithm 1)."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dpcheck.errors import InputError
from dpcheck.algorithms.envs.planning import policy_values, suboptimality
from dpcheck.algorithms.privatizers.offline import dataset_counts
from dpcheck.algorithms.offline import (
    APVI, DPAPVI, OfflineDataset, PenaltyConstants, appendix_f, lin_tab, penalty, sample_counts, tab_full,
    tab_partial,
)

RESULT_ARRAYS = ("policy", "values", "q_values", "q_tilde", "penalties", "variances", "kernel")


def _equal(a, b):
    return all(np.array_equal(getattr(a, k), getattr(b, k)) for k in RESULT_ARRAYS)


# ------------------------------------------------------------------------------------------ dataset
def test_counts_match_the_reference_counter_and_reward_sums():
    rng = np.random.default_rng(1)
    inst = tab_full(rng, S=3, A=2, H=4)
    data = inst.collect(300, rng, runs=3)
    c = data.counts()
    pair, triple = dataset_counts(data.states, data.actions, 3, 2)     # the privatizers' np.add.at counter
    assert np.array_equal(c.visits, pair) and np.array_equal(c.transitions, triple)
    # deterministic rewards: the sum over the visits of (h, s, a) is r_h(s,a) n_h(s,a)
    assert np.allclose(c.reward_sums, c.visits * inst.mdp.r)
    assert np.all(c.visits.sum(axis=(2, 3)) == 300)


@pytest.mark.parametrize("block", [1, 7, 8192])
def test_count_engines_agree_across_block_and_run_boundaries(monkeypatch, block):
    """The numpy path counts in blocks of trajectories that may straddle runs; the compiled kernel in one
    pass: both must give the reference counts and the same reward sums (also on D, D' views of a split)."""
    import dpcheck.algorithms.offline.dataset as ds
    monkeypatch.setattr(ds, "_BLOCK_ROWS", block)
    rng = np.random.default_rng(13)
    inst = tab_full(rng, S=3, A=2, H=3)
    data = OfflineDataset.collect(inst.mdp.with_reward_noise("bernoulli"), inst.behaviour, 20, rng, runs=4)
    for d in (data, data.split()[1]):
        pair, triple = dataset_counts(d.states, d.actions, 3, 2)
        num, comp = d.counts(engine="numpy"), d.counts(engine="compiled")
        for c in (num, comp):
            assert np.array_equal(c.visits, pair) and np.array_equal(c.transitions, triple)
        ref = np.zeros_like(num.reward_sums)
        for r in range(d.runs):
            for i in range(d.n):
                for h in range(d.H):
                    ref[r, h, d.states[r, i, h], d.actions[r, i, h]] += d.rewards[r, i, h]
        assert np.allclose(num.reward_sums, ref) and np.allclose(comp.reward_sums, ref)
        assert d.counts(engine="numpy", rewards=False).reward_sums is None
    with pytest.raises(InputError):
        data.counts(engine="fast")


def test_sample_counts_has_the_law_of_simulated_counts():
    """The sequential-multinomial sampler and simulated trajectories both have mean n d^mu_h(s,a)."""
    rng = np.random.default_rng(2)
    inst = tab_full(rng, S=3, A=2, H=3)
    n, runs = 2000, 200
    d_mu = inst.coverage().d_mu
    direct = sample_counts(inst.mdp, inst.behaviour, n, rng, runs=runs)
    simulated = inst.collect(n, rng, runs=runs).counts()
    for c in (direct, simulated):
        assert np.all(c.transitions.sum(axis=(2, 3, 4)) == n)
        se = np.sqrt(n * d_mu * (1 - d_mu) / runs)
        assert np.all(np.abs(c.visits.mean(axis=0) - n * d_mu) <= 5 * se + 1e-9)
    # step h+1's state counts are step h's next-state counts (one trajectory = one chain)
    assert np.array_equal(direct.transitions[:, :-1].sum(axis=(2, 3)), direct.visits[:, 1:].sum(axis=-1))


def test_split_halves_and_odd_n():
    rng = np.random.default_rng(3)
    data = tab_full(rng).collect(10, rng, runs=2)
    D, Dp = data.split()
    assert D.n == Dp.n == 5 and np.array_equal(D.states, data.states[:, :5]) and np.array_equal(Dp.actions, data.actions[:, 5:])
    with pytest.raises(InputError):
        tab_full(rng).collect(7, rng).split()


def test_from_arrays_accepts_a_single_run_and_lists():
    d = OfflineDataset.from_arrays([[0, 1, 1], [1, 0, 0]], [[1, 0], [0, 0]], [[0.5, 1.0], [0.0, 0.25]], S=2, A=2)
    assert (d.runs, d.n, d.H) == (1, 2, 2)
    assert d.counts().visits[0, 0, 0, 1] == 1


BAD_INPUTS = {
    "state out of range": lambda: OfflineDataset.from_arrays([[0, 2]], [[0]], S=2, A=2),
    "negative action": lambda: OfflineDataset.from_arrays([[0, 1]], [[-1]], S=2, A=2),
    "fractional state": lambda: OfflineDataset.from_arrays([[0.5, 1.0]], [[0]], S=2, A=2),
    "ragged episodes": lambda: OfflineDataset.from_arrays([[0, 1, 1], [0, 1]], [[0, 0], [0]], S=2, A=2),
    "states/actions disagree": lambda: OfflineDataset.from_arrays([[0, 1, 1]], [[0]], S=2, A=2),
    "NaN reward": lambda: OfflineDataset.from_arrays([[0, 1]], [[0]], [[float("nan")]], S=2, A=2),
    "reward above 1": lambda: OfflineDataset.from_arrays([[0, 1]], [[0]], [[1.5]], S=2, A=2),
    "reward shape": lambda: OfflineDataset.from_arrays([[0, 1]], [[0]], [[0.5, 0.5]], S=2, A=2),
    "rho = 0": lambda: DPAPVI(rho=0.0),
    "rho < 0": lambda: DPAPVI(rho=-1.0),
    "rho NaN": lambda: DPAPVI(rho=float("nan")),
    "rho and epsilon": lambda: DPAPVI(rho=1.0, epsilon=1.0),
    "no budget": lambda: DPAPVI(),
    "epsilon <= 0": lambda: DPAPVI(epsilon=0.0),
    "delta = 1": lambda: DPAPVI(rho=1.0, delta=1.0),
    "C <= 1": lambda: DPAPVI(rho=1.0, C=1.0),
    "unknown penalty": lambda: DPAPVI(rho=1.0, penalty="ucb"),
    "S = 0": lambda: OfflineDataset.from_arrays([[0, 0]], [[0]], S=0, A=1),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_inputs_give_one_line_input_errors(case):
    with pytest.raises(InputError) as e:
        BAD_INPUTS[case]()
    assert "\n" not in str(e.value) and str(e.value)


def test_bad_run_inputs():
    rng = np.random.default_rng(4)
    inst = tab_full(rng)
    data = inst.collect(5, rng)
    for call in (lambda: DPAPVI(rho=1.0).run(data, np.zeros((2, 2, 2)), rng),          # reward shape
                 lambda: DPAPVI(rho=1.0).run(data, inst.mdp.r + 1.0, rng),             # reward > 1
                 lambda: DPAPVI(rho=1.0).run(data.states, inst.mdp, rng),              # not a dataset
                 lambda: DPAPVI(rho=1.0).run(data, inst.mdp, 0)):                      # not a Generator
        with pytest.raises(InputError) as e:
            call()
        assert "\n" not in str(e.value)


# ------------------------------------------------------------------------------------------ instances
def test_instances_and_their_figures():
    rng = np.random.default_rng(5)
    full = tab_full(rng, S=3, A=2, H=3)
    cov = full.coverage()
    assert cov.covered.all() and cov.assumption_2_1 and cov.dbar_m > 0
    assert lin_tab(full).feature_figures().kappa == pytest.approx(cov.dbar_m)          # LIN-TAB
    part = tab_partial(rng, S=3, A=3, H=3)
    pc = part.coverage()
    assert pc.assumption_2_1 and not pc.covered.all()
    f = appendix_f(rng)
    ff = f.feature_figures()
    assert ff.max_norm ** 2 == pytest.approx(7.0) and not ff.norm_ok                   # ||phi|| <= 1 fails
    assert ff.kappa == 0.0 and ff.dead_coordinates == (7,) and ff.next_eigenvalue > 0   # kappa = 0 (Appendix F)
    assert f.mdp.S == 2 and f.mdp.A == 100 and f.d == 10 and f.mdp.H == 20
    # P_h(0|s,a) depends on (s,a) only through delta(s,a) (Appendix F)
    alpha = f.params["alpha"]
    assert np.allclose(f.mdp.P[:, 0, 0, 0], alpha[:, 0]) and np.allclose(f.mdp.P[:, 0, 1, 0], alpha[:, 1])
    assert np.allclose(f.mdp.P[:, 1, 0, 0], alpha[:, 1]) and np.allclose(f.mdp.P[:, 1, 5, 0], alpha[:, 0])


# ------------------------------------------------------------------------------------------ post-processing
@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2 ** 31), st.sampled_from([0.01, 1.0, 100.0]), st.integers(1, 4), st.booleans())
def test_private_counts_are_consistent_and_the_kernel_is_valid(seed, budget, S, laplace):
    """eqs. 3-4-2.5 (eq. 5, Remark 3.3): ntil >= 0, ntil(s,a) = sum ntil(s,a,.), |ntil(s,a) - n'(s,a)| <= E/2, rows of
    P~ are distributions, uniform exactly where ntil <= E -- on small, sparse data where noise dominates."""
    rng = np.random.default_rng(seed)
    inst = tab_full(rng, S=S, A=2, H=2)
    counts = inst.sample_counts(int(rng.integers(1, 50)), rng, runs=3)
    alg = DPAPVI(epsilon=budget) if laplace else DPAPVI(rho=budget)
    res = alg.run(counts, inst.mdp, rng)
    pc, E = res.counts, res.width
    assert np.all(pc.transitions >= 0)
    assert np.allclose(pc.visits, pc.transitions.sum(-1))
    assert np.all(np.abs(pc.visits - pc.noisy_visits) <= E / 2 * (1 + 1e-12) + 1e-9)
    assert np.all(res.kernel >= 0) and np.allclose(res.kernel.sum(-1), 1.0)
    fallback = pc.visits <= E
    assert np.all(res.kernel[fallback] == 1.0 / S)
    assert np.all(res.penalties[fallback] == alg.constants.C * 2)
    assert np.all(res.q_values[fallback] == 0.0)
    assert np.all((res.q_values >= 0) & (res.q_values <= 2 - np.arange(2)[None, :, None, None]))


# ------------------------------------------------------------------------------------------ noise off = APVI
@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2 ** 31), st.integers(1, 3), st.integers(1, 3), st.integers(1, 3))
def test_noise_off_dp_apvi_is_apvi_exactly(seed, S, A, H):
    """rho = inf (and epsilon = inf) is the same code as APVI: bit-identical. rho = 1e300 (noise std ~1e-150)
    gives the same policy and values to 1e-12: the noise vanishes in the rounding of non-zero counts, but a
    zero count becomes ~1e-150, so P~ may differ from P^ in the last bits."""
    rng = np.random.default_rng(seed)
    inst = tab_full(rng, S=S, A=A, H=H)
    counts = inst.sample_counts(int(rng.integers(1, 5000)), rng, runs=2)
    ref = APVI().run(counts, inst.mdp, rng)
    assert ref.width == 0.0 and np.array_equal(ref.counts.visits, counts.visits)
    assert np.array_equal(ref.kernel, counts.empirical_kernel())                       # Phat with the 1/S fallback
    for alg in (DPAPVI(rho=math.inf, C2=7 / 3, second_order_floor=1.0),
                DPAPVI(epsilon=math.inf, C2=7 / 3, second_order_floor=1.0)):
        assert _equal(alg.run(counts, inst.mdp, rng), ref), alg
    huge = DPAPVI(rho=1e300, C2=7 / 3, second_order_floor=1.0).run(counts, inst.mdp, rng)
    assert huge.width < 1e-140 and np.array_equal(huge.policy, ref.policy)
    assert np.allclose(huge.values, ref.values, rtol=0, atol=1e-12)
    assert np.allclose(huge.penalties, ref.penalties, rtol=1e-12, atol=1e-12)
    # with the paper's literal constants the huge-rho run is APVI's literal reduction up to E ~ 1e-149
    lit = DPAPVI(rho=1e300).run(counts, inst.mdp, rng)
    off = DPAPVI(rho=math.inf).run(counts, inst.mdp, rng)
    assert np.array_equal(lit.policy, off.policy) and np.allclose(lit.values, off.values, rtol=0, atol=1e-12)


def test_apvi_penalty_is_the_a5_formula():
    rng = np.random.default_rng(6)
    inst = tab_full(rng, S=3, A=2, H=3)
    counts = inst.sample_counts(400, rng)
    res = APVI(delta=0.05).run(counts, inst.mdp, rng)
    h, iota, n = 1, res.iota, counts.visits[0, 1]
    P = counts.empirical_kernel()[0, 1]
    V = res.values[0, 2]
    var = np.einsum("sat,t->sa", P, V ** 2) - np.einsum("sat,t->sa", P, V) ** 2
    expect = np.sqrt(2 * np.maximum(var, 0) * iota / n) + 7 / 3 * 3 * iota / n
    assert iota == pytest.approx(math.log(3 * 3 * 2 / 0.05))
    assert np.allclose(res.penalties[0, h], np.where(n > 0, expect, 2 * 3))


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2 ** 31), st.floats(0.0, 50.0), st.floats(1.0, 10.0))
def test_hoeffding_penalty_dominates_bernstein(seed, E, iota):
    """eq. 8: H sqrt(iota/(n-E)) >= sqrt(Var iota/(n-E)) because Var(V) <= H^2 for 0 <= V <= H."""
    rng = np.random.default_rng(seed)
    H, S, A = 4, 3, 2
    P = rng.dirichlet(np.ones(S), size=(2, S, A))
    n = rng.integers(0, 200, size=(2, S, A)).astype(float)
    V = rng.uniform(0, H, size=(2, S))
    b, _ = penalty(P, n, V, E=E, iota=iota, H=H, constants=PenaltyConstants("bernstein"))
    h, _ = penalty(P, n, V, E=E, iota=iota, H=H, constants=PenaltyConstants("hoeffding"))
    assert np.all(h >= b - 1e-12)


def test_naive_consistency_ablation_has_inconsistent_sums():
    """Remark 3.1: without eqs. 3-4, ntil(s,a) = sum_s' n'(s,a,s') drifts from n'(s,a) beyond E/2."""
    rng = np.random.default_rng(7)
    inst = tab_full(rng, S=8, A=2, H=2)
    counts = inst.sample_counts(10, rng, runs=20)
    lp = DPAPVI(rho=0.1).run(counts, inst.mdp, np.random.default_rng(8))
    naive = DPAPVI(rho=0.1, consistency="naive").run(counts, inst.mdp, np.random.default_rng(8))
    assert np.array_equal(naive.counts.noisy_transitions, lp.counts.noisy_transitions)   # same draws
    assert np.max(np.abs(lp.counts.visits - lp.counts.noisy_visits)) <= lp.width / 2 + 1e-9
    assert np.max(np.abs(naive.counts.visits - naive.counts.noisy_visits)) > naive.width / 2


# ------------------------------------------------------------------------------------------ calibration
def test_gaussian_noise_scale_comes_from_rho_not_epsilon():
    """sigma^2 = 2H/rho (eq. 2): declared (privatizer and dp_event) and empirical variance agree, and they
    are not the (eps, delta_dp) Gaussian calibration sigma = sqrt(2H) sqrt(2 log(1.25/delta_dp))/eps."""
    import dp_accounting
    rng = np.random.default_rng(9)
    H, rho = 3, 0.5
    inst = tab_full(rng, S=2, A=2, H=H)
    counts = inst.sample_counts(10 ** 6, rng, runs=200)        # counts ~1e5: clipping at 0 never binds
    alg = DPAPVI(rho=rho)
    res = alg.run(counts, inst.mdp, rng)
    declared = alg.privatizer.sigma(H) ** 2
    assert declared == pytest.approx(2 * H / rho)
    ev = res.dp_event
    assert isinstance(ev, dp_accounting.ComposedDpEvent) and len(ev.events) == 2
    assert sum(1 / (2 * e.noise_multiplier ** 2) for e in ev.events) == pytest.approx(rho)   # rho/2 per family
    noise = np.concatenate([(res.counts.noisy_visits - counts.visits).ravel(),
                            (res.counts.noisy_transitions - counts.transitions).ravel()])
    m = noise.size                                            # 200 * (12 + 24) = 7200 draws
    var = noise.var()
    assert abs(var / declared - 1) < 5 * math.sqrt(2 / m)
    eps_calibrated = 2 * H * 2 * math.log(1.25 / 1e-5) / 1.0 ** 2
    assert abs(var / eps_calibrated - 1) > 0.5
    # Laplace: Lap(4H/eps) has variance 2 (4H/eps)^2 (docs/derivations.md#noise-calibration)
    lap = DPAPVI(epsilon=2.0).run(counts, inst.mdp, rng)
    lnoise = (lap.counts.noisy_transitions - counts.transitions).ravel()
    assert abs(lnoise.var() / (2 * (4 * H / 2.0) ** 2) - 1) < 0.15


def test_approx_dp_conversion():
    alg = DPAPVI.from_approx_dp(1.0, 1e-5)
    L = math.log(1e5)
    assert alg.rho == pytest.approx((math.sqrt(L + 1) - math.sqrt(L)) ** 2)
    assert alg.rho + 2 * math.sqrt(alg.rho * L) == pytest.approx(1.0)                  # Lemma E.15 round trip


# ------------------------------------------------------------------------------------------ utility
def test_pessimism_on_tab_full_in_the_large_data_regime():
    """Lemma C.10: Vtil_h <= V^{pi_hat}_h and Qbar_h <= Q^{pi_hat}_h (exact evaluation). The proof's events cost
    about 4 delta (Theorem 3.4); with delta = 0.01 at most 4% of runs may fail, so >= 45 of 50 runs must hold
    (were the true failure rate 4%, P[> 5 failures of 50] ~ 0.02; the union bounds are loose, so ~0 is
    usual). n = 1e6 puts every pair far above 3 E_rho (no gap pairs; asserted)."""
    rng = np.random.default_rng(10)
    inst = tab_full(rng, S=2, A=2, H=3)
    counts = inst.sample_counts(10 ** 6, rng, runs=50)
    for alg in (DPAPVI(rho=1.0, delta=0.01), DPAPVI(epsilon=1.0, delta=0.01)):
        res = alg.run(counts, inst.mdp, rng)
        assert np.all(res.counts.visits >= 3 * res.width)
        Q, V = policy_values(inst.mdp, res.policy)
        ok = np.all(res.values <= V + 1e-12, axis=(1, 2)) & np.all(res.q_values <= Q + 1e-12, axis=(1, 2, 3))
        assert ok.sum() >= 45, (alg, ok.sum())
        assert np.all(res.q_values <= res.q_tilde)


def test_suboptimality_decreases_with_n():
    """Mean v* - v^{pi_hat} over 40 runs falls along n (Theorem 3.4: O(n^-1/2) + O(1/n)); exact evaluation.
    With the paper's penalties the gap is a step function of n per run (docs/derivations.md#constants: Qbar = 0 until Gamma drops
    below Qtil, then pi_hat = pi*); the grids straddle that step (DP-APVI at rho = 1 near n ~ 4e5 on this
    instance, APVI near n ~ 1e3), and the run average must fall monotonically across it."""
    rng = np.random.default_rng(11)
    inst = tab_full(rng, S=4, A=3, H=3)
    grids = {"DP-APVI": [10 ** 4, 2 * 10 ** 5, 4 * 10 ** 5, 8 * 10 ** 5, 10 ** 7],
             "APVI": [30, 300, 1000, 3000, 10 ** 5]}
    for alg in (DPAPVI(rho=1.0), APVI()):
        gaps = [suboptimality(inst.mdp, alg.run(inst.sample_counts(n, rng, runs=40), inst.mdp, rng).policy).mean()
                for n in grids[alg.name]]
        assert all(b <= a + 0.01 for a, b in zip(gaps, gaps[1:])), (alg, gaps)
        assert gaps[0] > 0.1 and gaps[-1] < 0.05 * gaps[0], (alg, gaps)


def test_partial_coverage_exercises_the_fallback():
    """TAB-PARTIAL: uncovered pairs have ntil <= E (large n), get Gamma = C H, Qbar = 0 and the uniform
    kernel, and pi_hat never picks them where a covered action has a positive value."""
    rng = np.random.default_rng(12)
    inst = tab_partial(rng, S=2, A=3, H=3)
    res = DPAPVI(rho=1.0).run(inst.sample_counts(10 ** 6, rng, runs=5), inst.mdp, rng)
    unc = np.broadcast_to(~inst.coverage().covered, res.q_values.shape)
    assert unc.any()
    assert np.all(res.penalties[unc] == 2.0 * 3) and np.all(res.q_values[unc] == 0)
    assert np.all(res.kernel[unc] == 1 / 2)
    chosen_uncovered = np.take_along_axis(unc, res.policy[..., None], -1)[..., 0]
    assert not np.any(chosen_uncovered & (res.values[:, :3] > 0))
