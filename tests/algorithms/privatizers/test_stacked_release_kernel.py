"""The numba post-processing of StackedPrivatizers' joint release (algorithms/privatizers/_stacked_kernels.py).

Its trans and visits must be numpy's (projection._project column path with band E/4, the shift E/(2S),
projection._sum_last) bit for bit, so that DP-Nash-VI's stacked regret runs are the runs they replace
(Qiao & Wang 2024, Section 5.1.1 LP; docs/derivations.md#readings)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dpcheck.algorithms.privatizers import load_privatizer
from dpcheck.algorithms.privatizers import projection as pj
from dpcheck.algorithms.privatizers import stacked
from dpcheck.algorithms.privatizers.stacked import StackedPrivatizers
from dpcheck.errors import InputError

pytest.importorskip("numba")
from dpcheck.algorithms.privatizers._stacked_kernels import release_rows  # noqa: E402


def numpy_release(Y, nv, Erow):
    E = Erow[:, None]
    trans = pj._project(Y, nv, Erow / 4.0, False).counts + E / (2.0 * Y.shape[1])
    return trans, pj._sum_last(trans)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 7), st.integers(64, 300), st.sampled_from([0.5, 4.0, 40.0]))
def test_release_rows_equal_numpy(seed, S, M, noise):
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 5, size=(M, S)).astype(float)
    Y = counts + rng.laplace(0, noise, size=(M, S))             # negative entries, sums off the band
    Y[::7] = 0.0                                                   # exact zeros (and -0.0 below)
    Y[1::11] = -0.0
    nv = counts.sum(axis=1) + rng.laplace(0, noise, size=M)
    nv[::13] = -50.0                                               # infeasible rows (n + band < 0)
    Erow = np.repeat(rng.uniform(1, 30, size=M // 8 + 1), 8)[:M]
    ok, trans, visits = release_rows(Y, nv, Erow, np.array(pj.sorting_network(S), dtype=np.int64).reshape(-1, 2))
    want_t, want_v = numpy_release(Y, nv, Erow)
    assert ok
    assert np.array_equal(trans, want_t) and np.array_equal(visits, want_v)
    assert np.array_equal(np.signbit(trans), np.signbit(want_t))


def test_non_finite_input_takes_the_numpy_path():
    Y = np.ones((64, 3))
    Y[5, 1] = np.nan
    net = np.array(pj.sorting_network(3), dtype=np.int64).reshape(-1, 2)
    assert not release_rows(Y, np.full(64, 3.0), np.full(64, 4.0), net)[0]
    with pytest.raises(InputError, match="NaN"):
        pj._project(Y, np.full(64, 3.0), 1.0, False)


def _stack():
    return StackedPrivatizers([load_privatizer(spec, epsilon=eps, beta=0.1, width_mode="nominal")
                               for spec, eps in (("central", 4.0), ("central", 16.0), ("local", 8.0))])


def test_stacked_release_is_identical_with_and_without_the_kernel(monkeypatch):
    def run():
        s = _stack().start(48, 2, 3, 4, 20, np.random.default_rng(4), rewards=False)
        rng = np.random.default_rng(1)
        out = []
        for _ in range(6):
            states, actions = rng.integers(0, 3, size=(16, 3)), rng.integers(0, 4, size=(16, 2))
            s.observe(np.tile(states, (3, 1)), np.tile(actions, (3, 1)))
            c = s.release()
            out.append((c.visits, c.transitions, c.noisy_visits, c.noisy_transitions))
        return s, out

    s, got = run()
    assert s._release_kernel is not None
    monkeypatch.setattr(stacked, "_release_kernel", lambda: None)
    s, want = run()
    assert s._release_kernel is None
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            assert np.array_equal(a, b) and np.array_equal(np.signbit(a), np.signbit(b))
