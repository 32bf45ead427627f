"""The five released statistics of DP-VAPVI recomputed with the audit's OWN code (Qiao & Wang 2022, Algorithm 2).

:func:`true_statistics` -- the five noiseless statistics of step h (Algorithm 2 lines 4-6, 9-10) given the
run's own Vtil_{h+1} and sigtil_h (post-processing of earlier releases, so conditioning on them is the adaptive
composition of Lemma D.1); :func:`residuals` -- released minus noiseless, as vectors: a symmetric matrix noise
``N = (Z + Z^T)/sqrt(2)`` becomes (upper off-diagonal entries, diagonal / sqrt(2)), iid N(0, std^2)
(Theorem 4.1 / Lemma D.1). :func:`claimed_stds` -- the per-coordinate std the CLAIM needs: sensitivity /
sqrt(2 rho0), rho0 = rho/(5H), from Lemma D.1's sensitivity table (docs/derivations.md#noise-calibration) --
never from the algorithm's declaration.
"""
from __future__ import annotations

import math

import numpy as np

from dpcheck import accounting

from dpcheck.audits.lib.offline_linear.setup import STATS


# ============================================================================ statistics and residuals
def sym_vector(M: np.ndarray) -> np.ndarray:
    """(..., d, d) symmetric -> (..., d(d+1)/2): upper off-diagonal entries, then diagonal / sqrt(2).
    Its l2 norm is ||M||_F / sqrt(2); the noise (Z + Z^T)/sqrt(2) becomes iid N(0, std^2) (Theorem 4.1 / Lemma D.1)."""
    d = M.shape[-1]
    iu = np.triu_indices(d, 1)
    return np.concatenate([M[..., iu[0], iu[1]], np.diagonal(M, axis1=-2, axis2=-1) / math.sqrt(2.0)], axis=-1)


def true_statistics(D, Dp, phi, values, sigma2, lam: float, shift: float) -> dict:
    """The noiseless five statistics of every step (Algorithm 2), given the run's own Vtil (runs, H+1, S) and
    sigtil^2 (runs, H, S, A); ``shift`` = E/2 is added to the matrices as the algorithm adds it. D, Dp:
    TabularCounts (D: Q regression, Dp: variance). -> name -> (runs, H, ...). Sums over the pairs (s, a) are
    matrix products with the (S A, d) feature table and its (S A, d d) outer products."""
    runs, H = values.shape[0], values.shape[1] - 1
    S, A, d = phi.shape
    F = phi.reshape(S * A, d)
    outer = np.einsum("ni,nj->nij", F, F).reshape(S * A, d * d)
    ridge = (lam + shift) * np.eye(d)
    out = {k: [] for k in STATS}
    for h in range(H):
        Vn = values[:, h + 1]                                                       # (runs, S)
        Tp = Dp.transitions[:, h].reshape(runs, S * A, S)
        T = D.transitions[:, h].reshape(runs, S * A, S)
        w = sigma2[:, h].reshape(runs, S * A)
        out["sigma_matrix"].append((Dp.visits[:, h].reshape(runs, S * A) @ outer).reshape(runs, d, d) + ridge)
        out["beta_vector"].append(np.matmul(Tp, (Vn * Vn)[..., None])[..., 0] @ F)
        out["theta_vector"].append(np.matmul(Tp, Vn[..., None])[..., 0] @ F)
        out["lambda_matrix"].append(((D.visits[:, h].reshape(runs, S * A) / w) @ outer).reshape(runs, d, d) + ridge)
        tgt = (D.reward_sums[:, h].reshape(runs, S * A) + np.matmul(T, Vn[..., None])[..., 0]) / w
        out["w_vector"].append(tgt @ F)
    return {k: np.stack(v, axis=1) for k, v in out.items()}


def residuals(result, D, Dp, phi, lam: float) -> dict:
    """Released minus noiseless statistic, as iid-coordinate vectors: name -> (runs, H, m)."""
    true = true_statistics(D, Dp, phi, result.values, result.sigma2, lam, result.E / 2.0)
    out = {}
    for k in STATS:
        r = result.statistics[k] - true[k]
        out[k] = sym_vector(r) if k.endswith("matrix") else r
    return out


def claimed_sensitivities(H: int, B: float, matrix_neighbour: str) -> dict:
    """l2 sensitivities of the five releases under ONE REPLACED trajectory (Lemma D.1 table)."""
    mat = B * B * (1.0 if matrix_neighbour == "replace" else 1.0 / math.sqrt(2.0))
    return {"sigma_matrix": mat, "beta_vector": 2.0 * H * H * B, "theta_vector": 2.0 * H * B,
            "lambda_matrix": mat, "w_vector": 2.0 * H * B}


def claimed_stds(rho: float, H: int, B: float, matrix_neighbour: str = "replace") -> dict:
    """Per-coordinate noise std the rho-zCDP claim needs: Delta / sqrt(2 rho0), rho0 = rho/(5H) (Section 4, Lemma D.2-3.4)."""
    rho0 = rho / (5.0 * H)
    return {k: accounting.gaussian_sigma(s, rho0) for k, s in claimed_sensitivities(H, B, matrix_neighbour).items()}


def replicate(counts, runs: int):
    """One dataset's counts repeated over ``runs`` (noise differs per run, data does not)."""
    from dpcheck.algorithms.offline import TabularCounts
    rep = lambda x: None if x is None else np.repeat(x, runs, axis=0)
    return TabularCounts(visits=rep(counts.visits), transitions=rep(counts.transitions),
                         reward_sums=rep(counts.reward_sums), n=counts.n)
