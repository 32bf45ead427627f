"""assert_dp: deterministic, calibrated pytest assertion."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from examples import mechanisms as M  # noqa: E402

import warnings  # noqa: E402

from dpcheck import AuditTarget, Claim, InputError, PairSearch  # noqa: E402
from dpcheck.errors import DPCheckInconclusiveWarning  # noqa: E402
from dpcheck.pytest_plugin import DPCheckInconclusiveWarning as PluginWarning  # noqa: E402
from dpcheck.sequential import SequentialAuditResult  # noqa: E402
from dpcheck.testing import assert_dp  # noqa: E402


def test_correct_mechanism_passes_and_returns_result():
    r = assert_dp(M.laplace_count(1.0), pairs=[(0, 1)], epsilon=1.0)
    assert r.verdict == "pass" and r.confidence == pytest.approx(0.99)


def test_defect_raises_assertion_with_reason():
    with pytest.raises(AssertionError, match="eps >= "):
        assert_dp(M.laplace_count(1.0, scale_factor=0.5), pairs=[(0, 1)], epsilon=1.0)


def test_deterministic():
    a = assert_dp(M.laplace_count(1.0), pairs=[(0, 1)], epsilon=1.0, samples=20_000)
    b = assert_dp(M.laplace_count(1.0), pairs=[(0, 1)], epsilon=1.0, samples=20_000)
    assert a.to_dict() == b.to_dict()


@pytest.mark.slow
def test_calibration_google_style():
    # Google's statistical tests: accept a correct mechanism, reject noise 15 % short, each with
    # probability >= 0.9. Over 20 seeds at the defaults we require >= 19/20 of both.
    short, ok = 0, 0
    for seed in range(20):
        try:
            assert_dp(M.laplace_count(1.0, scale_factor=0.85), pairs=[(0, 1)], epsilon=1.0, seed=seed)
        except AssertionError:
            short += 1
        try:
            assert_dp(M.laplace_count(1.0), pairs=[(0, 1)], epsilon=1.0, seed=seed)
            ok += 1
        except AssertionError:
            pass
    assert short >= 19 and ok >= 19


@pytest.mark.slow
def test_accepts_target_per_call_and_claim_override():
    t = AuditTarget("lap", M.laplace_count(1.0), [(0, 1)], Claim(epsilon=1.0))
    assert_dp(t, samples=20_000)
    with pytest.raises(AssertionError):
        assert_dp(t, epsilon=0.5)                      # override: the claim is now too strong
    assert_dp(M.diffprivlib_laplace(1.0), pairs=[(0, 1)], epsilon=1.0, per_call=True, samples=5000)


def test_strict_fails_inconclusive():
    with pytest.warns(DPCheckInconclusiveWarning, match="INCONCLUSIVE.*strict=True"):
        r = assert_dp(M.laplace_count(0.1), pairs=[(0, 1)], epsilon=0.1, samples=200)
    assert r.verdict == "inconclusive"
    with pytest.raises(AssertionError, match="inconclusive"):
        assert_dp(M.laplace_count(0.1), pairs=[(0, 1)], epsilon=0.1, samples=200, strict=True)


def test_bad_arguments():
    with pytest.raises(InputError):
        assert_dp(M.laplace_count(1.0))
    with pytest.raises(InputError):
        assert_dp(M.laplace_count(1.0), pairs=[(0, 1)])
    with pytest.raises(InputError):
        assert_dp(M.laplace_count(1.0), pairs=[(0, 1)], epsilon=-1.0)


def test_a_pass_does_not_warn_and_the_plugin_warns_with_the_same_category():
    assert PluginWarning is DPCheckInconclusiveWarning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert assert_dp(M.laplace_count(1.0), pairs=[(0, 1)], epsilon=1.0, samples=20_000).verdict == "pass"


def test_sequential_goes_to_the_sequential_audit():
    # it raised a bare TypeError (blackbox.audit has no ``sequential``)
    r = assert_dp(M.laplace_count(1.0), pairs=[(0, 1)], epsilon=1.0, samples=3000, alpha=0.05, sequential=True)
    assert isinstance(r, SequentialAuditResult) and r.verdict == "pass" and r.stopped == "budget"
    with pytest.raises(AssertionError, match="sequential test rejected"):
        assert_dp(M.laplace_count(1.0, scale_factor=0.5), pairs=[(0, 1)], epsilon=1.0, samples=3000, alpha=0.05,
                  sequential=True)


def test_a_pair_search_target_is_searched_first():
    # it was refused (blackbox.audit wants the pairs)
    def domain(rng):
        return 0, 1
    t = AuditTarget("s", M.laplace_count(1.0, scale_factor=0.5), pairs=[], claim=Claim(epsilon=1.0),
                    search=PairSearch(domain, candidates=2, samples=100))
    with pytest.raises(AssertionError, match="eps >= "):
        assert_dp(t, samples=3000, alpha=0.05)


def test_an_uninformative_pass_warns_strict_or_not():
    # 100 samples at claim 1: power 1.64 x the claim, a PASS that could miss a 2x excess. A pass under strict, as
    # under --strict (one rule), said out loud
    for strict in (False, True):
        with pytest.warns(DPCheckInconclusiveWarning, match=r"PASS \(UNINFORMATIVE\).*2x excess"):
            r = assert_dp(M.laplace_count(1.0), pairs=[(0, 1)], epsilon=1.0, samples=100, seed=1, strict=strict)
        assert r.verdict == "pass" and r.uninformative

