"""False-alarm rates: of whole audits (issue 17) and of the statistical checks of the online audits (issue 9).

    python benchmarks/false_alarm.py --audit all [--config quick|default|all] [--seeds 60] [--jobs 2]
                                     [--runs PATH] [--out PATH]
    python benchmarks/false_alarm.py [--seeds 50] [--check NAME] [--config quick|default|all]
                                     [--privatizer central|local] [--out PATH]

Whole-audit mode (``--audit``): every registered audit (or the ones named) is run whole on its reference
implementation, as ``dpcheck audit NAME [--quick] --seed s`` for s = 0..seeds-1, and the table gives the
audit-level FAIL rate (any check FAILs: a false alarm) with its Clopper-Pearson 95% upper bound, and for
every check how often it was INCONCLUSIVE (issue 17: at most 10% of --quick seeds, 5% of default seeds).
Finished runs are appended to ``--runs`` (one JSON line each) and never redone, so a long measurement
can be stopped and resumed; delete the file after changing the code. Results:
benchmarks/results/false_alarm_audits.json and .md.

Check mode (below):

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
      tests/core/test_blackbox.py / tests/core/test_blackbox_defects.py.
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
    from dpcheck.audits.lib.ucbvi import AgentSpec
    spec = AgentSpec(privatizer=PRIVATIZER["name"], epsilon=1.0)
    return spec, replace(spec, mode="practical", width_mode="nominal")


def _eps_grid():
    """run()'s sweep: JDP (0.5, 1, 2, 4), LDP (8, 16, 32, 64) times --epsilon 1."""
    return (0.5, 1.0, 2.0, 4.0) if PRIVATIZER["name"] == "central" else (8.0, 16.0, 32.0, 64.0)


def ucbvi_curves(seed: int, config: str):
    """The regret sweep of ``dpcheck audit dp_ucbvi [--quick] --seed seed`` (eps = 1)."""
    from dpcheck.algorithms.envs.generators import random_mdp
    from dpcheck.audits.lib.ucbvi import practical_noise, regret_curves
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
    lo, hi = fit_scaling(K_grid[late], cost[:, late], alpha=ALPHA, seed=seed, interval="percentile").ci
    b = 0.35 if PRIVATIZER["name"] == "central" else 0.65
    return "pass" if hi <= b else "fail" if lo > b else "inconclusive"


def run_ucbvi_regret(seed: int, config: str) -> dict:
    from dpcheck.audits.lib.ucbvi import rate_checks
    K_grid, R_np, curves, s = ucbvi_curves(seed, config)
    eps_main = _eps_grid()[1]
    notion = "JDP" if PRIVATIZER["name"] == "central" else "LDP"
    out = {c.id: c.verdict for c in rate_checks(K_grid, R_np, curves, eps_main=eps_main, notion=notion,
                                                alpha=ALPHA, seed=s)}
    out[f"regret.privacy_cost.{notion.lower()}_K[legacy]"] = legacy_privacy_cost_K(K_grid, R_np, curves[eps_main], s)
    return out


def run_ucbvi_count_order(seed: int, config: str) -> dict:
    from dpcheck.audits.lib.ucbvi import count_error_order_check
    spec, _ = _ucbvi_spec()
    grid, runs = ((128, 512, 2048), 10) if config == "quick" else ((256, 1024, 4096), 20)
    return {c.id: c.verdict for c in count_error_order_check(spec, K_grid=grid, runs=runs, seed=seed, alpha=ALPHA)}


def run_tree_reuse(seed: int, config: str) -> dict:
    from dpcheck.algorithms.privatizers import load_privatizer
    from dpcheck.audits.lib import privatizers as pa
    p = load_privatizer("central", epsilon=1.0, beta=0.1, calibration="strict", width_mode="rigorous")
    runs = 1_000 if config == "quick" else 4_000
    return {"whitebox.tree_noise_reuse": pa.tree_reuse_check(p, runs=runs, seed=seed).verdict}


# ----------------------------------------------------------------------------- dp_nash_vi
def run_nash_nonprivate(seed: int, config: str) -> dict:
    """regret.exponent.nonprivate of ``dpcheck audit dp_nash_vi [--quick] --seed seed``."""
    from dpcheck.algorithms.games.testbeds import stochastic_pennies
    from dpcheck.audits.dp_nash_vi import REGRET
    from dpcheck.audits.lib.nash import nonprivate_exponent_check, regret_job
    q = 1 if config == "quick" else 0
    seeds, Kr = REGRET["seeds"][q], REGRET["K"][q]
    common = int(np.random.SeedSequence([seed, _key("regret"), _key("common")]).generate_state(1)[0])
    r = regret_job(0, None, [("none", None, "strict", Kr, seeds)], stochastic_pennies(), common)
    c = nonprivate_exponent_check(r, Kr, alpha=ALPHA, seed=seed, plots=False)
    return {c.id: c.verdict}


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


# ----------------------------------------------------------------------------- whole audits (issue 17)
# Every registered audit, run whole as ``dpcheck audit NAME [--quick] --seed s`` on the reference
# implementation: the audit-level FAIL rate (any check FAILs) must stay <= alpha, the family-wise level of
# the audit's verdict (dpcheck.audit.Audit.family_size), and no check may be INCONCLUSIVE too often.
AUDITS = ("laplace_example", "dp_apvi", "dp_vapvi", "dp_ucbvi", "dp_nash_vi", "private_linopt_vi",
          "private_linopt_po", "private_gfa", "private_gfa_outcome", "central_privatizer", "local_privatizer",
          "offline_gaussian_privatizer", "offline_laplace_privatizer", "offline_count_privatizer",
          "offline_regression_privatizer", "linear_stream_privatizer", "gfa_selection_mechanism", "diffprivlib")
# issue 17: no check INCONCLUSIVE in more than this share of the seeds
DECISIVE = {"quick": 0.10, "default": 0.05}
SHORT = {"pass": "p", "fail": "f", "inconclusive": "i"}
LONG = {v: k for k, v in SHORT.items()}


def run_audit(name: str, config: str, seed: int) -> dict:
    """One whole audit in this process, as the command line runs it (no report files)."""
    from dpcheck import registry
    from dpcheck.context import AuditContext, AuditOptions
    t0 = time.perf_counter()
    ctx = AuditContext(name, AuditOptions(seed=seed, alpha=ALPHA, quick=config == "quick"))
    registry.load()[name].run(ctx)
    rep = ctx.report()
    return {"audit": name, "config": config, "seed": seed, "verdict": rep["verdict"],
            "checks": {c["id"]: SHORT[c["verdict"]] for c in rep["checks"]},
            "family": {k: rep["family"][k] for k in ("tests", "alpha_per_check", "error_bound")},
            "seconds": round(time.perf_counter() - t0, 2)}


def _rev() -> str:
    import subprocess
    try:
        return subprocess.run(["git", "describe", "--always", "--dirty"], cwd=HERE, capture_output=True,
                              text=True, timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _load_runs(path: str) -> dict:
    runs = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                try:
                    r = json.loads(line)
                except json.JSONDecodeError:
                    continue                     # a line cut short by a kill: that run is redone
                runs[(r["audit"], r["config"], r["seed"])] = r
    return runs


def measure_audits(names, configs, seeds: int, runs_path: str, jobs: int = 1, progress=print) -> list[dict]:
    """Run every (audit, config, seed) not yet in ``runs_path`` (one JSON line per finished run, so a
    long measurement resumes), then summarise the runs of seeds 0..seeds-1."""
    from joblib import Parallel, delayed
    done = _load_runs(runs_path)
    todo = [(n, c, s) for n in names for c in configs for s in range(seeds) if (n, c, s) not in done]
    rev = _rev()
    if todo:
        progress(f"{len(todo)} audit runs to do ({len(done)} done in {runs_path}), {jobs} jobs")
        os.makedirs(os.path.dirname(os.path.abspath(runs_path)), exist_ok=True)
        t0 = time.perf_counter()
        with open(runs_path, "a") as f:
            for i, r in enumerate(Parallel(n_jobs=jobs, return_as="generator_unordered")(
                    delayed(run_audit)(*t) for t in todo), 1):
                r["rev"] = rev
                f.write(json.dumps(r) + "\n")
                f.flush()
                done[(r["audit"], r["config"], r["seed"])] = r
                progress(f"  [{time.perf_counter() - t0:6.0f}s] {i}/{len(todo)} {r['audit']} [{r['config']}] "
                         f"seed {r['seed']}: {r['verdict']} ({r['seconds']:.0f} s)")
    rows = []
    for n in names:
        for c in configs:
            rs = [done[(n, c, s)] for s in range(seeds) if (n, c, s) in done]
            if not rs:
                continue
            k = len(rs)
            fails = [r["seed"] for r in rs if r["verdict"] == "fail"]
            per_check = {}
            for r in rs:
                for cid, v in r["checks"].items():
                    d = per_check.setdefault(cid, {"fail": 0, "inconclusive": 0, "pass": 0})
                    d[LONG[v]] += 1
            checks = [{"check": cid, **d, "inconclusive_rate": d["inconclusive"] / k,
                       "decisive": d["inconclusive"] / k <= DECISIVE[c]} for cid, d in per_check.items()]
            rows.append({"audit": n, "config": c, "seeds": k, "alpha": ALPHA, "fails": len(fails),
                         "fail_seeds": fails, "fail_rate": len(fails) / k, "cp_upper_95": cp_upper(len(fails), k),
                         "inconclusive_runs": sum(r["verdict"] == "inconclusive" for r in rs),
                         "family_tests": rs[0]["family"]["tests"],
                         "max_error_bound": max(r["family"]["error_bound"] for r in rs),
                         "median_seconds": float(np.median([r["seconds"] for r in rs])),
                         "revs": sorted({r.get("rev", "unknown") for r in rs}),
                         "within_alpha": len(fails) / k <= ALPHA,
                         "undecisive_checks": [x["check"] for x in checks if not x["decisive"]],
                         "checks": checks})
    return rows


def audit_table(rows) -> str:
    """The Markdown table of benchmarks/results/false_alarm_audits.md."""
    out = ["| audit | config | seeds | FAIL runs | FAIL rate | CP 95% upper | inconclusive runs | checks inconclusive "
           "above the limit (rate) |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        bad = ", ".join(f"{x['check']} ({x['inconclusive_rate']:.0%})" for x in r["checks"] if not x["decisive"])
        out.append(f"| {r['audit']} | {r['config']} | {r['seeds']} | {r['fails']} | {r['fail_rate']:.3f} | "
                   f"{r['cp_upper_95']:.3f} | {r['inconclusive_runs']} | {bad or 'none'} |")
    return "\n".join(out)


def audits_main(a, argv) -> int:
    names = AUDITS if a.audit == ["all"] else tuple(a.audit)
    configs = CONFIGS if a.config == "all" else (a.config,)
    rows = measure_audits(names, configs, a.seeds, a.runs, jobs=a.jobs)
    print(audit_table(rows))
    out = a.out if a.out_given else os.path.join(HERE, "results", "false_alarm_audits.json")
    cmd = "python benchmarks/false_alarm.py " + " ".join(argv if argv is not None else sys.argv[1:])
    old = []
    if os.path.exists(out):
        with open(out) as f:
            old = json.load(f).get("rows", [])
    keep = {(r["audit"], r["config"]) for r in rows}
    for r in rows:
        r["command"] = cmd
    merged = [r for r in old if (r["audit"], r["config"]) not in keep] + rows
    merged.sort(key=lambda r: (AUDITS.index(r["audit"]) if r["audit"] in AUDITS else 99, r["config"]))
    with open(out, "w") as f:
        json.dump({"schema": "dpcheck.false_alarm_audits/1", "alpha": ALPHA, "decisive": DECISIVE,
                   "note": "whole audits on the reference implementations, one seed per run; fails = runs with any "
                           "FAIL (a false alarm: every claim holds); cp_upper_95 = one-sided Clopper-Pearson 95% "
                           "upper bound on the audit-level FAIL rate; per check, how often it was inconclusive",
                   "rows": merged}, f, indent=1)
    with open(os.path.splitext(out)[0] + ".md", "w") as f:
        cmds = "\n".join(f"    {c}" for c in dict.fromkeys(r["command"] for r in merged))
        f.write("# False alarms and decisiveness of every audit\n\nalpha = "
                f"{ALPHA} (family-wise); limits on inconclusive checks: {DECISIVE}. Made by\n\n{cmds}\n\n"
                + audit_table(merged) + "\n")
    print(f"results: {out}")
    bad = [r for r in rows if not r["within_alpha"]]
    return 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--check", action="append", help=f"a group ({', '.join(GROUPS)}) or a check id; repeatable")
    ap.add_argument("--config", choices=CONFIGS + ("all",), default="all")
    ap.add_argument("--privatizer", choices=("central", "local"), default="central",
                    help="dp_ucbvi's privatizer (the dp_nash_vi and tree-reuse rows are central only)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--audit", action="append",
                    help=f"whole-audit mode: an audit name ({', '.join(AUDITS)}) or 'all'; repeatable")
    ap.add_argument("--runs", default=os.path.join(HERE, "results", "false_alarm_runs.jsonl"),
                    help="whole-audit mode: one JSON line per finished run; resumed, not redone")
    ap.add_argument("--jobs", type=int, default=1, help="whole-audit mode: audit runs in parallel")
    a = ap.parse_args(argv)
    a.out_given = a.out is not None
    if a.audit:
        if a.out_given and not a.out.endswith(".json"):
            # the table goes beside it (OUT with .md): a .md OUT was overwritten by its own table and then
            # failed to load as JSON on the next run
            ap.error(f"--out {a.out}: whole-audit mode writes its JSON there and the .md table beside it; "
                     "give a path ending in .json")
        return audits_main(a, argv)
    if a.out is None:
        a.out = os.path.join(HERE, "results", "false_alarm.json")
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
