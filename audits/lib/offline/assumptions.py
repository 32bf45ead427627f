"""Assumption checks of DP-APVI (Qiao & Wang 2022, Lemmas C.2, C.3, C.6, C.10, Assumption 2.1).

:func:`count_checks` (Lemma C.2 noise bound, eqs. 3-4 consistency, Lemma C.3 accuracy, eq. 5 valid P~),
:func:`pessimism_checks` (Lemma C.6 penalty validity, Lemma C.10 pessimism, exact values from the true model),
:func:`coverage_check` (d_m, Assumption 2.1, Theorem 3.4's sample-size condition).
"""
from __future__ import annotations

import math

import numpy as np

from dpcheck.checks import FAIL, INCONCLUSIVE, PASS, Check, invariant_check, probability_check, vacuous

from dpcheck.audits.lib.privatizers.offline_counts import consistency_violations

from dpcheck.audits.lib.offline.spec import APVISpec, SOURCE, TOL, _claim_dict


# ============================================================ assumptions: counts and P~
def count_checks(spec: APVISpec, counts, *, rng, alpha: float, what: str = "", suffix: str = "") -> list[Check]:
    """Lemma C.2's events over the runs of ``counts`` (TabularCounts; e.g. an instance's sampled counts, or a user's
    dataset repeated), through the algorithm's ``private_counts``:

    * assumption.noise_bound (Lemma C.2): w.p. >= 1 - delta, |n' - n| <= E/2 for every count;
    * assumption.consistency (eqs. 3-4, eq. 3-4, always): ntil >= 0, ntil(s,a) = sum_s' ntil(s,a,s') and
      |ntil(s,a) - n'(s,a)| <= E/2 (the LP's band; skipping the LP breaks it, Remark 3.1);
    * assumption.count_accuracy (Lemma C.3, on the Lemma C.2 event): |ntil - n| <= E for pair and triple
      counts and max_s' |ntil - n'| <= max_s' |n - n'|;
    * assumption.valid_transition (eq. 5, eq. 5): P~ rows are distributions, uniform exactly where
      ntil(s,a) <= E and ntil(s,a,.)/ntil(s,a) elsewhere.
    """
    algo = spec.make()
    pc = algo.private_counts(counts, rng)
    E = float(pc.width)
    R = counts.runs
    n_p, n_t = counts.visits, counts.transitions
    err = np.maximum(np.abs(pc.noisy_visits - n_p).reshape(R, -1).max(1),
                     np.abs(pc.noisy_transitions - n_t).reshape(R, -1).max(1))
    event = err <= E / 2 + TOL
    src = spec.claim().source.split(",")[0]
    det = {"runs": R, "E": E, "H_S_A": list(counts.shape), "n": counts.n, "data": what}
    out = [probability_check(id="assumption.noise_bound" + suffix, failures=int((~event).sum()), runs=R, beta=spec.delta,
                             alpha=alpha, what="|n' - n| <= E/2 for all counts", details=dict(det),
                             claim=_claim_dict(spec, "w.p. >= 1 - delta, |n' - n| <= E/2 for every pair and triple count",
                                               f"{src}, Lemma C.2 / docs/derivations.md#noise-calibration"))]
    cons = consistency_violations(pc, TOL)        # the privatizer audits' assumption.sum_consistency too
    band = float(np.abs(pc.visits - pc.noisy_visits).max())
    out.append(invariant_check(id="assumption.consistency" + suffix, violations=int(cons.sum()), total=int(cons.size),
                               what="ntil >= 0, ntil(s,a) = sum_s' ntil(s,a,s'), |ntil(s,a) - n'(s,a)| <= E/2",
                               details=dict(det, max_band_deviation=band, half_width=E / 2),
                               claim=_claim_dict(spec, "the post-processed counts are consistent: ntil >= 0, "
                                                       "ntil(s,a) = sum_s' ntil(s,a,s'), |ntil(s,a) - n'(s,a)| <= E/2",
                                                 f"{src}, eq. 3-4 / Remark 3.2")))
    acc = ((np.abs(pc.visits - n_p) > E + TOL)
           | np.any(np.abs(pc.transitions - n_t) > E + TOL, axis=-1)
           | (np.abs(pc.transitions - pc.noisy_transitions).max(-1)
              > np.abs(n_t - pc.noisy_transitions).max(-1) + TOL * np.maximum(1, n_p)))
    acc_ev = acc[event]
    out.append(invariant_check(id="assumption.count_accuracy" + suffix, violations=int(acc_ev.sum()), total=int(acc_ev.size),
                               what="on the Lemma C.2 event: |ntil - n| <= E and the LP moves n' no more than n does",
                               details=dict(det, runs_on_event=int(event.sum())),
                               vacuous=None if event.any() else "the Lemma C.2 event held in no run",
                               claim=_claim_dict(spec, "on the Lemma C.2 event, |ntil - n| <= E for pair and triple counts",
                                                 f"{src}, Lemma C.3")))
    P = pc.kernel
    fallback = pc.visits <= E
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = pc.transitions / pc.visits[..., None]
    rows_ok = np.all(P >= -TOL, -1) & (np.abs(P.sum(-1) - 1) < 1e-9)
    form = np.where(fallback, np.all(np.abs(P - 1.0 / P.shape[-1]) < 1e-12, -1),
                    np.all(np.abs(P - np.where(np.isfinite(ratio), ratio, 0)) < 1e-9, -1))
    badP = ~(rows_ok & form)
    out.append(invariant_check(id="assumption.valid_transition" + suffix, violations=int(badP.sum()), total=int(badP.size),
                               what="P~ rows are distributions, uniform exactly where ntil(s,a) <= E",
                               details=dict(det, fallback_fraction=float(fallback.mean())),
                               claim=_claim_dict(spec, "P~_h(.|s,a) is a distribution: ntil(s,a,.)/ntil(s,a) if "
                                                       "ntil(s,a) > E, else uniform 1/S", f"{src}, eq. 5 / Remark 3.3")))
    return out


# ============================================================ assumptions: pessimism (exact values)
def pessimism_checks(spec: APVISpec, instance, *, n: int, runs: int, rng, alpha: float, budget: float | None = None,
                     suffix: str = "", regime: str = "") -> list[Check]:
    """assumption.penalty_validity (Lemma C.6) and assumption.pessimism (Lemma C.10) on ``runs`` datasets of
    ``n`` trajectories from ``instance``, values exact from the true model.

    * validity: for every (h,s,a) with ntil_h(s,a) >= 3E (the lemma's range),
      |(P~_h - P_h) Vtil_{h+1}(s,a)| <= Gamma_h(s,a); a run fails if any pair violates it; the claim is
      "w.p. >= 1 - 2 delta" (Lemma C.2's event and Lemma C.6's);
    * pessimism: Qbar_h <= Q^{pi_hat}_h and Vtil_h <= V^{pi_hat}_h everywhere; "w.p. >= 1 - 4 delta" (the
      proof spends four events of size delta, Theorem 3.4's proof).
    Both are marked VACUOUS when they hold trivially: validity when every checked Gamma_h is at least the
    largest possible error H - h, pessimism when Qbar = 0 everywhere (penalties >= H).
    """
    from dpcheck.algorithms.envs.planning import policy_values
    algo = spec.make(budget=budget)
    mdp = instance.mdp
    counts = instance.sample_counts(n, rng, runs)
    res = algo.run(counts, mdp, rng)
    H = mdp.H
    Qpi, Vpi = policy_values(mdp, res.policy)
    E = res.width
    PV = np.einsum("rhsat,rht->rhsa", res.kernel, res.values[:, 1:])
    TV = np.einsum("hsat,rht->rhsa", mdp.P, res.values[:, 1:])
    dev = np.abs(PV - TV)
    elig = (res.counts.visits >= 3 * E) & (res.counts.visits > 0)
    viol = elig & (dev > res.penalties + TOL)
    fail_v = viol.reshape(runs, -1).any(1)
    cap = (H - 1 - np.arange(H)).astype(float)[None, :, None, None]     # max |(P~ - P) V_{h+1}| = H - h (paper's h)
    trivial_v = np.all(~elig | (res.penalties >= cap), axis=(1, 2, 3))
    b = spec.budget if budget is None else budget
    det = {"instance": instance.name, "n": n, "runs": runs, spec.budget_name: b, "E": E, "mode": spec.mode,
           "regime": regime,
           "gap_pairs_fraction": float(((res.counts.visits > E) & (res.counts.visits < 3 * E)).mean()),
           **penalty_composition(algo, res, H, mdp.S)}
    src = SOURCE
    vac_v = "every checked Gamma_h >= H - h (the penalty covers any error): holds trivially" if trivial_v.all() else None
    if not elig.any():
        vac_v = "no (h,s,a) with ntil >= 3E: nothing to check"
    beta_v = min(1.0, 2 * spec.delta)
    cv = probability_check(id="assumption.penalty_validity" + suffix, failures=int(fail_v.sum()), runs=runs, beta=beta_v,
                           alpha=alpha, what="|(P~ - P) Vtil_{h+1}| <= Gamma on pairs with ntil >= 3E",
                           details=dict(det, max_excess=float(np.max(np.where(elig, dev - res.penalties, -np.inf))),
                                        nontrivial_runs=int((~trivial_v).sum())),
                           claim=_claim_dict(spec, "w.p. >= 1 - 2 delta, |(P~_h - P_h) Vtil_{h+1}| <= Gamma_h wherever "
                                                   "ntil_h(s,a) >= 3 E", f"{src}, Lemma C.6 (Algorithm 1)"))
    ok = (np.all(res.q_values <= Qpi + TOL, axis=(1, 2, 3)) & np.all(res.values[:, :H] <= Vpi[:, :H] + TOL, axis=(1, 2)))
    trivial_p = np.all(res.q_values == 0, axis=(1, 2, 3))
    beta_p = min(1.0, 4 * spec.delta)
    cp = probability_check(id="assumption.pessimism" + suffix, failures=int((~ok).sum()), runs=runs, beta=beta_p,
                           alpha=alpha, what="Vtil_h <= V^{pi_hat}_h and Qbar_h <= Q^{pi_hat}_h",
                           details=dict(det, nontrivial_runs=int((~trivial_p).sum()),
                                        max_excess=float(np.max(res.values[:, :H] - Vpi[:, :H]))),
                           claim=_claim_dict(spec, "w.p. >= 1 - 4 delta, the learned value never exceeds the true value "
                                                   "of the learned policy: Vtil_h <= V^{pi_hat}_h, Qbar_h <= Q^{pi_hat}_h",
                                             f"{src}, Lemma C.10 + eq. 34 (Theorem 3.4)"))
    vac_p = "Qbar = 0 everywhere in every run (the penalties exceed H): holds trivially" if trivial_p.all() else None
    return [vacuous(cv, vac_v), vacuous(cp, vac_p)]


def penalty_composition(algo, res, H: int, S: int) -> dict:
    """Which part of Gamma the run exercised (Algorithm 1's penalty, apvi.py's module docstring):
    ``fallback_pairs_fraction``, the share of (run, h, s, a) with ntil <= E (penalty C H, uniform P~: the eq. 5
    branch), and ``statistical_share``, the median over the other pairs of the statistical term's share of Gamma,
    1 - (C2 H iota max(S E, floor) / ntil) / Gamma, from the penalties the algorithm reports. A check of Lemma C.6
    or C.10 says nothing about the statistical term where this share is ~0 (the privacy term alone covers the
    error), nor about the fallback branch where no pair falls in it."""
    ntil, E, G = res.counts.visits, float(res.width), res.penalties
    ok = ntil > E
    out = {"fallback_pairs_fraction": float((~ok).mean())}
    c = getattr(algo, "constants", None)
    if c is None or not ok.any():
        return {**out, "statistical_share": None}
    with np.errstate(divide="ignore", invalid="ignore"):
        second = c.C2 * H * res.iota * max(S * E, c.second_order_floor) / np.where(ok, ntil, 1.0)
        share = np.where(ok & (G > 0), 1.0 - second / G, np.nan)
    vals = share[np.isfinite(share)]
    return {**out, "statistical_share": float(np.median(vals)) if vals.size else None}


def coverage_check(instance=None, *, counts=None, spec: APVISpec | None = None, id: str = "assumption.coverage",
                   behaviour=None, model=None, alpha: float = 0.05) -> Check:
    """assumption.coverage: Assumption 2.1 (d^{pi*}_h(s,a) > 0 => d^mu_h(s,a) > 0) and the coverage dbar_m.

    Instance (true model): d^mu, dbar_m, Assumption 2.1 exactly -- PASS or FAIL.

    A user's dataset (``counts``), with what the user supplied (docs/dp_apvi.md, "Your dataset"):

    * ``model`` (an OfflineInstance: the true MDP and the behaviour policy): exact, as for an instance;
    * else Assumption 2.1 is ESTABLISHED when every (h,s,a) occurs in the data (then d^mu_h(s,a) > 0 everywhere)
      or when the ``behaviour`` policy (H, S, A) has full support (then, by induction on h, d^pi_h(s) > 0 =>
      d^mu_h(s) > 0 for every pi, so d^mu covers every policy's occupancy whatever the MDP);
    * otherwise it concerns the optimal policy of an MDP the data do not determine: INCONCLUSIVE, naming a cell
      never seen (or where mu = 0) and what would settle it (the behaviour policy, or P, r, init with it).

    Once Assumption 2.1 holds, Theorem 3.4's sample-size condition n > max(H^2, E) iota / dbar_m (c1 = 1) is
    checked with dbar_m exact (model), or with a lower confidence bound (every cell seen: Clopper-Pearson per
    cell at level alpha / (H S A), n_h(s,a) ~ Bin(n, d^mu_h(s,a))): PASS if it holds, INCONCLUSIVE if not (the
    utility theorem then does not apply to these data; privacy does not need it)."""
    claim_21 = {"statement": "d^{pi*}_h(s,a) > 0 => d^mu_h(s,a) > 0 (Assumption 2.1); dbar_m reported",
                "source": f"{SOURCE}, Assumption 2.1, Theorem 3.4"}
    if instance is not None:
        cov = instance.coverage()
        measured = {"dbar_m": cov.dbar_m, "covered_fraction": float(cov.covered.mean()),
                    "assumption_2_1": cov.assumption_2_1, "confidence": 1.0}
        verdict = PASS if cov.assumption_2_1 and cov.dbar_m > 0 else FAIL
        reason = (f"{instance.name}: dbar_m = {cov.dbar_m:.4g}, {cov.covered.mean():.0%} of (h,s,a) covered; "
                  f"Assumption 2.1 {'holds' if cov.assumption_2_1 else 'FAILS'} (exact, from the true model)")
        return Check(id=id, kind="assumption", verdict=verdict, claim=claim_21,
                     measured=measured, details={"instance": instance.name}, reason=reason)
    from scipy import stats
    H, S, A = counts.shape
    n = counts.n
    visits = counts.visits[0]
    dm = float(counts.empirical_coverage()[0])
    E = spec.make().width(H, S, A)
    iota = math.log(H * S * A / spec.delta)
    seen = visits > 0
    cells = float(seen.mean())
    claim = {"statement": "Assumption 2.1 (d^{pi*} > 0 => d^mu > 0) and Theorem 3.4's n > c1 max(H^2, E) iota / "
                          "dbar_m (c1 = 1)", "source": f"{SOURCE}, Assumption 2.1, Theorem 3.4"}
    meas = {"dbar_m_empirical": dm, "n": n, "visited_fraction": cells, "E": E}
    det = {"supplied": [k for k, v in (("behaviour", behaviour), ("model", model)) if v is not None] or ["data only"]}

    def cell(mask):
        h, s, a = (int(i) for i in np.argwhere(mask)[0])
        return f"(h={h + 1}, s={s}, a={a})"

    if model is not None:
        cov = model.coverage()
        holds = bool(cov.assumption_2_1)
        dbar, how = cov.dbar_m, "exact, from the supplied MDP and behaviour policy"
        meas.update(dbar_m=dbar, assumption_2_1=holds)
        if not holds:
            bad = (cov.d_opt > 0) & ~cov.covered
            return Check(id=id, kind="assumption", verdict=FAIL, claim=claim, measured={**meas, "confidence": 1.0},
                         details=det, reason=f"Assumption 2.1 FAILS (exact, from the supplied MDP): the optimal policy "
                                             f"reaches {cell(bad)} where d^mu = 0 ({int(bad.sum())} such cells)")
        why = "Assumption 2.1 holds (exact, from the supplied MDP and behaviour policy)"
    elif seen.all():
        k = int(visits.min())
        lo = float(stats.beta.ppf(alpha / visits.size, k, n - k + 1)) if k < n else float(alpha / visits.size) ** (1 / n)
        dbar, how = lo, f"lower {1 - alpha:.0%} confidence bound, every (h,s,a) seen"
        meas.update(dbar_m_lower=lo, assumption_2_1=True)
        why = "Assumption 2.1 holds: every (h,s,a) occurs in the data, so d^mu > 0 everywhere"
    elif behaviour is not None and np.all(behaviour > 0):
        meas.update(assumption_2_1=True)
        why = ("Assumption 2.1 holds: the supplied behaviour policy has full support, so d^mu covers every "
               "policy's occupancy")
        dbar, how = None, None
    else:
        meas.update(assumption_2_1=None, confidence=None)
        if behaviour is not None:
            gap = f"mu = 0 at {cell(behaviour <= 0)} ({int((behaviour <= 0).sum())} cells)"
            need = "the MDP (P, r, init in the .npz) would settle it exactly"
        else:
            gap = f"{int((~seen).sum())} of {visits.size} (h,s,a) never occur in the data, e.g. {cell(~seen)}"
            need = ("supply the behaviour policy 'behaviour' (H, S, A) in the .npz (full support establishes it), "
                    "or it with the MDP ('P', 'r', 'init') for an exact verdict")
        return Check(id=id, kind="assumption", verdict=INCONCLUSIVE, claim=claim, measured=meas, details=det,
                     reason=f"cannot establish Assumption 2.1 from the data: {gap}; whether the optimal policy of the "
                            f"true MDP takes them needs that MDP -- {need} (empirical dbar_m = {dm:.4g})")
    if dbar is None:
        return Check(id=id, kind="assumption", verdict=INCONCLUSIVE, claim=claim, measured={**meas, "confidence": None},
                     details=det, reason=f"{why}; dbar_m (Theorem 3.4's sample-size condition) is not determined: some "
                                         "(h,s,a) never occur and their d^mu may be arbitrarily small (supply P, r, init)")
    need = max(H * H, E) * iota / dbar if dbar > 0 else math.inf
    ok = n > need
    meas.update(n_needed=need, confidence=1.0 if model is not None else 1 - alpha)
    return Check(id=id, kind="assumption", verdict=PASS if ok else INCONCLUSIVE, claim=claim, measured=meas,
                 details={**det, "dbar_m": how},
                 reason=(f"{why}; dbar_m >= {dbar:.4g} ({how}); n = {n} {'>' if ok else '<='} max(H^2, E) iota / "
                         f"dbar_m = {need:.4g}" + ("" if ok else ": the utility theorem does not apply to these data")))
