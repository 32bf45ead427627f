"""False-alarm rates of the statistical checks that can FAIL a default or --quick audit (issue 9).

    python benchmarks/false_alarm.py [--seeds 50] [--check NAME] [--config quick|default|all]
                                     [--privatizer central|local] [--out PATH]

A CI gate must never say FAIL (or PASS) wrongly at a rate above its stated level. This script runs
the check functions of the audits directly (not the whole audit, to keep the cost down) on the
REFERENCE implementations, one audit seed at a time, exactly as ``dpcheck audit NAME --seed s``
(--quick or default) builds them, and counts how often each check says FAIL. The reference
implementation satisfies every claim, so every FAIL is a false alarm. Printed per row: check id,
configuration, seeds, FAIL / inconclusive / PASS counts, the FAIL rate, its one-sided Clopper-Pearson
95% upper bound and the check's alpha. Results go to benchmarks/results/false_alarm.json.

Which checks can FAIL (read from audits/dp_ucbvi.py and audits/dp_nash_vi.py, central privatizer,
the default of both audits; ``--privatizer local`` measures dp_ucbvi's checks under --privatizer local):

measured here (statistical, no earlier validity measurement):
  dp_ucbvi   regret.exponent.<notion>, regret.privacy_cost.<notion>_K / _eps   (rate_checks)
             assumption.count_error_order_eps, assumption.count_error_order_K  (count_error_order_check)
  dp_ucbvi / dp_nash_vi   whitebox.tree_noise_reuse (max |z| < 6 on the tree's covariance)
  dp_nash_vi regret.exponent.nonprivate (the one regret check the audit does not soften)
  and, for comparison, the statistic regret.privacy_cost.<notion>_K used before issue 9 ("legacy": cumulative
  log-log slope, percentile bootstrap, FAIL above 0.35) on the same curves.
valid by construction (not re-measured):
  privacy.*.blackbox: Clopper-Pearson certified lower bounds on eps; validity over seeds measured in
      tests/test_blackbox.py / tests/test_blackbox_defects.py.
  assumption.count_error, .good_event, .optimism, .optimism_correlated, .certificate, regret.explicit_bound
      (theory mode): probability_check, exact two-sided Clopper-Pearson on independent runs; FAIL needs
      the lower bound > beta, so if the true failure rate is <= beta it errs with probability <= alpha/2.
  invariants (one counterexample fails; false-alarm rate 0 on a correct implementation):
      whitebox.dp_event, whitebox.sensitivity, privacy.dataflow, assumption.sum_consistency,
      .no_underestimation, .valid_transition, .monotone, .cce, .certificate_chain.
  never FAIL: dp_nash_vi's practical-mode checks (``Audit.soften``: a miss is inconclusive) -- every
      regret.exponent.jdp/.ldp, regret.privacy_cost.*, and the *.practical assumption checks;
      privacy.jdp.power (pass / inconclusive).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import replace

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

ALPHA = 0.05
CONFIGS = ("quick", "default")


def _key(k: str) -> int:
    """dpcheck.context.AuditContext.seed_sequence's encoding of a string key."""
    return int.from_bytes(k.encode()[:8].ljust(8, b"\0"), "little") % (2 ** 63)


# ----------------------------------------------------------------------------- dp_ucbvi
PRIVATIZER = {"name": "central"}      # set by --privatizer


def _ucbvi_spec():
    from audits.lib.ucbvi import AgentSpec
    spec = AgentSpec(privatizer=PRIVATIZER["name"], epsilon=1.0)
    return spec, replace(spec, mode="practical", width_mode="nominal")


def _eps_grid():
    """run()'s sweep: JDP (0.5, 1, 2, 4), LDP (8, 16, 32, 64) times --epsilon 1."""
    return (0.5, 1.0, 2.0, 4.0) if PRIVATIZER["name"] == "central" else (8.0, 16.0, 32.0, 64.0)


def ucbvi_curves(seed: int, config: str):
    """The regret sweep of ``dpcheck audit dp_ucbvi [--quick] --seed seed`` (eps = 1)."""
    from algorithms.envs.generators import random_mdp
    from audits.lib.ucbvi import practical_noise, regret_curves
    _, practical = _ucbvi_spec()
    if config == "quick":
        K_grid, runs = 2 ** np.arange(6, 14), 4
    else:
        K_grid, runs = 2 ** np.arange(7, 15), 8
    env = random_mdp(2, 2, 2, np.random.default_rng(seed + 7))
    K, at, s = int(K_grid[-1]), K_grid - 1, seed + 3
    base = replace(practical, privatizer="none", agent_class=None, mode="practical")
    R_np = regret_curves(base, env, K, runs, s)[:, at]
    curves = {e: regret_curves(practical_noise(practical, env.H, K, e), env, K, runs, s)[:, at]
              for e in _eps_grid()}
    return K_grid, R_np, curves, s


def legacy_privacy_cost_K(K_grid, R_np, R_priv, seed):
    """The statistic before issue 9: cumulative log-log slope of the cost on K >= K_grid[-4], percentile
    bootstrap, FAIL if the lower end > 0.35 (JDP) / 0.65 (LDP)."""
    from dpcheck.regret import fit_scaling
    cost = np.maximum(R_priv - R_np, 1e-9)
    late = K_grid >= K_grid[-4]
    lo, hi = fit_scaling(K_grid[late], cost[:, late], alpha=ALPHA, seed=seed).ci
    b = 0.35 if PRIVATIZER["name"] == "central" else 0.65
    return "pass" if hi <= b else "fail" if lo > b else "inconclusive"


def run_ucbvi_regret(seed: int, config: str) -> dict:
    from audits.lib.ucbvi import rate_checks
    K_grid, R_np, curves, s = ucbvi_curves(seed, config)
    eps_main = _eps_grid()[1]
    notion = "JDP" if PRIVATIZER["name"] == "central" else "LDP"
    out = {c.id: c.verdict for c in rate_checks(K_grid, R_np, curves, eps_main=eps_main, notion=notion,
                                                alpha=ALPHA, seed=s)}
    out[f"regret.privacy_cost.{notion.lower()}_K[legacy]"] = legacy_privacy_cost_K(K_grid, R_np, curves[eps_main], s)
    return out


def run_ucbvi_count_order(seed: int, config: str) -> dict:
    from audits.lib.ucbvi import count_error_order_check
    spec, _ = _ucbvi_spec()
    grid, runs = ((128, 512, 2048), 10) if config == "quick" else ((256, 1024, 4096), 20)
    return {c.id: c.verdict for c in count_error_order_check(spec, K_grid=grid, runs=runs, seed=seed, alpha=ALPHA)}


def run_tree_reuse(seed: int, config: str) -> dict:
    from algorithms.privatizers import load_privatizer
    from audits.lib import privatizers as pa
    p = load_privatizer("central", epsilon=1.0, beta=0.1, calibration="strict", width_mode="rigorous")
    runs = 1_000 if config == "quick" else 4_000
    return {"whitebox.tree_noise_reuse": pa.tree_reuse_check(p, runs=runs, seed=seed).verdict}


# ----------------------------------------------------------------------------- dp_nash_vi
def run_nash_nonprivate(seed: int, config: str) -> dict:
    """regret.exponent.nonprivate of ``dpcheck audit dp_nash_vi [--quick] --seed seed``."""
    from algorithms.games.testbeds import stochastic_pennies
    from audits.dp_nash_vi import REGRET
    from audits.lib.nash import REGRET_TOLERANCE, k_grid, regime, regret_job
    from dpcheck.regret import fit_increment_exponent, regret_exponent_check
    q = 1 if config == "quick" else 0
    seeds, Kr = REGRET["seeds"][q], REGRET["K"][q]
    common = int(np.random.SeedSequence([seed, _key("regret"), _key("common")]).generate_state(1)[0])
    r = regret_job(0, None, [("none", None, "strict", Kr, seeds)], stochastic_pennies(), common)
    dg = k_grid(Kr)
    at = np.searchsorted(r["grid"], dg)
    fit = fit_increment_exponent(dg, r["R"][:, at], window=(dg[0], dg[-2]), alpha=ALPHA, seed=seed)
    c = regret_exponent_check(fit, claimed=0.5, tolerance=REGRET_TOLERANCE, id="regret.exponent.nonprivate")
    return {c.id: regime(c, fit).verdict}


def _tag() -> str:
    """The notion in dp_ucbvi's rate-check ids (regret.exponent.jdp / .ldp, ...) for the --privatizer run."""
    return "jdp" if PRIVATIZER["name"] == "central" else "ldp"


def _ids(group: str) -> tuple:
    ids = GROUPS[group][2]
    return ids() if callable(ids) else ids


# check group -> (audits, function, the ids it yields)
GROUPS = {
    "ucbvi.regret": ("dp_ucbvi", run_ucbvi_regret,
                     lambda: tuple(i.format(t=_tag()) for i in ("regret.exponent.{t}", "regret.privacy_cost.{t}_K",
                                                                "regret.privacy_cost.{t}_eps",
                                                                "regret.privacy_cost.{t}_K[legacy]"))),
    "ucbvi.count_error_order": ("dp_ucbvi", run_ucbvi_count_order,
                                ("assumption.count_error_order_eps", "assumption.count_error_order_K")),
    "tree_noise_reuse": ("dp_ucbvi, dp_nash_vi", run_tree_reuse, ("whitebox.tree_noise_reuse",)),
    "nash.exponent_nonprivate": ("dp_nash_vi", run_nash_nonprivate, ("regret.exponent.nonprivate",)),
}


def cp_upper(k: int, n: int, alpha: float = 0.05) -> float:
    from dpcheck.stats import cp_upper as _cp
    return float(_cp(k, n, alpha))


def measure(group: str, config: str, seeds: int, progress=print) -> list[dict]:
    audit, fn, _ = GROUPS[group]
    ids = _ids(group)
    counts = {i: {"fail": 0, "inconclusive": 0, "pass": 0, "fail_seeds": []} for i in ids}
    t0 = time.perf_counter()
    for s in range(seeds):
        for cid, verdict in fn(s, config).items():
            counts[cid][verdict] += 1
            if verdict == "fail":
                counts[cid]["fail_seeds"].append(s)
    dt = time.perf_counter() - t0
    progress(f"  {group} [{config}]: {seeds} seeds in {dt:.0f} s")
    rows = []
    for cid, c in counts.items():
        n = seeds
        rows.append({"check": cid, "audit": audit, "config": config, "privatizer": PRIVATIZER["name"], "seeds": n, "fails": c["fail"],
                     "inconclusive": c["inconclusive"], "passes": c["pass"], "rate": c["fail"] / n,
                     "cp_upper_95": cp_upper(c["fail"], n), "alpha": ALPHA, "fail_seeds": c["fail_seeds"],
                     "seconds": round(dt, 1),
                     "within_alpha": c["fail"] / n <= ALPHA})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--check", action="append", help=f"a group ({', '.join(GROUPS)}) or a check id; repeatable")
    ap.add_argument("--config", choices=CONFIGS + ("all",), default="all")
    ap.add_argument("--privatizer", choices=("central", "local"), default="central",
                    help="dp_ucbvi's privatizer (the dp_nash_vi and tree-reuse rows are central only)")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "false_alarm.json"))
    a = ap.parse_args(argv)
    groups = list(GROUPS)
    if a.check:
        groups = [g for g in GROUPS if g in a.check or any(c in _ids(g) for c in a.check)]
        if not groups:
            ap.error(f"unknown check {a.check}; groups: {list(GROUPS)}")
    configs = CONFIGS if a.config == "all" else (a.config,)
    PRIVATIZER["name"] = a.privatizer
    if a.privatizer == "local":
        groups = [g for g in groups if g.startswith("ucbvi.")]
    rows = []
    for g in groups:
        for cfg in configs:
            rows += measure(g, cfg, a.seeds)
    if a.check:
        rows = [r for r in rows if r["check"] in a.check or any(r["check"] in _ids(g) for g in a.check
                                                               if g in GROUPS)]
    hdr = f"{'check':34s} {'audit':20s} {'config':16s} {'seeds':>5s} {'fails':>5s} {'inc':>4s} {'rate':>6s} " \
          f"{'CP95up':>7s} {'alpha':>5s}"
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        cfg = r["config"] + ("" if r["privatizer"] == "central" else f"/{r['privatizer']}")
        print(f"{r['check']:34s} {r['audit']:20s} {cfg:16s} {r['seeds']:5d} {r['fails']:5d} "
              f"{r['inconclusive']:4d} {r['rate']:6.3f} {r['cp_upper_95']:7.3f} {r['alpha']:5.2f}"
              + ("" if r["within_alpha"] else "  <-- above alpha"))
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    old = []
    if os.path.exists(a.out):
        with open(a.out) as f:
            old = json.load(f).get("rows", [])
    row_key = lambda r: (r["check"], r["config"], r.get("privatizer", "central"))
    cmd = "python benchmarks/false_alarm.py " + " ".join(argv if argv is not None else sys.argv[1:])
    for r in rows:
        r["command"] = cmd
    keep = {row_key(r) for r in rows}
    merged = [r for r in old if row_key(r) not in keep] + rows
    with open(a.out, "w") as f:
        json.dump({"schema": "dpcheck.false_alarm/1", "alpha": ALPHA,
                   "note": "FAIL counts of each check on the reference implementation, one audit seed per row "
                           "entry; cp_upper_95 is the one-sided Clopper-Pearson 95% upper bound on the rate",
                   "rows": merged}, f, indent=1)
    print(f"results: {a.out}")
    bad = [r for r in rows if not r["within_alpha"] and not r["check"].endswith("[legacy]")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
