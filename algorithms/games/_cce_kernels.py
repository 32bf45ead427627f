"""numba kernel of the pivoting loop of :func:`dpcheck.algorithms.games.cce.simplex_cce`.

The numpy loop pivots all instances of a batch together, one iteration at a time, until every instance is
done; a done instance gets a zero update (``T -= 0 * piv_row``). This kernel keeps that iteration-major
order and repeats the loop's arithmetic element by element in the same order -- the same entering column
(Dantzig's ``argmin``, first minimum, first NaN; Bland's first negative reduced cost after ``bland_after``
iterations), the same ratio test with numpy's NaN-propagating ``min`` and the same tie-break on the basis
index, ``piv_row = T[leave] / pivval`` and ``T[r] - f_r * piv_row`` with ``f_leave = pivval - 1`` -- so it
returns the same tableau bit for bit (tests/algorithms/games/test_cce_kernel.py holds it to that). It has no
reductions whose summation order could differ (only divisions, products, differences, comparisons).

The zero updates of done instances are kept too (they can flip the sign of a zero, and turn an infinity
into NaN); once one leaves an instance's tableau unchanged bit for bit, every later one does as well (the
same tableau gives the same pivot row), so the instance is frozen and skipped from then on.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True)
def _entering(T, i, m, nv, it, bland_after, tol):
    """(entering column, done) of instance ``i`` at iteration ``it``, as the numpy loop decides them."""
    if it < bland_after:
        enter = 0
        best = T[i, m, 0]
        if not math.isnan(best):
            for c in range(1, nv):
                v = T[i, m, c]
                if math.isnan(v):                   # numpy's argmin: the first NaN wins
                    enter = c
                    break
                if v < best:
                    best = v
                    enter = c
        return enter, T[i, m, enter] >= -tol
    for c in range(nv):
        if T[i, m, c] < -tol:
            return c, False
    return 0, True


@njit(cache=True)
def pivot_loop(T, basis, max_iter, bland_after, tol, done):
    """Run the simplex iterations of ``simplex_cce`` on T (n, m+1, ncol) and basis (n, m), in place.

    done (n,) bool, out: each instance's done flag at the last check (the numpy loop's ``done``).
    Returns True if the loop stopped because every instance was done (numpy's ``break``), False if it
    hit ``max_iter``.
    """
    n, m1, ncol = T.shape
    m = m1 - 1
    nv = ncol - 1                                   # columns [x | slack]; the last one is the rhs
    big = np.iinfo(np.int64).max
    frozen = np.zeros(n, dtype=np.bool_)
    enter = np.zeros(n, dtype=np.int64)
    ratio = np.empty(m)
    piv_row = np.empty(ncol)
    factor = np.empty(m1)
    thr_mul = 1 + 1e-12
    for it in range(max_iter):
        all_done = True
        for i in range(n):
            if frozen[i]:
                continue
            e, dn = _entering(T, i, m, nv, it, bland_after, tol)
            enter[i] = e
            done[i] = dn
            if not dn:
                all_done = False
        if all_done:
            return True
        for i in range(n):
            if frozen[i]:
                continue
            e = enter[i]
            dn = done[i]
            # ratio test: rhs / col where col > tol, else inf; numpy's min propagates NaN
            best = np.inf
            isnan_best = False
            for r in range(m):
                c = T[i, r, e]
                q = T[i, r, ncol - 1] / c if c > tol else np.inf
                ratio[r] = q
                if math.isnan(q):
                    isnan_best = True
                elif q < best:
                    best = q
            if isnan_best:
                best = np.nan
            thr = best * thr_mul + 1e-15
            leave = 0
            lb = big
            for r in range(m):
                if ratio[r] <= thr and basis[i, r] < lb:
                    lb = basis[i, r]
                    leave = r
            pivval = T[i, leave, e]
            div = 1.0 if dn else pivval
            for c in range(ncol):
                piv_row[c] = T[i, leave, c] / div
            if dn:
                # the zero update: T - 0 * piv_row; frozen once it changes no bit
                changed = False
                for r in range(m1):
                    for c in range(ncol):
                        old = T[i, r, c]
                        new = old - 0.0 * piv_row[c]
                        if new != old or (new == 0.0 and math.copysign(1.0, new) != math.copysign(1.0, old)):
                            changed = True
                        T[i, r, c] = new
                if not changed:
                    frozen[i] = True
                continue
            for r in range(m1):
                factor[r] = T[i, r, e]
            factor[leave] = pivval - 1.0
            for r in range(m1):
                f = factor[r]
                for c in range(ncol):
                    T[i, r, c] = T[i, r, c] - f * piv_row[c]
            basis[i, leave] = e
    return False


@njit(cache=True)
def pure_profiles(qb, qu):
    """:func:`~dpcheck.algorithms.games.cce.pure_cce` and the all-pure residual of ``solve_cce`` for qb, qu (n, A, B).

    Returns (found (n,) bool, j (n,) the first pure CCE in a*B + b order (0 if none), residual (n,)): residual is
    ``max(max_a' qb[a', b] - qb[a, b], qu[a, b] - min_b' qu[a, b'])`` at j, numpy's NaN-propagating max/min.
    """
    n, A, B = qb.shape
    found = np.zeros(n, dtype=np.bool_)
    jout = np.zeros(n, dtype=np.int64)
    residual = np.empty(n)
    colmax = np.empty(B)
    rowmin = np.empty(A)
    for i in range(n):
        for b in range(B):
            v = qb[i, 0, b]
            for a in range(1, A):
                w = qb[i, a, b]
                if math.isnan(v):
                    break
                if math.isnan(w) or w > v:
                    v = w
            colmax[b] = v
        for a in range(A):
            v = qu[i, a, 0]
            for b in range(1, B):
                w = qu[i, a, b]
                if math.isnan(v):
                    break
                if math.isnan(w) or w < v:
                    v = w
            rowmin[a] = v
        j = 0
        for a in range(A):
            for b in range(B):
                if qb[i, a, b] >= colmax[b] and qu[i, a, b] <= rowmin[a]:
                    found[i] = True
                    j = a * B + b
                    break
            if found[i]:
                break
        jout[i] = j
        a, b = j // B, j % B
        rmax = colmax[b] - qb[i, a, b]
        rmin = qu[i, a, b] - rowmin[a]
        residual[i] = rmax if (rmax >= rmin or math.isnan(rmax)) else rmin
    return found, jout, residual


@njit(cache=True)
def constraint_rows(qb, qu):
    """:func:`~dpcheck.algorithms.games.cce.constraint_matrix` of qb, qu (n, A, B): M (n, A + B, A * B)."""
    n, A, B = qb.shape
    M = np.empty((n, A + B, A * B))
    for i in range(n):
        for a2 in range(A):
            for a in range(A):
                for b in range(B):
                    M[i, a2, a * B + b] = qb[i, a2, b] - qb[i, a, b]
        for b2 in range(B):
            for a in range(A):
                for b in range(B):
                    M[i, A + b2, a * B + b] = qu[i, a, b] - qu[i, a, b2]
    return M


@njit(cache=True)
def slack_tableau(M):
    """The slack-basis tableau of ``simplex_cce`` for M (n, m, d): T (n, m + 1, d + m + 1) and basis (n, m).

    ``G = M / s + 2`` with ``s = max |M|`` (numpy's NaN-propagating max; 1 where s is not > 0), ``[G | I | 1]``
    above the objective row ``[-1 ... -1 | 0 | 0]``.
    """
    n, m, d = M.shape
    ncol = d + m + 1
    T = np.zeros((n, m + 1, ncol))
    basis = np.empty((n, m), dtype=np.int64)
    for i in range(n):
        s = abs(M[i, 0, 0])
        for r in range(m):
            for c in range(d):
                v = abs(M[i, r, c])
                if math.isnan(s):
                    break
                if math.isnan(v) or v > s:
                    s = v
        if not s > 0:
            s = 1.0
        for r in range(m):
            for c in range(d):
                T[i, r, c] = M[i, r, c] / s + 2.0
            T[i, r, d + r] = 1.0
            T[i, r, ncol - 1] = 1.0
            basis[i, r] = d + r
        for c in range(d):
            T[i, m, c] = -1.0
    return T, basis


@njit(cache=True)
def basis_columns(T, basis0, m):
    """B (n, m, m) with ``B[i, r, j] = T[i, r, basis0[i, j]]``: the warm start's basis matrices (a copy)."""
    n = T.shape[0]
    B = np.empty((n, m, m))
    for i in range(n):
        for r in range(m):
            for j in range(m):
                B[i, r, j] = T[i, r, basis0[i, j]]
    return B


@njit(cache=True)
def primal_feasible(rows):
    """``(rows[:, :, -1] >= -1e-12).all(axis=1) & isfinite(rows).all(axis=(1, 2))`` of rows (n, m, ncol)."""
    n, m, ncol = rows.shape
    ok = np.ones(n, dtype=np.bool_)
    for i in range(n):
        for r in range(m):
            if not rows[i, r, ncol - 1] >= -1e-12:
                ok[i] = False
                break
            for c in range(ncol):
                if not math.isfinite(rows[i, r, c]):
                    ok[i] = False
                    break
            if not ok[i]:
                break
    return ok


@njit(cache=True)
def objective_coefficients(T, idx, b0, m):
    """``T[idx, m, :][k, b0[k]]`` (k, m): the objective row's entries at the warm start's basic columns."""
    k = idx.shape[0]
    out = np.empty((k, 1, m))
    for q in range(k):
        for j in range(m):
            out[q, 0, j] = T[idx[q], m, b0[q, j]]
    return out


@njit(cache=True)
def warm_write(T, basis, idx, b0, rows, prod):
    """In place: ``T[idx, :m] = rows``, ``T[idx, m] = T[idx, m] - prod[:, 0]``, ``basis[idx] = b0``."""
    m = rows.shape[1]
    ncol = T.shape[2]
    for q in range(idx.shape[0]):
        i = idx[q]
        for c in range(ncol):
            T[i, m, c] = T[i, m, c] - prod[q, 0, c]
        for r in range(m):
            for c in range(ncol):
                T[i, r, c] = rows[q, r, c]
            basis[i, r] = b0[q, r]


@njit(cache=True)
def basic_solution(T, basis):
    """x (n, ncol - 1): x[i, basis[i, r]] = T[i, r, -1] (the rhs), 0 elsewhere (``np.put_along_axis`` into zeros)."""
    n, m1, ncol = T.shape
    x = np.zeros((n, ncol - 1))
    for i in range(n):
        for r in range(m1 - 1):
            x[i, basis[i, r]] = T[i, r, ncol - 1]
    return x
