"""The exact post-processing LP (Qiao & Wang 2023, Section 5.1.1; Qiao & Wang 2024, Section 5.3; Qiao & Wang 2022, eq. 3; docs/derivations.md#readings) against HiGHS.

Tests compare OBJECTIVE values and feasibility with scipy's HiGHS, never raw x (the argmin is not unique;
docs/derivations.md#readings), plus the canonical point's own properties: it is optimal, feasible, and the Euclidean projection.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.optimize import linprog

from dpcheck.algorithms.privatizers.projection import post_process, post_process_offline, project_counts
from dpcheck.errors import InputError


def highs(y, n, band):
    """The LP of eq. 6 solved by HiGHS: (status, optimum). Variables (x_1..x_S, t)."""
    S = len(y)
    c = np.r_[np.zeros(S), 1.0]
    I = np.eye(S)
    A = np.block([[I, -np.ones((S, 1))], [-I, -np.ones((S, 1))],
                  [np.ones((1, S)), np.zeros((1, 1))], [-np.ones((1, S)), np.zeros((1, 1))]])
    b = np.r_[y, -y, n + band, -(n - band)]
    res = linprog(c, A_ub=A, b_ub=b, bounds=[(0, None)] * (S + 1), method="highs")
    return res.status, (res.fun if res.status == 0 else None)


def problems_vs_highs(y, n, band, solver=project_counts):
    """What is wrong with ``solver``'s answer on one instance, compared with HiGHS (empty if right)."""
    y = np.asarray(y, float)
    scale = max(1.0, np.abs(y).max(initial=0), abs(n), band)
    tol = 1e-7 * scale
    r = solver(y[None], np.array([n]), band)
    x, t, infeasible = r.counts[0], float(r.value[0]), bool(r.infeasible[0])
    status, opt = highs(y, n, band)
    assert status in (0, 2)
    out = []
    if abs(n + band) <= tol:
        # on the feasibility boundary HiGHS decides within its own primal tolerance (1e-7);
        # both answers are right there, and ours returns 0 either way
        return [] if np.all(np.abs(x) <= tol) else ["boundary instance: x != 0"]
    if infeasible != (status == 2):
        out.append(f"infeasibility {infeasible} vs HiGHS status {status}")
    if np.any(x < 0):
        out.append("negative x")
    if infeasible:
        if np.any(x != 0):
            out.append("fallback x != 0")
        return out
    if status == 0 and abs(t - opt) > tol:
        out.append(f"optimum {t} vs HiGHS {opt}")
    if np.max(np.abs(x - y)) > t + tol:
        out.append("x does not attain the optimum")
    if abs(x.sum() - n) > band + tol:
        out.append("x violates the sum band")
    return out


def assert_matches_highs(y, n, band):
    assert problems_vs_highs(y, n, band) == [], (y, n, band)


finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
special = st.sampled_from([0.0, -1.0, 1.0, 0.5, -0.25])
entry = st.one_of(finite, special, st.integers(-5, 20).map(float))


@st.composite
def instances(draw):
    S = draw(st.integers(1, 8))
    y = draw(st.lists(entry, min_size=S, max_size=S))
    n = draw(entry)
    band = draw(st.one_of(st.just(0.0), st.floats(0, 1e3), st.integers(0, 10).map(float)))
    return np.array(y), n, band


@pytest.mark.slow
@settings(max_examples=1500, deadline=None)
@given(instances())
def test_optimum_equals_highs_on_hypothesis_instances(inst):
    assert_matches_highs(*inst)


@pytest.mark.slow
def test_optimum_equals_highs_on_random_batch_including_degenerate():
    rng = np.random.default_rng(7)
    cases = []
    for i in range(1500):
        S = int(rng.integers(1, 8))
        scale = 10 ** rng.uniform(-1, 3)
        kind = i % 6
        y = rng.normal(0, scale, S)
        n = rng.normal(0, scale)
        band = abs(rng.normal(0, scale))
        if kind == 1:
            y, n = np.zeros(S), 0.0                        # all zero
        elif kind == 2:
            y = -np.abs(y)                                 # all negative noisy counts
        elif kind == 3:
            n = -band - abs(rng.normal(0, scale)) - 1e-3   # infeasible
        elif kind == 4:
            band = 0.0                                     # band of width zero
        cases.append((y, n, band))
    for y, n, band in cases:
        assert_matches_highs(y, n, band)


def test_vectorised_over_leading_axes_equals_row_by_row():
    rng = np.random.default_rng(3)
    y = rng.normal(0, 5, (4, 3, 2, 5, 6))
    n = rng.normal(0, 8, (4, 3, 2, 5))
    batch = project_counts(y, n, 2.0)
    assert batch.counts.shape == y.shape and batch.value.shape == n.shape
    for idx in np.ndindex(n.shape):
        one = project_counts(y[idx][None], n[idx][None], 2.0)
        np.testing.assert_allclose(batch.counts[idx], one.counts[0], atol=1e-12)
        np.testing.assert_allclose(batch.value[idx], one.value[0], atol=1e-12)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(instances())
def test_canonical_point_is_the_euclidean_projection_onto_the_optimal_set(inst):
    """No point of the optimal set F is closer to y: check against feasible perturbations of x."""
    y, n, band = inst
    r = project_counts(y[None], np.array([n]), band)
    if r.infeasible[0]:
        return
    x, t = r.counts[0], r.value[0]
    # KKT of projection onto box-intersect-slab: x = clip(y + theta, l, u) for one scalar theta
    lo, hi = np.maximum(0, y - t), y + t
    tol = 1e-9 * max(1.0, np.abs(y).max(), abs(n), band)
    assert np.all(x >= lo - tol) and np.all(x <= hi + tol)
    moved = x - y
    free = (x > lo + tol) & (x < hi - tol)
    if free.any():
        theta = moved[free]
        assert np.ptp(theta) <= 1e-7 * max(1.0, np.abs(y).max(), abs(n), band)


def test_clip_negatives_when_feasible():
    y = np.array([3.0, -1.0, 2.0])
    r = project_counts(y[None], np.array([5.0]), 1.0)
    np.testing.assert_allclose(r.counts[0], [3.0, 0.0, 2.0])
    assert r.value[0] == pytest.approx(1.0)


def test_post_process_shifts_and_identity():
    """Lemma 5.4: |N~ - N| <= E, N~(s,a,s') >= E/(2S), N <= N~(s,a) <= N + E, sum identity, t* <= E/4."""
    rng = np.random.default_rng(11)
    E = 8.0
    S = 5
    N_sas = rng.integers(0, 30, (200, S)).astype(float)
    N_sa = N_sas.sum(1)
    # noise of size <= E/4, including the boundary +-E/4
    noise_t = rng.uniform(-E / 4, E / 4, N_sas.shape)
    noise_t[::7] = np.sign(noise_t[::7]) * E / 4
    noise_v = rng.uniform(-E / 4, E / 4, N_sa.shape)
    noise_v[::5] = -E / 4
    pp = post_process(N_sas + noise_t, N_sa + noise_v, E)
    assert np.all(pp.value <= E / 4 + 1e-9)
    assert np.all(np.abs(pp.transitions - N_sas) <= E + 1e-9)
    assert np.all(pp.transitions >= E / (2 * S) - 1e-12)
    assert np.all(pp.visits >= N_sa - 1e-9) and np.all(pp.visits <= N_sa + E + 1e-9)
    np.testing.assert_allclose(pp.visits, pp.transitions.sum(-1), rtol=1e-12)
    P = pp.transitions / pp.visits[:, None]
    assert np.all(P > 0) and np.allclose(P.sum(-1), 1.0)


def test_post_process_of_zero_counts_is_uniform_and_infeasible_falls_back():
    """docs/derivations.md#readings: zero noisy counts -> N~ = E/2, uniform P~; n + E/4 < 0 -> x = 0, same output."""
    E, S = 4.0, 3
    pp = post_process(np.zeros((2, S)), np.array([0.0, -10.0]), E)
    np.testing.assert_allclose(pp.visits, [E / 2, E / 2])
    np.testing.assert_allclose(pp.transitions, E / (2 * S))
    assert list(pp.infeasible) == [False, True]


def test_offline_variant_has_no_shift_and_matches_closed_form():
    """Qiao & Wang 2022, eq. 3: band E/2, cases T in band -> x = y; T < lo -> y + (lo - T)/S; T > hi -> water-filling."""
    y = np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0], [10.0, 1.0, 0.0]])
    m = np.array([6.0, 10.0, 2.0])
    E = 2.0
    pp = post_process_offline(y, m, E)
    np.testing.assert_allclose(pp.transitions[0], y[0])
    np.testing.assert_allclose(pp.transitions[1], y[1] + (9.0 - 3.0) / 3)
    np.testing.assert_allclose(pp.transitions[2], [3.0, 0.0, 0.0])        # sum = hi = 3
    np.testing.assert_allclose(pp.visits, pp.transitions.sum(-1))


@pytest.mark.slow
def test_ignoring_nonnegativity_is_caught():
    """Planted defect: the LP solved without x >= 0 (shift y evenly into the band) fails the HiGHS test."""
    from dpcheck.algorithms.privatizers.projection import ProjectionResult

    def no_nonnegativity(y, n, band):
        total = y.sum(-1)
        target = np.clip(total, n - band, n + band)
        x = y + ((target - total) / y.shape[-1])[..., None]
        return ProjectionResult(counts=x, value=np.abs(x - y).max(-1), infeasible=np.zeros(n.shape, bool))

    rng = np.random.default_rng(5)
    caught = 0
    for _ in range(200):
        y, n, band = rng.normal(0, 5, 4), rng.normal(2, 5), abs(rng.normal(0, 2))
        caught += bool(problems_vs_highs(y, n, band, solver=no_nonnegativity))
        assert_matches_highs(y, n, band)
    assert caught >= 100


def test_bad_input():
    with pytest.raises(InputError):
        project_counts(np.zeros((2, 3)), np.zeros(2), -1.0)
    with pytest.raises(InputError):
        project_counts(np.array([[np.nan, 1.0]]), np.zeros(1), 1.0)
    with pytest.raises(InputError):
        post_process(np.zeros((1, 2)), np.zeros(1), float("inf"))


# ------------------------------------------------------------------ review (issue #3): Qiao & Wang 2022, eq. 3 exactly
def offline_closed_form(y, m, E):
    """The closed form of Qiao & Wang 2022, eq. 3 (three cases), written independently of project_counts."""
    S = len(y)
    T, lo, hi = y.sum(), m - E / 2, m + E / 2
    if lo <= T <= hi:
        return y.copy()
    if T < lo:
        return y + (lo - T) / S
    # water filling: sum max(y - t, 0) = hi, by bisection to machine precision
    a, b = 0.0, float(y.max())
    for _ in range(200):
        t = 0.5 * (a + b)
        a, b = (t, b) if np.maximum(y - t, 0).sum() > hi else (a, t)
    return np.maximum(y - 0.5 * (a + b), 0.0)


nonneg = st.one_of(st.floats(0, 1e3, allow_nan=False), st.sampled_from([0.0, 1.0, 0.5]),
                   st.integers(0, 20).map(float))


@settings(max_examples=800, deadline=None)
@given(st.integers(1, 7).flatmap(lambda S: st.lists(nonneg, min_size=S, max_size=S)), nonneg,
       st.one_of(st.floats(0, 200, allow_nan=False), st.just(0.0)))
@pytest.mark.slow
def test_offline_projection_equals_the_offline_spec_closed_form(y, m, E):
    """post_process_offline (band E/2, no shift) returns exactly the closed-form minimiser (Qiao & Wang 2022, eq. 3) on clipped inputs."""
    y = np.asarray(y, float)
    pp = post_process_offline(y[None], np.array([m]), E)
    want = offline_closed_form(y, m, E)
    scale = max(1.0, y.max(initial=0), m, E)
    np.testing.assert_allclose(pp.transitions[0], want, atol=1e-9 * scale)
    assert not pp.infeasible[0]                               # m >= 0: always feasible (Algorithm 1)
    assert abs(pp.visits[0] - m) <= E / 2 + 1e-9 * scale       # |ntil(s,a) - n'(s,a)| <= E/2
