"""Assumption checks of Private-LinOpt-VI / -PO (Zhou 2022): Assumption 2's lambda_min, lambda_max, nu over
repetitions, Lemma 3.1's containment, optimism (Lemma 7.2 / eqs. 3, 7), and Assumption 2 for a stream
privatizer alone (``linear_stream_privatizer``).
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from dpcheck.checks import INCONCLUSIVE, PASS, Check, invariant_check, probability_check, vacuous
from dpcheck.errors import InputError
from dpcheck.audits.lib.linopt.spec import LinOptSpec, REL_TOL, SOURCE


# ----------------------------------------------------------------------------- assumptions
def monitored_run(spec: LinOptSpec, env, *, K: int, runs: int, seed: int):
    """One batch of ``runs`` repetitions with the Assumption 2 figures recorded (checker side)."""
    from dpcheck.parallel import cached_call
    return cached_call("private_linopt.monitored_run", _monitored_run, spec, env, K, runs, seed)


def _monitored_run(spec: LinOptSpec, env, K: int, runs: int, seed: int):
    algo = spec.make(record_estimates=False, record_figures=True)
    return algo.run(env, K, np.random.default_rng(seed), runs=runs)


def assumption_checks(spec: LinOptSpec, env, *, K: int, runs: int, seed: int, alpha: float, res=None,
                      suffix: str = "") -> list:
    """Assumption 2 (Lemmas B.4-B.5) part by part, Lemma 3.1 and optimism (Lemma 7.2 for VI; Lemma 7.2 / eqs. 3, 7 for PO) over
    ``runs`` independent repetitions, each a probability claim checked with exact binomial bounds. ``suffix``
    is appended to every check id (e.g. ".weak_privacy" for a batch at another eps)."""
    res = res if res is not None else monitored_run(spec, env, K=K, runs=runs, seed=seed)
    c = res.constants
    a = spec.alpha
    tol = REL_TOL
    if res.z_eig_min_p is None:
        raise InputError("the Assumption 2 checks need record_figures=True")
    lo = ((res.z_eig_min_p < c.lambda_min_p * (1 - tol)) | (res.z_eig_min_r < c.lambda_min_r * (1 - tol))).any(axis=(1, 2))
    hi = ((res.z_eig_max_p > c.lambda_max_p * (1 + tol)) | (res.z_eig_max_r > c.lambda_max_r * (1 + tol))).any(axis=(1, 2))
    nu = ((res.z_norm_p > c.nu_p * (1 + tol) + tol) | (res.z_norm_r > c.nu_r * (1 + tol) + tol)).any(axis=(1, 2))
    floored = (res.floored_p | res.floored_r).any(axis=(1, 2))
    src = f"{SOURCE}, Assumption 2 with the constants of the proof of Thm 6.5"
    base = {"K": K, "runs": runs, "epsilon": spec.epsilon, "agent": spec.describe(), "constants": c.__dict__,
            "min_eig_Z_over_lambda_min": float(min((res.z_eig_min_p / c.lambda_min_p).min(),
                                                   (res.z_eig_min_r / c.lambda_min_r).min())),
            "max_eig_Z_over_lambda_max": float(max((res.z_eig_max_p / c.lambda_max_p).max(),
                                                   (res.z_eig_max_r / c.lambda_max_r).max())),
            "max_z_norm_over_nu": float(max((res.z_norm_p / max(c.nu_p, 1e-300)).max(),
                                            (res.z_norm_r / max(c.nu_r, 1e-300)).max())),
            "runs_with_floored_Lambda": int(floored.sum())}
    out = [
        probability_check(id="assumption.lambda_min" + suffix, failures=int(lo.sum()), runs=runs, beta=a, alpha=alpha,
                          claim={"statement": "||(Z_h^k)^{-1}|| <= 1/lambda_min (p and r) for all k, h, w.p. >= 1 - alpha",
                                 "source": src}, details=base, what="lambda_min(Z) >= lambda_min"),
        probability_check(id="assumption.lambda_max" + suffix, failures=int(hi.sum()), runs=runs, beta=a, alpha=alpha,
                          claim={"statement": "||Z_h^k|| <= lambda_max (p and r) for all k, h, w.p. >= 1 - alpha",
                                 "source": src}, details=base, what="||Z|| <= lambda_max"),
        probability_check(id="assumption.nu" + suffix, failures=int(nu.sum()), runs=runs, beta=a, alpha=alpha,
                          claim={"statement": "||z_h^k||_{(Z_h^k)^{-1}} <= nu (p and r) for all k, h, w.p. >= 1 - alpha",
                                 "source": src}, details=base, what="||z||_{Z^-1} <= nu"),
    ]
    good = res.good_event
    cont = max(float(res.containment_p.max()), float(res.containment_r.max()))
    out.append(probability_check(
        id="assumption.confidence_set" + suffix, failures=int((~good).sum()), runs=runs, beta=min(1.0, 3 * a), alpha=alpha,
        claim={"statement": "||theta_h - theta_hat_h^k||_{Lambda_h^k} <= beta(alpha) for p and r, all k, h, "
                            "w.p. >= 1 - 3 alpha",
               "source": f"{SOURCE}, Lemma 3.1"},
        details=dict(base, max_containment_ratio=cont, beta_p=res.beta_p, beta_r=res.beta_r),
        what="theta in the confidence ellipsoids"))
    sat = float(res.upper_clip_fraction.mean())
    g = good
    if spec.algorithm == "vi":
        viol = int((res.optimism_gap[g] < -1e-9).sum())
        total = int(res.optimism_gap[g].size)
        statement = "on the good event of Lemma 3.1: Q_h^k >= Q_h^* for all k, h, s, a"
        src2 = f"{SOURCE}, Lemma 7.2"
        what = "Q^k >= Q^* on the good event"
        extra = {"min_optimism_gap": float(res.optimism_gap.min())}
    else:
        bad = (res.iota_min[g] < -1e-9) | (res.iota_excess[g] > 1e-9) | (res.lower_clips[g] > 0)
        viol, total = int(bad.sum()), int(bad.size)
        statement = ("on the good event of Lemma 3.1: 0 <= -iota_h^k <= 2 (Gamma_p + Gamma_r) and the lower clip "
                     "never binds, for all k, h, s, a")
        src2 = f"{SOURCE}, eq. 3 / eq. 7, Lemma 7.2"
        what = "optimism (0 <= -iota <= 2 bonus, no lower clip) on the good event"
        extra = {"min_minus_iota": float(res.iota_min.min()), "max_iota_excess": float(res.iota_excess.max()),
                 "lower_clips": int(res.lower_clips.sum())}
    chk = invariant_check(id="assumption.optimism" + suffix, violations=viol, total=total,
                          claim={"statement": statement, "source": src2},
                          details=dict(base, good_event_runs=int(g.sum()), saturated_fraction=sat, **extra),
                          what=what)
    if total == 0 and chk.verdict == PASS:
        chk = replace(chk, verdict=INCONCLUSIVE, reason="the good event held in no run: optimism not exercised")
    elif sat > 0.99:
        chk = vacuous(chk, f"{sat:.1%} of the Q values are clipped at H-h+1 (noise-dominated regime, docs/derivations.md#audit-modes "
                                      "scale warning): optimism holds by construction")
    out.append(chk)
    return out


# ----------------------------------------------------------------------------- the stream privatizer alone
def random_rows(sizes, runs: int, rng: np.random.Generator):
    """One episode's rows (x_p, y_p, x_r, y_r) per run within Assumption 1's norms: x_p in [0, H]^d1 (so
    ||x_p|| <= sqrt(d1) H), y_p in [0, H]; x_r in [0, 1/sqrt(d2)]^d2 (||x_r|| <= 1), y_r in [0, 1]."""
    H, d1, d2 = sizes.H, sizes.d1, sizes.d2
    return (rng.uniform(0, H, (runs, H, d1)), rng.uniform(0, H, (runs, H)),
            rng.uniform(0, 1, (runs, H, d2)) / math.sqrt(d2), rng.uniform(0, 1, (runs, H)))


def _perturbation(state, tol: float, sums):
    """(Z_p, z_p, Z_r, z_r) of the current release as the checker measures it: the released statistics minus
    ``sums``, the true sums of the rows the checker fed (Lambda = G + Z, u = g + z, module docstring of
    dpcheck.algorithms.linear.stream_privatizer; never the state's ``exact()``, which a bug feeding the wrong
    target shares), and per run whether the state's own ``regularization()`` disagrees with it beyond ``tol``
    relative to the sums' scale, (runs,) bool."""
    released = [np.asarray(x, dtype=np.float64) for x in state.release()]
    exact = [np.asarray(x, dtype=np.float64) for x in sums]
    own = [np.asarray(x, dtype=np.float64) for x in state.regularization()]
    Z = tuple(r - e for r, e in zip(released, exact))
    runs = Z[0].shape[0]
    lying = np.zeros(runs, dtype=bool)
    for z, o, r, e in zip(Z, own, released, exact):
        # the release is a float sum of the true sums and the noise: agreement up to rounding at their scale
        scale = 1.0 + np.abs(r).reshape(runs, -1).max(axis=1) + np.abs(e).reshape(runs, -1).max(axis=1)
        lying |= np.abs(np.broadcast_to(o, z.shape) - z).reshape(runs, -1).max(axis=1) > tol * scale
    return Z, lying


def assumption2_alone_check(priv, sizes, *, runs: int, seed: int, alpha: float, beta: float) -> Check:
    """Assumption 2 for the stream privatizer alone: over ``runs`` independent runs of K releases -- release 1
    (before any data: Lambda^1 = Z^1, the release Algorithm 1 plans episode 1 with) and one after each of the
    K - 1 insertions of random rows within Assumption 1 -- every release's perturbation Z, z has
    lambda_min(Z) >= lambda_min, ||Z|| <= lambda_max and ||z||_{Z^-1} <= nu on both sides, for all k, h, w.p.
    >= 1 - beta (the constants the privatizer declares; exact binomial bounds). The perturbation is measured as
    the release minus the sums of the rows this check fed (:func:`_perturbation`), neither the state's own
    ``regularization()`` nor its ``exact()``: a state that feeds a counter the wrong target, with the same bug in
    ``exact()``, passed at eps >= 100. A run whose ``regularization()`` disagrees with the measured perturbation
    counts as a failed run."""
    rng = np.random.default_rng(seed)
    c = priv.constants(sizes, beta)
    state = priv.start(runs, sizes, rng, beta)
    failed = np.zeros(runs, dtype=bool)
    misreported = np.zeros(runs, dtype=bool)
    H, d1, d2 = sizes.H, sizes.d1, sizes.d2
    sums = [np.zeros((runs, H, d1, d1)), np.zeros((runs, H, d1)), np.zeros((runs, H, d2, d2)), np.zeros((runs, H, d2))]
    worst = {"lambda_min_p": np.inf, "lambda_max_p": 0.0, "nu_p": 0.0,
             "lambda_min_r": np.inf, "lambda_max_r": 0.0, "nu_r": 0.0}
    tol = 1e-9
    for k in range(1, sizes.K + 1):
        if k > 1:                       # release k holds episodes 1..k-1 (Algorithm 1; TreeStatistics)
            x_p, y_p, x_r, y_r = (np.asarray(v, dtype=np.float64) for v in random_rows(sizes, runs, rng))
            state.observe(x_p, y_p, x_r, y_r)
            sums[0] += x_p[..., :, None] * x_p[..., None, :]
            sums[1] += x_p * y_p[..., None]
            sums[2] += x_r[..., :, None] * x_r[..., None, :]
            sums[3] += x_r * y_r[..., None]
        (Zp, zp, Zr, zr), lying = _perturbation(state, 1e-8, sums)
        misreported |= lying
        for side, Z, z, lmin, lmax, nu in (("p", Zp, zp, c.lambda_min_p, c.lambda_max_p, c.nu_p),
                                           ("r", Zr, zr, c.lambda_min_r, c.lambda_max_r, c.nu_r)):
            Z = 0.5 * (Z + np.swapaxes(Z, -1, -2))      # release - exact is symmetric up to rounding
            ev = np.linalg.eigvalsh(Z)                                   # (runs, H, d)
            lo, hi = ev[..., 0], np.abs(ev).max(-1)
            # ||z||_{Z^-1} only where Z is positive definite (elsewhere lambda_min already fails: w = inf)
            Zsafe = np.where((lo > 0)[..., None, None], Z, np.eye(Z.shape[-1]))
            q = np.einsum("rhi,rhi->rh", z, np.linalg.solve(Zsafe, z[..., None])[..., 0])
            w = np.sqrt(np.where(lo > 0, np.maximum(q, 0.0), np.inf))
            failed |= ((lo < lmin * (1 - tol)) | (hi > lmax * (1 + tol)) | (w > nu * (1 + tol))).any(axis=1)
            worst[f"lambda_min_{side}"] = min(worst[f"lambda_min_{side}"], float(lo.min()) / lmin)
            worst[f"lambda_max_{side}"] = max(worst[f"lambda_max_{side}"], float(hi.max()) / lmax)
            worst[f"nu_{side}"] = max(worst[f"nu_{side}"], float(w.max()) / nu if nu > 0 else float(w.max()))
    claim = {"statement": "w.p. >= 1 - alpha, for all k = 1..K, h: lambda_min(Z) >= lambda_min, ||Z|| <= lambda_max, "
                          "||z||_{Z^-1} <= nu (both sides, the privatizer's declared constants; Z, z = release - "
                          "exact sums)",
             "source": f"{SOURCE}, Assumption 2 and Section 6.1 (the noise radii)"}
    chk = probability_check(id="assumption.regularizer", failures=int((failed | misreported).sum()), runs=int(runs),
                            beta=beta, alpha=alpha, claim=claim,
                            details={"constants": c.__dict__, "K": sizes.K, "H": sizes.H, "d1": sizes.d1,
                                     "d2": sizes.d2, "releases_per_run": sizes.K, "worst_ratio_to_declared": worst,
                                     "runs_outside_constants": int(failed.sum()),
                                     "runs_misreporting_regularization": int(misreported.sum()),
                                     "perturbation": "release() minus the sums of the rows the check fed"},
                            what="a release outside the Assumption 2 constants (or misreported by regularization())")
    return chk
