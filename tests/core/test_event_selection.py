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
    if kind == "longdouble":            # values on a float64 grid plus less than its rounding: counted in their own
        def side(shift):                # precision, a value just below a bin edge stays below it
            g = np.round(rng.laplace(shift, 1, n), 1).astype(np.longdouble)
            return g + g * rng.integers(-200, 201, n).astype(np.longdouble) * np.ldexp(np.longdouble(1), -63)
        return side(0.0), side(1.0)
    if kind == "vector":                # naive Bayes, logistic (refitted), boosted (refitted), thresholds
        z = rng.normal(0, 1, (n, 3))
        return z, z + np.array([0.3, 0.0, -0.2])
    raise AssertionError(kind)


KINDS = ["laplace", "atoms", "float32", "longdouble", "integers", "rounded", "strings", "vector"]


def _same_bits(a, b) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("threads", [1, 2])
def test_both_directions_at_once_equal_two_separate_fits(kind, threads):
    d, dp = _outputs(kind, 4000, seed=1)
    out_kind = ev.pair_kind(d, dp)
    plain = (ev.selection_scores(d, dp, out_kind), ev.selection_scores(dp, d, out_kind))
    with ThreadPoolExecutor(threads) as pool:
        both = ev.selection_scores_both(d, dp, out_kind, {}, pool.map if threads > 1 else map)
    _assert_same_fits(plain, both, d)


def _assert_same_fits(plain, both, d):
    for direction_plain, direction_both in zip(plain, both):
        assert [type(f[0]) for f in direction_plain] == [type(f[0]) for f in direction_both]
        for (sc_p, a_p, b_p), (sc_b, a_b, b_b) in zip(direction_plain, direction_both):
            # bit for bit: a zero score keeps its sign (a threshold of -0.0 would show in the report)
            assert _same_bits(a_p, a_b) and _same_bits(b_p, b_b)
            assert _same_bits(sc_p.score(d[:50]), sc_b.score(d[:50]))


@pytest.mark.parametrize("seed", range(12))
def test_small_discrete_outputs_with_equal_cells_keep_the_sign_of_zero(seed):
    """Few cells, some equally frequent on both sides (log ratio exactly 0): the mirrored direction gives +0.0
    where the refit does, not -0.0."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 5))
    n = int(rng.integers(10, 200))
    d, dp = rng.choice(k, n, p=rng.dirichlet(np.ones(k))), rng.choice(k, n, p=rng.dirichlet(np.ones(k)))
    plain = (ev.selection_scores(d, dp, "discrete"), ev.selection_scores(dp, d, "discrete"))
    _assert_same_fits(plain, ev.selection_scores_both(d, dp, "discrete"), d)


def test_a_scorer_that_sets_process_wide_limits_never_scores_in_a_selection_thread(monkeypatch):
    """The boosted-trees score sets a process-wide thread limit (threadpoolctl) while it runs; two at once in the
    selection threads restored each other's limit and left the process on one BLAS thread (seen in 6 of 6 runs
    outside pytest; the race is too rare here to test the limit itself): such scorers score in the calling
    thread."""
    import threading
    where = []
    original = ev.BoostedScorer.sorted_scores

    def spy(self, x):
        where.append(threading.current_thread() is threading.main_thread())
        return original(self, x)
    monkeypatch.setattr(ev.BoostedScorer, "sorted_scores", spy)
    d, dp = _outputs("vector", 3000, seed=2)
    with ThreadPoolExecutor(2) as pool:
        ev.selection_scores_both(d, dp, "continuous", {}, pool.map)
    assert len(where) == 4 and all(where)        # forward and refitted reverse, both sides


def test_longdouble_outputs_are_binned_in_their_own_precision():
    """The histogram's fit and its sorted scores bin a longdouble value as score() does (compared with the float64
    edges in longdouble): rounded to float64, values just below an edge moved into the bin above, and the
    selection scores no longer matched the scores certification counts."""
    d, dp = _outputs("longdouble", 6000, seed=3)
    sc = ev.HistogramScorer.fit(d, dp, bins=30)
    e = sc.edges[0]
    cd = np.bincount(np.searchsorted(e, d, side="right"), minlength=e.size + 1)
    cq = np.bincount(np.searchsorted(e, dp, side="right"), minlength=e.size + 1)
    ref = np.log((cd + ev.SMOOTH) / d.size) - np.log((cq + ev.SMOOTH) / dp.size)
    assert _same_bits(sc.tables[0], ref)
    assert _same_bits(sc.sorted_scores(dp), np.sort(sc.score(dp)))


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
@given(n=st.integers(2, 5000), bins=st.integers(16, 200), rounded=st.booleans(), wide=st.booleans(),
       seed=st.integers(0, 2**16))
def test_histogram_sorted_scores_equal_sorting_the_scores(n, bins, rounded, wide, seed):
    rng = np.random.default_rng(seed)
    d, dp = rng.laplace(0, 1, n), rng.laplace(0.4, 1, n)
    if rounded:
        d, dp = np.round(d, 1), np.round(dp, 1)
    x = rng.laplace(0.2, 1.2, n)
    if wide:                  # longdouble: values a float64 edge would round onto stay below it
        d, dp, x = (v.astype(np.longdouble) / 3 for v in (d, dp, x))
    sc = ev.HistogramScorer.fit(d, dp, bins=bins)
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
