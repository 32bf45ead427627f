"""Multi-core scaling of the streamed black box (dpcheck/blackbox.py), in one run.

Prints, for a scalar Laplace mechanism at ``--samples`` per side (one pair, pure DP):
  floor   the one-core RNG floor: numpy drawing the 2 x samples Laplace values in one call;
  t1, t2  the audit with --workers 1 and --workers 2 (best of ``--repeat``; the loky pool is warmed up
          first, as it is for every chunked pass after the first of a run);
  t1 / floor (goal <= 2 at 10^7 per side) and t1 / t2 (goal >= 1.8), and the serial fraction f that
  Amdahl's law, t2 / t1 = f + (1 - f) / 2, implies, with the speedup it predicts on 16 cores,
  1 / (f + (1 - f) / 16).
The machine's load average is printed with the figures: on a shared machine they are upper bounds on
the times and lower bounds on the speedup. So the same figures are also derived from CPU times, which
contention inflates far less: the floor's and the 1-worker run's CPU seconds, and for the 2-worker run
the main process's CPU seconds S (choosing the events, dispatching, gathering: counted as serial) and
the workers' P (psutil), whose ideal time on two free cores is S + P / 2. (With 2 workers the event choice runs
in two threads of the main process, so S is partly parallel and S + P / 2 an upper bound: the wall figures are
the measurement.) The ceiling t1 / ((S + P) / 2) is the most the 2-worker run could gain with the CPU it spends,
were every second of it packed onto both cores: below the goal, no scheduling reaches it, only less CPU.

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


def cpu_run(fn):
    """(wall s, main-process CPU s, CPU s of its child processes (the loky workers), result)."""
    try:
        import psutil
    except ImportError:                   # pragma: no cover - psutil is optional here
        psutil = None

    def kids():
        if psutil is None:
            return {}
        out = {}
        for k in psutil.Process().children(recursive=True):
            try:
                t = k.cpu_times()
                out[k.pid] = t.user + t.system
            except psutil.Error:
                pass
        return out
    k0, c0, w0 = kids(), time.process_time(), time.perf_counter()
    out = fn()
    w1, c1, k1 = time.perf_counter(), time.process_time(), kids()
    return w1 - w0, c1 - c0, sum(v - k0.get(pid, 0.0) for pid, v in k1.items()), out


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
    # every run is timed in wall and CPU seconds at once; the best of --repeat of each
    fl = min((cpu_run(lambda: rng.laplace(0.0, 1.0, 2 * a.samples).size) for _ in range(a.repeat)), key=lambda r: r[0])
    one = [cpu_run(lambda: audit(target, samples=a.samples, seed=0, workers=1)) for _ in range(a.repeat)]
    two = [cpu_run(lambda: audit(target, samples=a.samples, seed=0, workers=2)) for _ in range(a.repeat)]
    floor, t1, t2 = fl[0], min(r[0] for r in one), min(r[0] for r in two)
    r1, r2 = one[0][3], two[0][3]
    c_floor, c1 = fl[1], min(r[1] for r in one)
    _, main2, work2, _ = min(two, key=lambda r: r[1] + r[2])
    for k, r in enumerate(two):
        print(f"2-worker run {k}: wall {r[0]:.3f} s, main CPU {r[1]:.3f} s, workers CPU {r[2]:.3f} s")
    ideal2 = main2 + work2 / 2
    cpu_speedup = c1 / ideal2
    cpu_f = min(max(2.0 / cpu_speedup - 1.0, 0.0), 1.0)
    ceiling = t1 / ((main2 + work2) / 2)                # a perfectly packed 2-core run of the same CPU seconds
    load1 = os.getloadavg()
    same = r1.to_dict() == r2.to_dict()
    speedup = t1 / t2
    f = min(max(2.0 / speedup - 1.0, 0.0), 1.0)          # Amdahl with 2 workers
    s16 = 1.0 / (f + (1.0 - f) / 16)
    fig = {"samples": a.samples, "repeat": a.repeat, "cpus": os.cpu_count(), "loadavg_before": load0[0],
           "loadavg_after": load1[0], "floor_s": floor, "t1_s": t1, "t2_s": t2, "t1_over_floor": t1 / floor,
           "speedup_2": speedup, "serial_fraction": f, "predicted_speedup_16": s16, "identical": same,
           "epsilon_lower_bound": r1.epsilon_lower_bound, "verdict": r1.verdict,
           "cpu": {"floor_s": c_floor, "t1_s": c1, "t2_main_s": main2, "t2_workers_s": work2,
                   "t2_ideal_s": ideal2, "t1_over_floor": c1 / c_floor, "speedup_2": cpu_speedup,
                   "serial_fraction": cpu_f, "predicted_speedup_16": 1.0 / (cpu_f + (1.0 - cpu_f) / 16),
                   "ceiling_speedup_2": ceiling}}
    print(f"machine: {os.cpu_count()} CPU(s), load average {load0[0]:.2f} before, {load1[0]:.2f} after")
    print(f"floor  numpy, 2 x {a.samples} Laplace draws, one core   {floor:8.3f} s")
    print(f"t1     audit, {a.samples} per side, --workers 1        {t1:8.3f} s")
    print(f"t2     audit, {a.samples} per side, --workers 2        {t2:8.3f} s")
    print(f"t1 / floor                                       {t1 / floor:8.2f}   (goal <= 2)")
    print(f"t1 / t2 (2-worker speedup)                       {speedup:8.2f}   (goal >= 1.8)")
    print(f"implied serial fraction f                        {f:8.3f}   -> 16 cores: {s16:.1f}x")
    print(f"reports identical for 1 and 2 workers: {same}; eps_lb = {r1.epsilon_lower_bound:.4f} "
          f"(true 1), {r1.verdict}")
    print("CPU seconds (less sensitive to a shared machine):")
    print(f"floor {c_floor:.3f}, t1 {c1:.3f} (t1 / floor {c1 / c_floor:.2f}); 2 workers: main {main2:.3f} + "
          f"workers {work2:.3f} -> ideal t2 <= main + workers / 2 = {ideal2:.3f} (main runs 2 threads while choosing)")
    print(f"speedup {cpu_speedup:.2f}, serial fraction {cpu_f:.3f} -> 16 cores: "
          f"{fig['cpu']['predicted_speedup_16']:.1f}x")
    print(f"ceiling t1 / ((main + workers) / 2), every CPU second packed on both cores: {ceiling:.2f} (goal >= 1.8)")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(fig, fh, indent=1)
    return fig


if __name__ == "__main__":
    main()
