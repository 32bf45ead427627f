"""Assumption 3.1 of DP-UCBVI (Qiao & Wang 2023) and the lemmas built on it: the monitored run, the count
errors' order, optimism, and the explicit regret bound (eq. 75).
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from dpcheck.checks import Check, invariant_check, probability_check, vacuous
from dpcheck.parallel import cached_call
from dpcheck.regret import slope_check
from dpcheck.audits.lib.ucbvi.spec import AgentSpec, SOURCE, VACUOUS
from dpcheck.audits.lib.ucbvi.regret import _agent_run
from dpcheck.audits.lib.ucbvi.planner import bonus_check


# ----------------------------------------------------------------------------- assumptions
def monitored_run(spec: AgentSpec, env, *, K: int, runs: int, seed: int):
    """One batch of runs of the agent with Assumption 3.1's monitor on every release it planned with.

    Returns (the agent's run, the CountAssumptionMonitor). The Assumption 3.1 checks and the optimism
    check (whose details say per run whether the good event held) read the same batch. With --cache
    the finished batch is stored and read back on a rerun (dpcheck.parallel.cached_call)."""
    return cached_call("dp_ucbvi.monitored_run", _monitored_run, spec, env, K=K, runs=runs, seed=seed)


def _monitored_run(spec: AgentSpec, env, *, K: int, runs: int, seed: int):
    from dpcheck.audits.lib import tabular
    from dpcheck.audits.lib.ucbvi.planner import PlannerMonitor
    box = {}

    def hook(counts, priv):
        if "mon" not in box:
            box["mon"] = tabular.CountAssumptionMonitor(runs, counts.width,
                                                        has_rewards=counts.rewards is not None,
                                                        source=f"{SOURCE}, Assumption 3.1 / Lemma 5.4")
        box["mon"].update(counts, priv.true_counts())

    def estimates(k, P, r, n):
        if "planner" not in box:      # the agent's own width, iota and constants (its config), as it planned
            a = box["agent"]
            box["planner"] = PlannerMonitor(runs, env.H, env.S, env.A, width=a.privatizer.width,
                                            iota=a.constants.iota_value(env.H, env.S, env.A, K, a.beta),
                                            constants=a.constants)
        box["planner"].estimates(k, P, r, n)

    def plan(k, Q, policy):
        box["planner"].plan(k, Q, policy)

    agent = box["agent"] = spec.make()
    res = agent.run(env, K, np.random.default_rng(seed), runs=runs, regret=False, release_hook=hook,
                    estimates_hook=estimates, plan_hook=plan)
    res.monitors["planner"] = box.get("planner")   # the P~ and the bonus the planner used (audits/lib/ucbvi/planner.py)
    return res, box["mon"]


def assumption_checks(spec: AgentSpec, env, *, K: int, runs: int, seed: int, alpha: float,
                      run=None, monotone_runs=()) -> list[Check]:
    """Assumption 3.1 (Lemma 5.4, full-support P~ via audits/lib/tabular.py; the good event of Lemmas 5.1/5.6) and monotonicity, from the releases the agent
    actually planned with during one batch of runs (``run``: a finished :func:`monitored_run`). ``monotone_runs``:
    more finished batches (another mode) whose Q~ the monotonicity check reads as well: in theory mode Q~ = H
    nearly everywhere, so the min and the clip are exercised only in practical mode."""
    res, mon = run if run is not None else monitored_run(spec, env, K=K, runs=runs, seed=seed)
    m, E = res.monitors, res.width
    base = {"agent": spec.describe(), "env": repr(env), "K": K, "runs": runs, "E": E}
    checks = [replace(c, details={**c.details, **base}) for c in mon.checks(beta=spec.beta, alpha=alpha)]
    planner = m.get("planner")
    if planner is not None:     # Remark 3.2 for the P~ value iteration reads too, not only the release's ratio
        checks = [planner.transition_check(c) if c.id == "assumption.valid_transition" else c for c in checks]
    # the good event of Lemmas 5.1/5.6 from the same monitor that checks Lemma 5.4/full-support P~ (one definition of
    # the good event: |N^ - N| <= E/4 at every release, Lemma 5.4's hypothesis); INCONCLUSIVE without N^
    beta = spec.beta
    checks.append(mon.good_event_check(
        id="assumption.good_event", beta=beta / 3, alpha=alpha,
        claim={"statement": "|N^ - N| <= E/4 for all (h,s,a,s',k) w.p. >= 1 - beta/3 (the good event of Lemmas 5.1/5.6; Lemma 5.4's hypothesis)",
               "beta": beta / 3, "source": f"{SOURCE}, Lemmas 5.1 / 5.6"},
        details={**base, "max_noisy_error_over_quarter_E": mon.noise_ratio.tolist(),
                 "max_reward_error_over_E": mon.reward_ratio.tolist()},
        what="the good event"))
    # where Q~ = H at (nearly) every entry, the min with Q~^{k-1} and the clip at H are never exercised: an agent
    # without either held "in all cases" of a theory-mode batch (its bonus exceeds H everywhere)
    batches = [res, *(r for r, _ in monotone_runs)]
    mono = int(sum(b.monitors["monotonicity_violations"].sum() + b.monitors["above_H"].sum() for b in batches))
    total = sum(b.monitors["above_H"].size * K * b.H * b.S * b.A for b in batches)
    informative = max(1.0 - float(np.mean(b.monitors["vacuous_fraction"])) for b in batches)
    mono_check = invariant_check(
        id="assumption.monotone", violations=mono, total=total,
        claim={"statement": "Q~_h^k <= Q~_h^{k-1} and Q~ <= H for every (k,h,s,a)",
               "source": f"{SOURCE}, Algorithm 1 line 8; proof of Corollary C.10"},
        details={**base, "fraction_below_H": informative, "batches": len(batches)}, what="monotone min and clip at H")
    checks.append(vacuous(mono_check, f"Q~ < H at only {informative:.2%} of the entries: the min and the clip at H "
                                      "were not exercised" if informative < 0.01 else None))
    # the bonus the planner added, read off Q~ wherever the target is below min(Q~^{k-1}, H): in theory mode almost
    # nowhere (Q~ = H), so the practical batch carries it; the bonus code is shared by both modes (only the
    # constants differ), so a deviation from eq. 31 at the practical constants is a deviation of the code
    checks.append(bonus_check(
        [b.monitors.get("planner") for b in batches], id="whitebox.bonus",
        claim={"statement": "wherever Q~_h^k(s,a) < min(Q~_h^{k-1}(s,a), H), Q~ - r~ - P~ V~_{h+1} equals eq. 31's "
                            "bonus at the agent's N~, P~, E, iota and declared constants",
               "source": f"{SOURCE}, Algorithm 1 lines 6-8, eq. 31 (docs/derivations.md#constants)"},
        details={**base, "modes": [b.config.get("mode") for b in batches],
                 "tolerance": "1e-9 (H + |b|) + 1e-6 c_var sqrt(iota/N~) (1 + max V~) (audits/lib/ucbvi/planner.py)"}))
    return checks


def _max_error(spec: AgentSpec, eps: float, K: int, runs: int, seed: int) -> np.ndarray:
    """max over episodes of max |N^ - N| per run: the privatizer alone at ``eps`` on K - 1 fixed one-step
    trajectories (H = 1, S = 2, A = 1), its noise from ``seed``."""
    H, S, A = 1, 2, 1
    p = replace(spec, epsilon=float(eps)).make_privatizer()
    p.start(runs, H, S, A, K, np.random.default_rng(seed))
    st = np.zeros((runs, H + 1), dtype=np.int64)
    ac = np.zeros((runs, H), dtype=np.int64)
    rw = np.zeros((runs, H))
    worst = np.zeros(runs)
    for _ in range(K - 1):
        p.observe(st, ac, rw)
        c, t = p.release(), p.true_counts()
        worst = np.maximum(worst, np.abs(np.asarray(c.noisy_transitions) - t.transitions).reshape(runs, -1).max(1))
    return worst


def _max_error_chunk(i, _chunk_seed, spec: AgentSpec, configs, runs: int, seed: int) -> np.ndarray:
    """Chunk i (dpcheck.parallel.run_chunks): the (eps, K) batch ``configs[i]``, from the common ``seed``."""
    eps, K = configs[i]
    return _max_error(spec, eps, K, runs, seed)


def count_error_order_check(spec: AgentSpec, *, K_grid=(256, 1024, 4096), eps_grid=(0.5, 1.0, 2.0, 4.0),
                            runs: int = 20, seed: int = 0, alpha: float = 0.05, exe=None) -> list[Check]:
    """the count-error order: order of max |N^ - N|: Central (H/eps) polylog(K) (slope -1 in eps, < 0.25 in K); Local
    (H/eps) sqrt(K) (slope -1 in eps, 0.5 in K). The noise does not depend on the data (docs/derivations.md#widths-e), so
    the privatizer alone is run on fixed trajectories (H = 1, S = 2, A = 1). Each check FAILs only if the
    two-sided (1 - alpha) studentised bootstrap interval over the runs (dpcheck.regret's default "t") lies wholly outside its range (level
    alpha/2 per side when the interval is valid). The eps slope is -1 exactly whenever the noise is scale
    x Lap(1/eps) (the same draws at every eps: common random numbers). False-alarm rates over audit seeds
    (--quick, default; central and local): benchmarks/false_alarm.py.

    The (eps, K) batches run as chunks (dpcheck.parallel.run_chunks with ``exe``'s workers, backend and
    --cache, dpcheck.audit.ExecutionOptions; None: in this process, no cache), each from the common ``seed``:
    the result does not depend on the number of workers."""
    from dpcheck.parallel import run_chunks
    from dpcheck.regret import fit_scaling
    notion = spec.notion()
    H, S, A = 1, 2, 1
    K_mid = int(K_grid[1])
    configs = [(float(e), K_mid) for e in eps_grid]                       # the eps sweep at the middle K
    configs += [(float(eps_grid[1]), int(k)) for k in K_grid if (float(eps_grid[1]), int(k)) not in configs]
    par = {} if exe is None else dict(workers=exe.workers, backend=exe.backend, scheduler=exe.scheduler,
                                      cache_dir=exe.cache_dir, say=exe.progress)
    cache: dict = {}
    errors = dict(zip(configs, run_chunks(_max_error_chunk, len(configs), seed, args=(spec, configs, runs, seed),
                                          cache_key="dp_ucbvi:count_error", cache_report=cache, **par)))
    by_eps = np.stack([errors[(float(e), K_mid)] for e in eps_grid], axis=1)
    by_K = np.stack([errors[(float(eps_grid[1]), int(k))] for k in K_grid], axis=1)
    fe = fit_scaling(np.asarray(eps_grid, float), by_eps, alpha=alpha, seed=seed)
    src = f"{SOURCE}, Lemma {'5.1' if notion == 'JDP' else '5.6'} (Lemmas 5.1/5.6)"
    det = {"agent": spec.describe(), "runs": runs, "H": H, "S": S, "A": A}
    ylabel = "max |N^ - N|"
    out = [slope_check(fe, bound=-1 + 0.15, lower=-1 - 0.15, id="assumption.count_error_order_eps",
                       statement="max |N^ - N| scales like 1/eps", source=src, xname="eps",
                       details={**det, "K": int(K_grid[1]), **({"cache": cache} if par.get("cache_dir") else {})},
                       kind="assumption", ylabel=ylabel)]        # the chunks of both checks: one cache entry
    if notion == "JDP":
        # over a short K range a polylog has a sizeable log-log slope (0.3 on [128, 2048]); the
        # typical size b_c sqrt(L) sqrt(2 log m), b_c ~ L, predicts the K-dependence
        # exactly, so check that the error normalised by L^1.5 sqrt(log m) is flat in K
        from dpcheck.algorithms.privatizers import tree_levels
        C = H * S * A * (S + 2)
        norm = np.array([tree_levels(int(k)) ** 1.5 * math.sqrt(math.log(C * (int(k) - 1))) for k in K_grid])
        fk = fit_scaling(np.asarray(K_grid, float), by_K / norm[None, :], alpha=alpha, seed=seed)
        out.append(slope_check(fk, bound=0.15, lower=-0.15, id="assumption.count_error_order_K",
                               statement="central max |N^ - N| / (L^1.5 sqrt(log m)) is flat in K: the error "
                                         "is (H/eps) log2(K)^1.5 sqrt(log HSAK), polylogarithmic",
                               source=src, xname="K", details={**det, "raw_max_error": by_K.mean(0).tolist()},
                               kind="assumption", ylabel=ylabel + " / (L^1.5 sqrt(log m))"))
    else:
        fk = fit_scaling(np.asarray(K_grid, float), by_K, alpha=alpha, seed=seed)
        out.append(slope_check(fk, bound=0.5 + 0.15, lower=0.5 - 0.15, id="assumption.count_error_order_K",
                               statement="local max |N^ - N| grows like sqrt(K)", source=src, xname="K",
                               details=det, kind="assumption", ylabel=ylabel))
    return out


def optimism_check(spec: AgentSpec, env, *, K: int, runs: int, seed: int, alpha: float, run=None) -> Check:
    """optimism (Lemma C.11): Q~ >= Q* for all (k,h,s,a) w.p. >= 1 - beta, exact Q* from the true model. The details say per
    run whether the good event |N^ - N| <= E/4 held (CountAssumptionMonitor, as in assumption_checks): optimism (Lemma C.11) is
    proved on it, so a violation outside it is expected at rate <= beta/3."""
    res, mon = run if run is not None else monitored_run(spec, env, K=K, runs=runs, seed=seed)
    m = res.monitors
    fails = int((m["optimism_violations"] > 0).sum())
    sat = float(np.mean(m["vacuous_fraction"]))
    det = {"agent": spec.describe(), "env": repr(env), "K": K, "runs": runs, "mode": spec.mode,
           "violations_per_run": m["optimism_violations"].tolist(),
           "min_margin_per_run": m["optimism_min_margin"].tolist(),
           "first_violation_episode": m["optimism_first_violation"].tolist(),
           "saturated_fraction": sat, "good_event": mon.good_event.tolist()}
    check = probability_check(
        id="assumption.optimism", failures=fails, runs=runs, beta=spec.beta, alpha=alpha,
        claim={"statement": "Q~_h^k(s,a) >= Q*_h(s,a) for all (k,h,s,a) w.p. >= 1 - beta (Lemmas C.9/C.11)",
               "beta": spec.beta, "mode": spec.mode, "source": f"{SOURCE}, Lemma C.11 + Lemma C.9"},
        details=det, what="optimism")
    return vacuous(check, VACUOUS if sat > 0.99 else None)


def explicit_bound(H, S, A, K_arr, E, iota):
    """Theorem 4.1 / eq. 75: 1000 (sqrt(H^2 S A T_k iota^2) + H^2 S^2 A E iota^2 + H^3 S^2 A iota^2)."""
    T = H * np.asarray(K_arr, dtype=float)
    return 1000 * (np.sqrt(H ** 2 * S * A * T * iota ** 2) + H ** 2 * S ** 2 * A * E * iota ** 2
                   + H ** 3 * S ** 2 * A * iota ** 2)


def explicit_bound_check(spec: AgentSpec, env, *, K: int, runs: int, seed: int, alpha: float) -> Check:
    """Theorem 4.1: exact expected Regret(k) <= the explicit bound for all k, per run (w.p. >= 1 - beta)."""
    res = cached_call("dp_ucbvi.explicit_bound_runs", _agent_run, spec, env, K, runs, seed, monitor=True)
    R = res.cumulative_regret
    k = np.arange(1, K + 1)
    B = explicit_bound(res.H, res.S, res.A, k, res.width, res.iota)
    fails = int((R > B[None, :]).any(axis=1).sum())
    sat = float(np.mean(res.monitors["vacuous_fraction"]))
    det = {"agent": spec.describe(), "env": repr(env), "K": K, "runs": runs, "E": res.width, "iota": res.iota,
           "regret_K": R[:, -1].tolist(), "bound_K": float(B[-1]), "max_ratio": float((R / B[None, :]).max()),
           "saturated_fraction": sat,
           "per_episode_regret_last": res.regret[:, -1].tolist()}
    check = probability_check(
        id="regret.explicit_bound", failures=fails, runs=runs, beta=spec.beta, alpha=alpha,
        claim={"statement": "Regret(k) <= 1000 (sqrt(H^2 S A T_k iota^2) + H^2 S^2 A E iota^2 + H^3 S^2 A iota^2) "
                            "for all k, w.p. >= 1 - beta (Theorem 4.1, eq. 75)", "beta": spec.beta, "mode": spec.mode,
               "source": f"{SOURCE}, Theorem 4.1 / Lemma C.9"},
        details=det, what="explicit regret bound")
    # Regret(k) <= k H for any policy (rewards in [0, 1]): where the bound is above that at every k, no agent can
    # break it, saturated or not (a non-optimistic agent with linear regret passed plainly)
    trivial = bool(np.all(B >= k * res.H))
    det["bound_over_trivial_min"] = float(np.min(B / (k * res.H)))
    why = (f"the bound exceeds k H, the largest regret any policy can have, at every k <= {K} (by {np.min(B / (k * res.H)):.3g}x "
           "at least): no agent can break it here" if trivial else VACUOUS if sat > 0.99 else None)
    return vacuous(replace(check, kind="regret", details=det), why,
                   note=None if trivial else " (vacuously: the bound's constant is huge and regret is linear)")
