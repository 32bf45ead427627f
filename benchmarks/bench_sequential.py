"""Sequential black box (dpcheck.sequential, docs/sequential.md): false alarms under optional stopping and
samples to detect the broken examples of examples/mechanisms.py.

    python benchmarks/bench_sequential.py --runs 1000 --slow-runs 100 --budget 2000 --detect-runs 40 \
        --detect-budget 100000 --sim-runs 10000 --sim-steps 2000

1. False alarms: ``--runs`` whole sequential audits (seeds 0..runs-1, events re-chosen before every
   batch, stop at the first crossing of 1/alpha) of every *correct* example mechanism at ``--budget``
   outputs per side (the slow ones -- vector outputs, zCDP -- at most ``--slow-runs``: the time there is);
   the FAIL rate with its one-sided Clopper-Pearson 95 % upper bound (must be consistent with <= alpha).
   Also the null-boundary simulation of the bare e-process (Bernoulli streams with p = e^eps q exactly,
   ``--sim-runs`` runs of ``--sim-steps`` steps), the worst case for a fixed event.
2. Detection: ``--detect-runs`` sequential audits of every *broken* example at ``--detect-budget``;
   the median / 90th percentile / max samples per side used (first batch included) and the detection rate.
3. Tightness against the batch auditor at the same budget (the reason sequential is not the default).

Writes benchmarks/results/sequential.json and .md.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from examples import mechanisms as M  # noqa: E402

from dpcheck import AuditTarget, Claim, stats  # noqa: E402
from dpcheck.blackbox import audit  # noqa: E402
from dpcheck.sequential import increments, lambda_cap, log_wealth  # noqa: E402

RNM_PAIRS = [([0, 0, 0, 0, 0], [1, 1, 1, 1, 1]), ([1, 0, 0, 0, 0], [0, 1, 0, 0, 0])]
HIST_PAIR = [([10, 5, 3, 1], [11, 5, 3, 1])]


def correct():
    """(name, target, slow) of the eps-DP / zCDP example mechanisms used as documented. slow: a run costs
    seconds (vector outputs refit naive-Bayes and logistic scorers before every batch; zCDP tests four
    profile points), so it gets at most --slow-runs runs."""
    return [
        ("laplace_count(1)", AuditTarget("laplace", M.laplace_count(1.0), [(0, 1)], Claim(epsilon=1.0)), False),
        ("geometric(0.5)", AuditTarget("geometric", M.geometric(0.5), [(0, 1)], Claim(epsilon=0.5)), False),
        ("report_noisy_max(1) index", AuditTarget("rnm", M.report_noisy_max(1.0), RNM_PAIRS, Claim(epsilon=1.0)),
         False),
        ("gaussian(1), rho=0.5 zCDP", AuditTarget("gauss", M.gaussian(1.0), [(0, 1)], Claim(rho=0.5, notion="zCDP")),
         True),
        ("noisy_histogram(1)", AuditTarget("histogram", M.noisy_histogram(1.0), HIST_PAIR, Claim(epsilon=1.0)),
         True),
    ]


def broken():
    """(name, target, true eps) of the documented defects."""
    return [
        ("laplace_count(1, scale_factor=0.5) [2x]",
         AuditTarget("lap2x", M.laplace_count(1.0, scale_factor=0.5), [(0, 1)], Claim(epsilon=1.0)), 2.0),
        ("noisy_histogram(0.1, scale=0.1) [100x]",
         AuditTarget("hist", M.noisy_histogram(0.1, scale=0.1), HIST_PAIR, Claim(epsilon=0.1)), 10.0),
        ("report_noisy_max(1, return_value=True) [2.5x]",
         AuditTarget("rnmv", M.report_noisy_max(1.0, return_value=True), RNM_PAIRS, Claim(epsilon=1.0)), 2.5),
    ]


def upper95(k, n):
    return float(stats.cp_upper(k, n, 0.05))


def false_alarms(runs, budget, alpha, say, slow_runs=None, out=None, save=lambda: None):
    out = [] if out is None else out
    for name, t, slow in correct():
        runs_here = min(runs, slow_runs) if slow and slow_runs is not None else runs
        t0 = time.perf_counter()
        fails, used, lbs = 0, [], []
        for s in range(runs_here):
            r = audit(t, samples=budget, seed=s, alpha=alpha, sequential=True)
            fails += r.verdict == "fail"
            used.append(r.samples_used)
            lbs.append(r.epsilon_lower_bound)
        row = {"mechanism": name, "runs": runs_here, "budget": budget, "fails": fails, "rate": fails / runs_here,
               "cp_upper_95": upper95(fails, runs_here), "alpha": alpha,
               "lower_bound_max": float(max(lbs)), "claimed": float(r.epsilon_claimed),
               "seconds": round(time.perf_counter() - t0, 1)}
        say(f"false alarms {name}: {fails}/{runs_here} (CP95 upper {row['cp_upper_95']:.4f}), "
            f"max eps_lb {row['lower_bound_max']:.3g} vs claimed {row['claimed']:.3g}, {row['seconds']} s")
        out.append(row)
        save()
    return out


def simulated(sim_runs, steps, alpha, seed=0):
    """The bare e-process at the null boundary p = e^eps q (a Laplace threshold event at t >= 1), any stop."""
    rng = np.random.default_rng(seed)
    rows = []
    for eps, q in ((1.0, 0.5 * math.exp(-1.5)), (0.1, 0.3), (3.0, 0.01)):
        p = math.exp(eps) * q
        k = 0
        for lo in range(0, sim_runs, 1000):            # blocks of 1000 runs (memory)
            m = min(1000, sim_runs - lo)
            hx, hy = rng.random((m, steps)) < p, rng.random((m, steps)) < q
            lw = log_wealth(increments(hx, hy, eps, 0.0), float(lambda_cap(eps, 0.0)))
            k += int((lw >= math.log(1 / alpha)).any(axis=1).sum())
        rows.append({"eps": eps, "p": p, "q": q, "runs": sim_runs, "steps": steps, "crossed": k,
                     "rate": k / sim_runs, "cp_upper_95": upper95(k, sim_runs), "alpha": alpha})
    return rows


def detection(runs, budget, alpha, say):
    out = []
    for name, t, true_eps in broken():
        t0 = time.perf_counter()
        used, fails, lbs = [], 0, []
        for s in range(runs):
            r = audit(t, samples=budget, seed=s, alpha=alpha, sequential=True)
            fails += r.verdict == "fail"
            used.append(r.samples_used)
            lbs.append(r.epsilon_lower_bound)
        u = np.array(used)
        row = {"mechanism": name, "runs": runs, "budget": budget, "detected": fails,
               "median_samples_per_side": float(np.median(u)), "p90_samples_per_side": float(np.quantile(u, 0.9)),
               "max_samples_per_side": int(u.max()), "claimed": float(r.epsilon_claimed), "true_eps": true_eps,
               "median_lower_bound": float(np.median(lbs)), "max_lower_bound": float(max(lbs)),
               "seconds": round(time.perf_counter() - t0, 1)}
        say(f"detection {name}: {fails}/{runs} caught, median {row['median_samples_per_side']:.0f} samples per side "
            f"(p90 {row['p90_samples_per_side']:.0f}), {row['seconds']} s")
        out.append(row)
    return out


def tightness(budget, seeds, alpha, say):
    t = correct()[0][1]
    rows = []
    for s in range(seeds):
        b = audit(t, samples=budget, seed=s, alpha=alpha)
        q = audit(t, samples=budget, seed=s, alpha=alpha, sequential=True)
        rows.append({"seed": s, "budget": budget, "batch_eps_lb": b.epsilon_lower_bound,
                     "sequential_eps_lb": q.epsilon_lower_bound, "batch_verdict": b.verdict,
                     "sequential_verdict": q.verdict, "batch_power": b.power, "sequential_power": q.power})
    say(f"tightness laplace(1) at {budget}: batch eps_lb {np.median([r['batch_eps_lb'] for r in rows]):.3g}, "
        f"sequential {np.median([r['sequential_eps_lb'] for r in rows]):.3g} (medians over {seeds} seeds)")
    return rows


def markdown(res) -> str:
    a = res["args"]
    lines = ["# Sequential black box: false alarms and samples to detect", "",
             f"Command: `{res['command']}`", "",
             f"alpha = {a['alpha']}. Code: dpcheck/sequential.py; method and validity: docs/sequential.md."
             + ("" if res.get("complete") else " **Partial: the run was stopped before every section finished.**"),
             "",
             f"## False alarms of whole sequential audits (correct mechanisms, budget {a['budget']} per side, "
             "stop at the first crossing)", "",
             "| mechanism | runs | FAILs | rate | CP 95 % upper | max eps_lb / claimed |", "|---|---|---|---|---|---|"]
    for r in res["false_alarms"]:
        lines.append(f"| {r['mechanism']} | {r['runs']} | {r['fails']} | {r['rate']:.4f} | {r['cp_upper_95']:.4f} | "
                     f"{r['lower_bound_max']:.3g} / {r['claimed']:.3g} |")
    lines += ["", "## The bare e-process at the null boundary (p = e^eps q, fixed event, any stopping time)", "",
              "| eps | q | runs x steps | crossed 1/alpha | rate | CP 95 % upper |", "|---|---|---|---|---|---|"]
    for r in res["simulated"]:
        lines.append(f"| {r['eps']} | {r['q']:.4g} | {r['runs']} x {r['steps']} | {r['crossed']} | {r['rate']:.4f} | "
                     f"{r['cp_upper_95']:.4f} |")
    lines += ["", f"## Samples per side to detect the broken examples (budget {a['detect_budget']})", "",
              "| mechanism | runs | detected | median | p90 | max | median eps_lb (true) |",
              "|---|---|---|---|---|---|---|"]
    for r in res["detection"]:
        lines.append(f"| {r['mechanism']} | {r['runs']} | {r['detected']} | {r['median_samples_per_side']:.0f} | "
                     f"{r['p90_samples_per_side']:.0f} | {r['max_samples_per_side']} | "
                     f"{r['median_lower_bound']:.3g} ({r['true_eps']:g}) |")
    if res.get("tightness"):
        lines += ["", f"## eps lower bound on a PASS, batch vs sequential (Laplace eps = 1, budget "
                  f"{res['tightness'][0]['budget']})", "", "| seed | batch eps_lb | sequential eps_lb |",
                  "|---|---|---|"]
        for r in res["tightness"]:
            lines.append(f"| {r['seed']} | {r['batch_eps_lb']:.4f} | {r['sequential_eps_lb']:.4f} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--slow-runs", type=int, default=200, help="at most this many runs of the slow mechanisms")
    ap.add_argument("--detect-runs", type=int, default=100)
    ap.add_argument("--detect-budget", type=int, default=100_000)
    ap.add_argument("--sim-runs", type=int, default=10_000)
    ap.add_argument("--sim-steps", type=int, default=5000)
    ap.add_argument("--tightness-budget", type=int, default=100_000)
    ap.add_argument("--tightness-seeds", type=int, default=3)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--skip-false-alarms", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "sequential"))
    a = ap.parse_args(argv)
    say = lambda m: print(m, flush=True)  # noqa: E731
    res = {"command": "python benchmarks/bench_sequential.py " + " ".join(argv if argv is not None else sys.argv[1:]),
           "args": vars(a)}
    res.update(simulated=[], detection=[], tightness=[], false_alarms=[], complete=False)

    def save():
        # after every section and every mechanism: a long run stopped early keeps what it finished
        Path(a.out + ".json").write_text(json.dumps(res, indent=1, default=float) + "\n")
        Path(a.out + ".md").write_text(markdown(res))

    res["simulated"] = simulated(a.sim_runs, a.sim_steps, a.alpha)
    for r in res["simulated"]:
        say(f"bare e-process eps={r['eps']} q={r['q']:.3g}: {r['crossed']}/{r['runs']} crossed")
    save()
    res["detection"] = detection(a.detect_runs, a.detect_budget, a.alpha, say)
    save()
    res["tightness"] = tightness(a.tightness_budget, a.tightness_seeds, a.alpha, say) if a.tightness_seeds else []
    save()
    if not a.skip_false_alarms:
        false_alarms(a.runs, a.budget, a.alpha, say, a.slow_runs, res["false_alarms"], save)
    res["complete"] = True
    save()
    say(f"wrote {a.out}.json and {a.out}.md")


if __name__ == "__main__":
    main()
