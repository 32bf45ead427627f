"""Binomial confidence bounds and the detection-power calculation of the black-box auditor.

Everything here is vectorised and accepts non-integer counts: the auditor evaluates
bounds at *projected* counts (a selection-sample frequency scaled to the size of the
certification sample) when it chooses an event, and at median counts when it computes
power. Only integer counts from the certification sample ever enter a certified bound.
"""
from __future__ import annotations

import contextlib
import contextvars
import math

import numpy as np
from scipy.special import betaincinv, ndtri


def exp_times(eps, q):
    """e^eps q without overflow: +inf where q > 0 and e^eps overflows a float (eps > ~709, e.g. the profile of a
    claim at eps 1000), 0 where q = 0 (a product that is 0 x inf, not nan)."""
    q = np.asarray(q, dtype=float)
    if eps < 709.0:
        return math.exp(eps) * q
    return np.where(q > 0, np.inf, 0.0)


def cp_lower(k, n, alpha):
    """One-sided (1 - alpha) Clopper-Pearson lower bound on p from k successes in n trials.

    The alpha-quantile of Beta(k, n - k + 1); 0 when k = 0 (Clopper & Pearson 1934).
    """
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = betaincinv(np.maximum(k, 1e-300), n - k + 1, alpha)
    return np.where(k > 0, lo, 0.0)


def cp_upper(k, n, alpha):
    """One-sided (1 - alpha) Clopper-Pearson upper bound: the (1 - alpha)-quantile of Beta(k + 1, n - k).

    With k = 0 it is 1 - alpha^(1/n) ~ ln(1/alpha) / n, so an output never seen under an
    input still gets a bound that shrinks with the samples (and eps_lb grows with them).
    """
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        hi = betaincinv(k + 1, np.maximum(n - k, 1e-300), 1 - alpha)
    return np.where(k < n, hi, 1.0)


def _wilson(k, n, z, sign):
    k = np.asarray(k, dtype=float)
    p = k / n
    z2 = z * z
    with np.errstate(invalid="ignore"):     # z = inf (alpha ~ 1e-300): inf / inf, a bound at the edge anyway
        half = z * np.sqrt(np.maximum(p * (1 - p), 0.0) / n + z2 / (4 * n * n))
        return (p + z2 / (2 * n) + sign * half) / (1 + z2 / n)


def wilson_lower(k, n, z):
    """Wilson score lower bound (z standard deviations): a cheap proxy of :func:`cp_lower`.

    Used only to rank hundreds of thousands of candidate thresholds on the selection
    sample; the few best are re-ranked with exact Clopper-Pearson bounds.
    """
    return np.maximum(_wilson(k, n, z, -1.0), 0.0)


def wilson_upper(k, n, z):
    """Wilson score upper bound (see :func:`wilson_lower`)."""
    return np.minimum(_wilson(k, n, z, 1.0), 1.0)


def z_of(alpha: float) -> float:
    return float(ndtri(1 - alpha))


def eps_bound(p_lo, q_hi, delta=0.0):
    """eps_lb = ln((p_lo - delta) / q_hi); -inf where p_lo <= delta (vectorised)."""
    p_lo = np.asarray(p_lo, dtype=float)
    q_hi = np.asarray(q_hi, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(np.maximum(p_lo - delta, 0.0)) - np.log(q_hi)
    return np.where(p_lo > delta, out, -np.inf)


# ----------------------------------------------------------------------------- the odds-ratio event bound
# docs/blackbox_bounds.md. Two one-sided Clopper-Pearson bounds at alpha / 2 each charge z(alpha / 2) standard
# deviations to p AND to q; the exact conditional test of the odds ratio charges about z(alpha) to the
# difference of the two estimates once, which certifies more at small budgets.
ODDS_SHARE = 0.9        # of an event's alpha for the odds-ratio bound; the rest bounds q (one or two sides)
ODDS_WINDOW = 60        # standard deviations of the conditional law kept around k1 (odds_ratio_lower)


def odds_ratio_lower(k1: int, k2: int, n: int, alpha: float) -> float:
    """One-sided (1 - alpha) lower bound on the odds ratio psi = p (1 - q) / (q (1 - p)) from independent
    K1 ~ Bin(n, p) = k1 and K2 ~ Bin(n, q) = k2 (the exact conditional test: given K1 + K2 = m, K1 follows
    Fisher's noncentral hypergeometric law with odds psi, whose upper tail grows with psi; Lehmann & Romano,
    Testing Statistical Hypotheses, Sec. 4.6). Returns sup{psi : P_psi(K1 >= k1 | m) <= alpha}, found by
    bisection on ln psi keeping the lower end (conservative). 0 when k1 is the smallest value given m;
    inf never (k2 = 0 still gives a finite bound that grows with k1)."""
    from scipy.special import gammaln
    k1, k2, n = int(k1), int(k2), int(n)
    m = k1 + k2
    if k1 <= max(0, m - n):
        return 0.0
    # the support within ODDS_WINDOW standard deviations of k1 (the central law's, the largest over psi): at
    # the solution k1 lies about z(alpha) standard deviations above the mean, so what is left out weighs
    # less than e^-1000 there; further out the truncated tail keeps the side of alpha the full one has
    sd = math.sqrt(m * (2 * n - m) / (4 * max(2 * n - 1, 1))) + 1.0
    x = np.arange(max(0, m - n, int(k1 - ODDS_WINDOW * sd)), min(n, m, int(k1 + ODDS_WINDOW * sd)) + 1)
    base = -gammaln(x + 1) - gammaln(n - x + 1) - gammaln(m - x + 1) - gammaln(n - m + x + 1)
    tail = x >= k1
    log_alpha = math.log(alpha)

    def log_sf(lam):
        w = base + lam * x
        w = np.exp(w - w.max())
        total, upper = w.sum(), w[tail].sum()
        return math.log(upper) - math.log(total) if upper > 0 else -math.inf

    lo, hi = -1.0, 1.0
    while log_sf(lo) > log_alpha:
        lo *= 2
        if lo < -1e4:
            return 0.0
    while log_sf(hi) <= log_alpha:
        lo, hi = hi, hi * 2
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if log_sf(mid) <= log_alpha:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-10:
            break
    return math.exp(lo)


def _odds_to_eps(psi_lo, q_lo, q_hi, delta):
    """The largest eps whose hypothesis p <= e^eps q + delta is rejected when psi >= psi_lo and
    q_lo <= q <= q_hi (vectorised; -inf when none). Under the hypothesis psi <= g(q) =
    (e^eps q + delta)(1 - q) / (q (1 - e^eps q - delta)), log-convex in q, so its maximum over [q_lo, q_hi]
    is at an end; g(q) = psi_lo solves to e^eps = (psi_lo q (1 - delta) - delta (1 - q)) / (q (1 - q + psi_lo q))."""
    psi_lo, q_lo, q_hi = (np.asarray(v, dtype=float) for v in (psi_lo, q_lo, q_hi))
    with np.errstate(divide="ignore", invalid="ignore"):
        def at(q):
            num = psi_lo * q * (1 - delta) - delta * (1 - q)
            den = q * (1 - q + psi_lo * q)
            return np.where((num > 0) & (den > 0), np.log(np.maximum(num, 1e-300)) - np.log(den), -np.inf)
        out = at(q_hi) if delta <= 0 else np.minimum(at(q_lo), at(q_hi))
    return np.where(np.isfinite(psi_lo) & (psi_lo > 0), out, -np.inf)


def odds_alphas(alpha: float, delta: float) -> tuple[float, float, float]:
    """How :func:`odds_eps_bound` spends an event's alpha: (odds ratio, q upper, q lower)."""
    rest = (1 - ODDS_SHARE) * alpha
    return (ODDS_SHARE * alpha, rest, 0.0) if delta <= 0 else (ODDS_SHARE * alpha, rest / 2, rest / 2)


def odds_eps_bound(k1: int, k2: int, n: int, alpha: float, delta: float = 0.0) -> float:
    """A (1 - alpha) lower bound on eps from one fixed event E with k1 of n outputs of M(D) in E and k2 of n of
    M(D') in E (independent samples), valid for (eps, delta)-DP: if p <= e^eps q + delta then, with
    probability >= 1 - alpha, the returned value is <= eps (Bonferroni over the exact odds-ratio bound at
    ODDS_SHARE alpha and Clopper-Pearson bounds on q with the rest). -inf when nothing is certified."""
    a_psi, a_hi, a_lo = odds_alphas(alpha, delta)
    psi = odds_ratio_lower(k1, k2, n, a_psi)
    q_hi = float(cp_upper(k2, n, a_hi))
    q_lo = float(cp_lower(k2, n, a_lo)) if delta > 0 else q_hi
    return float(_odds_to_eps(psi, q_lo, q_hi, delta))


def odds_eps_approx(k1, k2, n, alpha: float, delta: float = 0.0):
    """A cheap vectorised stand-in for :func:`odds_eps_bound` at (possibly non-integer, projected) counts, to
    rank candidate events on the selection sample: the normal approximation of ln psi (Woolf 1955, with
    half-counts) and Wilson bounds on q. Never used in a certified statement."""
    a_psi, a_hi, a_lo = odds_alphas(alpha, delta)
    k1, k2 = np.asarray(k1, dtype=float), np.asarray(k2, dtype=float)
    a, b, c, d = k1 + 0.5, n - k1 + 0.5, k2 + 0.5, n - k2 + 0.5
    psi = np.exp(np.log(a) + np.log(d) - np.log(b) - np.log(c) - z_of(a_psi) * np.sqrt(1 / a + 1 / b + 1 / c + 1 / d))
    q_hi = wilson_upper(k2, n, z_of(a_hi))
    q_lo = wilson_lower(k2, n, z_of(a_lo)) if delta > 0 else q_hi
    return _odds_to_eps(psi, q_lo, q_hi, delta)


# ----------------------------------------------------------------------------- power: what an eps'-DP event can be
# The power of a budget is stated against an alternative: a mechanism whose true epsilon is eps' > eps_claim.
# Such a mechanism cannot have every event (p, q) = (P[M(D) in E], P[M(D') in E]) with p <= e^eps' q + delta:
# the complement of E must keep the guarantee in the reverse direction too (the audit tests both), which
# bounds p from above a second time. The power figures below only use events a true-eps' mechanism can have.
def dp_max_p(q, eps, delta: float = 0.0):
    """The largest P[M(D) in E] an (eps, delta)-DP mechanism can have for an event E with P[M(D') in E] = q
    (vectorised over q and eps): min(1, e^eps q + delta, 1 - e^-eps (1 - q - delta)).

    Justification: (eps, delta)-DP binds E in the direction D -> D' (p <= e^eps q + delta) and its complement
    in the direction D' -> D (1 - q <= e^eps (1 - p) + delta, i.e. p <= 1 - e^-eps (1 - q - delta)); the other
    two inequalities (q <= e^eps p + delta, 1 - p <= e^eps (1 - q) + delta) hold when p >= q. Conversely the
    two-output mechanism "1 with probability p on D, q on D'" is (eps, delta)-DP whenever both bounds hold,
    so every p up to this value is attained by some true-eps mechanism: the bound is exact, not conservative.
    For delta = 0 the first bound binds when q <= 1 / (1 + e^eps) (randomized response is the kink)."""
    q, eps = np.broadcast_arrays(np.asarray(q, dtype=float), np.asarray(eps, dtype=float))
    # e^eps q as inf (q > 0) or 0 (q = 0) where e^eps overflows, as exp_times
    up = np.where(eps < 709.0, np.exp(np.minimum(eps, 709.0)) * q, np.where(q > 0, np.inf, 0.0)) + delta
    down = 1.0 - np.exp(-eps) * np.maximum(1.0 - q - delta, 0.0)
    out = np.clip(np.minimum(up, down), 0.0, 1.0)
    return float(out) if out.ndim == 0 else out


def dp_min_eps(p, q, delta: float = 0.0):
    """The smallest eps such that an (eps, delta)-DP mechanism can have an event with P[M(D) in E] = p and
    P[M(D') in E] = q, for p >= q (vectorised; the inverse of :func:`dp_max_p` in eps):
    max(0, ln((p - delta) / q), ln((1 - q - delta) / (1 - p))), inf where p = 1 > q + delta or q = 0 < p - delta.

    Justification: :func:`dp_max_p` increases in eps, and p <= dp_max_p(q, eps, delta) exactly when both of its
    bounds hold, i.e. when eps is at least each of the two logarithms (a bound that cannot bind -- p <= delta,
    or q >= 1 - delta -- gives -inf there)."""
    p, q = np.broadcast_arrays(np.asarray(p, dtype=float), np.asarray(q, dtype=float))
    with np.errstate(divide="ignore", invalid="ignore"):
        fwd = np.where(p > delta, np.log(np.maximum(p - delta, 0.0)) - np.log(q), -np.inf)
        rev = np.where(1 - q - delta > 0, np.log(np.maximum(1 - q - delta, 0.0)) - np.log(np.maximum(1 - p, 0.0)),
                       -np.inf)
    out = np.maximum(np.maximum(fwd, rev), 0.0)
    return float(out) if out.ndim == 0 else out


def detectable_epsilon(q_hat: float, n: int, alpha: float, eps_claim: float, delta: float = 0.0) -> float:
    """Median-case detection threshold of one event: the auditor's ``power``.

    Fix the event E and its probability under D' at q = q_hat (its certification estimate, at least 1/n).
    With both certification counts at their expected values n p and n q (the medians up to rounding, so the
    statement holds with probability about 1/2), the certified bound ln((CP_lo(n p) - delta) / CP_hi(n q))
    exceeds eps_claim exactly when p exceeds p* = CP_lo^{-1}(delta + e^eps_claim CP_hi(n q)). The returned
    value is the smallest true eps' at which an (eps', delta)-DP mechanism can have such an event,
    :func:`dp_min_eps` (p*, q): max(ln((p* - delta) / q), ln((1 - q - delta) / (1 - p*))). The second term is
    the complement event's loss in the reverse direction; without it an event with p ~ 1 and
    q ~ e^-eps' counted as an eps'-DP event, which no eps'-DP mechanism has, and the power was stated far too
    optimistically at small budgets. So: the smallest true epsilon this event mass and this sample budget
    would catch half the time, with p the largest an eps'-DP mechanism allows. inf if p* would reach 1.
    """
    q = max(float(q_hat), 1.0 / n)
    target = delta + float(exp_times(eps_claim, cp_upper(q * n, n, alpha)))
    if target >= 1 or float(cp_lower(n, n, alpha)) <= target:
        return math.inf
    lo, hi = 0.0, float(n)
    # CP_lo is increasing in k: bisection on the (continuous) count
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if float(cp_lower(mid, n, alpha)) > target:
            hi = mid
        else:
            lo = mid
        if hi - lo < 1e-6 * max(1.0, hi):
            break
    p_star = hi / n
    if p_star >= 1.0:
        return math.inf
    return max(float(eps_claim), dp_min_eps(p_star, q, delta))


def odds_detectable_epsilon(q_hat: float, n: int, alpha: float, eps_claim: float, delta: float = 0.0) -> float:
    """:func:`detectable_epsilon` for an event certified by :func:`odds_eps_bound` at level ``alpha`` (the
    audit spends both of the event's one-sided levels there, 2 alpha_b): with both counts at their expected
    values n p and n q, the smallest p* whose event is certified above eps_claim, and then the smallest true
    eps' at which an (eps', delta)-DP mechanism can have that event, :func:`dp_min_eps` (p*, q) (the event and
    its complement both bound p; see :func:`detectable_epsilon`). The certified bound at those counts is taken
    from :func:`odds_eps_approx` (Woolf's normal law of ln psi): power is a median-case figure, not a certified
    statement, and the exact conditional bound moves by far less than the sampling spread of the counts
    (tests/core/test_odds_bounds.py checks that the exact test then detects about half the time). inf if no
    p <= 1 - 1/(2n) is detected."""
    q = max(float(q_hat), 1.0 / n)
    if q >= 1.0:
        return math.inf

    def caught(p):
        return float(odds_eps_approx(n * p, n * q, n, alpha, delta)) > eps_claim

    lo = min(1.0, delta + float(exp_times(eps_claim, q)))
    hi = 1.0 - 0.5 / n
    if lo >= hi or not caught(hi):
        return math.inf
    # odds_eps_approx grows with the count under D: bisection on p
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if caught(mid):
            hi = mid
        else:
            lo = mid
        if hi - lo < 1e-9 * hi:
            break
    return max(float(eps_claim), dp_min_eps(hi, q, delta))


def power_mass_grid(n: int, points: int = 48) -> np.ndarray:
    """The event masses q under D' a budget's power is searched over: a log grid from 1/n to 1/2. Masses above
    1/2 add nothing: the complement of such an event, taken in the other direction (the audit searches both),
    has mass below 1/2, and with p bounded by :func:`dp_max_p` the mirrored grid was measured never to lower
    the power (n = 45 .. 75000, eps = 0.01 .. 1, delta = 0 and 0.01). Keeping the old grid also makes the
    power with the complement bound never smaller than without it, q by q (dp_min_eps >= ln((p - delta) / q)),
    so the stricter power can only turn a PASS into INCONCLUSIVE, never the reverse."""
    return np.unique(np.concatenate([np.geomspace(1.0 / n, 0.5, points), [0.5]]))


def budget_detectable_epsilon(n: int, alpha: float, eps_claim: float, delta: float = 0.0,
                              event_bound: str = "cp") -> float:
    """The sample budget's power: min over event masses q of :func:`detectable_epsilon`.

    The smallest true epsilon eps' such that the best event an (eps', delta)-DP mechanism can have (q under D'
    searched on :func:`power_mass_grid`, p = :func:`dp_max_p` (q, eps', delta): bounded by the event AND its
    complement) would be caught about half the time with n certification samples per side at level alpha. It
    depends on the budget only, not on the event the search happened to choose, so an audit that found no
    leak because there is none is not mistaken for an under-powered one; :func:`detectable_epsilon` of the
    chosen event is reported beside it. ``event_bound="best"`` (the audit may certify an event by the odds
    ratio instead, blackbox.audit): the smaller of that and :func:`odds_detectable_epsilon` at 2 alpha, per q.
    """
    grid = power_mass_grid(n)
    cp = min(detectable_epsilon(q, n, alpha, eps_claim, delta) for q in grid)
    if event_bound != "best":
        return float(cp)
    return float(min(cp, min(odds_detectable_epsilon(q, n, 2 * alpha, eps_claim, delta) for q in grid)))


# ----------------------------------------------------------------------------- the two levels of a check
# An audit's --alpha bounds the probability that ANY of its checks FAILs a correct implementation, so each
# check's FAIL decision is taken at alpha / (family size) (dpcheck.audit.Audit). A PASS is a per-check
# statement ("the claim holds at 1 - alpha") and needs no family-wise split: the statistical helpers
# (probability_check, the regret fits) decide PASS at the audit's own alpha, FAIL at the level they are
# called with. Outside an audit both levels are the one given.
_PASS_ALPHA: contextvars.ContextVar = contextvars.ContextVar("dpcheck_pass_alpha", default=None)


@contextlib.contextmanager
def pass_level(alpha: float):
    """Within the block, PASS decisions of the statistical helpers are taken at ``alpha``."""
    token = _PASS_ALPHA.set(float(alpha))
    try:
        yield
    finally:
        _PASS_ALPHA.reset(token)


def pass_alpha(fail_alpha: float) -> float:
    """The level of a PASS decision for a check whose FAIL decision is at ``fail_alpha``: the audit's own
    alpha inside an audit (never below fail_alpha), else fail_alpha."""
    v = _PASS_ALPHA.get()
    return float(fail_alpha) if v is None else max(float(fail_alpha), v)
