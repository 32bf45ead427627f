"""numba kernel of one backward step of :meth:`dpcheck.algorithms.games.dp_nash_vi.DPNashVI.plan`.

The numpy ``plan`` pays a few dozen array calls per step h whatever the batch size, and the batched simplex of
``cce.simplex_cce`` a few more per pivot; at the audits' sizes (S = 2, A = B = 2, 16-128 runs) that overhead is
most of an episode (benchmarks/results/audit_scaling.md). This kernel does one step for every run in one call:

1. the products P~Vb, P~Vu, P~Vm^2 (sums over s' in index order), the bonuses gamma and Gamma (line 8-9),
   Qb and Qu (lines 10-11) with the non-private convention Qb = H, Qu = 0 where a count is zero;
2. the CCE of each stage game (line 14) as in ``cce.solve_cce``: a pure profile (the first in row-major (a, b)
   order) if there is one; else last episode's CCE of the same (h, s) if it still passes the verification; else
   the tableau simplex of ``cce.simplex_cce`` on ``G = M / max|M| + 2`` (Dantzig's rule for ``2 (m + d)`` pivots,
   then Bland's), warm-started from the final basis of the same stage game's last solve where that basis is
   non-singular and primal feasible. Every solution is verified (``max M pi <= tol``); an instance whose simplex
   hit the iteration cap or failed the verification gets status NEEDS_FALLBACK, and the caller solves it with
   HiGHS (``cce.highs_cce``) as ``solve_cce`` does.

Each stage game is solved on its own, in float64, with sums in index order: the result agrees with the numpy
path to rounding (tests/algorithms/games/test_plan_kernel.py), not bit for bit (BLAS may fuse the products), and
may pick a different CCE where a stage game has several and rounding breaks a tie differently. Any CCE
satisfies the analysis (docs/derivations.md#readings). The numpy path stays the reference and the fallback:
``DPNashVI`` uses this kernel only when numba is installed and none of the planning methods (``bonuses``,
``upper_q``, ``lower_q``, ``cce``) is overridden, so a subclass with a planted defect runs its own code.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

PURE, HINT, SIMPLEX, NEEDS_FALLBACK = 0, 1, 2, 3


@njit(cache=True)
def _constraints(qb, qu, M):
    """M (A + B, A B) of cce.constraint_matrix for one stage game."""
    A, B = qb.shape
    for ap in range(A):
        for a in range(A):
            for b in range(B):
                M[ap, a * B + b] = qb[ap, b] - qb[a, b]
    for bp in range(B):
        for a in range(A):
            for b in range(B):
                M[A + bp, a * B + b] = qu[a, b] - qu[a, bp]


@njit(cache=True)
def _residual(M, pi):
    """max_i (M pi)_i."""
    m, d = M.shape
    worst = -np.inf
    for i in range(m):
        acc = 0.0
        for j in range(d):
            acc += M[i, j] * pi[j]
        if acc > worst:
            worst = acc
    return worst


@njit(cache=True)
def _solve_basis(T, b0, m, out):
    """out[:m, :] = B^-1 T[:m, :] with B = T[:m, b0] (Gaussian elimination, partial pivoting). False if B is
    (numerically) singular."""
    ncol = T.shape[1]
    W = np.empty((m, m + ncol))
    for r in range(m):
        for j in range(m):
            W[r, j] = T[r, b0[j]]
        for c in range(ncol):
            W[r, m + c] = T[r, c]
    for j in range(m):
        p = j
        big = abs(W[j, j])
        for r in range(j + 1, m):
            if abs(W[r, j]) > big:
                big = abs(W[r, j])
                p = r
        if not (big > 1e-12):
            return False
        if p != j:
            for c in range(m + ncol):
                t = W[j, c]
                W[j, c] = W[p, c]
                W[p, c] = t
        piv = W[j, j]
        for c in range(j, m + ncol):
            W[j, c] /= piv
        for r in range(m):
            if r != j:
                f = W[r, j]
                if f != 0.0:
                    for c in range(j, m + ncol):
                        W[r, c] -= f * W[j, c]
    for r in range(m):
        for c in range(ncol):
            out[r, c] = W[r, m + c]
    return True


@njit(cache=True)
def _simplex(M, basis, warm, T, rows, x):
    """CCE of one stage game by the tableau simplex of cce.simplex_cce (max 1'x, G x <= 1, x >= 0 with
    G = M / max|M| + 2; pi = x / sum x). basis (m,) in/out: a warm start if ``warm`` (used where non-singular
    and primal feasible), the final basis on return. Returns converged; pi is left in x[:d]."""
    m, d = M.shape
    ncol = d + m + 1
    scale = 0.0
    for i in range(m):
        for j in range(d):
            if abs(M[i, j]) > scale:
                scale = abs(M[i, j])
    if not (scale > 0.0):
        scale = 1.0
    T[:, :] = 0.0
    for i in range(m):
        for j in range(d):
            T[i, j] = M[i, j] / scale + 2.0
        T[i, d + i] = 1.0
        T[i, ncol - 1] = 1.0
    for j in range(d):
        T[m, j] = -1.0
    used = False
    if warm:
        ok = True
        for i in range(m):
            if basis[i] < 0 or basis[i] >= d + m:
                ok = False
        if ok and _solve_basis(T, basis, m, rows):
            for i in range(m):
                v = rows[i, ncol - 1]
                if not (v >= -1e-12) or not math.isfinite(v):
                    ok = False
            for i in range(m):
                for c in range(ncol):
                    if not math.isfinite(rows[i, c]):
                        ok = False
            if ok:
                # objective row minus sum_i obj[basis_i] * (B^-1 [G | I | 1])_i, with obj[basis_i] read before
                # the row is updated (in place, a basic column c < a later one would change obj[basis_i]
                # midway: the warm start then "converged" to a non-CCE and every such game fell back to HiGHS)
                cb = np.empty(m)
                for i in range(m):
                    cb[i] = T[m, basis[i]]
                for c in range(ncol):
                    acc = 0.0
                    for i in range(m):
                        acc += cb[i] * rows[i, c]
                    T[m, c] = T[m, c] - acc
                for i in range(m):
                    for c in range(ncol):
                        T[i, c] = rows[i, c]
                used = True
    if not used:
        for i in range(m):
            basis[i] = d + i
    max_iter = 50 * (m + d)
    bland_after = 2 * (m + d)
    tol = 1e-12
    nv = d + m
    converged = False
    for it in range(max_iter):
        enter = -1
        if it < bland_after:
            best = -tol
            for c in range(nv):
                if T[m, c] < best:
                    best = T[m, c]
                    enter = c
        else:
            for c in range(nv):
                if T[m, c] < -tol:
                    enter = c
                    break
        if enter < 0:
            converged = True
            break
        best = np.inf
        for i in range(m):
            if T[i, enter] > tol:
                rt = T[i, ncol - 1] / T[i, enter]
                if rt < best:
                    best = rt
        # Bland's tie-break: among the minimum-ratio rows, the one whose basic variable has the lowest index
        leave = -1
        for i in range(m):
            if T[i, enter] > tol and T[i, ncol - 1] / T[i, enter] <= best * (1 + 1e-12) + 1e-15:
                if leave < 0 or basis[i] < basis[leave]:
                    leave = i
        if leave < 0:
            break                                       # unbounded: cannot happen (G >= 1); caller falls back
        piv = T[leave, enter]
        for c in range(ncol):
            T[leave, c] /= piv
        for i in range(m + 1):
            if i != leave:
                f = T[i, enter]
                if f != 0.0:
                    for c in range(ncol):
                        T[i, c] -= f * T[leave, c]
        basis[leave] = enter
    for j in range(d + m):
        x[j] = 0.0
    for i in range(m):
        x[basis[i]] = T[i, ncol - 1]
    tot = 0.0
    for j in range(d):
        if x[j] < 0.0:
            x[j] = 0.0
        tot += x[j]
    if not (tot > 0.0):
        for j in range(d):
            x[j] = 1.0 / d
        return False
    for j in range(d):
        x[j] /= tot
    return converged


@njit(cache=True)
def plan_step(r_h, P, N, Vb1, Vu1, E, iota, C1, C2, H, unvisited, hint, use_hint, basis, use_basis, tol,
              Qb, Qu, pi, Vb, Vu, status, residual):
    """One backward step h for every run (in place on the outputs).

    r_h (S, A, B); P (runs, S, A, B, S) = P~_h; N (runs, S, A, B) = the bonus counts (> 0); Vb1, Vu1 (runs, S)
    = Vb_{h+1}, Vu_{h+1}; E (runs,) the widths; unvisited (runs, S, A, B) bool (all False if unused); hint
    (runs, S, A, B) last episode's policy (read if use_hint); basis (runs, S, A + B) in/out (warm starts if
    use_basis; -1 where another stage settled the game, as CCESolution.basis); tol = 1e-8 H.
    Out: Qb, Qu, pi (runs, S, A, B); Vb, Vu (runs, S); status (runs, S) in PURE / HINT / SIMPLEX /
    NEEDS_FALLBACK; residual (runs, S) = max M pi.
    """
    runs, S, A, B, S2 = P.shape
    m, d = A + B, A * B
    M = np.empty((m, d))
    T = np.empty((m + 1, d + m + 1))
    rows = np.empty((m, d + m + 1))
    x = np.empty(d + m)
    cand = np.empty(d)
    qb = np.empty((A, B))
    qu = np.empty((A, B))
    bas = np.empty(m, dtype=np.int64)
    for i in range(runs):
        hse = H * S * E[i] * iota + H * H * S * iota
        for s in range(S):
            for a in range(A):
                for b in range(B):
                    pvb = 0.0
                    pvu = 0.0
                    pv2 = 0.0
                    for t in range(S2):
                        p = P[i, s, a, b, t]
                        vm = 0.5 * (Vb1[i, t] + Vu1[i, t])
                        pvb += p * Vb1[i, t]
                        pvu += p * Vu1[i, t]
                        pv2 += p * (vm * vm)
                    pv = 0.5 * (pvb + pvu)
                    var = pv2 - pv * pv
                    if var < 0.0:
                        var = 0.0
                    inv_n = 1.0 / N[i, s, a, b]
                    gamma = (C1 / H) * (pvb - pvu)
                    Gam = C2 * (math.sqrt(var * (iota * inv_n)) + hse * inv_n)
                    if unvisited[i, s, a, b]:
                        qb[a, b] = H
                        qu[a, b] = 0.0
                    else:
                        qb[a, b] = min(r_h[s, a, b] + pvb + gamma + Gam, H)
                        qu[a, b] = max(r_h[s, a, b] + pvu - gamma - Gam, 0.0)
                    Qb[i, s, a, b] = qb[a, b]
                    Qu[i, s, a, b] = qu[a, b]
            # 1. a pure profile: the first (a, b) in row-major order that no player gains to leave
            found = -1
            for a in range(A):
                for b in range(B):
                    if found < 0:
                        ok = True
                        for ap in range(A):
                            if qb[ap, b] > qb[a, b]:
                                ok = False
                        for bp in range(B):
                            if qu[a, bp] < qu[a, b]:
                                ok = False
                        if ok:
                            found = a * B + b
            for j in range(d):
                pi[i, s, j // B, j % B] = 0.0
            if found >= 0:
                a, b = found // B, found % B
                pi[i, s, a, b] = 1.0
                gain_max = -np.inf
                for ap in range(A):
                    gain_max = max(gain_max, qb[ap, b] - qb[a, b])
                gain_min = -np.inf
                for bp in range(B):
                    gain_min = max(gain_min, qu[a, b] - qu[a, bp])
                residual[i, s] = max(gain_max, gain_min)
                status[i, s] = PURE
            else:
                _constraints(qb, qu, M)
                settled = False
                # 2. last episode's CCE of this stage game, if it is still one
                if use_hint:
                    for j in range(d):
                        cand[j] = hint[i, s, j // B, j % B]
                    res = _residual(M, cand)
                    if res <= tol:
                        for j in range(d):
                            pi[i, s, j // B, j % B] = cand[j]
                        residual[i, s] = res
                        status[i, s] = HINT
                        settled = True
                # 3. the simplex, warm-started from this stage game's last basis
                if not settled:
                    for k in range(m):
                        bas[k] = basis[i, s, k]
                    conv = _simplex(M, bas, use_basis, T, rows, x)
                    for k in range(m):
                        basis[i, s, k] = bas[k]
                    res = _residual(M, x)
                    if conv and res <= tol:
                        for j in range(d):
                            pi[i, s, j // B, j % B] = x[j]
                        residual[i, s] = res
                        status[i, s] = SIMPLEX
                    else:
                        residual[i, s] = np.inf
                        status[i, s] = NEEDS_FALLBACK
            vb = 0.0
            vu = 0.0
            for a in range(A):
                for b in range(B):
                    vb += pi[i, s, a, b] * qb[a, b]
                    vu += pi[i, s, a, b] * qu[a, b]
            Vb[i, s] = vb
            Vu[i, s] = vu
