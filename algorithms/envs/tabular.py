"""Finite-horizon tabular MDP (Qiao & Wang 2023, Section 2.1, Qiao & Wang 2022, Section 2).

Indexing: the papers count steps h = 1..H; arrays here are 0-based, so the paper's step h is
index h - 1, and ``V[H]`` (index H) is the terminal ``V_{H+1} = 0``.

Simulation is batched over independent runs: every state, action and reward array has the run
axis first. All randomness comes from the ``np.random.Generator`` passed in; within a step the
transition uniforms are drawn before the reward uniforms, so a fixed seed fixes everything.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from dpcheck.errors import InputError
from dpcheck.algorithms.envs._validate import (
    TabularModel,
    as_float_array, as_index_array, as_initial_distribution, as_policy, check_distributions,
    check_rng, check_runs, check_unit_interval, cumulative, sample_from_cdf,
)

REWARD_NOISE = ("deterministic", "bernoulli")


class Trajectories(NamedTuple):
    """A batch of episodes; the run axis first, then the paper's step index (0-based).

    states  (runs, H+1) int: s_1..s_{H+1} (the last is the terminal state, never acted in)
    actions (runs, H)   int: a_1..a_H
    rewards (runs, H) float: r_1..r_H, each in [0, 1]
    """
    states: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray


@dataclass(frozen=True, eq=False)
class TabularMDP(TabularModel):
    """Episodic, non-stationary tabular MDP M = (S, A, H, {P_h}, {r_h}, d_1).

    P (H, S, A, S):  P[h, s, a, s'] = P_h(s' | s, a); every row a distribution.
    r (H, S, A):     mean reward r_h(s, a) in [0, 1].
    init (S,):       initial distribution d_1 (an int is shorthand for a fixed s_1).
    reward_noise:    the reward *distribution* on [0, 1] whose mean is r (Qiao & Wang 2023, Section 2.1 has
                     random rewards):
                     "deterministic" -- the reward is exactly r_h(s, a);
                     "bernoulli"     -- the reward is Bernoulli(r_h(s, a)) in {0, 1}, the
                                        maximum-variance distribution on [0, 1] with that mean
                                        (the hardest case for reward privatisation).
                     Planning only needs the mean, so planners ignore this field.
    name:            a label for reports.

    Immutable: arrays are stored as read-only float64 copies, validated on construction.
    """

    P: np.ndarray
    r: np.ndarray
    init: np.ndarray
    reward_noise: str = "deterministic"
    name: str = ""
    _cdf: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        P = as_float_array("P", self.P, 4)
        H, S, A, S2 = P.shape
        if S2 != S:
            raise InputError(f"P must have shape (H, S, A, S); got {P.shape} (next-state axis {S2} != S = {S})")
        check_distributions("P", P, what="rows P[h, s, a, :]")
        r = as_float_array("r", self.r, 3, (H, S, A))
        check_unit_interval("r", r)
        init = as_initial_distribution(self.init, S)
        if self.reward_noise not in REWARD_NOISE:
            raise InputError(f"reward_noise must be one of {REWARD_NOISE}, got {self.reward_noise!r}")
        self._store_model(P, r, init)

    # ------------------------------------------------------------------ sizes: H, S, A from TabularModel
    def __repr__(self) -> str:
        label = f"{self.name!r}, " if self.name else ""
        return f"TabularMDP({label}H={self.H}, S={self.S}, A={self.A}, reward_noise={self.reward_noise!r})"

    def with_reward_noise(self, reward_noise: str) -> "TabularMDP":
        return TabularMDP(self.P, self.r, self.init, reward_noise, self.name)

    # ------------------------------------------------------------ simulation
    def reset(self, rng: np.random.Generator, runs: int) -> np.ndarray:
        """Initial states s_1 ~ d_1 for ``runs`` independent episodes -> (runs,) int."""
        check_rng(rng)
        runs = check_runs(runs)
        return sample_from_cdf(np.broadcast_to(self._init_cdf, (runs, self.S)), rng)

    def step(self, h: int, states, actions, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """One step at 0-based step ``h`` for every run: (next_states, rewards), same shape as states.

        next_states[i] ~ P_h(. | states[i], actions[i]), rewards[i] ~ r_h(states[i], actions[i]).
        """
        check_rng(rng)
        h = self._check_step(h)
        states = as_index_array("states", states, self.S)
        actions = as_index_array("actions", actions, self.A)
        if states.shape != actions.shape:
            raise InputError(f"states and actions must have the same shape, got {states.shape} and {actions.shape}")
        return self._step(h, states, actions, rng)

    def _step(self, h, states, actions, rng):
        next_states = sample_from_cdf(self._cdf[h, states, actions], rng)
        return next_states, self._reward(self.r[h, states, actions], rng)

    def _reward(self, mean: np.ndarray, rng) -> np.ndarray:
        if self.reward_noise == "bernoulli":
            return (rng.random(mean.shape) < mean).astype(np.float64)
        return mean.astype(np.float64, copy=True)

    def _check_step(self, h) -> int:
        if isinstance(h, bool) or not isinstance(h, (int, np.integer)) or not 0 <= h < self.H:
            raise InputError(f"step h must be an integer in 0..{self.H - 1} (0-based), got {h!r}")
        return int(h)

    def rollout(self, policy, rng: np.random.Generator, runs: int | None = None,
                initial_states=None) -> Trajectories:
        """Run ``policy`` for ``runs`` independent episodes.

        policy: deterministic int (H, S) or stochastic float (H, S, A), shared by all runs, or the
        same with a leading run axis, (runs, H, S) / (runs, H, S, A), one policy per run (this is how
        an online algorithm's batch of independent runs deploys its per-run greedy policies).
        ``runs`` may be omitted when the policy has a run axis. ``initial_states`` (runs,) overrides
        the draw from d_1 (no randomness is then consumed for it).
        """
        check_rng(rng)
        pol, deterministic = as_policy(policy, self.H, self.S, self.A)
        runs = self._runs_for(pol, deterministic, runs)
        pol = self._per_run(pol, deterministic, runs)
        if initial_states is None:
            s = self.reset(rng, runs)
        else:
            s = as_index_array("initial_states", initial_states, self.S)
            if s.shape != (runs,):
                raise InputError(f"initial_states must have shape ({runs},), got {s.shape}")
        H = self.H
        states = np.empty((runs, H + 1), dtype=np.int64)
        actions = np.empty((runs, H), dtype=np.int64)
        rewards = np.empty((runs, H), dtype=np.float64)
        states[:, 0] = s
        run_idx = np.arange(runs)
        for h in range(H):  # H is the only Python loop: steps are sequential by nature
            if deterministic:
                a = pol[run_idx, h, s]
            else:
                a = sample_from_cdf(cumulative(pol[run_idx, h, s]), rng)
            s, rew = self._step(h, s, a, rng)
            actions[:, h] = a
            rewards[:, h] = rew
            states[:, h + 1] = s
        return Trajectories(states, actions, rewards)

    @staticmethod
    def _runs_for(pol, deterministic, runs):
        base = 2 if deterministic else 3
        if pol.ndim == base:
            if runs is None:
                raise InputError("runs is required when the policy has no run axis")
            return check_runs(runs)
        if pol.ndim == base + 1:
            if runs is not None and runs != pol.shape[0]:
                raise InputError(f"runs = {runs} but the policy has a run axis of length {pol.shape[0]}")
            return pol.shape[0]
        raise InputError(f"policy may have at most one leading run axis, got shape {pol.shape}")

    @staticmethod
    def _per_run(pol, deterministic, runs):
        base = 2 if deterministic else 3
        if pol.ndim == base:
            return np.broadcast_to(pol, (runs,) + pol.shape)
        return pol
