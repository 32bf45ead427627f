"""Regret checks of DP-Nash-VI (Qiao & Wang 2024): the exact duality-gap regret, the regret grid's runs (common
random numbers), the non-private exponent, the privacy cost against eps and K (Theorems 4.1, 5.2, 5.5), the
JDP vs LDP cost comparison, and the plots the reports show.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from dpcheck.checks import Check, FAIL, INCONCLUSIVE, PASS
from dpcheck.regret import slope_check
from dpcheck.audits.lib.nash.scenario import BETA, REGRET_TOLERANCE, SOURCE, soften
from dpcheck.audits.lib.nash.privatizers import cost_eps_slope, theorem_privacy_term


# ------------------------------------------------------------------ regret
def regret_curves(game, make_privatizer, *, K: int, seeds: int, rng, algo_cls=None):
    """Exact duality-gap regret per seed: cumulative (seeds, K) and the run's config."""
    from dpcheck.algorithms.envs.game_planning import duality_gap
    from dpcheck.algorithms.games.dp_nash_vi import DPNashVI

    algo_cls = algo_cls or DPNashVI
    res = algo_cls(make_privatizer(), beta=BETA, mode="practical").run(game, K, rng, runs=seeds)
    gaps = duality_gap(game, res.mu, res.nu)                     # (seeds, K), each >= 0
    return np.cumsum(gaps, axis=1), res.config


# Where the exponent fits start. The non-private regret's increments already grow from K = 125 on the test bed
# (local slope of the mean increments 0.25 over 125 -> 250, then 0.34, 0.39; 0.07 over 62 -> 125, the first
# episodes' burn-in), so its window starts there: four doublings in --quick instead of three, which halves the
# variance of the fitted slope at no cost (the curve is recorded anyway). The private runs pay the privacy term
# first and start later (regret_checks: the last three doublings).
NONPRIVATE_FROM = 125
EXPONENT_INTERVAL = "t"      # studentised bootstrap interval of the exponent fits (dpcheck/regret.py, Intervals)


def k_grid(K: int, smallest: int = 250) -> np.ndarray:
    """The doubling grid K, K/2, K/4, ... down to ``smallest`` (sorted): where the increments R(2K) - R(K) are
    fitted."""
    g = [K]
    while g[-1] // 2 >= smallest:
        g.append(g[-1] // 2)
    return np.array(sorted(g))


def plot_grid(K: int) -> np.ndarray:
    """k_grid(K, NONPRIVATE_FROM) with the geometric midpoints added (ratio sqrt 2): where the curves are
    recorded."""
    g = k_grid(K, NONPRIVATE_FROM)
    mid = np.round(np.sqrt(g[:-1] * g[1:])).astype(int)
    return np.unique(np.concatenate([g, mid]))


def regret_job(i, _seed, jobs, game, common_seed):
    """One regret run (a chunk of dpcheck.parallel.run_chunks): jobs[i] = (privatizer spec | "none", eps, calibration, K,
    seeds). Every job uses the SAME seed (common random numbers: the same environment, policy-sampling and
    noise streams), so R_priv - R_nonpriv is a paired difference and its spread across eps is small."""
    spec, eps, calibration, K, seeds = jobs[i]
    make = _privatizer_maker(spec, eps, calibration)
    R, config = regret_curves(game, make, K=K, seeds=seeds, rng=np.random.default_rng(common_seed))
    g = plot_grid(K)
    return {"grid": g, "R": R[:, g - 1], "config": config}


def _privatizer_maker(spec, eps, calibration):
    from dpcheck.algorithms.privatizers import NoPrivatizer, load_privatizer
    if spec == "none":
        return lambda: NoPrivatizer()
    return lambda: load_privatizer(spec, epsilon=eps, beta=BETA, calibration=calibration, width_mode="nominal")


STACK_MEMBERS = 4     # at most this many jobs per batch: two workers still get chunks of similar size


def regret_chunks(jobs, max_members: int = STACK_MEMBERS) -> list[tuple[int, ...]]:
    """The regret grid's jobs cut into chunks of :func:`regret_stack_job`: the private jobs of one horizon K
    share batches of runs (:class:`dpcheck.algorithms.privatizers.stacked.StackedPrivatizers`), split into
    near-equal parts of at most ``max_members`` in job order (the default grid's 8 runs at K = 8000: the
    Central and the Local sweep, so no chunk holds most of the work); every non-private job is a chunk of
    its own. Largest first (a chunk's per-episode loop costs about K (1 + 0.25 (members - 1)), measured at
    runs = 16..128), so that the workers end together. Indices into ``jobs``, each chunk in job order."""
    stacks: dict = {}
    out = []
    for i, (spec, _, _, K, seeds) in enumerate(jobs):
        if spec == "none":
            out.append((i,))
        else:
            stacks.setdefault((K, seeds), []).append(i)
    for members in stacks.values():
        parts = -(-len(members) // max_members)
        out += [tuple(int(j) for j in part) for part in np.array_split(np.array(members), parts)]
    cost = lambda c: jobs[c[0]][3] * (1 + 0.25 * (len(c) - 1))
    return sorted(out, key=cost, reverse=True)


def regret_stack_job(i, _seed, chunks, jobs, game, common_seed):
    """The jobs ``chunks[i]`` (indices into ``jobs``) as :func:`regret_job` returns them, in one batch of runs:
    the members' privatizers stacked (StackedPrivatizers) and DPNashVI.run's ``blocks`` replaying one
    block's environment and policy draws for every block, so each job's result is the run of its own from
    the common seed, draw for draw (tests/algorithms/games/test_stacked_regret_runs.py). A chunk of one job is regret_job."""
    from dpcheck.algorithms.envs.game_planning import duality_gap
    from dpcheck.algorithms.games.dp_nash_vi import DPNashVI
    from dpcheck.algorithms.privatizers.stacked import StackedPrivatizers
    idx = chunks[i]
    if len(idx) == 1:
        return [regret_job(idx[0], _seed, jobs, game, common_seed)]
    members = [jobs[j] for j in idx]
    K, seeds = members[0][3], members[0][4]
    if any(m[0] == "none" or m[3] != K or m[4] != seeds for m in members):
        raise ValueError("a stacked regret chunk holds private jobs of one horizon K and one number of seeds")
    privs = [_privatizer_maker(spec, eps, cal)() for spec, eps, cal, _, _ in members]
    res = DPNashVI(StackedPrivatizers(privs), beta=BETA, mode="practical").run(
        game, K, np.random.default_rng(common_seed), runs=seeds * len(idx), blocks=len(idx))
    R = np.cumsum(duality_gap(game, res.mu, res.nu), axis=1)       # (members * seeds, K)
    g = plot_grid(K)
    out = []
    for b, p in enumerate(privs):
        w = float(p.width)
        config = {**res.config, "runs": seeds, "width_E": 0.0 if w == 0.0 else max(w, 1.0), "width_E_raw": w,
                  "privatizer": type(p).__name__, "calibration": getattr(p, "calibration", None),
                  "width_mode": getattr(p, "width_mode", None)}
        out.append({"grid": g, "R": R[b * seeds:(b + 1) * seeds, g - 1], "config": config})
    return out


def nonprivate_exponent_check(base: dict, K: int, *, alpha: float, seed: int, game_name: str = "",
                              plots: bool = True) -> Check:
    """regret.exponent.nonprivate from the non-private run ``base`` = regret_job's {"grid", "R"} at horizon K:
    the exponent of the increments R(2K') - R(K') on the doubling grid from NONPRIVATE_FROM, window
    [NONPRIVATE_FROM, K/2] (all of the grid's increments), t bootstrap interval over seeds; PASS if its
    upper end <= 0.5 + REGRET_TOLERANCE, FAIL if its lower end exceeds that (a learner that never updates has
    exponent 1), with dpcheck.regret.exponent_regime's marker. The one implementation of the check, for the
    audit and for benchmarks/false_alarm.py."""
    from dpcheck.regret import fit_increment_exponent, increments_plot, regret_exponent_check
    dg = k_grid(K, NONPRIVATE_FROM)
    at = np.searchsorted(base["grid"], dg)
    fit = fit_increment_exponent(dg, base["R"][:, at], window=(dg[0], dg[-2]), alpha=alpha, seed=seed,
                                 interval=EXPONENT_INTERVAL)
    details = {"game": game_name, "seeds": int(base["R"].shape[0]), "K": int(K),
               "window": [int(dg[0]), int(dg[-2])]}
    if plots:
        details["plots"] = [increments_plot(fit, 0.5), regret_plot({"non-private": base["R"]}, base["grid"]),
                            local_slopes_plot({"non-private": base["R"]}, base["grid"])]
    c = regret_exponent_check(fit, claimed=0.5, tolerance=REGRET_TOLERANCE, id="regret.exponent.nonprivate",
                              source=SOURCE + ", Theorem 4.1 with E = 0 [practical constants]",
                              what="duality-gap regret", details=details)
    return regime(c, fit)


def regret_checks(game, spec: str, notion: str, *, calibration: str, K: int, seeds: int, eps_grid, eps_ref: float,
                  K_cost, results: dict, seed: int, theorem: str, alpha: float = 0.05) -> list[Check]:
    """The rate checks of one notion from finished runs ``results[(spec, eps, K)] -> {"grid", "R"}``.

    regret.exponent.<n>        exponent of the increments at eps_ref (practical mode: softened).
    regret.privacy_cost.<n>_eps paired cost R_priv(K) - R_nonpriv(K) against eps: slope s +- 0.35, s = -1 for
                               the built-in privatizers, a user's privatizer's own width slope otherwise
                               (:func:`cost_eps_slope`).
    regret.privacy_cost.<n>_K   paired cost at the end of runs with horizons K_cost: slope no larger than
                               the theorem's privacy term's (computed from the privatizer's width) + 0.15.
    All three are softened (practical constants: no guarantee), so they report PASS or INCONCLUSIVE only.
    """
    from dpcheck.regret import fit_increment_exponent, fit_scaling, increments_plot, regret_exponent_check
    key = notion.lower()
    src = f"{SOURCE}, {theorem} [practical mode: C1 = 0.1, C2 = 0.02, nominal width; no guarantee]"
    base = results[("none", None, K)]
    g = base["grid"]
    dg = k_grid(K)
    at = np.searchsorted(g, dg)
    out = []
    R_ref = results[(spec, eps_ref, K)]["R"]
    # the exponent at the largest eps of the sweep: the privacy term, constant in K but paid off over the
    # first episodes, is smallest there, so the sqrt(K) part is most visible in the window
    eps_exp = max(eps_grid)
    # Declared window for private runs, ending at K/2. The privacy term is paid in the first episodes (the
    # bonus C2 H S E iota / N exceeds the game's scale while N <~ E), which makes the first increments LARGER
    # than the later ones and the fit over the whole grid negative. JDP (E polylog in K): from the third grid
    # point on (K >= 1000 by default, 500 in --quick, where the increments still shrink over 250 -> 500: local
    # slope -0.51 at eps = 32). LDP (E ~ sqrt(K)): the last three doublings, from K/8 (as dp_ucbvi's window):
    # at eps = 64 its increments grow again from there (--quick, K/8 = 250: local slope 0.16 over 250 -> 500,
    # 0.01 over 125 -> 250); the default's K/8 = 1000 is the third grid point either way.
    start = dg[max(0, len(dg) - 4)] if notion == "LDP" else dg[min(2, len(dg) - 3)]
    pwin = (start, dg[-2])
    fit = fit_increment_exponent(dg, results[(spec, eps_exp, K)]["R"][:, at], window=pwin, alpha=alpha, seed=seed,
                                 interval=EXPONENT_INTERVAL)
    curves = {"non-private": base["R"]}
    curves.update({f"{key} eps={e:g}": results[(spec, e, K)]["R"] for e in eps_grid})
    c = regret_exponent_check(fit, claimed=0.5, tolerance=REGRET_TOLERANCE, id=f"regret.exponent.{key}", source=src,
                              what=f"duality-gap regret ({notion}, eps={eps_exp:g})",
                              details={"game": game.name, "seeds": seeds, "K": K, "epsilon": eps_exp,
                                       "window": [int(pwin[0]), int(pwin[1])],
                                       "plots": [increments_plot(fit, 0.5), regret_plot(curves, g),
                                                 local_slopes_plot(curves, g)]})
    out.append(soften(regime(c, fit), True))

    # cost against eps at the largest K (paired differences, common random numbers)
    if len(eps_grid) < 3:
        out.append(Check(id=f"regret.privacy_cost.{key}_eps", kind="regret", verdict=INCONCLUSIVE,
                         claim={"statement": "privacy cost ~ 1/eps", "source": src},
                         measured={"epsilons": list(eps_grid), "confidence": None},
                         details={"note": "the privatizer refused the larger budgets of the sweep"},
                         reason=f"privatizer {spec} accepted only eps in {list(eps_grid)} of the sweep eps x (1, 2, 4, "
                                f"8): no eps slope (not evidence either way)"))
        return out
    cost_eps = np.stack([results[(spec, e, K)]["R"][:, -1] - base["R"][:, -1] for e in eps_grid], axis=1)
    sf = fit_scaling(np.array(eps_grid, float), cost_eps, alpha=alpha, seed=seed)      # not clipped: undefined_log
    claimed = cost_eps_slope(spec, calibration, game, K, eps_grid)
    shape = ("1/eps" if claimed == -1.0 else
             f"the privatizer's declared width E(eps) ~ eps^{claimed:.3g} (its own noise law, not Laplace's 1/eps)")
    c = slope_check(sf, bound=claimed + 0.35, lower=claimed - 0.35, id=f"regret.privacy_cost.{key}_eps", xname="eps",
                    ylabel="R_priv - R_nonpriv",
                    statement=(f"{notion} privacy cost R_priv(K) - R_nonpriv(K) at K = {K} ~ {shape} "
                               f"(slope {claimed:.3g} +- 0.35)"),
                    source=src, details={"K": K, "epsilons": list(eps_grid), "seeds": seeds, "claimed_slope": claimed,
                                         "cost_mean": cost_eps.mean(0).tolist(), "cost_sd": cost_eps.std(0).tolist(),
                                         "nonprivate_regret_mean": float(base["R"][:, -1].mean()),
                                         "measurement": "paired: every run uses the same seed (common random "
                                                        "numbers for environment, policy sampling and noise)"})
    out.append(soften(c, True))

    # cost against K: one run per horizon, so that E = E(K) as in the theorem
    cost_K = np.stack([results[(spec, eps_ref, k)]["R"][:, -1] - results[("none", None, k)]["R"][:, -1]
                       for k in K_cost], axis=1)
    within = R_ref[:, at] - base["R"][:, at]
    term = theorem_privacy_term(spec, eps_ref, calibration, game, K_cost)
    predicted = float(np.polyfit(np.log(K_cost), np.log(term), 1)[0])
    sk = fit_scaling(np.array(K_cost, float), cost_K, alpha=alpha, seed=seed)
    shape = "polylog(K) (flat up to logs)" if notion == "JDP" else "sqrt(K) polylog(K)"
    c = slope_check(sk, bound=predicted + 0.15, id=f"regret.privacy_cost.{key}_K", xname="K",
                    ylabel="R_priv - R_nonpriv",
                    statement=(f"{notion} privacy cost at eps={eps_ref:g} grows like the theorem's privacy term "
                               f"H^2 S^2 A B E(K) iota(K)^2 = {shape}: slope <= predicted {predicted:.2f} + 0.15"),
                    source=src, details={"epsilon": eps_ref, "horizons": list(map(int, K_cost)),
                                         "predicted_slope": predicted, "cost_mean": cost_K.mean(0).tolist(),
                                         "within_one_run": {"K": dg.tolist(), "cost_mean": within.mean(0).tolist(),
                                                            "note": "E fixed by the horizon: flat for both notions"},
                                         "measurement": "one run per horizon K (E = E(K)), paired with the "
                                                        "non-private run of the same horizon and seed"})
    c = with_reason(c, f"; predicted slope {predicted:.2f} ({shape})")
    out.append(soften(c, True))
    return out


def cost_K_comparison(results: dict, game, *, K_cost, jdp_eps: float, ldp_eps: float, calibration: str,
                      seed: int, n_boot: int = 2000, alpha: float = 0.05) -> Check:
    """regret.privacy_cost.jdp_vs_ldp_K: the LDP cost grows faster in K than the JDP cost by the ratio of the
    theorems' privacy terms (sqrt(K) E_local-polylog vs E_central-polylog): the difference of the two fitted
    slopes against the difference of the predicted ones +- 0.2. Both notions' runs share every seed (common
    random numbers), so the bootstrap resamples seeds jointly. Softened: PASS or INCONCLUSIVE, never FAIL."""
    K_cost = np.asarray(K_cost, dtype=float)

    def costs(spec, e):
        return np.stack([results[(spec, e, int(k))]["R"][:, -1] - results[("none", None, int(k))]["R"][:, -1]
                         for k in K_cost], axis=1)

    cj, cl = costs("central", jdp_eps), costs("local", ldp_eps)
    lx = np.log(K_cost)
    xc = lx - lx.mean()

    def slope(Y):                                       # Y (..., n): slope of log mean cost
        y = np.log(np.maximum(Y, 1e-9))
        return ((y - y.mean(axis=-1, keepdims=True)) @ xc) / (xc @ xc)

    diff = float(slope(cl.mean(0)) - slope(cj.mean(0)))
    idx = np.random.default_rng(seed).integers(0, cj.shape[0], size=(n_boot, cj.shape[0]))
    boots = slope(cl[idx].mean(axis=1)) - slope(cj[idx].mean(axis=1))
    from dpcheck.stats import pass_alpha
    a_pass = pass_alpha(alpha)       # PASS on the audit's alpha, FAIL on its share (dpcheck.stats)
    lo, hi = float(np.quantile(boots, alpha / 2)), float(np.quantile(boots, 1 - alpha / 2))
    p_lo, p_hi = float(np.quantile(boots, a_pass / 2)), float(np.quantile(boots, 1 - a_pass / 2))
    pj = np.polyfit(lx, np.log(theorem_privacy_term("central", jdp_eps, calibration, game, K_cost)), 1)[0]
    pl = np.polyfit(lx, np.log(theorem_privacy_term("local", ldp_eps, calibration, game, K_cost)), 1)[0]
    pred = float(pl - pj)
    lower, upper = pred - 0.2, pred + 0.2
    verdict = PASS if (p_lo >= lower and p_hi <= upper) else FAIL if (hi < lower or lo > upper) else INCONCLUSIVE
    if verdict == PASS:
        lo, hi = p_lo, p_hi
    src = f"{SOURCE}, Theorems 5.2 vs 5.5 [practical mode: no guarantee]"
    c = Check(id="regret.privacy_cost.jdp_vs_ldp_K", kind="regret", verdict=verdict,
              claim={"statement": "JDP privacy cost flat in K (polylog) vs LDP cost ~ sqrt(K): slope(LDP) - slope(JDP) "
                                  f"= predicted {pred:.2f} +- 0.2", "source": src},
              measured={"slope_difference": diff, "ci": [lo, hi], "confidence": 1 - alpha, "seeds": cj.shape[0],
                        "slope_jdp": float(slope(cj.mean(0))), "slope_ldp": float(slope(cl.mean(0)))},
              details={"horizons": K_cost.tolist(), "eps_jdp": jdp_eps, "eps_ldp": ldp_eps,
                       "predicted_slopes": {"jdp": float(pj), "ldp": float(pl)},
                       "plots": [{"title": "privacy cost at the end of a run of horizon K", "xlabel": "K",
                                  "ylabel": "R_priv - R_nonpriv", "logx": True, "logy": True, "kind": "line",
                                  "series": [band_series(f"JDP (Central, eps={jdp_eps:g})", K_cost, cj),
                                             band_series(f"LDP (Local, eps={ldp_eps:g})", K_cost, cl)]}]},
              reason=f"slope(LDP) - slope(JDP) = {diff:.3f} (CI [{lo:.3f}, {hi:.3f}]) vs predicted {pred:.2f} +- 0.2 "
                     f"(JDP {slope(cj.mean(0)):.2f}, LDP {slope(cl.mean(0)):.2f})")
    return soften(c, True)


def band_series(label, x, Y):
    """A plot series: mean over seeds (rows of Y) with a +-1 sd band."""
    m, sd = Y.mean(0), Y.std(0)
    return {"label": label, "x": np.asarray(x).tolist(), "y": m.tolist(), "lo": np.maximum(m - sd, 1e-9).tolist(),
            "hi": (m + sd).tolist()}


def regime(c: Check, fit) -> Check:
    """dpcheck.regret.exponent_regime (the uninformative-pass marker of every exponent check)."""
    from dpcheck.regret import exponent_regime
    return exponent_regime(c, fit)


def with_reason(c: Check, extra: str) -> Check:
    return replace(c, reason=c.reason + extra)


def regret_plot(curves, grid):
    """Cumulative regret, mean over seeds with a +-1 sd band (and the min-max range in the data)."""
    series = []
    for name, R in curves.items():
        m, sd = R.mean(axis=0), R.std(axis=0)
        series.append({"label": name, "x": np.asarray(grid).tolist(), "y": m.tolist(),
                       "lo": np.maximum(m - sd, 1e-9).tolist(), "hi": (m + sd).tolist()})
    return {"title": "cumulative duality-gap regret (exact; mean +- 1 sd over seeds)", "xlabel": "K",
            "ylabel": "Regret(K)", "logx": True, "logy": True, "kind": "line", "series": series}


def local_slopes_plot(curves, grid):
    """Local exponents of the increments between neighbouring doubling points: d log(R(2K)-R(K)) / d log K.
    0.5 is the sqrt(K) regime, 1 is linear regret, <= 0 is saturation."""
    grid = np.asarray(grid)
    series = []
    for name, R in curves.items():
        m = R.mean(axis=0)
        # increments over a doubling, on the sqrt-2 grid: D(K) = R(2K) - R(K)
        pos = {int(k): i for i, k in enumerate(grid)}
        ks = [int(k) for k in grid if int(2 * k) in pos]
        D = np.array([m[pos[2 * k]] - m[pos[k]] for k in ks])
        if len(ks) < 2:
            continue
        sl = np.diff(np.log(np.maximum(D, 1e-12))) / np.diff(np.log(ks))
        series.append({"label": name, "x": ks[1:], "y": sl.tolist()})
    series.append({"label": "sqrt(K) regime (0.5)", "x": [int(grid[0]), int(grid[-1])], "y": [0.5, 0.5]})
    return {"title": "local exponent of the regret increments R(2K) - R(K)", "xlabel": "K",
            "ylabel": "local slope", "logx": True, "logy": False, "kind": "line", "series": series}
