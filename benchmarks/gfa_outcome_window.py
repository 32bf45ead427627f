"""Which K window and how many runs make private_gfa_outcome's `regret.exponent.private` decisive.

On the Appendix D instance the exponential mechanism concentrates abruptly: at eps = 8 the privacy cost
(private minus mean non-private regret) grows up to K ~ 2^12 and is flat beyond. For each regret seed this
draws `--runs` private runs (and 24 non-private ones) on K = 2^9..2^14 with common random numbers, exactly as
the audit does (audits/lib/gfa/regret.py, regret_curves), then decides the check on sub-windows and on
disjoint groups of runs, at the audit's levels (FAIL at the family-wise share of alpha = 0.05, PASS at 0.05).

    python benchmarks/gfa_outcome_window.py --seeds 100-115 --runs 96 --out benchmarks/results/gfa_outcome_window.md

Verdict letters: P pass, Pu pass (uninformative), I inconclusive, F fail.
"""
from __future__ import annotations

import argparse
import collections
import sys

import numpy as np

K_FULL = tuple(2 ** k for k in range(9, 15))
WINDOWS = {"2^9..2^12": (2 ** 9, 2 ** 12), "2^9..2^13": (2 ** 9, 2 ** 13), "2^9..2^14": (2 ** 9, 2 ** 14),
           "2^10..2^14": (2 ** 10, 2 ** 14)}


def instance():
    """The audit's default instance for Algorithm 2 and its per-start coverability C_cov."""
    from dpcheck.algorithms.gfa import per_start_coverability
    from dpcheck.audits.lib import gfa
    inst = gfa.instance_with_class(2, None, None)
    return inst, per_start_coverability(inst.mdp, inst.fclass).value


def curves(seed: int, runs: int, keep: str | None = None):
    """(private (runs, 6), non-private (24, 6)) final regrets on K_FULL; ``keep``: a folder where they are saved
    as c_SEED_RUNS.npz and read back on a rerun."""
    import os
    path = os.path.join(keep, f"c_{seed}_{runs}.npz") if keep else None
    if path and os.path.exists(path):
        d = np.load(path)
        return d["priv"], d["Rn"]
    from dpcheck.audits.lib import gfa
    inst, C = instance()
    priv, Rn = gfa.regret_curves(2, inst, K_grid=list(K_FULL), eps_list=[8.0], runs=runs, runs_np=24, delta=1e-5,
                                 tuning="theory", C_cov=C, seed=seed)
    if path:
        np.savez(path, priv=priv[8.0], Rn=Rn, K=list(K_FULL))
    return priv[8.0], Rn


def decide(P, Rn, window, seed: int, share: float, inst_C) -> tuple[str, float]:
    """The check's verdict letter and its one-sided PASS upper bound (nan when no exponent is fitted), by the
    audit's own decision (audits/lib/gfa/regret.py private_exponent_check) on the window's columns."""
    from dpcheck.audits.lib.gfa import RateSetting, _difference, private_exponent_check
    from dpcheck.stats import pass_level
    inst, C = inst_C
    sel = [j for j, k in enumerate(K_FULL) if window[0] <= k <= window[1]]
    rates = RateSetting(2, inst, tuple(K_FULL[j] for j in sel), 8.0, 1e-5, C, "paper", share, seed)
    with pass_level(0.05):
        c = private_exponent_check(rates, _difference(P[:, sel], Rn[:, sel]), {})
    letter = c.verdict[0].upper() + ("u" if "qualifier" in c.details else "")
    fit = c.details.get("fit")
    return letter, float(fit["ci_pass"][1]) if fit else float("nan")


def main(argv=None) -> int:
    from dpcheck.audits.private_gfa import PrivateGFAOutcomeAudit
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="100-115", help="regret seeds, a-b (inclusive)")
    ap.add_argument("--runs", type=int, default=96, help="private runs per seed (split into groups of --groups)")
    ap.add_argument("--groups", default="24,48,96", help="run counts to decide on (disjoint groups of the runs)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--keep", default=None, help="folder for the drawn curves (reused on a rerun)")
    a = ap.parse_args(argv)
    lo, hi = (int(x) for x in a.seeds.split("-"))
    groups = [int(g) for g in a.groups.split(",") if int(g) <= a.runs]
    share = 0.05 / sum(r.tests for r in PrivateGFAOutcomeAudit.claims)
    inst_C = instance()
    tally = collections.defaultdict(collections.Counter)
    upper = collections.defaultdict(list)
    for seed in range(lo, hi + 1):
        P, Rn = curves(seed, a.runs, a.keep)
        for wname, w in WINDOWS.items():
            for g in groups:
                for i in range(a.runs // g):
                    v, u = decide(P[i * g:(i + 1) * g], Rn, w, seed, share, inst_C)
                    tally[(wname, g)][v] += 1
                    if np.isfinite(u):
                        upper[(wname, g)].append(u)
        print(f"seed {seed} done", file=sys.stderr, flush=True)
    lines = [f"# private_gfa_outcome `regret.exponent.private`: window and runs (eps = 8, regret seeds {a.seeds})",
             "", f"    python benchmarks/gfa_outcome_window.py --seeds {a.seeds} --runs {a.runs}", "",
             "Each decision uses a disjoint group of a seed's private runs; the seed's 24 non-private runs are shared "
             "by its groups. The audit's defaults: 2^9..2^12 with 48 runs (`--quick`) and 96 runs (default).", "",
             "| window | runs | decisions | P | Pu | I | F | max one-sided 95% upper bound |", "|---|---|---|---|---|---|---|---|"]
    for (wname, g), t in sorted(tally.items(), key=lambda kv: (list(WINDOWS).index(kv[0][0]), kv[0][1])):
        u = upper[(wname, g)]
        lines.append(f"| {wname} | {g} | {sum(t.values())} | {t['P']} | {t['Pu']} | {t['I']} | {t['F']} | "
                     f"{max(u):.2f} |" if u else f"| {wname} | {g} | {sum(t.values())} | {t['P']} | {t['Pu']} | "
                     f"{t['I']} | {t['F']} | - |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
