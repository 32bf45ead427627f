"""Rate checks of DP-VAPVI (Qiao & Wang 2022, Theorem 4.1).

:func:`rate_checks`: sub-optimality and value error vs K, the privacy cost vs K and vs rho.
"""
from __future__ import annotations

import copy
import math

import numpy as np

from dpcheck.checks import FAIL, INCONCLUSIVE, PASS, Check, invariant_check, qualify

from dpcheck.audits.lib.offline_linear.setup import SOURCE
from dpcheck.audits.lib.offline_linear.assumptions import sample_split, true_errors


# ============================================================================ rates

def _privacy_cost_check(x, cost, xname: str, *, expected: float, tolerance: float, alpha: float, seed: int,
                        statement: str, source: str, details: dict) -> Check:
    """regret.privacy_cost.<xname>: the slope of the paired privacy cost (runs, len(x)) in x. Where the mean
    cost is <= 0 somewhere on the grid it is within noise of zero: the claim (a lower-order term) is not in
    doubt, but there is no positive curve to fit, so the check is PASS (uninformative), not inconclusive."""
    from dpcheck.regret import fit_scaling, scaling_check
    cid = f"regret.privacy_cost.{xname}"
    if np.all(cost.mean(0) > 0):
        fit = fit_scaling(x, cost, alpha=alpha, seed=seed)
        return scaling_check(fit, expected=expected, tolerance=tolerance, id=cid, source=source,
                             what="Vtil_1(noise off) - Vtil_1(DP-VAPVI)", xname=xname, details=details)
    c = Check(id=cid, kind="regret", verdict=PASS, claim={"statement": statement, "source": source},
              measured={"mean_cost": cost.mean(0).tolist(), "confidence": 1.0},
              reason=f"the mean privacy cost is <= 0 at some {xname} of the grid")
    return qualify(c, "uninformative", f"the privacy cost is within noise of zero at some {xname} of the grid, so "
                   f"no slope in {xname} can be fitted; the cost is not large, its rate is not measured")

def _dominated_gap(check: Check, K, gaps, bounds, *, alpha: float, seed: int, delta: float, H: int) -> Check:
    """regret.subopt.K when the realised gap's own slope is not below the bound: is the gap dominated by the
    paper's K^{-1/2} bound? On a fixed instance the realised gap v* - v^pi_hat is about (the margin of a wrong
    action) x Pr[it is chosen]; while the data cannot resolve the margin Delta (Delta sqrt(K) / sigma small) it
    stays near Delta / 2 -- flat in K, yet below sigma / sqrt(K) -- and falls like K^{-1/2} only for the
    worst instance (Delta ~ K^{-1/2}), so its local slope in a short window does not measure the theorem's
    rate. What eq. 10 bounds it by does: on the validity event the sub-optimality is at most
    2 sum_h E_{pi*}[Gamma_h(s_h, a_h)] (Jin, Yang & Wang 2021, "Is pessimism provably efficient for offline RL?",
    Theorem 4.2; Qiao & Wang's proof of Theorem 4.1 bounds this sum by the main term ~ K^{-1/2} plus Dpen H/K).

    PASS (uninformative) when (a) gap <= 2 sum_h E_{pi*}[Gamma_h] in every K of the grid in all but a fraction
    <= delta of the runs (Clopper-Pearson upper bound, PASS level) and (b) the mean bound falls at least like
    K^{-0.4} (studentised bootstrap interval below -0.4, PASS level), each at half the PASS level; the bound is
    also below H at the largest K (else it says nothing). Otherwise the check is returned unchanged: this
    is only a route to PASS, never a new FAIL, and a gap slope that FAILs in theory mode is never touched."""
    from dataclasses import replace as _replace
    from dpcheck.regret import fit_scaling, pass_interval
    from dpcheck.stats import cp_upper, pass_alpha
    a_pass = pass_alpha(alpha) / 2.0
    over = int((gaps > bounds + 1e-12).any(axis=1).sum())
    runs = gaps.shape[0]
    hi = float(cp_upper(over, runs, a_pass / 2.0))           # two-sided interval's upper end, as probability_check
    bfit = fit_scaling(K, bounds, alpha=a_pass, seed=seed + 1, interval="t")
    b_hi = pass_interval(bfit)[1]
    b_mean = bounds.mean(0)
    det = dict(check.details)
    det["bound"] = {"statement": "v* - v^pi_hat <= 2 sum_h E_pi*[Gamma_h(s_h, a_h)] on the validity event",
                    "source": "Jin, Yang & Wang 2021, Theorem 4.2; Qiao & Wang, Theorem 4.1 (eq. 10)",
                    "bound_mean": b_mean.tolist(), "gap_mean": gaps.mean(0).tolist(),
                    "runs_above_bound": over, "runs": runs, "above_rate_upper": hi, "delta": delta,
                    "bound_slope": bfit.slope, "bound_slope_ci": list(bfit.ci), "confidence": 1 - a_pass}
    check = _replace(check, details=det)
    if not (hi <= delta and b_hi <= -0.4 and b_mean[-1] < H):
        return check
    gfit = det.get("fit", {})
    passed = _replace(check, verdict=PASS,
                      reason=(f"realised gap ~ K^{gfit.get('slope', float('nan')):.2f} (mean {gaps.mean(0)[0]:.3g} -> "
                              f"{gaps.mean(0)[-1]:.3g}) lies below the bound 2 sum_h E_pi*[Gamma_h] (mean "
                              f"{b_mean[0]:.3g} -> {b_mean[-1]:.3g} < H = {H}) in {runs - over}/{runs} runs at every K "
                              f"(rate above it <= {hi:.3g} <= delta = {delta:g}), and the bound falls like "
                              f"K^{bfit.slope:.2f} (CI upper end {b_hi:.2f} <= -0.4)"))
    return qualify(passed, "uninformative",
                   "the realised gap is in its instance-dependent regime (flat while the data cannot resolve the "
                   "margin of the wrong action), so its own slope measures no rate; the claim's K^{-1/2} bound "
                   "dominates it")


def rate_checks(make, inst, *, K_grid, rho_grid, K_rho: int, rho: float, runs: int, seed: int, alpha: float,
                mode: str, progress=None, rho_exponent: float = -0.5, K_cost=None) -> list:
    """Sub-optimality and value error of DP-VAPVI vs K (Theorem 4.1: main term ~ K^{-1/2}; upper bounds:
    PASS if the fitted slope's interval lies below -0.5 + 0.1, FAIL if wholly above), and the privacy cost
    in the learned value, Vtil_1(noise off) - Vtil_1(DP-VAPVI) on the same data (same constants; VAPVI's degenerate form, docs/derivations.md#readings), vs K (slope -1) and vs rho (slope
    -1/2) (eq. 11: the extra term O~(H^{11/2} d / (kappa^{3/2} sqrt(rho) K))). Common random numbers across grid
    points; seeds = runs. ``make(rho)`` builds DP-VAPVI, ``make(inf)`` VAPVI's counterpart. ``K_cost`` (default
    ``K_grid``): the K of the privacy cost's slope in K, its own window where the 1/K term of eq. 11 dominates the
    cost's lower-order terms (docs/dp_vapvi.md, regret.privacy_cost.K)."""
    from dpcheck.regret import fit_scaling, slope_check
    H = inst.mdp.H
    gaps, verr, cost, bounds = [], [], [], []
    from dpcheck.algorithms.envs.planning import occupancy, optimal_values
    Qstar, Vstar = optimal_values(inst.mdp)
    dstar = occupancy(inst.mdp, np.argmax(Qstar, axis=-1))          # d^{pi*}_h(s,a), (H, S, A)
    base = make(rho)
    vap = make(math.inf)        # the same constants with every noise off: Dpen keeps only its H^3 sqrt(d) part
    for K in K_grid:
        rng = np.random.default_rng([seed, int(K)])
        D, Dp = sample_split(inst, int(K), runs, rng)
        r = base.run((D, Dp), inst.features, rng)
        r0 = vap.run((D, Dp), inst.features, rng)
        _, _, g = true_errors(inst, r)
        gaps.append(g)
        bounds.append(2.0 * np.einsum("hsa,rhsa->r", dstar, r.penalties))    # 2 sum_h E_pi*[Gamma_h], per run
        verr.append(np.abs(Vstar[None, :H] - r.values[:, :H]).max(axis=(1, 2)))
        cost.append((r0.values[:, 0] - r.values[:, 0]) @ inst.mdp.init)
    K_cost = tuple(K_grid) if K_cost is None else tuple(K_cost)
    if K_cost != tuple(K_grid):
        cost = []
        for K in K_cost:        # the counts' law is exact: a run costs the same at any K
            rng = np.random.default_rng([seed, int(K)])
            D, Dp = sample_split(inst, int(K), runs, rng)
            r = base.run((D, Dp), inst.features, rng)
            cost.append((vap.run((D, Dp), inst.features, rng).values[:, 0] - r.values[:, 0]) @ inst.mdp.init)
    gaps, verr, cost, bounds = (np.stack(x, axis=1) for x in (gaps, verr, cost, bounds))
    checks = []
    src = f"{SOURCE}, Theorem 4.1"
    # a K where the learned policy is optimal in every run (mean gap 0) satisfies any bound trivially and has
    # no logarithm: the fit uses the K with a positive mean gap, the others are reported
    keep = gaps.mean(0) > 0
    Kg = np.asarray(K_grid, float)
    det = {"mode": mode, "rho": rho, "runs": runs, "zero_gap_fraction": float((gaps == 0).mean()),
           "K_with_zero_mean_gap": Kg[~keep].tolist()}
    if keep.sum() < 3:
        c = qualify(invariant_check(id="regret.subopt.K", kind="regret", violations=0, total=int(gaps.size),
                                    claim={"statement": "v* - v^pi_hat ~ K^{-1/2} (upper bound)",
                                           "source": f"{src}, eq. 10 (Theorem 4.1, eq. 10)"}, details=det,
                                    what="sub-optimality bound"),
                    "vacuous", "the learned policy is optimal in (almost) every run: fewer than 3 K with a positive gap")
        checks.append(c)
        gaps = None
    if gaps is not None:
        fit = fit_scaling(Kg[keep], gaps[:, keep], alpha=alpha, seed=seed)
        c = slope_check(fit, bound=-0.4, id="regret.subopt.K", xname="K", ylabel="v* - v^pi_hat",
                        statement="v* - v^{pi_hat} <= O~(sqrt(d) sum_h E_pi*[||phi||_{Lambda*^-1}]) + Dpen H/K ~ K^{-1/2}",
                        source=f"{src}, eq. 10", details=det)
    if gaps is not None and (c.verdict == INCONCLUSIVE or (c.verdict == FAIL and mode == "practical")):
        # a practical-mode miss of the gap's slope is softened to INCONCLUSIVE by the audit anyway (no guarantee)
        c = _dominated_gap(c, Kg, gaps, bounds, alpha=alpha, seed=seed, delta=base.delta, H=H)
    if gaps is not None and c.verdict == PASS and fit.ci[1] < -1.5:
        c = qualify(c, "uninformative", "the gap vanishes faster than any power of K in this window (the learned "
                    "policy becomes optimal); the bound is not contradicted, its rate is not measured")
    if gaps is not None:
        checks.append(c)
    fit = fit_scaling(K_grid, verr, alpha=alpha, seed=seed)
    checks.append(slope_check(fit, bound=-0.4, id="regret.value_error.K", xname="K", ylabel="sup_h ||V*_h - Vtil_h||",
                              statement="sup_h ||V*_h - Vtil_h||_inf <= O~(H^2 sqrt(d)/sqrt(kappa K)) (+ privacy term)",
                              source=f"{SOURCE}, Lemma D.16 (Lemmas D.16-D.18)", details={"mode": mode, "rho": rho, "runs": runs}))
    checks.append(_privacy_cost_check(K_cost, cost, "K", expected=-1.0, tolerance=0.25, alpha=alpha, seed=seed,
                                      statement="privacy cost ~ 1/K", source=f"{src}, eq. 11",
                                      details={"mode": mode, "rho": rho, "K_grid": list(K_cost)}))
    # one dataset and one noise-off baseline for every rho; each rho's noise starts from the same generator
    # state (common random numbers)
    rng = np.random.default_rng([seed, int(K_rho), 7])
    D, Dp = sample_split(inst, int(K_rho), runs, rng)
    v0 = vap.run((D, Dp), inst.features, copy.deepcopy(rng)).values[:, 0]
    cr = [(v0 - make(rr).run((D, Dp), inst.features, copy.deepcopy(rng)).values[:, 0]) @ inst.mdp.init
          for rr in rho_grid]
    cr = np.stack(cr, axis=1)
    # rho_exponent: -1/2 for the paper's Gaussian; a plug-in's own, from its declared widths (plugin_width_exponent)
    checks.append(_privacy_cost_check(rho_grid, cr, "rho", expected=rho_exponent, tolerance=0.15, alpha=alpha, seed=seed,
                                      statement=f"privacy cost ~ rho^{rho_exponent:.3g} (the widths' exponent)",
                                      source=f"{src}, Theorem 4.1 (the privacy term ~ 1/sqrt(rho))",
                                      details={"mode": mode, "K": K_rho}))
    return checks
