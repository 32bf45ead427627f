"""Cost of a 10^6-samples-per-side audit of a scalar Laplace mechanism, as a ratio to numpy.

Baseline (timed in the same process): numpy drawing the 2 x 10^6 Laplace samples the audit
needs. Target: ratio <= 3 (sorting-based threshold search on the selection sample, counting
on the certification sample, no Python loops over samples). Best of ``--repeat`` runs each,
to discount a shared, noisy machine.

    python benchmarks/bench_laplace_audit.py [--samples 1000000] [--repeat 5]
"""
from __future__ import annotations

import argparse

import numpy as np

from dpcheck import AuditTarget, Claim
from dpcheck.blackbox import audit
from timing import timed_best


def noisy_count(count, rng, size):
    return rng.laplace(float(count), 1.0, size)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=10**6)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args(argv)
    target = AuditTarget("laplace", noisy_count, [(0, 1)], Claim(epsilon=1.0))
    audit(target, samples=10**4)                                   # warm-up (imports, caches)
    rng = np.random.default_rng(0)
    base, _ = timed_best(lambda: rng.laplace(0.0, 1.0, 2 * a.samples), a.repeat)
    t, res = timed_best(lambda: audit(target, samples=a.samples, seed=0), a.repeat)
    print(f"numpy: 2 x {a.samples} Laplace draws      {base * 1e3:8.1f} ms")
    print(f"audit: {a.samples} samples per side       {t * 1e3:8.1f} ms")
    print(f"ratio audit / numpy                  {t / base:8.2f}   (target <= 3)")
    print(f"eps_lb = {res.epsilon_lower_bound:.4f} (true 1), power {res.power:.4f}, verdict {res.verdict}")
    return t / base


if __name__ == "__main__":
    main()
