"""Coarse correlated equilibria of the DP-Nash-VI stage games (Qiao & Wang 2024, Algorithm 1 line 14, line 14).

Input: two ``A x B`` matrices per stage game, ``Qb`` (the max-player's optimistic payoff) and ``Qu``
(the min-player's pessimistic cost). Output: ``pi in Delta(A x B)`` with

    sum pi Qb >= max_{a'} sum_{a,b} pi(a,b) Qb(a',b)     (max-player: no unilateral gain)
    sum pi Qu <= min_{b'} sum_{a,b} pi(a,b) Qu(a,b')     (min-player: no unilateral gain)

i.e. ``M pi <= 0`` with the ``(A + B) x AB`` constraint matrix of :func:`constraint_matrix`.

How it is solved (all stage games of a step, and all runs, at once; no per-(h,s) solver start-up):

1. Pure profiles. A pure ``(a,b)`` is a CCE iff it is a pure Nash equilibrium of the bimatrix game
   (``Qb(a,b) = max_a' Qb(a',b)`` and ``Qu(a,b) = min_b' Qu(a,b')``). Checked for every instance with a
   few array reductions; the canonical choice is the first such profile in row-major ``(a,b)`` order.
   This covers the degenerate ``Qb = H, Qu = 0`` stage games of early episodes and the ``B = 1`` case
   (where it is exactly the greedy action ``argmax_a Qb``, lowest index on ties).
2. The rest: the feasibility LP is the minimiser's side of the zero-sum game ``min_pi max_y y' M pi``
   (value ``<= 0`` because a CCE exists, Algorithm 1 line 14). With ``G = M / s + 2`` (entries in ``[1, 3]``,
   ``s = max |M|``) the substitution ``x = pi / v`` turns it into ``max 1'x s.t. G x <= 1, x >= 0``,
   whose slack basis is feasible: no phase 1. We solve these tiny LPs with a tableau simplex written
   in numpy over all instances at once, Bland's rule (no cycling on these degenerate problems). With numba
   installed, its elementwise parts (and those of step 1) run in the kernels of ``_cce_kernels.py``, which
   repeat the numpy arithmetic in the same order (bit for bit; the LAPACK solve, matmul and einsum reductions
   stay in numpy).
3. Every solution is clipped at 0, renormalised and VERIFIED: ``max(M pi) <= tol`` with
   ``tol = 1e-8 H`` (Algorithm 1 line 14). Instances that fail (or whose simplex hit the iteration cap) are
   re-solved with ``scipy.optimize.linprog(method="highs")``, objective 0, as the canonical
   solver; if even that fails verification we raise, rather than hand the algorithm a non-CCE.

The CCE is not unique (docs/derivations.md#readings); the choice above is deterministic, so runs are reproducible, and
any CCE satisfies the analysis.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

__all__ = ["CCESolution", "constraint_matrix", "cce_residual", "pure_cce", "solve_cce",
           "simplex_cce", "highs_cce", "marginals"]


def constraint_matrix(Qb: np.ndarray, Qu: np.ndarray) -> np.ndarray:
    """The CCE constraints ``M pi <= 0`` (Algorithm 1 line 14): ``M`` of shape (..., A + B, A * B).

    Row ``a'``:  ``Qb(a',b) - Qb(a,b)`` at column ``(a,b)`` (the max-player deviating to ``a'``).
    Row ``A + b'``: ``Qu(a,b) - Qu(a,b')`` (the min-player deviating to ``b'``).
    """
    Qb = np.asarray(Qb, dtype=float)
    Qu = np.asarray(Qu, dtype=float)
    A, B = Qb.shape[-2:]
    # (..., A', A, B): Qb[a', b] - Qb[a, b]
    dev_max = Qb[..., :, None, :] - Qb[..., None, :, :]
    # (..., B', A, B): Qu[a, b] - Qu[a, b']
    dev_min = Qu[..., None, :, :] - np.swapaxes(Qu, -1, -2)[..., :, :, None]
    lead = Qb.shape[:-2]
    return np.concatenate([dev_max.reshape(lead + (A, A * B)), dev_min.reshape(lead + (B, A * B))], axis=-2)


def cce_residual(pi: np.ndarray, Qb: np.ndarray, Qu: np.ndarray) -> np.ndarray:
    """Largest CCE constraint violation ``max(M pi)`` per instance (<= 0 for an exact CCE). Shape (...)."""
    pi = np.asarray(pi, dtype=float)
    M = constraint_matrix(Qb, Qu)
    flat = pi.reshape(pi.shape[:-2] + (-1,))
    return np.max(np.einsum("...ij,...j->...i", M, flat), axis=-1)


def marginals(pi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``mu(a) = sum_b pi(a,b)``, ``nu(b) = sum_a pi(a,b)`` for pi (..., A, B)."""
    return pi.sum(axis=-1), pi.sum(axis=-2)


def pure_cce(Qb: np.ndarray, Qu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pure-profile CCEs. Returns (found (...,) bool, index (...,) of the first pure CCE in a*B + b order)."""
    ok = (Qb >= Qb.max(axis=-2, keepdims=True)) & (Qu <= Qu.min(axis=-1, keepdims=True))
    flat = ok.reshape(ok.shape[:-2] + (-1,))
    return flat.any(axis=-1), flat.argmax(axis=-1)


def simplex_cce(M: np.ndarray, max_iter: int | None = None, basis0: np.ndarray | None = None,
                return_basis: bool = False, groups: np.ndarray | None = None, compiled: bool | None = None):
    """Batched tableau simplex for ``min_pi max_i (M pi)_i`` over the simplex.

    M: (n, m, d) constraint matrices (m = A + B rows, d = A * B columns).
    basis0: optional (n, m) starting bases (column indices into [x | slack]), e.g. the final basis of the
    same stage game last episode. Where that basis is non-singular and still primal feasible for the new
    M, the simplex starts there (a warm start: DP-Nash-VI's stage games move a little per episode, so
    it usually needs 0-2 pivots instead of ~10); elsewhere it starts from the slack basis.
    groups: optional (n,) labels: the batch's two shared decisions (the warm start's fallback when a basis is
    singular, "not converged" at the iteration cap) are taken per group, so each group's result is what a
    call on that group alone returns (several independent batches solved in one call).
    compiled: build the tableau and run the pivoting loop in the numba kernels (algorithms/games/_cce_kernels.py),
    which give the numpy code's result bit for bit; None (default): the kernels if numba is installed, else numpy.
    Returns (pi (n, d), converged (n,) bool), and the final bases (n, m) if ``return_basis``.
    """
    n, m, d = M.shape
    kern = None if compiled is False else _kernels()
    if compiled and kern is None:
        from dpcheck.errors import InputError
        raise InputError("simplex_cce(compiled=True) needs numba, which is not installed")
    if kern is not None:
        T, basis = kern.slack_tableau(np.ascontiguousarray(M, dtype=float))
    else:
        scale = np.abs(M).max(axis=(1, 2))
        scale = np.where(scale > 0, scale, 1.0)
        G = M / scale[:, None, None] + 2.0                  # entries in [1, 3]: the LP is bounded
        T = np.zeros((n, m + 1, d + m + 1))
        T[:, :m, :d] = G
        T[:, :m, d:d + m] = np.eye(m)
        T[:, :m, -1] = 1.0
        T[:, m, :d] = -1.0                                  # objective row of max 1'x
        basis = np.tile(np.arange(d, d + m), (n, 1))
    if basis0 is not None:
        _warm_start(T, basis, np.asarray(basis0, dtype=np.int64), m, groups, kern)
    converged = np.zeros(n, dtype=bool)
    max_iter = max_iter if max_iter is not None else 50 * (m + d)
    tol = 1e-12
    ar = np.arange(n)
    big = np.iinfo(np.int64).max
    # All instances are pivoted together; finished ones get a zero update. For the handful of
    # instances per step that DP-Nash-VI hands us, this beats compacting the batch every iteration.
    bland_after = 2 * (m + d)
    if kern is not None:
        done = np.zeros(n, dtype=bool)
        if kern.pivot_loop(T, basis, max_iter, bland_after, tol, done):
            converged[:] = True
        elif groups is not None and max_iter > 0:
            converged = _groups_done(groups, done, n)
        return _solution(T, basis, converged, n, m, d, return_basis, kern)
    Tt = T.transpose(0, 2, 1)                               # a view: columns as rows, for one gather
    done = None
    for it in range(max_iter):
        rc = T[:, m, :d + m]
        # Dantzig's rule (most negative reduced cost) first; Bland's rule (lowest index) after a few
        # pivots, which cannot cycle on these degenerate problems (rhs = 1 everywhere at the start).
        if it < bland_after:
            enter = rc.argmin(axis=1)
            done = rc[ar, enter] >= -tol
        else:
            neg = rc < -tol
            enter = neg.argmax(axis=1)
            done = ~neg[ar, enter]
        if done.all():
            converged[:] = True
            break
        col = Tt[ar, enter, :m]                             # (n, m)
        rhs = T[:, :m, -1]
        ok = col > tol
        # no np.errstate here: entering and leaving it costs more than the division (profile)
        ratio = np.where(ok, rhs / np.where(ok, col, 1.0), np.inf)
        best = ratio.min(axis=1, keepdims=True)
        # Bland's tie-break: among minimum-ratio rows, the one whose basic variable has lowest index
        leave = np.where(ratio <= best * (1 + 1e-12) + 1e-15, basis, big).argmin(axis=1)
        pivval = T[ar, leave, enter]
        piv_row = T[ar, leave] / np.where(done, 1.0, pivval)[:, None]
        factor = Tt[ar, enter]                              # (n, m + 1), a copy (fancy index)
        factor[ar, leave] = pivval - 1.0                    # turns the pivot row into piv_row
        factor[done] = 0.0
        T -= factor[:, :, None] * piv_row[:, None, :]
        basis[ar, leave] = np.where(done, basis[ar, leave], enter)
    else:
        if groups is not None and done is not None:
            converged = _groups_done(groups, done, n)
    return _solution(T, basis, converged, n, m, d, return_basis)


def _groups_done(groups, done, n):
    """The iteration cap was hit: a group all of whose instances were done at the last check converged
    (alone, its call would have stopped there); done instances stay done, so that check decides."""
    g = np.asarray(groups).reshape(n)
    _, inv = np.unique(g, return_inverse=True)
    return np.bincount(inv, weights=~done, minlength=inv.max() + 1)[inv] == 0


def _solution(T, basis, converged, n, m, d, return_basis, kern=None):
    """pi from the final tableaux of :func:`simplex_cce` (clipped at 0, renormalised; uniform if all 0)."""
    if kern is not None:
        x = kern.basic_solution(T, basis)                   # (n, d + m), as below: the same view is clipped
    else:
        x = np.zeros((n, d + m))
        np.put_along_axis(x, basis, T[:, :m, -1], axis=1)
    x = np.clip(x[:, :d], 0.0, None)
    tot = x.sum(axis=1, keepdims=True)
    bad = ~(tot[:, 0] > 0)
    pi = np.where(bad[:, None], 1.0 / d, x / np.where(bad[:, None], 1.0, tot))
    if return_basis:
        return pi, converged & ~bad, basis
    return pi, converged & ~bad


@functools.lru_cache(maxsize=None)
def _kernels():
    """The numba kernels (algorithms/games/_cce_kernels.py), or None if numba is not installed. Imported once
    per process (an lru_cache, not a list filled on first use: the chunk cache's fingerprint walks this
    function's code, not its cache, so the key does not depend on whether the kernels were loaded yet);
    compiled once per machine (numba's on-disk cache, ``cache=True``, as the repo's other kernels)."""
    try:
        from dpcheck.algorithms.games import _cce_kernels
    except ImportError:
        return None
    return _cce_kernels


def _warm_start(T: np.ndarray, basis: np.ndarray, basis0: np.ndarray, m: int, groups=None, kern=None) -> None:
    """Re-express the slack tableau T (n, m+1, ncol) in the bases ``basis0`` where they are usable (in place).

    Usable: B (the basis columns of [G | I]) non-singular and B^-1 1 >= 0 (primal feasible). Elsewhere the
    slack basis stays. Profiled: plain fancy indexing and one batched solve (det only if that fails).
    groups (n,) or None: when the batched solve fails, the det fallback is applied to the failing groups only
    (each group as in a call of its own, :func:`simplex_cce`). kern: the numba kernels (the same arithmetic; the
    solve and the product stay in numpy) or None.
    """
    n, _, ncol = T.shape
    if basis0.shape != basis.shape or basis0.min() < 0 or basis0.max() >= ncol - 1:
        return
    if kern is not None:
        basis0 = np.ascontiguousarray(basis0)
        B = kern.basis_columns(T, basis0, m)
    else:
        ar = np.arange(n)[:, None]
        B = T.transpose(0, 2, 1)[ar, basis0, :m].transpose(0, 2, 1)           # (n, m, m): B[:, r, j] = T[:, r, b_j]
    try:
        rows = np.linalg.solve(B, T[:, :m, :])                                 # B^-1 [G | I | 1]
        idx = np.arange(n)
    except np.linalg.LinAlgError:
        if groups is None:
            idx, rows = _solve_nonsingular(B, T, m, np.arange(n))
        else:
            g = np.asarray(groups).reshape(n)
            parts = [_solve_group(B, T, m, np.flatnonzero(g == v)) for v in np.unique(g)]
            idx = np.concatenate([p[0] for p in parts])
            rows = np.concatenate([p[1] for p in parts]) if idx.size else None
        if idx.size == 0:
            return
    if kern is not None:
        feasible = kern.primal_feasible(rows)
    else:
        feasible = (rows[:, :, -1] >= -1e-12).all(axis=1) & np.isfinite(rows).all(axis=(1, 2))
    if not feasible.all():
        idx, rows = idx[feasible], rows[feasible]
        if idx.size == 0:
            return
    b0 = basis0[idx]
    if kern is not None:
        # the same product as below (numpy's matmul: its BLAS summation order), the rest in the kernels
        prod = np.matmul(kern.objective_coefficients(T, idx, b0, m), rows)
        kern.warm_write(T, basis, idx, b0, np.ascontiguousarray(rows), prod)
        return
    obj = T[idx, m, :]
    # eliminate the basic columns from the objective row: row - sum_i row[basis_i] * (B^-1 A)_i
    obj = obj - np.matmul(obj[np.arange(idx.size)[:, None], b0][:, None, :], rows)[:, 0]
    T[idx, :m, :] = rows
    T[idx, m, :] = obj
    basis[idx] = b0


def _solve_nonsingular(B, T, m, ids):
    """The fallback of :func:`_warm_start` on instances ``ids``: solve where |det B| > 1e-9."""
    idx = ids[np.abs(np.linalg.det(B[ids])) > 1e-9]
    return idx, (np.linalg.solve(B[idx], T[idx, :m, :]) if idx.size else np.empty((0, m, T.shape[2])))


def _solve_group(B, T, m, ids):
    """One group of :func:`_warm_start`: its batched solve, or the fallback if that group's solve fails."""
    try:
        return ids, np.linalg.solve(B[ids], T[ids, :m, :])
    except np.linalg.LinAlgError:
        return _solve_nonsingular(B, T, m, ids)


def highs_cce(Mi: np.ndarray) -> np.ndarray:
    """One CCE by ``scipy.optimize.linprog(c=0, method="highs")`` (Algorithm 1 line 14's canonical solver)."""
    from scipy.optimize import linprog

    m, d = Mi.shape
    res = linprog(np.zeros(d), A_ub=Mi, b_ub=np.zeros(m), A_eq=np.ones((1, d)), b_eq=[1.0],
                  bounds=(0, None), method="highs")
    if res.x is None:
        # Feasibility can fail only at solver tolerance; minimise the worst violation instead.
        c = np.zeros(d + 1)
        c[-1] = 1.0
        res = linprog(c, A_ub=np.hstack([Mi, -np.ones((m, 1))]), b_ub=np.zeros(m),
                      A_eq=np.hstack([np.ones((1, d)), np.zeros((1, 1))]), b_eq=[1.0],
                      bounds=[(0, None)] * d + [(None, None)], method="highs")
        x = res.x[:d]
    else:
        x = res.x
    x = np.clip(x, 0.0, None)
    return x / x.sum()


@dataclass(frozen=True)
class CCESolution:
    """CCEs of a batch of stage games and how they were obtained.

    pi:        (..., A, B) joint distributions pi(a, b).
    residual:  (...) max CCE constraint violation ``max(M pi)`` (<= tol for every instance).
    tol:       the verification tolerance (1e-8 H, Algorithm 1 line 14).
    n_pure, n_simplex, n_highs, n_hint: how many instances each stage of :func:`solve_cce` settled.
    """

    pi: np.ndarray
    residual: np.ndarray
    tol: float
    n_pure: int
    n_simplex: int
    n_highs: int
    n_hint: int = 0
    basis: np.ndarray | None = None     # (..., A + B) final simplex bases, -1 where another stage settled it

    @property
    def marginals(self):
        return marginals(self.pi)


def solve_cce(Qb: np.ndarray, Qu: np.ndarray, H: float | None = None, *, method: str = "auto",
              tol: float | None = None, hint: np.ndarray | None = None,
              hint_basis: np.ndarray | None = None, groups: np.ndarray | None = None) -> CCESolution:
    """CCEs of every stage game in a batch. Qb, Qu: (..., A, B); returns a :class:`CCESolution`.

    method: "auto" (pure profiles, then batched simplex, then HiGHS for failures), "simplex"
    (skip the pure shortcut) or "highs" (one scipy LP per instance; the reference baseline).
    H: the value scale for the tolerance ``1e-8 H`` (default: max(1, max |Q|)).
    hint: optional candidate distributions (..., A, B), e.g. last episode's CCE of the same (h, s):
    accepted (after the pure-profile stage) wherever they pass the verification, which saves the
    simplex on stage games that barely changed. Any CCE satisfies the analysis (docs/derivations.md#readings); the choice
    stays deterministic given the history.
    hint_basis: optional (..., A + B) simplex bases (``CCESolution.basis`` of an earlier call): warm starts.
    groups: optional (...) labels of independent batches solved in one call: each group's result is what a
    call on that group alone returns (:func:`simplex_cce`); the HiGHS fallback and the checks are per instance.
    """
    Qb = np.asarray(Qb, dtype=float)
    Qu = np.asarray(Qu, dtype=float)
    if Qb.shape != Qu.shape or Qb.ndim < 2:
        from dpcheck.errors import InputError
        raise InputError(f"CCE needs Qb and Qu of the same shape (..., A, B); got {Qb.shape} and {Qu.shape}")
    if method not in ("auto", "simplex", "highs"):
        from dpcheck.errors import InputError
        raise InputError(f"unknown CCE method {method!r}; expected auto, simplex or highs")
    A, B = Qb.shape[-2:]
    lead = Qb.shape[:-2]
    if H is None:
        H = max(1.0, float(np.abs(Qb).max(initial=0.0)), float(np.abs(Qu).max(initial=0.0)))
    tol = 1e-8 * H if tol is None else tol
    qb = Qb.reshape(-1, A, B)
    qu = Qu.reshape(-1, A, B)
    n = qb.shape[0]
    pi = np.zeros((n, A * B))
    todo = np.ones(n, dtype=bool)
    n_pure = n_simplex = n_highs = 0
    basis_out = np.full((n, A + B), -1, dtype=np.int64)         # -1: not settled by the simplex
    kern = _kernels()
    if kern is not None:
        qb, qu = np.ascontiguousarray(qb), np.ascontiguousarray(qu)
    if method == "auto":
        if kern is not None:
            found, j, res_pure = kern.pure_profiles(qb, qu)     # pure_cce and the residual below, bit for bit
        else:
            found, j = pure_cce(qb, qu)
        pi[found, j[found]] = 1.0
        todo = ~found
        n_pure = int(found.sum())
        if n_pure == n:
            # every stage game has a pure CCE (the common case once a game is learned): its residual
            # is the best deviation gain at that cell, without building the (A+B) x AB constraints
            if kern is not None:
                residual = res_pure
            else:
                a, b = np.divmod(j, B)
                ar = np.arange(n)
                res_max = qb[ar, :, b].max(axis=1) - qb[ar, a, b]
                res_min = qu[ar, a, b] - qu[ar, a, :].min(axis=1)
                residual = np.maximum(res_max, res_min)
            return CCESolution(pi=pi.reshape(lead + (A, B)), residual=residual.reshape(lead), tol=tol,
                               n_pure=n_pure, n_simplex=0, n_highs=0, n_hint=0,
                               basis=basis_out.reshape(lead + (A + B,)))
    Mall = constraint_matrix(qb, qu) if kern is None else kern.constraint_rows(qb, qu)
    n_hint = 0
    if hint is not None and method == "auto" and todo.any():
        ids = np.flatnonzero(todo)
        cand = np.asarray(hint, dtype=float).reshape(-1, A * B)[ids]
        ok = np.max(np.einsum("nij,nj->ni", Mall[ids], cand), axis=1) <= tol
        pi[ids[ok]] = cand[ok]
        todo[ids[ok]] = False
        n_hint = int(ok.sum())
    if method in ("auto", "simplex") and todo.any():
        ids = np.flatnonzero(todo)
        M = Mall[ids]
        b0 = None if hint_basis is None else np.asarray(hint_basis).reshape(-1, A + B)[ids]
        p, conv, bas = simplex_cce(M, basis0=b0, return_basis=True,
                                   groups=None if groups is None else np.asarray(groups).reshape(-1)[ids])
        basis_out[ids] = bas
        res = np.max(np.einsum("nij,nj->ni", M, p), axis=1)
        good = conv & (res <= tol)
        pi[ids[good]] = p[good]
        todo[ids[good]] = False
        n_simplex = int(good.sum())
    if todo.any():
        ids = np.flatnonzero(todo)
        for i in ids:
            pi[i] = highs_cce(Mall[i])
        n_highs = ids.size
    residual = np.max(np.einsum("nij,nj->ni", Mall, pi), axis=1)
    if (residual > tol).any():
        i = int(np.argmax(residual))
        raise ArithmeticError(f"CCE verification failed: residual {residual[i]:.3g} > tol {tol:.3g} "
                              f"at instance {i} even after the HiGHS fallback")
    return CCESolution(pi=pi.reshape(lead + (A, B)), residual=residual.reshape(lead), tol=tol,
                       n_pure=n_pure, n_simplex=n_simplex, n_highs=n_highs, n_hint=n_hint,
                       basis=basis_out.reshape(lead + (A + B,)))
