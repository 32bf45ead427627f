"""Assumption checks of DP-VAPVI (Qiao & Wang 2022, Lemmas D.2, D.3, D.13, Assumption 2.2, Section 2).

:func:`noise_bound_check` (Lemma D.2, and the positive definiteness it needs), :func:`utility_checks`
(penalty validity Lemma D.13 and pessimism Lemma D.3, exact from the true model), :func:`coverage_check`
(kappa, Assumption 2.2), :func:`feature_norm_check` (||phi|| <= 1, Section 2).
"""
from __future__ import annotations

import numpy as np

from dpcheck.checks import FAIL, INCONCLUSIVE, PASS, Check, probability_check, qualify, vacuous

from dpcheck.audits.lib.offline_linear.setup import SOURCE, Setup
from dpcheck.audits.lib.offline_linear.statistics import replicate, true_statistics


# ============================================================================ assumptions
def noise_bound_check(algo, counts, phi, *, runs: int, rng, alpha: float) -> list:
    """assumption.noise_bound (Lemma D.2 / Lemma D.2): w.p. >= 1 - delta, for all h, ||g1_h|| <= H L,
    ||g2_h||, ||g3_h|| <= L and ||(Z + Z^T)/sqrt(2)|| <= E/2 for both matrices; and
    assumption.positive_definite: Sigmatil_h, Lambdatil_h positive definite for all h (part of the same event).
    Noise measured as released minus noiseless (:func:`residuals`)."""
    c = replicate(counts, runs)
    res = algo.run((c, c), phi, rng)
    H = res.values.shape[1] - 1
    true = true_statistics(c, c, phi, res.values, res.sigma2, algo.lam, res.E / 2.0)
    g1 = np.linalg.norm(res.statistics["beta_vector"] - true["beta_vector"], axis=-1)
    g2 = np.linalg.norm(res.statistics["theta_vector"] - true["theta_vector"], axis=-1)
    g3 = np.linalg.norm(res.statistics["w_vector"] - true["w_vector"], axis=-1)
    n1 = np.abs(np.linalg.eigvalsh(res.statistics["sigma_matrix"] - true["sigma_matrix"])).max(-1)
    n2 = np.abs(np.linalg.eigvalsh(res.statistics["lambda_matrix"] - true["lambda_matrix"])).max(-1)
    L, E = res.L, res.E
    fail = (g1 > H * L) | (g2 > L) | (g3 > L) | (n1 > E / 2) | (n2 > E / 2)
    fails = int(fail.any(axis=1).sum())
    claim = {"statement": "w.p. >= 1 - delta, for all h: ||g1|| <= H L, ||g2||, ||g3|| <= L, ||K_i - (E/2) I|| <= E/2",
             "source": f"{SOURCE}, Lemma D.2"}
    det = {"L": L, "E": E, "max_ratio": {"g1/(HL)": float(g1.max() / (H * L)), "g2/L": float(g2.max() / L),
                                         "g3/L": float(g3.max() / L), "N1/(E/2)": float(n1.max() / (E / 2)),
                                         "N2/(E/2)": float(n2.max() / (E / 2))}, "c1": algo.c1, "c2": algo.c2}
    out = [probability_check(id="assumption.noise_bound", failures=fails, runs=runs, beta=algo.delta, alpha=alpha,
                             claim=claim, details=det, what="the Lemma D.2 noise bounds")]
    notpd = int(((res.min_eig_sigma <= 0).any(1) | (res.min_eig_lambda <= 0).any(1)).sum())
    out.append(probability_check(
        id="assumption.positive_definite", failures=notpd, runs=runs, beta=algo.delta, alpha=alpha,
        claim={"statement": "w.h.p. Sigmatil_h = Sigmabar_h + K1_h and Lambdatil_h = Lambdahat_h + K2_h are "
                            "positive definite for all h (K_i PD on the Lemma D.2 event)",
               "source": f"{SOURCE}, Lemma D.2, Algorithm 2, footnote 8"},
        details={"min_eigenvalue_sigma": float(res.min_eig_sigma.min()),
                 "min_eigenvalue_lambda": float(res.min_eig_lambda.min())},
        what="positive definiteness of Sigmatil_h and Lambdatil_h"))
    return out


def coverage_check(setup: Setup, lam: float) -> Check:
    """assumption.coverage (Assumption 2.2): kappa = min_h lambda_min(E_mu[phi phi^T]) > 0, exact from the
    model (instances) or measured on the data (user data: the empirical Gram); also 0 < lambda < kappa."""
    k = setup.kappa
    det = {"kappa": k, "exact": setup.kappa_exact, "next_eigenvalue": setup.next_eigenvalue,
           "kappa_used_by_penalty": setup.kappa_used, "lambda": lam}
    claim = {"statement": "kappa = min_h lambda_min(Sigma^p_h) > 0 (and the theorem takes 0 < lambda < kappa)",
             "source": f"{SOURCE}, Assumption 2.2, Theorem 4.1"}
    meas = {"kappa": k, "confidence": 1.0}
    S, A, d = setup.features.shape
    F = setup.features.reshape(S * A, d)
    rank = int(np.linalg.matrix_rank(F)) if F.size else 0
    det["feature_rank"] = rank
    if not setup.kappa_exact and rank < d:
        # Sigma^p_h = sum d^mu_h(s,a) phi phi^T lies in the span of the features: rank < d => kappa = 0 for EVERY mu
        return Check(id="assumption.coverage", kind="assumption", verdict=FAIL, claim=claim, measured=meas,
                     details=det, reason=f"the features span {rank} < d = {d} dimensions: Sigma^p_h is singular for "
                                         "every behaviour policy, kappa = 0 and Assumption 2.2 fails (from the feature "
                                         "map alone)")
    if k <= 1e-12:
        what = "exactly" if setup.kappa_exact else "empirically (the data's Gram matrix is singular)"
        reason = (f"kappa = 0 {what}: a feature direction is never covered by mu, Assumption 2.2 fails; the "
                  f"theory's Dpen ~ 1/kappa is infinite (Appendix F) -- the penalty uses kappa = {setup.kappa_used:.4g} "
                  "(next eigenvalue), without guarantee")
        v = FAIL if setup.kappa_exact else INCONCLUSIVE
        if not setup.kappa_exact:
            reason = (f"the data's Gram matrix is singular at some step (empirical kappa = 0) although the features span "
                      f"all d = {d} dimensions: the (s,a) the data never visit may have d^mu > 0 and cover the missing "
                      "direction, which the data cannot tell; supply data that visit features spanning R^d at every "
                      f"step (the penalty uses kappa = {setup.kappa_used:.4g}, without guarantee)")
        return Check(id="assumption.coverage", kind="assumption", verdict=v, claim=claim, measured=meas,
                     details=det, reason=reason)
    reason = f"kappa = {k:.4g} > 0 ({'exact' if setup.kappa_exact else 'empirical, from the data'})"
    reason += f"; lambda = {lam:.4g} {'<' if lam < k else '>='} kappa"
    if not setup.kappa_exact:
        reason += ("; kappa > 0 is established: the visited (s,a) have d^mu > 0 and their features already span R^d "
                   "at every step, so Sigma^p_h is positive definite whatever mu does elsewhere")
    c = Check(id="assumption.coverage", kind="assumption", verdict=PASS, claim=claim, measured=meas, details=det,
              reason=reason)
    if not setup.kappa_exact:
        c = qualify(c, "uninformative", "kappa > 0 established; its value is measured on the data, not the behaviour "
                                        "policy's population value")
    return c


def feature_norm_check(setup: Setup, feature_bound: float) -> Check:
    """assumption.feature_norm (Section 2): ||phi(s,a)||_2 <= 1. Appendix F breaks it (sqrt(7)): FAIL with the
    bound B the privacy calibration then uses (privacy still holds with B; the utility analysis does not)."""
    m = setup.max_norm
    ok = m <= 1 + 1e-12
    reason = (f"max ||phi|| = {m:.4g} <= 1" if ok else
              f"max ||phi|| = {m:.4g} > 1: the linear-MDP normalisation of the analysis fails (Appendix F); the noise is "
              f"calibrated for B = {feature_bound:.4g}" + (" (privacy holds)" if feature_bound >= m - 1e-12 else
                                                            " < max ||phi||: the privacy claim FAILS too"))
    return Check(id="assumption.feature_norm", kind="assumption", verdict=PASS if ok else FAIL,
                 claim={"statement": "||phi(s,a)||_2 <= 1 for all (s,a)", "source": f"{SOURCE}, Algorithm 1 linear MDP (Section 2)"},
                 measured={"max_norm": m, "feature_bound": feature_bound, "confidence": 1.0}, reason=reason)


def true_errors(inst, result):
    """(|T_h Vtil_{h+1} - phi^T wtil_h| (runs, H, S, A), V^{pi_hat} (runs, H+1, S), sub-optimality (runs,))
    exact from the true model."""
    from dpcheck.algorithms.envs.planning import optimal_values, policy_values
    mdp = inst.mdp
    TV = mdp.r[None] + np.einsum("hsat,rht->rhsa", mdp.P, result.values[:, 1:])
    err = np.abs(TV - result.bellman)
    Vpi = np.stack([policy_values(mdp, p)[1] for p in result.policy])
    vstar = float(optimal_values(mdp)[1][0] @ mdp.init)
    gap = vstar - Vpi[:, 0] @ mdp.init
    return err, Vpi, gap


def sample_split(inst, K: int, runs: int, rng):
    """(D, D') counts: two independent halves of K trajectories each (Section 2 split=True)."""
    return inst.sample_counts(K, rng, runs=runs, rewards=True), inst.sample_counts(K, rng, runs=runs, rewards=True)


def utility_checks(algo, inst, *, K: int, runs: int, rng, alpha: float, mode: str) -> list:
    """assumption.penalty_validity (Lemma D.13: |T_h Vtil_{h+1} - phi^T wtil_h| <= Gamma_h for all (h,s,a), w.p.
    >= 1 - delta) and assumption.pessimism (Lemma D.3: Vtil_h <= V^{pi_hat}_h for all (h,s), same probability),
    exact from the true model on split data. Vacuous when Gamma >= H - h + 1 everywhere (Qhat = 0)."""
    D, Dp = sample_split(inst, K, runs, rng)
    res = algo.run((D, Dp), inst.features, rng)
    err, Vpi, gap = true_errors(inst, res)
    H = inst.mdp.H
    top = (H - np.arange(H))[None, :, None, None]
    saturated = bool(np.all(res.penalties >= top))
    invalid = int((err > res.penalties + 1e-9).any(axis=(1, 2, 3)).sum())
    pess = int((res.values[:, :H] > Vpi[:, :H] + 1e-9).any(axis=(1, 2)).sum())
    why = (f"{mode} penalties Gamma >= H - h + 1 at every (h,s,a) (Dpen/K = {res.additive:.4g}): Qhat = 0, the "
           "claim holds trivially" if saturated else None)
    det = {"K": K, "mode": mode, "Dpen": res.Dpen, "Dpen_over_K": res.additive, "C": algo.C,
           "mean_suboptimality": float(gap.mean()), "max_error_over_penalty": float(np.max(err / res.penalties))}
    v = probability_check(id="assumption.penalty_validity", failures=invalid, runs=runs, beta=algo.delta, alpha=alpha,
                          claim={"statement": "|T_h Vtil_{h+1}(s,a) - phi^T wtil_h| <= Gamma_h(s,a) = C sqrt(d) "
                                              "||phi||_{Lambdatil_h^-1} + Dpen/K for all (h,s,a), w.p. >= 1 - delta",
                                 "source": f"{SOURCE}, Lemma D.13 / Remark D.14"},
                          details=det, what="penalty validity")
    p = probability_check(id="assumption.pessimism", failures=pess, runs=runs, beta=algo.delta, alpha=alpha,
                          claim={"statement": "Vtil_h(s) <= V^{pi_hat}_h(s) for all (h,s) w.p. >= 1 - delta (the learned "
                                              "value never exceeds the true value of the learned policy)",
                                 "source": f"{SOURCE}, Lemma D.3"},
                          details=det, what="pessimism")
    return [vacuous(v, why), vacuous(p, why)]
