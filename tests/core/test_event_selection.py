"""The event choice's shortcuts compute what the plain computations compute: both directions from one fit
(dpcheck.events.selection_scores_both), threshold candidates of all-distinct scores, atoms from one sort,
histogram scores from bin counts, and the same with a thread pool as the map."""
import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dpcheck import AuditTarget, Claim
from dpcheck import events as ev
from dpcheck.blackbox import audit


def _outputs(kind: str, n: int, seed: int):
    rng = np.random.default_rng(seed)
    if kind == "laplace":
        return rng.laplace(0, 1, n), rng.laplace(1, 1, n)
    if kind == "atoms":                 # a continuous output with point masses (and both zeros)
        def side(shift):
            x = rng.laplace(shift, 1, n)
            x[rng.random(n) < 0.05] = float(shift)
            x[rng.random(n) < 0.01] = -0.0
            x[rng.random(n) < 0.01] = 0.0
            return x
        return side(0.0), side(1.0)
    if kind == "float32":
        return rng.laplace(0, 1, n).astype(np.float32), rng.laplace(0.5, 1, n).astype(np.float32)
    if kind == "integers":
        return rng.geometric(0.4, n), rng.geometric(0.4, n) + 1
    if kind == "rounded":               # a float output with few values: cells
        return np.round(rng.laplace(0, 1, n), 1), np.round(rng.laplace(1, 1, n), 1)
    if kind == "strings":
        return (np.array([f"s{v}" for v in rng.geometric(0.5, n)]),
                np.array([f"s{v}" for v in rng.geometric(0.5, n) + 1]))
    if kind == "vector":                # naive Bayes, logistic (refitted), boosted (refitted), thresholds
        z = rng.normal(0, 1, (n, 3))
        return z, z + np.array([0.3, 0.0, -0.2])
    raise AssertionError(kind)


KINDS = ["laplace", "atoms", "float32", "integers", "rounded", "strings", "vector"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("threads", [1, 2])
def test_both_directions_at_once_equal_two_separate_fits(kind, threads):
    d, dp = _outputs(kind, 4000, seed=1)
    out_kind = ev.pair_kind(d, dp)
    plain = (ev.selection_scores(d, dp, out_kind), ev.selection_scores(dp, d, out_kind))
    with ThreadPoolExecutor(threads) as pool:
        both = ev.selection_scores_both(d, dp, out_kind, {}, pool.map if threads > 1 else map)
    for direction_plain, direction_both in zip(plain, both):
        assert [type(f[0]) for f in direction_plain] == [type(f[0]) for f in direction_both]
        for (sc_p, a_p, b_p), (sc_b, a_b, b_b) in zip(direction_plain, direction_both):
            # equal as numbers (a zero score may differ in sign, which no event {score >= t} tells apart)
            assert np.array_equal(a_p, a_b) and np.array_equal(b_p, b_b)
            assert np.array_equal(sc_p.score(d[:50]), sc_b.score(d[:50]))


def _reference_candidates(a, b):
    """The candidate thresholds as best_threshold computed them before the shortcut (every distinct value's first
    index, thinned evenly between the tails)."""
    na, nb = a.shape[0], b.shape[0]
    lo = int(np.searchsorted(a, -np.inf, side="right"))
    if lo >= na:
        return None
    starts = lo + np.flatnonzero(np.r_[True, a[lo + 1:] != a[lo:-1]])
    if starts.size > ev.MAX_CANDIDATES:
        step = max(1, (starts.size - 2 * ev.TAIL_CANDIDATES) // ev.MAX_CANDIDATES)
        starts = np.unique(np.r_[starts[:ev.TAIL_CANDIDATES], starts[ev.TAIL_CANDIDATES:-ev.TAIL_CANDIDATES:step],
                                 starts[-ev.TAIL_CANDIDATES:]])
    cand = a[starts]
    return cand, na - starts, nb - np.searchsorted(b, cand, side="left")


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 12_000), neg_inf=st.integers(0, 3), ties=st.booleans(), seed=st.integers(0, 2**16))
def test_threshold_candidates_equal_the_plain_search(n, neg_inf, ties, seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    if ties:
        a = np.round(a, 2)
    a = np.sort(np.r_[[-np.inf] * neg_inf, a])
    b = np.sort(rng.normal(0.3, 1, size=max(n // 2, 1)))
    got, ref = ev.threshold_candidates(a, b), _reference_candidates(a, b)
    assert (got is None) == (ref is None)
    if ref is not None:
        assert all(np.array_equal(x, y) for x, y in zip(got, ref))


def _reference_atoms(d, dp):
    """CellScorer.fit_atoms as written with np.unique (before the one-sort version)."""
    kd, kp = ev._as_keys(d), ev._as_keys(dp)
    keys, first, counts = np.unique(np.concatenate([kd, kp]), return_index=True, return_counts=True)
    atoms = keys[counts >= 2]
    if atoms.size == 0:
        return None
    cd = np.bincount(np.searchsorted(atoms, kd[np.isin(kd, atoms)]), minlength=atoms.size)
    cp = np.bincount(np.searchsorted(atoms, kp[np.isin(kp, atoms)]), minlength=atoms.size)
    lr = np.log((cd + ev.SMOOTH) / d.size) - np.log((cp + ev.SMOOTH) / dp.size)
    return atoms, np.concatenate([d, dp])[first[counts >= 2]], lr


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
@pytest.mark.parametrize("repeats", [0, 1, 40])
def test_atoms_from_one_sort_equal_the_unique_based_fit(dtype, repeats):
    rng = np.random.default_rng(repeats)
    d = rng.laplace(0, 100, 3000).astype(dtype)
    dp = rng.laplace(1, 100, 3000).astype(dtype)
    if repeats:
        d[:repeats], dp[:repeats // 2] = dtype(3), dtype(3)
        d[repeats:2 * repeats] = dtype(-0.0) if dtype is not np.int64 else dtype(0)
        dp[repeats:repeats + 5] = dtype(0.0)
    got, ref = ev.CellScorer.fit_atoms(d, dp), _reference_atoms(d, dp)
    assert (got is None) == (ref is None)
    if ref is not None:
        cells, labels, lr = ref
        assert np.array_equal(got.cells, cells) and np.array_equal(got.log_ratio, lr)
        assert got.labels.dtype == labels.dtype
        assert np.array_equal(got.labels.view(np.uint8), labels.view(np.uint8))     # the bits: -0.0 stays -0.0


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 5000), bins=st.integers(16, 200), rounded=st.booleans(), seed=st.integers(0, 2**16))
def test_histogram_sorted_scores_equal_sorting_the_scores(n, bins, rounded, seed):
    rng = np.random.default_rng(seed)
    d, dp = rng.laplace(0, 1, n), rng.laplace(0.4, 1, n)
    if rounded:
        d, dp = np.round(d, 1), np.round(dp, 1)
    sc = ev.HistogramScorer.fit(d, dp, bins=bins)
    x = rng.laplace(0.2, 1.2, n)
    got, ref = sc.sorted_scores(x), np.sort(sc.score(x))
    assert np.array_equal(got.view(np.int64), ref.view(np.int64))     # bit for bit


def test_the_threaded_choice_gives_the_audit_of_one_worker():
    """With two workers the event choice runs in two threads (dpcheck.blackbox._selection_threads); the result is
    the one-worker result, on an output with a histogram event and atoms."""
    def mechanism(x, rng, size):
        out = x + rng.laplace(0, 1.0, size)
        out[rng.random(size) < 0.002] = float(x)
        return out
    t = AuditTarget(name="atoms", mechanism=mechanism, pairs=[(0, 1), (1, 2)], claim=Claim(epsilon=1.0, delta=1e-6))
    one = audit(t, samples=40_000, seed=4, workers=1)
    two = audit(t, samples=40_000, seed=4, workers=2)
    assert one.to_dict() == two.to_dict()
    assert math.isfinite(one.epsilon_lower_bound)
