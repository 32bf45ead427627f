"""Benchmark: one Central-privatizer update (observe one episode per run + release) at RiverSwim size.

    python benchmarks/bench_central_update.py [--runs 5]

S = 6, A = 2, H = 20, K = 50,000 (L = 16 tree levels), several runs batched. The tree is fast-forwarded
to episode 2^15 - 64 (the values do not matter for timing; the cost of a step depends on the level that
completes, that of a release on popcount(t)), then 64 consecutive updates are timed. Baselines timed in
the same run: (a) the paper's route, one scipy HiGHS LP per (h, s, a) for the post-processing of ONE run,
(b) our own update with runs = 1, to show the batching gain.
"""
import argparse
import time

import numpy as np
from scipy.optimize import linprog

from dpcheck.algorithms.privatizers import CentralPrivatizer

H, S, A, K = 20, 6, 2, 50_000


def prepared(runs, seed=0):
    p = CentralPrivatizer(1.0).start(runs, H, S, A, K, np.random.default_rng(seed))
    p._tree.t = 2 ** 15 - 64          # fast-forward (timing only)
    p.episodes = p._tree.t
    return p


def updates(p, runs, n, rng):
    eps = [(rng.integers(0, S, (runs, H + 1)), rng.integers(0, A, (runs, H)), rng.random((runs, H))) for _ in range(n)]
    t0 = time.perf_counter()
    for s, a, r in eps:
        p.observe(s, a, r)
        p.release()
    return (time.perf_counter() - t0) / n


def highs_post_processing(p):
    """The paper's route for one run: H S A separate LPs (eq. 6)."""
    nv, nt, _ = p._noisy_counts()
    band = p.width / 4
    I = np.eye(S)
    Aub = np.block([[I, -np.ones((S, 1))], [-I, -np.ones((S, 1))],
                    [np.ones((1, S)), np.zeros((1, 1))], [-np.ones((1, S)), np.zeros((1, 1))]])
    t0 = time.perf_counter()
    for h in range(H):
        for s in range(S):
            for a in range(A):
                y, n = nt[0, h, s, a], nv[0, h, s, a]
                linprog(np.r_[np.zeros(S), 1.0], A_ub=Aub, b_ub=np.r_[y, -y, n + band, -(n - band)],
                        bounds=[(0, None)] * (S + 1), method="highs")
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--n", type=int, default=64)
    a = ap.parse_args()
    rng = np.random.default_rng(1)
    t_batch = updates(prepared(a.runs), a.runs, a.n, rng)
    t_one = updates(prepared(1), 1, a.n, rng)
    t_lp = highs_post_processing(prepared(1))
    print(f"RiverSwim size S={S} A={A} H={H} K={K} (L=16), counters per run = {H * S * A * (S + 2)}")
    print(f"one update (observe + release), runs={a.runs} batched: {1e3 * t_batch:.3f} ms "
          f"({1e3 * t_batch / a.runs:.3f} ms per run)")
    print(f"one update, runs=1:                                  {1e3 * t_one:.3f} ms")
    print(f"baseline: post-processing alone with {H * S * A} HiGHS LPs for one run: {1e3 * t_lp:.1f} ms")
    print(f"ratio HiGHS post-processing / our full batched update per run: {t_lp / (t_batch / a.runs):.0f}x")
    print(f"batching gain per run (runs=1 vs runs={a.runs}): {t_one / (t_batch / a.runs):.1f}x")
    print(f"projected privatizer time for K={K} episodes x {a.runs} runs: {t_batch * K:.0f} s")


if __name__ == "__main__":
    main()
