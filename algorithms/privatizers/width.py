"""The confidence width E_{eps,beta} of the count privatizers (docs/derivations.md#widths-e).

E is public and data-independent: it is computed in ``start`` before any data arrives, so it never
affects privacy. It must make the good event of Lemma 5.4 / 5.8 -- ``|N^ - N| <= E/4`` for
every counter and release -- hold with probability >= 1 - beta/3.

Modes (docs/derivations.md#widths-e):
* ``"rigorous"`` (default): Chernoff bounds (A)/(B) on a sum of n i.i.d. Laplace(b) variables and a union
  bound over the ``m = C (K - 1)`` noisy (counter, release) pairs, ``delta = beta / (3 m)``.
  Central: ``E = 4 tau(L, b_c, delta)``; Local: ``E = 4 tau(K - 1, b_l, delta)``.
* ``"calibrated"``: ``E = 4 x`` the Monte-Carlo ``(1 - beta/3)``-quantile of ``max |noise|`` over all
  counters and releases, from simulating the noise processes alone (privacy-free). Our choice: 200
  repetitions by default; the quantile is the empirical one (``numpy.quantile``, method "higher").
* ``"nominal"``: the paper's order expressions with constant 1: central ``(H/eps) log(x)^2``, local
  ``(H/eps) sqrt(K log(x))`` with ``x = H S A T / beta`` (DP-UCBVI, ``T = H K``) or ``x = H S A K / beta``
  for games (``A`` = the joint action count; Qiao & Wang 2024 writes ``K`` inside the log, docs/derivations.md#constants).

Every mode is floored, ``E := max(E, 1)`` (docs/derivations.md#widths-e, Qiao & Wang 2024); the
non-private baseline uses E = 0 and never calls this module.
"""
from __future__ import annotations

import math

import numpy as np

from dpcheck.errors import InputError
from dpcheck.algorithms.privatizers.noise import laplace

WIDTH_MODES = ("rigorous", "calibrated", "nominal")


def laplace_sum_threshold(n: int, b: float, delta: float) -> float:
    """tau(n, b, delta): P(|sum of n i.i.d. Lap(b)| >= tau) <= delta (docs/derivations.md#widths-e).

    (A) lambda = 1/(2b): tau = 2b (log(2/delta) + n log(4/3)), any n >= 1;
    (B) lambda = tau/(4 n b^2): tau = b sqrt(8 n log(2/delta)), valid when n >= log(2/delta).
    The minimum of the applicable thresholds. n = 0 (no noise) gives 0.
    """
    if n <= 0 or b == 0:
        return 0.0
    if not 0 < delta < 1:
        raise InputError(f"delta must lie in (0, 1), got {delta!r}")
    lg = math.log(2.0 / delta)
    tau = 2.0 * b * (lg + n * math.log(4.0 / 3.0))
    if n >= lg:
        tau = min(tau, b * math.sqrt(8.0 * n * lg))
    return tau


def counter_count(H: int, S: int, A: int, rewards: bool = True) -> int:
    """C: visit + transition (+ reward) counters = H S A (S + 2) with rewards, H S A (S + 1) without."""
    return H * S * A * (S + (2 if rewards else 1))


def rigorous_width(mechanism: str, *, H: int, S: int, A: int, K: int, scale: float, beta: float,
                   rewards: bool = True) -> float:
    """The docs/derivations.md#widths-e rigorous E (before the floor) for the central tree or the local sums."""
    from dpcheck.algorithms.privatizers.binary_mechanism import tree_levels
    m = counter_count(H, S, A, rewards) * (K - 1)
    if m == 0:
        return 0.0                                  # K = 1: the only release B(0) = 0 is exact
    delta = beta / (3.0 * m)
    if mechanism == "central":
        n = tree_levels(K)
    elif mechanism == "local":
        n = K - 1
    else:
        raise InputError(f"mechanism must be 'central' or 'local', got {mechanism!r}")
    return 4.0 * laplace_sum_threshold(n, scale, delta)


def nominal_width(mechanism: str, *, H: int, S: int, A: int, K: int, epsilon: float, beta: float,
                  rewards: bool = True) -> float:
    """The paper's order expressions with constant 1 (labelled "nominal"; Assumption 3.1 not guaranteed)."""
    x = H * S * A * (H * K if rewards else K) / beta
    lg = math.log(x)
    if mechanism == "central":
        return (H / epsilon) * lg ** 2
    if mechanism == "local":
        return (H / epsilon) * math.sqrt(K * lg)
    raise InputError(f"mechanism must be 'central' or 'local', got {mechanism!r}")


def simulate_max_noise(mechanism: str, *, counters: int, K: int, scale: float, reps: int,
                       rng: np.random.Generator, block: int = 1 << 20) -> np.ndarray:
    """max over counters and releases k = 2..K of |N^ - N|, simulated from the noise alone, per rep.

    The noise is drawn exactly as the privatizers draw it -- one Laplace(scale) vector over the counters
    per position t = 1..K-1, in that order -- and the release errors follow by recurrence:
    central, err_t = err_{t - lowbit(t)} + eta_t (eta_t: the node that completes at t; so err_t is the
    sum of the noisy nodes of the dyadic decomposition of {1..t}, the tree's B(t) on zero data);
    local, err_t = err_{t-1} + eta_t (a running sum). One pass of O(1) amortised work per (counter, t)
    (dpcheck.algorithms.privatizers._width_kernels), memory bounded by ``block`` draws at a time.
    Returns shape (reps,).
    """
    from dpcheck.algorithms.privatizers._width_kernels import prefix_error_max
    from dpcheck.algorithms.privatizers.binary_mechanism import tree_levels
    if mechanism not in ("central", "local"):
        raise InputError(f"mechanism must be 'central' or 'local', got {mechanism!r}")
    T = K - 1
    out = np.zeros(reps)
    if T <= 0 or scale == 0:
        return out
    n = max(1, min(T, block // max(1, counters)))
    eta = np.empty((n, counters))
    for r in range(reps):
        state = np.zeros((tree_levels(T) + 1, counters))
        maxabs = np.zeros(counters)
        for t0 in range(0, T, n):
            m = min(n, T - t0)
            laplace(rng, scale, (m, counters), out=eta[:m])
            prefix_error_max(eta[:m], t0, mechanism == "central", state, maxabs)
        out[r] = maxabs.max()
    return out


def calibrated_width(mechanism: str, *, H: int, S: int, A: int, K: int, scale: float, beta: float,
                     rng: np.random.Generator, rewards: bool = True, reps: int = 200) -> float:
    """4 x the empirical (1 - beta/3)-quantile of the simulated max noise (labelled "calibrated")."""
    sims = simulate_max_noise(mechanism, counters=counter_count(H, S, A, rewards), K=K, scale=scale,
                              reps=reps, rng=rng)
    return 4.0 * float(np.quantile(sims, 1.0 - beta / 3.0, method="higher"))


def confidence_width(mechanism: str, mode: str, *, H: int, S: int, A: int, K: int, scale: float,
                     epsilon: float, beta: float, rewards: bool = True,
                     rng: np.random.Generator | None = None, reps: int = 200) -> float:
    """E in the given mode, floored at 1."""
    if mode == "rigorous":
        E = rigorous_width(mechanism, H=H, S=S, A=A, K=K, scale=scale, beta=beta, rewards=rewards)
    elif mode == "nominal":
        E = nominal_width(mechanism, H=H, S=S, A=A, K=K, epsilon=epsilon, beta=beta, rewards=rewards)
    elif mode == "calibrated":
        if rng is None:
            raise InputError("the calibrated width needs an rng")
        E = calibrated_width(mechanism, H=H, S=S, A=A, K=K, scale=scale, beta=beta, rng=rng,
                             rewards=rewards, reps=reps)
    else:
        raise InputError(f"width_mode must be one of {WIDTH_MODES}, got {mode!r}")
    return max(E, 1.0)
