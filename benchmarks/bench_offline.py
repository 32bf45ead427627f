"""Benchmark: DP-APVI and DP-VAPVI on n = 10^6 transitions, as a ratio to numpy just counting the same data.

    python benchmarks/bench_offline.py [--transitions 1000000] [--repeats 7] [--out benchmarks/results/offline.json]
                                       [--profile]

Goal (issue #11 item 6): each algorithm <= 3x the time numpy needs to count its data, measured in the same run.
Every figure is the best of ``--repeats`` (the CPU is shared; the minimum is the least disturbed figure), after
a warm-up (numba kernel, cached on disk after the first run; the dp_accounting import).

Tabular, S = 8, A = 4, H = 10 (TAB-FULL shape): 10^6 transitions = 10^5 trajectories, one run.

* ``bincount``        -- np.bincount of a precomputed flat (h, s, a, s') index: the counting floor (ratio base);
* ``index+bincount``  -- building that index from the (n, H+1) / (n, H) arrays and counting it, whole-array
                         numpy (what a user would write to count the data);
* ``counts()``        -- OfflineDataset.counts(rewards=False), compiled kernel (numba) and numpy reference path;
* ``DP-APVI``         -- DPAPVI(rho=1).run(dataset): counts (engine 'auto') + Gaussian noise + eqs. 3-4 LP + P~ +
                         backward pass; ``DP-APVI (counts)`` the same from precomputed TabularCounts.

Linear, Appendix F (S = 2, A = 100, d = 10), H = 20: 10^6 transitions = 5 x 10^4 trajectories, one run.

* ``gram``            -- sum over the transitions of step h of phi phi^T, for every h, from a precomputed
                         feature array: the fastest of a per-h BLAS matmul, one batched np.matmul and np.einsum
                         (the counting floor for linear data; ratio base);
* ``gather+gram``     -- the same including the gather phi[s_h, a_h] from the state / action arrays;
* ``counts()``        -- OfflineDataset.counts() with reward sums (what DP-VAPVI reads), compiled and numpy;
* ``DP-VAPVI``        -- DPVAPVI(rho=1, Dpen=0, split=True).run(dataset): split into D, D' (K = 25,000 each),
                         counts + the 5H noisy releases + H backward steps; ``DP-VAPVI (counts)`` from
                         precomputed (D, D') counts.

Why DP-VAPVI can beat the Gram floor: it reads the data once through the (h, s, a, s') counts and the reward
sums (algorithms/offline/vapvi.py, module docstring), so its per-step statistics cost O(S^2 A d + d^3), not
O(K d^2); the Gram baseline touches every transition's features. ``--profile`` prints cProfile's top entries
of DP-VAPVI (the profile behind that statement).

Writes the figures and ratios to ``--out`` (JSON); no test depends on these wall-clock figures.
"""
import argparse
import json
import os
import platform
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]       # dpcheck, and timing.py also when loaded by path (its test)

from dpcheck.algorithms.offline import DPAPVI, DPVAPVI, OfflineDataset, appendix_f, tab_full  # noqa: E402
from timing import best_of  # noqa: E402

S, A, H = 8, 4, 10
H_LIN = 20
GOAL = 3.0


def tabular(transitions, repeats):
    rng = np.random.default_rng(0)
    inst = tab_full(rng, S=S, A=A, H=H)
    n = max(1, transitions // H)
    data = inst.collect(n, rng)
    st, ac = data.states[0], data.actions[0]
    flat = (((st[:, :H] * A + ac) * S + st[:, 1:]) + np.arange(H) * (S * A * S)).ravel()
    alg = DPAPVI(rho=1.0)
    counts = data.counts()                              # warm-up: numba kernel (cached on disk after the first run)
    alg.run(counts, inst.mdp, rng)                      # warm-up: imports dp_accounting once
    t = {
        "bincount": best_of(lambda: np.bincount(flat, minlength=H * S * A * S), repeats),
        "index+bincount": best_of(lambda: np.bincount(
            (((st[:, :H] * A + ac) * S + st[:, 1:]) + np.arange(H) * (S * A * S)).ravel(),
            minlength=H * S * A * S), repeats),
        "counts() compiled": best_of(lambda: data.counts(engine="compiled", rewards=False), repeats),
        "counts() numpy": best_of(lambda: data.counts(engine="numpy", rewards=False), repeats),
        "DP-APVI": best_of(lambda: alg.run(data, inst.mdp, rng), repeats),
        "DP-APVI (counts)": best_of(lambda: alg.run(counts, inst.mdp, rng), repeats),
        "from_arrays": best_of(lambda: OfflineDataset.from_arrays(data.states, data.actions, data.rewards, S=S, A=A),
                            repeats),
    }
    return {"shape": {"S": S, "A": A, "H": H, "trajectories": n, "transitions": n * H},
            "seconds": t, "base": "bincount",
            "ratio": {"DP-APVI / bincount": t["DP-APVI"] / t["bincount"],
                      "DP-APVI / index+bincount": t["DP-APVI"] / t["index+bincount"]},
            "within_goal": t["DP-APVI"] / t["bincount"] <= GOAL}


def linear(transitions, repeats, profile=False):
    rng = np.random.default_rng(0)
    inst = appendix_f(rng, H=H_LIN)
    phi = inst.features
    d = phi.shape[2]
    n = max(2, transitions // H_LIN)
    n -= n % 2                                          # D and D' halves (split=True)
    data = inst.collect(n, rng)
    st, ac = data.states[0], data.actions[0]
    Phi = phi[st[:, :H_LIN], ac]                        # (n, H, d)
    Phi_h = np.ascontiguousarray(Phi.transpose(1, 0, 2))  # (H, n, d), step-major for BLAS
    alg = DPVAPVI(rho=1.0, Dpen=0.0, split=True)
    D, Dp = data.split()
    pair = (D.counts(), Dp.counts())
    alg.run(data, phi, rng)                             # warm-up: numba kernel, dp_accounting
    gram = {
        "gram per-h matmul": best_of(lambda: [Phi_h[h].T @ Phi_h[h] for h in range(H_LIN)], repeats),
        "gram batched matmul": best_of(lambda: np.matmul(Phi_h.transpose(0, 2, 1), Phi_h), repeats),
        "gram einsum": best_of(lambda: np.einsum("nhi,nhj->hij", Phi, Phi, optimize=True), repeats),
    }
    t = dict(gram)
    t["gram"] = min(gram.values())

    def gather_gram():
        P = phi[st[:, :H_LIN].T, ac.T]                  # (H, n, d)
        return np.matmul(P.transpose(0, 2, 1), P)

    t["gather+gram"] = best_of(gather_gram, repeats)
    t["counts() compiled"] = best_of(lambda: data.counts(engine="compiled"), repeats)
    t["counts() numpy"] = best_of(lambda: data.counts(engine="numpy"), repeats)
    t["DP-VAPVI"] = best_of(lambda: alg.run(data, phi, rng), repeats)
    t["DP-VAPVI (counts)"] = best_of(lambda: alg.run(pair, phi, rng), repeats)
    prof = None
    if profile:
        import cProfile
        import io
        import pstats
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(max(1, repeats)):
            alg.run(data, phi, rng)
        pr.disable()
        buf = io.StringIO()
        pstats.Stats(pr, stream=buf).sort_stats("tottime").print_stats(8)
        prof = buf.getvalue()
    return {"shape": {"instance": "appendix_f", "S": 2, "A": 100, "d": d, "H": H_LIN, "trajectories": n,
                      "transitions": n * H_LIN, "split": True},
            "seconds": t, "base": "gram",
            "ratio": {"DP-VAPVI / gram": t["DP-VAPVI"] / t["gram"],
                      "DP-VAPVI / gather+gram": t["DP-VAPVI"] / t["gather+gram"]},
            "within_goal": t["DP-VAPVI"] / t["gram"] <= GOAL}, prof


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--transitions", type=int, default=10 ** 6)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", default="benchmarks/results/offline.json")
    ap.add_argument("--profile", action="store_true", help="print cProfile's top entries of DP-VAPVI")
    args = ap.parse_args(argv)
    c0 = time.process_time()
    tab = tabular(args.transitions, args.repeats)
    lin, prof = linear(args.transitions, args.repeats, args.profile)
    cpu = time.process_time() - c0
    for name, res in (("tabular", tab), ("linear", lin)):
        print(f"{name}: {res['shape']}; best of {args.repeats}")
        for k, v in res["seconds"].items():
            print(f"  {k:22s} {v * 1e3:8.2f} ms")
        print("  " + "; ".join(f"{k} = {v:.2f}" for k, v in res["ratio"].items()) +
              f" (goal <= {GOAL:g}: {'met' if res['within_goal'] else 'NOT met'})")
    if prof:
        print(prof)
    cmd = "python benchmarks/bench_offline.py" + ("" if not (sys.argv[1:] if argv is None else argv) else
                                                   " " + " ".join(sys.argv[1:] if argv is None else argv))
    out = {"schema": "dpcheck.bench_offline/1", "command": cmd, "goal_ratio": GOAL, "repeats": args.repeats,
           "statistic": "best of repeats (wall clock, perf_counter)", "cpu_seconds_total": cpu,
           "note": "shared 2-core machine: wall figures are contended; ratios are taken within one run",
           "machine": {"python": platform.python_version(), "numpy": np.__version__, "cpus": os.cpu_count()},
           "tabular": tab, "linear": lin}
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
