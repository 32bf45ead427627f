"""numba kernels of the compiled (DP-)UCBVI engine (algorithms/online/compiled.py).

One call runs ``n`` episodes of every run: release (tree / local sums / exact counts), the Section 5.1.1 LP,
eq. 1 estimates, the practical-structure bonus, Algorithm 1 value iteration, greedy policy, rollout on a tabular
MDP, and the privatizer's ingest. Every random number comes in pre-drawn (noise, tie-breaking and
environment uniforms, in the numpy engine's stream order), so the kernels are deterministic functions of
their inputs. Each step repeats the numpy engine's arithmetic in the same order (same comparisons, same
left-to-right sums -- including the value iteration's dot products, ``ucbvi._fold_last`` -- and numpy's
``maximum``/``minimum`` on finite numbers), so the two engines agree bit for bit;
tests/algorithms/online/test_compiled_engine.py holds them to that. Runs are processed one after another inside a chunk
(run-major), which keeps one run's tree state in cache.

Per-run array layout of the privatizer's counters (C = H S A (S + 2)): ``[visits (HSA) | transitions
(HSA S) | rewards (HSA)]``, exactly the central privatizer's tree layout.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from dpcheck.algorithms.privatizers._projection_kernel import lp_row

NONE, CENTRAL, LOCAL = 0, 1, 2


@njit(cache=True, inline="always")
def _max(a, b):
    # numpy's maximum on finite inputs (the kernels never see NaN): one select, no branch -- a
    # short-circuit NaN test here made every max a mispredicted branch (60 ns per LP row)
    return a if a >= b else b


@njit(cache=True, inline="always")
def _min(a, b):
    return a if a <= b else b


@njit(cache=True)
def run_episodes(n, e0, H, S, A, kind, E, iota, c_var, c_rew, c_priv, any_private, scale, Hf,
                 Q, N, Ntr, R, psum, noisy, t0, sums, noise, ties, random_ties, env_u, bernoulli,
                 init_cdf, cdf, rmean, network, policies, actions, states, record):
    """Run episodes e0 .. e0 + n - 1 for every run (see the module docstring).

    kind (runs,) NONE/CENTRAL/LOCAL; E (runs,); Q (runs,H,S,A) in/out (Q~^{k-1}); N (runs,HSA), Ntr (runs,HSAS), R (runs,HSA)
    true counts in/out; psum (runs, L, C), noisy (runs, L+1, C) = the tree's p-sums and prefix releases, in/out (central runs); t0 items already in the tree;
    sums (runs, C) local sums in/out; noise (n, runs, C) scaled Laplace draws; ties (n, runs, H, S, A)
    uniforms (random tie-breaking); env_u (n, 1 + H m, runs) uniforms (m = 2 with Bernoulli rewards);
    policies (n, runs, H, S) int8 out; actions (runs, K, H), states (runs, K, H+1) out when ``record``.
    """
    runs = Q.shape[0]
    HSA = H * S * A
    HSAS = HSA * S
    C = HSA * (S + 2)
    m = 2 if bernoulli else 1
    B = np.empty(C)
    trans = np.empty(HSAS)
    visits = np.empty(HSA)
    P = np.empty(HSAS)
    base = np.empty(HSA)
    var_coef = np.empty(HSA)
    ys = np.empty(S)
    csum = np.empty(S)
    V = np.empty(S)
    Vn = np.empty(S)
    V2 = np.empty(S)
    node = np.empty(C)
    sa_idx = np.empty(H, dtype=np.int64)
    sas_idx = np.empty(H, dtype=np.int64)
    rw_h = np.empty(H)
    inv_S = 1.0 / S
    for r in range(runs):                            # runs are independent: run-major keeps one
        k = kind[r]                                  # run's tree state in cache for the whole chunk
        Er = E[r]
        for e in range(n):
            t = t0 + e                               # items in the tree before this episode
            # ---------------------------------------------------------------- release (N~, R~)
            if k == NONE:                            # exact counts: read N, Ntr, R in place below
                pass
            else:
                if k == CENTRAL:                     # B(t) = prefix[0] (BinaryMechanism)
                    for i in range(C):
                        B[i] = noisy[r, 0, i]
                else:
                    for i in range(C):
                        B[i] = sums[r, i]
                band = Er / 4.0
                shift = Er / (2.0 * S)
                for row in range(HSA):
                    # the Section 5.1.1 LP of this row (projection._project_columns, with_value=False),
                    # inlined (algorithms/privatizers/_projection_kernel.py)
                    tot = lp_row(B, HSA + row * S, S, B[row], band, shift, network, ys, csum, trans, row * S)
                    visits[row] = tot
            # ---------------------------------------------------------------- eq. 1 + static bonus
            # exact counts change only in the H rows the last episode visited: recompute those (the
            # same formula, so the same values); every row at the first episode of a chunk or run
            partial = k == NONE and e > 0
            for q in range(H if partial else HSA):
                row = sa_idx[q] if partial else q
                if k == NONE:
                    nv = N[r, row]
                    rew = R[r, row]
                else:
                    nv = visits[row]
                    rew = B[HSAS + HSA + row]
                visited = nv > 0.0
                inv = 1.0 / nv if visited else 1.0
                for j in range(S):
                    tr = Ntr[r, row * S + j] if k == NONE else trans[row * S + j]
                    P[row * S + j] = tr * inv if visited else inv_S
                rr = rew * inv if visited else 0.0
                rr = _min(_max(rr, 0.0), 1.0)
                inv_n = 1.0 / nv if visited else math.inf
                b = c_rew * math.sqrt(iota * inv_n)
                if any_private:
                    b = b + c_priv * Er * iota * inv_n
                b = scale * b
                if not visited:
                    b = math.inf
                base[row] = rr + b
                var_coef[row] = (scale * c_var) * math.sqrt(iota / nv) if visited else 0.0
            # ---------------------------------------------------------------- value iteration + greedy
            for s in range(S):
                Vn[s] = 0.0
            for h in range(H - 1, -1, -1):
                for s in range(S):
                    V2[s] = Vn[s] * Vn[s]
                for s in range(S):
                    best = 0.0
                    for a in range(A):
                        row = (h * S + s) * A + a
                        mean = 0.0
                        second = 0.0
                        for j in range(S):
                            p = P[row * S + j]
                            mean += p * Vn[j]
                            second += p * V2[j]
                        spread = second - mean * mean
                        spread = math.sqrt(_max(spread, 0.0))
                        spread = var_coef[row] * spread
                        target = base[row] + mean
                        target = target + spread
                        q = _min(_min(Q[r, h, s, a], Hf), target)
                        Q[r, h, s, a] = q
                        best = q if a == 0 else _max(best, q)
                    V[s] = best
                    # greedy action: uniform among exact maximisers via the tie uniforms, else lowest
                    ba = 0
                    if random_ties:
                        bv = ties[e, r, h, s, 0] if Q[r, h, s, 0] == best else -1.0
                        for a in range(1, A):
                            val = ties[e, r, h, s, a] if Q[r, h, s, a] == best else -1.0
                            if val > bv:
                                ba = a
                            bv = _max(bv, val)
                    else:
                        bv = Q[r, h, s, 0]
                        for a in range(1, A):
                            if Q[r, h, s, a] > bv:
                                ba = a
                            bv = _max(bv, Q[r, h, s, a])
                    policies[e, r, h, s] = ba
                for s in range(S):
                    Vn[s] = V[s]
            # ---------------------------------------------------------------- rollout
            u = env_u[e, 0, r]
            st = 0
            for j in range(S):
                if init_cdf[j] <= u:
                    st += 1
            if record:
                states[r, e0 + e, 0] = st
            for h in range(H):
                a = policies[e, r, h, st]
                u = env_u[e, 1 + h * m, r]
                nxt = 0
                for j in range(S):
                    if cdf[h, st, a, j] <= u:
                        nxt += 1
                mu = rmean[h, st, a]
                if bernoulli:
                    rw = 1.0 if env_u[e, 2 + h * m, r] < mu else 0.0
                else:
                    rw = mu
                row = (h * S + st) * A + a
                sa_idx[h] = row
                sas_idx[h] = row * S + nxt
                rw_h[h] = rw
                if record:
                    actions[r, e0 + e, h] = a
                    states[r, e0 + e, h + 1] = nxt
                st = nxt
            # ---------------------------------------------------------------- observe
            for h in range(H):
                N[r, sa_idx[h]] += 1.0
                Ntr[r, sas_idx[h]] += 1.0
                R[r, sa_idx[h]] += rw_h[h]
            if k == CENTRAL:
                tt = t + 1
                lvl = 0
                while not (tt >> lvl) & 1:
                    lvl += 1
                if lvl == 0:
                    for i in range(C):
                        node[i] = 0.0
                else:
                    for i in range(C):
                        node[i] = psum[r, 0, i]
                    for j in range(1, lvl):
                        for i in range(C):
                            node[i] += psum[r, j, i]
                for h in range(H):
                    node[sa_idx[h]] += 1.0
                    node[HSA + sas_idx[h]] += 1.0
                    node[HSA + HSAS + sa_idx[h]] += rw_h[h]
                for j in range(lvl):
                    for i in range(C):
                        psum[r, j, i] = 0.0
                for i in range(C):                   # B(t+1) = B(t+1 - 2^lvl) + noisy node;
                    psum[r, lvl, i] = node[i]        # prefix[0..lvl] := B(t+1)
                    noisy[r, 0, i] = noisy[r, lvl + 1, i] + (node[i] + noise[e, r, i])
                for j in range(1, lvl + 1):
                    for i in range(C):
                        noisy[r, j, i] = noisy[r, 0, i]
            elif k == LOCAL:
                for i in range(C):
                    node[i] = noise[e, r, i]
                for h in range(H):
                    node[sa_idx[h]] += 1.0
                    node[HSA + sas_idx[h]] += 1.0
                    node[HSA + HSAS + sa_idx[h]] += rw_h[h]
                for i in range(C):
                    sums[r, i] += node[i]
