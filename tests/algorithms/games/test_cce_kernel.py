"""The numba kernels of the CCE solver (algorithms/games/_cce_kernels.py) against the numpy code they replace.

The kernel must return what the numpy loop returns bit for bit (pi, convergence flags, bases, even the sign
of zeros), for warm starts, groups, iteration caps and degenerate stage games, so that swapping it in
changes no report (Qiao & Wang 2024, Algorithm 1 line 14: any CCE would do, but the runs must stay the
same runs).
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dpcheck.algorithms.games import cce
from dpcheck.algorithms.games.cce import constraint_matrix, simplex_cce, solve_cce
from dpcheck.algorithms.games.dp_nash_vi import DPNashVI
from dpcheck.algorithms.games.testbeds import stochastic_pennies
from dpcheck.errors import InputError

pytest.importorskip("numba")


def same(a, b):
    """Equal bit for bit: values, and the sign of every zero."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind != "f":
        return a.shape == b.shape and np.array_equal(a, b)
    return (a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
            and np.array_equal(np.signbit(a) & ~np.isnan(a), np.signbit(b) & ~np.isnan(b)))


def both(M, **kw):
    got = simplex_cce(M, return_basis=True, compiled=True, **kw)
    want = simplex_cce(M, return_basis=True, compiled=False, **kw)
    return got, want


def games(rng, n, A, B, degenerate):
    if degenerate:                                   # ties everywhere: the simplex's degenerate pivots
        return rng.choice([0.0, 1.0, 2.5, 5.0], size=(2, n, A, B))
    return rng.uniform(0, 5, size=(2, n, A, B))


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 4), st.integers(1, 4), st.integers(1, 12), st.booleans(),
       st.sampled_from(["cold", "random", "previous"]), st.booleans(), st.sampled_from([None, 0, 1, 2, 4]))
def test_kernel_equals_numpy_loop(seed, A, B, n, degenerate, start, grouped, max_iter):
    rng = np.random.default_rng(seed)
    Qb, Qu = games(rng, n, A, B, degenerate)
    M = constraint_matrix(Qb, Qu)
    m, d = A + B, A * B
    basis0 = None
    if start == "random":                            # often singular or infeasible: the slack fallback
        basis0 = np.array([rng.permutation(d + m)[:m] for _ in range(n)])
    elif start == "previous":                        # last episode's bases on a moved game: real warm starts
        basis0 = simplex_cce(constraint_matrix(Qb + rng.normal(0, 0.3, Qb.shape), Qu), return_basis=True,
                             compiled=False)[2]
    groups = rng.integers(0, 3, n) if grouped else None
    got, want = both(M, basis0=basis0, groups=groups, max_iter=max_iter)
    for g, w in zip(got, want):
        assert same(g, w)


def test_kernel_equals_numpy_loop_at_the_cap_with_groups():
    # the draw of test_stacked_regret_runs: instance 6 converges in 2 iterations, instance 18 needs 6, so with
    # a cap of 3 group 0 converges and group 1 does not; done instances keep their zero updates meanwhile
    M = np.random.default_rng(3).normal(size=(20, 4, 4))
    for max_iter in (0, 1, 3, 6, None):
        for groups in (None, np.arange(20) % 3):
            got, want = both(M, max_iter=max_iter, groups=groups)
            for g, w in zip(got, want):
                assert same(g, w)
    got, _ = both(M[[6, 6, 18]], max_iter=3, groups=np.array([0, 0, 1]))
    assert got[1].tolist() == [True, True, False]


def test_zero_updates_of_done_instances_are_kept():
    # one batch with instances done after 0..~10 pivots: the early ones sit through many zero updates
    # (T -= 0 * piv_row) of the numpy loop, which the kernel repeats until they change no bit
    rng = np.random.default_rng(0)
    M = np.concatenate([np.zeros((1, 5, 6)), rng.normal(size=(30, 5, 6)), -np.abs(rng.normal(size=(3, 5, 6)))])
    M[1:4, :, 0] = 0.0                                   # zero columns: exact zeros in the tableau
    got, want = both(M)
    for g, w in zip(got, want):
        assert same(g, w)
    got, want = both(-M, basis0=got[2])
    for g, w in zip(got, want):
        assert same(g, w)


def test_solve_cce_is_unchanged_by_the_kernel(monkeypatch):
    rng = np.random.default_rng(5)
    Qb, Qu = rng.uniform(0, 3, size=(2, 40, 3, 3))
    hint_basis = solve_cce(Qb + rng.normal(0, 0.2, Qb.shape), Qu, H=3.0, method="simplex").basis
    kw = dict(H=3.0, hint_basis=hint_basis, groups=np.repeat([0, 1], 20))
    got = solve_cce(Qb, Qu, **kw)
    monkeypatch.setattr(cce, "_kernels", lambda: None)
    want = solve_cce(Qb, Qu, **kw)
    assert got.n_simplex > 0
    for f in ("pi", "residual", "basis"):
        assert same(getattr(got, f), getattr(want, f))
    assert (got.n_pure, got.n_simplex, got.n_highs, got.n_hint) == (want.n_pure, want.n_simplex, want.n_highs,
                                                                    want.n_hint)


def test_dp_nash_vi_run_is_identical_with_the_numpy_fallback(monkeypatch):
    game = stochastic_pennies()                          # mixed stage equilibria: the simplex is used

    def run():
        return DPNashVI(mode="practical", record_values=True).run(game, 40, np.random.default_rng(9), runs=3)

    got = run()
    monkeypatch.setattr(cce, "_kernels", lambda: None)
    want = run()
    assert got.cce_stats["simplex"] > 0
    for f in ("pi", "Qb", "Qu", "Vb", "Vu", "certificate", "mu", "nu", "mu_out", "nu_out", "delta", "k_out",
              "states", "actions_max", "actions_min"):
        assert same(getattr(got, f), getattr(want, f)), f
    assert got.cce_stats == want.cce_stats


def test_compiled_true_without_numba_is_an_input_error(monkeypatch):
    monkeypatch.setattr(cce, "_kernels", lambda: None)
    with pytest.raises(InputError, match="numba"):
        simplex_cce(np.zeros((1, 2, 1)), compiled=True)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 4), st.integers(1, 4), st.integers(1, 9), st.booleans())
def test_pure_profiles_and_constraints_kernels_equal_numpy(seed, A, B, n, degenerate):
    from dpcheck.algorithms.games import _cce_kernels as k
    rng = np.random.default_rng(seed)
    Qb, Qu = games(rng, n, A, B, degenerate)
    Qb[0, 0, 0] = np.nan if seed % 7 == 0 else Qb[0, 0, 0]   # numpy's max/min propagate NaN; so must the kernel
    found, j, residual = k.pure_profiles(Qb, Qu)
    want_found, want_j = cce.pure_cce(Qb, Qu)
    assert same(found, want_found) and same(j, want_j)
    a, b = np.divmod(j, B)
    ar = np.arange(n)
    want_res = np.maximum(Qb[ar, :, b].max(axis=1) - Qb[ar, a, b], Qu[ar, a, b] - Qu[ar, a, :].min(axis=1))
    assert same(residual, want_res)
    assert same(k.constraint_rows(Qb, Qu), constraint_matrix(Qb, Qu))
