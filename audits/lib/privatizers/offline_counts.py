"""Checks of the offline (DP-APVI) count privatizers (Qiao & Wang 2022, eq. 2, Lemmas C.1-C.2).

:func:`offline_target` (black box on the released noisy counts n', the declared noise's likelihood ratio),
:func:`offline_plugin_target` / :func:`offline_privatizer_plugin_target` (a plug-in's release, nothing assumed
about its noise: learned statistics), :func:`offline_sensitivity_check` (brute-force sensitivity) and
:func:`offline_noise_checks` (the noise bound of Lemma C.2, the sum identity, a valid P~).
"""
from __future__ import annotations

import math

import numpy as np

from dpcheck.accounting import gaussian_rho_squared
from dpcheck.checks import FAIL, PASS, Check, invariant_check

from dpcheck.audits.lib.privatizers.neighbours import Trajectory, gaussian_llr, laplace_llr, worst_case_pair
from dpcheck.audits.lib.privatizers.plugin_search import PILOT_SAMPLES, SEARCH_SALT, StatisticParams, _moments


# ============================================================ offline privatizers
def offline_worst_datasets(H: int, S: int = 2, A: int = 1, others: int = 20):
    """Neighbouring datasets: ``others`` scripted trajectories spread over states 0 and 1 (so no count is
    near the clip at 0), plus one trajectory replaced by the worst-case pair (sensitivity)."""
    x, y = worst_case_pair(H, S, A)
    rest = [Trajectory(states=(i % 2,) * (H + 1), actions=(0,) * H, rewards=(0.0,) * H) for i in range(others)]
    return rest + [x], rest + [y]


def _dataset_arrays(dataset, runs):
    st = np.stack([np.asarray(t.states) for t in dataset])[None].repeat(runs, 0)
    ac = np.stack([np.asarray(t.actions) for t in dataset])[None].repeat(runs, 0)
    return st, ac


def offline_target(priv, *, H=1, S=2, A=1, gaussian=True):
    from dpcheck import AuditTarget
    from dpcheck.algorithms.privatizers.offline import dataset_counts
    D, Dp = offline_worst_datasets(H, S, A)

    def counts(dataset, runs):
        pair, triple = dataset_counts(*_dataset_arrays(dataset, runs), S, A)
        return pair, triple

    def flat(pair, triple):
        return np.concatenate([pair.reshape(pair.shape[0], -1), triple.reshape(triple.shape[0], -1)], axis=1)

    mu, mu_p = flat(*counts(D, 1))[0], flat(*counts(Dp, 1))[0]
    llr = gaussian_llr if gaussian else laplace_llr

    def mechanism(dataset, rng, size):
        pair, triple = counts(dataset, 1)
        out = priv.privatize(np.repeat(pair, size, 0), np.repeat(triple, size, 0), rng)
        return llr(flat(out.noisy_visits, out.noisy_transitions), mu, mu_p)

    return AuditTarget(name=f"{priv.name}.counts", mechanism=mechanism, pairs=[(tuple(D), tuple(Dp))],
                       claim=priv.claim, output="continuous")


class OfflineReleaseStatistics:
    """mechanism(dataset, rng, size) of an offline plug-in's release: ``release(dataset, rng, size)`` -> the
    flat noisy counts (size, J), drawn by the plug-in with the sampler's own Generator (whatever noise family
    it draws); returned are the coordinates the replaced trajectory changes (or that the pilot found shifted)
    and the 4 learned statistics of
    :class:`StatisticParams` (fitted on a pilot sample, never on the audit's)."""

    def __init__(self, release, params: StatisticParams):
        self.release, self.params = release, params

    def __call__(self, dataset, rng, size):
        x = np.asarray(self.release(dataset, rng, int(size)), float)
        raw = (self.params.d != 0) | self.params.keep       # known to differ, or learned to differ on the pilot
        return np.concatenate([x[:, raw], self.params.scores(x)], axis=1)


def offline_plugin_target(release, pair, d, claim, *, name: str, seed: int = 0, pilot: int = PILOT_SAMPLES):
    """Black-box AuditTarget on an offline plug-in privatizer's release, nothing assumed about its noise:
    the statistics' centres, scales and mean shift are learned from ``pilot`` samples per side drawn with
    seeds disjoint from the audit's (SeedSequence([seed, SEARCH_SALT, 900])), so the choice is independent
    of the certification sample; the auditor then picks its event among the raw differing coordinates and
    the 4 statistics on its selection sample (dpcheck.blackbox). ``pair`` = (D, D'), ``d`` = the count
    difference D - D' (flat, J). Returns (target, details)."""
    from dpcheck import AuditTarget
    x, y = pair
    ss = np.random.SeedSequence([int(seed), SEARCH_SALT, 900]).spawn(2)
    mom_x = _moments(np.asarray(release(x, np.random.default_rng(ss[0]), pilot), float), None)
    mom_y = _moments(np.asarray(release(y, np.random.default_rng(ss[1]), pilot), float), None)
    params = StatisticParams.from_moments(tuple(mom_x), tuple(mom_y), np.asarray(d, float))
    target = AuditTarget(name=f"{name}.released_counts", mechanism=OfflineReleaseStatistics(release, params),
                         pairs=[(x, y)], claim=claim, output="continuous")
    return target, {"statistic": f"plug-in: the {int((np.asarray(d) != 0).sum())} differing counts and 4 learned "
                                 f"statistics (Laplace / Gaussian forms, known and estimated shift; "
                                 f"{pilot} pilot samples per side)", "pilot_samples_per_side": pilot}


def offline_privatizer_plugin_target(priv, *, H=1, S=2, A=1, seed=0, pilot=PILOT_SAMPLES):
    """:func:`offline_target` for a plug-in offline count privatizer: the same neighbouring datasets
    (:func:`offline_worst_datasets`), its ``privatize`` called with the sampler's Generator, and no noise law
    assumed (:func:`offline_plugin_target`: differing counts + learned statistics), on the noisy counts n' and
    the post-processed ntil the planner reads. Returns (target, details)."""
    from dpcheck.algorithms.privatizers.offline import dataset_counts
    D, Dp = offline_worst_datasets(H, S, A)

    def flat(pair, triple):
        return np.concatenate([pair.reshape(pair.shape[0], -1), triple.reshape(triple.shape[0], -1)], axis=1)

    base = {tuple(D): dataset_counts(*_dataset_arrays(D, 1), S, A), tuple(Dp): dataset_counts(*_dataset_arrays(Dp, 1), S, A)}

    def release(dataset, rng, size):
        # both what the plug-in reports (n') and what the planner reads (ntil): a plug-in's own post-processing
        # that reads the exact counts (ntil from n, or an LP centred on n) leaks through ntil alone
        pair, triple = base[dataset]
        out = priv.privatize(np.repeat(pair, size, 0), np.repeat(triple, size, 0), rng)
        return np.concatenate([flat(out.noisy_visits, out.noisy_transitions), flat(out.visits, out.transitions)], axis=1)

    d = flat(*base[tuple(D)])[0] - flat(*base[tuple(Dp)])[0]
    d = np.concatenate([d, d])
    return offline_plugin_target(release, (tuple(D), tuple(Dp)), d, priv.claim, name=getattr(priv, "name", "plugin"),
                                 seed=seed, pilot=pilot)


def offline_sensitivity_check(priv, *, gaussian: bool, H: int = 2, S: int = 2, A: int = 2) -> Check:
    """whitebox.sensitivity of an offline privatizer, by brute force over every pair of trajectories of
    a tiny (H, S, A) model (sensitivity): the largest change of the pair / triple counts when one trajectory
    is replaced, against the declared sensitivity -- l2 per family and the realised rho (Gaussian), l1 of
    both families together and the realised eps (Laplace)."""
    import itertools
    from dpcheck.algorithms.privatizers.offline import dataset_counts
    Hs = H
    trajs = [(s, a) for s in itertools.product(range(S), repeat=Hs + 1) for a in itertools.product(range(A), repeat=Hs)]
    st = np.array([t[0] for t in trajs])[:, None, :]
    ac = np.array([t[1] for t in trajs])[:, None, :]
    pair, triple = dataset_counts(st, ac, S, A)
    P, T = pair.reshape(len(trajs), -1), triple.reshape(len(trajs), -1)
    norm = 2 if gaussian else 1
    dp_ = np.linalg.norm(P[:, None] - P[None], ord=norm, axis=-1) if norm == 2 else np.abs(P[:, None] - P[None]).sum(-1)
    dt_ = np.linalg.norm(T[:, None] - T[None], ord=norm, axis=-1) if norm == 2 else np.abs(T[:, None] - T[None]).sum(-1)
    if not (hasattr(priv, "sigma") or hasattr(priv, "scale")):
        # a plug-in (OfflineCountPrivatizer): its noise law is its own, so the brute force is held against the
        # sensitivity it declares (or the paper's sqrt(2H) / 4H); its budget is whitebox.dp_event's to account
        sens = getattr(priv, "sensitivity", None)
        declared = float(sens(Hs)) if callable(sens) else (math.sqrt(2.0 * Hs) if gaussian else 4.0 * Hs)
        worst = float(max(dp_.max(), dt_.max())) if gaussian else float((dp_ + dt_).max())
        ok = worst <= declared * (1 + 1e-9)
        measured = {"max_change": worst, "norm": "l2 per family" if gaussian else "l1 of both families",
                    "declared": declared, "epsilon_lower_bound": None, "confidence": 1.0, "samples": len(trajs) ** 2}
        reason = (f"max {'l2' if gaussian else 'l1'} change {worst:.4g} {'<=' if ok else '>'} the sensitivity the "
                  f"plug-in is calibrated for, {declared:.4g}")
    elif gaussian:
        declared = priv.sensitivity(Hs)
        worst = float(max(dp_.max(), dt_.max()))
        ok = worst <= declared + 1e-9 and abs(worst - declared) < 1e-9
        rho_real = gaussian_rho_squared(dp_.max() ** 2 + dt_.max() ** 2, priv.sigma(Hs))
        measured = {"max_l2_pair": float(dp_.max()), "max_l2_triple": float(dt_.max()), "declared": declared,
                    "rho_realised": float(rho_real), "epsilon_lower_bound": None, "confidence": 1.0,
                    "samples": len(trajs) ** 2}
        reason = (f"max l2 change {worst:.4g} {'=' if ok else '!='} declared sqrt(2H) = {declared:.4g}; "
                  f"realised rho = {rho_real:.4g} (claimed {priv.rho:g})")
        ok = ok and rho_real <= priv.rho * (1 + 1e-9)
    else:
        declared = priv.sensitivity(Hs)
        worst = float((dp_ + dt_).max())
        eps_real = worst / priv.scale(Hs)
        ok = worst <= declared + 1e-9 and eps_real <= priv.epsilon * (1 + 1e-9)
        measured = {"max_l1_both_families": worst, "declared": declared, "epsilon_realised": eps_real,
                    "epsilon_lower_bound": eps_real, "confidence": 1.0, "samples": len(trajs) ** 2}
        reason = f"max l1 change {worst:g} vs declared 4H = {declared:g}; realised eps = {eps_real:.4g}"
    return Check(id="whitebox.sensitivity", kind="whitebox", verdict=PASS if ok else FAIL,
                 claim={"statement": "one replaced trajectory moves each family by <= sqrt(2H) in l2 (Gaussian) / "
                                     "both families by <= 4H in l1 (Laplace)", "source": priv.claim.source},
                 measured=measured, details={"trajectories": len(trajs), "H": Hs, "S": S, "A": A},
                 reason=reason)


def consistency_violations(out, tol: float = 1e-9) -> np.ndarray:
    """Where the post-processed counts of one release ``out`` (an OfflineCounts: ntil, n', width E) break eqs. 3-4
    (Section 3.3's LP): ntil(s,a) != sum_s' ntil(s,a,s'), a negative ntil(s,a,s'), or |ntil(s,a) - n'(s,a)| > E/2
    -- the LP's band is centred on the NOISY pair count n'; centred on anything else (the raw n, which the
    privacy argument does not cover) ntil leaves it. Relative tolerance ``tol``. -> bool (runs, H, S, A)."""
    E = float(out.width)
    scale = tol * np.maximum(1, np.abs(out.visits))
    return ((np.abs(out.visits - out.transitions.sum(-1)) > scale)
            | np.any(out.transitions < -tol, axis=-1)
            | (np.abs(out.visits - out.noisy_visits) > E / 2 + scale))


def offline_noise_checks(priv, *, runs: int, rng, alpha: float, H: int = 3, S: int = 3, A: int = 2) -> list:
    """The offline privatizer on R = ``runs`` repetitions of constant counts (5 everywhere): the uniform
    noise bound |n' - n| <= E/2 (Lemma C.2; probability check at failure rate beta), the sum identity,
    non-negativity of ntil and the LP's band |ntil(s,a) - n'(s,a)| <= E/2 (eq. 3-4,
    :func:`consistency_violations`, dp_apvi's assumption.consistency) and a valid P~ (eq. 5). Returns the three
    checks."""
    from dpcheck.checks import probability_check
    R, Hn, Sn, An = runs, H, S, A
    pair = np.zeros((R, Hn, Sn, An)) + 5
    triple = np.zeros((R, Hn, Sn, An, Sn)) + 5
    out = priv.privatize(pair, triple, rng)
    E = out.width
    err = np.maximum(np.abs(out.noisy_visits - pair).reshape(R, -1).max(1),
                     np.abs(out.noisy_transitions - triple).reshape(R, -1).max(1))
    checks = [probability_check(id="assumption.noise_bound", failures=int((err > E / 2).sum()), runs=R,
                                beta=priv.beta, alpha=alpha, what="|n' - n| <= E/2 for all counts",
                                claim={"statement": "w.p. >= 1 - delta, |n' - n| <= E/2 uniformly (Lemma C.2; docs/derivations.md#widths-e)",
                                       "source": priv.claim.source})]
    bad_sum = consistency_violations(out)
    checks.append(invariant_check(id="assumption.sum_consistency", violations=int(bad_sum.sum()),
                                  total=int(bad_sum.size),
                                  details={"max_band_deviation": float(np.abs(out.visits - out.noisy_visits).max()),
                                           "half_width": E / 2},
                                  claim={"statement": "ntil(s,a) = sum_s' ntil(s,a,s'), ntil >= 0, |ntil(s,a) - "
                                                      "n'(s,a)| <= E/2 (eq. 3-4, the LP's band around n')",
                                         "source": priv.claim.source},
                                  what="sum consistency and the LP's band around n'"))
    P = out.kernel
    bad = int((~(np.all(P >= 0, -1) & (np.abs(P.sum(-1) - 1) < 1e-9))).sum())
    checks.append(invariant_check(id="assumption.valid_transition", violations=bad, total=int(P[..., 0].size),
                                  claim={"statement": "P~ is a distribution (eq. 5, Remark 3.3)",
                                         "source": priv.claim.source}, what="valid P~"))
    return checks


def _integer_variance(weights) -> float:
    """Variance of a symmetric law on the integers k = 0, +-1, +-2, ... with unnormalised weights w(|k|)."""
    k = np.arange(0, 4000, dtype=float)
    w = weights(k)
    return float(2.0 * (k * k * w).sum() / (w[0] + 2.0 * w[1:].sum()))


def event_noise_finding(priv, H: int, tolerance: float = 0.01, event=None) -> dict:
    """Does the declared DpEvent describe the noise the privatizer declares it draws (``noise_variance(H)``, which
    whitebox.noise_scale measures)? The interface fixes the sensitivity of one replaced trajectory (l2 sqrt(2H)
    per family, l1 4H for both families), so an all-Gaussian event of total rho stands for per-count noise
    N(0, sigma^2), sigma^2 = 2H / rho (two families; Bun & Steinke 2016, Prop. 1.6, Lemma 1.7), and an
    all-Laplace event of total eps for Laplace noise of scale b = 4H / eps. The least variance such noise can
    have is that of its integer-valued version (the discrete Gaussian, the two-sided geometric with
    alpha = e^{-1/b}, whose privacy the same event bounds), at most sigma^2 and 2 b^2. A declared variance
    below it by more than ``tolerance`` means the event describes noise that is not drawn, and the PLD of
    whitebox.dp_event certifies a claim the release does not meet (a plug-in drawing noise for H = 1 at every
    horizon while declaring the horizon's event passed every other check).

    ``event``: the DpEvent to hold to the noise (default: the privatizer's own, ``declare(H, 2, 1)``; dp_apvi
    passes the algorithm's ``dp_event(H)``, the event it accounts).

    -> {"H", "status": "consistent" | "inconsistent" | "untied", "text", ...}; untied when the plug-in declares no
    variance or its event is neither all-Gaussian nor all-Laplace."""
    from dpcheck.accounting import closed_form
    v = getattr(priv, "noise_variance", None)
    V = v(H) if callable(v) else None
    cf = closed_form(priv.declare(H, 2, 1).dp_event() if event is None else event)
    if V is None or not V > 0:
        return {"H": H, "status": "untied", "text": "no noise_variance(H) declared: the event is not tied to the noise"}
    if math.isfinite(cf["rho"]) and cf["rho"] > 0:
        sigma2 = 2.0 * H / cf["rho"]
        floor, law = _integer_variance(lambda k: np.exp(-k * k / (2.0 * sigma2))), f"N(0, {sigma2:.4g})"
    elif math.isfinite(cf["epsilon"]) and cf["epsilon"] > 0:
        b = 4.0 * H / cf["epsilon"]
        a = math.exp(-1.0 / b)
        floor, law = 2.0 * a / (1.0 - a) ** 2, f"Laplace(scale {b:.4g})"
    else:
        return {"H": H, "status": "untied", "text": "the DpEvent is neither all-Gaussian nor all-Laplace"}
    bad = V < floor * (1 - tolerance)
    return {"H": H, "status": "inconsistent" if bad else "consistent", "variance": V, "event_noise": law,
            "variance_floor": floor,
            "text": (f"at H={H} the DpEvent describes {law} per count at the interface's sensitivity (variance >= "
                     f"{floor:.4g}, integer-valued version included), but the privatizer declares variance {V:.4g} "
                     f"(whitebox.noise_scale): the event describes noise that is not drawn" if bad else
                     f"at H={H} the declared variance {V:.4g} >= {floor:.4g}, the least of the {law} the event "
                     f"describes")}
