"""Multi-core scaling of the streamed black box (dpcheck/blackbox.py), in one run.

Prints, for a scalar Laplace mechanism at ``--samples`` per side (one pair, pure DP):
  floor   the one-core RNG floor: numpy drawing the 2 x samples Laplace values in one call;
  t1, t2  the audit with --workers 1 and --workers 2 (best of ``--repeat``; the loky pool is warmed up
          first, as it is for every chunked pass after the first of a run);
  t1 / floor (goal <= 2 at 10^7 per side) and t1 / t2 (goal >= 1.8), and the serial fraction f that
  Amdahl's law, t2 / t1 = f + (1 - f) / 2, implies, with the speedup it predicts on 16 cores,
  1 / (f + (1 - f) / 16).
The machine's load average is printed with the figures: on a shared machine they are upper bounds on
the times and lower bounds on the speedup.

    python benchmarks/bench_blackbox_scaling.py [--samples 10000000] [--repeat 2] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from dpcheck import AuditTarget, Claim
from dpcheck.blackbox import audit


def noisy_count(count, rng, size):
    return rng.laplace(float(count), 1.0, size)


def best_of(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=10**7)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--json", default=None, help="also write the figures to this file")
    a = ap.parse_args(argv)
    target = AuditTarget("laplace", noisy_count, [(0, 1)], Claim(epsilon=1.0))
    audit(target, samples=10**5, workers=2)                        # warm-up: imports, the loky pool
    load0 = os.getloadavg()
    rng = np.random.default_rng(0)
    floor, _ = best_of(lambda: rng.laplace(0.0, 1.0, 2 * a.samples), a.repeat)
    t1, r1 = best_of(lambda: audit(target, samples=a.samples, seed=0, workers=1), a.repeat)
    t2, r2 = best_of(lambda: audit(target, samples=a.samples, seed=0, workers=2), a.repeat)
    load1 = os.getloadavg()
    same = r1.to_dict() == r2.to_dict()
    speedup = t1 / t2
    f = min(max(2.0 / speedup - 1.0, 0.0), 1.0)          # Amdahl with 2 workers
    s16 = 1.0 / (f + (1.0 - f) / 16)
    fig = {"samples": a.samples, "repeat": a.repeat, "cpus": os.cpu_count(), "loadavg_before": load0[0],
           "loadavg_after": load1[0], "floor_s": floor, "t1_s": t1, "t2_s": t2, "t1_over_floor": t1 / floor,
           "speedup_2": speedup, "serial_fraction": f, "predicted_speedup_16": s16, "identical": same,
           "epsilon_lower_bound": r1.epsilon_lower_bound, "verdict": r1.verdict}
    print(f"machine: {os.cpu_count()} CPU(s), load average {load0[0]:.2f} before, {load1[0]:.2f} after")
    print(f"floor  numpy, 2 x {a.samples} Laplace draws, one core   {floor:8.3f} s")
    print(f"t1     audit, {a.samples} per side, --workers 1        {t1:8.3f} s")
    print(f"t2     audit, {a.samples} per side, --workers 2        {t2:8.3f} s")
    print(f"t1 / floor                                       {t1 / floor:8.2f}   (goal <= 2)")
    print(f"t1 / t2 (2-worker speedup)                       {speedup:8.2f}   (goal >= 1.8)")
    print(f"implied serial fraction f                        {f:8.3f}   -> 16 cores: {s16:.1f}x")
    print(f"reports identical for 1 and 2 workers: {same}; eps_lb = {r1.epsilon_lower_bound:.4f} "
          f"(true 1), {r1.verdict}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(fig, fh, indent=1)
    return fig


if __name__ == "__main__":
    main()
