"""Example mechanisms with known privacy, vectorised in the ``mechanism(data, rng, size)`` form.

Each factory returns a mechanism; the ``defect`` arguments reproduce the classic bugs that
the black-box auditor must catch (DP-Sniper and StatDP benchmarks):

- ``laplace_count(eps, scale_factor=0.5)``: noise of scale 1/(2 eps), true epsilon 2 eps.
- ``noisy_histogram(eps, scale=eps)``: scale eps instead of 1/eps, true epsilon 1/eps
  (per changed bin; 10 at eps = 0.1, far above DP-Sniper's ln(1/c) = 4.6 cap).
- ``report_noisy_max(eps, return_value=True)``: releasing the noisy maximum instead of its
  index; with Lap(2/eps) noise on k queries that all move by 1 the lower tail of the maximum
  has likelihood ratio e^(k eps / 2) (true epsilon 2.5 eps for k = 5).
"""
from __future__ import annotations

import math

import numpy as np


def laplace_count(eps: float, sensitivity: float = 1.0, scale_factor: float = 1.0):
    """Counting query + Lap(scale_factor * sensitivity / eps): eps-DP when scale_factor >= 1."""
    scale = scale_factor * sensitivity / eps

    def mechanism(count, rng: np.random.Generator, size: int) -> np.ndarray:
        return rng.laplace(float(count), scale, size)
    return mechanism


def gaussian(sigma: float):
    """Query value + N(0, sigma^2): rho-zCDP with rho = Delta^2 / (2 sigma^2) (Bun & Steinke 2016)."""
    def mechanism(value, rng: np.random.Generator, size: int) -> np.ndarray:
        return rng.normal(float(value), sigma, size)
    return mechanism


def geometric(eps: float):
    """Count + two-sided geometric noise, P[Z = z] ~ e^(-eps |z|) (Ghosh et al. 2009): eps-DP, integer outputs.

    Z = G1 - G2 with G1, G2 i.i.d. geometric of success probability 1 - e^-eps.
    """
    p = -math.expm1(-eps)

    def mechanism(count, rng: np.random.Generator, size: int) -> np.ndarray:
        return int(count) + rng.geometric(p, size) - rng.geometric(p, size)
    return mechanism


def noisy_histogram(eps: float, scale: float | None = None):
    """Histogram (counts vector) + i.i.d. Laplace noise per bin; eps-DP (add/remove) at scale 1/eps."""
    scale = 1.0 / eps if scale is None else scale

    def mechanism(counts, rng: np.random.Generator, size: int) -> np.ndarray:
        counts = np.asarray(counts, dtype=float)
        return counts[None, :] + rng.laplace(0.0, scale, (size, counts.size))   # (size, bins)
    return mechanism


def report_noisy_max(eps: float, return_value: bool = False):
    """Report-noisy-max with Lap(2/eps) noise (Dwork & Roth 2014, Claim 3.9): the index is eps-DP
    for queries of sensitivity 1; the noisy maximum *value* is not (the defect)."""
    def mechanism(queries, rng: np.random.Generator, size: int) -> np.ndarray:
        q = np.asarray(queries, dtype=float)
        noisy = q[None, :] + rng.laplace(0.0, 2.0 / eps, (size, q.size))      # (size, k)
        return noisy.max(axis=1) if return_value else noisy.argmax(axis=1)
    return mechanism


def report_noisy_max_exponential(eps: float, return_value: bool = False):
    """Report-noisy-max with Exponential(2/eps) noise (McKenna & Sheldon 2020, Thm 1: the index is eps-DP for
    queries of sensitivity 1; it is permute-and-flip). The noisy maximum *value* is not DP for any eps (the
    defect): the noise is >= 0, so max(q(D)) + Z never falls below max(q(D)), and shifting every query up by 1
    moves that floor."""
    def mechanism(queries, rng: np.random.Generator, size: int) -> np.ndarray:
        q = np.asarray(queries, dtype=float)
        noisy = q[None, :] + rng.exponential(2.0 / eps, (size, q.size))       # (size, k)
        return noisy.max(axis=1) if return_value else noisy.argmax(axis=1)
    return mechanism


def sparse_vector(eps: float, threshold: float = 0.5, c: int = 1):
    """Sparse vector technique (Lyu, Su & Li 2017, Alg. 1): eps-DP for queries of sensitivity 1.

    Noisy threshold T + Lap(2/eps1), eps1 = eps/2; each query + Lap(4c/eps2), eps2 = eps/2; answers
    1 (above) or 0 (below) until c answers are 1, then -1 (aborted) for the rest. Outputs (size, k) int8.
    """
    eps1 = eps2 = eps / 2

    def mechanism(queries, rng: np.random.Generator, size: int) -> np.ndarray:
        q = np.asarray(queries, dtype=float)
        rho = rng.laplace(0.0, 2.0 / eps1, (size, 1))
        above = q[None, :] + rng.laplace(0.0, 4.0 * c / eps2, (size, q.size)) >= threshold + rho   # (size, k)
        before = np.cumsum(above, axis=1) - above          # "above" answers before query i
        out = np.where(above, 1, 0).astype(np.int8)
        out[before >= c] = -1
        return out
    return mechanism


def analytic_gaussian_delta(eps: float, sigma: float, sensitivity: float = 1.0) -> float:
    """Exact delta(eps) of the Gaussian mechanism (Balle & Wang 2018, Thm 8)."""
    from dpcheck.accounting import gaussian_delta
    return gaussian_delta(sigma / sensitivity, eps)


def diffprivlib_laplace(eps: float, sensitivity: float = 1.0):
    """diffprivlib's Laplace mechanism, one output per call (use with ``per_call=True``).

    diffprivlib takes a RandomState, not a Generator; we seed one from the rng dpcheck passes,
    so the draws still come from dpcheck's seed.
    """
    from diffprivlib.mechanisms import Laplace

    def single(value, rng: np.random.Generator):
        rs = np.random.RandomState(int(rng.integers(2**32)))
        return Laplace(epsilon=eps, sensitivity=sensitivity, random_state=rs).randomise(float(value))
    return single


def diffprivlib_geometric(eps: float, sensitivity: int = 1):
    """diffprivlib's two-sided Geometric mechanism, one output per call."""
    from diffprivlib.mechanisms import Geometric

    def single(value, rng: np.random.Generator):
        rs = np.random.RandomState(int(rng.integers(2**32)))
        return Geometric(epsilon=eps, sensitivity=sensitivity, random_state=rs).randomise(int(value))
    return single
