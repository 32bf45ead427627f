"""The odds-ratio event bound of the black box (dpcheck.stats.odds_eps_bound; docs/blackbox_bounds.md)."""
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.stats import binom, nchypergeom_fisher

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from examples import mechanisms as M  # noqa: E402

from dpcheck import AuditTarget, Claim, stats  # noqa: E402
from dpcheck.blackbox import audit  # noqa: E402
from dpcheck.errors import InputError  # noqa: E402


@pytest.mark.parametrize("k1,k2,n", [(9, 3, 20), (15, 0, 30), (20, 12, 40)])
def test_odds_ratio_lower_is_the_exact_conditional_bound(k1, k2, n):
    # at psi_lo the conditional upper tail P(K1 >= k1 | K1 + K2 = m) is alpha (Fisher's noncentral
    # hypergeometric law, computed independently by scipy on these small tables)
    alpha = 0.05
    psi = stats.odds_ratio_lower(k1, k2, n, alpha)
    tail = nchypergeom_fisher.sf(k1 - 1, 2 * n, n, k1 + k2, psi)
    assert tail == pytest.approx(alpha, rel=1e-6)
    assert nchypergeom_fisher.sf(k1 - 1, 2 * n, n, k1 + k2, psi * 1.01) > alpha


def test_odds_ratio_lower_survives_an_underflowing_tail():
    # the bracket search visits odds where P(K1 >= k1 | m) underflows; that is log 0, not an error
    psi = stats.odds_ratio_lower(3834, 3338, 7500, 0.045)
    assert 1.1 < psi < 1.3


@pytest.mark.parametrize("k1,k2,n", [(38347, 34726, 75000), (3750, 0, 7500), (900, 700, 100_000)])
def test_odds_ratio_lower_window_changes_nothing(k1, k2, n, monkeypatch):
    # the support is cut to ODDS_WINDOW standard deviations around k1 (speed at 10^6-10^7 per side): the
    # bound equals the one over the whole support
    cut = stats.odds_ratio_lower(k1, k2, n, 0.045)
    monkeypatch.setattr(stats, "ODDS_WINDOW", 1e9)
    assert cut == pytest.approx(stats.odds_ratio_lower(k1, k2, n, 0.045), rel=1e-9)


def test_odds_ratio_lower_uninformative_counts():
    assert stats.odds_ratio_lower(0, 3, 100, 0.05) == 0.0
    assert stats.odds_ratio_lower(100, 100, 100, 0.05) == 0.0
    assert stats.odds_eps_bound(0, 3, 100, 0.05) == -math.inf


# (q, eps, delta): events whose ratio is exactly the claimed one (the worst case for validity)
WORST = [(0.45, 0.1, 0.0), (0.01, 1.0, 0.0), (1e-3, 2.0, 0.0), (0.02, 0.5, 1e-3), (0.3, 0.2, 0.05)]


@pytest.mark.slow
@pytest.mark.parametrize("q,eps,delta", WORST)
def test_odds_bound_covers_at_the_boundary(q, eps, delta):
    # K1 ~ Bin(n, e^eps q + delta), K2 ~ Bin(n, q): the certified bound exceeds eps in at most ~alpha of
    # 1000 fixed-seed repetitions (binomial slack at 1e-4: a real excess, not bad luck)
    alpha, n, reps = 0.1, 1000, 1000
    rng = np.random.default_rng(7)
    p = math.exp(eps) * q + delta
    k = np.stack([rng.binomial(n, p, reps), rng.binomial(n, q, reps)], axis=1)
    tables, times = np.unique(k, axis=0, return_counts=True)      # one bound per distinct table
    over = sum(c for (a, b), c in zip(tables, times) if stats.odds_eps_bound(a, b, n, alpha, delta) > eps)
    assert over <= binom.ppf(1 - 1e-4, reps, alpha)
    assert over > 0 or q < 0.01          # not vacuous: at the boundary the bound does reach eps sometimes


def test_odds_bound_beats_two_clopper_pearson_bounds_on_close_counts():
    # the gain the method exists for: one test of the difference instead of z(alpha/2) on each side
    k1, k2, n = 6000, 5164, 75000
    cp = float(stats.eps_bound(stats.cp_lower(k1, n, 0.025), stats.cp_upper(k2, n, 0.025)))
    assert stats.odds_eps_bound(k1, k2, n, 0.05) > 1.15 * cp


@settings(max_examples=30, deadline=None)
@given(k1=st.integers(0, 500), k2=st.integers(0, 500), n=st.integers(500, 5000),
       delta=st.sampled_from([0.0, 1e-5, 1e-2]))
def test_approximation_ranks_like_the_exact_bound(k1, k2, n, delta):
    # the selection-sample stand-in stays near the exact bound where the exact one is informative
    exact = stats.odds_eps_bound(k1, k2, n, 0.05, delta)
    approx = float(stats.odds_eps_approx(k1, k2, n, 0.05, delta))
    if exact > 0 and k1 >= 30 and k2 >= 30:
        assert approx == pytest.approx(exact, abs=0.1)


def target(mech, pairs=((0, 1),), claim=None):
    return AuditTarget(name="fdp", mechanism=mech, pairs=list(pairs), claim=claim or Claim(epsilon=1.0))


@pytest.mark.slow
def test_audit_lower_bound_valid_over_seeds_on_laplace():
    # Laplace eps = 1 (true eps 1) at alpha = 0.2, 40 fixed seeds: the reported bound exceeds 1 in at most
    # ~alpha of runs (the count an alpha-level bound allows, with binomial slack at 1e-3)
    alpha, seeds = 0.2, 40
    over = sum(audit(target(M.laplace_count(1.0)), samples=3000, seed=s, alpha=alpha,
                     event_bound="best").epsilon_lower_bound > 1.0
               for s in range(seeds))
    assert over <= binom.ppf(1 - 1e-3, seeds, alpha)


@pytest.mark.parametrize("how", ["best", "cp"])
def test_broken_mechanisms_still_fail(how):
    half = audit(target(M.laplace_count(1.0, scale_factor=0.5)), samples=10**4, seed=0, event_bound=how)
    assert half.verdict == "fail" and 1.5 <= half.epsilon_lower_bound <= 2.0

    def leak(d, rng, size):                   # the raw input leaks with probability 1e-3
        out = rng.laplace(float(d), 1.0, size)
        out[rng.random(size) < 1e-3] = 1000.0 + d
        return out
    assert audit(target(leak), samples=10**5, seed=0, event_bound=how).verdict == "fail"
    value = audit(target(M.report_noisy_max(1.0, return_value=True), pairs=[([0] * 5, [1] * 5)]),
                  samples=10**4, seed=0, event_bound=how)
    assert value.verdict == "fail"


def test_odds_bound_chosen_and_higher_on_report_noisy_max():
    # benchmarks/results/tight_bounds.md: on report-noisy-max (exponential noise, index) at 10^4 per side the
    # selection sample picks the odds-ratio test and it certifies more than the Clopper-Pearson pair
    t = target(M.report_noisy_max_exponential(0.5), claim=Claim(epsilon=0.5),
               pairs=[([0] * 5, [1, 0, 0, 0, 0]), ([1, 0, 0, 0, 0], [0, 1, 0, 0, 0])])
    best = audit(t, samples=10**4, seed=0, event_bound="best")
    cp = audit(t, samples=10**4, seed=0)                     # the default
    assert cp.to_dict() == audit(t, samples=10**4, seed=0, event_bound="cp").to_dict()
    assert best.event["bound_method"] == "odds"
    assert best.epsilon_lower_bound > 1.1 * cp.epsilon_lower_bound > 0
    assert best.epsilon_lower_bound <= 0.5
    assert cp.event["bound_method"] == "cp"
    assert all(r["bound_method"] == "cp" for r in cp.pairs_table)
    # the report keeps its fields and adds the method
    d = best.to_dict()
    assert {"epsilon_lower_bound", "pairs_table", "alpha_per_bound", "event"} <= set(d)
    assert {"p_lo", "q_hi", "bound_method"} <= set(d["pairs_table"][0])


def test_unknown_event_bound_is_an_input_error():
    with pytest.raises(InputError, match="event_bound"):
        audit(target(M.laplace_count(1.0)), samples=1000, event_bound="fdp")


# ------------------------------------------------------------------ power when the odds bound may certify
@pytest.mark.slow
@pytest.mark.parametrize("n,q,eps,delta", [(10_000, 0.3, 0.1, 0.0), (20_000, 0.05, 0.5, 0.0),
                                           (10_000, 0.2, 0.3, 1e-4)])
def test_odds_power_is_a_median_case_threshold_of_the_exact_test(n, q, eps, delta):
    """At the eps' that odds_detectable_epsilon returns, the EXACT odds-ratio certification (what the audit
    runs) exceeds the claim in about half of the draws: the power figure means what the report says."""
    a2 = 0.025
    e = stats.odds_detectable_epsilon(q, n, a2, eps, delta)
    assert eps < e < 2 * eps
    rng = np.random.default_rng(7)
    p = math.exp(e) * q + delta
    k1, k2 = rng.binomial(n, p, 300), rng.binomial(n, q, 300)
    rate = np.mean([stats.odds_eps_bound(a, b, n, a2, delta) > eps for a, b in zip(k1, k2)])
    assert 0.3 < rate < 0.7


def test_budget_power_with_the_odds_bound_is_never_worse_and_better_at_small_eps():
    a = 0.05 / 4
    for n in (10**4, 10**5, 10**6):
        for eps, delta in ((1.0, 0.0), (0.1, 0.0), (1.0, 1e-5)):
            cp = stats.budget_detectable_epsilon(n, a, eps, delta)
            best = stats.budget_detectable_epsilon(n, a, eps, delta, "best")
            assert best <= cp
    assert (stats.budget_detectable_epsilon(10**4, a, 0.1, 0.0, "best")
            < 0.95 * stats.budget_detectable_epsilon(10**4, a, 0.1, 0.0))


def test_an_audit_with_the_odds_bound_reports_the_odds_power():
    """event_bound="best": the audit's power is the budget's under either bound, so it is never above the
    Clopper-Pearson-only figure of the same budget (it was before: the CP figure was reported whichever bound
    certified)."""
    t = AuditTarget(name="lap01", mechanism=lambda c, rng, size: rng.laplace(float(c), 10.0, size),
                    pairs=[(0, 1)], claim=Claim(epsilon=0.1))
    cp = audit(t, samples=20_000, seed=3)
    best = audit(t, samples=20_000, seed=3, event_bound="best")
    assert best.power < cp.power

    def level(r):       # the first event's level: the pair's, or 0.9 of it beside a rare second event
        return min(row["alpha_levels"][0] for row in r.pairs_table)
    assert best.power == pytest.approx(stats.budget_detectable_epsilon(
        best.certification_samples, level(best), 0.1, 0.0, "best"), rel=1e-12)
    assert cp.power == pytest.approx(stats.budget_detectable_epsilon(
        cp.certification_samples, level(cp), 0.1, 0.0), rel=1e-12)
