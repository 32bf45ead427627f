"""numba form of one row of the Section 5.1.1 LP (``projection._project_columns(with_value=False)``), shared by the
compiled DP-UCBVI engine (algorithms/online/_kernels.py) and the stacked joint release
(algorithms/privatizers/_stacked_kernels.py). ``inline="always"``: numba pastes it into the caller's loop, so the
row costs no call (a call with array arguments costs more than the row: refcounts).

The arithmetic is numpy's, step for step: the sum of y^+ left to right in the original order, the decreasing sort by
numpy's Batcher network (an insertion sort, same values, where there is none), the threshold found from the top
down (the same th_j values as numpy's forward scan), then x = max(y + theta, 0), t = x + shift and the row sum
left to right.
"""
from __future__ import annotations

from numba import njit


@njit(cache=True, inline="always")
def lp_row(src, off, S, n_row, band, shift, network, ys, csum, dst, doff):
    """Project ``src[off:off + S]`` (noisy counts of one (h, s, a) row, visits ``n_row``) onto the band
    ``|sum - n_row| <= band`` of y^+, add ``shift`` and write the row to ``dst[doff:doff + S]``; returns its sum.
    ``ys``, ``csum``: scratch of length S."""
    lo_end = n_row - band
    hi_end = n_row + band
    infeasible = hi_end < 0.0
    a0 = src[off]
    g0 = a0 if a0 >= 0.0 else 0.0                          # sum y^+ left to right, unsorted (as numpy)
    for j in range(1, S):
        a = src[off + j]
        g0 = g0 + (a if a >= 0.0 else 0.0)
    need = (g0 < lo_end) or (g0 > hi_end)
    target = hi_end if g0 > hi_end else lo_end
    theta = 0.0
    if need and target > 0.0 and not infeasible:
        for j in range(S):
            ys[j] = src[off + j]
        if network.shape[0] > 0:                           # numpy's Batcher network (branch-free)
            for p in range(network.shape[0]):              # decreasing: the max goes to the lower index
                i = network[p, 0]
                j = network[p, 1]
                a = ys[i]
                b = ys[j]
                ys[i] = a if a >= b else b
                ys[j] = a if a <= b else b
        else:                                              # no network (S > 12 or S = 1): insertion sort
            for j in range(1, S):
                v = ys[j]
                i = j
                while i > 0 and ys[i - 1] < v:
                    ys[i] = ys[i - 1]
                    i -= 1
                ys[i] = v
        csum[0] = ys[0]
        for j in range(1, S):
            csum[j] = csum[j - 1] + ys[j]
        # the largest j with ys[j] + th_j >= 0 (j = S when none is): numpy's forward scan keeps the last
        theta = (target - csum[S - 1]) / float(S)
        for j in range(S - 1, -1, -1):
            th = (target - csum[j]) / float(j + 1)
            if ys[j] + th >= 0.0:
                theta = th
                break
    keep = 0.0 if ((need and target <= 0.0) or infeasible) else 1.0
    tot = 0.0
    for j in range(S):
        v = src[off + j] + theta
        t = (v if v >= 0.0 else 0.0) * keep + shift
        dst[doff + j] = t
        tot = t if j == 0 else tot + t
    return tot
