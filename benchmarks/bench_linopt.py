"""Benchmark: episodes per second of Private-LinOpt-VI / -PO against UCRL-VTR / OPPO, timed in the same run.

    python benchmarks/bench_linopt.py [--episodes 256] [--runs 4] [--repeats 3] [--figures] [--threads 1]

Instances: LM-2 (Zhou 2022; d1 = d2 = 2) and tabular-as-linear with |S| = |A| = 4, H = 3
(d1 = S^2 A = 64, d2 = S A = 16). Each algorithm runs ``--episodes`` episodes of ``--runs`` independent runs
(batched); the figure is run-episodes per second, best of ``--repeats`` (the CPU is shared: the minimum time
is the least disturbed). The goal of issue 12: the private algorithm at most 2x its non-private
counterpart's episode time. By default the checker-side figures (Assumption 2 eigenvalues, which cost one
extra eigh per side and episode for either algorithm) are off (``record_figures=False``), so that the
ratio measures the algorithms; ``--figures`` times them with the figures on. BLAS runs on ``--threads``
threads (threadpoolctl; default 1: on a shared 2-core machine a 2-thread batched eigh/inv of 64 x 64
matrices was measured 5-10x slower than 1 thread).
"""
import argparse

import numpy as np

from dpcheck.algorithms.envs import random_mdp
from dpcheck.algorithms.linear import OPPO, UCRLVTR, PrivateLinOptPO, PrivateLinOptVI, lm2, tabular_as_linear
from timing import best_of


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=256)
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--figures", action="store_true", help="also record the Assumption 2 figures")
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads (0 = library default)")
    args = ap.parse_args(argv)
    if args.threads > 0:
        from threadpoolctl import threadpool_limits
        threadpool_limits(args.threads)
    envs = {
        "LM-2": lm2(),
        "tabular S=A=4": tabular_as_linear(random_mdp(4, 4, 3, np.random.default_rng(0), reward_noise="bernoulli")),
    }
    kw = dict(record_figures=args.figures, record_estimates=False)
    pairs = [("VI", PrivateLinOptVI(1.0, **kw), UCRLVTR(1.0, **kw)),
             ("PO", PrivateLinOptPO(1.0, **kw), OPPO(1.0, **kw))]
    K, runs = args.episodes, args.runs
    print(f"episodes={K} runs={runs} repeats={args.repeats} figures={args.figures} threads={args.threads}")
    print(f"{'instance':<15} {'algorithm':<19} {'ep/s':>9} {'us/ep':>8} {'private/non-private time':>26}")
    for env_name, env in envs.items():
        for _, private, plain in pairs:
            private.run(env, 4, np.random.default_rng(0), runs=runs)        # warm-up (imports dp_accounting)
            tp = best_of(lambda: private.run(env, K, np.random.default_rng(1), runs=runs), args.repeats)
            tn = best_of(lambda: plain.run(env, K, np.random.default_rng(1), runs=runs), args.repeats)
            for alg, t in ((plain, tn), (private, tp)):
                ratio = f"{tp / tn:26.2f}" if alg is private else ""
                print(f"{env_name:<15} {alg.name:<19} {K * runs / t:9.0f} {1e6 * t / (K * runs):8.1f} {ratio}")


if __name__ == "__main__":
    main()
