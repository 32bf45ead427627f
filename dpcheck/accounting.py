"""Privacy accounting: every conversion and composition between eps, delta and rho, in one place.

Algorithms declare what their noise is (a dp_accounting ``DpEvent``: noise family, multiplier, how
often it is composed); this module turns declarations and budgets into other privacy notions. Nothing
else in dpcheck, algorithms/ or audits/ converts between notions (tests/core/test_accounting.py greps for
it). Conventions: a Gaussian or Laplace *noise multiplier* m is the noise scale divided by the
sensitivity (l2 for the Gaussian, l1 for the Laplace), as in dp_accounting.

* zCDP and (eps, delta)-DP: :func:`epsilon_from_rho` (Bun & Steinke 2016, Prop. 1.3; Qiao & Wang,
  Lemma E.15), its inverse :func:`rho_from_epsilon`, the exact profile :func:`zcdp_delta` (Canonne,
  Kamath & Steinke 2020, Prop. 7) and :func:`zcdp_epsilon`; :func:`approx_dp_delta`, the profile
  that (eps, delta)-DP promises below eps (Kairouz, Oh & Viswanath 2015, Thm. 2.1).
* The Gaussian mechanism: :func:`gaussian_rho` (Bun & Steinke 2016, Prop. 1.6), the composed
  multiplier :func:`equivalent_gaussian` / GDP parameter :func:`gaussian_mu` and
  :func:`rho_from_mu`, the exact analytic profile :func:`gaussian_delta` / :func:`gaussian_epsilon`
  and calibration :func:`gaussian_multiplier_for` (Balle & Wang 2018, Thm. 8).
* Composition: :func:`advanced_composition` (Dwork, Rothblum & Vadhan 2010, Thm. III.3) and its
  exact inverse :func:`advanced_composition_inverse`; :func:`pure_dp_event`, the randomized
  response that dominates every eps-DP mechanism (Kairouz, Oh & Viswanath 2015).
* Declared events: :func:`closed_form` (pure eps and rho totals), :func:`gaussian_multiplier`,
  :func:`explicit_compositions`, and dp_accounting's PLD accountant (Doroshenko et al. 2022)
  behind :func:`pld_accountant`, :func:`pld_epsilon`, :func:`pld_delta`, :func:`pld_epsilon_replace_one`.
"""
from __future__ import annotations

import math

PLD_INTERVAL = 1e-4       # dp_accounting discretisation; eps overestimated by ~2e-4 per 3 compositions
PLD_DELTA = 1e-12         # "pure DP" read off the PLD at this delta


# ============================================================ zCDP <-> (eps, delta)-DP
def epsilon_from_rho(rho: float, delta: float) -> float:
    """rho-zCDP implies (rho + 2 sqrt(rho log(1/delta)), delta)-DP for every delta in (0, 1)
    (Bun & Steinke 2016, Prop. 1.3; Qiao & Wang, Offline RL with DP, Lemma E.15)."""
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def rho_from_epsilon(epsilon: float, delta: float) -> float:
    """The rho whose :func:`epsilon_from_rho` at ``delta`` is exactly ``epsilon``: with L = log(1/delta),
    rho + 2 sqrt(rho L) = eps is a quadratic in sqrt(rho), so rho = (sqrt(L + eps) - sqrt(L))^2
    (Qiao & Wang, Offline RL with DP, docs/derivations.md#noise-calibration / Lemma E.15)."""
    L = math.log(1.0 / delta)
    return (math.sqrt(L + epsilon) - math.sqrt(L)) ** 2


def zcdp_delta(rho: float, eps: float) -> float:
    """delta(eps) implied by rho-zCDP (Canonne, Kamath & Steinke 2020, Prop. 7).

    delta = inf_{a > 1} exp((a - 1)(a rho - eps)) / (a - 1) * (1 - 1/a)^a, capped at 1.
    Computed in log space and minimised over a with a bounded scalar search.
    """
    from scipy.optimize import minimize_scalar

    if rho == 0:
        return 0.0

    def log_delta(a):
        return (a - 1) * (a * rho - eps) - math.log(a - 1) + a * math.log1p(-1.0 / a)

    # the unconstrained minimiser of the leading term is a* = (eps + rho) / (2 rho)
    a_star = max(1.0 + 1e-9, (eps + rho) / (2 * rho))
    res = minimize_scalar(log_delta, bounds=(1.0 + 1e-9, max(2.0, 4 * a_star)), method="bounded")
    best = min(res.fun, log_delta(a_star) if a_star > 1 else math.inf)
    return float(min(1.0, math.exp(best)))


def zcdp_epsilon(rho: float, delta: float) -> float:
    """The smallest eps with :func:`zcdp_delta` (rho, eps) <= delta (bisection from the Prop. 1.3 bracket)."""
    lo, hi = 0.0, epsilon_from_rho(rho, delta) + 1.0
    while zcdp_delta(rho, hi) > delta:
        hi *= 2
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if zcdp_delta(rho, mid) <= delta else (mid, hi)
    return hi


def approx_dp_delta(epsilon: float, delta: float, eps: float) -> float:
    """The largest delta' that (epsilon, delta)-DP promises at eps: delta for eps >= epsilon, else
    1 - (1 - delta)(1 + e^eps)/(1 + e^epsilon), the tight profile of the randomised-response extreme
    (Kairouz, Oh & Viswanath 2015, Thm. 2.1)."""
    if eps >= epsilon:
        return delta
    # (1 + e^eps) / (1 + e^epsilon) = e^(eps - epsilon) (1 + e^-eps) / (1 + e^-epsilon): no overflow at large eps
    ratio = math.exp(eps - epsilon) * (1.0 + math.exp(-eps)) / (1.0 + math.exp(-epsilon))
    return min(1.0, 1.0 - (1.0 - delta) * ratio)


# ============================================================ the Gaussian mechanism
def gaussian_rho(sensitivity: float, sigma: float) -> float:
    """rho = Delta^2 / (2 sigma^2): the Gaussian mechanism N(0, sigma^2) on a query of l2 sensitivity
    Delta is exactly rho-zCDP (Bun & Steinke 2016, Prop. 1.6)."""
    return gaussian_rho_squared(sensitivity ** 2, sigma)


def gaussian_rho_squared(squared_sensitivity: float, sigma: float) -> float:
    """:func:`gaussian_rho` from the squared l2 sensitivity Delta^2 (e.g. a sum over released vectors that
    share one sigma: zCDP composes additively, Bun & Steinke 2016, Lemma 1.7)."""
    return squared_sensitivity / (2.0 * sigma ** 2)


def gaussian_sigma(sensitivity: float, rho: float) -> float:
    """The noise std sigma = Delta / sqrt(2 rho) that makes the Gaussian mechanism on a query of l2 sensitivity
    Delta exactly rho-zCDP (Bun & Steinke 2016, Prop. 1.6)."""
    return sensitivity / math.sqrt(2.0 * rho)


def gaussian_sigma_squared(squared_sensitivity: float, rho: float) -> float:
    """:func:`gaussian_sigma` from the squared l2 sensitivity: sigma = sqrt(Delta^2 / (2 rho))."""
    return math.sqrt(squared_sensitivity / (2.0 * rho))


def multiplier_from_rho(rho: float) -> float:
    """The noise multiplier m = 1 / sqrt(2 rho) of the Gaussian mechanism that is exactly rho-zCDP, the
    tightest rho-zCDP mechanism (Bun & Steinke 2016, Prop. 1.6)."""
    return (2 * rho) ** -0.5


def equivalent_gaussian(releases) -> float:
    """Noise multiplier of the ONE Gaussian mechanism whose privacy-loss distribution equals the composition
    of Gaussian releases given as (l2 sensitivity, noise std) pairs: the privacy loss of a Gaussian with
    multiplier m is N(mu, 2 mu) with mu = 1/(2 m^2), and independent losses add, so
    1/m_eff^2 = sum_i 1/m_i^2 (exact; inf for no release)."""
    releases = list(releases)
    return sum((d / s) ** 2 for d, s in releases) ** -0.5 if releases else math.inf


def gaussian_mu(releases) -> float:
    """Gaussian-DP parameter mu = sqrt(sum_i Delta_i^2 / sigma_i^2) of composed Gaussian releases given as
    (l2 sensitivity, noise std) pairs (Dong, Roth & Su 2022, Cor. 3.3): 1 / :func:`equivalent_gaussian`."""
    return math.sqrt(sum((d / s) ** 2 for d, s in releases))


def rho_from_mu(mu: float) -> float:
    """mu-GDP Gaussian releases are exactly mu^2 / 2-zCDP (Bun & Steinke 2016, Prop. 1.6 with m = 1/mu)."""
    return mu ** 2 / 2.0


def gaussian_delta(m: float, eps: float) -> float:
    """Exact privacy profile of the Gaussian mechanism with noise multiplier m (Balle & Wang 2018, Thm. 8):
    delta(eps) = Phi(1/(2m) - eps m) - e^eps Phi(-1/(2m) - eps m)."""
    from scipy.special import log_ndtr, ndtr   # Phi and log Phi (what scipy.stats.norm evaluates; lighter import)
    if m == 0:
        return 1.0
    if math.isinf(m):
        return 0.0
    second = math.exp(min(700.0, eps + float(log_ndtr(-0.5 / m - eps * m))))     # e^eps Phi(.) in log space
    return max(0.0, float(ndtr(0.5 / m - eps * m)) - second)


def gaussian_epsilon(m: float, delta: float) -> float:
    """The smallest eps with gaussian_delta(m, eps) <= delta (bisection; delta(eps) decreases in eps)."""
    if m == 0:
        return math.inf
    lo, hi = 0.0, 1.0
    if gaussian_delta(m, 0.0) <= delta:
        return 0.0
    while gaussian_delta(m, hi) > delta:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if gaussian_delta(m, mid) <= delta else (mid, hi)
    return hi


def gaussian_multiplier_for(epsilon: float, delta: float) -> float:
    """The analytic Gaussian calibration (Balle & Wang 2018, Thm. 8 / Alg. 1): the smallest noise multiplier
    m = sigma / Delta with gaussian_delta(m, epsilon) <= delta, by bisection (delta(eps) decreases in m).
    Valid for every eps > 0, unlike the classic sqrt(2 log(1.25/delta)) / eps, which needs eps <= 1
    (Dwork & Roth 2014, Thm. A.1). Returns the upper end of the final bracket, where the bound holds."""
    lo, hi = 0.0, 1.0
    while gaussian_delta(hi, epsilon) > delta:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (lo, mid) if gaussian_delta(mid, epsilon) <= delta else (mid, hi)
    return hi


# ============================================================ composition of pure-DP mechanisms
def advanced_composition(eps0: float, M: int, delta: float) -> float:
    """eps' of M adaptively composed eps0-DP mechanisms at delta' = delta:
    eps0 sqrt(2 M log(1/delta)) + M eps0 (e^eps0 - 1) (Dwork, Rothblum & Vadhan 2010, Thm. III.3;
    He & Zhou, Lemma E.2)."""
    if eps0 == 0:
        return 0.0
    if eps0 > 700.0:        # e^eps0 overflows a float: the composed eps is beyond any finite claim
        return math.inf
    return eps0 * math.sqrt(2.0 * M * math.log(1.0 / delta)) + M * eps0 * math.expm1(eps0)


def advanced_composition_root(M: int, delta: float) -> float:
    """sqrt(2 M log(1/delta)), the leading factor of :func:`advanced_composition`."""
    return math.sqrt(2.0 * M * math.log(1.0 / delta))


def advanced_composition_inverse(epsilon: float, M: int, delta: float) -> float:
    """The largest eps0 (to the last float) with advanced_composition(eps0, M, delta) <= epsilon; the
    composed eps is increasing in eps0, so bracket from epsilon / sqrt(2 M log(1/delta)) and bisect."""
    lo, hi = 0.0, epsilon / advanced_composition_root(M, delta)
    while advanced_composition(hi, M, delta) <= epsilon:   # cannot happen (second term > 0), kept for safety
        lo, hi = hi, 2 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if advanced_composition(mid, M, delta) <= epsilon:
            lo = mid
        else:
            hi = mid
    return lo


def pure_dp_event(eps0: float):
    """A dp_accounting event with exactly the privacy profile of (eps0, 0)-DP: binary randomized response
    with noise parameter p = 2 / (1 + e^eps0) (keep w.p. e^eps0 / (1 + e^eps0)), which dominates every
    eps0-DP mechanism (Kairouz, Oh & Viswanath 2015, Thm. 2.1). dp_accounting has no generic pure-DP event."""
    import dp_accounting
    return dp_accounting.RandomizedResponseDpEvent(noise_parameter=2.0 / (1.0 + math.exp(eps0)), num_buckets=2)


# ============================================================ declared DpEvents
def closed_form(event) -> dict:
    """Exact totals of a tree of Laplace / Gaussian / composed events: pure eps (Laplace with multiplier m
    is 1/m-DP, basic composition adds) and zCDP rho (a Gaussian is 1/(2 m^2)-zCDP, Bun & Steinke 2016,
    Prop. 1.6; zCDP composes additively, Lemma 1.7); inf where a notion does not apply, NaN for other events."""
    import dp_accounting as dpa
    if isinstance(event, dpa.LaplaceDpEvent):
        return {"epsilon": 1.0 / event.noise_multiplier, "rho": math.inf}
    if isinstance(event, dpa.GaussianDpEvent):
        return {"epsilon": math.inf, "rho": gaussian_rho(1.0, event.noise_multiplier)}
    if isinstance(event, dpa.SelfComposedDpEvent):
        c = closed_form(event.event)
        return {k: v * event.count for k, v in c.items()}
    if isinstance(event, dpa.ComposedDpEvent):
        tot = {"epsilon": 0.0, "rho": 0.0}
        for e in event.events:
            c = closed_form(e)
            tot = {k: tot[k] + c[k] for k in tot}
        return tot
    if isinstance(event, dpa.NonPrivateDpEvent):
        return {"epsilon": math.inf, "rho": math.inf}
    return {"epsilon": math.nan, "rho": math.nan}


def explicit_compositions(event):
    """``event`` with every ``SelfComposedDpEvent(e, n)`` whose ``e`` is not Gaussian spelled out as n copies.

    dp_accounting 0.6.0's PLD accountant drops the count of a ``SelfComposedDpEvent`` around a
    ``RandomizedResponseDpEvent`` (it composes the response once: 16 updates of an eps = 1.1 response
    come out as eps = 1.1 instead of about 17.6), so a declaration in that form would be under-accounted and
    a white-box check could pass a mechanism that is 16 times less private than claimed. Explicit copies
    are accounted correctly for every event type; Gaussian self-compositions are exact and stay as they
    are (their counts can be large).
    """
    import dp_accounting as dpa
    if isinstance(event, dpa.SelfComposedDpEvent):
        inner = explicit_compositions(event.event)
        if isinstance(inner, dpa.GaussianDpEvent):
            return dpa.SelfComposedDpEvent(inner, event.count)
        return dpa.ComposedDpEvent([inner] * int(event.count))
    if isinstance(event, dpa.ComposedDpEvent):
        return dpa.ComposedDpEvent([explicit_compositions(e) for e in event.events])
    return event


def gaussian_multiplier(event) -> float | None:
    """Noise multiplier of the ONE Gaussian mechanism whose privacy-loss distribution equals ``event``, when
    ``event`` composes Gaussians only (else None): a Gaussian's privacy loss with multiplier m is N(mu, 2 mu),
    mu = 1/(2 m^2), and independent losses add, so 1/m_eff^2 = sum_i count_i / m_i^2 (exact)."""
    import dp_accounting as dpa

    def inv_sq(e):
        if isinstance(e, dpa.GaussianDpEvent):
            return math.inf if e.noise_multiplier == 0 else 1.0 / e.noise_multiplier ** 2
        if isinstance(e, dpa.SelfComposedDpEvent):
            v = inv_sq(e.event)
            return None if v is None else v * e.count
        if isinstance(e, dpa.ComposedDpEvent):
            parts = [inv_sq(x) for x in e.events]
            return None if any(v is None for v in parts) else float(sum(parts))
        if isinstance(e, dpa.NoOpDpEvent):
            return 0.0
        return None

    v = inv_sq(event)
    if v is None:
        return None
    return math.inf if v == 0 else 0.0 if math.isinf(v) else v ** -0.5


def pld_accountant(event, neighbouring=None):
    """A dp_accounting PLD accountant (Doroshenko et al. 2022; discretisation :data:`PLD_INTERVAL`) with
    ``event`` composed into it, self-compositions spelled out (:func:`explicit_compositions`).
    ``neighbouring``: a ``dp_accounting.NeighboringRelation`` (default add/remove)."""
    from dp_accounting.pld import pld_privacy_accountant as pld
    kw = {} if neighbouring is None else {"neighboring_relation": neighbouring}
    acc = pld.PLDAccountant(value_discretization_interval=PLD_INTERVAL, **kw)
    acc.compose(explicit_compositions(event))
    return acc


def pld_epsilon(event, delta: float = PLD_DELTA) -> float:
    """The exact eps at ``delta`` of a declared DpEvent: closed form for compositions of Gaussians (exact, and
    dp_accounting's PLD grid needs gigabytes for small noise multipliers, i.e. large budgets), the PLD
    accountant otherwise."""
    m = gaussian_multiplier(event)
    if m is not None:
        return gaussian_epsilon(m, delta)
    return float(pld_accountant(event).get_epsilon(delta))


def pld_delta(event, eps: float) -> float:
    """The exact delta(eps) of a declared DpEvent (closed form for Gaussian compositions, PLD otherwise)."""
    m = gaussian_multiplier(event)
    if m is not None:
        return gaussian_delta(m, eps)
    return float(pld_accountant(event).get_delta(eps))


def pld_epsilon_replace_one(event, count: int, delta: float) -> float:
    """eps at ``delta`` of ``count`` compositions of ``event`` by the PLD accountant under replacement of one
    user (``NeighboringRelation.REPLACE_ONE``), self-compositions spelled out (dp_accounting 0.6.0 would
    account M randomized-response updates as one, :func:`explicit_compositions`)."""
    import dp_accounting
    acc = pld_accountant(dp_accounting.SelfComposedDpEvent(event, int(count)),
                         dp_accounting.NeighboringRelation.REPLACE_ONE)
    return float(acc.get_epsilon(delta))
