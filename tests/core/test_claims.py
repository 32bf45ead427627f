"""Claim validation and the claimed privacy profile delta(eps)."""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st
from scipy.stats import norm

from dpcheck import Claim, InputError
from dpcheck.claims import zcdp_delta


@pytest.mark.parametrize("bad", [-1.0, -1e-9, float("nan"), float("inf"), "abc", None, [1.0], True, object()])
def test_bad_epsilon_raises_input_error(bad):
    with pytest.raises(InputError, match="epsilon"):
        Claim(epsilon=bad)


@pytest.mark.parametrize("bad", [-0.1, 1.0, 2.0, float("nan"), "x"])
def test_bad_delta_raises_input_error(bad):
    with pytest.raises(InputError, match="delta"):
        Claim(epsilon=1.0, delta=bad)


def test_other_malformed_claims():
    with pytest.raises(InputError, match="rho"):
        Claim(notion="zCDP")
    with pytest.raises(InputError, match="rho"):
        Claim(rho=-1.0, notion="zCDP")
    with pytest.raises(InputError, match="notion"):
        Claim(epsilon=1.0, notion="Renyi")
    with pytest.raises(InputError, match="neighbouring"):
        Claim(epsilon=1.0, neighbouring="swap")


def test_numeric_strings_and_notion_case_are_accepted():
    c = Claim(epsilon="0.5", notion="jdp")
    assert c.epsilon == 0.5 and c.notion == "JDP"


def test_pure_and_approximate_profile():
    c = Claim(epsilon=1.0)
    assert c.delta_at(1.0) == 0.0 and c.delta_at(2.0) == 0.0
    # Kairouz et al. (2015): eps-DP implies (0, (e^eps - 1) / (e^eps + 1))-DP (total variation)
    assert c.delta_at(0.0) == pytest.approx((math.e - 1) / (math.e + 1))
    a = Claim(epsilon=1.0, delta=1e-5)
    assert a.delta_at(1.0) == 1e-5 and a.delta_at(3.0) == 1e-5
    assert a.delta_at(0.5) > c.delta_at(0.5) > 0


def _zcdp_delta_grid(rho, eps):
    # independent check of Canonne-Kamath-Steinke Prop. 7: minimise on a dense log grid of a
    a = 1 + np.logspace(-6, 3, 400_000)
    logd = (a - 1) * (a * rho - eps) - np.log(a - 1) + a * np.log1p(-1 / a)
    return float(min(1.0, np.exp(logd.min())))


@pytest.mark.parametrize("rho,eps,known", [(0.5, 1.0, 0.24684633), (0.5, 3.0, 0.0051431841), (0.1, 1.0, 0.0089332458)])
def test_zcdp_profile_known_values(rho, eps, known):
    got = Claim(rho=rho, notion="zCDP").delta_at(eps)
    assert got == pytest.approx(known, rel=1e-6)
    assert got == pytest.approx(_zcdp_delta_grid(rho, eps), rel=1e-4)


@given(rho=st.floats(0.01, 2.0), eps=st.floats(0.0, 10.0))
def test_zcdp_profile_between_exact_gaussian_and_bun_steinke(rho, eps):
    # The Gaussian mechanism with sigma = 1 / sqrt(2 rho) is exactly rho-zCDP; its exact profile
    # (Balle & Wang 2018) is a lower envelope, Bun & Steinke's exp(-(eps - rho)^2 / (4 rho)) an upper one.
    sigma = 1 / math.sqrt(2 * rho)
    exact = norm.cdf(1 / (2 * sigma) - eps * sigma) - math.exp(eps) * norm.cdf(-1 / (2 * sigma) - eps * sigma)
    d = zcdp_delta(rho, eps)
    assert d >= exact - 1e-9
    if eps > rho:
        assert d <= math.exp(-(eps - rho) ** 2 / (4 * rho)) + 1e-9


@given(rho=st.floats(0.01, 2.0), e1=st.floats(0.0, 8.0), e2=st.floats(0.0, 8.0))
def test_zcdp_profile_decreasing(rho, e1, e2):
    lo, hi = sorted((e1, e2))
    assert zcdp_delta(rho, hi) <= zcdp_delta(rho, lo) + 1e-12


def _kov_extreme_hockey_stick(eps0, d0, eps):
    # Kairouz, Oh & Viswanath (2015): every (eps0, d0)-DP pair is a post-processing of the 4-point
    # pair P = (d0, (1-d0) e^eps0/(1+e^eps0), (1-d0)/(1+e^eps0), 0), Q = P reversed; its hockey-stick
    # divergence sum max(P - e^eps Q, 0) is therefore the tight profile, computed here directly.
    P = np.array([d0, (1 - d0) * math.exp(eps0) / (1 + math.exp(eps0)), (1 - d0) / (1 + math.exp(eps0)), 0.0])
    return float(np.maximum(P - math.exp(eps) * P[::-1], 0).sum())


@given(eps0=st.floats(0.01, 5.0), d0=st.sampled_from([0.0, 1e-6, 1e-3, 0.1]), frac=st.floats(0.0, 2.0))
def test_approximate_profile_is_the_kairouz_extreme_hockey_stick(eps0, d0, frac):
    c = Claim(epsilon=eps0, delta=d0)
    assert c.delta_at(eps0 * frac) == pytest.approx(_kov_extreme_hockey_stick(eps0, d0, eps0 * frac), abs=1e-12)


@pytest.mark.parametrize("rho", [0.05, 0.5, 2.0])
def test_zcdp_profile_matches_dp_accounting_rdp_of_the_gaussian(rho):
    # the Gaussian with sigma = 1/sqrt(2 rho) has RDP curve a * rho; dp_accounting converts it with the
    # same Canonne-Kamath-Steinke bound but over a finite grid of orders, so it can only be (slightly) larger
    import dp_accounting
    acc = dp_accounting.rdp.RdpAccountant(orders=list(np.linspace(1.01, 200, 4000)))
    acc.compose(dp_accounting.GaussianDpEvent(1 / math.sqrt(2 * rho)))
    for eps in (0.5, 1.0, 3.0):
        ours, theirs = zcdp_delta(rho, eps), acc.get_delta(eps)
        assert ours <= theirs * (1 + 1e-9)
        assert ours == pytest.approx(theirs, rel=1e-2)    # orders start at 1.01: coarse where a* -> 1
