"""The exponential mechanism over a finite class, in log space (He & Zhou 2026, Section 2.2).

    Pr[f] = exp(beta S(f)) / sum_g exp(beta S(g))

* :func:`selection_log_probabilities` -- the closed form, via log-sum-exp (stable at scores in the
  thousands and beyond). An audit compares empirical selection frequencies with it.
* :func:`exponential_mechanism` -- one draw per run by the Gumbel-max trick,
  ``argmax_f (beta S(f) + G_f)`` with G_f i.i.d. standard Gumbel from the ``rng`` passed in; the
  draw is exactly distributed as the closed form and never exponentiates a score.
* beta = inf is the non-private argmax of Remark 3.7 / Appendix D, with a documented tie rule: "random"
  (uniform among the exact maximisers, seeded; the PoC-default of docs/private_gfa.md) or "lowest" (lowest entry).
  The uniform tie rule is also the beta -> inf limit of the closed form.
* :func:`chain_log_partition` / :func:`chain_sample` -- backward messages for product classes whose
  score is a chain sum ``u(i_1) - sum_h l_h(i_h, i_{h+1})``: exact sampling in O(sum_h n_h n_{h+1}) instead of
  enumerating prod_h n_h entries.

All arrays have the run axis first.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from dpcheck.errors import InputError

TIE_BREAKING = ("random", "lowest")


def _scores(scores) -> np.ndarray:
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 2 or s.shape[1] == 0:
        raise InputError(f"scores must have shape (runs, N >= 1), got {s.shape}")
    if np.any(np.isnan(s)) or np.any(np.isposinf(s)):
        raise InputError("scores must not contain NaN or +inf")
    return s


def _beta(beta) -> float:
    b = float(beta)
    if math.isnan(b) or b < 0:
        raise InputError(f"the temperature beta_EM must be >= 0 (inf = argmax), got {beta!r}")
    return b


def _shifted(s: np.ndarray, b: float) -> np.ndarray:
    """beta (S - max S) per run: <= 0, never overflows; the shift leaves the distribution unchanged and
    keeps log-probabilities exact when the scores themselves are huge (z - logsumexp(z) would round away
    log 2 next to 1e300). beta = 0 is the uniform distribution."""
    if b == 0:
        return np.where(np.isneginf(s), -np.inf, 0.0)
    with np.errstate(over="ignore", invalid="ignore"):
        d = s - s.max(axis=1, keepdims=True)                 # -inf where the range overflows or S = -inf
    return b * d


def selection_log_probabilities(scores, beta: float) -> np.ndarray:
    """log Pr[f] (runs, N) of the exponential mechanism with temperature ``beta`` (log-softmax).

    beta = inf: log of the uniform distribution on the exact maximisers (-inf elsewhere).
    """
    s = _scores(scores)
    b = _beta(beta)
    if math.isinf(b):
        top = s == s.max(axis=1, keepdims=True)
        with np.errstate(divide="ignore"):
            return np.log(top / top.sum(axis=1, keepdims=True))
    z = _shifted(s, b)
    return z - logsumexp(z, axis=1, keepdims=True)


def argmax_with_ties(scores, rng: np.random.Generator | None, tie_breaking: str = "random") -> np.ndarray:
    """Exact maximiser per run (runs,): "random" = uniform among exact maximisers (one uniform per entry
    from ``rng``), "lowest" = the lowest entry index (no randomness)."""
    s = _scores(scores)
    if tie_breaking not in TIE_BREAKING:
        raise InputError(f"tie_breaking must be one of {TIE_BREAKING}, got {tie_breaking!r}")
    top = s == s.max(axis=1, keepdims=True)
    if tie_breaking == "lowest":
        return np.argmax(top, axis=1)
    keys = rng.random(s.shape)
    return np.argmax(np.where(top, keys, -1.0), axis=1)


def exponential_mechanism(scores, beta: float, rng: np.random.Generator,
                          tie_breaking: str = "random") -> np.ndarray:
    """One independent draw per run (runs,) int from Pr[f] propto exp(beta S(f)) (Gumbel-max).

    Fresh randomness at every call. beta = inf -> :func:`argmax_with_ties`; beta = 0 -> uniform.
    """
    s = _scores(scores)
    b = _beta(beta)
    if math.isinf(b):
        return argmax_with_ties(s, rng, tie_breaking)
    return np.argmax(_shifted(s, b) + rng.gumbel(size=s.shape), axis=1)


# ---------------------------------------------------------------------------------------------------------
# Chain-structured scores of product classes: S(i_1..i_H) = u(i_1) - sum_{h=1}^{H} l_h(i_h, i_{h+1}),
# i_{H+1} = 0 (the single zero function f_{H+1}); u (runs, n_1), l_h (runs, n_h, n_{h+1}).

def _chain_messages(u, losses, beta):
    """Backward log-messages lam_h (runs, n_h): lam_H(i) = -beta l_H(i, 0),
    lam_h(i) = logsumexp_j(-beta l_h(i, j) + lam_{h+1}(j))."""
    lam = [None] * len(losses)
    lam[-1] = -beta * losses[-1][:, :, 0]
    for h in range(len(losses) - 2, -1, -1):
        lam[h] = logsumexp(-beta * losses[h] + lam[h + 1][:, None, :], axis=2)
    return lam


def chain_log_partition(u, losses, beta: float) -> np.ndarray:
    """log sum_f exp(beta S(f)) (runs,) for a chain score, by backward messages."""
    b = _beta(beta)
    if math.isinf(b):
        raise InputError("chain_log_partition needs a finite beta")
    lam = _chain_messages(np.asarray(u, float), [np.asarray(l, float) for l in losses], b)
    return logsumexp(b * np.asarray(u, float) + lam[0], axis=1)


def chain_sample(u, losses, beta: float, rng: np.random.Generator) -> np.ndarray:
    """Exact exponential-mechanism draw (runs, H) of the per-step indices (i_1..i_H) for a chain score.

    Pr[i_1] propto exp(beta u(i_1) + lam_1(i_1)), Pr[i_{h+1} | i_h] propto exp(-beta l_h(i_h, .) + lam_{h+1});
    each conditional by Gumbel-max. beta = inf: max-plus messages, lexicographically smallest maximiser
    (= the lowest entry of the C-ordered product; float ties are exact only when sums coincide bit for bit).
    """
    u = np.asarray(u, dtype=np.float64)
    losses = [np.asarray(l, dtype=np.float64) for l in losses]
    b = _beta(beta)
    runs = u.shape[0]
    H = len(losses)
    r = np.arange(runs)
    out = np.empty((runs, H), dtype=np.int64)
    if math.isinf(b):
        mu = [None] * H
        mu[-1] = -losses[-1][:, :, 0]
        for h in range(H - 2, -1, -1):
            mu[h] = np.max(-losses[h] + mu[h + 1][:, None, :], axis=2)
        out[:, 0] = np.argmax(u + mu[0], axis=1)
        for h in range(H - 1):
            out[:, h + 1] = np.argmax(-losses[h][r, out[:, h]] + mu[h + 1], axis=1)
        return out
    lam = _chain_messages(u, losses, b)
    z = b * u + lam[0]
    out[:, 0] = np.argmax(z + rng.gumbel(size=z.shape), axis=1)
    for h in range(H - 1):
        z = -b * losses[h][r, out[:, h]] + lam[h + 1]
        out[:, h + 1] = np.argmax(z + rng.gumbel(size=z.shape), axis=1)
    return out
