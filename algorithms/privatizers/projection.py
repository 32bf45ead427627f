"""Exact post-processing of noisy counts (Qiao & Wang 2023, Section 5.1.1; Qiao & Wang 2024, Section 5.3; Qiao & Wang 2022, eq. 3; docs/derivations.md#readings).

For every (h, s, a) -- or any leading index -- the noisy transition counts ``y = N^(s,a,.)`` (length S,
possibly negative or fractional) and the noisy visit count ``n = N^(s,a)`` are replaced by the
solution of the linear programme (eq. 4 of DP-UCBVI, eq. 8 of DP-Nash-VI, eq. 3 of DP-APVI)

    minimise_x  max_s' |x_s' - y_s'|   subject to   |sum_s' x_s' - n| <= band,   x >= 0,

with ``band = E/4`` in the online papers and ``band = E_rho/2`` in DP-APVI. The LP is solved exactly
and for all leading axes at once with one sort per row (O(S log S), docs/derivations.md#readings):

* optimal value ``t* = max(t0, t_hi, t_lo)`` with ``t0 = max(0, max(-y))``,
  ``t_hi = (n - band - sum y) / S`` and ``t_lo`` the root of ``sum (y - t)^+ = n + band``;
* canonical optimal point = the Euclidean projection of ``y`` onto the optimal set. On that set the
  projection has the closed form ``x = (y + theta)^+`` with ``theta = 0`` when ``sum y^+`` already lies
  in the band, else ``theta`` the root of ``sum (y + theta)^+ = `` the violated band end. (Derivation:
  the box of the optimal set is ``[max(0, y - t*), y + t*]``; for ``|theta| <= t*`` the paper's
  ``clip(y + theta, l, u)`` equals ``(y + theta)^+`` entry by entry, and the root always has
  ``|theta| <= t*`` because ``sum (y + t*)^+ = hi(t*) >= n - band`` and ``sum (y - t*)^+ = lo(t*) <= n + band``.)
  The root of ``sum (y + theta)^+ = tau`` is the simplex-projection threshold (Held, Wolfe & Crowder
  1974; Duchi et al. 2008), found from the same sort.
* infeasible rows (``n + band < 0``, only outside the good event) fall back to ``x = 0`` (docs/derivations.md#readings).

Shapes: ``y (..., S)``, ``n (...)``; ``band`` a scalar or broadcastable to ``n``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpcheck.errors import InputError


@dataclass(frozen=True)
class ProjectionResult:
    """Solution of the post-processing LP for every leading index.

    counts:     the canonical optimal x = N-bar(s,a,.)  (..., S), non-negative
    value:      the LP optimum t* = max_s' |x_s' - y_s'| (...); 0 on infeasible rows
    infeasible: rows where n + band < 0 (fallback x = 0 used)  (...) bool
    """

    counts: np.ndarray
    value: np.ndarray
    infeasible: np.ndarray


def _simplex_threshold(y_sorted_desc: np.ndarray, csum: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """theta with sum_i (y_i + theta)^+ = tau (tau > 0), from y sorted decreasingly and its cumsum.

    Shapes: y_sorted_desc, csum (M, S); tau (M,). The active set is the top j entries for the largest
    j with y_(j) + (tau - C_j)/j > 0 (the function is increasing, so the largest such j is the right
    segment).
    """
    S = y_sorted_desc.shape[-1]
    j = np.arange(1, S + 1, dtype=float)
    theta_j = (tau[:, None] - csum) / j
    # ">= 0" rather than "> 0": j = 1 gives y_(1) + theta_1 = tau >= 0 even when rounding eats a tiny
    # tau, so an active j always exists; a tie (entry exactly at 0) gives the same theta either way
    active = y_sorted_desc + theta_j >= 0
    jstar = S - 1 - np.argmax(active[:, ::-1], axis=1)      # largest active j
    return np.take_along_axis(theta_j, jstar[:, None], axis=1)[:, 0]


# Column layout for short rows (tabular RL: S of a few states, many (run, h, s, a) rows). numpy's
# sort / cumsum / argmax along a short trailing axis pay a per-row loop (profiled at M = 4,800 rows,
# S = 6: sort 125 us, each cumsum 109 us, the whole row-wise solve 1.56 ms); on the transposed
# (S, M) layout every step is an elementwise op over M rows (~1.3 us each), and a sorting network
# replaces the sort. Same arithmetic in the same order, so the results are bit-identical to the
# row-wise code below (tests/algorithms/privatizers/test_projection.py checks both paths against each other).
_COLUMN_MAX_S = 12
_COLUMN_MIN_ROWS = 64


def _sum_last(x: np.ndarray) -> np.ndarray:
    """x.sum(axis=-1), bit-identical, ~5x faster for a short last axis (profiled 19 vs 104 us at
    (6000, 6)): numpy's pairwise sum adds fewer than 8 terms left to right from -0.0, which is
    exactly the column fold below; from 8 terms on it switches to unrolled partial sums."""
    n = x.shape[-1]
    if n >= 8 or n < 2:
        return x.sum(axis=-1)
    out = x[..., 0] + x[..., 1]
    for j in range(2, n):
        out += x[..., j]
    return out


def _sorting_network(S: int) -> list[tuple[int, int]]:
    """Comparators (i, j), i < j, of Batcher's odd-even merge sort for S inputs (0-1 principle
    checked in tests/algorithms/privatizers/test_projection.py for S <= _COLUMN_MAX_S)."""
    pairs, p = [], 1
    while p < S:
        k = p
        while k >= 1:
            for j in range(k % p, S - k, 2 * k):
                for i in range(min(k, S - j - k)):
                    if (i + j) // (2 * p) == (i + j + k) // (2 * p):
                        pairs.append((i + j, i + j + k))
            k //= 2
        p *= 2
    return pairs


_NETWORKS = {S: _sorting_network(S) for S in range(2, _COLUMN_MAX_S + 1)}


def sorting_network(S: int) -> list[tuple[int, int]]:
    """The comparators the column solve of the Section 5.1.1 LP sorts S values with (empty when S is 1 or
    larger than the column path handles, where insertion sort is used instead)."""
    return list(_NETWORKS.get(S, []))


def _project_columns(Y, nn, bb, with_value: bool = True):
    """The row-wise solve of :func:`project_counts` on columns (S small); returns (x, value, infeasible).

    ``with_value=False`` skips the optimal value t* (value None): the online releases only need the
    point x, and t* is about 40% of the ops."""
    M, S = Y.shape
    lo_end, hi_end = nn - bb, nn + bb
    infeasible = hi_end < 0
    Yt = np.ascontiguousarray(Y.T)                   # (S, M): strided column reads cost ~5x
    # sum y^+ in the original column order (the row path and the compiled engine use the same order):
    # it alone decides which rows need a shift theta, so the sort is skipped when no row does
    g0 = np.maximum(Yt[0], 0.0)
    for j in range(1, S):
        g0 = g0 + np.maximum(Yt[j], 0.0)
    need = (g0 < lo_end) | (g0 > hi_end)
    target = np.where(g0 > hi_end, hi_end, lo_end)
    pos = need & (target > 0) & ~infeasible
    any_pos = bool(np.any(pos))
    value = None
    theta = np.zeros(M)
    if with_value or any_pos:
        ys = [c.copy() for c in Yt]                   # S columns of length M, sorted in place
        for i, j in _NETWORKS[S]:                    # decreasing: the max goes to the lower index
            hi = np.maximum(ys[i], ys[j])
            np.minimum(ys[i], ys[j], out=ys[j])
            ys[i] = hi
        csum = [ys[0]]
        for j in range(1, S):
            csum.append(csum[-1] + ys[j])
    if with_value:
        yp = [np.maximum(c, 0.0) for c in ys]
        cp = [yp[0]]
        for j in range(1, S):
            cp.append(cp[-1] + yp[j])
        t0 = np.maximum(0.0, -ys[-1])
        t_hi = (lo_end - csum[-1]) / S
        # t_lo: t_cand at the first j with t_cand_j >= y+_(j+1) (y+_(S+1) = 0); index 0 when none does
        t_sel = None
        zero = np.zeros(M)
        for j in range(S - 1, -1, -1):
            t_cand = (cp[j] - hi_end) / float(j + 1)
            nxt = yp[j + 1] if j + 1 < S else zero
            t_sel = t_cand if t_sel is None else np.where(t_cand >= nxt, t_cand, t_sel)
        t_lo = np.where(cp[-1] <= hi_end, 0.0, t_sel)
        value = np.where(infeasible, 0.0, np.maximum(np.maximum(t0, t_hi), t_lo))
    if any_pos:
        # _simplex_threshold on every row (discarded where not pos): the largest active j wins;
        # j = S when none is active (argmax of an all-False row)
        sel = (target - csum[S - 1]) / float(S)
        for j in range(S):
            th = (target - csum[j]) / float(j + 1)
            sel = np.where(ys[j] + th >= 0, th, sel)
        theta = np.where(pos, sel, 0.0)
    # x = (y + theta)^+ column by column (a (M,1) broadcast over a length-S axis is ~15x slower)
    x = np.empty((M, S))
    keep = ~((need & (target <= 0)) | infeasible)
    col = np.empty(M)
    for j in range(S):
        np.add(Yt[j], theta, out=col)
        np.maximum(col, 0.0, out=col)
        col *= keep                                  # rows with x = 0 (0 * finite = +0.0)
        x[:, j] = col
    return x, value, infeasible


def project_counts(y, n, band) -> ProjectionResult:
    """Solve ``min max|x - y| s.t. |sum x - n| <= band, x >= 0`` exactly for every leading index.

    y: noisy transition counts (..., S); n: noisy visit counts (...); band: E/4 (online) or
    E_rho/2 (offline), scalar or broadcastable to ``n``, must be >= 0.
    """
    return _project(y, n, band, True)


def _project(y, n, band, with_value: bool) -> ProjectionResult:
    """project_counts; ``with_value=False`` may leave ``value`` None (internal: online releases)."""
    y = np.asarray(y, dtype=float)
    if y.ndim < 1 or y.shape[-1] < 1:
        raise InputError(f"projection: y must have shape (..., S) with S >= 1, got {y.shape}")
    lead, S = y.shape[:-1], y.shape[-1]
    n = np.broadcast_to(np.asarray(n, dtype=float), lead)
    band = np.asarray(band, dtype=float)
    if np.any(band < 0) or not np.all(np.isfinite(band)):
        raise InputError(f"projection: band must be finite and >= 0, got {band}")
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(n))):
        raise InputError("projection: noisy counts contain NaN or infinity")
    band = np.broadcast_to(band, lead)

    Y = y.reshape(-1, S)
    nn = n.reshape(-1)
    bb = band.reshape(-1)
    if 2 <= S <= _COLUMN_MAX_S and Y.shape[0] >= _COLUMN_MIN_ROWS:
        x, value, infeasible = _project_columns(Y, nn, bb, with_value)
        return ProjectionResult(counts=x.reshape(y.shape), value=None if value is None else value.reshape(lead),
                                infeasible=infeasible.reshape(lead))
    lo_end, hi_end = nn - bb, nn + bb
    infeasible = hi_end < 0

    ys = -np.sort(-Y, axis=1)                      # decreasing
    csum = np.cumsum(ys, axis=1)
    total = csum[:, -1]

    # --- optimal value t* (docs/derivations.md#readings steps 2-5) ---------------------------------------------------
    t0 = np.maximum(0.0, -ys[:, -1])
    t_hi = (lo_end - total) / S
    yp = np.maximum(ys, 0.0)                        # (y - t)^+ for t >= 0 only sees positives
    cp = np.cumsum(yp, axis=1)
    j = np.arange(1, S + 1, dtype=float)
    t_cand = (cp - hi_end[:, None]) / j
    nxt = np.concatenate([yp[:, 1:], np.zeros((yp.shape[0], 1))], axis=1)
    first = np.argmax(t_cand >= nxt, axis=1)        # first j with (C_j - c)/j >= y_(j+1)
    t_lo = np.where(cp[:, -1] <= hi_end, 0.0,
                    np.take_along_axis(t_cand, first[:, None], axis=1)[:, 0])
    value = np.maximum(np.maximum(t0, t_hi), t_lo)

    # --- canonical point: Euclidean projection onto the optimal set (docs/derivations.md#readings step 6) -----------
    g0 = np.maximum(Y[:, 0], 0.0)                    # sum y^+ left to right in the original order,
    for j in range(1, S):                            # as the column path and the compiled engine
        g0 = g0 + np.maximum(Y[:, j], 0.0)
    need = (g0 < lo_end) | (g0 > hi_end)
    target = np.where(g0 > hi_end, hi_end, lo_end)
    theta = np.zeros_like(g0)
    pos = need & (target > 0) & ~infeasible
    if np.any(pos):
        theta[pos] = _simplex_threshold(ys[pos], csum[pos], target[pos])
    # target == 0 (n + band == 0 exactly): the only point of the band is x = 0
    zero = need & (target <= 0)
    x = np.maximum(Y + theta[:, None], 0.0)
    x[zero | infeasible] = 0.0
    value = np.where(infeasible, 0.0, value)
    return ProjectionResult(counts=x.reshape(y.shape), value=value.reshape(lead),
                            infeasible=infeasible.reshape(lead))


@dataclass(frozen=True)
class PostProcessed:
    """Output of the online post-processing step (Qiao & Wang 2023, Section 5.1.1 eqs. 4-5).

    transitions: N~(s,a,s') = N-bar(s,a,s') + E/(2S)          (..., S)
    visits:      N~(s,a)    = N-bar(s,a)    + E/2 = sum_s' N~  (...)
    value:       LP optimum t* per row; infeasible: fallback rows.
    """

    transitions: np.ndarray
    visits: np.ndarray
    value: np.ndarray
    infeasible: np.ndarray


def post_process(noisy_transitions, noisy_visits, width: float) -> PostProcessed:
    """N^ -> N~ of DP-UCBVI / DP-Nash-VI: the LP with band E/4, then the shifts E/(2S) and E/2.

    The visit count is the sum of the shifted transition counts, so the identity
    N~(s,a) = sum_s' N~(s,a,s') holds to float rounding (Lemma 5.4 / 5.8). ``width`` = E >= 0.
    Shapes: noisy_transitions (..., S), noisy_visits (...).
    """
    return _post_process(noisy_transitions, noisy_visits, width, True)


def _post_process(noisy_transitions, noisy_visits, width: float, with_value: bool) -> PostProcessed:
    """post_process; ``with_value=False`` may leave ``value`` None (the releases discard it)."""
    E = float(width)
    if not (E >= 0 and np.isfinite(E)):
        raise InputError(f"width E must be a finite number >= 0, got {width!r}")
    res = _project(noisy_transitions, noisy_visits, E / 4.0, with_value)
    S = res.counts.shape[-1]
    trans = res.counts + E / (2.0 * S)
    # sum of the shifted entries rather than N-bar + E/2, so the identity is exact in floating point
    visits = _sum_last(trans)
    return PostProcessed(transitions=trans, visits=visits, value=res.value, infeasible=res.infeasible)


def post_process_offline(noisy_transitions, noisy_visits, width: float) -> PostProcessed:
    """n' -> ntil of DP-APVI (Qiao & Wang 2022, eq. 3): the LP with band E_rho/2 and NO shift.

    The offline inputs are already clipped at 0 (eq. 1), so the LP is always feasible; the
    visit count is defined as the sum of the projected transition counts.
    """
    E = float(width)
    if not (E >= 0 and np.isfinite(E)):
        raise InputError(f"width E must be a finite number >= 0, got {width!r}")
    res = project_counts(noisy_transitions, noisy_visits, E / 2.0)
    return PostProcessed(transitions=res.counts, visits=res.counts.sum(axis=-1), value=res.value,
                         infeasible=res.infeasible)
