"""Exact figures on a known tabular MDP: returns of greedy policies, coverability, realizability and
completeness of a class (He & Zhou 2026, Section 2.1, Definition 2.2, Assumption 2.1, Def 2.2, Appendix D's coverability facts).

* :func:`policy_returns` -- J(pi) for a batch of deterministic policies (..., H, S), exactly. MDPs whose every
  P_h(.|s,a) is a point mass (Def 3.3; the Appendix D environment) take a path-following fast path
  (O(|supp rho| H) per policy instead of O(H S^2 A)); the general path is backward induction
  (``dpcheck.algorithms.envs.planning``).
* :func:`max_return` -- the largest trajectory reward sum sum_h r_h over reachable paths: the
  normalisation sum_h r_h <= 1 that every sensitivity bound needs (docs/derivations.md#noise-calibration).
* :func:`coverability` -- C_cov(Pi; M) = max_h sum_(s,a) max_pi d_h^pi(s,a) (the exact formula of Definition 2.2, optimal
  mu_h proportional to the pointwise max); :func:`per_start_coverability` -- C'_cov = E_{s_1 ~ rho}
  C_cov(Pi; M_{s_1}) and, for deterministic MDPs, the reachable-pair counts N_h(s_1) of Definition 2.2.
* :func:`realizability`, :func:`completeness` -- Q* in F; T_h F_{h+1} subseteq F_h (the step-h functions of F).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpcheck.errors import InputError
from dpcheck.fingerprint import WeakMemo
from dpcheck.algorithms.envs.planning import optimal_values
from dpcheck.algorithms.envs.tabular import TabularMDP
from dpcheck.algorithms.gfa.function_class import FunctionClass

# Functions are "equal" (realizability / completeness) within this sup-norm tolerance: the class entries of
# GF-3 (algorithms/gfa/instances.py) are printed to 2-3 decimals but built by exact Bellman backups, so 1e-9 separates float noise from
# genuine mismatches.
FUNCTION_ATOL = 1e-9


def _mdp(mdp) -> TabularMDP:
    if not isinstance(mdp, TabularMDP):
        raise InputError(f"expected a TabularMDP, got {type(mdp).__name__}")
    return mdp


def _mdp_of(mdp, fc: FunctionClass) -> TabularMDP:
    """The MDP, checked, for an assumption about the class ``fc`` on it: their (H, S, A) must agree."""
    mdp = _mdp(mdp)
    fc.check_shape(mdp.H, mdp.S, mdp.A, "the MDP")
    return mdp


# next-state tables per (immutable) MDP: the scan of P costs O(H S^2 A) and the learners evaluate once per update.
# A declared memo (dpcheck.fingerprint.WeakMemo): its contents are derived from the MDP by next_state_table's
# code, so the chunk cache's fingerprint skips them (a plain WeakKeyDictionary made every computation that
# reaches this function unfingerprintable, and --cache did nothing for private_gfa).
_NEXT_STATE_CACHE: WeakMemo = WeakMemo()


def next_state_table(mdp: TabularMDP) -> np.ndarray | None:
    """s_h^+(s, a) (H, S, A) int if every P_h(.|s,a) is a point mass (Def 3.3), else None (cached per MDP)."""
    mdp = _mdp(mdp)
    if mdp in _NEXT_STATE_CACHE:
        return _NEXT_STATE_CACHE[mdp][0]
    P = mdp.P
    nxt = P.argmax(axis=-1)
    if not np.all(np.take_along_axis(P, nxt[..., None], axis=-1)[..., 0] == 1.0):
        nxt = None
    else:
        nxt.setflags(write=False)
    _NEXT_STATE_CACHE[mdp] = (nxt,)
    return nxt


def _init(mdp: TabularMDP, init) -> np.ndarray:
    if init is None:
        return np.asarray(mdp.init, float)
    if isinstance(init, (int, np.integer)) and not isinstance(init, bool):
        d = np.zeros(mdp.S)
        d[int(init)] = 1.0
        return d
    return np.asarray(init, float)


def _paths(nxt, policies, starts):
    """States and actions along the deterministic paths (..., n_starts, H) from each start."""
    H = policies.shape[-2]
    lead = policies.shape[:-2]
    s = np.broadcast_to(starts, lead + starts.shape).copy()
    states = np.empty(lead + starts.shape + (H,), dtype=np.int64)
    actions = np.empty_like(states)
    pol = policies.reshape((-1, H, policies.shape[-1]))
    flat_s = s.reshape(pol.shape[0], -1)
    rows = np.arange(pol.shape[0])[:, None]
    for h in range(H):
        a = pol[rows, h, flat_s]
        states[..., h] = flat_s.reshape(s.shape)
        actions[..., h] = a.reshape(s.shape)
        flat_s = nxt[h, flat_s, a]
    return states, actions


def policy_returns(mdp: TabularMDP, policies, init=None) -> np.ndarray:
    """J(pi) = E_{s_1 ~ init} V_1^pi(s_1) for deterministic policies (..., H, S) int -> (...)."""
    mdp = _mdp(mdp)
    pol = np.asarray(policies, dtype=np.int64)
    if pol.ndim < 2 or pol.shape[-2:] != (mdp.H, mdp.S):
        raise InputError(f"policies must have shape (..., H, S) = (..., {mdp.H}, {mdp.S}), got {pol.shape}")
    d1 = _init(mdp, init)
    nxt = next_state_table(mdp)
    if nxt is not None:
        starts = np.flatnonzero(d1 > 0)
        states, actions = _paths(nxt, pol, starts)
        rew = mdp.r[np.arange(mdp.H), states, actions].sum(axis=-1)       # (..., n_starts)
        return rew @ d1[starts]
    onehot = np.eye(mdp.A)[pol]
    from dpcheck.algorithms.envs.planning import evaluate
    _, V = evaluate(mdp.P, mdp.r, onehot)
    return V[..., 0, :] @ d1


def optimal_return(mdp: TabularMDP, init=None) -> float:
    """J* = E_{s_1 ~ init} V*_1(s_1)."""
    _, V = optimal_values(_mdp(mdp))
    return float(V[0] @ _init(mdp, init))


def max_return(mdp: TabularMDP, init=None) -> float:
    """max over reachable trajectories (s_1 in supp init) of sum_h r_h(s_h, a_h) (the normalisation check of docs/derivations.md#noise-calibration)."""
    mdp = _mdp(mdp)
    W = np.zeros(mdp.S)
    for h in range(mdp.H - 1, -1, -1):
        reach = np.where(mdp.P[h] > 0, W[None, None, :], -np.inf).max(axis=-1)
        W = (mdp.r[h] + reach).max(axis=-1)
    return float(W[_init(mdp, init) > 0].max())


def occupancies(mdp: TabularMDP, policies, init=None) -> np.ndarray:
    """d_h^pi(s, a) (..., H, S, A) for deterministic policies (..., H, S)."""
    mdp = _mdp(mdp)
    pol = np.asarray(policies, dtype=np.int64)
    d1 = _init(mdp, init)
    onehot = np.eye(mdp.A)[pol]                                        # (..., H, S, A)
    d = np.empty(onehot.shape)
    dist = np.broadcast_to(d1, pol.shape[:-2] + (mdp.S,))
    for h in range(mdp.H):
        d[..., h, :, :] = dist[..., :, None] * onehot[..., h, :, :]
        dist = np.einsum("...sa,sat->...t", d[..., h, :, :], mdp.P[h])
    return d


@dataclass(frozen=True)
class Coverability:
    """C_cov(Pi; M) = max_h sum_(s,a) max_pi d_h^pi(s,a) (Definition 2.2).

    value      C_cov
    per_step   sum_(s,a) max_pi d_h^pi(s,a) for every h (H,)
    mu         the optimal mu_h: the pointwise max, normalised (H, S, A)
    """

    value: float
    per_step: np.ndarray
    mu: np.ndarray


def _policies(fc_or_policies):
    if isinstance(fc_or_policies, FunctionClass):
        return fc_or_policies.greedy_policies()
    return np.asarray(fc_or_policies, dtype=np.int64)


def coverability(mdp: TabularMDP, policies, init=None) -> Coverability:
    """C_cov of a policy class (a FunctionClass means its greedy policies Pi_F) on ``mdp`` from ``init``."""
    mdp = _mdp(mdp)
    pol = _policies(policies)
    d1 = _init(mdp, init)
    nxt = next_state_table(mdp)
    if nxt is not None:
        starts = np.flatnonzero(d1 > 0)
        states, actions = _paths(nxt, pol.reshape((-1,) + pol.shape[-2:]), starts)   # (P, n0, H)
        dmax = np.zeros((mdp.H, mdp.S * mdp.A))
        for h in range(mdp.H):
            code = states[..., h] * mdp.A + actions[..., h]                        # (P, n0)
            w = np.broadcast_to(d1[starts], code.shape)
            P_ = code.shape[0]
            per = np.zeros((P_, mdp.S * mdp.A))
            np.add.at(per, (np.repeat(np.arange(P_), code.shape[1]), code.ravel()), w.ravel())
            dmax[h] = per.max(axis=0)
        dmax = dmax.reshape(mdp.H, mdp.S, mdp.A)
    else:
        dmax = occupancies(mdp, pol.reshape((-1,) + pol.shape[-2:]), d1).max(axis=0)
    per_step = dmax.sum(axis=(1, 2))
    mu = dmax / np.where(per_step > 0, per_step, 1.0)[:, None, None]
    return Coverability(value=float(per_step.max()), per_step=per_step, mu=mu)


@dataclass(frozen=True)
class PerStartCoverability:
    """C'_cov = E_{s_1 ~ rho} C_cov(Pi; M_{s_1}) (Definition 2.2, Algorithm 2).

    value        C'_cov
    starts       the support of rho (n0,)
    per_start    C_cov(Pi; M_{s_1}) for each start (n0,)
    reachable    N_h(s_1) = |S_h(s_1; Pi)| (n0, H) for deterministic MDPs (None otherwise)
    """

    value: float
    starts: np.ndarray
    per_start: np.ndarray
    reachable: np.ndarray | None

    @property
    def mean_reachable(self) -> float | None:
        """E_{s_1} N(s_1) with N(s_1) = sum_h N_h(s_1) (19.875 on the Appendix D class, Appendix D)."""
        return None if self.reachable is None else float(self.reachable.sum(axis=1).mean())


def per_start_coverability(mdp: TabularMDP, policies, init=None) -> PerStartCoverability:
    mdp = _mdp(mdp)
    d1 = _init(mdp, init)
    starts = np.flatnonzero(d1 > 0)
    pol = _policies(policies)
    nxt = next_state_table(mdp)
    reach = None
    if nxt is not None:
        # deterministic MDP, deterministic policies: C_cov(Pi; M_{s_1}) = max_h N_h(s_1) (Definition 2.2)
        states, actions = _paths(nxt, pol.reshape((-1,) + pol.shape[-2:]), starts)   # (P, n0, H)
        code = states * mdp.A + actions
        reach = np.array([[np.unique(code[:, i, h]).size for h in range(mdp.H)] for i in range(starts.size)])
        per = reach.max(axis=1).astype(float)
    else:
        per = np.array([coverability(mdp, pol, int(s)).value for s in starts])
    return PerStartCoverability(value=float(per @ (d1[starts] / d1[starts].sum())), starts=starts,
                                per_start=per, reachable=reach)


def bellman_backup(mdp: TabularMDP, g) -> np.ndarray:
    """[T_h g](s, a) = r_h(s, a) + E_{s' ~ P_h(.|s,a)} max_a' g(s', a') for every h: g (..., S, A) -> (..., H, S, A)."""
    mdp = _mdp(mdp)
    v = np.asarray(g, float).max(axis=-1)                              # (..., S)
    return mdp.r + np.einsum("hsat,...t->...hsa", mdp.P, v)


@dataclass(frozen=True)
class Realizability:
    """Q* in F (Assumption 2.1's consequence; all Algorithm 2 needs).

    holds      some entry equals Q* within ``atol`` in sup norm
    entries    the entries equal to Q* (duplicates included)
    distance   min over entries of ||f - Q*||_inf
    """

    holds: bool
    entries: tuple
    distance: float


def realizability(mdp: TabularMDP, fc: FunctionClass, atol: float = FUNCTION_ATOL) -> Realizability:
    mdp = _mdp_of(mdp, fc)
    Q, _ = optimal_values(mdp)
    dist = np.abs(fc.values - Q[None]).max(axis=(1, 2, 3))
    hit = np.flatnonzero(dist <= atol)
    return Realizability(holds=bool(hit.size), entries=tuple(int(i) for i in hit), distance=float(dist.min()))


@dataclass(frozen=True)
class Completeness:
    """Bellman completeness T_h F_{h+1} subseteq F_h (Assumption 2.1), on the step sets of F.

    holds       every backup is in F_h (within ``atol``)
    per_step    (H,) bool; step H checks T_H 0 = r_H in F_H
    violations  tuple of (h (0-based), j = index of g in F_{h+1}'s distinct functions, distance to F_h)
    worst       max over (h, g) of the distance from T_h g to F_h (sup norm)
    """

    holds: bool
    per_step: tuple
    violations: tuple
    worst: float


def completeness(mdp: TabularMDP, fc: FunctionClass, atol: float = FUNCTION_ATOL) -> Completeness:
    mdp = _mdp_of(mdp, fc)
    per_step, violations, worst = [], [], 0.0
    for h in range(mdp.H):
        nxt = fc.layers[h + 1] if h + 1 < mdp.H else np.zeros((1, mdp.S, mdp.A))
        backups = bellman_backup(mdp, nxt)[:, h]                           # (n_{h+1}, S, A)
        dist = np.abs(backups[:, None] - fc.layers[h][None]).max(axis=(2, 3)).min(axis=1)
        bad = np.flatnonzero(dist > atol)
        violations.extend((h, int(j), float(dist[j])) for j in bad)
        per_step.append(not bad.size)
        worst = max(worst, float(dist.max()))
    return Completeness(holds=all(per_step), per_step=tuple(per_step), violations=tuple(violations), worst=worst)
