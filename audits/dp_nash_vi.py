"""Audit "dp_nash_vi": DP-Nash-VI (Qiao & Wang 2024) end to end (specs/dp_nash_vi.md, claims N1-N30).

`dpcheck audit dp_nash_vi [--privatizer central|local|path.py:Class] [--epsilon E] [--quick]`

Three parts, each a handful of checks (ids in brackets):

Privacy (N1, N2)
  [privacy.jdp.blackbox] Central protocol: scripted user pairs (fixed deterministic responses, so the
      algorithm is the only randomness); neighbouring sequences differ in the first pair; the adversary
      sees the action pairs sent to every OTHER pair (episodes 2..K, all steps), encoded as one discrete
      label. One sample = one whole run (vectorised over runs). The algorithm is run with "audit
      constants" C1 = 0, C2 = 1 / (H S E iota): privacy does not depend on C1, C2 (N3), and with these
      a raw count used in the bonus (or anywhere) changes the deployed actions, while the private
      bonus stays negligible, so a leak is visible.
  [privacy.jdp.power] The same audit on the non-private Nash-VI (NoPrivatizer): must come out as a
      violation with a large lower bound; shows the audit can see a raw count (skipped with --quick).
  [privacy.ldp.blackbox] Local protocol: exactly one pair's message for the worst neighbouring
      trajectories (different (s,a,b) and (s,a,b,s') at every step). The output audited is the
      Laplace log-likelihood ratio of the message (a post-processing, so any bound on it is a valid
      bound on the message); tight for the Laplace randomiser.
Assumptions (theory mode: C1 = 2, C2 = 10, the privatizer's rigorous width)
  [assumption.count_error]      Assumption 3.1 w.p. >= 1 - beta/3 (runs x all releases), exact binomial.
  [assumption.valid_transition] N~(s,a,b) = sum_s' N~(s,a,b,s') and P~ full-support distributions.
  [assumption.cce]              every stage policy is a CCE of (Qb, Qu) (N18, tolerance 1e-8 H).
  [assumption.optimism]         Qb >= Q^{dagger,nu^k}, Qu <= Q^{mu^k,dagger} at every (k,h,s,a,b) (N16),
                                w.p. >= 1 - 2 beta/3, against exact values from the true game.
  [assumption.optimism_correlated] Vu <= V^{pi^k} <= Vb (N17).
  [assumption.certificate]      Delta_final <= mean certificate (always) and the output policy's true
                                duality gap <= Delta_final (N27), w.p. >= 1 - beta.
  In theory mode the bonus exceeds H at these K (spec §5, last note): Qb = H, Qu = 0 everywhere and
  the checks hold trivially; they say so ("vacuous"). The same checks are repeated in the labelled
  practical mode (ids suffixed .practical) where they are informative but carry no guarantee
  (smaller constants void Lemma B.7), so their failures are reported as inconclusive evidence only.
Regret (practical mode: C1 = 0.1, C2 = 0.02, width_mode "nominal"; spec §5 "How to check")
  [regret.exponent.nonprivate | .jdp | .ldp] the duality-gap regret sum_k V^{dagger,nu^k} - V^{mu^k,dagger}
      (exact, from the true game) on a log K grid with several seeds; exponent of the increments
      R(2K) - R(K) <= 0.5 + 0.1 (Theorems 4.1, 5.2, 5.5; the privacy terms are constant (JDP) or
      sqrt(T)/eps (LDP), so 0.5 is the claim for all three).
  [regret.privacy_cost.jdp_eps | .ldp_eps] privacy cost R_private(K) - R_nonprivate(K) at the largest K
      against eps: slope -1 +- 0.5 (orders only; practical mode).
Test bed for regret and assumptions: T3-like random zero-sum games (seeded; recorded in config), the
regret one smaller (S = 2, A = B = 2, H = 2) so that private learning leaves the linear phase within
the time budget. Budgets: defaults ~2 min on 2 cores, --quick ~30 s.
"""
from __future__ import annotations

import math
import time

import numpy as np

from dpcheck.checks import Check, FAIL, INCONCLUSIVE, PASS, invariant_check, probability_check
from dpcheck.claims import Claim
from dpcheck.registry import register

SOURCE = "Qiao & Wang 2024, Differentially Private RL with Self-Play (arXiv 2404.07559)"
BETA = 0.1

# sizes of every part; quick in brackets
PRIVACY_SAMPLES = (200_000, 40_000)
ASSUMPTION = {"runs": (300, 120), "K": (300, 120)}
REGRET = {"seeds": (6, 4), "K": (8000, 2000), "eps": (2.5, 5.0, 10.0)}
REGRET_TOLERANCE = 0.1


# ------------------------------------------------------------------ scripted users (JDP audit)
class ScriptedPairs:
    """Per-episode user pairs with fixed deterministic responses (a depth-H response tree each).

    Pair k answers (h, s, a, b) with next state ``responses[k][h, s, a, b]``; pairs k >= len-1 all use
    the last table. ``r`` is the known reward. Only the algorithm's randomness remains.
    """

    per_episode = True

    def __init__(self, responses, r, S: int):
        self.responses = [np.asarray(t, dtype=np.int64) for t in responses]
        self.r = np.asarray(r, dtype=float)
        self.H, self.S, self.A, self.B = self.r.shape[0], S, self.r.shape[2], self.r.shape[3]
        self.init = np.eye(S)[0]

    def _table(self, episode):
        return self.responses[min(episode, len(self.responses) - 1)]

    def reset(self, rng, runs, episode=0):
        return np.zeros(runs, dtype=np.int64)

    def step(self, h, states, a, b, rng, episode=0):
        return self._table(episode)[h, states, a, b], self.r[h, states, a, b]


def jdp_scenario(H: int = 2, S: int = 2, A: int = 2, B: int = 2, seed: int = 0):
    """(D, D'): the first pair always moves to state 0 in D and to state S-1 in D'; every later pair
    moves to state 0. Rewards U[0,1] (seeded), known."""
    rng = np.random.default_rng(seed)
    r = rng.random((H, S, A, B))
    to = lambda s: np.full((H, S, A, B), s, dtype=np.int64)
    return ScriptedPairs([to(0), to(0)], r, S), ScriptedPairs([to(S - 1), to(0)], r, S)


def audit_constants(H, S, E, iota):
    """C1 = 0, C2 = 1 / (H S max(E,1) iota): the privacy term of the bonus is 1/N for a raw count and
    ~2/E for a private one (module docstring)."""
    return 0.0, 1.0 / (H * S * max(E, 1.0) * iota)


def jdp_mechanism(make_privatizer, K: int = 3, algo_cls=None, **algo_kw):
    """mechanism(game, rng, size) -> (size,) labels of the action pairs sent to pairs 2..K."""
    from algorithms.games.dp_nash_vi import DPNashVI, confidence_log

    algo_cls = algo_cls or DPNashVI

    def mechanism(game, rng, size):
        priv = make_privatizer()
        # E is public and data-independent: read it from a throw-away start of a fresh privatizer
        probe = make_privatizer()
        probe.start(1, game.H, game.S, game.A * game.B, K, np.random.default_rng(0), rewards=False)
        E = float(probe.width)
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


def jdp_target(make_privatizer, epsilon: float, K: int = 3, claim_source: str = "", **kw):
    from dpcheck.target import AuditTarget
    D, Dp = jdp_scenario()
    return AuditTarget(name="dp_nash_vi.jdp", mechanism=jdp_mechanism(make_privatizer, K=K, **kw),
                       pairs=[(D, Dp)], claim=Claim(epsilon=epsilon, notion="JDP", source=claim_source),
                       output="discrete")


def ldp_target(make_privatizer, epsilon: float, claim_source: str = ""):
    """One pair's message for the worst neighbouring trajectories; output: the Laplace log-likelihood
    ratio of the message between the two trajectories' statistics (a post-processing)."""
    from dpcheck.target import AuditTarget
    H, S, A, B = 2, 2, 2, 2
    X = (np.zeros((1, H + 1), dtype=np.int64), np.zeros((1, H), dtype=np.int64))
    Xp = (np.full((1, H + 1), S - 1, dtype=np.int64), np.full((1, H), A * B - 1, dtype=np.int64))

    def stats_of(traj):
        from algorithms.privatizers.base import episode_increments
        v, t, _ = episode_increments(traj[0], traj[1], None, S, A * B, with_rewards=False)
        return np.concatenate([v.reshape(-1), t.reshape(-1)])

    sx, sxp = stats_of(X), stats_of(Xp)

    def mechanism(traj, rng, size):
        priv = make_privatizer()
        priv.start(int(size), H, S, A * B, 2, rng, rewards=False)
        st = np.repeat(traj[0], size, axis=0)
        ac = np.repeat(traj[1], size, axis=0)
        msg = priv.message(st, ac, None, rng)
        m = msg.flat() if hasattr(msg, "flat") else np.asarray(msg).reshape(int(size), -1)
        return (np.abs(m - sxp).sum(axis=1) - np.abs(m - sx).sum(axis=1))

    return AuditTarget(name="dp_nash_vi.ldp", mechanism=mechanism, pairs=[(X, Xp)],
                       claim=Claim(epsilon=epsilon, notion="LDP", source=claim_source), output="continuous")


# ------------------------------------------------------------------ assumptions
def assumption_checks(game, make_privatizer, *, runs: int, K: int, rng, mode: str = "theory",
                      suffix: str = "", C1=None, C2=None, algo_cls=None) -> list[Check]:
    """Assumption 3.1, P~ validity, CCE, UCB/LCB (N16, N17) and the certificate (N27) on ``game``."""
    from algorithms.envs.game_planning import best_response_values, correlated_policy_values, duality_gap
    from algorithms.games.cce import cce_residual
    from algorithms.games.dp_nash_vi import DPNashVI

    algo_cls = algo_cls or DPNashVI
    priv = make_privatizer()
    res = algo_cls(priv, beta=BETA, mode=mode, C1=C1, C2=C2, record_values=True).run(game, K, rng, runs=runs)
    H = game.H
    src = f"{SOURCE}"
    tag = f" [{mode} mode]"
    practical = mode == "practical"
    vac_all = bool(res.vacuous.all())
    vac_msg = ("Qb = H and Qu = 0 at every (k,h,s,a,b): the %s-mode bonus (C1=%g, C2=%g, E=%.3g) exceeds H at K=%d"
               % (mode, res.config["C1"], res.config["C2"], res.width, K)) if vac_all else None
    out = []
    config = {"mode": mode, "C1": res.config["C1"], "C2": res.config["C2"], "E": res.width, "K": K, "runs": runs,
              "vacuous_fraction": float(res.vacuous.mean())}

    if res.good_event is not None:
        fails = int((~res.good_event.all(axis=1)).sum())
        c = probability_check(id="assumption.count_error" + suffix, failures=fails, runs=runs, beta=BETA / 3,
                              alpha=0.05, what="Assumption 3.1 (|N~-N| <= E, N~(s,a,b,s') > 0, N~(s,a,b) >= N)",
                              claim={"statement": "Assumption 3.1 holds for all (h,s,a,b,s',k) w.p. >= 1 - beta/3",
                                     "beta": BETA, "source": src + ", Lemmas 5.1/5.4/5.8"},
                              details={"config": config, "max_count_error": float(np.nanmax(res.count_error)),
                                       "width_E": res.width})
        out.append(_soften(c, practical))
    out.append(invariant_check(
        id="assumption.valid_transition" + suffix, violations=int((res.sum_error > 1e-9 * max(1.0, res.width)).sum()),
        total=res.sum_error.size, what="N~(s,a,b) = sum_s' N~(s,a,b,s') (so P~ rows are distributions)",
        claim={"statement": "Assumption 3.1 item 2 / Remark 3.2: P~ is a valid distribution", "source": src},
        details={"config": config, "max_sum_error": float(res.sum_error.max())}))

    resid = cce_residual(res.pi, res.Qb, res.Qu)
    out.append(invariant_check(
        id="assumption.cce" + suffix, violations=int((resid > 1e-8 * H).sum()), total=resid.size,
        what="stage policies satisfy both CCE constraint families (tol 1e-8 H)",
        claim={"statement": "pi_h^k(.|s) = CCE(Qb_h^k(s), Qu_h^k(s)) (line 14, N18)", "source": src + ", §2.5"},
        details={"config": config, "max_residual": float(resid.max()), "solver": res.cce_stats}))

    br = best_response_values(game, res.mu, res.nu)
    tol = 1e-9
    up = (res.Qb < br.Q_dagger_nu - tol).any(axis=(2, 3, 4, 5)) | \
         (res.Vb[..., :H, :] < br.V_dagger_nu[..., :H, :] - tol).any(axis=(2, 3))
    lo = (res.Qu > br.Q_mu_dagger + tol).any(axis=(2, 3, 4, 5)) | \
         (res.Vu[..., :H, :] > br.V_mu_dagger[..., :H, :] + tol).any(axis=(2, 3))
    viol_runs = (up | lo).any(axis=1)
    c = probability_check(id="assumption.optimism" + suffix, failures=int(viol_runs.sum()), runs=runs,
                          beta=2 * BETA / 3, alpha=0.05, what="Qb >= Q^{dagger,nu^k} and Qu <= Q^{mu^k,dagger}" + tag,
                          claim={"statement": "UCB/LCB at every (k,h,s,a,b) w.p. >= 1 - 2 beta/3",
                                 "source": src + ", Lemma B.7 (N16)"},
                          details={"config": config, "ucb_violations": int(up.sum()), "lcb_violations": int(lo.sum()),
                                   "episodes": int(up.size)})
    out.append(_vacuous(_soften(c, practical), vac_msg))

    _, V_pi = correlated_policy_values(game, res.pi)
    bad = ((V_pi[..., :H, :] > res.Vb[..., :H, :] + tol) | (V_pi[..., :H, :] < res.Vu[..., :H, :] - tol)).any(axis=(1, 2, 3))
    c = probability_check(id="assumption.optimism_correlated" + suffix, failures=int(bad.sum()), runs=runs,
                          beta=2 * BETA / 3, alpha=0.05, what="Vu <= V^{pi^k} <= Vb" + tag,
                          claim={"statement": "Vu_h^k <= V_h^{pi^k} <= Vb_h^k (used in Lemma B.8; spec B10)",
                                 "source": src + " (N17)"}, details={"config": config})
    out.append(_vacuous(_soften(c, practical), vac_msg))

    gap_out = duality_gap(game, res.mu_out, res.nu_out)
    chain = int((res.delta > res.certificate.mean(axis=1) + 1e-12).sum())
    exceed = gap_out > res.delta + tol
    c = probability_check(id="assumption.certificate" + suffix, failures=int(exceed.sum()) + chain, runs=runs,
                          beta=BETA, alpha=0.05, what="duality gap of (mu^out, nu^out) <= Delta_final" + tag,
                          claim={"statement": "V^{dagger,nu^out} - V^{mu^out,dagger} <= Delta_final <= mean_k "
                                              "(Vb_1^k - Vu_1^k)(s_1)", "source": src + ", Theorem 4.2 proof (N27)"},
                          details={"config": config, "chain_violations": chain,
                                   "gap_out_mean": float(gap_out.mean()), "delta_mean": float(res.delta.mean()),
                                   "plots": [{"title": "certificate vs true duality gap of the episode policy",
                                              "xlabel": "episode k", "ylabel": "value", "logx": True, "logy": False,
                                              "kind": "line", "series": [
                                                  {"label": "(Vb_1 - Vu_1)(s_1), mean over runs",
                                                   "x": list(range(1, K + 1)), "y": res.certificate.mean(0).tolist()},
                                                  {"label": "Gap_k, mean over runs", "x": list(range(1, K + 1)),
                                                   "y": duality_gap(game, res.mu, res.nu).mean(0).tolist()}]}]})
    out.append(_vacuous(_soften(c, practical), vac_msg))
    return out


def _vacuous(c: Check, msg):
    if not msg or c.verdict == FAIL:
        return c
    det = dict(c.details)
    det["vacuous"] = msg
    return Check(id=c.id, kind=c.kind, verdict=c.verdict, claim=c.claim, measured=c.measured, details=det,
                 reason=c.reason + f" (vacuously: {msg})")


def _soften(c: Check, practical: bool):
    """Practical-mode constants void the paper's guarantees: a miss there is evidence, not a violation."""
    if not practical or c.verdict != FAIL:
        return c
    det = dict(c.details)
    det["note"] = "practical mode: constants below the theory values, the claim is not guaranteed"
    return Check(id=c.id, kind=c.kind, verdict=INCONCLUSIVE, claim=c.claim, measured=c.measured, details=det,
                 reason="practical mode (no guarantee): " + c.reason)


# ------------------------------------------------------------------ regret
def regret_curves(game, make_privatizer, *, K: int, seeds: int, rng, algo_cls=None):
    """Exact duality-gap regret per seed: cumulative (seeds, K) and the run's config."""
    from algorithms.envs.game_planning import duality_gap
    from algorithms.games.dp_nash_vi import DPNashVI

    algo_cls = algo_cls or DPNashVI
    res = algo_cls(make_privatizer(), beta=BETA, mode="practical").run(game, K, rng, runs=seeds)
    gaps = duality_gap(game, res.mu, res.nu)                     # (seeds, K), each >= 0
    return np.cumsum(gaps, axis=1), res.config


def k_grid(K: int) -> np.ndarray:
    g = [K]
    while g[-1] // 2 >= 250:
        g.append(g[-1] // 2)
    return np.array(sorted(g))


# ------------------------------------------------------------------ the registered audit
def _privatizer_factory(spec, epsilon, calibration, width_mode):
    from algorithms.privatizers import load_privatizer

    def make():
        kw = {"epsilon": epsilon, "beta": BETA, "calibration": calibration, "width_mode": width_mode}
        return load_privatizer(spec, **kw)
    return make


@register("dp_nash_vi", algorithm="DP-Nash-VI (Qiao & Wang 2024)", notion="JDP / LDP",
          claim="eps-JDP (Central) / eps-LDP (Local); UCB/LCB; Regret O~(sqrt(H^2 SABT) + privacy term)",
          description="DP self-play in two-player zero-sum Markov games: privacy, assumptions and regret",
          privatizers=("central", "local"), default_epsilon=1.0)
def run(ctx) -> None:
    from algorithms.envs.generators import random_game
    from algorithms.privatizers import load_privatizer

    o = ctx.options
    q = 1 if o.quick else 0
    eps = float(o.epsilon) if o.epsilon is not None else 1.0
    spec = o.privatizer or "central"
    calibration = o.extra.get("calibration", "strict")
    probe = _privatizer_factory(spec, eps, calibration, "rigorous")()
    notion = "LDP" if (getattr(probe, "notion", "JDP") == "LDP" or callable(getattr(probe, "message", None))) else "JDP"
    samples = int(o.samples) if o.samples else PRIVACY_SAMPLES[q]
    assump_game = random_game(3, 2, 2, 3, ctx.rng("game", "T3"))
    regret_game = random_game(2, 2, 2, 2, ctx.rng("game", "regret"))
    ctx.config.update({
        "algorithm": "DP-Nash-VI", "privatizer": spec, "notion": notion, "epsilon": eps,
        "calibration": calibration, "beta": BETA, "quick": bool(o.quick),
        "theory_mode": {"C1": 2.0, "C2": 10.0, "width_mode": "rigorous"},
        "practical_mode": {"C1": 0.1, "C2": 0.02, "width_mode": "nominal",
                           "note": "labelled practical constants (DP-UCBVI spec §6.3 caveat); orders only"},
        "privacy_audit": {"constants": "C1 = 0, C2 = 1/(H S E iota) (privacy is independent of C1, C2: N3)",
                          "samples_per_side": samples},
        "assumption_game": "random T3 game S=3, A=B=2, H=3 (seeded from --seed)",
        "regret_game": "random game S=2, A=B=2, H=2 (seeded from --seed)",
        "cce_solver": "pure profiles + batched numpy simplex, HiGHS fallback, verified at 1e-8 H",
    })

    # -- privacy -------------------------------------------------------------------------
    t0 = time.perf_counter()
    make = _privatizer_factory(spec, eps, calibration, "rigorous")
    if notion == "JDP":
        ctx.progress(f"privacy: JDP black-box audit of the actions sent to other users ({samples} runs per side)")
        res = _audit(jdp_target(make, eps, claim_source=SOURCE + ", Lemma 5.1 + Billboard lemma (N1)"), samples, o, ctx)
        ctx.add(res.to_check(id="privacy.jdp.blackbox", claim_source=SOURCE + ", Lemma 5.1 (N1)"))
        if not o.quick:
            from algorithms.privatizers import NoPrivatizer
            base = _audit(jdp_target(lambda: NoPrivatizer(), eps), min(samples, 20_000), o, ctx)
            caught = base.epsilon_lower_bound > eps
            ctx.add(Check(id="privacy.jdp.power", kind="privacy", verdict=PASS if caught else INCONCLUSIVE,
                          claim={"statement": "the JDP audit catches the non-private Nash-VI (raw counts)",
                                 "source": "dpcheck self-test"},
                          measured={"epsilon_lower_bound": base.epsilon_lower_bound, "confidence": base.confidence,
                                    "samples": base.samples},
                          details={"baseline_verdict": base.verdict},
                          reason=(f"non-private baseline gives eps_lb = {base.epsilon_lower_bound:.3g} > {eps:g}: the audit sees raw counts"
                                  if caught else "the audit did not separate the non-private baseline; its power is in doubt")))
    else:
        ctx.progress(f"privacy: LDP black-box audit of one user's message ({samples} per side)")
        res = _audit(ldp_target(make, eps, claim_source=SOURCE + ", Lemma 5.4 (N2)"), samples, o, ctx)
        ctx.add(res.to_check(id="privacy.ldp.blackbox", claim_source=SOURCE + ", Lemma 5.4 (N2)"))
    ctx.config["time_privacy_s"] = round(time.perf_counter() - t0, 1)

    # -- assumptions -----------------------------------------------------------------------
    t0 = time.perf_counter()
    runs, K = ASSUMPTION["runs"][q], ASSUMPTION["K"][q]
    ctx.progress(f"assumptions: theory mode, {runs} runs x K={K} on a T3 game")
    for c in assumption_checks(assump_game, make, runs=runs, K=K, rng=ctx.rng("assumptions", "theory")):
        ctx.add(c)
    ctx.progress("assumptions: practical mode (labelled; informative, no guarantee)")
    make_nom = _privatizer_factory(spec, eps, calibration, "nominal")
    for c in assumption_checks(assump_game, make_nom, runs=runs, K=K, rng=ctx.rng("assumptions", "practical"),
                               mode="practical", suffix=".practical"):
        if c.id.startswith(("assumption.optimism", "assumption.certificate")):
            ctx.add(c)
    ctx.config["time_assumptions_s"] = round(time.perf_counter() - t0, 1)

    # -- regret ----------------------------------------------------------------------------
    from dpcheck.regret import fit_increment_exponent, fit_scaling, regret_exponent_check, scaling_check
    from algorithms.privatizers import NoPrivatizer

    t0 = time.perf_counter()
    seeds, Kr = REGRET["seeds"][q], REGRET["K"][q]
    grid = k_grid(Kr)
    window = (grid[1] if len(grid) > 3 else grid[0], grid[-2])
    eps_grid = REGRET["eps"]
    eps_ref = eps_grid[-1]
    ctx.config["regret"] = {"K": Kr, "seeds": seeds, "K_grid": grid.tolist(), "window": list(map(int, window)),
                            "epsilons": list(eps_grid), "fit": "increments R(2K) - R(K) (DESIGN.md)"}
    ctx.progress(f"regret: non-private Nash-VI, {seeds} seeds x K={Kr}")
    R_np, _ = regret_curves(regret_game, lambda: NoPrivatizer(), K=Kr, seeds=seeds, rng=ctx.rng("regret", "none"))
    curves = {"non-private": R_np}
    fit = fit_increment_exponent(grid, R_np[:, grid - 1], window=window, seed=o.seed)
    ctx.add(regret_exponent_check(fit, claimed=0.5, tolerance=REGRET_TOLERANCE, id="regret.exponent.nonprivate",
                                  source=SOURCE + ", Theorem 4.1 with E = 0 (N22)", what="duality-gap regret"))
    notions = [("jdp", "central", "Theorem 5.2 (N20)"), ("ldp", "local", "Theorem 5.5 (N21)")]
    if o.privatizer and o.privatizer not in ("central", "local"):
        notions = [(notion.lower(), spec, "Theorem 4.1 under Assumption 3.1 (N19)")]
    for key, pspec, thm in notions:
        costs = []
        for e in eps_grid:
            ctx.progress(f"regret: {pspec} privatizer at eps={e:g}, {seeds} seeds x K={Kr}")
            R, _ = regret_curves(regret_game, _privatizer_factory(pspec, e, calibration, "nominal"), K=Kr,
                                 seeds=seeds, rng=ctx.rng("regret", pspec, int(e * 1000)))
            costs.append(R[:, -1] - R_np[:, -1])
            curves[f"{key} eps={e:g}"] = R
            if e == eps_ref:
                f = fit_increment_exponent(grid, R[:, grid - 1], window=window, seed=o.seed)
                ctx.add(regret_exponent_check(
                    f, claimed=0.5, tolerance=REGRET_TOLERANCE, id=f"regret.exponent.{key}",
                    source=SOURCE + ", " + thm + " [practical mode]", what=f"duality-gap regret ({key.upper()}, eps={e:g})",
                    details={"plots": [_regret_plot(curves, grid)]}))
        y = np.maximum(np.stack(costs, axis=1), 1e-9)             # (seeds, n_eps)
        sf = fit_scaling(np.array(eps_grid), y, seed=o.seed)
        c = scaling_check(sf, expected=-1.0, tolerance=0.5, id=f"regret.privacy_cost.{key}_eps",
                          source=SOURCE + ", " + thm + ": privacy term ~ 1/eps [practical mode]",
                          what=f"{key.upper()} privacy cost R_priv(K) - R_nonpriv(K)", xname="eps")
        ctx.add(_soften(c, True))
    ctx.config["time_regret_s"] = round(time.perf_counter() - t0, 1)


def _audit(target, samples, o, ctx):
    from dpcheck.blackbox import audit
    return audit(target, samples=samples, alpha=o.alpha, seed=int(o.seed), workers=o.workers,
                 backend=o.backend, scheduler=o.scheduler, progress=ctx.progress)


def _regret_plot(curves, grid):
    return {"title": "cumulative duality-gap regret (mean over seeds)", "xlabel": "K", "ylabel": "Regret(K)",
            "logx": True, "logy": True, "kind": "line",
            "series": [{"label": name, "x": grid.tolist(), "y": R[:, grid - 1].mean(axis=0).tolist(),
                        "lo": R[:, grid - 1].min(axis=0).tolist(), "hi": R[:, grid - 1].max(axis=0).tolist()}
                       for name, R in curves.items()]}
