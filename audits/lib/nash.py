"""Reusable checks of DP-Nash-VI (Qiao & Wang 2024, arXiv 2404.07559): the pieces audits/dp_nash_vi.py
assembles, public so that tests, benchmarks and other game audits can call them one by one.

* Privacy: :func:`jdp_scenario` / :func:`jdp_target` (the algorithm's observable outputs, black box:
  scripted user pairs, the adversary sees the action pairs sent to the other pairs), :func:`ldp_target`
  (one pair's message), :func:`privatizer_checks` (the privatizer audits of audits/lib/privatizers.py in the
  games setting: joint actions A*B, rewards=False, so 2 stream families).
* Assumptions: :func:`assumption_checks` -- Assumption 3.1 and the good event of Lemma 5.8 (from
  audits/lib/tabular.CountAssumptionMonitor, fed every release the algorithm planned with), CCE,
  UCB/LCB (Lemma B.7; Lemma B.8) and the certificate (Theorem 4.2), in theory or practical mode.
* Regret: :func:`regret_curves` (exact duality-gap regret), :func:`regret_job` (one run of the regret
  grid, common random numbers), :func:`nonprivate_exponent_check` (the one check that can FAIL),
  :func:`regret_checks` (increment exponent, privacy cost against eps and K), :func:`cost_K_comparison`
  (JDP vs LDP cost growth in K), with the plots the reports show. A user's privatizer is swept where it
  declares the built-in sweep's widths (:func:`width_matched_grid`) and its cost in eps is checked against
  its own width law (:func:`cost_eps_slope`).

Practical-mode constants void the paper's guarantees: every check computed with them goes through
:meth:`dpcheck.audit.Audit.soften` (a miss is inconclusive, never FAIL). Sources cite Qiao & Wang 2024 and
docs/derivations.md.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from dpcheck.audit import Audit
from dpcheck.checks import Check, FAIL, INCONCLUSIVE, PASS, invariant_check, probability_check, qualify
from dpcheck.claims import Claim
from dpcheck.regret import slope_check

SOURCE = "Qiao & Wang 2024, Differentially Private RL with Self-Play (arXiv 2404.07559)"
BETA = 0.1
REGRET_TOLERANCE = 0.1                 # exponent of the increments allowed up to 0.5 + this

# theory vs practical mode: one implementation, the audit base class's (plain functions here)
soften = Audit.soften
vacuous = Audit.vacuous


# ------------------------------------------------------------------ scripted users (JDP audit)
def jdp_scenario(H: int = 2, S: int = 2, A: int = 2, B: int = 2, seed: int = 0, K: int = 3):
    """(D, D'): K scripted user pairs (algorithms/envs/users.py: FixedTrajectoryUsers on joint actions, in
    the game protocol through UserPairs). Every pair starts in state 0 and stays there whatever the actions,
    except the first pair of D', who moves to state S-1 at her first step and stays. Rewards U[0,1]
    (seeded) are the game's known reward. Only the algorithm's randomness remains."""
    from dpcheck.algorithms.envs.users import FixedTrajectoryUsers, UserPairs
    rng = np.random.default_rng(seed)
    r = rng.random((H, S, A, B))
    states = np.zeros((K, H + 1), dtype=np.int64)
    rewards = np.zeros((K, H))                     # unused: the reward is known in the games setting
    D = FixedTrajectoryUsers(H, S, A * B, states, rewards)
    other = FixedTrajectoryUsers(H, S, A * B, np.r_[0, np.full(H, S - 1)][None, :], rewards[:1])
    pairs = UserPairs(D, r, B, name="jdp scenario D")
    return pairs, UserPairs(D.replace(0, other, 0), r, B, name="jdp scenario D'")


def audit_constants(H, S, E, iota):
    """The JDP audit's constants C1 = 0, C2 = 1 / (H S max(E,1) iota): the privacy term of the bonus is 1/N
    for a raw count and ~2/E for a private one, so a raw count in the bonus changes the deployed actions;
    privacy itself does not depend on C1, C2."""
    return 0.0, 1.0 / (H * S * max(E, 1.0) * iota)


def jdp_mechanism(make_privatizer, K: int = 3, algo_cls=None, **algo_kw):
    """mechanism(game, rng, size) -> (size,) labels of the action pairs sent to pairs 2..K."""
    from dpcheck.algorithms.games.dp_nash_vi import DPNashVI, confidence_log
    from dpcheck.audits.lib import privatizers as pa

    algo_cls = algo_cls or DPNashVI

    def mechanism(game, rng, size):
        priv = make_privatizer()
        # E is public and data-independent: the privatizer declares it from its parameters and the sizes
        E = float(pa.declaration(priv, game.H, game.S, game.A * game.B, K, rewards=False).width)
        iota = confidence_log(game.H, game.S, game.A, game.B, K, BETA)
        C1, C2 = audit_constants(game.H, game.S, E, iota)
        kw = dict(mode="practical", C1=C1, C2=C2)
        kw.update(algo_kw)
        res = algo_cls(priv, beta=BETA, **kw).run(game, K, rng, runs=int(size))
        joint = res.actions_max[:, 1:, :] * game.B + res.actions_min[:, 1:, :]     # (size, K-1, H)
        flat = joint.reshape(int(size), -1)
        base = game.A * game.B
        return flat @ (base ** np.arange(flat.shape[1], dtype=np.int64))          # one label per run

    return mechanism


def jdp_target(make_privatizer, epsilon: float, K: int = 3, claim_source: str = "", delta: float = 0.0, **kw):
    """The JDP black-box target: :func:`jdp_mechanism` on the neighbouring scenarios of :func:`jdp_scenario`,
    one discrete label per run (``kw``: algo_cls and the algorithm's keyword arguments)."""
    from dpcheck.target import AuditTarget
    D, Dp = jdp_scenario(K=K)
    return AuditTarget(name="dp_nash_vi.jdp", mechanism=jdp_mechanism(make_privatizer, K=K, **kw),
                       pairs=[(D, Dp)], claim=Claim(epsilon=epsilon, delta=delta, notion="JDP", source=claim_source),
                       output="discrete")


def ldp_target(make_privatizer, epsilon: float, claim_source: str = "", *, H: int = 2, S: int = 2, A: int = 2,
               B: int = 2):
    """One pair's message for the worst neighbouring trajectories (different (s,a,b) and (s,a,b,s') at every
    step), in the games setting (joint actions A*B, rewards=False). The statistic is the Laplace
    log-likelihood ratio of the message (a post-processing, so a bound on it bounds the message); tight
    for the Laplace randomiser. Built by audits/privatizers.local_target (one implementation for both)."""
    from dpcheck.audits.lib import privatizers as pa
    claim = Claim(epsilon=epsilon, notion="LDP", source=claim_source)
    return pa.local_target(pa.ClaimedTemplate(make_privatizer(), claim, False), H=H, S=S, A=A * B, rewards=False)


# ------------------------------------------------------------------ assumptions
def assumption_checks(game, make_privatizer, *, runs: int, K: int, rng, mode: str = "theory",
                      suffix: str = "", C1=None, C2=None, algo_cls=None, alpha: float = 0.05) -> list[Check]:
    """Assumption 3.1 (via audits/lib/tabular.CountAssumptionMonitor, fed every release the algorithm
    planned with), CCE, UCB/LCB (Lemma B.7; Lemma B.8) and the certificate (Theorem 4.2) on ``game``.

    Exact counts (E = 0, the non-private baseline) have N = 0 rows where P^ is undefined and the
    algorithm uses its convention (Qb = H, Qu = 0); there the monitor's ``valid_transition`` and
    ``no_underestimation`` items do not apply and are left out (said in the config of every check).
    ``alpha``: each probability check is at confidence 1 - alpha on its own (the run's --alpha; no
    simultaneous coverage across checks is claimed).
    """
    from dpcheck.algorithms.envs.game_planning import best_response_values, correlated_policy_values, duality_gap
    from dpcheck.algorithms.games.cce import cce_residual
    from dpcheck.algorithms.games.dp_nash_vi import DPNashVI
    from dpcheck.audits.lib import tabular

    algo_cls = algo_cls or DPNashVI
    priv = make_privatizer()
    box = {}

    def hook(counts, p):
        if not hasattr(p, "true_counts"):
            return
        if "mon" not in box:
            box["mon"] = tabular.CountAssumptionMonitor(runs, float(counts.width), has_rewards=False,
                                                source=SOURCE + ", Assumption 3.1; Lemmas 5.1 / 5.4 / 5.8 ",
                                                good_event_lemma="Lemma 5.8")
        box["mon"].update(counts, p.true_counts())

    res = algo_cls(priv, beta=BETA, mode=mode, C1=C1, C2=C2, record_values=True).run(
        game, K, rng, runs=runs, release_hook=hook)
    H = game.H
    src = f"{SOURCE}"
    tag = f" [{mode} mode]"
    practical = mode == "practical"
    vac_all = bool(res.vacuous.all())
    vac_msg = ("Qb = H and Qu = 0 at every (k,h,s,a,b): the %s-mode bonus (C1=%g, C2=%g, E=%.3g) exceeds H at K=%d"
               % (mode, res.config["C1"], res.config["C2"], res.width, K)) if vac_all else None
    out = []
    config = {"mode": mode, "C1": res.config["C1"], "C2": res.config["C2"], "E": res.width, "K": K, "runs": runs,
              "vacuous_fraction": float(res.vacuous.mean()), "game": getattr(game, "name", "")}

    if "mon" in box:
        exact = box["mon"].E == 0
        skip = ("assumption.valid_transition", "assumption.no_underestimation") if exact else ()
        if exact:
            config["exact_counts"] = "E = 0: valid_transition / no_underestimation do not apply (N = 0 convention)"
        for c in box["mon"].checks(beta=BETA, alpha=alpha):
            if c.id in skip:
                continue
            c = replace(c, id=c.id + suffix, details={**c.details, "config": config})
            out.append(soften(c, practical))
        mon = box["mon"]
        if not exact and mon.noise_seen:
            # Lemmas 5.1/5.4 (as for DP-UCBVI in audits/dp_ucbvi.py), from the same monitor: the hypothesis of Lemma 5.8
            # (post-processing), NOT "Assumption 3.1 holds" -- that is the four checks above, item by item
            c = probability_check(
                id="assumption.good_event" + suffix, failures=int((~mon.good_event).sum()), runs=runs,
                beta=BETA / 3, alpha=alpha, what="the good event |N^ - N| <= E/4",
                claim={"statement": "|N^ - N| <= E/4 for all (h,s,a,b,s',k) w.p. >= 1 - beta/3 "
                                    "(Lemma 5.8's hypothesis)",
                       "source": SOURCE + ", Lemmas 5.1 / 5.4"},
                details={"config": config, "max_noise_ratio_per_run (|N^-N|/(E/4))": mon.noise_ratio})
            out.append(soften(c, practical))
    else:                                   # say so rather than leave Assumption 3.1 out of the report silently
        out.append(Check(id="assumption.count_error" + suffix, kind="assumption", verdict=INCONCLUSIVE,
                         claim={"statement": "Assumption 3.1", "source": SOURCE + ", Assumption 3.1 "},
                         measured={"confidence": None}, details={"config": config},
                         reason="the privatizer exposes no true_counts(): Assumption 3.1 cannot be checked"))

    resid = cce_residual(res.pi, res.Qb, res.Qu)
    out.append(invariant_check(
        id="assumption.cce" + suffix, violations=int((resid > 1e-8 * H).sum()), total=resid.size,
        what="stage policies satisfy both CCE constraint families (tol 1e-8 H)",
        claim={"statement": "pi_h^k(.|s) = CCE(Qb_h^k(s), Qu_h^k(s)) (line 14, the CCE property)", "source": src + ", Algorithm 1 line 14"},
        details={"config": config, "max_residual": float(resid.max()), "solver": res.cce_stats}))

    br = best_response_values(game, res.mu, res.nu)
    tol = 1e-9
    up = (res.Qb < br.Q_dagger_nu - tol).any(axis=(2, 3, 4, 5)) | \
         (res.Vb[..., :H, :] < br.V_dagger_nu[..., :H, :] - tol).any(axis=(2, 3))
    lo = (res.Qu > br.Q_mu_dagger + tol).any(axis=(2, 3, 4, 5)) | \
         (res.Vu[..., :H, :] > br.V_mu_dagger[..., :H, :] + tol).any(axis=(2, 3))
    viol_runs = (up | lo).any(axis=1)
    # Gap_k of the episode policies from the same best responses (duality_gap would solve them again)
    gap_k = br.V_dagger_nu[..., 0, :] @ game.init - br.V_mu_dagger[..., 0, :] @ game.init
    c = probability_check(id="assumption.optimism" + suffix, failures=int(viol_runs.sum()), runs=runs,
                          beta=2 * BETA / 3, alpha=alpha, what="Qb >= Q^{dagger,nu^k} and Qu <= Q^{mu^k,dagger}" + tag,
                          claim={"statement": "UCB/LCB at every (k,h,s,a,b) w.p. >= 1 - 2 beta/3",
                                 "source": src + ", Lemma B.7"},
                          details={"config": config, "ucb_violations": int(up.sum()), "lcb_violations": int(lo.sum()),
                                   "episodes": int(up.size)})
    out.append(vacuous(soften(c, practical), vac_msg))

    _, V_pi = correlated_policy_values(game, res.pi)
    bad = ((V_pi[..., :H, :] > res.Vb[..., :H, :] + tol) | (V_pi[..., :H, :] < res.Vu[..., :H, :] - tol)).any(axis=(1, 2, 3))
    c = probability_check(id="assumption.optimism_correlated" + suffix, failures=int(bad.sum()), runs=runs,
                          beta=2 * BETA / 3, alpha=alpha, what="Vu <= V^{pi^k} <= Vb" + tag,
                          claim={"statement": "Vu_h^k <= V_h^{pi^k} <= Vb_h^k (used in Lemma B.8; docs/derivations.md#readings)",
                                 "source": src + " (Lemma B.8)"}, details={"config": config})
    out.append(vacuous(soften(c, practical), vac_msg))

    gap_out = duality_gap(game, res.mu_out, res.nu_out)
    # Theorem 4.2 has two parts of different kinds: the chain Delta_final <= mean_k certificate holds ALWAYS (an
    # invariant: one counterexample fails it; counted among the failures of a probability check at beta,
    # a few broken runs would pass unnoticed), the gap bound only on Lemma B.7's good event,
    # which has probability >= 1 - 2 beta/3 (Lemma B.7), so that is the level it is checked at.
    chain = int((res.delta > res.certificate.mean(axis=1) + 1e-12).sum())
    out.append(invariant_check(
        id="assumption.certificate_chain" + suffix, violations=chain, total=runs,
        what="Delta_final <= mean_k (Vb_1^k - Vu_1^k)(s_1) in every run",
        claim={"statement": "Delta_final <= (1/K) sum_k (Vb_1^k - Vu_1^k)(s_1) always",
               "source": src + ", Theorem 4.2 proof (Theorem 4.2, deterministic part)"},
        details={"config": config}))
    exceed = gap_out > res.delta + tol
    c = probability_check(id="assumption.certificate" + suffix, failures=int(exceed.sum()), runs=runs,
                          beta=2 * BETA / 3, alpha=alpha, what="duality gap of (mu^out, nu^out) <= Delta_final" + tag,
                          claim={"statement": "V^{dagger,nu^out} - V^{mu^out,dagger} <= Delta_final on the good "
                                              "event of Lemma B.7 (w.p. >= 1 - 2 beta/3)",
                                 "source": src + ", Theorem 4.2 proof with Lemma B.7"},
                          details={"config": config, "chain_violations": chain,
                                   "gap_out_mean": float(gap_out.mean()), "delta_mean": float(res.delta.mean()),
                                   "plots": [{"title": "certificate vs true duality gap of the episode policy",
                                              "xlabel": "episode k", "ylabel": "value", "logx": True, "logy": False,
                                              "kind": "line", "series": [
                                                  {"label": "(Vb_1 - Vu_1)(s_1), mean over runs",
                                                   "x": list(range(1, K + 1)), "y": res.certificate.mean(0).tolist()},
                                                  {"label": "Gap_k, mean over runs", "x": list(range(1, K + 1)),
                                                   "y": gap_k.mean(0).tolist()}]}]})
    out.append(vacuous(soften(c, practical), vac_msg))
    return out




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
    from dpcheck.algorithms.privatizers import NoPrivatizer, load_privatizer
    spec, eps, calibration, K, seeds = jobs[i]
    make = (lambda: NoPrivatizer()) if spec == "none" else (
        lambda: load_privatizer(spec, epsilon=eps, beta=BETA, calibration=calibration, width_mode="nominal"))
    R, config = regret_curves(game, make, K=K, seeds=seeds, rng=np.random.default_rng(common_seed))
    g = plot_grid(K)
    return {"grid": g, "R": R[:, g - 1], "config": config}


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


def theorem_privacy_term(spec: str, eps: float, calibration: str, game, K_grid) -> np.ndarray:
    """The K-dependence of the privacy term of Theorems 5.2 / 5.5: H^2 S^2 A B E(K) iota(K)^2 (eq. 48), with
    the privatizer's own (public, data-independent) width E(K) at horizon K: polylog for the Central
    privatizer, sqrt(K) polylog for the Local one. Only its shape in K is used."""
    from dpcheck.algorithms.games.dp_nash_vi import confidence_log
    from dpcheck.algorithms.privatizers import load_privatizer
    from dpcheck.audits.lib import privatizers as pa
    out = []
    for K in K_grid:
        p = load_privatizer(spec, epsilon=eps, beta=BETA, calibration=calibration, width_mode="nominal")
        E = pa.declaration(p, game.H, game.S, game.A * game.B, int(K), rewards=False).width
        iota = confidence_log(game.H, game.S, game.A, game.B, int(K), BETA)
        out.append(max(float(E), 1.0) * iota ** 2)
    return np.array(out)


def cost_eps_slope(spec: str, calibration: str, game, K: int, eps_grid) -> float:
    """The claimed slope in eps of the privacy cost at fixed K: -1 (E ~ 1/eps) for the built-in Laplace
    privatizers; for a user's privatizer the slope of its own declared width E(eps) over the sweep
    (dpcheck.audits.lib.privatizers.width_eps_slope, as in dp_ucbvi), since Theorems 5.2 / 5.5 bound the cost
    linearly in E (through Assumption 3.1) and a Gaussian tree's E ~ eps^-1/2 at large eps."""
    from dpcheck.algorithms.privatizers import load_privatizer
    from dpcheck.audits.lib import privatizers as pa
    make = lambda e: load_privatizer(spec, epsilon=e, beta=BETA, calibration=calibration, width_mode="nominal")
    if not pa.is_plugin(make(float(eps_grid[0]))):
        return -1.0
    return pa.width_eps_slope(make, eps_grid, H=game.H, S=game.S, A=game.A * game.B, K=int(K), rewards=False)


def declared_width(spec: str, eps: float, calibration: str, game, K: int) -> float:
    """The width E that privatizer ``spec`` at budget ``eps`` declares for a K-episode run on ``game``
    (nominal width mode, as the regret runs use; joint actions A*B, no rewards)."""
    from dpcheck.algorithms.privatizers import load_privatizer
    from dpcheck.audits.lib import privatizers as pa
    p = load_privatizer(spec, epsilon=float(eps), beta=BETA, calibration=calibration, width_mode="nominal")
    return float(pa.declaration(p, game.H, game.S, game.A * game.B, int(K), rewards=False).width)


def width_matched_grid(spec: str, ref_spec: str, ref_grid, calibration: str, game, K: int):
    """A user's privatizer's regret sweep: for each budget e of the built-in privatizer ``ref_spec``'s sweep,
    the eps at which ``spec`` declares the same width E as ``ref_spec`` at e (horizon K). The regime of the
    privacy cost -- saturated while the bonus E/N exceeds the game's scale, buried in the non-private
    regret's noise when E is tiny -- is set by E, not by eps (DP-Nash-VI plans with E only), so matching E puts
    the plug-in's sweep where the built-in's is informative whatever its noise law. (examples/my_privatizer.py's
    Gaussian tree declares more than 3x the Central privatizer's E at eps = 8 and matches its E at eps = 8, 16,
    32 only at eps ~ 220, 740, 2700 for K = 2000; swept at --epsilon x (1, 2, 4, 8) its cost was saturated and
    every rate check inconclusive.) Bisection in log eps on the declared width, assumed non-increasing in eps
    (only the ends are checked). Returns None when no eps in [1e-3, 1e6] matches (the width does not fall with
    eps, or not far enough, or the privatizer refuses those budgets): the caller keeps its default sweep."""
    from dpcheck.errors import MechanismError
    try:
        return _width_matched(spec, ref_spec, ref_grid, calibration, game, K)
    except (MechanismError, ValueError):         # a budget the privatizer refuses: no matching
        return None


def _width_matched(spec, ref_spec, ref_grid, calibration, game, K):
    lo_e, hi_e = 1e-3, 1e6
    w_lo, w_hi = declared_width(spec, lo_e, calibration, game, K), declared_width(spec, hi_e, calibration, game, K)
    out = []
    for e in ref_grid:
        target = declared_width(ref_spec, e, calibration, game, K)
        if not (w_hi <= target <= w_lo) or w_hi >= w_lo:
            return None
        a, b = np.log(lo_e), np.log(hi_e)
        for _ in range(60):
            m = 0.5 * (a + b)
            if declared_width(spec, np.exp(m), calibration, game, K) > target:
                a = m
            else:
                b = m
        out.append(float(f"{np.exp(b):.3g}"))
    out = tuple(sorted(set(out)))
    return out if len(out) == len(tuple(ref_grid)) else None


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
    sf = fit_scaling(np.array(eps_grid, float), np.maximum(cost_eps, 1e-9), alpha=alpha, seed=seed)
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
    sk = fit_scaling(np.array(K_cost, float), np.maximum(cost_K, 1e-9), alpha=alpha, seed=seed)
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


# ------------------------------------------------------------------ privatizer-level checks
def privatizer_checks(make_privatizer, claim: Claim, notion: str, *, quick: bool, samples: int, seed: int,
                      blackbox, exe=None) -> list[Check]:
    """The privatizer audits of audits/lib/privatizers.py in the games setting (joint actions A*B, rewards=False,
    2 stream families): whitebox.dp_event (dp_accounting PLD of the declared DpEvent), whitebox.sensitivity
    and whitebox.tree_noise_reuse (built-in privatizers), and the tight black box on what the privatizer
    releases (privacy.privatizer.blackbox: the Central stream; for LDP the message audit is
    privacy.ldp.blackbox).

    ``blackbox(target, id=, samples=, claim_source=) -> (Check, AuditResult)``: the audit's black-box
    runner (:meth:`dpcheck.audit.Audit.blackbox`, which carries --alpha, --seed, --workers and --cache).
    ``exe`` (the audit's ExecutionOptions): a user's (plug-in) privatizer gets the searched black-box audit
    (privatizers.plugin_blackbox) on the privatizer audits' budget (privatizers.PRIVATIZER_SAMPLES), as in
    dp_ucbvi."""
    from dpcheck.audits.lib import privatizers as pa
    from dpcheck.algorithms.privatizers.base import CountPrivatizer

    p = make_privatizer()
    H, S, AB, K = 2, 3, 4, 6                         # A = B = 2: joint actions A*B = 4
    d = pa.declaration(p, H, S, AB, K, rewards=False)
    out = [pa.dp_event_check(d.dp_event("replacement"), claim, add_remove_event=d.dp_event("add_remove"),
                             label=f"{getattr(p, 'name', type(p).__name__)}(H={H}, S={S}, A*B={AB}, K={K}, 2 families)")]
    kind = "central" if notion == "JDP" else "local"
    # the sensitivity search and the tree-reuse test read the noise structure of a private privatizer;
    # the non-private baseline (notion "none") has none, and its dp_event check already fails
    if isinstance(p, CountPrivatizer) and getattr(p, "notion", None) in ("JDP", "LDP"):
        out.append(pa.sensitivity_check(p, kind=kind, claim=claim, H=H, S=S, A=AB, K=K, rewards=False,
                                        examples=100 if quick else 300))
        if kind == "central":
            out.append(pa.tree_reuse_check(p, runs=1_000 if quick else 4_000, seed=int(seed), rewards=False,
                                           source=claim.source))
    claimed = pa.ClaimedTemplate(p, claim, False)
    if exe is not None and pa.is_plugin(p):
        pb = dict(source=claim.source, A=AB, rewards=False)
        if kind == "local" and callable(getattr(p, "message", None)):
            out.append(pa.plugin_blackbox(claimed, exe, search="message", id="privacy.ldp.blackbox", **pb))
        out.append(pa.plugin_blackbox(claimed, exe, search="stream", id="privacy.privatizer.blackbox", **pb))
        return out
    if kind == "central":
        tgt = pa.central_target(claimed, A=AB, rewards=False)
        out.append(blackbox(tgt, id="privacy.privatizer.blackbox", samples=samples, claim_source=claim.source)[0])
    else:
        tgt = pa.local_target(claimed, A=AB, rewards=False)
        out.append(blackbox(tgt, id="privacy.ldp.blackbox", samples=samples, claim_source=claim.source)[0])
    return out


# ------------------------------------------------------------------ privatizers by name
def privatizer_factory(spec, epsilon, calibration, width_mode):
    """make() -> a fresh privatizer ``spec`` (a built-in name or path.py:Class) at this budget."""
    from dpcheck.algorithms.privatizers import load_privatizer

    def make():
        kw = {"epsilon": epsilon, "beta": BETA, "calibration": calibration, "width_mode": width_mode}
        return load_privatizer(spec, **kw)
    return make


def accepts(spec, eps, calibration) -> bool:
    """Does the privatizer accept this budget? (a user's class may refuse, e.g. Gaussian needs eps <= 1)."""
    from dpcheck.errors import MechanismError
    try:
        privatizer_factory(spec, eps, calibration, "nominal")()
        return True
    except (MechanismError, ValueError):
        return False




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
