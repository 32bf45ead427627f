"""Regret checks of DP-UCBVI (Qiao & Wang 2023, Theorems 5.2 / 5.7): cached regret curves, the exponent and
the privacy-cost scaling in K and eps (practical mode, reports/reproductions/dp_ucbvi_fig1/README.md).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from dpcheck.checks import Check
from dpcheck.parallel import cached_call
from dpcheck.regret import slope_check
from dpcheck.audits.lib.ucbvi.spec import AgentSpec, SOURCE


# ----------------------------------------------------------------------------- regret
def regret_curves(spec: AgentSpec, env, K: int, runs: int, seed: int) -> np.ndarray:
    """Cumulative exact expected regret (runs, K); with --cache stored and read back on a rerun."""
    return cached_call("dp_ucbvi.regret_curves", _regret_curves, spec, env, K, runs, seed)


def _regret_curves(spec: AgentSpec, env, K: int, runs: int, seed: int) -> np.ndarray:
    return _agent_run(spec, env, K, runs, seed, monitor=False).cumulative_regret


def _curve_chunk(i, _chunk_seed, specs, env, K: int, runs: int, seed: int) -> np.ndarray:
    """Chunk i of :func:`regret_curve_set`: the curves of ``specs[i]`` from the common ``seed``, not the chunk's."""
    return _regret_curves(specs[i], env, K, runs, seed)


def regret_curve_set(specs, env, K: int, runs: int, seed: int, exe=None, cache_report: dict | None = None) -> list:
    """:func:`regret_curves` of every spec of ``specs`` (one batch of ``runs`` runs each, common ``seed``).

    With ``exe`` (dpcheck.audit.ExecutionOptions) one chunk per spec through dpcheck.parallel.run_chunks: the
    curves run side by side on ``exe``'s workers, --cache stores each as it finishes (label
    "dp_ucbvi.regret_curves"; a killed run resumes from the finished ones) and ``cache_report`` receives the
    chunk cache's report. The result does not depend on the workers: every curve is a function of its spec
    and ``seed`` alone. Without ``exe``: in this process, through the active result cache."""
    if exe is None:
        return [regret_curves(s, env, K, runs, seed) for s in specs]
    from dpcheck.parallel import run_chunks
    return run_chunks(_curve_chunk, len(specs), seed, args=(list(specs), env, int(K), int(runs), int(seed)),
                      workers=exe.workers, backend=exe.backend, scheduler=exe.scheduler, cache_dir=exe.cache_dir,
                      cache_key="dp_ucbvi.regret_curves", say=exe.progress,
                      cache_report=cache_report if exe.cache_dir else None)


def _agent_run(spec: AgentSpec, env, K: int, runs: int, seed: int, **run_kw):
    """One vectorised batch of ``runs`` runs of the agent, seeded by ``seed`` (the unit that is cached)."""
    return spec.make().run(env, K, np.random.default_rng(seed), runs=runs, **run_kw)


def practical_noise(spec: AgentSpec, H: int, K: int, eps: float) -> AgentSpec:
    """The practical noise calibration of reports/reproductions/dp_ucbvi_fig1/README.md (Chowdhury & Zhou's code): Lap(1/eps) per tree
    node (central) or per message coordinate (local), i.e. the privatizer run at
    eps_eff = eps * F H L (central) / eps * F H (local), F = 3 families, calibration "paper".
    Labelled everywhere: this is eps_eff-JDP/LDP, not eps. Width E stays rigorous (docs/derivations.md#widths-e), so
    the bonus covers the noise and the monotone min cannot lock in noise (docs/derivations.md#readings).
    """
    from dpcheck.algorithms.privatizers import tree_levels
    factor = 3 * H * (tree_levels(K) if spec.notion() == "JDP" else 1)
    return replace(spec, mode="practical", calibration="paper", width_mode="rigorous", epsilon=float(eps) * factor)


# A user's privatizer's regret sweep runs at least this many runs, --quick included. Its K-checks read the
# exponent of the increments of a cost that is flat (log) in the window; with --quick's 4 runs the t interval
# (3 degrees of freedom, t = 3.18) is about +-0.6 wide there and straddles the bounds 0.35 / 0.6, so the checks
# could only end PASS (uninformative) or INCONCLUSIVE (examples/my_privatizer.py's Gaussian tree, audit seed 0:
# cost exponent -0.01, PASS interval [-0.66, 0.64]; with 8 runs 0.07 and a plain PASS. Over audit seeds 0-5 both
# K-checks pass plainly at seeds 0, 1 with 8 runs, at seed 1 only with 4; seed 2 stays INCONCLUSIVE, its cost
# increments growing again late, 3.4 -> 6.4 -> 8.6; seeds 3, 4: learning finished, PASS (uninformative)). The
# built-in privatizers keep 4 runs under --quick: their false-alarm rates are calibrated there
# (benchmarks/false_alarm.py).
PLUGIN_MIN_RUNS = 8
BURN_IN_MARGIN = 2.0      # the K window must start at or after this x the burn-in end K_b the width implies


def burn_in_end(spec: AgentSpec, env, K: int, eps: float) -> float:
    """K_b = S A c E / H: the episode count by which the privacy term of the bonus, c E / N~ (practical mode:
    c = 1; theory: 20 H S iota, BonusConstants), falls below H at every (s, a) of a step if the agent explored
    uniformly, with E the width ``spec``'s privatizer declares at nominal budget ``eps`` under the regret runs'
    practical noise (:func:`practical_noise`). Until N~ ~ c E / H the bonus saturates at H (Qiao & Wang 2023,
    Algorithm 1: Q~ = min(..., H)), the agent explores and the privacy cost grows linearly; afterwards it bends
    flat (Theorem 5.2's additive S^2 A H^3 / eps term). A lower bound in practice: on the audit's 2x2x2 MDPs
    (audit seeds 0-5, Central privatizer, E = 41-659) the largest cost increment lies between 0.5 K_b and
    6 K_b, later where a state is rarely reached."""
    from dpcheck.algorithms.online.bonus import BonusConstants
    from dpcheck.audits.lib import privatizers as pa
    p = practical_noise(spec, env.H, K, float(eps)).make_privatizer()
    E = float(pa.declaration(p, env.H, env.S, env.A, int(K)).width)
    c = spec.constants if spec.constants is not None else BonusConstants.for_mode(spec.mode)
    coeff = c.c_privacy * (env.H * env.S if c.privacy_scales_with_HS else 1.0) * c.iota_value(
        env.H, env.S, env.A, int(K), spec.beta)
    return env.S * env.A * coeff * E / env.H


def burn_in_unmeasurable(window, K_b: float) -> str | None:
    """Why the K window of regret.exponent / regret.privacy_cost.<notion>_K cannot show the privacy cost's
    K-scaling for a privatizer whose declared width puts the burn-in's end at K_b (:func:`burn_in_end`), or
    None. A window starting before BURN_IN_MARGIN K_b holds burn-in increments (the bonus still saturated
    somewhere: linear growth bending flat), so the flat cost Theorem 5.2 claims is not there yet and a PASS
    there is no evidence for it."""
    need = BURN_IN_MARGIN * float(K_b)
    if float(window[0]) >= need:
        return None
    return (f"the privatizer's declared width puts the end of the privacy burn-in at K_b = {K_b:.4g} episodes "
            f"(bonus E/N~ >= H until then); the K window [{float(window[0]):g}, {float(window[1]):g}] starts before "
            f"{BURN_IN_MARGIN:g} K_b = {need:.4g}, so it holds burn-in increments and cannot show the cost's K-scaling")


def mark_unmeasurable(check: Check, why: str) -> Check:
    """A PASS whose window cannot show what the check is named after is PASS (uninformative) with the reason;
    a FAIL or INCONCLUSIVE is unchanged, a PASS already qualified keeps its qualifier."""
    from dpcheck.checks import PASS, qualify
    if check.verdict != PASS or check.details.get("qualifier"):
        return check
    return qualify(check, "uninformative", why)


def regret_checks(spec: AgentSpec, env, *, K_grid, runs: int, seed: int, alpha: float, eps_grid,
                  progress=None, exe=None) -> list[Check]:
    """Theorems 5.2 / 5.7 in practical mode: exponent of the increments, privacy cost in K and in eps.

    ``eps_grid``: the (nominal, practical-calibration) eps of the sweep; the exponent and the
    cost in K use eps_grid[1]. Runs the sweep (every curve from the same seed: common random
    numbers; on ``exe``'s workers, :func:`regret_curve_set`) and hands the curves to :func:`rate_checks`,
    which holds the statistics.
    """
    say = progress or (lambda m: None)
    K_grid = np.asarray(K_grid, dtype=int)
    K = int(K_grid[-1])
    H = env.H
    eps_main = float(eps_grid[1])
    main = practical_noise(spec, H, K, eps_main)
    base = replace(spec, privatizer="none", agent_class=None, mode="practical")
    say(f"dp_ucbvi: regret curves, K = {K}, {runs} runs, {spec.privatizer} eps={eps_main:g} (practical noise)")
    at = K_grid - 1
    cache: dict = {}
    got = regret_curve_set([base] + [practical_noise(spec, H, K, e) for e in eps_grid], env, K, runs, seed,
                           exe=exe, cache_report=cache)
    R_np = got[0][:, at]
    curves = {float(e): c[:, at] for e, c in zip(eps_grid, got[1:])}
    slope, statement = -1.0, None
    unmeasurable = None
    from dpcheck.audits.lib import privatizers as pa
    if pa.is_plugin(spec.template):
        # a user's privatizer: the claimed cost follows its own width E(eps), not the papers' 1/eps, and (JDP)
        # a K window its width puts inside the privacy burn-in measures no K-scaling (burn_in_unmeasurable)
        slope, statement = width_slope(spec, env, K, eps_grid)
        if spec.notion() == "JDP":        # LDP's sweep sits at large eps for its own burn-in (audits/dp_ucbvi.py)
            unmeasurable = burn_in_unmeasurable((K_grid[-4], K_grid[-2]), burn_in_end(spec, env, K, eps_main))
    checks = rate_checks(K_grid, R_np, curves, eps_main=eps_main, notion=spec.notion(), alpha=alpha, seed=seed,
                         label=f"DP-UCBVI {spec.privatizer}", agent=main.describe(), env=repr(env), runs=runs,
                         cost_eps_slope=slope, cost_eps_statement=statement)
    if unmeasurable:
        tag = spec.notion().lower()
        checks = [mark_unmeasurable(c, unmeasurable) if c.id in (f"regret.exponent.{tag}",
                                                                  f"regret.privacy_cost.{tag}_K") else c
                  for c in checks]
    if cache:          # --cache: how the curves were read back or computed, on the first check (one cache entry)
        checks[0] = replace(checks[0], details={**checks[0].details, "cache": cache})
    return checks


# Thresholds of the rate checks (slopes in log-log; each compared with a two-sided (1 - alpha) "t" bootstrap
# interval over the runs, dpcheck/regret.py "Intervals": a FAIL on one side errs at level alpha/2).
EXPONENT_BOUND = 0.5 + 0.1            # regret.exponent: Theorems 5.2 / 5.7, sqrt(T) + polylog tolerance
COST_K_PASS = {"JDP": 0.35, "LDP": 0.65}   # the shape of the privacy term: flat (JDP) / sqrt(K) (LDP)
COST_K_FAIL = {"JDP": 0.6, "LDP": 0.65}    # what contradicts the theorem's whole bound O~(sqrt(T) + cost term)
COST_EPS = (-1.35, -0.65)             # privacy cost ~ 1/eps; only the steep side contradicts O(1/eps)


def rate_checks(K_grid, R_np, curves: dict, *, eps_main: float, notion: str, alpha: float, seed: int,
                label: str = "DP-UCBVI", agent: dict | None = None, env: str = "", runs: int | None = None,
                cost_eps_slope: float = -1.0, cost_eps_statement: str | None = None) -> list[Check]:
    """The three rate checks from finished curves: ``R_np`` (runs, G) non-private and ``curves[eps]``
    (runs, G) private cumulative regret at K_grid, every run paired by seed (common random numbers).

    (ids carry the notion, ``tag`` = jdp | ldp: regret.exponent.<tag>, regret.privacy_cost.<tag>_K / _eps.)
    regret.exponent (Theorem 5.2; Theorem 5.7): exponent of the increments R(2K) - R(K) of the private regret at eps_main over
      the window [K_grid[-4], K_grid[-2]] (the last three doublings): PASS if the interval's upper end <= 0.6,
      FAIL if its lower end > 0.6 (the theorems' sqrt(T) + polylog tolerance 0.1).
    regret.privacy_cost.<tag>_K: the exponent of the increments of the paired privacy cost
      C(K) = R_DP(K) - R_UCBVI(K), same window. Not the cumulative log-log slope of C: the private bonus
      E/N~ saturates at H until N~ ~ E/H, so C grows linearly first and then bends flat, and a cumulative
      slope reads the end of that burn-in as growth while the cost is already flattening. The increments
      remove the accumulated constant (as for regret.exponent) and see the bend. JDP: PASS if the upper end
      <= 0.35 (the additive S^2 A H^3/eps term, flat up to polylog); FAIL only if the lower end > 0.6:
      C <= R_DP = O~(sqrt(T) + S^2 A H^3 / eps), so only cost increments growing faster than sqrt(K) polylog
      contradict Theorem 5.2 (an exponent in (0.35, 0.6] -- a tail of the burn-in, or a sqrt(K) cost -- is
      consistent with it and inconclusive). LDP: S^2 A sqrt(H^5 T)/eps, PASS / FAIL at 0.65.
    regret.privacy_cost.<tag>_eps: slope of C(K) at the largest K in eps: PASS if the interval lies in
      [-1.35, -0.65]; FAIL only if its upper end < -1.35 (the cost grows faster than 1/eps as eps decreases:
      contradicts the O(1/eps) term). A shallower slope is inconclusive: the theorem bounds the cost from
      above, and at small eps the cost is capped by the linear regret of the burn-in (saturation).
    Measured false-alarm rates of all three on the reference implementation: benchmarks/false_alarm.py.
    ``cost_eps_slope`` (default -1): the claimed slope in eps; a user's privatizer claims the slope of its
      own width E(eps) (:func:`width_slope`), the band and FAIL side move with it.
    """
    tag = notion.lower()    # check ids: regret.exponent.jdp, regret.privacy_cost.jdp_K, ... (as in dp_nash_vi)
    from dpcheck.regret import fit_increment_exponent, fit_scaling, regret_exponent_check
    K_grid = np.asarray(K_grid, dtype=int)
    R_np = np.asarray(R_np, dtype=float)
    curves = {float(e): np.asarray(v, dtype=float) for e, v in curves.items()}
    eps_grid = sorted(curves)
    R_priv = curves[float(eps_main)]
    K = int(K_grid[-1])
    window = (float(K_grid[-4]), float(K_grid[-2]))
    fit = fit_increment_exponent(K_grid, R_priv, window=window, alpha=alpha, seed=seed, interval="t")
    name = lambda e: f"{label}, eps={e:g} (practical noise)"
    agent = agent or {}
    det = {"agent": agent, "env": env, "mode": "practical", "runs": runs if runs is not None else R_np.shape[0],
           "noise": "practical calibration (reports/reproductions/dp_ucbvi_fig1/README.md): Lap(1/eps) per node / coordinate = privatizer at eps_eff",
           "epsilon_effective": agent.get("epsilon"),
           "K_grid": K_grid.tolist(), "regret_private": R_priv.mean(0).tolist(),
           "regret_nonprivate": R_np.mean(0).tolist(),
           "interval": "two-sided (1 - alpha) t bootstrap interval over runs (dpcheck/regret.py, Intervals)"}
    my_plots = [{"title": "Cumulative regret (exact expected, mean +- 1 sd over runs)", "xlabel": "K",
                 "ylabel": "Regret(K)", "logx": True, "logy": True, "kind": "line",
                 "series": [_band(name(e), K_grid, curves[e]) for e in eps_grid]
                 + [_band("UCBVI (non-private)", K_grid, R_np)]}]
    exp_check = regret_exponent_check(fit, claimed=0.5, tolerance=EXPONENT_BOUND - 0.5, id=f"regret.exponent.{tag}",
                                      source=f"{SOURCE}, Theorem {'5.2' if notion == 'JDP' else '5.7'} "
                                             f"(practical mode, reports/reproductions/dp_ucbvi_fig1/README.md)", details=det)
    exp_check = replace(exp_check, details={**exp_check.details,
                                            "plots": my_plots + list(exp_check.details.get("plots", []))})
    from dpcheck.regret import exponent_regime
    exp_check = exponent_regime(exp_check, fit)        # a saturated window passes, but says so
    checks = [exp_check]
    cost = R_priv - R_np
    ck = fit_increment_exponent(K_grid, cost, window=window, alpha=alpha, seed=seed, interval="t")
    jdp = notion == "JDP"
    key = "JDP" if jdp else "LDP"
    # JDP claims a flat cost: shrinking increments confirm it (a plain PASS); LDP claims sqrt(K) growth, which
    # shrinking increments cannot show (PASS (uninformative)). A wide interval over a flattened mean stays
    # INCONCLUSIVE, the regime in its reason
    checks.append(exponent_regime(slope_check(
        ck, bound=COST_K_PASS[key], fail_above=COST_K_FAIL[key], id=f"regret.privacy_cost.{tag}_K",
        statement=("exponent of the increments of the privacy cost Regret_DP(K) - Regret_UCBVI(K) "
                   + ("<= 0.35: an additive S^2 A H^3/eps term, flat in K up to polylog (Thm 5.2); FAIL only "
                      "above 0.6, where the cost outgrows the theorem's whole bound O~(sqrt(T) + S^2 A H^3/eps)"
                      if jdp else "<= 0.65: grows like S^2 A sqrt(H^5 T)/eps (Thm 5.7)")),
        source=SOURCE, xname="K", ylabel="increment of Regret_DP - Regret_UCBVI",
        details={"agent": agent, "mode": "practical", "window": [window[0], window[1]],
                 "statistic": "exponent of the increments C(K_{j+1}) - C(K_j) of the paired cost C "
                              "(dpcheck.regret.fit_increment_exponent), K_j in the window",
                 "cost_mean": cost.mean(0).tolist(), "K_grid": K_grid.tolist()}), ck, claim_flat=jdp))
    # the paired costs as measured: clipping each run at 0 turned a cost of mean 0 whose spread falls like 1/eps
    # into "~ 1/eps" (dpcheck.regret.undefined_log makes a PASS on a mean not clearly positive INCONCLUSIVE)
    costs = np.stack([curves[e][:, -1] - R_np[:, -1] for e in eps_grid], axis=1)
    se = fit_scaling(np.asarray(eps_grid, dtype=float), costs, alpha=alpha, seed=seed, interval="t")
    lo_eps, hi_eps = cost_eps_slope + (COST_EPS[0] + 1.0), cost_eps_slope + (COST_EPS[1] + 1.0)
    statement = cost_eps_statement or "privacy cost at fixed K scales like 1/eps (slope -1 +- 0.35), Thms 5.2 / 5.7"
    checks.append(slope_check(
        se, bound=hi_eps, lower=lo_eps, fail_above=None, id=f"regret.privacy_cost.{tag}_eps",
        statement=statement + f"; FAIL only if it grows faster than that as eps decreases (slope < {lo_eps:.3g})",
        source=SOURCE,
        xname="eps", details={"agent": agent, "mode": "practical", "K": K, "eps_grid": list(map(float, eps_grid))}))
    return checks


def width_slope(spec: AgentSpec, env, K: int, eps_grid) -> tuple[float, str]:
    """A plug-in privatizer's claimed privacy-cost scaling in eps: Thms 5.2 / 5.7 bound the privacy cost
    through Assumption 3.1, linearly in the width E, and E = O~(1/eps) is a property of the papers'
    Laplace privatizers, not of every privatizer (a Gaussian one has E ~ eps^-1/2 at large eps). So the
    claimed slope is the log-log slope of the plug-in's own E over the (practical-noise) eps grid."""
    from dpcheck.audits.lib import privatizers as pa
    slope = pa.width_eps_slope(lambda e: practical_noise(spec, env.H, K, e).make_privatizer(), eps_grid,
                               H=env.H, S=env.S, A=env.A, K=K)
    return slope, (f"privacy cost at fixed K scales like the privatizer's width E(eps) (slope {slope:.3g} in eps; "
                   f"Thms 5.2 / 5.7 through Assumption 3.1, E ~ 1/eps for the papers' privatizers)")


def _band(label, x, Y):
    m = Y.mean(0)
    s = Y.std(0)
    return {"label": label, "x": np.asarray(x).tolist(), "y": m.tolist(), "lo": (m - s).tolist(), "hi": (m + s).tolist()}
