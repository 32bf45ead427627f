"""Benchmark: DP-APVI on n = 10^6 transitions against np.bincount counting the same data.

    python benchmarks/bench_offline.py [--transitions 1000000] [--repeats 7]

Tabular S = 8, A = 4, H = 10 (TAB-FULL shape), so 10^6 transitions = 10^5 trajectories, one run.
Timed (best of ``--repeats``; the CPU is shared, the minimum is the least disturbed figure):

* ``bincount``        -- np.bincount of a precomputed flat (h, s, a, s') index: the counting floor;
* ``index+bincount``  -- building that index from the (n, H+1) / (n, H) arrays and counting it, whole-array
                         numpy (what a user would write to count the data);
* ``counts()``        -- OfflineDataset.counts(rewards=False) with the compiled kernel (one pass, numba) and
                         with the numpy reference path (blocked bincount);
* ``DP-APVI``         -- DPAPVI(rho=1).run(dataset): counts (engine 'auto') + Gaussian noise + §2.4 LP + P~ +
                         backward pass;
* ``DP-APVI (counts)``-- the same from precomputed TabularCounts (everything after counting).

Data validation (OfflineDataset.from_arrays) is timed separately: it happens once per dataset.
"""
import argparse
import time

import numpy as np

from algorithms.offline import DPAPVI, OfflineDataset, tab_full

S, A, H = 8, 4, 10


def best(f, repeats):
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return min(ts)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--transitions", type=int, default=10 ** 6)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    inst = tab_full(rng, S=S, A=A, H=H)
    n = args.transitions // H
    data = inst.collect(n, rng)
    st, ac = data.states[0], data.actions[0]
    flat = (((st[:, :H] * A + ac) * S + st[:, 1:]) + np.arange(H) * (S * A * S)).ravel()
    alg = DPAPVI(rho=1.0)
    counts = data.counts()                              # warm-up: numba kernel (cached on disk after the first run)
    alg.run(counts, inst.mdp, rng)                      # warm-up: imports dp_accounting once
    t = {
        "bincount": best(lambda: np.bincount(flat, minlength=H * S * A * S), args.repeats),
        "index+bincount": best(lambda: np.bincount(
            (((st[:, :H] * A + ac) * S + st[:, 1:]) + np.arange(H) * (S * A * S)).ravel(),
            minlength=H * S * A * S), args.repeats),
        "counts() compiled": best(lambda: data.counts(engine="compiled", rewards=False), args.repeats),
        "counts() numpy": best(lambda: data.counts(engine="numpy", rewards=False), args.repeats),
        "DP-APVI": best(lambda: alg.run(data, inst.mdp, rng), args.repeats),
        "DP-APVI (counts)": best(lambda: alg.run(counts, inst.mdp, rng), args.repeats),
        "from_arrays": best(lambda: OfflineDataset.from_arrays(data.states, data.actions, data.rewards, S=S, A=A),
                            args.repeats),
    }
    print(f"n = {n} trajectories x H = {H} = {n * H} transitions, S = {S}, A = {A}; best of {args.repeats}")
    for k, v in t.items():
        print(f"  {k:18s} {v * 1e3:8.2f} ms")
    print(f"DP-APVI / bincount = {t['DP-APVI'] / t['bincount']:.2f}; "
          f"DP-APVI / (index+bincount) = {t['DP-APVI'] / t['index+bincount']:.2f}")


if __name__ == "__main__":
    main()
