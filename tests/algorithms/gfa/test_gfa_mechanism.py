"""Exponential mechanism of He & Zhou 2026, Section 2.2/Section 3.3, docs/derivations.md#noise-calibration: closed form vs empirical frequencies,
log-sum-exp stability, beta = inf argmax, the factor 2 of the temperature's backward messages, and the EM's pure DP."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats
from scipy.special import logsumexp

from dpcheck.errors import InputError
from dpcheck.algorithms.gfa import (
    BellmanErrorStatistics, PrivateGeneralMDP, PrivateOutcomeRL, appendix_d, argmax_with_ties,
    bellman_error_score, chain_log_partition, chain_sample, exponential_mechanism, gf3,
    selection_log_probabilities,
)


def _chi2_p(counts, probs):
    keep = probs > 0
    return stats.chisquare(counts[keep], probs[keep] * counts.sum()).pvalue


def test_empirical_frequencies_match_the_closed_form():
    rng = np.random.default_rng(1)
    scores = np.array([[3.0, 1.0, 0.0, -2.0, 2.5, 2.5]])
    beta = 0.7
    p = np.exp(selection_log_probabilities(scores, beta))[0]
    draws = exponential_mechanism(np.repeat(scores, 40_000, axis=0), beta, rng)
    counts = np.bincount(draws, minlength=6)
    assert _chi2_p(counts, p) > 1e-3
    # per entry: exact binomial two-sided test at a fixed seed
    for j in range(6):
        assert stats.binomtest(int(counts[j]), 40_000, p[j]).pvalue > 1e-4


def test_log_sum_exp_is_stable_at_huge_scores():
    scores = np.array([[1e6, 1e6 - 1.0, -1e6, 5e5], [1e300, 1e300, 0.0, -1e300]])
    with np.errstate(over="raise", invalid="raise"):
        lp = selection_log_probabilities(scores, 1.0)
    assert np.all(np.isfinite(lp[0, [0, 1, 3]]))
    np.testing.assert_allclose(np.exp(lp[0, :2]), [1 / (1 + math.exp(-1)), math.exp(-1) / (1 + math.exp(-1))])
    np.testing.assert_allclose(np.exp(logsumexp(lp, axis=1)), 1.0)
    np.testing.assert_allclose(np.exp(lp[1, :2]), 0.5)
    draws = exponential_mechanism(np.repeat(scores[:1], 5000, axis=0), 1.0, np.random.default_rng(0))
    assert set(np.unique(draws)) <= {0, 1}
    assert abs(np.mean(draws == 0) - 1 / (1 + math.exp(-1))) < 0.03


def test_beta_inf_is_the_argmax_with_the_tie_rule():
    scores = np.array([[1.0, 3.0, 3.0, 2.0]] * 4000)
    lowest = exponential_mechanism(scores, math.inf, np.random.default_rng(0), "lowest")
    assert np.all(lowest == 1)
    rnd = exponential_mechanism(scores, math.inf, np.random.default_rng(0), "random")
    assert set(np.unique(rnd)) == {1, 2} and abs(np.mean(rnd == 1) - 0.5) < 0.03
    lp = selection_log_probabilities(scores[:1], math.inf)
    np.testing.assert_allclose(np.exp(lp), [[0, 0.5, 0.5, 0]])
    np.testing.assert_array_equal(argmax_with_ties(scores[:3], None, "lowest"), [1, 1, 1])


def test_large_beta_approaches_the_argmax():
    scores = np.array([[0.0, 1.0, 0.5]] * 100)
    assert np.all(exponential_mechanism(scores, 1e6, np.random.default_rng(3)) == 1)


def test_bad_mechanism_inputs():
    with pytest.raises(InputError):
        selection_log_probabilities(np.zeros((2, 0)), 1.0)
    with pytest.raises(InputError):
        exponential_mechanism(np.array([[np.nan, 1.0]]), 1.0, np.random.default_rng(0))
    with pytest.raises(InputError):
        exponential_mechanism(np.array([[0.0, 1.0]]), -1.0, np.random.default_rng(0))
    with pytest.raises(InputError):
        argmax_with_ties(np.array([[0.0, 1.0]]), None, "highest")


class _NoFactorTwo(PrivateOutcomeRL):
    """Planted defect: temperature eps0 / Delta_S (the factor 2 on the sensitivity dropped)."""

    def _temperature(self, privacy):
        return privacy.eps0 / privacy.sensitivity


def test_temperature_has_the_factor_two_and_a_planted_variant_is_detectable():
    inst = appendix_d("easy", H=2)
    K = 40
    good = PrivateOutcomeRL(inst.fclass, epsilon=2.0, delta=1e-5, B=10)
    bad = _NoFactorTwo(inst.fclass, epsilon=2.0, delta=1e-5, B=10)
    decl = good.privacy(K)
    assert good.temperature(K) == pytest.approx(decl.eps0 / (2 * decl.sensitivity))
    assert bad.privacy(K) == decl                         # the declaration cannot see the defect ...
    rng = np.random.default_rng(5)
    # declared Pr[f] propto e^{-0.2 f}; the planted temperature makes it e^{-0.4 f}
    scores = np.tile(-np.arange(inst.fclass.N, dtype=float) * 0.2 / decl.beta_em, (30_000, 1))
    declared = np.exp(selection_log_probabilities(scores[:1], decl.beta_em))[0]
    good_counts = np.bincount(good.select(scores, K, rng), minlength=inst.fclass.N)
    bad_counts = np.bincount(bad.select(scores, K, rng), minlength=inst.fclass.N)
    assert _chi2_p(good_counts, declared) > 1e-3
    assert _chi2_p(bad_counts, declared) < 1e-9           # ... the selection frequencies can


# ------------------------------------------------------------------------------------ backward messages
def _random_chain(rng, runs, sizes):
    u = rng.normal(size=(runs, sizes[0])) * 3
    losses = [rng.exponential(2.0, size=(runs, sizes[h], sizes[h + 1] if h + 1 < len(sizes) else 1))
              for h in range(len(sizes))]
    return u, losses


def _enumerated_scores(u, losses, sizes):
    grid = np.indices(sizes).reshape(len(sizes), -1)
    total = u[:, grid[0]]
    for h in range(len(sizes)):
        nxt = grid[h + 1] if h + 1 < len(sizes) else np.zeros(grid.shape[1], dtype=int)
        total = total - losses[h][:, grid[h], nxt]
    return total


@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(1, 4), min_size=1, max_size=4), beta=st.floats(0.0, 5.0), seed=st.integers(0, 99))
def test_chain_partition_function_equals_enumeration(sizes, beta, seed):
    u, losses = _random_chain(np.random.default_rng(seed), 2, sizes)
    S = _enumerated_scores(u, losses, sizes)
    np.testing.assert_allclose(chain_log_partition(u, losses, beta), logsumexp(beta * S, axis=1), rtol=1e-10,
                               atol=1e-10)


def test_chain_sampler_frequencies_and_argmax():
    rng = np.random.default_rng(11)
    sizes = (3, 2, 4)
    u, losses = _random_chain(rng, 1, sizes)
    S = _enumerated_scores(u, losses, sizes)
    beta = 0.6
    p = np.exp(selection_log_probabilities(S, beta))[0]
    reps = 30_000
    draws = chain_sample(np.repeat(u, reps, 0), [np.repeat(l, reps, 0) for l in losses], beta, rng)
    counts = np.bincount(np.ravel_multi_index(draws.T, sizes), minlength=S.shape[1])
    assert _chi2_p(counts, p) > 1e-3
    best = chain_sample(u, losses, math.inf, rng)
    assert np.ravel_multi_index(best.T, sizes)[0] == np.argmax(S[0])


def test_messages_sampler_equals_enumeration_in_a_run():
    """Same EM distribution: the message sampler's draws at update 2 follow the enumerated closed form."""
    inst = gf3()
    K, B, runs = 6, 3, 20_000
    kw = dict(epsilon=40.0, delta=1e-5, B=B, eta=1.0)
    msg = PrivateGeneralMDP(inst.fclass, sampler="messages", **kw)
    res = msg.run(inst.mdp, K, np.random.default_rng(2), runs=1, record_scores=True)
    # the second update's distribution given the first batch's data, enumerated vs sampled by messages
    stats_ = BellmanErrorStatistics(inst.fclass, 1)
    stats_.add(res.states[:, :B], res.actions[:, :B], res.rewards[:, :B])
    opt = msg._optimism(0)
    beta = msg.temperature(K)
    S = msg.score(stats_, opt)
    np.testing.assert_allclose(S[0], res.scores[0, 1])
    rep = BellmanErrorStatistics(inst.fclass, runs)
    rep.add(*(np.repeat(x, runs, axis=0) for x in (res.states[:, :B], res.actions[:, :B], res.rewards[:, :B])))
    draws = msg._choose(rep, opt, beta, np.random.default_rng(9))
    p = np.exp(selection_log_probabilities(S, beta))[0]
    assert _chi2_p(np.bincount(draws, minlength=inst.fclass.N), p) > 1e-3


# ----------------------------------------------------------------------------------------------- EM pure DP
@pytest.mark.slow
def test_em_is_eps0_pure_dp_on_neighbouring_datasets():
    """EM pure DP: |ln Pr_D(f) - ln Pr_D'(f)| <= eps0 for random neighbouring GF-3 datasets (exact log-softmax)."""
    inst = gf3()
    agent = PrivateGeneralMDP(inst.fclass, epsilon=1.0, B=5)
    K = 50
    decl = agent.privacy(K)
    rng = np.random.default_rng(4)
    worst = 0.0
    for _ in range(20):
        n = 8
        s = rng.integers(3, size=(n, 4))
        a = rng.integers(2, size=(n, 3))
        r = rng.dirichlet(np.ones(4), size=n)[:, :3]           # r_h >= 0, sum_h r_h <= 1
        s2, a2, r2 = s.copy(), a.copy(), r.copy()
        s2[0], a2[0] = rng.integers(3, size=4), rng.integers(2, size=3)
        r2[0] = np.eye(4)[rng.integers(4)][:3]
        S1 = bellman_error_score(inst.fclass, s, a, r, eta=2.0, s1=0)
        S2 = bellman_error_score(inst.fclass, s2, a2, r2, eta=2.0, s1=0)
        assert np.max(np.abs(S1 - S2)) <= 8 * 3 + 1e-9         # Delta_S = 8H
        lp1 = selection_log_probabilities(S1[None], decl.beta_em)
        lp2 = selection_log_probabilities(S2[None], decl.beta_em)
        worst = max(worst, float(np.max(np.abs(lp1 - lp2))))
    assert worst <= decl.eps0 + 1e-12
