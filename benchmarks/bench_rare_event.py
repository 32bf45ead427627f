"""Mean certified bound of the black box on the tight-bounds mechanisms and on rare leaks.

For docs/blackbox_bounds.md, "A second, rare event per pair": run it at two commits (e.g. a worktree of the
commit before, with PYTHONPATH pointing at it) and compare the means.

    python benchmarks/bench_rare_event.py [--seeds 3] [--budgets 10000,100000]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.bench_tight_bounds import SETTINGS  # noqa: E402

from dpcheck import AuditTarget, Claim  # noqa: E402
from dpcheck.blackbox import audit  # noqa: E402


def spike(mass: float):
    """Laplace(d, 1); under d = 0 only, with probability ``mass`` an output far out (>= 50): not DP at any eps."""
    def mechanism(d, rng, size):
        out = rng.laplace(float(d), 1.0, size)
        if d == 0:
            s = rng.random(size) < mass
            out[s] = 50.0 + rng.exponential(1.0, int(s.sum()))
        return out
    return mechanism


def exact_with_probability(p: float):
    """Laplace(d, 1), but the exact value with probability p: violates (1, delta) for delta < p."""
    def mechanism(d, rng, size):
        return np.where(rng.random(size) < p, float(d), d + rng.laplace(0.0, 1.0, size))
    return mechanism


RARE = {
    "spike of mass 1e-3": (spike(1e-3), [(0, 1)], Claim(epsilon=1.0), (10**5,)),
    "spike of mass 5e-4": (spike(5e-4), [(0, 1)], Claim(epsilon=1.0), (10**5,)),
    "(1, 1e-5) claim, exact value w.p. 1e-4": (exact_with_probability(1e-4), [(1.0, 0.0)],
                                                Claim(epsilon=1.0, delta=1e-5), (10**6,)),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--budgets", default="10000,100000", help="budgets of the tight-bounds mechanisms")
    args = ap.parse_args()
    budgets = tuple(int(float(b)) for b in args.budgets.split(","))
    cases = {name: (m, pairs, claim, budgets) for name, (m, pairs, claim, _, _) in SETTINGS.items()}
    cases.update(RARE)
    print("| mechanism | samples/side | mean bound | bounds | verdicts |\n|---|---|---|---|---|")
    for name, (mech, pairs, claim, ns) in cases.items():
        for n in ns:
            rs = [audit(AuditTarget(name="bench", mechanism=mech, pairs=pairs, claim=claim), samples=n, seed=s)
                  for s in range(args.seeds)]
            lbs = [r.epsilon_lower_bound for r in rs]
            print(f"| {name} | {n:.0e} | {np.mean(lbs):.4f} | {', '.join(f'{b:.3f}' for b in lbs)} | "
                  f"{', '.join(r.verdict for r in rs)} |", flush=True)


if __name__ == "__main__":
    main()
