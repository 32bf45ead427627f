"""A black-box finding the learned statistics cannot make: a linear combination of a plug-in privatizer's released
stream that carries no noise and moves with the replaced user (noise reused across releases), an exact violation
of any finite epsilon (:func:`null_combination`; :func:`dpcheck.audits.lib.privatizers.stream_degeneracy` runs it on a plug-in, and
:func:`dpcheck.audits.lib.privatizers.plugin_blackbox` FAILs on what it finds).
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from dpcheck.checks import FAIL, INCONCLUSIVE

DEGENERACY_K = 8           # releases of the probe's stream: 3 tree levels, so a node noise reused across one
DEGENERACY_RUNS = 4_000     # streams per side and half (well above the release's dimension, checked below)


def null_combination(stats, pair, *, seed=0, K: int = DEGENERACY_K, runs: int = DEGENERACY_RUNS) -> dict | None:
    """An exact leak that the learned statistics cannot see: a linear combination of the K releases (all of them,
    every coordinate, both views) that carries no noise and moves with the replaced user. A tree whose node noise
    is drawn once per level instead of once per node releases B(1) = c1 + z0, B(2) = c1 + c2 + z1 and
    B(3) = c1 + c2 + c3 + z1 + z0, so B(3) - B(2) - B(1) = c3 - c1 exactly: every single release has the
    right law (the per-coordinate statistics and the accuracy checks pass), and epsilon is infinite.

    The user is first of K (in every tree level she appears in). The release vectors of ``runs`` streams per side
    (worst-case pair) give a pooled covariance; its null directions v (eigenvalues <= 1e-9 x the largest) are
    found on the first half of the streams and tested on the second, fresh half: v.B must be constant on each
    side and differ between the sides. Then {v.B = v.B(D)} has probability 1 under D and 0 under D' on the
    fresh half, an exact violation of any finite epsilon (and of any delta < 1). A post-processing relation
    (N~ from N^) is data-independent, the same on both sides, and is not reported. Returns None, or the
    evidence (the direction's largest entries, the two sides' values).

    ``stats``: the streams (a :class:`dpcheck.audits.lib.privatizers.StreamStatistics` of K releases with the user
    first); ``pair``: the users (x, y). :func:`dpcheck.audits.lib.privatizers.stream_degeneracy` builds both."""
    x, y = pair
    rng = np.random.default_rng([int(seed), 0x5EED, 0xDE6E])

    def streams(user, n):
        out = []
        stats.stream(user, rng, n, lambda t, v: out.append(np.asarray(v, float)))
        return np.concatenate(out, axis=1)            # (n, K x J): every release, every coordinate
    XD, XY = streams(x, 2 * runs), streams(y, 2 * runs)
    dim = XD.shape[1]
    if runs < 10 * dim:                              # a sample covariance of rank < dim has spurious null directions
        return None
    fit = np.concatenate([XD[:runs] - XD[:runs].mean(0), XY[:runs] - XY[:runs].mean(0)])
    C = fit.T @ fit / fit.shape[0]
    w, V = np.linalg.eigh(C)
    top = max(float(w[-1]), 1e-300)
    null = V[:, w <= 1e-9 * top]
    if not null.size:
        return None
    a, b = XD[runs:] @ null, XY[runs:] @ null                 # the fresh halves, projected
    scale = 1e-6 * (1.0 + np.abs(np.concatenate([a, b])).max(0))
    constant = (np.ptp(a, axis=0) <= scale) & (np.ptp(b, axis=0) <= scale)
    apart = np.abs(a.mean(0) - b.mean(0)) > 100 * scale
    hit = np.flatnonzero(constant & apart)
    if not hit.size:
        return None
    v = null[:, hit[0]]
    big = np.argsort(-np.abs(v))[:4]
    J = dim // K
    return {"K": K, "streams_per_side": runs, "dimension": dim, "null_directions": int(null.shape[1]),
            "direction": {f"release {int(i) // J + 1}, coordinate {int(i) % J}": round(float(v[i]), 4) for i in big},
            "value_D": float(a[:, hit[0]].mean()), "value_D_prime": float(b[:, hit[0]].mean())}


def judge_null_combination(check, deg: dict, claim, alpha: float):
    """The black-box ``check`` (not a FAIL) given the evidence ``deg`` of :func:`null_combination`. The event
    "the combination equals its value under D" held in every fresh stream under D and in none under D':
    Clopper-Pearson bounds at alpha/2 each certify eps >= ln((p_lo - delta) / q_hi) (6.99 with 4,000 streams at
    alpha 0.05). FAIL with that bound when it exceeds the claim; else INCONCLUSIVE (the true epsilon is infinite,
    these streams cannot certify it)."""
    from dpcheck.stats import cp_lower, cp_upper
    n = deg["streams_per_side"]
    p_lo, q_hi = float(cp_lower(n, n, alpha / 2)), float(cp_upper(0, n, alpha / 2))
    eps_cert = math.log(max(p_lo - (claim.delta or 0.0), 1e-300) / q_hi)
    learned = check.measured.get("epsilon_lower_bound")
    if eps_cert <= claim.epsilon:
        return replace(check, verdict=INCONCLUSIVE, details=dict(check.details, degenerate_combination=deg),
                       reason=(f"a combination of the released stream carries no noise and moves with the user (in {n} "
                               f"of {n} fresh streams per side), so the true epsilon is infinite; {n} streams certify "
                               f"only eps >= {eps_cert:.4g}, not above the claimed {claim.epsilon:.4g} (more streams: "
                               "DEGENERACY_RUNS)"))
    terms = " + ".join(f"{c:g} x [{k}]" for k, c in deg["direction"].items())
    deg = dict(deg, epsilon_certified=eps_cert, p_lo=p_lo, q_hi=q_hi)
    return replace(check, verdict=FAIL, measured=dict(check.measured, epsilon_lower_bound=eps_cert),
                   details=dict(check.details, degenerate_combination=deg),
                   reason=(f"eps >= {eps_cert:.4g} with {1 - alpha:.0%} confidence, above the claimed {claim.epsilon:.4g}: "
                           f"a combination of the released stream carries no noise and moves with the user ({terms} ... "
                           f"= {deg['value_D']:.6g} under D, {deg['value_D_prime']:.6g} under D' in every one of {n} fresh "
                           f"streams per side, K = {deg['K']}; its true epsilon is infinite): noise reused across "
                           f"releases, e.g. one draw per tree level. The learned statistics alone showed eps_lb = "
                           f"{learned:.4g}"))
