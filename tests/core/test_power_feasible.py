"""The black box's power is stated against events a true-eps' mechanism can have (stats.dp_max_p): an event
E with P[M(D) in E] = p and P[M(D') in E] = q is bounded by p <= e^eps' q + delta AND by its complement in the
reverse direction, p <= 1 - e^-eps' (1 - q - delta). Without the second bound the power search won with
p ~ 1, q ~ e^-eps' (impossible under eps'-DP) and stated the budget far too able: Laplace at 2x its claim
passed in 24 of 40 seeds at 100 samples with "would detect eps >= 1.453"."""
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import binom

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from examples import mechanisms as M  # noqa: E402

from dpcheck import AuditTarget, Claim, stats  # noqa: E402
from dpcheck.blackbox import FAIL, audit, sample_plan, verdict_of  # noqa: E402
from dpcheck import blackbox as bb  # noqa: E402
from dpcheck import sequential as seq  # noqa: E402


# ------------------------------------------------------------------ the feasible set
@pytest.mark.parametrize("eps,delta", [(0.1, 0.0), (1.0, 0.0), (3.0, 0.0), (1.0, 1e-3), (0.5, 0.05)])
def test_dp_max_p_is_exactly_the_largest_p_of_a_dp_binary_mechanism(eps, delta):
    """The two-output mechanism (p on D, q on D') is (eps, delta)-DP iff all four inequalities hold; at
    p = dp_max_p they all hold and one is tight, a little above it one fails."""
    def dp(p, q):
        e = math.exp(eps)
        return (p <= e * q + delta + 1e-12 and q <= e * p + delta + 1e-12
                and 1 - p <= e * (1 - q) + delta + 1e-12 and 1 - q <= e * (1 - p) + delta + 1e-12)
    for q in np.r_[np.geomspace(1e-4, 0.5, 30), 0.7, 0.95]:
        p = stats.dp_max_p(q, eps, delta)
        assert dp(p, q)
        if p < 1:
            assert not dp(p + 1e-6, q)


def test_randomized_response_is_the_kink_and_dp_min_eps_inverts_dp_max_p():
    for eps in (0.1, 1.0, 2.0):
        q = 1 / (1 + math.exp(eps))
        assert stats.dp_max_p(q, eps) == pytest.approx(math.exp(eps) / (1 + math.exp(eps)), rel=1e-12)
        for delta in (0.0, 1e-3):
            for q in (1e-3, 0.05, 0.3, 0.5):
                p = stats.dp_max_p(q, eps, delta)
                if p < 1:
                    assert stats.dp_min_eps(p, q, delta) == pytest.approx(eps, rel=1e-9)
    # the event the old power won with: p = 1 - 1/n, q = e^-eps' p; its complement needs eps' ~ ln n, not eps'
    n, e = 75, 1.453
    assert stats.dp_min_eps(1 - 1 / n, math.exp(-e) * (1 - 1 / n)) > math.log(n) - 0.5
    assert stats.dp_max_p(0.3, 1000.0) == 1.0 and stats.dp_min_eps(0.3, 0.3) == 0.0


# ------------------------------------------------------------------ the power means what it says
def _exact_detection(p, q, n, a, eps):
    """P[ln(CP_lo(K1) / CP_hi(K2)) > eps] for K1 ~ Bin(n, p), K2 ~ Bin(n, q): exact, no sampling."""
    k = np.arange(n + 1)
    lo, hi = stats.cp_lower(k, n, a), stats.cp_upper(k, n, a)
    with np.errstate(divide="ignore"):
        det = (np.log(lo)[:, None] - np.log(hi)[None, :] > eps) & (lo[:, None] > 0)
    return float(binom.pmf(k, n, p) @ det @ binom.pmf(k, n, q))


@pytest.mark.parametrize("samples", [60, 100, 200, 1000])
def test_at_the_stated_power_the_best_feasible_event_is_certified_about_half_the_time(samples):
    """Known answer: power is the median-case threshold of the best eps'-DP event, so at eps' = power the
    exact Clopper-Pearson certification of that event (mass q on the power grid, p = dp_max_p) catches the
    claim in about half of all draws, and at 0.9 x power (minus the claim) in clearly fewer."""
    eps = 1.0
    plan = sample_plan(Claim(epsilon=eps), samples, 0.05)
    n, a = plan.certification, plan.alpha_bound
    power = stats.budget_detectable_epsilon(n, a, eps)
    best = max(_exact_detection(stats.dp_max_p(q, power), q, n, a, eps) for q in stats.power_mass_grid(n))
    below = eps + 0.8 * (power - eps)
    weaker = max(_exact_detection(stats.dp_max_p(q, below), q, n, a, eps) for q in stats.power_mass_grid(n))
    assert 0.45 <= best <= 0.65
    assert weaker < best - 0.05


def _unconstrained_power(n, a, eps, delta):
    """The power before the complement bound (only p <= e^eps' q + delta), for comparison."""
    out = math.inf
    for q in stats.power_mass_grid(n):
        q = max(q, 1 / n)
        target = delta + math.exp(eps) * float(stats.cp_upper(q * n, n, a))
        if target >= 1 or float(stats.cp_lower(n, n, a)) <= target:
            continue
        k = brentq(lambda k: float(stats.cp_lower(k, n, a)) - target, 1e-9, n)
        out = min(out, max(eps, math.log((k / n - delta) / q)))
    return out


def test_the_complement_bound_only_raises_the_power_figure():
    """Stricter power can only turn a PASS into INCONCLUSIVE (or an uninformative PASS), never the reverse;
    and a FAIL is decided before power is looked at."""
    for n in (45, 75, 150, 750, 7500):
        for eps, delta in ((0.1, 0.0), (1.0, 0.0), (1.0, 1e-3)):
            old = _unconstrained_power(n, 0.025, eps, delta)
            new = stats.budget_detectable_epsilon(n, 0.025, eps, delta)
            assert new >= old - 1e-6 * old
            assert stats.budget_detectable_epsilon(n, 0.025, eps, delta, "best") <= new
    # n = 75 (100 samples, Laplace claim 1): 1.453 before, stated much weaker now
    assert _unconstrained_power(75, 0.025, 1.0, 0.0) == pytest.approx(1.453, abs=2e-3)
    assert stats.budget_detectable_epsilon(75, 0.025, 1.0) == pytest.approx(1.642, abs=2e-3)
    assert verdict_of("refuted", math.inf, 1.0, found="", passed="")[0] == FAIL


# ------------------------------------------------------------------ acceptance: Laplace at 2x its claim
def _fail_rate(claim_eps, samples, seeds):
    """(power, share of FAILs, share of informative PASSes, share of uninformative PASSes) of Laplace at 2x its
    claim over seeds 0..seeds-1."""
    t = AuditTarget(name="lap2x", mechanism=M.laplace_count(claim_eps, scale_factor=0.5), pairs=[(0, 1)],
                    claim=Claim(epsilon=claim_eps))
    rs = [audit(t, samples=samples, seed=s) for s in range(seeds)]
    assert {r.verdict for r in rs} <= {"pass", "fail", "inconclusive"}
    return (rs[0].power, np.mean([r.verdict == "fail" for r in rs]),
            np.mean([r.verdict == "pass" and not r.uninformative for r in rs]),
            np.mean([r.uninformative for r in rs]))


def _acceptance(claim_eps, samples):
    """Fixed seeds 0..39. Where the audit may give an informative PASS (power <= INFORMATIVE_POWER x claim), a
    Laplace mechanism with half its claimed noise FAILs in >= 75 % of the seeds; where power is above that, no
    PASS of it is informative (INCONCLUSIVE above 2x, PASS (uninformative) between)."""
    power, fail, informative, weak = _fail_rate(claim_eps, samples, 40)
    if power <= bb.INFORMATIVE_POWER * claim_eps:
        assert fail >= 0.75, (samples, power, fail)
    else:
        assert informative == 0, (samples, power, informative)
    return power, weak


@pytest.mark.parametrize("claim_eps,samples", [(0.5, 60), (1.0, 100), (1.0, 200)])
def test_an_informative_pass_means_laplace_at_2x_fails_in_most_seeds(claim_eps, samples):
    _acceptance(claim_eps, samples)


def test_the_gap_between_the_best_event_and_laplace_is_marked_uninformative():
    # claim 1 at 100 samples: power 1.64 x the claim (randomized response's best event would see 2x half the
    # time; Laplace's at 2x FAILs in 40 % of seeds): its passes are PASS (uninformative), and the check says so
    power, weak = _acceptance(1.0, 100)
    assert bb.INFORMATIVE_POWER < power < 2.0 and weak > 0
    t = AuditTarget(name="lap", mechanism=M.laplace_count(1.0), pairs=[(0, 1)], claim=Claim(epsilon=1.0))
    r = audit(t, samples=100, seed=1)
    assert r.verdict == "pass" and r.uninformative
    c = r.to_check()
    assert c.details["qualifier"] == "uninformative" and "best event" in c.reason


@pytest.mark.slow
@pytest.mark.parametrize("claim_eps", [0.5, 1.0, 2.0])
def test_acceptance_grid_laplace_at_2x(claim_eps):
    for samples in (60, 100, 200, 500, 1000):
        _acceptance(claim_eps, samples)


# ------------------------------------------------------------------ the sequential test's power
def test_sequential_power_uses_feasible_events_and_the_slots_own_level():
    # stricter than the unconstrained alternative, and smaller alpha asks for more
    for n in (500, 5000):
        assert seq.sequential_power(n, 0.025, 1.0) > seq.sequential_power(n, 0.05, 1.0) > 1.0
    t1 = AuditTarget(name="s", mechanism=M.laplace_count(1.0), pairs=[(0, 1)], claim=Claim(epsilon=1.0))
    r = seq.audit(t1, samples=600, seed=0, sequential=True)
    tested = r.samples_used - r.selection_samples
    # one pair, pure DP: each main slot (pair, direction) weighs 1/2 of the average
    assert r.power == pytest.approx(seq.sequential_power(tested, 0.05 / 2, 1.0), rel=1e-12)
    t2 = AuditTarget(name="s2", mechanism=M.laplace_count(1.0), pairs=[(0, 1), (1, 2)], claim=Claim(epsilon=1.0))
    r2 = seq.audit(t2, samples=600, seed=0, sequential=True)
    assert r2.power == pytest.approx(seq.sequential_power(r2.samples_used - r2.selection_samples, 0.05 / 4, 1.0),
                                     rel=1e-12)
