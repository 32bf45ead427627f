"""White-box privacy checks of DP-VAPVI (Qiao & Wang 2022, eq. 2, Lemma D.1, Theorem 4.1, Lemma E.15).

:func:`noise_calibration_check` (measured residual variance vs the claim's std, chi-square),
:func:`noise_independence_check` (fresh noise per step h: Fisher-z of cross-step correlations),
:func:`sensitivity_check` (hypothesis search over neighbouring datasets with ||phi|| <= B, plus the exact worst
case over the audited feature vectors), :func:`dp_event_checks` (the declared 5H DpEvents composed and
accounted with the PLD accountant against the zCDP claim, and its (eps, delta) conversion, Lemma E.15).
"""
from __future__ import annotations

import math

import numpy as np

from dpcheck import accounting
from dpcheck.checks import FAIL, INCONCLUSIVE, PASS, Check, invariant_check

from dpcheck.audits.lib.privatizers import VARIANCE_RESOLUTION, VARIANCE_TOLERANCE, variance_band
from dpcheck.audits.lib.offline_linear.setup import SOURCE, STATS
from dpcheck.audits.lib.offline_linear.statistics import claimed_stds, replicate, residuals, sym_vector


# ============================================================================ white box: the noise
def noise_calibration_check(algo, counts, phi, *, rho_claim: float, runs: int, rng, alpha: float,
                            matrix_neighbour: str = "replace", tolerance: float = 0.1) -> Check:
    """whitebox.noise_calibration: the released noise of each of the five statistics (pooled over steps and
    coordinates) has mean 0 and the variance the CLAIM needs, Delta^2 / (2 rho0) (eq. 2; Lemma D.1).

    Chi-square interval on the variance ratio and a normal interval on the standardised mean, Bonferroni
    over the 5 statistics x 2 tests at level alpha. The variance ratio is judged one-sidedly, as
    dpcheck.audits.lib.offline.noise_calibration_checks does (dpcheck.audits.lib.privatizers.variance_band):
    FAIL if its interval lies wholly below 1 (less noise than rho-zCDP needs: privacy broken) or wholly above
    1.1 (the paper's calibration is not the one implemented: e.g. a Gaussian std computed from rho as if it
    were epsilon, whose variance is off by a factor 4 ln(1.25/delta)/rho0); PASS if it lies within
    [0.98, 1.1], which certifies rho to 2%; else INCONCLUSIVE. The mean, in units of the claimed std, is judged
    against +- ``tolerance``. A two-sided +-10% band passed a variance ratio of 0.92 (rho 1.09 x the claim)."""
    from scipy import stats as sst
    res = algo.run((replicate(counts, runs), replicate(counts, runs)), phi, rng)
    H = res.values.shape[1] - 1
    R = residuals(res, replicate(counts, runs), replicate(counts, runs), phi, algo.lam)
    plugin = getattr(algo, "plugin", None)
    want = claimed_stds(rho_claim, H, algo.feature_bound, matrix_neighbour) if plugin is None else algo.noise_stds(H)
    if want is None:
        return Check(id="whitebox.noise_calibration", kind="whitebox", verdict=INCONCLUSIVE,
                     claim={"statement": "each release's noise has the std the privatizer declares",
                            "source": f"{SOURCE}, docs/derivations.md#noise-calibration / Lemma D.1"},
                     measured={"confidence": None, "runs": runs},
                     reason=f"the plug-in {getattr(plugin, 'name', plugin)!r} declares no noise_stds(H, sensitivities): "
                            "no std to compare with (its privacy rests on the black box and its DpEvent)")
    from dpcheck.stats import pass_alpha
    a, a_pass = alpha / 10.0, pass_alpha(alpha) / 10.0     # FAIL at the audit's share, PASS at its alpha

    def intervals(ratio, mean, n, level):
        z = float(sst.norm.ppf(1 - level / 2))
        return (ratio * n / sst.chi2.ppf(1 - level / 2, n), ratio * n / sst.chi2.ppf(level / 2, n),
                mean - z / math.sqrt(n), mean + z / math.sqrt(n))
    rows, bad, unsure = {}, [], []
    for k in STATS:
        x = R[k].reshape(-1)
        n = x.size
        var = float(np.mean(x ** 2))                    # the mean is 0 under the claim
        ratio = var / want[k] ** 2
        mean = float(x.mean() / want[k])                # in units of the claimed std
        lo, hi, mlo, mhi = intervals(ratio, mean, n, a)
        plo, phi_, pmlo, pmhi = intervals(ratio, mean, n, a_pass)
        rows[k] = {"claimed_std": want[k], "measured_std": math.sqrt(var), "variance_ratio": ratio,
                   "ratio_interval": [lo, hi], "mean_z": mean * math.sqrt(n), "mean_interval": [mlo, mhi],
                   "coordinates": n}
        band = variance_band((lo, hi), (plo, phi_))
        if band == "low":
            bad.append(f"{k}: noise variance {ratio:.3g} x the claim's (interval [{lo:.3g}, {hi:.3g}]): less noise "
                       f"than rho={rho_claim:g}-zCDP needs")
        elif band == "high":
            bad.append(f"{k}: noise variance {ratio:.3g} x the claim's (interval [{lo:.3g}, {hi:.3g}]): not the "
                       "paper's calibration Delta^2/(2 rho0)")
        elif mlo > tolerance or mhi < -tolerance:
            bad.append(f"{k}: released statistic is biased (mean residual {mean:.3g} claimed stds, interval "
                       f"[{mlo:.3g}, {mhi:.3g}])")
        elif band == "unsure" or pmlo < -tolerance or pmhi > tolerance:
            unsure.append(f"{k}: variance ratio interval [{plo:.3g}, {phi_:.3g}], mean interval [{pmlo:.3g}, "
                          f"{pmhi:.3g}] at {1 - 10 * a_pass:.0%} not within [1 - {VARIANCE_RESOLUTION:g}, "
                          f"1 + {VARIANCE_TOLERANCE:g}] and +-{tolerance:g}: more runs needed")
    verdict = FAIL if bad else INCONCLUSIVE if unsure else PASS
    reason = ("; ".join(bad or unsure) if bad or unsure else
              (f"all 5 statistics carry noise of the declared std, variance within [1 - {VARIANCE_RESOLUTION:g}, "
               f"1 + {VARIANCE_TOLERANCE:g}] x the declared "
               if plugin is not None else
               f"all 5 statistics carry N(0, Delta^2/(2 rho0)) noise, variance within [1 - {VARIANCE_RESOLUTION:g}, "
               f"1 + {VARIANCE_TOLERANCE:g}] x the claim's, "
               f"rho0 = rho/(5H) = {rho_claim / (5 * H):.4g} ") +
              f"(variance ratios {min(r['variance_ratio'] for r in rows.values()):.3f}.."
              f"{max(r['variance_ratio'] for r in rows.values()):.3f})")
    return Check(id="whitebox.noise_calibration", kind="whitebox", verdict=verdict,
                 claim={"statement": "each release adds N(0, Delta^2/(2 rho0)) per coordinate, rho0 = rho/(5H)",
                        "source": f"{SOURCE}, Algorithm 2, footnote 8 / Lemma D.1 (Theorem 4.1 / Lemma D.1; eq. 2)", "rho": rho_claim},
                 measured={"statistics": rows, "confidence": 1 - alpha, "runs": runs},
                 details={"test": "chi-square interval on the variance ratio + normal interval on the mean, Bonferroni "
                                  "x10, against a tolerance band: FAIL on the intervals at the audit's share of alpha, "
                                  "PASS on those at its alpha (dpcheck.stats.pass_alpha)", "tolerance": tolerance},
                 reason=reason)


def release_independence_check(noise: dict, *, runs: int, alpha: float, tolerance: float = 0.1,
                               source: str = f"{SOURCE}, Algorithm 2, footnote 8 (Lemma D.1)") -> Check:
    """whitebox.noise_independence from the released noise ``noise[k]`` (runs, H, m) of the five statistics: every
    pair of the 5 H m coordinates (matrices by their upper triangle), not only one coordinate across steps, is
    independent (dpcheck.audits.lib.privatizers.correlation_screen). The 5H-fold composition needs a fresh draw
    for every release and every coordinate; noise shared between two releases (N1 = N2, g3 = c g2) or copied
    across a vector's coordinates leaves a combination of the release noise-free, which the cross-step test
    alone passed."""
    from dpcheck.audits.lib.privatizers import correlation_screen
    labels, cols = [], []
    for k in STATS:
        X = np.asarray(noise[k], float)
        H, m = X.shape[1], X.shape[2]
        labels += [f"{k}[h={h + 1}, {i}]" for h in range(H) for i in range(m)]
        cols.append(X.reshape(X.shape[0], -1))
    sc = correlation_screen(np.concatenate(cols, axis=1), labels, alpha=alpha, tolerance=tolerance)
    w0 = sc["worst"][0] if sc["worst"] else None
    if w0 is None:
        return invariant_check(id="whitebox.noise_independence", kind="whitebox", violations=0, total=0,
                               claim={"statement": "fresh noise for every release and coordinate", "source": source},
                               what="independence", vacuous="fewer than two noisy coordinates")
    verdict = {"fail": FAIL, "unsure": INCONCLUSIVE, "pass": PASS}[sc["verdict"]]
    pair = f"{w0['between'][0]} and {w0['between'][1]}"
    reason = (f"noise of {pair} is correlated ({w0['correlation']:.3f}): one draw serves two released coordinates, "
              "so a combination of the release is noise-free" if verdict == FAIL else
              f"correlation of {pair} ({w0['correlation']:.3f}) not established within +-{tolerance:g} (more runs)"
              if verdict == INCONCLUSIVE else
              f"no correlation between any two of the {len(labels)} released noise coordinates ({sc['pairs']} pairs, "
              f"max |corr| {abs(w0['correlation']):.3g})")
    return Check(id="whitebox.noise_independence", kind="whitebox", verdict=verdict,
                 claim={"statement": "the 5H noises are independent, coordinate by coordinate: a fresh draw for every "
                                     "release and every step h", "source": source},
                 measured={"worst": sc["worst"], "pairs": sc["pairs"], "max_abs_correlation": abs(w0["correlation"]),
                           "noise_free": sc["flat"], "runs": runs, "confidence": 1 - alpha},
                 details={"test": f"mean product of standardised noise +- z se, Bonferroni over {sc['pairs']} pairs, "
                                  f"vs +-{tolerance:g} (dpcheck.audits.lib.privatizers.correlation_screen)"},
                 reason=reason)


def noise_independence_check(algo, counts, phi, *, runs: int, rng, alpha: float) -> Check:
    """whitebox.noise_independence of DP-VAPVI as run: the released statistics minus the noiseless ones over ``runs``
    repetitions on the same data (:func:`release_independence_check`)."""
    res = algo.run((replicate(counts, runs), replicate(counts, runs)), phi, rng)
    R = residuals(res, replicate(counts, runs), replicate(counts, runs), phi, algo.lam)
    return release_independence_check(R, runs=runs, alpha=alpha)


# ============================================================================ white box: sensitivity
def _step_statistics(phi, traj_states, traj_actions, traj_rewards, V, sig2, h):
    """The five statistics of step h for explicit trajectories (lists), no lambda, no noise (vector form)."""
    d = phi.shape[-1]
    Sm, bb, bt, Lm, bw = np.zeros((d, d)), np.zeros(d), np.zeros(d), np.zeros((d, d)), np.zeros(d)
    for st, ac, rw in zip(traj_states, traj_actions, traj_rewards):
        s, a, s2 = st[h], ac[h], st[h + 1]
        f = phi[s, a]
        v = V[h + 1, s2]
        Sm += np.outer(f, f)
        bb += f * v * v
        bt += f * v
        Lm += np.outer(f, f) / sig2[h, s, a]
        bw += f * (rw[h] + v) / sig2[h, s, a]
    return {"sigma_matrix": sym_vector(Sm), "beta_vector": bb, "theta_vector": bt,
            "lambda_matrix": sym_vector(Lm), "w_vector": bw}


def sensitivity_search(declared: dict, B: float, *, examples: int = 200, seed: int = 0) -> dict:
    """Hypothesis search over neighbouring datasets (one trajectory replaced) with features ||phi|| <= B,
    next-step values Vtil_{h+1} in [0, H-h] and weights sigtil^2 in [1, H^2] (Algorithm 2 lines 7-8): the largest
    l2 change of each statistic, as a fraction of ``declared`` (name -> sensitivity at that H, callable).
    Returns {"ratios": {statistic: largest fraction}, "hypothesis": dpcheck.hypothesis_search.provenance}."""
    from hypothesis import strategies as st, target as hyp_target
    from dpcheck.hypothesis_search import explore
    from dpcheck.strategies import episode_actions, episode_sizes, episode_states
    best = {k: 0.0 for k in STATS}

    @st.composite
    def case(draw):
        H, S, A = episode_sizes(draw)
        d = draw(st.integers(1, 3))
        unit = st.floats(-1, 1, allow_nan=False)
        raw = np.array(draw(st.lists(unit, min_size=S * A * d, max_size=S * A * d))).reshape(S, A, d)
        norms = np.sqrt((raw ** 2).sum(-1, keepdims=True))
        phi = B * raw / np.maximum(norms, 1.0) if draw(st.booleans()) else B * raw / np.maximum(norms, 1e-12)
        frac = st.floats(0, 1, allow_nan=False)
        V = np.zeros((H + 1, S))
        for h in range(H):
            V[h] = np.array(draw(st.lists(frac, min_size=S, max_size=S))) * (H - h)
        sig2 = 1 + np.array(draw(st.lists(frac, min_size=H * S * A, max_size=H * S * A))).reshape(H, S, A) * (H * H - 1)
        K = draw(st.integers(1, 3))
        traj = st.tuples(episode_states(H, S), episode_actions(H, A), st.lists(frac, min_size=H, max_size=H))
        rest = draw(st.lists(traj, min_size=K - 1, max_size=K - 1))
        x, y = draw(traj), draw(traj)
        return H, phi, V, sig2, rest, x, y

    def search(c):
        H, phi, V, sig2, rest, x, y = c
        DX, DY = rest + [x], rest + [y]
        worst = 0.0
        for h in range(H):
            fx = _step_statistics(phi, *zip(*[(t[0], t[1], t[2]) for t in DX]), V, sig2, h)
            fy = _step_statistics(phi, *zip(*[(t[0], t[1], t[2]) for t in DY]), V, sig2, h)
            for k in STATS:
                r = float(np.linalg.norm(fx[k] - fy[k])) / declared[k](H)
                best[k] = max(best[k], r)
                worst = max(worst, r)
        hyp_target(worst)

    searched = explore(search, case(), examples=examples, seed=seed)
    return {"ratios": best, "hypothesis": searched}


def feature_worst_case(phi, H: int) -> dict:
    """Exact largest l2 change of each statistic over the AUDITED feature vectors, one step, one replaced
    trajectory, with the statistic's multiplier at its largest (V^2 <= H^2, V <= H, r + V <= H, weights <= 1):
    matrices ||phi phi^T - phi' phi'^T||_F / sqrt(2); vectors c max(||phi - phi'||, ||phi||, ||phi'||)."""
    F = phi.reshape(-1, phi.shape[-1])
    outer = np.einsum("ni,nj->nij", F, F)
    mat = float(np.sqrt(((outer[:, None] - outer[None]) ** 2).sum((-1, -2))).max() / math.sqrt(2.0))
    nrm = np.sqrt((F ** 2).sum(-1))
    diff = np.sqrt(((F[:, None] - F[None]) ** 2).sum(-1))
    vec = float(max(diff.max(), nrm.max()))
    return {"sigma_matrix": mat, "beta_vector": H * H * vec, "theta_vector": H * vec, "lambda_matrix": mat,
            "w_vector": H * vec}


def value_range(algo, counts, phi, H: int, *, runs: int = 200, free_runs: int = 50, res=None) -> dict:
    """The algorithm's own Vtil_h against the range Lemma D.1's sensitivities assume: Vtil_h in [0, H - h + 1]
    (1-based h; index h: [0, H - h]) and Vtil_{H+1} = 0, which line 13's clip Qhat_h = {min(Qbar_h, H - h + 1)}^+
    guarantees whatever the penalty. Checked on ``res`` (the algorithm as configured, ``runs`` runs on ``counts``)
    and on ``free_runs`` runs of it with C = Dpen = 0 (the penalty-free Q is the largest, so the clip binds most
    often there: the audit's penalties keep Vtil = 0 at small K, where no slip of the clip could show; privacy
    does not depend on C or Dpen). -> {"max": max Vtil_h per step (H+1), "outside": [(h, value)], "at_top": share
    of (run, h, s) of the penalty-free run with Vtil_h at the top of its range}."""
    def data(n):
        rep = replicate(counts, n)
        return (rep, rep) if algo.split else rep
    plugin = getattr(algo, "plugin", None)
    free = type(algo)(rho=algo.rho, delta=algo.delta, C=0.0, lam=algo.lam, Dpen=0.0, c1=algo.c1, c2=algo.c2,
                      matrix_neighbour=algo.matrix_neighbour, feature_bound=algo.feature_bound, split=algo.split,
                      **({} if plugin is None else {"privatizer": plugin}))
    res = algo.run(data(runs), phi, np.random.default_rng(0)) if res is None else res
    res0 = free.run(data(min(runs, free_runs)), phi, np.random.default_rng(1))
    top = (H - np.arange(H + 1)).astype(float)                      # index h: H - h; Vtil_{H+1} = 0
    V = np.concatenate([res.values, res0.values])                   # (runs + free runs, H+1, S)
    vmax, vmin = V.max(axis=(0, 2)), V.min(axis=(0, 2))
    outside = [(h, float(vmax[h] if vmax[h] > top[h] else vmin[h])) for h in range(H + 1)
               if vmax[h] > top[h] * (1 + 1e-12) + 1e-12 or vmin[h] < -1e-12]
    at_top = float((res0.values[:, :H] >= top[None, :H, None] - 1e-9).mean())
    return {"max": [float(x) for x in vmax], "range_top": [float(x) for x in top], "outside": outside,
            "at_top": at_top}


def sensitivity_check(algo, phi, H: int, *, rho_claim: float, examples: int = 200, counts=None,
                      runs: int = 200) -> Check:
    """whitebox.sensitivity: no neighbouring pair (hypothesis search, ||phi|| <= the declared bound B) and no
    pair of the audited feature vectors moves a statistic by more than the algorithm DECLARES; the realised
    rho = sum over the 5H releases of Delta^2 / (2 std^2) (searched Delta, the algorithm's std) <= claim.

    The search draws the weights sigtil^2 from [1, H^2], the range Lemma D.1's sensitivities of Lambda and w
    assume; with ``counts`` (a dataset) the algorithm's own sigtil^2 over ``runs`` runs must lie in that range
    too (a floor below 1 multiplies the weights 1/sigtil^2, hence Lambda's and w's sensitivity, and passed), and
    so must its values Vtil_h, in [0, H - h + 1] (:func:`value_range`; the search draws them from that range, so a
    clip one step too high, Vtil_1 up to H + 1, moved w by 2 (H + 1) B and passed)."""
    B = algo.feature_bound
    sens_at = {k: (lambda Hh, k=k: algo.sensitivities(Hh)[k]) for k in STATS}
    found = sensitivity_search(sens_at, B, examples=examples)
    ratios = found["ratios"]
    fw = feature_worst_case(phi, H)
    decl, std = algo.sensitivities(H), algo.noise_stds(H)
    feat_ratio = {k: fw[k] / decl[k] for k in STATS}
    worst = {k: max(ratios[k], feat_ratio[k]) for k in STATS}
    plugin = getattr(algo, "plugin", None)
    if plugin is not None:
        # the realised budget of a plug-in is its DpEvent's to account (whitebox.dp_event): its noise law is its own
        rho_real = -math.inf
    else:
        rho_real = sum(H * (worst[k] * decl[k]) ** 2 / (2 * std[k] ** 2) for k in STATS) if std[STATS[0]] > 0 else math.inf
    over = [k for k in STATS if worst[k] > 1 + 1e-9]
    sig, vr = None, None
    if counts is not None:
        rep = replicate(counts, runs)
        res = algo.run((rep, rep) if algo.split else rep, phi, np.random.default_rng(0))
        sig = (float(np.min(res.sigma2)), float(np.max(res.sigma2)))
        vr = value_range(algo, counts, phi, H, runs=runs, res=res)
    if sig is not None and (sig[0] < 1 - 1e-12 or sig[1] > H * H * (1 + 1e-12)):
        verdict = FAIL
        reason = (f"the algorithm's sigtil^2 ranges over [{sig[0]:.4g}, {sig[1]:.4g}], outside [1, H^2] = [1, {H * H}]: "
                  "the weights 1/sigtil^2 exceed what Lemma D.1's sensitivities of Lambda and w assume")
    elif vr is not None and vr["outside"]:
        h, v = vr["outside"][0]
        verdict = FAIL
        reason = (f"the algorithm's Vtil_{h + 1} reaches {v:.4g}, outside its range [0, H - h + 1] = [0, {H - h}] "
                  f"(at {len(vr['outside'])} step(s)): the declared sensitivities of beta, theta and w (2H^2 B, 2H B, "
                  "2H B) assume every Vtil_h in that range (Algorithm 2, line 13's clip; Lemma D.1)")
    elif over:
        k = max(over, key=lambda k: worst[k])
        src = "the audited features" if feat_ratio[k] >= ratios[k] else "a searched neighbouring pair"
        verdict = FAIL
        reason = (f"{src} moves {k} by {worst[k]:.4g} x its declared sensitivity {decl[k]:.4g}"
                  + (f" (max ||phi|| = {np.sqrt((phi ** 2).sum(-1)).max():.4g} > B = {B:g})" if src.startswith("the aud") else "")
                  + (" -- the 'paper' matrix sensitivity 1/sqrt(2) assumes add/remove; one REPLACED trajectory "
                     "moves phi phi^T by up to sqrt(2) in Frobenius norm (docs/derivations.md#neighbouring-relation)" if k.endswith("matrix") and algo.matrix_neighbour == "paper" else ""))
    elif rho_real > rho_claim * (1 + 1e-9):
        verdict, reason = FAIL, f"realised rho = {rho_real:.4g} > claimed {rho_claim:g}"
    else:
        verdict = PASS
        reason = (f"max change / declared sensitivity = {max(worst.values()):.4g} <= 1 over {examples} searched "
                  f"pairs and all feature pairs" + (f"; realised rho <= {rho_real:.4g} (claimed {rho_claim:g})"
                                                    if plugin is None else "")
                  + ("" if vr is None else
                     f"; the algorithm's Vtil_h stay in [0, H - h + 1] over {runs} runs, at the clip's top in "
                     f"{vr['at_top']:.1%} of the (run, h, s) of its penalty-free run"))
    return Check(id="whitebox.sensitivity", kind="whitebox", verdict=verdict,
                 claim={"statement": "one replaced trajectory moves each release by <= its declared l2 sensitivity "
                                     "(2H^2 B, 2H B, 2H B; matrices B^2 under replacement)",
                        "source": f"{SOURCE}, Lemma D.1 (Theorem 4.1 / Lemma D.1; docs/derivations.md#neighbouring-relation; Appendix F)", "rho": rho_claim},
                 measured={"searched_ratio": ratios, "feature_ratio": feat_ratio, "declared": decl,
                           "rho_realised": rho_real, "sigma2_range": sig, "value_range": vr,
                           "epsilon_lower_bound": None, "confidence": 1.0, "samples": examples},
                 details={"feature_bound": B, "matrix_neighbour": algo.matrix_neighbour,
                          "hypothesis": found["hypothesis"]},
                 reason=reason)


def equivalent_gaussian(stats) -> float:
    """Noise multiplier of the ONE Gaussian mechanism equivalent to the composition of the declared Gaussian
    releases (:func:`dpcheck.accounting.equivalent_gaussian`; one PLD instead of 5H)."""
    return accounting.equivalent_gaussian((s.sensitivity, s.noise_std) for s in stats)


def dp_event_checks(algo, H: int, *, rho_claim: float, delta_dp: float, epsilon_claim: float | None) -> list:
    """whitebox.dp_event (the 5H declared Gaussian DpEvents composed, PLD vs the rho-zCDP profile) and
    whitebox.dp_conversion (Lemma E.15: the exact epsilon at delta_dp <= rho + 2 sqrt(rho log(1/delta_dp)), the
    Lemma E.15 conversion, and <= --epsilon when the budget came from --epsilon/--delta).

    The composition is accounted as the single equivalent Gaussian (:func:`equivalent_gaussian`), whose
    exact profile dpcheck.accounting computes in closed form (Balle & Wang 2018), at any budget."""
    import dp_accounting
    from dpcheck import Claim
    from dpcheck.audits.lib.privatizers import dp_event_check, tie_event
    claim = Claim(rho=rho_claim, notion="zCDP", source=f"{SOURCE}, Theorem 4.1 / Lemma D.1")
    plugin = getattr(algo, "plugin", None)
    if plugin is not None:
        # a plug-in declares its 5H releases as one DpEvent, accounted exactly against its own claim
        claim = plugin.claim
        ev = dp_event_check(algo.dp_event(H), claim, label=f"{getattr(plugin, 'name', 'plug-in')} (5H releases)")
        out = [tie_event(ev, event_noise_finding(plugin, H, algo.sensitivities(H)))]   # the event vs the noise drawn
        if claim.rho is None:
            return out             # Lemma E.15 (G-2) is about a zCDP claim
        rho_claim, stats = claim.rho, ()
    stats = algo.private_statistics(H) if plugin is None else ()
    m = equivalent_gaussian(stats)
    rho_decl = sum(s.zcdp for s in stats)
    declared = accounting.closed_form(algo.dp_event(H))
    meas = {"releases": len(stats), "rho_declared": rho_decl, "equivalent_noise_multiplier": m}
    if plugin is not None:
        c1 = out[0]
    elif not stats:
        c1 = Check(id="whitebox.dp_event", kind="whitebox", verdict=FAIL, claim=dict(claim.to_dict(), statement=claim.describe()),
                   measured=dict(meas, confidence=1.0), reason="no private release declared (the noise is off)")
    else:
        c1 = dp_event_check(dp_accounting.GaussianDpEvent(m), claim, label="DP-VAPVI (5H releases)")
        c1 = Check(id=c1.id, kind=c1.kind, verdict=c1.verdict, claim=c1.claim, measured=dict(c1.measured, **meas),
                   details=c1.details, reason=c1.reason + f" ({len(stats)} releases, 5H = {5 * H})")
    if plugin is None and stats and abs(rho_decl - declared["rho"]) > 1e-9 * max(1.0, declared["rho"]):
        c1 = Check(id=c1.id, kind=c1.kind, verdict=FAIL, claim=c1.claim, measured=c1.measured, details=c1.details,
                   reason=f"the algorithm's dp_event (rho = {declared['rho']:.6g}) is not the composition of its "
                          f"declared releases (rho = {rho_decl:.6g})")
    elif plugin is None and stats and len(stats) != 5 * H and c1.verdict == PASS:
        c1 = Check(id=c1.id, kind=c1.kind, verdict=FAIL, claim=c1.claim, measured=c1.measured, details=c1.details,
                   reason=f"{len(stats)} declared releases, Algorithm 2 makes 5H = {5 * H}")
    # G-2 on the claim itself: the exact epsilon of rho-zCDP's tightest mechanism (a Gaussian with rho = rho_claim)
    m_claim = accounting.multiplier_from_rho(rho_claim)
    eps_exact = accounting.pld_epsilon(dp_accounting.GaussianDpEvent(m_claim), delta_dp)
    conv = accounting.epsilon_from_rho(rho_claim, delta_dp)
    bad = []
    if eps_exact > conv * 1.002 + 2e-3:
        bad.append(f"exact epsilon {eps_exact:.4g} > Lemma E.15's {conv:.4g}")
    if epsilon_claim is not None and abs(conv - epsilon_claim) > 1e-9 * max(1, epsilon_claim):
        bad.append(f"rho = {rho_claim:.6g} converts to eps = {conv:.6g}, not the requested {epsilon_claim:g}")
    c2 = Check(id="whitebox.dp_conversion", kind="whitebox", verdict=FAIL if bad else PASS,
               claim={"statement": "rho-zCDP => (rho + 2 sqrt(rho log(1/delta_dp)), delta_dp)-DP",
                      "source": f"{SOURCE}, Lemma E.15", "rho": rho_claim, "delta_dp": delta_dp},
               measured={"epsilon_exact": eps_exact, "epsilon_conversion": conv, "epsilon_requested": epsilon_claim,
                         "epsilon_lower_bound": None, "confidence": 1.0, "samples": 0},
               reason="; ".join(bad) if bad else
               f"at delta_dp = {delta_dp:g}: exact eps of a rho = {rho_claim:g} Gaussian = {eps_exact:.4g} <= Lemma "
               f"E.15's {conv:.4g}")
    return [c1, c2]


# ============================================================================ white box: the dataflow
DATAFLOW_FIELDS = ("policy", "values", "q_values", "bellman", "penalties", "sigma2", "weights")


def _ties(q: np.ndarray) -> int:
    """Entries (run, h, s) where two or more actions share the largest Q: where a tie-break acts."""
    top = q.max(axis=-1, keepdims=True)
    return int(((q == top).sum(axis=-1) > 1).sum())


def _data_variance_above_floor(values, counts) -> float:
    """Share of the visited (run, h, s, a) at which the empirical variance of Vtil_{h+1} under the data's own
    transitions, sum_s' n_h(s,a,s') Vtil_{h+1}(s')^2 / n_h(s,a) - (.)^2, exceeds 1: where a variance estimate
    (Algorithm 2, lines 4-8) computed from the raw data instead of the releases would move sigtil_h^2 off its
    floor max(1, .). values (runs, H+1, S); counts: TabularCounts (runs, H, S, A[, S])."""
    V = values[:, 1:]                                                           # Vtil_{h+1}: (runs, H, S)
    n = counts.visits
    with np.errstate(divide="ignore", invalid="ignore"):
        m1 = np.einsum("rhsat,rht->rhsa", counts.transitions, V) / n
        m2 = np.einsum("rhsat,rht->rhsa", counts.transitions, V * V) / n
    seen = n > 0
    return float(((m2 - m1 * m1 > 1 + 1e-9) & seen).sum() / max(1, int(seen.sum())))


def dataflow_check(algo, setup, *, sizes=(20, 1000), runs: int = 20, seed: int = 0, variance_case=None) -> Check:
    """privacy.dataflow (post-processing, Theorem 4.1): the output is a function of the 5H releases alone.

    The algorithm runs on a dataset A, and on a dataset B of the same size replaying A's releases
    (``DPVAPVI.run(replay=...)``, step by step: Vtil_{h+1} and sigtil_h, post-processing of earlier releases,
    are then A's too). Policy, values, Q, the Bellman estimates, penalties, sigtil^2 and weights must be
    identical: a difference means code after a release reads the data (a tie-break, a variance estimate or a
    penalty from raw counts), which the privacy argument does not cover. Instances: A and B independent
    datasets of the instance at every size in ``sizes`` (at the smallest, penalties clip Q at 0 and ties are
    common: ``measured["ties"]`` says how often a tie-break was exercised). User data: the user's dataset
    and its neighbour (the first trajectory replaced). With the noise off there is no release: FAIL.

    ``variance_case`` = (algo, setup, sizes): a second instance checked the same way, one where the values have a
    variance > 1 (:func:`dpcheck.audits.lib.offline_linear.setup.variance_setup`). Where the data's variance of
    Vtil_{h+1} never exceeds 1, sigtil^2 = max(1, .) = 1 whether it is estimated from the releases or from the raw
    data, so the check cannot see the latter: ``measured["data_variance_above_1"]`` (per size) says where it
    could, and a pass with that share 0 everywhere is qualified *uninformative* about the variance estimate."""
    from dpcheck.checks import qualify
    from dpcheck.audits.lib.offline_linear.targets import _counts, neighbour_datasets
    src = f"{SOURCE}, Theorem 4.1 (post-processing of the 5H releases of Algorithm 2)"
    claim = {"statement": "the output depends on the data only through the released statistics", "source": src}
    if algo.noise_off:
        return Check(id="privacy.dataflow", kind="whitebox", verdict=FAIL, claim=claim, measured={"confidence": 1.0},
                     details={}, reason=f"{type(algo).__name__} adds no noise: its statistics are the raw data")
    rng = np.random.default_rng(seed)
    cases = [(algo, setup, sizes)] + ([tuple(variance_case)] if variance_case is not None else [])
    rows, bad = [], []
    for alg, stp, szs in cases:
        phi, H = stp.features, stp.H
        S, A = phi.shape[:2]
        pairs = []
        if stp.instance is not None:
            for n in szs:
                pairs += [(n, *(replicate(stp.instance.sample_counts(int(n), rng, 1, rewards=True), runs)
                                for _ in range(2)))]
        else:
            x, y = neighbour_datasets(stp, H, seed=seed)
            pairs.append((len(x[1]), replicate(_counts(x, S, A), runs), replicate(_counts(y, S, A), runs)))
        data = (lambda c: (c, c)) if alg.split else (lambda c: c)
        for n, cA, cB in pairs:
            a = alg.run(data(cA), phi, np.random.default_rng(seed + 1))
            b = alg.run(data(cB), phi, np.random.default_rng(seed + 2), replay=a.statistics)
            diff = {}
            for f in DATAFLOW_FIELDS:
                u, v = np.asarray(getattr(a, f), float), np.asarray(getattr(b, f), float)
                same = np.array_equal(u, v, equal_nan=True)
                diff[f] = 0.0 if same else float(np.nanmax(np.where(u == v, 0.0, np.abs(u - v))))
                if not same:
                    bad.append((f"{stp.name}, n = {n}", f))
            rows.append({"setup": stp.name, "n": n, "max_difference": diff, "ties": _ties(a.q_values),
                         "sigma2_above_1": float((a.sigma2 > 1).mean()), "sigma2_max": float(a.sigma2.max()),
                         "data_variance_above_1": _data_variance_above_floor(a.values, cB),
                         "raw_visits_max_difference": float(np.abs(cA.visits - cB.visits).max())})
    fields = sorted({f for _, f in bad})
    ties = sum(r["ties"] for r in rows)
    var_cover = max(r["data_variance_above_1"] for r in rows)
    where = [f"{r['setup']}, n = {r['n']}" for r in rows]
    c = Check(id="privacy.dataflow", kind="whitebox", verdict=FAIL if bad else PASS, claim=claim,
              measured={"sizes": rows, "ties": ties, "runs": runs, "data_variance_above_1": var_cover,
                        "confidence": 1.0},
              details={"cases": where, "fields": list(DATAFLOW_FIELDS)},
              reason=(f"with the same releases, datasets A and B give different {fields} at "
                      f"{sorted({w for w, _ in bad})} (the output reads raw data)" if bad else
                      f"same releases, different data ({'; '.join(where)}; {runs} runs each): identical "
                      f"{', '.join(DATAFLOW_FIELDS)}; a tie-break acted at {ties} (run, h, s); the data's variance "
                      f"of Vtil_{{h+1}} exceeds sigtil^2's floor 1 at up to {var_cover:.1%} of the visited (h,s,a)"))
    if c.verdict == PASS and var_cover == 0:
        c = qualify(c, "uninformative", "the data's variance of Vtil_{h+1} never exceeds 1, so sigtil^2 = max(1, .) "
                                        "= 1 whether lines 4-8 read the releases or the raw data: a variance estimate "
                                        "from the raw data would pass")
    return c


def event_noise_finding(priv, H: int, sensitivities: dict, tolerance: float = 0.01) -> dict:
    """Does a regression privatizer's DpEvent account for the noise it declares drawing (``noise_stds``, which
    whitebox.noise_calibration measures)? Gaussian noise of std sigma_k per coordinate on a release of l2
    sensitivity Delta_k is Delta_k^2 / (2 sigma_k^2)-zCDP (Bun & Steinke 2016, Prop. 1.6), and H steps of the five
    releases compose additively (Lemma 1.7). More than the event's rho (by ``tolerance``) means the event leaves
    releases out or undercounts them: a DpEvent listing 4 of the 5 statistics, or half of the H steps, passed the
    PLD check while the release cost 1.25 or 1.5 x the claim.
    -> {"status": "consistent" | "inconsistent" | "untied", "text", ...}."""
    from dpcheck.accounting import closed_form, gaussian_rho
    stds = priv.noise_stds(H, sensitivities) if hasattr(priv, "noise_stds") else None
    said = closed_form(priv.dp_event(H, sensitivities))["rho"]
    if not stds or not math.isfinite(said):
        return {"status": "untied", "text": "no per-release stds declared, or a DpEvent that is not all-Gaussian: "
                                            "the event is not tied to the noise"}
    drawn = H * sum(gaussian_rho(sensitivities[k], float(stds[k])) for k in STATS)
    bad = drawn > said * (1 + tolerance)
    return {"status": "inconsistent" if bad else "consistent", "rho_event": said, "rho_drawn": drawn,
            "text": (f"the declared stds cost rho = {drawn:.4g} over the 5H = {5 * H} releases drawn, but the DpEvent "
                     f"accounts for {said:.4g}: it leaves releases out" if bad else
                     f"the declared stds cost rho = {drawn:.4g} over the 5H releases <= the DpEvent's {said:.4g}")}
