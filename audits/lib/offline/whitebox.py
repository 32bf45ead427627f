"""White-box privacy checks of DP-APVI (Qiao & Wang 2022, eq. 2, Lemma C.1, Lemma E.15).

:func:`dp_event_check` (the declared DpEvent accounted with the PLD), :func:`zcdp_conversion_check`
(Lemma E.15), :func:`sensitivity_checks` (brute force + hypothesis search over neighbouring datasets through
the algorithm's counting), :func:`noise_calibration_checks` (the injected noise has the variance the CLAIM
implies, at three budgets; fresh noise per step h) and :func:`dataflow_check` (everything after the release
n' is post-processing).
"""
from __future__ import annotations

import math

import numpy as np

from dpcheck.accounting import epsilon_from_rho, pld_epsilon
from dpcheck.checks import FAIL, INCONCLUSIVE, PASS, Check

from dpcheck.audits.lib import privatizers as pa

from dpcheck.audits.lib.offline.spec import APVISpec, SOURCE, TOL, _claim_dict
from dpcheck.audits.lib.offline.targets import step_swap_pair


# ============================================================ privacy: white box
def dp_event_check(spec: APVISpec, H: int, S: int, A: int) -> Check:
    """whitebox.dp_event: the algorithm's declared DpEvent (``DPAPVI.dp_event``) accounted exactly with the
    dp_accounting PLD against the claim (dpcheck.audits.lib.privatizers.dp_event_check), and held to the noise
    the privatizer declares drawing (its ``noise_variance(H)``, which whitebox.noise_scale measures:
    dpcheck.audits.lib.privatizers.event_noise_finding), built-in or plug-in alike: a PLD within the claim
    certifies nothing about an event that accounts for more noise than is drawn (a built-in's event with
    multiplier sigma / sqrt(H) instead of sigma / sqrt(2H), rho under-declared 2x, passed)."""
    algo = spec.make()
    if algo.privatizer is None:
        return _no_noise_check("whitebox.dp_event", spec, algo)
    event = algo.dp_event(H)
    check = pa.dp_event_check(event, spec.claim(), label=f"{type(algo).__name__}(H={H}, S={S}, A={A})")
    return pa.tie_event(check, pa.event_noise_finding(algo.privatizer, H, event=event))


def _no_noise_check(id: str, spec: APVISpec, algo) -> Check:
    """An algorithm that declares no noise (NonPrivateDpEvent) cannot meet a finite claim."""
    return Check(id=id, kind="whitebox", verdict=FAIL,
                 claim=dict(spec.claim().to_dict(), statement=spec.claim().describe(), source=spec.claim().source),
                 measured={"epsilon_lower_bound": math.inf, "confidence": 1.0, "samples": 0},
                 details={"event": repr(algo.dp_event(1))},
                 reason=f"{type(algo).__name__} declares no noise (NonPrivateDpEvent): no finite budget, "
                        f"claimed {spec.claim().describe()}")


def zcdp_conversion_check(spec: APVISpec, H: int, *, approx: tuple | None = None,
                          deltas=(1e-3, 1e-5, 1e-8)) -> Check:
    """whitebox.zcdp_conversion (Lemma E.15): rho-zCDP implies (rho + 2 sqrt(rho log(1/delta_dp)),
    delta_dp)-DP; the PLD epsilon of the declared event at each delta_dp must not exceed it. With
    ``approx = (eps, delta_dp)`` (rho chosen by --epsilon / --delta, docs/derivations.md#noise-calibration) the round trip must give eps
    back exactly and the PLD must certify (eps, delta_dp)."""
    algo = spec.make()
    if algo.privatizer is None:
        return _no_noise_check("whitebox.zcdp_conversion", spec, algo)
    rho = spec.budget
    ev = algo.dp_event(H)
    rows, bad = [], []
    pts = list(deltas) + ([approx[1]] if approx else [])
    for d in pts:
        conv = epsilon_from_rho(rho, d)
        e = pld_epsilon(ev, d)
        rows.append({"delta_dp": d, "epsilon_pld": e, "epsilon_conversion": conv})
        if e > conv * (1 + pa.EPS_SLACK) + pa.EPS_SLACK:
            bad.append(d)
    measured = {"rows": rows, "epsilon_lower_bound": None, "confidence": 1.0, "samples": 0}
    reason = (f"PLD epsilon of the declared event exceeds rho + 2 sqrt(rho log(1/delta_dp)) at delta_dp={bad[0]:g}"
              if bad else f"PLD epsilon <= the zCDP conversion at delta_dp in {pts}")
    if approx:
        eps, d = approx
        back = epsilon_from_rho(rho, d)
        measured["round_trip"] = {"epsilon": eps, "delta_dp": d, "rho": rho, "epsilon_back": back}
        if abs(back - eps) > 1e-9 * max(1, eps):
            bad.append("round trip")
            reason = f"rho = {rho:g} does not convert back to epsilon = {eps:g} (got {back:g})"
        else:
            reason += f"; rho = {rho:.6g} converts back to ({eps:g}, {d:g})-DP exactly"
    return Check(id="whitebox.zcdp_conversion", kind="whitebox", verdict=FAIL if bad else PASS,
                 claim=_claim_dict(spec, "rho-zCDP => (rho + 2 sqrt(rho log(1/delta_dp)), delta_dp)-DP",
                                   f"{SOURCE}, Lemma E.15, docs/derivations.md#noise-calibration"),
                 measured=measured, details={"event": repr(ev)}, reason=reason)


def _family_distance(c1, c2, gaussian: bool):
    """Per-family l2 (Gaussian) or both-families l1 (Laplace) distance of two TabularCounts."""
    dp = (c1.visits - c2.visits).ravel()
    dt = (c1.transitions - c2.transitions).ravel()
    if gaussian:
        return [float(np.linalg.norm(dp)), float(np.linalg.norm(dt))]
    return [float(np.abs(dp).sum() + np.abs(dt).sum())]


def sensitivity_search_check(spec: APVISpec, *, examples: int = 200, seed: int = 0) -> Check:
    """whitebox.sensitivity.search: hypothesis searches neighbouring DATASETS (random n <= 6, H <= 3, S <= 3,
    A <= 2; one trajectory replaced by an arbitrary other) through the algorithm's own counting
    (OfflineDataset.counts), steering towards large changes; the largest change must not exceed the
    declared sensitivity sqrt(2H) per family in l2 (Gaussian) / 4H for both families in l1 (Laplace). The
    step-swapping pair is added to show the bound is attained."""
    from hypothesis import strategies as st, target as hyp_target
    from dpcheck.hypothesis_search import explore
    from dpcheck.algorithms.offline import OfflineDataset
    from dpcheck.strategies import episode_actions, episode_sizes, episode_states
    priv = spec.make().privatizer
    declared_of = (lambda H: math.sqrt(2.0 * H)) if spec.gaussian else (lambda H: 4.0 * H)
    if priv is not None and hasattr(priv, "sensitivity"):
        declared_of = priv.sensitivity
    worst = {"ratio": 0.0, "case": None}

    @st.composite
    def neighbours(draw):
        H, S, A = episode_sizes(draw, min_states=2)
        n = draw(st.integers(1, 6))
        traj = st.tuples(episode_states(H, S), episode_actions(H, A))
        data = draw(st.lists(traj, min_size=n, max_size=n))
        new = draw(traj)
        pos = draw(st.integers(0, n - 1))
        return H, S, A, data, new, pos

    def counts_of(data, S, A):
        st_ = np.array([d[0] for d in data])[None]
        ac = np.array([d[1] for d in data])[None]
        return OfflineDataset.from_arrays(st_, ac, S=S, A=A).counts(engine="numpy", rewards=False)

    def search(case):
        H, S, A, data, new, pos = case
        other = list(data)
        other[pos] = new
        d = _family_distance(counts_of(data, S, A), counts_of(other, S, A), spec.gaussian)
        ratio = max(d) / declared_of(H)
        hyp_target(ratio)
        if ratio > worst["ratio"]:
            worst.update(ratio=ratio, case={"H": H, "S": S, "A": A, "n": len(data), "distance": d,
                                            "declared": declared_of(H)})

    searched = explore(search, neighbours(), examples=examples, seed=seed)
    H = 3
    x, y = step_swap_pair(H, 2, 2)
    pair = _family_distance(counts_of([(x.states, x.actions)], 2, 2), counts_of([(y.states, y.actions)], 2, 2),
                            spec.gaussian)
    attained = max(pair) / declared_of(H)
    ok = worst["ratio"] <= 1 + TOL and attained <= 1 + TOL
    return Check(id="whitebox.sensitivity.search", kind="whitebox", verdict=PASS if ok else FAIL,
                 claim=_claim_dict(spec, "replacing one trajectory changes each count family by <= sqrt(2H) in l2 "
                                         "(Gaussian) / both families by <= 4H in l1 (Laplace)",
                                   f"{SOURCE}, Lemma C.1 / docs/derivations.md#noise-calibration (sensitivity; Laplace variant)"),
                 measured={"max_ratio_to_declared": worst["ratio"], "worst_case": worst["case"],
                           "step_swap_ratio": attained, "examples": examples,
                           "epsilon_lower_bound": None, "confidence": 1.0, "samples": examples},
                 details={"method": "hypothesis (target = distance / declared) over datasets of n <= 6 "
                                    "trajectories, H <= 3, S <= 3, A <= 2; counts by OfflineDataset.counts",
                          "hypothesis": searched},
                 reason=(f"largest change / declared sensitivity = {worst['ratio']:.4g} over {examples} searched "
                         f"neighbours; the step-swapping pair attains {attained:.4g}"))


def sensitivity_checks(spec: APVISpec, *, examples: int = 200) -> list[Check]:
    """whitebox.sensitivity (the privatizer's brute force, dpcheck.audits.lib.privatizers) and the search above."""
    out = []
    priv = spec.make().privatizer
    if priv is not None:
        out.append(pa.offline_sensitivity_check(priv, gaussian=spec.gaussian))
    out.append(sensitivity_search_check(spec, examples=examples))
    return out


LARGE_LEVEL = 100_000        # counts of the large-dataset noise draw (n = LARGE_LEVEL S^2 A trajectories)
KURTOSIS_TOLERANCE = 0.1     # the built-ins' standardised 4th moment: 3 (Gaussian) or 6 (Laplace) +- 10%


def _noise_draws(algo, H, S, A, level, runs, rng):
    """n' - n on constant counts ``level`` (far above the clip at 0): (pair (R,H,S,A), triple (R,H,S,A,S))."""
    from dpcheck.algorithms.offline import TabularCounts
    v = np.full((runs, H, S, A), float(level * S))
    t = np.full((runs, H, S, A, S), float(level))
    pc = algo.private_counts(TabularCounts(visits=v, transitions=t, reward_sums=None, n=int(level * S * S * A)), rng)
    return pc.noisy_visits - v, pc.noisy_transitions - t


def _zero_count_release(algo, H, S, A, runs, seed):
    """The release n' of counts that are 0, through the algorithm's release (``private_counts``, i.e. the
    privatizer's public ``privatize``: noise, clip at 0, LP), from a Generator seeded with ``seed``:
    [("pair", n' (R,H,S,A)), ("triple", n' (R,H,S,A,S))]; [] with the noise off. The caller compares it with the
    noise n' - n of counts far above 0 drawn from a Generator of the same seed.

    The paper's noise does not depend on the count (eq. 2), so n'(0) has the law of max(Z, 0), Z the noise drawn
    anywhere else. A privatizer that leaves zero counts unnoised -- in its noise hook or after it, in ``privatize``
    -- releases which counts are 0 exactly: a replaced trajectory with a transition no other trajectory has
    moves that count 0 -> 1, visible with probability P[1 + Z > 0] (0.76 at rho = 1, H = 1), which draws far
    above 0 cannot show. The same seed couples the two draws when the privatizer consumes its Generator the same
    way whatever the counts (the built-ins, most plug-ins): a variance reduction only, the comparison below is
    valid without it."""
    from dpcheck.algorithms.offline import TabularCounts
    if getattr(algo, "privatizer", None) is None:
        return []
    zero_v, zero_t = np.zeros((runs, H, S, A)), np.zeros((runs, H, S, A, S))
    pc0 = algo.private_counts(TabularCounts(visits=zero_v, transitions=zero_t, reward_sums=None, n=0),
                              np.random.default_rng(seed))
    return [("pair", np.asarray(pc0.noisy_visits, float)), ("triple", np.asarray(pc0.noisy_transitions, float))]


def _zero_count_row(fam, at_zero, noise, var, zq, zq_pass) -> dict:
    """One row of whitebox.noise_scale for counts that are 0: the mean of n'(0)^2 over the mean of max(Z, 0)^2
    (Z the noise at a count far above 0, the same cells and runs) with a paired delta-method interval, and the
    difference of the two means in units of the declared sd. Both are 1 and 0 when the noise is the same at 0."""
    x, ref = at_zero.reshape(-1), np.maximum(noise.reshape(-1), 0.0)
    a, b = x * x, ref * ref
    m_b = float(b.mean())
    ratio = float(a.mean()) / m_b if m_b > 0 else math.inf
    se = float(np.std(a - ratio * b, ddof=1) / math.sqrt(a.size)) / m_b if m_b > 0 else math.inf
    se += 1e-12            # exactly coupled draws (se 0): the interval still covers the rounding of the two means
    d = (x - ref) / math.sqrt(var)
    mean, mse = float(d.mean()), float(d.std(ddof=1) / math.sqrt(d.size))
    return {"family": f"{fam} at n = 0", "variance_ratio": ratio, "ci": [ratio - zq * se, ratio + zq * se],
            "pass_ci": [ratio - zq_pass * se, ratio + zq_pass * se], "declared_variance": var,
            "standardised_mean": mean, "mean_ci": [mean - zq * mse, mean + zq * mse],
            "mean_pass_ci": [mean - zq_pass * mse, mean + zq_pass * mse], "draws": int(x.size),
            "measured": "E[n'(0)^2] / E[max(Z, 0)^2] (released, after the clip at 0); "
                        "mean: (E n'(0) - E max(Z, 0)) / sd"}


# repetitions of noise_calibration_checks in the audits (default and --quick alike, ~1 s): enough for a PASS to
# certify the variance to 2% (dpcheck.audits.lib.privatizers.variance_band; 5,000 left Laplace noise INCONCLUSIVE)
CALIBRATION_RUNS = 50_000


def noise_calibration_checks(spec: APVISpec, *, runs: int, rng, alpha: float, H: int = 3, S: int = 2, A: int = 2,
                             factors=(0.25, 1.0, 4.0), tolerance: float = 0.1) -> list[Check]:
    """whitebox.noise_scale (noise variance) and whitebox.noise_independence (fresh noise for every count and
    every step h, eq. 2).

    At budgets ``budget x factors`` (a scale that is right only at budget 1 -- e.g. rho used where an
    epsilon belongs -- is caught off 1) the algorithm privatises constant counts far above 0 in ``runs``
    repetitions. The mean of (n' - n)^2 over all counts divided by the variance the CLAIM implies
    (2H/rho, or 2 (4H/eps)^2) has a normal interval (Bonferroni over budgets, families and the two moments),
    judged one-sidedly by :func:`dpcheck.audits.lib.privatizers.variance_band`: FAIL if it lies wholly below
    1 (less noise than the claim needs) or wholly above 1.1 (another calibration: the rho-as-epsilon scale is
    off by a factor 1/b, 16x at b = 1/4, 1/4 at b = 4); PASS if it lies within [0.98, 1.1], which certifies
    the claimed budget to 2% (rho) / 1% (eps); else INCONCLUSIVE. The standardised mean noise is judged
    against 0 +- ``tolerance``.
    At the audited budget counts that are 0 are released too, through the algorithm's release (noise, clip, LP:
    :func:`_zero_count_release`), and E[n'(0)^2] / E[max(Z, 0)^2] (Z the noise of the same cells far above 0) is
    judged by the same band, the difference of the means against 0 +- ``tolerance`` sd: a privatizer that does
    not noise zero counts (n'(0) = 0, ratio 0) reveals which counts are 0.
    Independence: the correlation of every pair of the H S A (S + 1) released counts, pair and triple, every
    step (:func:`dpcheck.audits.lib.privatizers.correlation_screen`, Bonferroni over the pairs): FAIL if one
    lies wholly beyond +-``tolerance`` (one draw reused across h, across states, or by a pair count and one of
    its triple counts gives +-1), PASS if all within, else INCONCLUSIVE."""
    from scipy.stats import norm
    rows, bad, unsure, unknown = [], [], [], []
    from dpcheck.stats import pass_alpha
    if 1.0 not in factors:
        raise ValueError("noise_calibration_checks: factors must include 1 (the audited budget)")
    # intervals judged: 2 moments of 2 families per budget, the zero counts, the large dataset's 2 families x 2
    # moments, and the 4th moment of up to 6 families at the audited budget
    m = len(factors) * 2 * 2 + 2 + 4 + 6
    zq = float(norm.ppf(1 - alpha / (2 * m)))                   # FAIL: the audit's share of alpha
    zq_pass = float(norm.ppf(1 - pass_alpha(alpha) / (2 * m)))  # PASS: its alpha (dpcheck.stats.pass_alpha)
    for f in factors:
        b = spec.budget * f
        algo = spec.make(budget=b)
        var = spec.declared_variance(H, b)
        undeclared = var is None
        level = (10 * math.sqrt(var) if not undeclared else algo.width(H, S, A)) + 10
        # at the audited budget the draws far above 0 share their Generator's seed with the zero counts' release
        seed = int(rng.integers(2**63)) if f == 1.0 else None
        npair, ntrip = _noise_draws(algo, H, S, A, level, runs, rng if seed is None else np.random.default_rng(seed))
        if undeclared:        # a plug-in that declares no variance: independence is judged on the measured one
            var = float(np.var(np.concatenate([npair.ravel(), ntrip.ravel()]))) or 1.0
            unknown.append(b)
            if f != 1.0:
                continue
        families = [("pair", npair), ("triple", ntrip)]
        zero_rows = []
        if f == 1.0 and not undeclared:
            zero_rows = [_zero_count_row(fam, x0, z, var, zq, zq_pass) for (fam, x0), z in
                         zip(_zero_count_release(algo, H, S, A, runs, seed), (npair, ntrip))]
            # the same counts in a large dataset: the noise must not depend on the number of trajectories (a scale
            # shrinking like 1/sqrt(n) passed at the audits' ~300 trajectories)
            bp, bt = _noise_draws(algo, H, S, A, LARGE_LEVEL, runs, rng)
            families += [(f"pair at n = {LARGE_LEVEL * S * S * A:,}", bp), (f"triple at n = {LARGE_LEVEL * S * S * A:,}", bt)]
        for fam, z in families:
            if undeclared:
                break
            x = z.reshape(-1)
            q = x * x / var
            ratio, se = float(q.mean()), float(q.std(ddof=1) / math.sqrt(q.size))
            mean, mse = float(x.mean() / math.sqrt(var)), float(x.std(ddof=1) / math.sqrt(var) / math.sqrt(x.size))
            ci = (ratio - zq * se, ratio + zq * se)
            mci = (mean - zq * mse, mean + zq * mse)
            row = {"budget": b, "family": fam, "variance_ratio": ratio, "ci": list(ci), "declared_variance": var,
                   "standardised_mean": mean, "mean_ci": list(mci), "draws": int(x.size)}
            rows.append(row)
            pci = (ratio - zq_pass * se, ratio + zq_pass * se)
            pmci = (mean - zq_pass * mse, mean + zq_pass * mse)
            row["pass_ci"] = list(pci)
            band = pa.variance_band(ci, pci)
            law = None
            if spec.plugin is None and f == 1.0:
                # the built-ins' law, not only its variance: the standardised 4th moment is 3 (Gaussian) or 6
                # (Laplace); uniform noise of the right variance (1.8) passed every check
                k4 = (x * x / var) ** 2
                kurt, kse = float(k4.mean()), float(k4.std(ddof=1) / math.sqrt(k4.size))
                want = 3.0 if spec.gaussian else 6.0
                row.update(kurtosis=kurt, kurtosis_expected=want,
                           kurtosis_ci=[kurt - zq * kse, kurt + zq * kse])
                if kurt + zq * kse < want * (1 - KURTOSIS_TOLERANCE) or kurt - zq * kse > want * (1 + KURTOSIS_TOLERANCE):
                    law = "law"
                elif kurt - zq_pass * kse < want * (1 - KURTOSIS_TOLERANCE) or \
                        kurt + zq_pass * kse > want * (1 + KURTOSIS_TOLERANCE):
                    law = "unsure"
            if band in ("low", "high") or mci[0] > tolerance or mci[1] < -tolerance or law == "law":
                bad.append(dict(row, band=band if band in ("low", "high") else law or "mean"))
            elif band == "unsure" or pmci[0] < -tolerance or pmci[1] > tolerance or law == "unsure":
                unsure.append(row)
        for row in zero_rows:
            row["budget"] = b
            rows.append(row)
            band = pa.variance_band(row["ci"], row["pass_ci"])
            mci, pmci = row["mean_ci"], row["mean_pass_ci"]
            if band in ("low", "high") or mci[0] > tolerance or mci[1] < -tolerance:
                bad.append(dict(row, band=band if band in ("low", "high") else "mean"))
            elif band == "unsure" or pmci[0] < -tolerance or pmci[1] > tolerance:
                unsure.append(row)
        if f == 1.0:
            # every pair of released coordinates, pair and triple counts of every step (D = H S A (S + 1))
            labels = ([f"n'(h={h + 1},s={i},a={a})" for h in range(H) for i in range(S) for a in range(A)]
                      + [f"n'(h={h + 1},s={i},a={a},s'={j})" for h in range(H) for i in range(S) for a in range(A)
                         for j in range(S)])
            screen = pa.correlation_screen(np.concatenate([npair.reshape(runs, -1), ntrip.reshape(runs, -1)], axis=1),
                                           labels, alpha=alpha, tolerance=tolerance)
    w0 = screen["worst"][0] if screen["worst"] else None
    indep = Check(
        id="whitebox.noise_independence", kind="whitebox",
        verdict={"fail": FAIL, "unsure": INCONCLUSIVE, "pass": PASS}[screen["verdict"]],
        claim=_claim_dict(spec, "independent noise for every count and every step h (never one draw reused "
                                "across h, across counts, or between a pair count and its triple counts)",
                          f"{SOURCE}, eq. 2, Lemma C.1"),
        measured={"worst": screen["worst"], "pairs": screen["pairs"],
                  "max_abs_correlation": abs(w0["correlation"]) if w0 else 0.0, "noise_free": screen["flat"],
                  "confidence": 1 - alpha, "epsilon_lower_bound": None, "samples": runs},
        details={"test": f"correlation of every pair of the {len(labels)} released counts (pair and triple, every "
                         f"step), mean product +- z se, Bonferroni over {screen['pairs']}, vs +-{tolerance:g} "
                         "(dpcheck.audits.lib.privatizers.correlation_screen)"},
        reason=(f"noise of {w0['between'][0]} and {w0['between'][1]} is correlated ({w0['correlation']:.3f}): "
                "one draw serves two counts, so a combination of the release is noise-free"
                if screen["verdict"] == "fail" else
                f"correlation of {w0['between'][0]} and {w0['between'][1]} ({w0['correlation']:.3f}) not established "
                f"within +-{tolerance:g} (more runs)" if screen["verdict"] == "unsure" else
                f"no correlation between any two of the {len(labels)} released counts ({screen['pairs']} pairs, "
                f"max |corr| {abs(w0['correlation']) if w0 else 0:.3g})"))
    if unknown:
        return [Check(id="whitebox.noise_scale", kind="whitebox", verdict=INCONCLUSIVE,
                      claim=_claim_dict(spec, "the injected noise has the variance the privatizer declares"),
                      measured={"confidence": None, "epsilon_lower_bound": None, "samples": runs},
                      reason=f"the plug-in {spec.plugin.label} declares no noise_variance(H): there is no variance "
                             f"to compare with (its privacy rests on the black box and its DpEvent)"), indep]
    worst = max(rows, key=lambda r: abs(r["variance_ratio"] - 1))
    floor = min(r["pass_ci"][0] for r in rows)
    side = {"low": "below 1: less noise than the claim needs", "high": f"above 1 + {pa.VARIANCE_TOLERANCE:g}: "
            "not the claimed calibration", "mean": "fine, but the noise is not centred",
            "law": "fine, but the noise is not the claimed law (standardised 4th moment outside its expected value "
                   f"+-{KURTOSIS_TOLERANCE:.0%}: the privacy profile is the Gaussian's or the Laplace's only for that law)"}
    what = ("the variance the plug-in declares (noise_variance(H)), at every budget" if spec.plugin is not None else
            "variance 2H/rho (Gaussian) / 2 (4H/eps)^2 (Laplace), the variance the claimed budget implies")
    scale = Check(
        id="whitebox.noise_scale", kind="whitebox", verdict=FAIL if bad else INCONCLUSIVE if unsure else PASS,
        claim=_claim_dict(spec, "the injected noise has " + what, f"{SOURCE}, eq. 2 / docs/derivations.md#noise-calibration"),
        measured={"rows": rows, "worst_variance_ratio": worst["variance_ratio"], "confidence": 1 - alpha,
                  "epsilon_lower_bound": None, "samples": runs},
        details={"budgets": [spec.budget * f for f in factors], "H": H, "S": S, "A": A,
                 "interval": f"normal interval of the mean of (n'-n)^2 / declared, Bonferroni over {m}",
                 "band": f"PASS within [1 - {pa.VARIANCE_RESOLUTION:g}, 1 + {pa.VARIANCE_TOLERANCE:g}], FAIL wholly "
                         f"below 1 or above 1 + {pa.VARIANCE_TOLERANCE:g} (dpcheck.audits.lib.privatizers.variance_band)",
                 "mean_tolerance": tolerance},
        reason=(f"{bad[0]['family']} counts: E[n'(0)^2] / E[max(Z, 0)^2] = {bad[0]['variance_ratio']:.4g}, interval "
                f"{[round(v, 4) for v in bad[0]['ci']]} (mean difference {bad[0]['standardised_mean']:.3g} sd): a "
                f"count that is 0 is released with {'less' if bad[0]['variance_ratio'] < 1 else 'other'} noise than "
                f"the others (after the clip at 0), so the release shows which counts are 0 (eq. 2's noise does not "
                f"depend on the count)" if bad and "n = 0" in bad[0]["family"] else
                f"variance / declared = {bad[0]['variance_ratio']:.4g} (mean {bad[0]['standardised_mean']:.3g} sd) at "
                f"{spec.budget_name} = {bad[0]['budget']:g} ({bad[0]['family']} counts), interval "
                f"{[round(v, 4) for v in bad[0]['ci']]} {side[bad[0]['band']]}"
                if bad else (f"variance / declared: interval {[round(v, 4) for v in unsure[0]['pass_ci']]} at "
                             f"{spec.budget_name} = {unsure[0]['budget']:g} is not within [1 - {pa.VARIANCE_RESOLUTION:g}, "
                             f"1 + {pa.VARIANCE_TOLERANCE:g}] (more runs)"
                             if unsure else f"variance / declared >= {floor:.4f} (>= 1 - {pa.VARIANCE_RESOLUTION:g}) and "
                                            f"<= 1 + {pa.VARIANCE_TOLERANCE:g} at {spec.budget_name} in "
                                            f"{[spec.budget * f for f in factors]} (worst {worst['variance_ratio']:.4f})")))
    return [scale, indep]


class _FixedRelease:
    """Stands in for the algorithm's privatizer: returns one fixed release whatever counts it is given
    (every other attribute is the real privatizer's)."""

    def __init__(self, real, release):
        self._real, self._release = real, release

    def privatize(self, pair, triple, rng):
        return self._release

    def __getattr__(self, name):
        return getattr(self._real, name)


def dataflow_check(spec: APVISpec, instance, *, n: int, runs: int, seed: int) -> Check:
    """privacy.dataflow (post-processing): everything after the release n' is post-processing. The algorithm's
    privatizer is made to hand out ONE fixed release (computed by the real privatizer from dataset A);
    the algorithm is then run on A and on an independent dataset B of the same size. Policy, values, Q
    and penalties must be identical: any difference means the code after the release reads the raw data
    (e.g. a fallback or penalty from raw counts), which the privacy argument does not cover. With the
    noise off there is no release: the algorithm reads the raw data (FAIL).

    Two dataset sizes: ``n``, and n_E = E S A trajectories, where a pair's count is about E, the width that
    decides the uniform fallback (ntil <= E) and the penalty's C H branch. At ``n`` alone every raw count is
    far above E, so a fallback decided on the raw n(s,a) instead of ntil took the same branch on A and B and
    passed (its policy is 0 vs 1 on neighbours whose count straddles E)."""
    algo = spec.make()
    src = f"{SOURCE}, Algorithm 1 / Lemma C.1 (post-processing: the output is a post-processing of n')"
    claim = _claim_dict(spec, "the output depends on the data only through the released noisy counts n'", src)
    if algo.privatizer is None:
        return Check(id="privacy.dataflow", kind="whitebox", verdict=FAIL, claim=claim,
                     measured={"confidence": 1.0}, details={},
                     reason=f"{type(algo).__name__} has no privatizer: it computes its output from the raw counts")
    real = algo.privatizer
    H, S, A = instance.mdp.H, instance.mdp.S, instance.mdp.A
    E = float(real.width(H, S, A))
    sizes = [int(n), max(4, int(math.ceil(E * S * A)))]
    fields = ("policy", "values", "q_values", "penalties", "kernel")
    rng = np.random.default_rng(seed)
    rows, bad = [], []
    for size in sizes:
        cA = instance.sample_counts(size, rng, runs)
        cB = instance.sample_counts(size, rng, runs)
        release = real.privatize(cA.visits, cA.transitions, np.random.default_rng(seed + 1))
        algo.privatizer = _FixedRelease(real, release)
        a = algo.run(cA, instance.mdp, np.random.default_rng(seed + 2))
        b = algo.run(cB, instance.mdp, np.random.default_rng(seed + 2))
        diff = {f: float(np.max(np.abs(np.asarray(getattr(a, f), float) - np.asarray(getattr(b, f), float))))
                for f in fields}
        rows.append({"n": size, "max_difference": diff,
                     "raw_counts_max_difference": float(np.abs(cA.visits - cB.visits).max())})
        bad += [(size, f) for f, v in diff.items() if v > 0]
    algo.privatizer = real
    return Check(id="privacy.dataflow", kind="whitebox", verdict=FAIL if bad else PASS, claim=claim,
                 measured={"sizes": rows, "width_E": E, "confidence": 1.0, "runs": runs,
                           "max_difference": rows[0]["max_difference"]},
                 details={"instance": instance.name, "n": sizes},
                 reason=(f"with the same release, datasets A and B give different {sorted({f for _, f in bad})} at "
                         f"n = {sorted({k for k, _ in bad})} (the output reads raw data)"
                         if bad else f"same release, different data (n = {sizes[0]}, and n = {sizes[1]} where the "
                                     f"counts are near E = {E:.3g}): identical policy, values, Q, penalties and P~ "
                                     f"in {runs} runs each"))
