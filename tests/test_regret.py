import numpy as np
import pytest
from hypothesis import given, strategies as st

from dpcheck.errors import InputError
from dpcheck.regret import (fit_increment_exponent, fit_scaling, regret_exponent_check, scaling_check)

K = 1000 * 2.0 ** np.arange(8)


def test_additive_constant_does_not_bend_the_increment_fit():
    # 3 sqrt(K) + 500: a cumulative log-log slope is far below 0.5, the increment fit is not
    rng = np.random.default_rng(0)
    R = 3 * np.sqrt(K) + 500 + rng.normal(0, 0.5, (5, K.size))
    naive = np.polyfit(np.log(K[:4]), np.log(R.mean(0)[:4]), 1)[0]
    fit = fit_increment_exponent(K, R)
    assert naive < 0.4
    assert abs(fit.exponent - 0.5) < 0.02
    assert fit.ci[0] <= 0.5 <= fit.ci[1] + 0.01
    assert regret_exponent_check(fit, claimed=0.5, tolerance=0.1).verdict == "pass"


def test_linear_regret_is_a_violation_of_sqrt_claim():
    rng = np.random.default_rng(1)
    R = 0.2 * K + rng.normal(0, 1, (5, K.size))
    check = regret_exponent_check(fit_increment_exponent(K, R), claimed=0.5, tolerance=0.1)
    assert check.verdict == "fail"
    assert check.measured["exponent"] > 0.95


def test_noisy_few_seeds_is_inconclusive_not_pass():
    rng = np.random.default_rng(2)
    R = np.cumsum(np.abs(rng.normal(0, 1, (2, K.size))) * K ** 0.6, axis=1)
    check = regret_exponent_check(fit_increment_exponent(K, R), claimed=0.5, tolerance=0.05)
    assert check.verdict in ("inconclusive", "fail")


@given(b=st.floats(0.2, 1.0), c=st.floats(0.1, 10), const=st.floats(0, 1e4))
def test_recovers_exponent_of_noiseless_power_law(b, c, const):
    R = np.tile(c * K ** b + const, (3, 1))
    assert abs(fit_increment_exponent(K, R).exponent - b) < 1e-6


def test_scaling_in_epsilon():
    eps = np.array([0.5, 1, 5, 10])
    rng = np.random.default_rng(3)
    cost = 100 / eps * np.exp(rng.normal(0, 0.05, (5, 4)))
    fit = fit_scaling(eps, cost)
    assert abs(fit.slope + 1) < 0.1
    assert scaling_check(fit, expected=-1, tolerance=0.25, id="regret.privacy_cost").verdict == "pass"
    assert scaling_check(fit, expected=-0.5, tolerance=0.1, id="x").verdict == "fail"


def test_bad_input():
    with pytest.raises(InputError):
        fit_increment_exponent([1, 2], [[1, 2]])
    with pytest.raises(InputError):
        fit_increment_exponent(K, np.ones((2, 3)))
    with pytest.raises(InputError):
        fit_increment_exponent(K[::-1], np.ones((2, K.size)))
