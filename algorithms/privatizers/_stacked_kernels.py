"""numba kernel of :meth:`dpcheck.algorithms.privatizers.stacked.StackedPrivatizers._release_jointly`'s post-processing.

Row by row, the Section 5.1.1 LP of ``projection._project_columns(with_value=False)`` (band E/4), the shift E/(2S)
and the row sum (``projection._sum_last``), written out as the compiled DP-UCBVI engine does
(algorithms/online/_kernels.py, ``run_episodes``): the same sum of y^+ left to right in the original order, the
same Batcher network for the decreasing sort, the same threshold values. The only values that can differ from
numpy's are signs of zeros in x (numpy's SIMD maximum may return +0.0 where the scalar select keeps -0.0), and the
shift E/(2S) > 0 added to every entry erases them, so trans and visits are numpy's bit for bit
(tests/algorithms/privatizers/test_stacked_release_kernel.py). For 2 <= S < 8 (numpy's pairwise sum is a left fold
there).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True)
def release_rows(Y, nv, Erow, network):
    """Y (M, S) noisy transition counts, nv (M,) noisy visits, Erow (M,) the width E of each row's run.

    Returns (ok, trans (M, S), visits (M,)): ok False (and the outputs unset) if an input is not finite or a
    band E/4 is negative -- the caller then takes the numpy path, which raises projection's InputError.
    """
    M, S = Y.shape
    trans = np.empty((M, S))
    visits = np.empty(M)
    for r in range(M):
        if not (math.isfinite(nv[r]) and math.isfinite(Erow[r]) and Erow[r] / 4.0 >= 0.0):
            return False, trans, visits
        for j in range(S):
            if not math.isfinite(Y[r, j]):
                return False, trans, visits
    ys = np.empty(S)
    csum = np.empty(S)
    for r in range(M):
        band = Erow[r] / 4.0
        shift = Erow[r] / (2.0 * S)
        lo_end = nv[r] - band
        hi_end = nv[r] + band
        infeasible = hi_end < 0.0
        a0 = Y[r, 0]
        g0 = a0 if a0 >= 0.0 else 0.0
        for j in range(1, S):
            a = Y[r, j]
            g0 = g0 + (a if a >= 0.0 else 0.0)
        need = (g0 < lo_end) or (g0 > hi_end)
        target = hi_end if g0 > hi_end else lo_end
        theta = 0.0
        if need and target > 0.0 and not infeasible:
            for j in range(S):
                ys[j] = Y[r, j]
            for p in range(network.shape[0]):               # decreasing: the max goes to the lower index
                i = network[p, 0]
                j = network[p, 1]
                a = ys[i]
                b = ys[j]
                ys[i] = a if a >= b else b
                ys[j] = a if a <= b else b
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
            v = Y[r, j] + theta
            x = (v if v >= 0.0 else 0.0) * keep
            t = x + shift
            trans[r, j] = t
            tot = t if j == 0 else tot + t
        visits[r] = tot
    return True, trans, visits
