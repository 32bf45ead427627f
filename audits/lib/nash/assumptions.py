"""Assumption checks of DP-Nash-VI (Qiao & Wang 2024): Assumption 3.1 and the good event of Lemma 5.8 (from
audits/lib/tabular.CountAssumptionMonitor), CCE, UCB/LCB (Lemmas B.7, B.8) and the certificate (Theorem 4.2),
in theory or practical mode. A bound that is true by construction at almost every entry (the bonus saturates) is
not evidence: such checks are vacuous (:data:`MIN_INFORMATIVE`, :func:`untested`). In the exact model (exact counts,
deterministic transitions: :func:`exact_model_game`, :data:`EXACT_CONSTANTS`) Lemma B.7's conclusion holds surely
for any constants, so the optimism and certificate checks are invariants there and can FAIL whatever C1, C2.
"""
from __future__ import annotations

from dataclasses import replace


import numpy as np

from dpcheck.checks import Check, INCONCLUSIVE, clopper_pearson, invariant_check, probability_check
from dpcheck.audits.lib.nash.scenario import BETA, SOURCE, soften, vacuous

#: A side of a bound (the UCB side Qb >= Q^{dagger,nu}, the LCB side Qu <= Q^{mu,dagger}, or the certificate) is
#: *informative* at an entry where it is not true by construction: Qb_h < H - h (0-based h: no policy collects
#: more than H - h from step h on, and Qb is clipped at H, not H - h), Qu_h > 0 (values are >= 0), Delta_final < H
#: (a duality gap is <= H). A check whose side is informative at fewer than this fraction of the entries it ranges
#: over, or whose informative runs are too few to FAIL it even if every one of them failed, is vacuous
#: (dpcheck.checks.vacuous): its PASS is shown as "PASS (vacuous)" with the fractions in the reason.
MIN_INFORMATIVE = 0.01

#: Constants of the exact-model batch (:func:`exact_model_game`, exact counts): any C1, C2 >= 0 keep Lemma B.7's
#: conclusion sure there (docs/derivations.md#exact-model), so they are chosen for what the checks can see. C2 =
#: 0.002 keeps the bonus C2 H^2 S iota / N below the game's scale after a few visits (the audit's game: UCB side
#: informative at ~40% of the entries, LCB ~50%, Delta_final < H in every run at K = 120), where theory's C2 = 10
#: and the practical 0.02 with the private E saturate it; C1 = 1 > 0 makes gamma (line 8) matter, so a sign error
#: in it shows (C1 = 2 compounds gamma over the steps until Delta_final = H again).
EXACT_CONSTANTS = {"C1": 1.0, "C2": 0.002}


def exact_model_game(S: int, A: int, B: int, H: int, rng):
    """A random game with deterministic transitions (s' = f_h(s, a, b) uniform over states, r_h(s, a, b) ~ U[0, 1],
    s_1 = 0): with exact counts (the non-private baseline, E = 0) the estimated kernel P~ = N(s,a,b,.)/N(s,a,b) is
    the true one wherever N > 0, bit for bit, so the concentration events of Qiao & Wang 2024, Lemma B.7 hold surely.
    With A != B a joint-action encoding that confuses A and B shows (:func:`assumption_checks`'s trajectory count
    check)."""
    from dpcheck.algorithms.envs.games import MarkovGame
    nxt = rng.integers(0, S, size=(H, S, A, B))
    P = np.zeros((H, S, A, B, S))
    np.put_along_axis(P, nxt[..., None], 1.0, axis=-1)
    return MarkovGame(P, rng.random((H, S, A, B)), 0, name=f"deterministic-game-S{S}A{A}B{B}H{H}")


def is_exact_model(game, width: float) -> bool:
    """Exact counts (E = 0) and deterministic transitions: P~ = P wherever a pair was visited."""
    P = np.asarray(game.P)
    return float(width) == 0.0 and bool(np.all((P == 0.0) | (P == 1.0)))


def untested(sides: dict, informative_runs: int, runs: int, beta: float, alpha: float) -> str | None:
    """Why a check over ``sides`` ({name: fraction of its entries that are informative}) is essentially untested
    (:data:`MIN_INFORMATIVE`), or None. ``informative_runs``: the runs with at least one informative entry of any
    side; a probability check FAILs only when the Clopper-Pearson lower bound on its failure rate exceeds
    ``beta`` (dpcheck.checks.probability_check), which failures confined to those runs may never reach."""
    frac = ", ".join(f"{name} {f:.3%} of the entries" for name, f in sides.items())
    if min(sides.values()) < MIN_INFORMATIVE:
        return f"the bound can fail (is not true by construction) only at: {frac}; below {MIN_INFORMATIVE:.0%}"
    if float(clopper_pearson(informative_runs, runs, alpha)[0]) <= beta:
        return (f"the bound can fail at: {frac}, but only in {informative_runs}/{runs} runs: failing all of them could "
                f"not FAIL the check at beta={beta:g}")
    return None


# ------------------------------------------------------------------ assumptions
def assumption_batch(i, _seed, batches, game, runs: int, K: int, alpha: float) -> list[Check]:
    """:func:`assumption_checks` as chunk i of dpcheck.parallel.run_chunks: batches[i] = (make_privatizer, rng,
    mode, suffix[, overrides]) (the dp_nash_vi audit runs its theory, practical and exact-model batches beside its
    regret batches); ``overrides`` (a dict) replaces any of game, runs, K, C1, C2 for that batch."""
    make, rng, mode, suffix, *rest = batches[i]
    kw = {"game": game, "runs": runs, "K": K, **(rest[0] if rest else {})}
    return assumption_checks(kw.pop("game"), make, rng=rng, mode=mode, suffix=suffix, alpha=alpha, **kw)


def assumption_checks(game, make_privatizer, *, runs: int, K: int, rng, mode: str = "theory",
                      suffix: str = "", C1=None, C2=None, algo_cls=None, alpha: float = 0.05) -> list[Check]:
    """Assumption 3.1 (via audits/lib/tabular.CountAssumptionMonitor, fed every release the algorithm
    planned with), CCE, UCB/LCB (Lemma B.7; Lemma B.8) and the certificate (Theorem 4.2) on ``game``.

    Exact counts (E = 0, the non-private baseline) have N = 0 rows where P^ is undefined and the
    algorithm uses its convention (Qb = H, Qu = 0); there the monitor's ``valid_transition`` and
    ``no_underestimation`` items do not apply and are left out (said in the config of every check).
    ``alpha``: each probability check is at confidence 1 - alpha on its own (the run's --alpha; no
    simultaneous coverage across checks is claimed).

    In the exact model (:func:`is_exact_model`: E = 0 and deterministic transitions, e.g. :func:`exact_model_game`
    with NoPrivatizer) Lemma B.7's concentration events hold surely, so optimism, optimism_correlated and
    certificate are invariants (any violation FAILs, whatever ``mode``, C1, C2: never softened).
    whitebox.trajectory_counts (every batch): the privatizer's counts are the recorded trajectories'
    (:func:`trajectory_counts_check`).
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
    tol_inf = 1e-9 * H                      # a bound within rounding of its trivial value is not informative
    src = f"{SOURCE}"
    # exact model: Lemma B.7's conclusion holds surely whatever the constants (docs/derivations.md#exact-model), so
    # its checks are invariants, never softened
    exact = is_exact_model(game, res.width)
    tag = " [exact model: E = 0, deterministic transitions]" if exact else f" [{mode} mode]"
    practical = mode == "practical" and not exact
    # where each side of a bound is informative, i.e. not true by construction (MIN_INFORMATIVE); shapes
    # (runs, K, H, S, A, B) for Q, (runs, K, H, S) for V, (runs,) for Delta_final
    cap = H - np.arange(H)                                    # the largest value from step h (0-based) on
    q_up = res.Qb < cap[:, None, None, None] - tol_inf
    q_lo = res.Qu > tol_inf
    v_up = res.Vb[:, :, :H] < cap[:, None] - tol_inf
    v_lo = res.Vu[:, :, :H] > tol_inf
    d_inf = res.delta < H - tol_inf
    # fractions of the (run, k, h, s, a, b), (run, k, h, s) and run entries
    informative = {"ucb (Qb_h < H - h)": float(q_up.mean()), "lcb (Qu_h > 0)": float(q_lo.mean()),
                   "upper (Vb_h < H - h)": float(v_up.mean()), "lower (Vu_h > 0)": float(v_lo.mean()),
                   "certificate (Delta_final < H)": float(d_inf.mean())}
    regime = " (%s: C1=%g, C2=%g, E=%.3g, K=%d)" % ("exact model" if exact else mode + " mode", res.config["C1"],
                                                     res.config["C2"], res.width, K)

    def why(sides, runs_informative):
        w = untested(sides, int(runs_informative.sum()), runs, 2 * BETA / 3, alpha)
        return w and w + regime

    out = []
    config = {"mode": mode, "C1": res.config["C1"], "C2": res.config["C2"], "E": res.width, "K": K, "runs": runs,
              "vacuous_fraction": float(res.vacuous.mean()), "informative_fraction": informative,
              "game": getattr(game, "name", ""), "exact_model": exact}

    if "mon" in box:
        exact_counts = box["mon"].E == 0
        skip = ("assumption.valid_transition", "assumption.no_underestimation") if exact_counts else ()
        if exact_counts:
            config["exact_counts"] = "E = 0: valid_transition / no_underestimation do not apply (N = 0 convention)"
        for c in box["mon"].checks(beta=BETA, alpha=alpha):
            if c.id in skip:
                continue
            c = replace(c, id=c.id + suffix, details={**c.details, "config": config})
            out.append(soften(c, practical))
        mon = box["mon"]
        if not exact_counts:
            # Lemmas 5.1/5.4 (as for DP-UCBVI in audits/dp_ucbvi.py), from the same monitor: the hypothesis of Lemma 5.8
            # (post-processing), NOT "Assumption 3.1 holds" -- that is the four checks above, item by item;
            # INCONCLUSIVE when the releases carry no N^
            c = mon.good_event_check(
                id="assumption.good_event" + suffix, beta=BETA / 3, alpha=alpha,
                what="the good event |N^ - N| <= E/4",
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

    out.append(trajectory_counts_check(res, priv, game, suffix=suffix, config=config))

    resid = cce_residual(res.pi, res.Qb, res.Qu)
    # a stage game where Qb does not depend on the max player's action and Qu not on the min player's (Qb = H,
    # Qu = 0 when the bonus saturates) makes every distribution a CCE: the constraints test nothing there.
    # The CCE property does not depend on the constants, so it is never softened in practical mode.
    flat_b = np.ptp(res.Qb, axis=-2).max(axis=-1) <= 1e-12 * H
    flat_u = np.ptp(res.Qu, axis=-1).max(axis=-1) <= 1e-12 * H
    nontrivial = int((~(flat_b & flat_u)).sum())
    cce = invariant_check(
        id="assumption.cce" + suffix, violations=int((resid > 1e-8 * H).sum()), total=resid.size,
        what="stage policies satisfy both CCE constraint families (tol 1e-8 H)",
        claim={"statement": "pi_h^k(.|s) = CCE(Qb_h^k(s), Qu_h^k(s)) (line 14, the CCE property)",
               "source": src + ", Algorithm 1 line 14"},
        details={"config": config, "max_residual": float(resid.max()), "solver": res.cce_stats,
                 "informative_stage_games": nontrivial})
    out.append(vacuous(cce, None if nontrivial else
                       f"every one of the {resid.size} stage games had Qb constant in the max player's action and Qu "
                       "in the min player's (saturated bonuses): any distribution is a CCE there"))

    br = best_response_values(game, res.mu, res.nu)
    # exact model: the CCE is verified to 1e-8 H per stage game (Vb_h >= max_a <nu, Qb(a, .)> - 1e-8 H), and the
    # induction of Lemma B.7 adds one such slack per step
    tol = 1e-8 * H * H + 1e-9 if exact else 1e-9
    up = (res.Qb < br.Q_dagger_nu - tol).any(axis=(2, 3, 4, 5)) | \
         (res.Vb[..., :H, :] < br.V_dagger_nu[..., :H, :] - tol).any(axis=(2, 3))
    lo = (res.Qu > br.Q_mu_dagger + tol).any(axis=(2, 3, 4, 5)) | \
         (res.Vu[..., :H, :] > br.V_mu_dagger[..., :H, :] + tol).any(axis=(2, 3))
    # Gap_k of the episode policies from the same best responses (duality_gap would solve them again)
    gap_k = br.V_dagger_nu[..., 0, :] @ game.init - br.V_mu_dagger[..., 0, :] @ game.init

    def bound_check(id_, bad_runs, what, claim, details, sides, runs_informative, episodes=None):
        """Lemma B.7-type bound: a probability check at 2 beta/3 (softened in practical mode) or, in the exact
        model, an invariant over the (run, episode) cases ``episodes`` (else the runs); vacuous where a side can
        fail at too few entries (:func:`untested`; in the exact model only the fraction matters: one violation
        fails an invariant)."""
        if exact:
            cases = bad_runs if episodes is None else episodes
            c = invariant_check(id=id_, violations=int(cases.sum()), total=int(cases.size), what=what + tag,
                                claim={**claim,
                                       "statement": claim["statement"] + "; exact model: surely (an invariant)",
                                       "source": claim["source"] + " (exact model: docs/derivations.md#exact-model)"},
                                details={**details, "tolerance": tol})
            shown = ", ".join(f"{name} {f:.1%} of the entries" for name, f in sides.items())
            if min(sides.values()) < MIN_INFORMATIVE:
                return vacuous(c, f"the bound can fail (is not true by construction) only at: {shown}; below "
                                  f"{MIN_INFORMATIVE:.0%}" + regime)
            return replace(c, reason=c.reason + f" (it can fail at: {shown})")
        c = probability_check(id=id_, failures=int(bad_runs.sum()), runs=runs, beta=2 * BETA / 3, alpha=alpha,
                              what=what + tag, claim=claim, details=details)
        return vacuous(soften(c, practical), why(sides, runs_informative))

    # Lemma B.7 tested only where a side can fail: Qb_h < H - h (UCB), Qu_h > 0 (LCB)
    sides = {"the UCB side, Qb_h < H - h, in": informative["ucb (Qb_h < H - h)"],
             "the LCB side, Qu_h > 0, in": informative["lcb (Qu_h > 0)"]}
    out.append(bound_check("assumption.optimism" + suffix, (up | lo).any(axis=1),
                           "Qb >= Q^{dagger,nu^k} and Qu <= Q^{mu^k,dagger}",
                           {"statement": "UCB/LCB at every (k,h,s,a,b) w.p. >= 1 - 2 beta/3",
                            "source": src + ", Lemma B.7"},
                           {"config": config, "ucb_violations": int(up.sum()), "lcb_violations": int(lo.sum()),
                            "episodes": int(up.size)},
                           sides, (q_up | q_lo).any(axis=(1, 2, 3, 4, 5)), episodes=up | lo))

    _, V_pi = correlated_policy_values(game, res.pi)
    bad_k = ((V_pi[..., :H, :] > res.Vb[..., :H, :] + tol)
             | (V_pi[..., :H, :] < res.Vu[..., :H, :] - tol)).any(axis=(2, 3))              # (runs, K)
    sides = {"the upper side, Vb_h < H - h, in": informative["upper (Vb_h < H - h)"],
             "the lower side, Vu_h > 0, in": informative["lower (Vu_h > 0)"]}
    out.append(bound_check("assumption.optimism_correlated" + suffix, bad_k.any(axis=1), "Vu <= V^{pi^k} <= Vb",
                           {"statement": "Vu_h^k <= V_h^{pi^k} <= Vb_h^k (used in Lemma B.8; "
                                         "docs/derivations.md#readings)",
                            "source": src + " (Lemma B.8)"}, {"config": config},
                           sides, (v_up | v_lo).any(axis=(1, 2, 3)), episodes=bad_k))

    gap_out = duality_gap(game, res.mu_out, res.nu_out)
    # Theorem 4.2's proof (eq. 50) reads V^{dagger,nu^out} - V^{mu^out,dagger} <= (Vb_1^kbar - Vu_1^kbar)(s_1) =
    # Delta_final <= (1/K) sum_k (Vb_1^k - Vu_1^k)(s_1) with kbar = argmin_k. Its first step is Lemma B.7's
    # (assumption.certificate below, on the good event); the second is min <= mean, true of any numbers, so
    # checking it as such would present a tautology as evidence. What can be wrong is the implementation of the
    # selection (Algorithm 1 lines 20-24): that Delta_final is the smallest certificate of the recorded Vb, Vu,
    # that kbar is its earliest minimiser and (mu^out, nu^out) are pi^kbar's marginals. That holds ALWAYS (an
    # invariant: one counterexample fails it; counted among the failures of a probability check at beta, a few
    # broken runs would pass unnoticed). When every certificate is H there is nothing to select (all tie,
    # Delta_final = H), so a pass is vacuous.
    cert = (res.Vb[:, :, 0] - res.Vu[:, :, 0]) @ game.init                       # (runs, K), from the record
    ar = np.arange(runs)
    tol_sel = 1e-12 * H
    wrong_delta = np.abs(res.delta - cert.min(axis=1)) > tol_sel
    wrong_cert = np.abs(res.certificate - cert).max(axis=1) > tol_sel
    # the earliest minimiser of the certificates the algorithm compared (res.certificate, which wrong_cert ties to
    # the record to 1e-12 H: the record's own argmin could differ from it by a rounding tie), and a minimiser of
    # the record's
    wrong_k = (res.k_out != np.argmin(res.certificate, axis=1)) | (cert[ar, res.k_out] > cert.min(axis=1) + tol_sel)
    wrong_pi = (np.abs(res.mu_out - res.pi[ar, res.k_out].sum(axis=-1)).max(axis=(1, 2, 3)) > 1e-12) | \
               (np.abs(res.nu_out - res.pi[ar, res.k_out].sum(axis=-2)).max(axis=(1, 2, 3)) > 1e-12)
    chain_bad = wrong_delta | wrong_k | wrong_pi | wrong_cert
    chain = int(chain_bad.sum())
    all_tie = bool(np.all(cert >= H - tol_inf))
    c = invariant_check(
        id="assumption.certificate_chain" + suffix, violations=chain, total=runs,
        what="Delta_final = min_k (Vb_1^k - Vu_1^k)(s_1) of the recorded values, pi^out = pi^kbar at its earliest "
             "minimiser kbar (so Delta_final <= the mean over k) in every run",
        claim={"statement": "Delta_final = (Vb_1^kbar - Vu_1^kbar)(s_1) with kbar = argmin_k and pi^out = pi^kbar "
                            "(Algorithm 1 lines 20-24), hence Delta_final <= (1/K) sum_k (Vb_1^k - Vu_1^k)(s_1) always",
               "source": src + ", Algorithm 1 lines 20-24; Theorem 4.2 proof, eq. 50"},
        details={"config": config, "wrong_delta": int(wrong_delta.sum()), "wrong_k_out": int(wrong_k.sum()),
                 "wrong_pi_out": int(wrong_pi.sum()), "wrong_certificate": int(wrong_cert.sum()),
                 "runs_last_episode_minimal": int((np.argmin(res.certificate, axis=1) == K - 1).sum())},
        vacuous=("every episode's certificate (Vb_1 - Vu_1)(s_1) is H in every run: nothing to select, "
                 "Delta_final = H" + regime) if all_tie else None)
    out.append(c)
    exceed = gap_out > res.delta + tol
    # a duality gap is <= H, so the bound can fail only in a run with Delta_final < H
    sides = {"Delta_final < H (one entry per run) in": informative["certificate (Delta_final < H)"]}
    out.append(bound_check(
        "assumption.certificate" + suffix, exceed, "duality gap of (mu^out, nu^out) <= Delta_final",
        {"statement": "V^{dagger,nu^out} - V^{mu^out,dagger} <= Delta_final on the good "
                      "event of Lemma B.7 (w.p. >= 1 - 2 beta/3)",
         "source": src + ", Theorem 4.2 proof with Lemma B.7"},
        {"config": config, "chain_violations": chain,
         "gap_out_mean": float(gap_out.mean()), "delta_mean": float(res.delta.mean()),
         "plots": [{"title": "certificate vs true duality gap of the episode policy",
                    "xlabel": "episode k", "ylabel": "value", "logx": True, "logy": False,
                    "kind": "line", "series": [
                        {"label": "(Vb_1 - Vu_1)(s_1), mean over runs",
                         "x": list(range(1, K + 1)), "y": res.certificate.mean(0).tolist()},
                        {"label": "Gap_k, mean over runs", "x": list(range(1, K + 1)),
                         "y": gap_k.mean(0).tolist()}]}]},
        sides, d_inf))
    return out


def trajectory_counts_check(res, priv, game, *, suffix: str = "", config: dict | None = None) -> Check:
    """whitebox.trajectory_counts: the counts the privatizer holds (``true_counts()``: what the algorithm fed it,
    Algorithm 1 line 19) are the counts N_h(s, a, b) and N_h(s, a, b, s') of the trajectories the run recorded,
    with the joint action j = a B + b that the planner decodes (games are handed to privatizers as joint
    actions; algorithms/games/dp_nash_vi.py). An invariant in every run. On a game with A = B an encoding that
    swaps A and B (a A + b) gives the same j; on one with A != B it moves counts to other joint actions, which
    every other check would read as if they were the data's. INCONCLUSIVE for a privatizer without
    ``true_counts()``."""
    H, S, A, B = game.H, game.S, game.A, game.B
    claim = {"statement": "the counts the privatizer was fed are the played trajectories' N_h(s,a,b), "
                          "N_h(s,a,b,s') with joint action j = a B + b",
             "source": f"{SOURCE}, Algorithm 1 line 19 (the counts of the observed trajectories)"}
    details = {"config": config or {}, "A": A, "B": B}
    if not hasattr(priv, "true_counts"):
        return Check(id="whitebox.trajectory_counts" + suffix, kind="whitebox", verdict=INCONCLUSIVE, claim=claim,
                     measured={"violations": None, "confidence": None}, details=details,
                     reason="the privatizer exposes no true_counts(): what it was fed cannot be compared")
    runs, K = res.states.shape[:2]
    idx = np.indices((runs, K, H))
    s, s2 = res.states[:, :, :H], res.states[:, :, 1:]
    j = res.actions_max * B + res.actions_min
    N = np.zeros((runs, H, S, A * B))
    Ntr = np.zeros((runs, H, S, A * B, S))
    np.add.at(N, (idx[0], idx[2], s, j), 1.0)
    np.add.at(Ntr, (idx[0], idx[2], s, j, s2), 1.0)
    tc = priv.true_counts()
    got_v = np.asarray(tc.visits, dtype=float).reshape(N.shape)
    got_t = np.asarray(tc.transitions, dtype=float).reshape(Ntr.shape)
    bad = (got_v != N).any(axis=(1, 2, 3)) | (got_t != Ntr).any(axis=(1, 2, 3, 4))
    details["mismatched_entries"] = int((got_v != N).sum() + (got_t != Ntr).sum())
    return invariant_check(id="whitebox.trajectory_counts" + suffix, kind="whitebox", violations=int(bad.sum()),
                           total=runs, claim=claim, details=details,
                           what=f"privatizer's counts = the recorded trajectories' (j = a B + b, A={A}, B={B})")
