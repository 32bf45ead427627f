"""dpcheck.accounting: known answers, round trips, and a grep-level guard that no other module converts
between privacy notions (issue 18, item 1)."""
import io
import math
import re
import tokenize
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from dpcheck import accounting as acc

ROOT = Path(__file__).resolve().parents[2]

budgets = st.floats(min_value=1e-3, max_value=50.0, allow_nan=False)
deltas = st.floats(min_value=1e-12, max_value=0.5, allow_nan=False)
multipliers = st.floats(min_value=0.05, max_value=20.0, allow_nan=False)


# ------------------------------------------------------------------ zCDP <-> (eps, delta)
def test_zcdp_to_dp_known_answer():
    # Bun & Steinke 2016, Prop. 1.3: rho + 2 sqrt(rho ln(1/delta)); rho = 0.5, delta = 1e-5
    assert acc.epsilon_from_rho(0.5, 1e-5) == pytest.approx(0.5 + 2 * math.sqrt(0.5 * 5 * math.log(10)), rel=1e-14)
    assert acc.epsilon_from_rho(0.5, 1e-5) == pytest.approx(5.298526, abs=1e-6)
    # the inverse, eps = 1, delta = 1e-5: (sqrt(ln 1e5 + 1) - sqrt(ln 1e5))^2
    assert acc.rho_from_epsilon(1.0, 1e-5) == pytest.approx(0.0208199, abs=1e-7)


@settings(max_examples=200, deadline=None)
@given(eps=budgets, delta=deltas)
def test_rho_from_epsilon_round_trips(eps, delta):
    rho = acc.rho_from_epsilon(eps, delta)
    assert rho > 0
    assert acc.epsilon_from_rho(rho, delta) == pytest.approx(eps, rel=1e-9)


@settings(max_examples=200, deadline=None)
@given(rho=st.floats(min_value=1e-4, max_value=20.0), delta=deltas)
def test_epsilon_from_rho_round_trips(rho, delta):
    assert acc.rho_from_epsilon(acc.epsilon_from_rho(rho, delta), delta) == pytest.approx(rho, rel=1e-7)


@settings(max_examples=12, deadline=None)
@given(rho=st.floats(min_value=1e-3, max_value=5.0), delta=st.floats(min_value=1e-10, max_value=1e-2))
def test_exact_zcdp_profile_is_below_the_prop_1_3_conversion(rho, delta):
    # Canonne, Kamath & Steinke 2020, Prop. 7 is tighter than Prop. 1.3; and the tightest rho-zCDP mechanism,
    # the Gaussian with m = 1/sqrt(2 rho), has an exact profile below the zCDP one (Bun & Steinke, Prop. 1.6)
    eps = acc.zcdp_epsilon(rho, delta)
    assert acc.zcdp_delta(rho, eps) <= delta * (1 + 1e-9)
    assert eps <= acc.epsilon_from_rho(rho, delta) + 1e-9
    m = acc.multiplier_from_rho(rho)
    assert acc.gaussian_rho(1.0, m) == pytest.approx(rho, rel=1e-12)
    assert acc.gaussian_epsilon(m, delta) <= eps + 1e-9
    assert acc.gaussian_delta(m, eps) <= acc.zcdp_delta(rho, eps) * (1 + 1e-9) + 1e-15


def test_approx_dp_profile_known_answers():
    # eps-DP promises delta(0) = tanh(eps/2), the total variation of randomized response (Kairouz et al. 2015)
    assert acc.approx_dp_delta(1.0, 0.0, 0.0) == pytest.approx(math.tanh(0.5), rel=1e-12)
    assert acc.approx_dp_delta(1.0, 1e-5, 1.0) == 1e-5
    assert acc.approx_dp_delta(1.0, 1e-5, 3.0) == 1e-5
    assert acc.approx_dp_delta(1.0, 1e-5, 0.5) > 1e-5


# ------------------------------------------------------------------ the Gaussian mechanism
def _delta_direct(m, eps):
    """Balle & Wang 2018, Thm. 8, written out directly (no log space)."""
    from scipy.stats import norm
    return norm.cdf(0.5 / m - eps * m) - math.exp(eps) * norm.cdf(-0.5 / m - eps * m)


def test_analytic_gaussian_calibration_known_answer():
    # eps = 1, delta = 1e-5: analytic sigma / Delta = 3.7306 (Balle & Wang 2018) against the classic
    # sqrt(2 ln(1.25/delta)) / eps = 4.8448 (Dwork & Roth 2014, Thm. A.1)
    m = acc.gaussian_multiplier_for(1.0, 1e-5)
    assert m == pytest.approx(3.7306, abs=1e-4)
    assert m < math.sqrt(2 * math.log(1.25 / 1e-5))
    assert _delta_direct(m, 1.0) == pytest.approx(1e-5, rel=1e-6)


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(eps=st.floats(min_value=0.05, max_value=10.0), delta=st.floats(min_value=1e-10, max_value=1e-2))
def test_analytic_gaussian_calibration_is_the_smallest_multiplier(eps, delta):
    m = acc.gaussian_multiplier_for(eps, delta)
    assert acc.gaussian_delta(m, eps) <= delta
    assert acc.gaussian_delta(m * (1 - 1e-6), eps) > delta
    assert acc.gaussian_epsilon(m, delta) <= eps * (1 + 1e-9)


@settings(max_examples=100, deadline=None)
@given(m=multipliers, eps=st.floats(min_value=0.0, max_value=5.0))
def test_gaussian_delta_matches_theorem_8(m, eps):
    assert acc.gaussian_delta(m, eps) == pytest.approx(max(0.0, _delta_direct(m, eps)), rel=1e-6, abs=1e-14)


@settings(max_examples=100, deadline=None)
@given(sens=st.floats(min_value=0.01, max_value=100.0), rho=st.floats(min_value=1e-4, max_value=100.0))
def test_gaussian_sigma_and_rho_round_trip(sens, rho):
    assert acc.gaussian_rho(sens, acc.gaussian_sigma(sens, rho)) == pytest.approx(rho, rel=1e-12)
    assert acc.gaussian_rho_squared(sens ** 2, acc.gaussian_sigma(sens, rho)) == pytest.approx(rho, rel=1e-12)
    assert acc.gaussian_sigma_squared(sens ** 2, rho) == pytest.approx(acc.gaussian_sigma(sens, rho), rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(min_value=0.1, max_value=10.0), st.floats(min_value=0.1, max_value=10.0)),
                min_size=1, max_size=8))
def test_composed_gaussians_add_their_rho(releases):
    import dp_accounting as dpa
    total = sum(acc.gaussian_rho(d, s) for d, s in releases)
    m = acc.equivalent_gaussian(releases)
    assert acc.gaussian_rho(1.0, m) == pytest.approx(total, rel=1e-12)
    assert acc.rho_from_mu(acc.gaussian_mu(releases)) == pytest.approx(total, rel=1e-12)
    event = dpa.ComposedDpEvent([dpa.GaussianDpEvent(s / d) for d, s in releases])
    assert acc.gaussian_multiplier(event) == pytest.approx(m, rel=1e-12)
    assert acc.closed_form(event)["rho"] == pytest.approx(total, rel=1e-12)
    assert acc.equivalent_gaussian([]) == math.inf


# ------------------------------------------------------------------ composition
@pytest.mark.slow
def test_k_laplace_mechanisms_by_pld_lie_between_one_and_the_composition_theorems():
    import dp_accounting as dpa
    for eps0, k, delta in ((1.0, 5, 1e-12), (0.1, 10, 1e-6)):
        one = acc.pld_epsilon(dpa.LaplaceDpEvent(1.0 / eps0), delta)
        composed = acc.pld_epsilon(dpa.SelfComposedDpEvent(dpa.LaplaceDpEvent(1.0 / eps0), k), delta)
        rr = acc.pld_epsilon_replace_one(acc.pure_dp_event(eps0), k, delta)   # dominates every eps0-DP mechanism
        upper = min(k * eps0, acc.advanced_composition(eps0, k, delta))
        assert one <= composed
        assert composed <= rr + 2e-3
        assert rr <= upper * (1 + 2e-3) + 2e-3
    # at delta ~ 0 the k-fold Laplace is exactly k eps0-DP (basic composition is tight)
    assert acc.pld_epsilon(dpa.SelfComposedDpEvent(dpa.LaplaceDpEvent(1.0), 5)) == pytest.approx(5.0, abs=2e-3)
    assert acc.closed_form(dpa.SelfComposedDpEvent(dpa.LaplaceDpEvent(2.0), 4)) == {"epsilon": 2.0, "rho": math.inf}


def test_pure_dp_event_is_eps0_dp():
    for eps0 in (0.1, 1.0, 3.0):
        assert acc.pld_epsilon_replace_one(acc.pure_dp_event(eps0), 1, 1e-12) == pytest.approx(eps0, abs=2e-3)


@settings(max_examples=100, deadline=None)
@given(eps=st.floats(min_value=0.01, max_value=20.0), M=st.integers(1, 10_000), delta=deltas)
def test_advanced_composition_inverse_is_the_largest_eps0(eps, M, delta):
    eps0 = acc.advanced_composition_inverse(eps, M, delta)
    assert acc.advanced_composition(eps0, M, delta) <= eps
    assert acc.advanced_composition(eps0 * (1 + 1e-9), M, delta) > eps * (1 - 1e-12)
    assert eps0 <= eps / acc.advanced_composition_root(M, delta)


@pytest.mark.slow
def test_self_composed_randomized_response_is_accounted_with_its_count():
    # dp_accounting 0.6.0's PLD accountant composes SelfComposedDpEvent(RR, n) once; our accounting must not
    import dp_accounting as dpa

    def eps(event, delta=1e-12):
        return acc.pld_accountant(event, dpa.NeighboringRelation.REPLACE_ONE).get_epsilon(delta)

    rr = dpa.RandomizedResponseDpEvent(noise_parameter=0.5, num_buckets=2)   # pure eps = ln 3
    one = eps(rr)
    assert one == pytest.approx(math.log(3), abs=2e-3)
    sixteen = eps(dpa.SelfComposedDpEvent(rr, 16))
    assert sixteen == pytest.approx(eps(dpa.ComposedDpEvent([rr] * 16)))
    assert sixteen > 10 * one                        # basic composition: at most 16 ln 3, far above one
    nested = dpa.ComposedDpEvent([dpa.SelfComposedDpEvent(rr, 4), dpa.GaussianDpEvent(1.0)])
    assert eps(nested, 1e-6) > eps(dpa.ComposedDpEvent([rr, dpa.GaussianDpEvent(1.0)]), 1e-6) + 1.0
    assert acc.pld_epsilon_replace_one(rr, 16, 1e-12) == pytest.approx(sixteen)
    # Gaussian self-compositions are passed through (dp_accounting composes them exactly)
    g = dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(2.0), 8)
    assert eps(g, 1e-6) > eps(dpa.GaussianDpEvent(2.0), 1e-6)


@pytest.mark.slow
def test_gaussian_compositions_are_accounted_in_closed_form_at_any_budget():
    # the closed form matches dp_accounting's PLD where the PLD fits in memory, and answers at once where it
    # would not (multiplier 0.01, rho = 5000: the PLD grid needs gigabytes)
    import dp_accounting as dpa

    from dpcheck import Claim
    from dpcheck.audits.lib.privatizers import dp_event_check

    for m in (0.5, 1.0, 3.0):
        ev = dpa.ComposedDpEvent([dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(m * math.sqrt(4)), 4)])
        assert acc.gaussian_multiplier(ev) == pytest.approx(m)
        for d in (1e-3, 1e-6):
            assert acc.pld_epsilon(ev, d) == pytest.approx(acc.pld_accountant(ev).get_epsilon(d), rel=2e-3, abs=2e-3)
        assert acc.pld_delta(ev, 1.0) == pytest.approx(acc.pld_accountant(ev).get_delta(1.0), rel=1e-2, abs=1e-9)
    big = dpa.GaussianDpEvent(0.01)                                  # rho = 1 / (2 m^2) = 5000
    assert acc.pld_epsilon(big, 1e-6) > 5000
    assert dp_event_check(big, Claim(rho=5000.0, notion="zCDP")).verdict == "pass"
    assert dp_event_check(big, Claim(rho=4000.0, notion="zCDP")).verdict == "fail"
    assert acc.gaussian_multiplier(dpa.ComposedDpEvent([big, dpa.LaplaceDpEvent(1.0)])) is None


# ------------------------------------------------------------------ nothing else converts (grep level)
# Code only: strings (docstrings, messages, claim statements) and comments may state the formulas; code may
# not compute them. Declaring noise as a DpEvent (Gaussian / Laplace / Composed / SelfComposed / NonPrivate)
# is a declaration, not a conversion, and stays with the privatizer that draws the noise.
_N = r"[\w.]*"                       # a (dotted) name
_CALL = r"[\w.]*(?:\([^()]*\))?"     # a name or one call: priv.sigma(H)
_ONE = r"1(?:\.0)?"
_LOG_INV = rf"(?:math\.|np\.)?log\(\s*{_ONE}\s*/\s*{_N}\s*\)"
_LOG_INV_DELTA = rf"(?:math\.|np\.)?log\(\s*{_ONE}\s*/\s*{_N}delta{_N}\s*\)"
CONVERSIONS = {
    "a privacy accountant (dp_accounting.pld / .rdp, get_epsilon / get_delta)":
        r"\bdp_accounting\.(?:pld|rdp)\b|\b(?:PLDAccountant|RdpAccountant|pld_privacy_accountant|"
        r"rdp_privacy_accountant)\b|\.get_(?:epsilon|delta)\(",
    "eps -> randomized response (RandomizedResponseDpEvent)": r"\bRandomizedResponseDpEvent\b",
    "zCDP -> (eps, delta): rho + 2 sqrt(rho log(1/delta))": rf"sqrt\(\s*{_N}rho{_N}\s*\*\s*{_LOG_INV}",
    "(eps, delta) -> zCDP: (sqrt(log(1/delta) + eps) - sqrt(log(1/delta)))^2":
        rf"sqrt\(\s*(?:{_LOG_INV}|[A-Za-z_]\w*)\s*\+\s*{_N}eps{_N}\s*\)\s*-\s*(?:math\.|np\.)?sqrt\(",
    "Gaussian sigma for rho: Delta / sqrt(2 rho)": rf"/\s*(?:math\.|np\.)?sqrt\(\s*2(?:\.0)?\s*\*\s*{_N}(?:rho|r0){_N}",
    "Gaussian rho: Delta^2 / (2 sigma^2)": rf"/\s*\(\s*2(?:\.0)?\s*\*\s*{_CALL}\s*\*\*\s*2\s*\)",
    "Gaussian multiplier for rho: (2 rho)^-1/2": rf"\(\s*2(?:\.0)?\s*\*\s*{_N}rho{_N}\s*\)\s*\*\*\s*\(?\s*-\s*0?\.5",
    "composed Gaussians: sum((Delta / sigma)^2)": r"sum\(\s*\(\s*[\w.]+\s*/\s*[\w.]+\s*\)\s*\*\*\s*2\b",
    "GDP -> zCDP: mu^2 / 2": rf"{_N}mu{_N}(?:\([^()]*\))?\s*\*\*\s*2\s*/\s*2\b",
    "analytic Gaussian profile: Phi(.) - e^eps Phi(.)":
        rf"exp\([^\n]*\b{_N}eps{_N}\b[^\n]*(?:logcdf|log_ndtr)|exp\(\s*{_N}eps{_N}\s*\)\s*\*\s*(?:float\()?"
        rf"{_N}(?:norm\.cdf|ndtr)",
    "advanced composition: sqrt(2 M log(1/delta)) / eps0 (e^eps0 - 1)":
        rf"sqrt\(\s*2(?:\.0)?\s*\*\s*{_N}\s*\*\s*{_LOG_INV_DELTA}|expm1\(\s*{_N}eps{_N}\s*\)",
    "zCDP profile (Canonne et al.): (a - 1)(a rho - eps)": rf"\ba\s*\*\s*{_N}rho\s*-\s*{_N}eps",
    "(eps, delta) profile: 1 - (1 - delta)(1 + e^eps) / ...":
        rf"\(\s*{_ONE}\s*-\s*{_N}delta{_N}\s*\)\s*\*\s*\(\s*{_ONE}\s*\+\s*(?:math\.|np\.)?exp\(",
}
SCANNED = ("dpcheck", "algorithms", "audits", "scripts", "benchmarks", "examples")
ACCOUNTING = ROOT / "dpcheck" / "accounting.py"


def _code_only(source: str) -> str:
    """``source`` with every string literal and comment blanked (same offsets and line numbers)."""
    starts = [0]
    for ln in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(ln))
    blank = {tokenize.STRING, tokenize.COMMENT}
    blank |= {getattr(tokenize, n) for n in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END") if hasattr(tokenize, n)}
    out, pos = [], 0
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in blank:
            a = starts[tok.start[0] - 1] + tok.start[1]
            b = starts[tok.end[0] - 1] + tok.end[1]
            out += [source[pos:a], re.sub(r"[^\n]", " ", source[a:b])]
            pos = b
    return "".join(out) + source[pos:]


_ANY = re.compile("|".join(f"(?:{p})" for p in CONVERSIONS.values()))


def conversions(source: str) -> list[tuple[int, str]]:
    """(line, what) for every privacy-notion conversion computed in ``source``'s code."""
    if not _ANY.search(source):          # blanking strings and comments only removes matches
        return []
    code = _code_only(source)
    found = []
    for what, pattern in CONVERSIONS.items():
        for m in re.finditer(pattern, code):
            found.append((code.count("\n", 0, m.start()) + 1, what))
    return sorted(found)


@pytest.mark.parametrize("snippet", [
    "acc = pld.PLDAccountant(value_discretization_interval=1e-4)\neps = acc.get_epsilon(1e-6)",
    "from dp_accounting.pld import pld_privacy_accountant",
    "rr = dp_accounting.RandomizedResponseDpEvent(noise_parameter=2.0 / (1.0 + math.exp(e)), num_buckets=2)",
    "conv = rho + 2 * math.sqrt(rho * math.log(1 / d))",
    "conv = self.rho + 2.0 * math.sqrt(self.rho * math.log(1.0 / delta_dp))",
    "L = math.log(1.0 / delta_dp)\nrho = (math.sqrt(L + epsilon) - math.sqrt(L)) ** 2",
    "rho = (math.sqrt(math.log(1 / d) + eps) - math.sqrt(math.log(1 / d))) ** 2",
    "std = s / math.sqrt(2.0 * r0)",
    "g3 = 2 * H / math.sqrt(2 * rho_a / (5 * H))",
    "rho = sensitivity ** 2 / (2.0 * noise_std ** 2)",
    "rho_real = (a ** 2 + b ** 2) / (2 * priv.sigma(Hs) ** 2)",
    "r = 1.0 / (2 * event.noise_multiplier ** 2)",
    "m_claim = (2 * rho_claim) ** -0.5",
    "m = sum((s.sensitivity / s.noise_std) ** 2 for s in stats) ** -0.5",
    "mu = math.sqrt(sum((t.sensitivity / t.node_scale) ** 2 for t in trees))",
    "rho = self.gdp_mu(sizes, n) ** 2 / 2.0",
    "d = math.exp(log_ndtr(a - b)) - math.exp(epsilon + log_ndtr(-a - b))",
    "d = float(norm.cdf(a - b) - math.exp(eps) * norm.cdf(-a - b))",
    "second = math.exp(min(700.0, eps + float(norm.logcdf(-0.5 / m - eps * m))))",
    "e = eps0 * math.sqrt(2.0 * M * math.log(1.0 / delta)) + M * eps0 * math.expm1(eps0)",
    "root = math.sqrt(2.0 * M * math.log(1.0 / delta))",
    "v = (a - 1) * (a * rho - eps) - math.log(a - 1)",
    "d = 1.0 - (1.0 - self.delta) * (1.0 + math.exp(eps)) / (1.0 + math.exp(self.epsilon))",
])
def test_the_guard_flags_each_conversion(snippet):
    assert conversions(snippet), snippet


@pytest.mark.parametrize("snippet", [
    '"""rho-zCDP => (rho + 2 sqrt(rho log(1/delta_dp)), delta_dp)-DP: rho + 2 * math.sqrt(rho * math.log(1 / d))"""',
    "# conv = rho + 2 * math.sqrt(rho * math.log(1 / d))",
    'reason = f"rho = {(2 * rho) ** -0.5} {math.sqrt(2.0 * M * math.log(1.0 / delta))}"',
    "fam = dp_accounting.GaussianDpEvent(noise_multiplier=self.sigma(H) / math.sqrt(2.0 * H))",
    "return dp_accounting.ComposedDpEvent([fam] * families)",
    "lnd = math.log(1.0 / delta)\nB = K ** 0.6 * lnd ** 0.2 / eps ** 0.4",
    "target = delta + math.exp(eps_claim) * float(cp_upper(q * n, n, alpha))",
    "hs = p2 - math.exp(e) * q2",
    "rho = accounting.rho_from_epsilon(eps, d)",
    "width = 4.0 * math.sqrt(H * math.log(4.0 * H * S * S * A / self.beta) / self.rho)",
    "keep = np.abs(e) > Z_KEEP * s * math.sqrt(2.0 / n)",
    "martingale = 4.0 * H * math.sqrt(2.0 * T * math.log(1.0 / alpha))",
])
def test_the_guard_leaves_legitimate_code_alone(snippet):
    assert not conversions(snippet), snippet


@pytest.mark.slow
def test_no_module_outside_the_accounting_module_converts_between_privacy_notions():
    offenders = []
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == ACCOUNTING:
                continue
            for line, what in conversions(path.read_text()):
                offenders.append(f"{path.relative_to(ROOT)}:{line}: {what}")
    assert not offenders, ("privacy-notion conversions outside dpcheck/accounting.py (call dpcheck.accounting "
                           "instead):\n" + "\n".join(offenders))


def test_the_accounting_module_itself_is_seen_by_the_guard():
    # the guard is not vacuous: the module that owns the conversions matches most of its patterns
    found = {what for _, what in conversions(ACCOUNTING.read_text())}
    assert len(found) >= len(CONVERSIONS) - 4, sorted(set(CONVERSIONS) - found)


def test_advanced_composition_inverse_of_a_huge_total_is_finite_not_an_overflow():
    from dpcheck.accounting import advanced_composition, advanced_composition_inverse
    for total, M in [(1e4, 1), (1e5, 2), (1e6, 10)]:
        eps0 = advanced_composition_inverse(total, M, 1e-5)
        assert 0 < eps0 < 710 and advanced_composition(eps0, M, 1e-5) <= total
    assert advanced_composition(800.0, 1, 1e-5) == float("inf")


def test_profiles_and_bounds_at_huge_epsilon_do_not_overflow():
    """linear_stream_privatizer --epsilon 1000 stopped with an internal OverflowError (e^eps in the claim's profile
    and in the black box's profile objective) after five checks."""
    import math
    from dpcheck import stats
    from dpcheck.accounting import approx_dp_delta
    assert approx_dp_delta(1000.0, 0.1, 999.0) == pytest.approx(1 - 0.9 * math.exp(-1.0))
    assert approx_dp_delta(1.0, 1e-5, 0.5) == pytest.approx(1 - (1 - 1e-5) * (1 + math.exp(0.5)) / (1 + math.e))
    assert list(stats.exp_times(1000.0, [0.0, 1e-9])) == [0.0, math.inf]
    assert stats.exp_times(1.0, 0.5) == pytest.approx(math.e / 2)


@pytest.mark.parametrize("events, total, verdict", [(48, 1.05, "fail"), (64, 1.2, "fail"), (48, 1.0, "pass"),
                                                    (3, 0.999, "pass")])
def test_a_pure_claim_is_held_to_the_exact_pure_epsilon_of_composed_laplace_events(events, total, verdict):
    """k Laplace events whose 1/m sum to ``total`` are exactly total-DP (basic composition is tight for pure DP);
    the PLD read at delta = 1e-12 gave 0.909 for 48 events summing to 1.05, and the check PASSed a pure eps = 1
    claim."""
    import dp_accounting
    from dpcheck import Claim
    from dpcheck.audits.lib.privatizers import dp_event_check
    event = dp_accounting.ComposedDpEvent([dp_accounting.LaplaceDpEvent(events / total)] * events)
    c = dp_event_check(event, Claim(epsilon=1.0))
    assert c.verdict == verdict
    assert c.measured["epsilon_pld"] == pytest.approx(total, rel=1e-9) or total < 1.0
    # with a delta the claim is approximate DP and the PLD at that delta is the exact answer (below the pure sum)
    assert dp_event_check(event, Claim(epsilon=1.0, delta=1e-5)).measured["epsilon_pld"] < total
