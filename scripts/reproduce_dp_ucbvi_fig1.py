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

Also (labelled rows): the eight private curves at the paper's own noise scale (eps_eff = eps, ``--paper-runs``),
and UCBVI + the practical JDP curves at ``--long-eps`` rerun to ``--K-long`` so that E2 / E5 are judged where a
flattening JDP cost is possible (:func:`flattening`); the report opens with a claim table computed from all of it.

Usage:  python scripts/reproduce_dp_ucbvi_fig1.py [--K 50000] [--runs 5] [--workers 2] [--seed 0] [--paper-runs 3]
        [--K-long 200000] [--long-runs 2] [--long-eps 0.5 1] [--reduced] [--render-only]
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
PAPER_SUFFIX = " (paper scale)"
EXTENDED_SUFFIX = " (long run)"
REDUCED = ["--K", "1000", "--runs", "2", "--paper-runs", "1", "--K-long", "3000", "--long-runs", "1", "--workers", "1"]


def configurations(suffix=""):
    cfg = [("UCBVI", "none", None)] if not suffix else []
    cfg += [(f"DP-UCBVI JDP eps={e:g}{suffix}", "central", e) for e in EPS_GRID]
    cfg += [(f"DP-UCBVI LDP eps={e:g}{suffix}", "local", e) for e in EPS_GRID]
    return cfg


def long_configurations(eps_list):
    """UCBVI and the practical JDP curves at ``eps_list``, for the longer run that tests E2 / E5."""
    return [("UCBVI" + EXTENDED_SUFFIX, "none", None)] + [
        (f"DP-UCBVI JDP eps={e:g}{EXTENDED_SUFFIX}", "central", e) for e in eps_list]


def checkpoints(K: int, n: int = 200) -> np.ndarray:
    return np.unique(np.linspace(1, K, n).round().astype(int))


def make_privatizer(privatizer, eps, K, H, scale="practical"):
    """(privatizer, eps_eff) in the practical noise calibration (module docstring), or at the paper's own scale
    (``scale="paper"``: the privatizer at eps itself, Lap(3 H L / eps) per node / Lap(3 H / eps) per coordinate)."""
    from dpcheck.algorithms.privatizers import load_privatizer, tree_levels
    if privatizer == "none":
        return load_privatizer("none"), None
    factor = 1 if scale == "paper" else 3 * H * (tree_levels(K) if privatizer == "central" else 1)
    eps_eff = eps * factor
    return load_privatizer(privatizer, epsilon=eps_eff, calibration="paper", width_mode="rigorous"), eps_eff


def run_group(group, K, runs, seed, H, scale="practical"):
    """Several curves in ONE batch of runs (dpcheck.algorithms.online.stacking): each configuration keeps its
    own privatizer, noise stream and width E on its slice of the run axis; the agent's planning,
    simulation and regret evaluation are paid once per episode for the whole group."""
    from dpcheck.algorithms.envs.riverswim import riverswim
    from dpcheck.algorithms.online.stacking import StackedPrivatizer
    from dpcheck.algorithms.online.ucbvi import DPUCBVI

    env = riverswim(H)
    made = [make_privatizer(priv, eps, K, H, scale) for _, priv, eps in group]
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
                    "scale": scale, "K": K, "runs": runs, "S": env.S, "A": env.A,
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


def flattening(r):
    """When can this curve's privacy cost flatten? The privacy term of the bonus at (h, s, a) is E / N~ with
    N~ ~ N <= k at episode k, so it stays above 1 (the largest one-step reward) at EVERY triple until episode E:
    E >= K means the cost cannot flatten within the run, and E > K / 10 means the last decade of K (where E2 / E5
    read the slope) starts before any triple's privacy bonus can drop below 1 -- E2 / E5 are not testable there.
    ``burn_in`` = S (A - 1) E: each of the S (A - 1) suboptimal (s, a) of a step must be taken about E times
    before its bonus drops below one reward, and an episode takes one action per step (an estimate, not a bound)."""
    E, K = float(r["width_E"]), int(r["K"])
    return {"E": E, "K": K, "E_exceeds_K": E >= K, "testable": E <= K / 10,
            "burn_in": r["S"] * (r["A"] - 1) * E}


def e2_e5(findings, results, long_results):
    """E2 and E5 restricted to the JDP curves that can flatten within their run (:func:`flattening`): for each
    eps the longest run available; a curve that cannot flatten is INCONCLUSIVE (reason given), never a pass."""
    runs = {}
    for group in (results, long_results):
        if not group:
            continue
        by = {r["label"].replace(EXTENDED_SUFFIX, ""): r for r in group}
        K = group[0]["K"]
        G = np.asarray(group[0]["checkpoints"])
        last = G >= K / 10
        np_curve = np.asarray(by["UCBVI"]["cumulative"]).mean(0)
        late_np = float(np.mean(by["UCBVI"]["late_per_episode"]))
        for e in EPS_GRID:
            r = by.get(f"DP-UCBVI JDP eps={e:g}")
            if r is None:
                continue
            cost = np.asarray(r["cumulative"]).mean(0) - np_curve
            late = float(np.mean(r["late_per_episode"]))
            runs.setdefault(f"{e:g}", []).append(dict(flattening(r), K=K, label=r["label"], late=late,
                                                      late_ucbvi=late_np,
                                                      e2=late <= 2 * late_np + 0.01,
                                                      slope=slope(G[last], np.maximum(cost[last], 1e-9))))
    per = {}
    for e, lst in runs.items():
        r = max(lst, key=lambda x: x["K"])
        r["e5"] = r["slope"] <= 0.35
        per[e] = r
    for key, test in (("E2", "e2"), ("E5", "e5")):
        tested = {e: r for e, r in per.items() if r["testable"]}
        bad = [e for e, r in tested.items() if not r[test]]
        if key == "E5":
            bad_ldp = findings["E5"]["numbers"]["ldp_cost_slope"]
            bad_ldp = [k for k, v in bad_ldp.items() if not 0.3 <= v <= 1.0]
        else:
            bad_ldp = []
        untested = [e for e in per if e not in tested]
        status = ("fails" if bad or bad_ldp else "INCONCLUSIVE" if untested or not tested else "holds")
        findings[key]["status"] = status
        findings[key]["holds"] = status == "holds"
        findings[key]["per_eps"] = per
        findings[key]["not_testable"] = untested
        findings[key]["violated_by_tested"] = [f"JDP eps={e}" for e in bad] + bad_ldp
    for key in ("E1", "E3", "E4"):
        findings[key]["status"] = "holds" if findings[key]["holds"] else "fails"
    return findings


def paper_scale(results_paper, K):
    """The paper's own noise scale: per curve E, whether E >= K, the last-decade log-log slope of the cumulative
    regret (1 = linear) and Regret(K)."""
    out = {}
    for r in results_paper:
        G = np.asarray(r["checkpoints"])
        last = G >= K / 10
        cum = np.asarray(r["cumulative"]).mean(0)
        out[r["label"]] = dict(flattening(r), regret=float(cum[-1]), slope=slope(G[last], cum[last]),
                               privatizer=r["privatizer"], epsilon=r["epsilon"])
    return out


PAPER_CLAIMS = {  # Qiao & Wang 2023, Section 7 (text under Figure 1)
    "E1": "non-private UCBVI has the best performance",
    "E2": "the cost of privacy under JDP is a small constant, negligible as K grows",
    "E3": "weaker privacy (larger eps) gives smaller regret",
    "E4": "under LDP the cost stays high and convergence takes much longer",
    "E5": "consistent with theory: JDP cost an additive constant, LDP cost multiplicative"}


def claim_table(meta, results, findings, paper_rows, long_results):
    """Rows (claim or cell, paper, ours, holds?, why), every number from this run."""
    by = {r["label"]: r for r in results}
    final = findings["E1"]["numbers"]["Regret(K)"]
    rows = []
    K = meta["K"]
    rows.append(("E1", PAPER_CLAIMS["E1"], f"Regret(K = {K}) UCBVI {final['UCBVI']:.0f}, lowest private "
                 f"{min(v for k, v in final.items() if k != 'UCBVI'):.0f}", findings["E1"]["status"],
                 "direct comparison of the practical-scale curves"))
    for key in ("E2", "E5"):
        f = findings[key]
        parts = []
        for e, r in f["per_eps"].items():
            state = ("not testable" if not r["testable"] else
                     ("ok" if r["e2" if key == "E2" else "e5"] else "fails"))
            parts.append(f"eps={e} at K = {r['K']}: E = {r['E']:.4g}, late/episode {r['late']:.4f} (UCBVI "
                         f"{r['late_ucbvi']:.4f}), cost slope {r['slope']:.2f}, burn-in S(A-1)E = {r['burn_in']:.3g} "
                         f"-> {state}")
        if key == "E5":
            parts.append("LDP cost slopes " + ", ".join(f"{k.split(' ')[-1]}: {v:.2f}"
                                                       for k, v in f["numbers"]["ldp_cost_slope"].items()))
        why = "; ".join(parts)
        if f["not_testable"]:
            why += (f". Not testable (E > K/10: the privacy bonus E/N~ >= 10 E / K > 1 at every triple when the "
                    f"last decade starts): eps = {', '.join(f['not_testable'])}")
        ours = ("practical JDP curves, longest run per eps" + (f" (K = {long_results[0]['K']} for eps in "
                f"{meta['long_eps']})" if long_results else ""))
        rows.append((key, PAPER_CLAIMS[key], ours, f["status"], why))
    rows.append(("E3", PAPER_CLAIMS["E3"], "Regret(K) " + ", ".join(f"{k.replace('DP-UCBVI ', '')} {v:.0f}"
                 for k, v in findings["E3"]["numbers"]["Regret(K)"].items()), findings["E3"]["status"],
                 "monotone in eps within JDP and within LDP" if findings["E3"]["holds"] else "not monotone"))
    rows.append(("E4", PAPER_CLAIMS["E4"], "LDP late regret/episode " + ", ".join(
                 f"{k.split(' ')[-1]}: {v:.3f}" for k, v in findings["E4"]["numbers"]["late_per_episode_regret"].items()),
                 findings["E4"]["status"], f"UCBVI late regret/episode {np.mean(by['UCBVI']['late_per_episode']):.4f}"))
    for kind, name in (("central", "JDP"), ("local", "LDP")):
        rs = {k: v for k, v in paper_rows.items() if v["privatizer"] == kind}
        if not rs:
            continue
        lin = [k for k, v in rs.items() if v["slope"] >= 0.9]
        over = sorted(v["epsilon"] for v in rs.values() if v["E_exceeds_K"])
        rows.append((f"Figure 1 {name} curves at the paper's noise (Lap(3H{' log K' if kind == 'central' else ''}/eps))",
                     "sublinear curves (Figure 1)",
                     "Regret(K) " + ", ".join(f"eps={v['epsilon']:g}: {v['regret']:.0f}" for v in rs.values())
                     + "; last-decade slope " + ", ".join(f"{v['slope']:.2f}" for v in rs.values()),
                     "no" if lin else "yes",
                     (f"{len(lin)} of {len(rs)} curves linear (slope >= 0.9); " if lin else "")
                     + "E = " + ", ".join(f"{v['E']:.3g}" for v in rs.values()) + f" vs K = {K}"
                     + (f": E >= K at eps = {', '.join(f'{e:g}' for e in over)}, so the privacy bonus exceeds 1 at every "
                        "triple for the whole run" if over else "")))
    return rows


def referee_paragraph(meta):
    return ("How to check: the practical rows use Lap(1/eps) per tree node / coordinate (Chowdhury & Zhou's "
            f"calibration, eps_eff = eps·3HL = eps·{3 * meta['H'] * meta['L']} for JDP and eps·3H = eps·{3 * meta['H']} "
            "for LDP); the rows marked '(paper scale)' run the privatizers at eps itself, the paper's Lap(3H log K/eps) / "
            f"Lap(3H/eps) ({meta['paper_runs']} runs each). E2 / E5 are judged only on JDP curves whose width E is at most "
            "K/10 (`flattening()`: until episode E the privacy term E/N~ exceeds one reward at every (h, s, a), so no "
            f"cost can flatten before it); the JDP curves at eps in {meta['long_eps']} are rerun to K = {meta['K_long']} "
            f"({meta['long_runs']} runs) so that their last decade lies past that point. Slopes, E and late regret per "
            "curve are in `results.json` (`findings.E2.per_eps`, `paper_scale`).")


def plot(results, path, paper_results=()):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3 if paper_results else 2, figsize=(13.5 if paper_results else 9, 3.6))
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
    if paper_results:
        ax = axes[2]
        for r in paper_results:
            x, Y = np.asarray(r["checkpoints"]), np.asarray(r["cumulative"])
            ax.plot(x, Y.mean(0), "-" if r["privatizer"] == "central" else "--", color=colors[r["epsilon"]], lw=1.2,
                    label=f"{'JDP' if r['privatizer'] == 'central' else 'LDP'} eps={r['epsilon']:g}")
        ax.set_title("paper's noise scale: Lap(3H log K/eps) (JDP), Lap(3H/eps) (LDP)", fontsize=8)
        ax.set_xlabel("episode k")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, loc="upper left")
    axes[0].set_ylabel("cumulative regret (mean +- 1 sd)")
    axes[1].set_ylabel("(different scale)", fontsize=7)
    fig.suptitle("RiverSwim, H = 20 (panels 1-2 practical mode: Lap(1/eps) per node / coordinate)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def markdown(meta, results, findings, paper_results=(), long_results=(), paper_rows=None):
    lines = ["# Reproduction: Qiao & Wang (AISTATS 2023), Figure 1 — DP-UCBVI on RiverSwim", "",
             "| claim or cell | paper (Section 7) | ours | holds? | why |", "|---|---|---|---|---|"]
    lines += [f"| {' | '.join(row)} |" for row in claim_table(meta, results, findings, paper_rows or {}, long_results)]
    lines += ["", referee_paragraph(meta), "",
             f"Regenerate: `{meta['command']}` ({meta['seconds']:.0f} s on {meta['workers']} worker(s)).", "",
             "**Practical mode** (reports/reproductions/dp_ucbvi_fig1/README.md): the paper's constants make the bonus exceed H for "
             "every (h,s,a) over 50,000 episodes, so regret would be linear. Knobs, all ours:", "",
             "* bonus: `BonusConstants.practical()` — iota = 1, term 1 coefficient 1, term 2 sqrt(1/N~), "
             "privacy term E/N~ (no 20 H S iota), correction term off;",
             "* noise: Chowdhury & Zhou's calibration, **Lap(1/eps) per tree node (JDP) / per message coordinate "
             f"(LDP)**; i.e. the Central / Local Privatizer at eps_eff = eps·3HL (= eps·{3 * meta['H'] * meta.get('L', 16)} here) / eps·3H "
             f"(= eps·{3 * meta['H']}), calibration \"paper\". The curves are eps_eff-private, **not** eps-private;",
             "* width E: rigorous docs/derivations.md#widths-e width of that noise (Assumption 3.1 holds; no lock-in by the monotone min);",
             "* tie-breaking: seeded uniform; regret: exact expected regret per episode (policy evaluation on "
             "the true model), cumulated;",
             "* band: mean ± 1 standard deviation over the runs.", "",
             f"Setting: RiverSwim S = 6, A = 2, H = {meta['H']}, K = {meta['K']}, {meta['runs']} runs, "
             f"beta = 0.1, seed {meta['seed']}. Environment, noise and tie-breaking use separate seeded streams; "
             "every algorithm gets the same seed.", "", "![Figure 1](fig1.png)", "",
             "| algorithm | eps | eps_eff | E | Regret(K) mean ± sd | late regret / episode | batch episodes/s |",
             "|---|---|---|---|---|---|---|"]
    for r in list(results) + list(paper_results) + list(long_results):
        Y = np.asarray(r["cumulative"])[:, -1]
        lines.append(f"| {r['label']} | {r['epsilon'] if r['epsilon'] is not None else '-'} | "
                     f"{r['epsilon_effective'] if r['epsilon_effective'] is not None else '-'} | {r['width_E']:.4g} | "
                     f"{Y.mean():.1f} ± {Y.std():.1f} | {np.mean(r['late_per_episode']):.4f} | "
                     f"{r.get('episodes_per_second_group', r.get('episodes_per_second', float('nan'))):.0f} |")
    lines += ["", "Rows marked '(paper scale)' use the paper's noise (eps_eff = eps, "
              f"{meta.get('paper_runs', '-')} runs); rows marked '(long run)' are the practical UCBVI / JDP curves rerun "
              f"to K = {meta.get('K_long', '-')} ({meta.get('long_runs', '-')} runs) for E2 / E5; their Regret(K) is at "
              "that K.", "", "## Findings E1–E5 (Section 7 of the paper)", ""]
    for key, f in findings.items():
        bad = f.get("violated_by_tested", f.get("violated_by"))
        why = f" Violated by: {', '.join(bad)}." if bad else ""
        if f.get("not_testable"):
            why += f" Not testable within the run at eps = {', '.join(f['not_testable'])}."
        lines.append(f"* **{key}** {f.get('status', 'holds' if f['holds'] else 'fails')} — {f['claim']}.{why}")
    if "per_eps" not in findings["E2"] and not (findings["E2"]["holds"] and findings["E5"]["holds"]):
        lines += ["", "Reading (criteria fixed in evaluate() before any run): a failing E2 / E5 at small eps "
                  "means K is too short there -- a JDP cost whose last-decade log-log slope is still above 0.35 "
                  "has not flattened yet, and an LDP cost slope near 1 means the LDP curve is still in its "
                  "burn-in (E_local ~ sqrt(K)/eps exceeds the visit counts). Compare the slopes in results.json "
                  "with fig1.png."]
    lines += ["", "Numbers behind each finding are in `results.json` (`findings`)."]
    return "\n".join(lines) + "\n"


def write(out, meta, results, findings, paper_results=(), long_results=(), paper_rows=None):
    plot(results, os.path.join(out, "fig1.png"), paper_results)
    for r in list(results) + list(paper_results) + list(long_results):  # 0.01 regret resolution keeps the JSON small
        r["cumulative"] = np.round(np.asarray(r["cumulative"], float), 2).tolist()
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"meta": meta, "findings": findings, "results": results, "paper_scale_results": list(paper_results),
                   "long_results": list(long_results), "paper_scale": paper_rows or {}}, f,
                  default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o))
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(markdown(meta, results, findings, paper_results, long_results, paper_rows))


def analyse(meta, results, paper_results, long_results):
    findings = e2_e5(evaluate(results, meta["K"]), results, long_results)
    return findings, paper_scale(paper_results, meta["K"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--K", type=int, default=50_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--H", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--paper-runs", type=int, default=3, help="runs per curve at the paper's noise scale (0: skip)")
    ap.add_argument("--K-long", type=int, default=200_000, help="K of the longer JDP run for E2 / E5 (0: skip)")
    ap.add_argument("--long-runs", type=int, default=2)
    ap.add_argument("--long-eps", type=float, nargs="*", default=[0.5, 1.0],
                    help="practical JDP budgets rerun to --K-long")
    ap.add_argument("--reduced", action="store_true", help="a small, fast configuration (tests): " + " ".join(REDUCED))
    ap.add_argument("--out", default="reports/reproductions/dp_ucbvi_fig1")
    ap.add_argument("--render-only", action="store_true",
                    help="re-evaluate and re-render report.md / fig1.png from an existing results.json in --out")
    args = list(sys.argv[1:] if argv is None else argv)
    a = ap.parse_args(args)
    if a.reduced:
        a = ap.parse_args(REDUCED + [x for x in args if x != "--reduced"])
    if a.render_only:
        with open(os.path.join(a.out, "results.json")) as f:
            old = json.load(f)
        meta, results = old["meta"], old["results"]
        pres, lres = old.get("paper_scale_results", []), old.get("long_results", [])
        findings, prow = analyse(meta, results, pres, lres)
        write(a.out, meta, results, findings, pres, lres, prow)
        print("re-rendered " + ", ".join(f"{k}: {v['status']}" for k, v in findings.items()))
        return 0
    from joblib import Parallel, delayed
    from dpcheck.algorithms.privatizers import tree_levels
    t0, c0 = time.perf_counter(), time.process_time()
    cfg = configurations()
    # one stacked batch per job: UCBVI + the JDP curves, the LDP curves, the paper-scale curves, the long run
    jobs = [(cfg[:5], a.K, a.runs, "practical"), (cfg[5:], a.K, a.runs, "practical")]
    if a.paper_runs > 0:
        jobs.append((configurations(PAPER_SUFFIX), a.K, a.paper_runs, "paper"))
    if a.K_long > 0 and a.long_eps:
        jobs.append((long_configurations(a.long_eps), a.K_long, a.long_runs, "practical"))
    order = sorted(range(len(jobs)), key=lambda i: -jobs[i][1] * jobs[i][2] * len(jobs[i][0]))   # longest first
    done = Parallel(n_jobs=max(1, min(a.workers, len(jobs))))(
        delayed(run_group)(jobs[i][0], jobs[i][1], jobs[i][2], a.seed, a.H, jobs[i][3]) for i in order)
    by_job = dict(zip(order, done))
    by_label = {r["label"]: r for r in by_job[0] + by_job[1]}
    results = [by_label[c[0]] for c in cfg]
    rest = [by_job[i] for i in range(2, len(jobs))]
    paper_results = rest.pop(0) if a.paper_runs > 0 else []
    long_results = rest.pop(0) if rest else []
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    os.makedirs(a.out, exist_ok=True)
    cmd = "python scripts/reproduce_dp_ucbvi_fig1.py" + ("" if not args else " " + " ".join(args))
    meta = {"command": cmd, "K": a.K, "runs": a.runs, "H": a.H, "seed": a.seed, "workers": a.workers,
            "seconds": seconds, "parent_cpu_seconds": cpu, "eps_grid": list(EPS_GRID), "band": "mean +- 1 sd over runs",
            "mode": "practical", "noise": "Lap(1/eps) per node / coordinate (eps_eff = eps*3HL / eps*3H, calibration paper)",
            "width_mode": "rigorous", "L": tree_levels(a.K), "paper_runs": a.paper_runs, "K_long": a.K_long,
            "long_runs": a.long_runs, "long_eps": list(a.long_eps),
            "job_seconds": {f"job {i}": float(by_job[i][0]["seconds_group"]) for i in range(len(jobs))}}
    for r in results + paper_results + long_results:   # judge the numbers results.json keeps (--render-only agrees)
        r["cumulative"] = np.round(np.asarray(r["cumulative"], float), 2).tolist()
    findings, prow = analyse(meta, results, paper_results, long_results)
    write(a.out, meta, results, findings, paper_results, long_results, prow)
    print(f"done in {seconds:.1f} s; " + ", ".join(f"{k}: {v['status']}" for k, v in findings.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
