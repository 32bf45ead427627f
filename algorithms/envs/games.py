"""Two-player zero-sum episodic Markov game (Qiao & Wang 2024, Section 2.1).

The max-player picks a in 0..A-1, the min-player b in 0..B-1, simultaneously; the max-player
gains r_h(s, a, b) in [0, 1], which is deterministic and known (the paper's footnote), and
s_{h+1} ~ P_h(. | s, a, b). Steps are 0-based as in :mod:`dpcheck.algorithms.envs.tabular`.

Privatizers and count-based code see a game through its *joint action* j = a * B + b
(:meth:`MarkovGame.joint_mdp`), so one count privatizer serves both papers.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

import numpy as np

from dpcheck.errors import InputError
from dpcheck.algorithms.envs._validate import (
    TabularModel,
    as_float_array, as_index_array, as_initial_distribution, as_policy, check_distributions,
    check_rng, check_runs, check_unit_interval, one_hot, sample_from_cdf,
)
from dpcheck.algorithms.envs.tabular import TabularMDP


class GameTrajectories(NamedTuple):
    """A batch of game episodes, run axis first.

    states        (runs, H+1) int
    actions_max   (runs, H)   int  a_h (max-player)
    actions_min   (runs, H)   int  b_h (min-player)
    joint_actions (runs, H)   int  j_h = a_h * B + b_h (the index privatizers count)
    rewards       (runs, H) float  r_h(s_h, a_h, b_h)
    """
    states: np.ndarray
    actions_max: np.ndarray
    actions_min: np.ndarray
    joint_actions: np.ndarray
    rewards: np.ndarray


@dataclass(frozen=True, eq=False)
class MarkovGame(TabularModel):
    """MG = (S, A, B, H, {P_h}, {r_h}, d_1), two-player zero-sum.

    P (H, S, A, B, S): P[h, s, a, b, s'] = P_h(s' | s, a, b).
    r (H, S, A, B):    deterministic known reward in [0, 1] (gain of the max-player).
    init (S,):         initial distribution (the paper has a fixed s_1; an int gives that).
    """

    P: np.ndarray
    r: np.ndarray
    init: np.ndarray
    name: str = ""
    _cdf: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        P = as_float_array("P", self.P, 5)
        H, S, A, B, S2 = P.shape
        if S2 != S:
            raise InputError(f"P must have shape (H, S, A, B, S); got {P.shape} (next-state axis {S2} != S = {S})")
        check_distributions("P", P, what="rows P[h, s, a, b, :]")
        r = as_float_array("r", self.r, 4, (H, S, A, B))
        check_unit_interval("r", r)
        init = as_initial_distribution(self.init, S)
        self._store_model(P, r, init)

    @property
    def B(self) -> int:
        return self.P.shape[3]

    def __repr__(self) -> str:
        label = f"{self.name!r}, " if self.name else ""
        return f"MarkovGame({label}H={self.H}, S={self.S}, A={self.A}, B={self.B})"

    # -------------------------------------------------------------- views
    def joint_mdp(self) -> TabularMDP:
        """The MDP on joint actions j = a * B + b (A*B actions); C-order reshape gives exactly that."""
        return self._joint_mdp

    @cached_property
    def _joint_mdp(self) -> TabularMDP:
        H, S, A, B = self.H, self.S, self.A, self.B
        return TabularMDP(self.P.reshape(H, S, A * B, S), self.r.reshape(H, S, A * B), self.init,
                          "deterministic", name=self.name)

    def joint_index(self, a, b) -> np.ndarray:
        return np.asarray(a) * self.B + np.asarray(b)

    def split_joint(self, j) -> tuple[np.ndarray, np.ndarray]:
        """j -> (a, b)."""
        return np.divmod(np.asarray(j), self.B)

    @classmethod
    def from_mdp(cls, mdp: TabularMDP) -> "MarkovGame":
        """The B = 1 embedding of an MDP (Remark 2.4): rewards are the means."""
        return cls(mdp.P[:, :, :, None, :], mdp.r[:, :, :, None], mdp.init, name=mdp.name)

    # --------------------------------------------------------- simulation
    def reset(self, rng: np.random.Generator, runs: int) -> np.ndarray:
        check_rng(rng)
        runs = check_runs(runs)
        return sample_from_cdf(np.broadcast_to(self._init_cdf, (runs, self.S)), rng)

    def step(self, h: int, states, actions_max, actions_min, rng: np.random.Generator):
        """(next_states, rewards) for every run at 0-based step h under joint actions (a, b)."""
        check_rng(rng)
        if isinstance(h, bool) or not isinstance(h, (int, np.integer)) or not 0 <= h < self.H:
            raise InputError(f"step h must be an integer in 0..{self.H - 1} (0-based), got {h!r}")
        s = as_index_array("states", states, self.S)
        a = as_index_array("actions_max", actions_max, self.A)
        b = as_index_array("actions_min", actions_min, self.B)
        if not (s.shape == a.shape == b.shape):
            raise InputError(f"states, actions_max, actions_min must share a shape, got {s.shape}, {a.shape}, {b.shape}")
        return sample_from_cdf(self._cdf[h, s, a, b], rng), self.r[h, s, a, b].astype(np.float64)

    def rollout(self, policy, rng: np.random.Generator, runs: int | None = None,
                initial_states=None) -> GameTrajectories:
        """Play ``policy`` for ``runs`` independent episodes.

        ``policy`` is either a correlated policy pi (.., H, S, A, B) (joint action drawn from
        pi_h(., . | s)), or a pair (mu, nu) of Markov policies, each deterministic int (.., H, S) or
        stochastic float (.., H, S, A) / (.., H, S, B), played independently (a product policy).
        An optional leading run axis gives each run its own policy, as in :meth:`TabularMDP.rollout`.
        """
        check_rng(rng)
        H, S, A, B = self.H, self.S, self.A, self.B
        if isinstance(policy, tuple):
            if len(policy) != 2:
                raise InputError("a product policy is a pair (mu, nu)")
            mu, det_mu = as_policy(policy[0], H, S, A, name="mu")
            nu, det_nu = as_policy(policy[1], H, S, B, name="nu")
            mu = one_hot(mu, A) if det_mu else mu
            nu = one_hot(nu, B) if det_nu else nu
            pi = mu[..., :, None] * nu[..., None, :]
        else:
            pi = np.asarray(policy, dtype=np.float64)
            if pi.ndim < 4 or pi.shape[-4:] != (H, S, A, B):
                raise InputError(f"correlated policy must have shape (..., H, S, A, B) = (..., {H}, {S}, {A}, {B}), "
                                 f"got {pi.shape}")
            if not np.all(np.isfinite(pi)):
                raise InputError("correlated policy contains NaN or infinite entries")
            check_distributions("correlated policy", pi.reshape(pi.shape[:-2] + (A * B,)),
                                what="joint action distributions")
        joint = pi.reshape(pi.shape[:-2] + (A * B,))
        mdp = self.joint_mdp()
        traj = mdp.rollout(joint, rng, runs=runs, initial_states=initial_states)
        a, b = np.divmod(traj.actions, B)
        return GameTrajectories(traj.states, a, b, traj.actions, traj.rewards)
