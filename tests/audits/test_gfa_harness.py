"""audits/lib/gfa_harness.py: the Appendix C harness (He & Zhou 2026 C(a), C(b), Appendix C).

Known answers: the worked constructions' closed forms, the max-phi ratio against the generalised eigenvalue
problem, the rare-switching rule on hand-built log-dets, the noise-free design = ridge I + Gram exactly. The
checks pass on the Privatizer's releases and FAIL on non-private (monotone) design matrices."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dpcheck.audits.lib import gfa_harness as gh


@pytest.mark.slow
def test_appendix_c_checks_pass_on_privatised_designs():
    checks = gh.appendix_c_checks(seed=0, quick=True)
    assert [c.id for c in checks] == ["assumption.design_monotonicity", "assumption.quadratic_ratio"]
    for c in checks:
        assert c.kind == "assumption" and c.verdict == "pass", c.reason
        assert c.measured["confidence"] == 1.0 and c.measured["K"] == 1024 and c.measured["seed"] == 0
        assert "Appendix C" in c.claim["source"] and c.claim["statement"]
    mono, ratio = checks
    assert mono.measured["min_fraction_nonmonotone"] > 0.5 and mono.measured["all_positive_definite"]
    assert mono.measured["max_construction_product"] < 2
    assert ratio.measured["max_construction_ratio"] == pytest.approx(2 * 3 ** 9)          # d = 10
    assert ratio.measured["construction_log_slope_in_d"] == pytest.approx(math.log(3))
    # seeds fixed: the same seed gives the same figures
    again = gh.appendix_c_checks(seed=0, quick=True)
    assert [c.measured for c in again] == [c.measured for c in checks]


def test_checks_fail_on_non_private_designs():
    """Without noise (the Privatizer's ridge reduction) the designs ARE monotone and the ratio stays <= 2:
    the demonstrations must fail."""
    mono = gh.design_monotonicity_check(epsilons=(math.inf,), dims=(2, 4), K=256)
    assert mono.verdict == "fail" and "monotone in all" in mono.reason
    assert mono.measured["max_fraction_nonmonotone"] == 0.0
    ratio = gh.quadratic_ratio_check(epsilons=(math.inf,), dims=(2,), K=256)
    assert ratio.verdict == "fail" and "<= 2" in ratio.reason
    assert ratio.measured["max_construction_ratio"] == pytest.approx(2.0)
    assert ratio.measured["monte_carlo_max_ratio"] <= 2 + 1e-9


@pytest.mark.parametrize("d", range(1, 11))
def test_ratio_construction_closed_form(d):
    c = gh.ratio_construction(d, 1.0, 3.0)                   # the Privatizer's range [Sigma, 3 Sigma], Sigma = 1
    assert c["det_ratio"] == pytest.approx(2.0) and not c["switch"]                     # exactly at the threshold
    assert c["max_ratio"] == pytest.approx(2 * 3 ** (d - 1)) == c["closed_form"]
    assert c["e1_ratio"] == pytest.approx(c["max_ratio"])
    flat = gh.ratio_construction(d, 5.0, 5.0)                # no noise range: the non-private bound holds
    assert flat["max_ratio"] == pytest.approx(2.0) and not flat["switch"]


def test_switch_product_construction():
    for d in (1, 2, 8):
        c = gh.switch_product_construction(d, 1.0, 3.0)
        assert c["switch"] and c["product_below_2"] and c["positive_definite"]
        assert c["product"] == pytest.approx(4 * 3.0 ** -d) == pytest.approx(c["closed_form_product"])
    c = gh.switch_product_construction(3, 2.0, 2.0)
    assert c["switch"] and not c["product_below_2"] and c["product"] == pytest.approx(4.0)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 6), st.integers(0, 2 ** 32 - 1))
def test_max_quadratic_ratio_is_the_generalised_eigenvalue(d, seed):
    rng = np.random.default_rng(seed)
    X, Y = rng.normal(size=(2, d, d))
    ref, cur = X @ X.T + 0.1 * np.eye(d), Y @ Y.T + 0.1 * np.eye(d)
    got = gh.max_quadratic_ratio(ref, cur)
    want = np.linalg.eigvals(np.linalg.solve(ref, cur)).real.max()          # eig(ref^-1 cur)
    assert got == pytest.approx(want, rel=1e-7)
    phi = rng.normal(size=(200, d))                                          # no direction beats it
    r = np.einsum("ni,ij,nj->n", phi, np.linalg.inv(ref), phi) / np.einsum("ni,ij,nj->n", phi, np.linalg.inv(cur), phi)
    assert r.max() <= got * (1 + 1e-9)


def test_switching_rule_known_answer():
    ln2 = math.log(2)
    # h = 0 doubles (just over) at k = 3, h = 1 at k = 5 relative to the switch at 3; nothing else does
    logdet = np.array([[0, 0], [0.5, 0.1], [0.6, 0.2], [ln2 + 1e-6, 0.3], [1.0, 0.4], [1.0, 0.3 + ln2 + 1e-3]])
    assert gh.switches(logdet).tolist() == [0, 3, 5]
    assert gh.switches(np.zeros((4, 2))).tolist() == [0]


def test_non_private_design_is_ridge_plus_gram():
    seq = gh.design_sequence(3, H=2, K=64, epsilon=math.inf, ridge=1.0, seed=4)
    assert not seq.private and seq.shift == 1.0 and seq.noise_low == seq.noise_high == 1.0
    L = seq.matrices
    np.testing.assert_allclose(L[0], np.broadcast_to(np.eye(3), (2, 3, 3)))
    inc = L[1:] - L[:-1]                                                     # one unit-norm rank-one item each
    np.testing.assert_allclose(np.trace(inc, axis1=-2, axis2=-1), 1.0)
    np.testing.assert_array_equal(np.linalg.matrix_rank(inc, tol=1e-9), 1)
    fig = gh.monotonicity_figures(seq)
    assert fig["fraction_nonmonotone"] == 0.0 and fig["positive_definite"]
    assert fig["switches"] <= fig["switch_bound"]                            # the non-private O(d log K) bound
    assert fig["fraction_product_below_2"] == 0.0                            # every factor >= 1
    q = gh.quadratic_ratio_figures(seq)
    assert q["fraction_above_2"] == 0.0 and q["max_ratio"] <= 2 + 1e-9       # the determinant lemma


def test_private_design_uses_the_privatizer():
    from dpcheck.algorithms.linear.privatizer import Privatizer
    from dpcheck.algorithms.linear.regularizers import LinearSizes
    seq = gh.design_sequence(2, H=2, K=128, epsilon=1.0, delta=0.1, alpha=0.05, seed=1)
    sizes = LinearSizes(K=128, H=2, d1=2, d2=2)
    priv = Privatizer(epsilon=1.0, delta=0.1)
    assert seq.shift == pytest.approx(priv.shifts(sizes, 0.05)[0])
    assert seq.node_std == pytest.approx(priv.noise_stds(sizes)["p1"])
    assert seq.noise_high == pytest.approx(3 * seq.noise_low)
    L = seq.matrices
    np.testing.assert_allclose(L, np.swapaxes(L, -1, -2))                    # symmetric releases
    np.testing.assert_allclose(L[0], np.broadcast_to(seq.shift * np.eye(2), (2, 2, 2)))   # prefix(0) = 0
    other = gh.design_sequence(2, H=2, K=128, epsilon=1.0, seed=2)
    assert not np.allclose(other.matrices[1:], L[1:])                        # the seed drives the noise
