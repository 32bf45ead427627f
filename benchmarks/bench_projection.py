"""Benchmark: the exact vectorised post-processing LP (docs/derivations.md#readings) against scipy's HiGHS per instance.

    python benchmarks/bench_projection.py [--n 1000] [--S 6]

Both solve the same 10^3 random instances (noisy counts with Laplace noise, some infeasible); the
baseline is timed in the same run, the ratio is printed (goal >= 1000x). Optimal values are compared
as a sanity check.
"""
import argparse
import time

import numpy as np
from scipy.optimize import linprog

from dpcheck.algorithms.privatizers.projection import project_counts


def highs(y, n, band):
    S = len(y)
    I = np.eye(S)
    A = np.block([[I, -np.ones((S, 1))], [-I, -np.ones((S, 1))],
                  [np.ones((1, S)), np.zeros((1, 1))], [-np.ones((1, S)), np.zeros((1, 1))]])
    b = np.r_[y, -y, n + band, -(n - band)]
    res = linprog(np.r_[np.zeros(S), 1.0], A_ub=A, b_ub=b, bounds=[(0, None)] * (S + 1), method="highs")
    return res.fun if res.status == 0 else np.nan


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--S", type=int, default=6)
    ap.add_argument("--repeat", type=int, default=20)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    E = 40.0
    counts = rng.integers(0, 50, (a.n, a.S)).astype(float)
    y = counts + rng.laplace(0, E / 8, counts.shape)
    n = counts.sum(1) + rng.laplace(0, E / 8, a.n)

    t0 = time.perf_counter()
    base = np.array([highs(y[i], n[i], E / 4) for i in range(a.n)])
    t_highs = time.perf_counter() - t0

    best = np.inf
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        ours = project_counts(y, n, E / 4)
        best = min(best, time.perf_counter() - t0)
    ok = np.isnan(base) == ours.infeasible
    err = np.nanmax(np.abs(base - ours.value))
    print(f"instances={a.n} S={a.S}")
    print(f"scipy linprog(highs), one call per instance: {t_highs:.3f} s total, {1e6 * t_highs / a.n:.1f} us/instance")
    print(f"exact vectorised solver, one call for all:    {best * 1e3:.3f} ms total, {1e6 * best / a.n:.3f} us/instance "
          f"(best of {a.repeat})")
    print(f"speed-up ratio: {t_highs / best:.0f}x   (goal >= 1000x)")
    print(f"max |t*_ours - t*_highs| = {err:.2e}; infeasibility agrees on {ok.mean():.0%}")


if __name__ == "__main__":
    main()
