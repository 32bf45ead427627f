"""Linear mixture MDPs with finite S and A (Zhou 2022, Assumption 1) and the test instances LM-2 and tabular-as-linear.

A :class:`LinearMixtureMDP` is given by its known features and unknown (to the agent) parameters:

    psi     (S, A, S, d1)   transition feature psi(s, a, s')
    varphi  (S, A, d2)      reward feature varphi(s, a)
    theta_p (H, d1)         P_h(s'|s,a) = <psi(s,a,s'), theta_{h,p}>
    theta_r (H, d2)         r_h(s,a)    = <varphi(s,a), theta_{h,r}>

Underneath it is a tabular MDP (``P = psi . theta_p``, ``r = varphi . theta_r``), so simulation and the
exact planners for regret are those of :mod:`dpcheck.algorithms.envs` (``TabularMDP``, ``value_iteration``,
``evaluate``). Construction validates everything Assumption 1 states, with one InputError line per
defect: the feature dimensions agree with the parameters and with the declared ``d >= max(d1, d2)``,
``||theta_{h,p}|| <= sqrt(d1)``, ``||theta_{h,r}|| <= sqrt(d2)``, ``||varphi(s,a)|| <= 1``,
``||phi_V(s,a)|| <= sqrt(d1) H`` for every ``V : S -> [0, H]``, every ``P_h(.|s,a)`` a distribution and every
``r_h(s,a)`` in [0, 1]. These bounds are what the privatizer's sensitivities (proofs of Theorems 6.4-6.5, docs/derivations.md#noise-calibration) are computed from,
so an instance that breaks them would void the declared privacy.

Steps are 0-based in arrays: the paper's step h is index h - 1.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from dpcheck.errors import InputError
from dpcheck.algorithms.envs._validate import (ROW_SUM_TOL, ReadOnlyArrays, as_float_array, as_initial_distribution,
                                               axis_length)
from dpcheck.algorithms.envs.planning import evaluate, value_iteration
from dpcheck.algorithms.envs.tabular import REWARD_NOISE, TabularMDP

# Norm bounds are checked with this relative slack: features built in floating point (e.g. a
# normalised vector) may exceed an exact bound by a few ulps without any real violation.
NORM_TOL = 1e-9
# Largest S for which max_V ||phi_V|| is found by enumerating V in {0, H}^S when psi has negative
# entries (the maximum of a convex function over the box is at a vertex).
ENUMERATE_MAX_S = 12


def max_integrated_feature_norm(psi: np.ndarray, H: float) -> float:
    """max over V : S -> [0, H] and (s, a) of ||phi_V(s,a)||, phi_V(s,a) = sum_s' psi(s,a,s') V(s').

    ``V -> ||phi_V(s,a)||`` is convex, so the maximum over the box [0, H]^S is at a vertex. With
    entrywise non-negative psi every coordinate of phi_V grows with V, so the vertex is V == H; otherwise
    the 2^S vertices are enumerated (S <= ENUMERATE_MAX_S), and beyond that the triangle-inequality bound
    ``H max_{s,a} sum_s' ||psi(s,a,s')||`` is returned (an upper bound, so never a false pass).
    """
    S = psi.shape[2]
    if np.all(psi >= 0):
        return float(np.linalg.norm(psi.sum(axis=2) * H, axis=-1).max())
    if S <= ENUMERATE_MAX_S:
        best = 0.0
        for bits in itertools.product((0.0, float(H)), repeat=S):
            phi = np.einsum("satd,t->sad", psi, np.array(bits))
            best = max(best, float(np.linalg.norm(phi, axis=-1).max()))
        return best
    return float(H * np.linalg.norm(psi, axis=-1).sum(axis=2).max())


@dataclass(frozen=True, eq=False)
class LinearMixtureMDP(ReadOnlyArrays):
    """Episodic linear mixture MDP with finite S, A (Assumption 1), validated and immutable.

    psi (S, A, S, d1), varphi (S, A, d2), theta_p (H, d1), theta_r (H, d2): see the module docstring.
    init:          fixed initial state s_1 (int) or a distribution over S (regret then averages over it).
    d:             the declared dimension, ``d >= max(d1, d2)`` (defaults to max(d1, d2)); the paper's
                   calibration uses it (proofs of Theorems 6.4-6.5, docs/derivations.md#noise-calibration; Lemma B.4).
    reward_noise:  "bernoulli" (r_h ~ Bernoulli(r_h(s,a))) or "deterministic".
    name:          a label for reports.
    """

    psi: np.ndarray
    varphi: np.ndarray
    theta_p: np.ndarray
    theta_r: np.ndarray
    init: object = 0
    d: int | None = None
    reward_noise: str = "bernoulli"
    name: str = ""
    tabular: TabularMDP = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        psi = as_float_array("psi", self.psi, 4)
        S, A, S2, d1 = psi.shape
        if S2 != S:
            raise InputError(f"psi must have shape (S, A, S, d1); got {psi.shape} (next-state axis {S2} != S = {S})")
        varphi = as_float_array("varphi", self.varphi, 3)
        if varphi.shape[:2] != (S, A):
            raise InputError(f"varphi must have shape (S, A, d2) = ({S}, {A}, d2), got {varphi.shape}")
        d2 = varphi.shape[2]
        theta_p = as_float_array("theta_p", self.theta_p, 2)
        H = theta_p.shape[0]
        if theta_p.shape[1] != d1:
            raise InputError(f"theta_p has dimension {theta_p.shape[1]} but psi has d1 = {d1}")
        theta_r = as_float_array("theta_r", self.theta_r, 2)
        if theta_r.shape != (H, d2):
            raise InputError(f"theta_r must have shape (H, d2) = ({H}, {d2}), got {theta_r.shape}")
        d = max(d1, d2) if self.d is None else self.d
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < max(d1, d2):
            raise InputError(f"the declared dimension d must be an integer >= max(d1, d2) = {max(d1, d2)}, got {self.d!r}")
        if self.reward_noise not in REWARD_NOISE:
            raise InputError(f"reward_noise must be one of {REWARD_NOISE}, got {self.reward_noise!r}")
        self._check_bounds(psi, varphi, theta_p, theta_r, H, d1, d2)
        P = np.einsum("satd,hd->hsat", psi, theta_p)
        r = np.einsum("sad,hd->hsa", varphi, theta_r)
        self._check_model(P, r)
        init = as_initial_distribution(self.init, S)
        for name, value in (("psi", psi), ("varphi", varphi), ("theta_p", theta_p), ("theta_r", theta_r)):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "d", int(d))
        # the clip below only removes rounding (|P - clip(P)| <= 1e-12 was checked), so that the
        # TabularMDP's own validation sees an exact distribution
        P = np.clip(P, 0.0, None)
        P /= P.sum(axis=-1, keepdims=True)
        object.__setattr__(self, "tabular", TabularMDP(P, np.clip(r, 0.0, 1.0), init, self.reward_noise, self.name))

    @staticmethod
    def _check_bounds(psi, varphi, theta_p, theta_r, H, d1, d2):
        slack = 1.0 + NORM_TOL
        n = np.linalg.norm(theta_p, axis=-1)
        if np.any(n > math.sqrt(d1) * slack):
            h = int(np.argmax(n))
            raise InputError(f"||theta_p[{h}]|| = {n[h]:.6g} exceeds sqrt(d1) = {math.sqrt(d1):.6g} (Assumption 1)")
        n = np.linalg.norm(theta_r, axis=-1)
        if np.any(n > math.sqrt(d2) * slack):
            h = int(np.argmax(n))
            raise InputError(f"||theta_r[{h}]|| = {n[h]:.6g} exceeds sqrt(d2) = {math.sqrt(d2):.6g} (Assumption 1)")
        n = np.linalg.norm(varphi, axis=-1)
        if np.any(n > slack):
            s, a = (int(i) for i in np.unravel_index(np.argmax(n), n.shape))
            raise InputError(f"||varphi({s},{a})|| = {n[s, a]:.6g} exceeds 1 (Assumption 1)")
        top = max_integrated_feature_norm(psi, H)
        if top > math.sqrt(d1) * H * slack:
            raise InputError(f"max_V ||phi_V(s,a)|| = {top:.6g} exceeds sqrt(d1) H = {math.sqrt(d1) * H:.6g} "
                             f"(Assumption 1; the privatizer's sensitivities rely on it)")

    @staticmethod
    def _check_model(P, r):
        if np.any(P < -1e-12):
            idx = tuple(int(i) for i in np.argwhere(P < -1e-12)[0])
            raise InputError(f"the kernel <psi, theta_p> is not a distribution: P[h,s,a,s'] at {idx} is {P[idx]:.3g} < 0")
        sums = P.sum(axis=-1)
        bad = np.abs(sums - 1.0) > ROW_SUM_TOL
        if np.any(bad):
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            raise InputError(f"the kernel <psi, theta_p> is not a distribution: P[h,s,a,:] at {idx} sums to {sums[idx]:.12g}")
        if np.any((r < -1e-12) | (r > 1 + 1e-12)):
            idx = tuple(int(i) for i in np.argwhere((r < -1e-12) | (r > 1 + 1e-12))[0])
            raise InputError(f"the mean reward <varphi, theta_r> must lie in [0, 1]; r[h,s,a] at {idx} is {r[idx]:.6g}")

    # ------------------------------------------------------------------ sizes and the model underneath
    H = axis_length("theta_p", 0)
    S = axis_length("psi", 0)
    A = axis_length("psi", 1)
    d1 = axis_length("psi", 3)
    d2 = axis_length("varphi", 2)

    @property
    def P(self) -> np.ndarray:
        """P_h(s'|s,a) (H, S, A, S)."""
        return self.tabular.P

    @property
    def r(self) -> np.ndarray:
        """r_h(s,a) (H, S, A)."""
        return self.tabular.r

    @property
    def nonnegative(self) -> bool:
        """psi and varphi entrywise >= 0: then every stream item of Section 6.1 is entrywise >= 0 (V, r >= 0),
        which tightens the replacement sensitivity of the vector counters (docs/derivations.md#neighbouring-relation)."""
        return bool(np.all(self.psi >= 0) and np.all(self.varphi >= 0))

    def integrated_features(self, V: np.ndarray) -> np.ndarray:
        """phi_V(s,a) = sum_s' psi(s,a,s') V(s') for V (..., S) -> (..., S, A, d1) (Assumption 1)."""
        return np.einsum("satd,...t->...sad", self.psi, V)

    def optimal_values(self) -> tuple[np.ndarray, np.ndarray]:
        """(Q* (H, S, A), V* (H+1, S)) by exact backward induction on the underlying model."""
        return value_iteration(self.P, self.r)

    def optimal_value(self) -> float:
        """E_{s_1} V_1^*(s_1)."""
        return float(self.optimal_values()[1][0] @ self.tabular.init)

    def policy_values(self, policy: np.ndarray) -> np.ndarray:
        """E_{s_1} V_1^pi(s_1) for a batch of stochastic policies (..., H, S, A) (exact)."""
        _, V = evaluate(self.P, self.r, policy)
        return V[..., 0, :] @ self.tabular.init

    def __repr__(self) -> str:
        label = f"{self.name!r}, " if self.name else ""
        return (f"LinearMixtureMDP({label}H={self.H}, S={self.S}, A={self.A}, d1={self.d1}, d2={self.d2}, "
                f"d={self.d}, reward_noise={self.reward_noise!r})")


def lm2(q=(0.8, 0.25, 0.7), reward=(0.1, 0.9), *, reward_noise: str = "bernoulli", d: int | None = None) -> LinearMixtureMDP:
    """LM-2, a two-state steerable chain (d1 = d2 = 2, H = len(q) = 3, s_1 = 0).

    psi(s,a,s') = (1{s' = a}, 1{s' = 1 - a}), theta_{h,p} = (q_h, 1 - q_h): P_h(s' = a | s, a) = q_h.
    varphi(s,a) = e_s, theta_{h,r} = reward for every h; rewards Bernoulli. V_1^*(0) = 1.54 with the defaults.
    """
    q = np.asarray(q, dtype=float)
    psi = np.zeros((2, 2, 2, 2))
    for s, a, t in itertools.product(range(2), repeat=3):
        psi[s, a, t] = (float(t == a), float(t == 1 - a))
    varphi = np.zeros((2, 2, 2))
    for s, a in itertools.product(range(2), repeat=2):
        varphi[s, a, s] = 1.0
    theta_p = np.stack([q, 1.0 - q], axis=-1)
    theta_r = np.broadcast_to(np.asarray(reward, dtype=float), (q.size, 2))
    return LinearMixtureMDP(psi, varphi, theta_p, theta_r, init=0, d=d, reward_noise=reward_noise, name="LM-2")


def tabular_as_linear(mdp: TabularMDP, *, d: int | None = None, reward_noise: str | None = None) -> LinearMixtureMDP:
    """A tabular MDP as a linear mixture MDP: psi(s,a,s') = e_{(s,a,s')} in R^{S^2 A},
    theta_{h,p} = (P_h(s'|s,a)), varphi(s,a) = e_{(s,a)} in R^{S A}, theta_{h,r} = (r_h(s,a))."""
    if not isinstance(mdp, TabularMDP):
        raise InputError(f"expected a TabularMDP, got {type(mdp).__name__}")
    H, S, A = mdp.H, mdp.S, mdp.A
    psi = np.eye(S * A * S).reshape(S, A, S, S * A * S)
    varphi = np.eye(S * A).reshape(S, A, S * A)
    theta_p = mdp.P.reshape(H, S * A * S)
    theta_r = mdp.r.reshape(H, S * A)
    init = mdp.init if np.count_nonzero(mdp.init) != 1 else int(np.argmax(mdp.init))
    return LinearMixtureMDP(psi, varphi, theta_p, theta_r, init=init, d=d,
                            reward_noise=reward_noise or mdp.reward_noise, name=f"tabular({mdp.name or 'mdp'})")


def random_linear_mixture(S: int, A: int, H: int, d1: int, d2: int, rng: np.random.Generator, *,
                          reward_noise: str = "bernoulli") -> LinearMixtureMDP:
    """A random instance satisfying Assumption 1 with small d1, d2 (independent of S, A).

    psi(s,a,.) = (P^(1)(.|s,a), ..., P^(d1)(.|s,a)): d1 random base kernels (Dirichlet(1) rows), and
    theta_{h,p} ~ Dirichlet(1) on the simplex, so P_h = sum_i theta_i P^(i) is a kernel, ||theta_{h,p}|| <= 1
    and ||phi_V|| <= sqrt(d1) H (each coordinate is P^(i) V in [0, H]). varphi(s,a) ~ Dirichlet(1) on the
    simplex (||varphi|| <= 1) and theta_{h,r} ~ U[0,1]^{d2}, so r_h = <varphi, theta_r> in [0, 1].
    Draw order: base kernels, theta_p, varphi, theta_r.
    """
    for name, v in (("S", S), ("A", A), ("H", H), ("d1", d1), ("d2", d2)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise InputError(f"{name} must be an integer >= 1, got {v!r}")
    base = rng.dirichlet(np.ones(S), size=(d1, S, A))                 # (d1, S, A, S')
    psi = np.moveaxis(base, 0, -1)                                     # (S, A, S', d1)
    theta_p = rng.dirichlet(np.ones(d1), size=H)
    varphi = rng.dirichlet(np.ones(d2), size=(S, A))
    theta_r = rng.random((H, d2))
    return LinearMixtureMDP(psi, varphi, theta_p, theta_r, init=0, reward_noise=reward_noise,
                            name=f"random-linear-mixture(S={S},A={A},d1={d1},d2={d2})")
