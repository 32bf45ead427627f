"""The privatizer of DP-VAPVI's released regression statistics on its own (``dpcheck audit offline_regression_privatizer``).

:func:`standalone_sensitivities` (Lemma D.1's table), :func:`regression_release_target` (black box, nothing
assumed about a plug-in's noise) and :func:`regression_noise_checks` (the widths of Lemma D.2).
"""
from __future__ import annotations

import math

import numpy as np

from dpcheck.checks import FAIL, INCONCLUSIVE, PASS, Check, probability_check

from dpcheck.audits.lib.privatizers import VARIANCE_RESOLUTION, VARIANCE_TOLERANCE, variance_band
from dpcheck.audits.lib.offline_linear.setup import SOURCE, STATS
from dpcheck.audits.lib.offline_linear.statistics import claimed_sensitivities, sym_vector
from dpcheck.audits.lib.offline_linear.whitebox import release_independence_check


# ============================================================================ the regression privatizer alone
def standalone_sensitivities(H: int, B: float = 1.0, matrix_neighbour: str = "replace") -> dict:
    """The l2 sensitivities DP-VAPVI hands its privatizer (one REPLACED trajectory, ||phi|| <= B): the sensitivities of docs/derivations.md#neighbouring-relation."""
    return claimed_sensitivities(H, B, matrix_neighbour)


def _noise_vectors(noise) -> dict:
    """VAPVINoise -> name -> (runs, H, m): the released noise as iid-coordinate vectors (matrices: sym_vector)."""
    return {"sigma_matrix": sym_vector(np.asarray(noise.N1)), "beta_vector": np.asarray(noise.g1),
            "theta_vector": np.asarray(noise.g2), "lambda_matrix": sym_vector(np.asarray(noise.N2)),
            "w_vector": np.asarray(noise.g3)}


def regression_release_target(priv, *, H: int = 3, d: int = 2, seed: int = 0, pilot: int = 20_000):
    """Black-box AuditTarget on a regression privatizer ALONE: the 5H releases of two statistic sets that differ,
    in every release, by its full l2 sensitivity (a shift of Delta_k on one coordinate; non-adaptive: the
    worst case of the sensitivities of docs/derivations.md#neighbouring-relation for every step at once). Output: the released noise-plus-shift vectors; the
    statistic is learned (:func:`dpcheck.audits.lib.privatizers.offline_plugin_target`), nothing assumed about
    the noise. Returns (target, details)."""
    from dpcheck.audits.lib.privatizers import offline_plugin_target
    sens = standalone_sensitivities(H)
    m = {k: (d * (d + 1) // 2 if k.endswith("matrix") else d) for k in STATS}
    shift = np.concatenate([np.tile(np.r_[sens[k], np.zeros(m[k] - 1)], H) for k in STATS])

    def release(which, rng, size):
        z = _noise_vectors(priv.draw(rng, int(size), H, d, sens))
        x = np.concatenate([z[k].reshape(int(size), -1) for k in STATS], axis=1)
        return x + shift if which == "D'" else x

    t, det = offline_plugin_target(release, ("D", "D'"), -shift, priv.claim,
                                   name=getattr(priv, "name", "regression_privatizer"), seed=seed, pilot=pilot)
    return t, dict(det, H=H, d=d, sensitivities=sens)


def regression_noise_checks(priv, *, H: int = 3, d: int = 2, runs: int, rng, alpha: float, delta: float = 0.1,
                            tolerance: float = 0.1) -> list:
    """The regression privatizer's noise alone, at the sensitivities of docs/derivations.md#neighbouring-relation: whitebox.noise_calibration (measured
    variance of each release vs its declared ``noise_stds``, chi-square interval, judged one-sidedly as
    :func:`noise_calibration_check` (dpcheck.audits.lib.privatizers.variance_band); INCONCLUSIVE if no stds are
    declared), whitebox.noise_independence (one
    draw reused across steps: |corr| beyond the tolerance), assumption.noise_bound (Lemma D.2 with its own
    (E, L) at ``delta``: a probability check over ``runs``)."""
    from scipy import stats as sst
    from dpcheck.stats import pass_alpha
    sens = standalone_sensitivities(H)
    noise = priv.draw(rng, runs, H, d, sens)
    z = _noise_vectors(noise)
    want = priv.noise_stds(H, sens) if callable(getattr(priv, "noise_stds", None)) else None
    src = f"{SOURCE}, docs/derivations.md#noise-calibration / Lemma D.1"
    if want is None:
        cal = Check(id="whitebox.noise_calibration", kind="whitebox", verdict=INCONCLUSIVE,
                    claim={"statement": "each release's noise has the std the privatizer declares", "source": src},
                    measured={"confidence": None, "runs": runs},
                    reason="the privatizer declares no noise_stds(H, sensitivities): no std to compare with")
    else:
        bad, unsure, rows = [], [], {}
        a, a_pass = alpha / 5.0, pass_alpha(alpha) / 5.0
        for k in STATS:
            x = z[k].reshape(-1)
            n, ratio = x.size, float(np.mean(x ** 2)) / want[k] ** 2
            lo, hi = ratio * n / sst.chi2.ppf(1 - a / 2, n), ratio * n / sst.chi2.ppf(a / 2, n)
            plo, phi_ = ratio * n / sst.chi2.ppf(1 - a_pass / 2, n), ratio * n / sst.chi2.ppf(a_pass / 2, n)
            rows[k] = {"declared_std": want[k], "variance_ratio": ratio, "interval": [lo, hi]}
            band = variance_band((lo, hi), (plo, phi_))
            if band in ("low", "high"):
                bad.append(f"{k}: variance {ratio:.3g} x declared (interval [{lo:.3g}, {hi:.3g}]"
                           + (": less noise than declared)" if band == "low" else ")"))
            elif band == "unsure":
                unsure.append(f"{k}: interval [{plo:.3g}, {phi_:.3g}] not within [1 - {VARIANCE_RESOLUTION:g}, "
                              f"1 + {VARIANCE_TOLERANCE:g}] (more runs)")
        cal = Check(id="whitebox.noise_calibration", kind="whitebox",
                    verdict=FAIL if bad else INCONCLUSIVE if unsure else PASS,
                    claim={"statement": "each release's noise has the std the privatizer declares", "source": src},
                    measured={"statistics": rows, "confidence": 1 - alpha, "runs": runs},
                    reason="; ".join(bad or unsure) or
                    f"all 5 releases within [1 - {VARIANCE_RESOLUTION:g}, 1 + {VARIANCE_TOLERANCE:g}] x their declared "
                    "variance "
                    f"({min(r['variance_ratio'] for r in rows.values()):.3f}..{max(r['variance_ratio'] for r in rows.values()):.3f})")
    indep = release_independence_check(z, runs=runs, alpha=alpha, tolerance=tolerance,
                                       source=f"{SOURCE}, footnote 8 (one iid draw per step h: the 5H-fold composition)")
    E, L = priv.widths(H, d, sens, delta)
    g = [np.linalg.norm(np.asarray(x), axis=-1) for x in (noise.g1, noise.g2, noise.g3)]
    nm = [np.abs(np.linalg.eigvalsh(np.asarray(x))).max(-1) for x in (noise.N1, noise.N2)]
    fail = (g[0] > H * L) | (g[1] > L) | (g[2] > L) | (nm[0] > E / 2) | (nm[1] > E / 2)
    bound = probability_check(id="assumption.noise_bound", failures=int(fail.any(axis=1).sum()), runs=runs, beta=delta,
                              alpha=alpha, what="the Lemma D.2 noise bounds with the privatizer's (E, L)",
                              claim={"statement": "w.p. >= 1 - delta, for all h: ||g1|| <= H L, ||g2||, ||g3|| <= L, "
                                                  "||N_i|| <= E/2", "source": f"{SOURCE}, Lemma D.2"},
                              details={"E": E, "L": L, "H": H, "d": d})
    return [cal, indep, bound]
