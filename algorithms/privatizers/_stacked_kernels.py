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

from dpcheck.algorithms.privatizers._projection_kernel import lp_row


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
        tot = lp_row(Y[r], 0, S, nv[r], band, Erow[r] / (2.0 * S), network, ys, csum, trans[r], 0)
        visits[r] = tot
    return True, trans, visits
