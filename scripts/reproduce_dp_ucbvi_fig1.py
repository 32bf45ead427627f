"""Reproduce Figure 1 of Qiao & Wang (AISTATS 2023), DP-UCBVI, in practical mode (Qiao & Wang 2023, Section 7).

RiverSwim (S = 6, A = 2, H = 20, s_1 = 0), K = 50,000 episodes, 5 independent runs per algorithm:
non-private UCBVI, DP-UCBVI + Central Privatizer (JDP) and DP-UCBVI + Local Privatizer (LDP) at
eps in {0.5, 1, 5, 10} (the figure's legend is not recoverable; Section 7's recommended grid).

Practical mode (reports/reproductions/dp_ucbvi_fig1/README.md; every knob is written into the report):
* bonus: ``BonusConstants.practical()`` (iota = 1, Bernstein + Hoeffding at one sigma, privacy term
  E / N~, correction term off);
* noise: Chowdhury & Zhou's calibration, Lap(1/eps) per tree node (central) or per message
  coordinate (local) -- the privatizers run at eps_eff = eps * 3 H L (central) / eps * 3 H (local),
  calibration "paper". At the paper's own scale (3 H L / eps per node, ~1000x more noise) no
  private curve leaves the linear regime within 50,000 episodes (reports/reproductions/dp_ucbvi_fig1/README.md), so this is the only way
  to see the figure's shape. The curves are therefore eps_eff-JDP / LDP, NOT eps: labelled so.
* width E: the rigorous docs/derivations.md#widths-e width for that noise (so Assumption 3.1 holds and the monotone min
  cannot lock in noise, docs/derivations.md#readings);
* tie-breaking: seeded uniform; regret: exact expected regret per episode (policy evaluation);
* band: mean +- 1 standard deviation over the runs (as in Chowdhury & Zhou's plotting script);
* the curves of one worker share one batch of runs (dpcheck.algorithms.online.stacking.StackedPrivatizer):
  each keeps its own privatizer, noise stream and E; the environment stream is shared by the batch.

Usage:  python scripts/reproduce_dp_ucbvi_fig1.py [--K 50000] [--runs 5] [--workers 2] [--seed 0]
        [--out reports/reproductions/dp_ucbvi_fig1]
Writes report.md, results.json and fig1.png into --out.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

EPS_GRID = (0.5, 1.0, 5.0, 10.0)


def configurations():
    cfg = [("UCBVI", "none", None)]
    cfg += [(f"DP-UCBVI JDP eps={e:g}", "central", e) for e in EPS_GRID]
    cfg += [(f"DP-UCBVI LDP eps={e:g}", "local", e) for e in EPS_GRID]
    return cfg


def checkpoints(K: int, n: int = 200) -> np.ndarray:
    return np.unique(np.linspace(1, K, n).round().astype(int))


def make_privatizer(privatizer, eps, K, H):
    """(privatizer, eps_eff) in the practical noise calibration (module docstring)."""
    from dpcheck.algorithms.privatizers import load_privatizer, tree_levels
    if privatizer == "none":
        return load_privatizer("none"), None
    factor = 3 * H * (tree_levels(K) if privatizer == "central" else 1)
    eps_eff = eps * factor
    return load_privatizer(privatizer, epsilon=eps_eff, calibration="paper", width_mode="rigorous"), eps_eff


def run_group(group, K, runs, seed, H):
    """Several curves in ONE batch of runs (dpcheck.algorithms.online.stacking): each configuration keeps its
    own privatizer, noise stream and width E on its slice of the run axis; the agent's planning,
    simulation and regret evaluation are paid once per episode for the whole group."""
    from dpcheck.algorithms.envs.riverswim import riverswim
    from dpcheck.algorithms.online.stacking import StackedPrivatizer
    from dpcheck.algorithms.online.ucbvi import DPUCBVI

    env = riverswim(H)
    made = [make_privatizer(priv, eps, K, H) for _, priv, eps in group]
    stacked = StackedPrivatizer([(p, runs) for p, _ in made])
    agent = DPUCBVI(stacked, mode="practical", beta=0.1)
    t0 = time.perf_counter()
    res = agent.run(env, K, np.random.default_rng(seed), runs=runs * len(group), record=False, monitor=False)
    dt = time.perf_counter() - t0
    cum_all = res.cumulative_regret
    G = checkpoints(K)
    out = []
    for (label, priv, eps), (p, eps_eff), sl in zip(group, made, stacked.slices):
        cum = cum_all[sl]
        late = res.regret[sl, -max(1, K // 10):].mean(axis=1)
        out.append({"label": label, "privatizer": priv, "epsilon": eps, "epsilon_effective": eps_eff,
                    "width_E": float(p.width), "iota": res.iota, "seconds_group": dt,
                    "episodes_per_second_group": K * runs * len(group) / dt,
                    "checkpoints": G.tolist(), "cumulative": cum[:, G - 1].tolist(),
                    "late_per_episode": late.tolist(), "config": {**res.config, "privatizer": repr(p),
                                                                  "width": float(p.width)}})
    return out


def slope(x, y):
    x, y = np.log(np.asarray(x, float)), np.log(np.maximum(np.asarray(y, float), 1e-12))
    x = x - x.mean()
    return float((x * (y - y.mean())).sum() / (x * x).sum())


def evaluate(results, K):
    """The qualitative findings E1-E5 of Section 7, each with the numbers it rests on."""
    by = {r["label"]: r for r in results}
    final = {k: float(np.mean(np.asarray(v["cumulative"])[:, -1])) for k, v in by.items()}
    late = {k: float(np.mean(v["late_per_episode"])) for k, v in by.items()}
    G = np.asarray(results[0]["checkpoints"])
    last_decade = G >= K / 10
    np_curve = np.asarray(by["UCBVI"]["cumulative"]).mean(0)

    def cost(label):
        return np.asarray(by[label]["cumulative"]).mean(0) - np_curve

    jdp = [f"DP-UCBVI JDP eps={e:g}" for e in EPS_GRID]
    ldp = [f"DP-UCBVI LDP eps={e:g}" for e in EPS_GRID]
    out = {}
    e1 = all(final["UCBVI"] < final[k] for k in jdp + ldp)
    out["E1"] = {"claim": "non-private UCBVI has the lowest regret", "holds": e1,
                 "numbers": {"Regret(K)": final}}
    # E2: the JDP cost stops growing: late per-episode regret close to UCBVI's, cost flat in K
    jdp_slopes = {k: slope(G[last_decade], np.maximum(cost(k)[last_decade], 1e-9)) for k in jdp}
    e2_bad = [k for k in jdp if late[k] > 2 * late["UCBVI"] + 0.01]
    e2 = not e2_bad
    out["E2"] = {"claim": "the JDP cost is a small additive term that becomes negligible as K grows "
                          "(late per-episode regret <= 2 x UCBVI's + 0.01)", "holds": e2,
                 "violated_by": e2_bad,
                 "numbers": {"late_per_episode_regret": {k: late[k] for k in ["UCBVI"] + jdp},
                             "cost_slope_last_decade": jdp_slopes,
                             "cost_at_K": {k: float(cost(k)[-1]) for k in jdp}}}
    e3 = all(final[a] >= final[b] for grp in (jdp, ldp) for a, b in zip(grp, grp[1:]))
    out["E3"] = {"claim": "larger eps (weaker privacy) gives smaller regret (monotone over the grid, JDP and LDP)",
                 "holds": e3, "numbers": {"Regret(K)": {k: final[k] for k in jdp + ldp}}}
    e4 = all(final[l] > final[j] and late[l] > 2 * late["UCBVI"] for j, l in zip(jdp, ldp))
    out["E4"] = {"claim": "under LDP the privacy cost stays high and convergence takes much longer "
                          "(LDP regret above JDP's at every eps; late per-episode regret > 2 x UCBVI's)",
                 "holds": e4, "numbers": {"late_per_episode_regret": {k: late[k] for k in ldp}}}
    ldp_slopes = {k: slope(G[last_decade], np.maximum(cost(k)[last_decade], 1e-9)) for k in ldp}
    e5_bad = ([k for k, v in jdp_slopes.items() if v > 0.35]
              + [k for k, v in ldp_slopes.items() if not 0.3 <= v <= 1.0])
    e5 = not e5_bad
    out["E5"] = {"claim": "consistent with theory: JDP cost an additive constant (log-log slope of the cost "
                          "over the last decade of K <= 0.35), LDP cost growing like sqrt(K) (slope in [0.3, 1.0])",
                 "holds": e5, "violated_by": e5_bad,
                 "numbers": {"jdp_cost_slope": jdp_slopes, "ldp_cost_slope": ldp_slopes}}
    return out


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    colors = {0.5: "tab:red", 1.0: "tab:orange", 5.0: "tab:green", 10.0: "tab:blue"}
    for ax, kind, title in ((axes[0], "central", "DP-UCBVI, JDP (Central Privatizer)"),
                            (axes[1], "local", "DP-UCBVI, LDP (Local Privatizer)")):
        for r in results:
            if r["privatizer"] not in ("none", kind):
                continue
            x = np.asarray(r["checkpoints"])
            Y = np.asarray(r["cumulative"])
            m, s = Y.mean(0), Y.std(0)
            c = "black" if r["privatizer"] == "none" else colors[r["epsilon"]]
            lab = "UCBVI" if r["privatizer"] == "none" else f"eps={r['epsilon']:g}"
            ax.plot(x, m, color=c, lw=1.3, label=lab)
            ax.fill_between(x, m - s, m + s, color=c, alpha=0.2, lw=0)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("episode k")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
    axes[0].set_ylabel("cumulative regret (mean +- 1 sd)")
    axes[1].set_ylabel("(different scale)", fontsize=7)
    fig.suptitle("RiverSwim, H = 20 (practical mode: Lap(1/eps) per node / coordinate)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def markdown(meta, results, findings):
    lines = ["# Reproduction: Qiao & Wang (AISTATS 2023), Figure 1 — DP-UCBVI on RiverSwim", "",
             f"Regenerate: `{meta['command']}` ({meta['seconds']:.0f} s on {meta['workers']} worker(s)).", "",
             "**Practical mode** (reports/reproductions/dp_ucbvi_fig1/README.md): the paper's constants make the bonus exceed H for "
             "every (h,s,a) over 50,000 episodes, so regret would be linear. Knobs, all ours:", "",
             "* bonus: `BonusConstants.practical()` — iota = 1, term 1 coefficient 1, term 2 sqrt(1/N~), "
             "privacy term E/N~ (no 20 H S iota), correction term off;",
             "* noise: Chowdhury & Zhou's calibration, **Lap(1/eps) per tree node (JDP) / per message coordinate "
             "(LDP)**; i.e. the Central / Local Privatizer at eps_eff = eps·3HL (= eps·960 here) / eps·3H "
             "(= eps·60), calibration \"paper\". The curves are eps_eff-private, **not** eps-private;",
             "* width E: rigorous docs/derivations.md#widths-e width of that noise (Assumption 3.1 holds; no lock-in by the monotone min);",
             "* tie-breaking: seeded uniform; regret: exact expected regret per episode (policy evaluation on "
             "the true model), cumulated;",
             "* band: mean ± 1 standard deviation over the runs.", "",
             f"Setting: RiverSwim S = 6, A = 2, H = {meta['H']}, K = {meta['K']}, {meta['runs']} runs, "
             f"beta = 0.1, seed {meta['seed']}. Environment, noise and tie-breaking use separate seeded streams; "
             "every algorithm gets the same seed.", "", "![Figure 1](fig1.png)", "",
             "| algorithm | eps | eps_eff | E | Regret(K) mean ± sd | late regret / episode | batch episodes/s |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        Y = np.asarray(r["cumulative"])[:, -1]
        lines.append(f"| {r['label']} | {r['epsilon'] if r['epsilon'] is not None else '-'} | "
                     f"{r['epsilon_effective'] if r['epsilon_effective'] is not None else '-'} | {r['width_E']:.4g} | "
                     f"{Y.mean():.1f} ± {Y.std():.1f} | {np.mean(r['late_per_episode']):.4f} | "
                     f"{r.get('episodes_per_second_group', r.get('episodes_per_second', float('nan'))):.0f} |")
    lines += ["", "## Findings E1–E5 (Section 7 of the paper)", ""]
    for key, f in findings.items():
        bad = f.get("violated_by")
        why = f" Violated by: {', '.join(bad)}." if bad else ""
        lines.append(f"* **{key}** {'holds' if f['holds'] else 'does NOT hold'} — {f['claim']}.{why}")
    if not (findings["E2"]["holds"] and findings["E5"]["holds"]):
        lines += ["", "Reading (criteria fixed in evaluate() before any run): a failing E2 / E5 at small eps "
                  "means K is too short there -- a JDP cost whose last-decade log-log slope is still above 0.35 "
                  "has not flattened yet, and an LDP cost slope near 1 means the LDP curve is still in its "
                  "burn-in (E_local ~ sqrt(K)/eps exceeds the visit counts). Compare the slopes in results.json "
                  "with fig1.png."]
    lines += ["", "Numbers behind each finding are in `results.json` (`findings`)."]
    return "\n".join(lines) + "\n"


def write(out, meta, results, findings):
    plot(results, os.path.join(out, "fig1.png"))
    for r in results:  # 0.01 regret resolution keeps the committed JSON small
        r["cumulative"] = np.round(np.asarray(r["cumulative"], float), 2).tolist()
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"meta": meta, "findings": findings, "results": results}, f,
                  default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o))
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(markdown(meta, results, findings))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--K", type=int, default=50_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--H", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default="reports/reproductions/dp_ucbvi_fig1")
    ap.add_argument("--render-only", action="store_true",
                    help="re-evaluate and re-render report.md / fig1.png from an existing results.json in --out")
    a = ap.parse_args(argv)
    if a.render_only:
        with open(os.path.join(a.out, "results.json")) as f:
            old = json.load(f)
        meta, results = old["meta"], old["results"]
        findings = evaluate(results, meta["K"])
        write(a.out, meta, results, findings)
        print("re-rendered " + ", ".join(f"{k}: {'holds' if v['holds'] else 'FAILS'}" for k, v in findings.items()))
        return 0
    from joblib import Parallel, delayed
    t0 = time.perf_counter()
    cfg = configurations()
    # longest jobs first so two workers stay balanced
    # one stacked batch per worker: UCBVI + the JDP curves, and the LDP curves (similar cost)
    n_groups = max(1, min(a.workers, len(cfg)))
    groups = [cfg[:5], cfg[5:]] if n_groups == 2 else [cfg[i::n_groups] for i in range(n_groups)]
    done = Parallel(n_jobs=n_groups)(delayed(run_group)(g, a.K, a.runs, a.seed, a.H) for g in groups)
    by_label = {r["label"]: r for grp in done for r in grp}
    results = [by_label[c[0]] for c in cfg]
    seconds = time.perf_counter() - t0
    findings = evaluate(results, a.K)
    os.makedirs(a.out, exist_ok=True)
    cmd = "python scripts/reproduce_dp_ucbvi_fig1.py" + ("" if argv is None and len(sys.argv) == 1 else
                                                         " " + " ".join(sys.argv[1:] if argv is None else argv))
    meta = {"command": cmd, "K": a.K, "runs": a.runs, "H": a.H, "seed": a.seed, "workers": a.workers,
            "seconds": seconds, "eps_grid": list(EPS_GRID), "band": "mean +- 1 sd over runs",
            "mode": "practical", "noise": "Lap(1/eps) per node / coordinate (eps_eff = eps*3HL / eps*3H, calibration paper)",
            "width_mode": "rigorous"}
    write(a.out, meta, results, findings)
    print(f"done in {seconds:.1f} s; " + ", ".join(f"{k}: {'holds' if v['holds'] else 'FAILS'}"
                                                  for k, v in findings.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
