"""Results of a run of Algorithm 1 / 2 (He & Zhou 2026, Algorithms 1-2, Appendix D, Table 1): immutable records.

Arrays have the run axis first; episodes are 0-based in arrays (paper's k = index k-1).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dpcheck.errors import InputError
from dpcheck.algorithms.gfa.function_class import FunctionClass
from dpcheck.algorithms.gfa.privacy import GFAPrivacy


@dataclass(frozen=True, eq=False)
class MixturePolicy:
    """pi_hat = Unif(pi_1, ..., pi_K) (Algorithm 1 line 12), one per run: a TRAJECTORY-level mixture (Algorithms 1-2) --
    draw k uniformly from [K] once, then run the greedy pi_{f^(k)} for the whole episode.

    fclass            the class the greedy policies come from
    episode_entries   f^(k) for every episode (runs, K)
    """

    fclass: FunctionClass
    episode_entries: np.ndarray

    def weights(self) -> np.ndarray:
        """Mixture weight of every class entry (runs, N): (1/K) #{k : f^(k) = f}."""
        runs, K = self.episode_entries.shape
        w = np.zeros((runs, self.fclass.N))
        np.add.at(w, (np.repeat(np.arange(runs), K), self.episode_entries.ravel()), 1.0 / K)
        return w

    def sample(self, rng: np.random.Generator) -> np.ndarray:
        """One deterministic policy per run (runs, H, S) for one whole episode (Algorithms 1-2)."""
        runs, K = self.episode_entries.shape
        k = rng.integers(K, size=runs)
        return self.fclass.greedy_policies(self.episode_entries[np.arange(runs), k])

    def expected_return(self, entry_returns) -> np.ndarray:
        """J(pi_hat) = (1/K) sum_k J(pi_k) (runs,) from the exact returns of the class entries (N,)."""
        J = np.asarray(entry_returns, dtype=np.float64)
        if J.shape != (self.fclass.N,):
            raise InputError(f"entry_returns must have shape (N,) = ({self.fclass.N},), got {J.shape}")
        return J[self.episode_entries].mean(axis=1)


@dataclass(frozen=True, eq=False)
class GFARun:
    """One batched run of Algorithm 1 / 2 or a non-private baseline.

    config           the algorithm's parameters (``agent.config``)
    privacy          the GFAPrivacy declaration the run used (beta_EM, eps0, M, Delta_S, Claim)
    K, B, M, runs    episodes, batch size, updates M = ceil(K/B), independent runs
    update_episodes  0-based first episode of every batch (M,) = (0, B, 2B, ...)
    selected         f^(k) drawn at each update (runs, M): the index of the class entry
    scores           S(f) at each update (runs, M, N) if ``record_scores`` else None (for EM-utility checks, the EM utility step of Theorem 3.1's proof)
    states           s_1..s_{H+1} of every episode (runs, K, H+1)  [record=True]
    actions          a_1..a_H of every episode (runs, K, H)        [record=True]: part of the JDP output
    rewards          r_1..r_H (Algorithm 1) (runs, K, H) or the outcome r(tau) (Algorithm 2) (runs, K)
    regret           exact per-episode regret J* - J(pi_k) (runs, K), None without a known model
    optimal_return   J*
    selected_returns exact J(pi_{f^(k)}) at each update (runs, M), None without a known model
    output_policy    MixturePolicy pi_hat = Unif(pi_1..pi_K)
    duration_s       wall-clock time of ``run``
    """

    config: dict
    privacy: GFAPrivacy
    K: int
    B: int
    M: int
    runs: int
    update_episodes: np.ndarray
    selected: np.ndarray
    scores: np.ndarray | None
    states: np.ndarray | None
    actions: np.ndarray | None
    rewards: np.ndarray | None
    regret: np.ndarray | None
    optimal_return: float | None
    selected_returns: np.ndarray | None
    output_policy: MixturePolicy
    duration_s: float = 0.0
    extra: dict = field(default_factory=dict)

    @property
    def episode_entries(self) -> np.ndarray:
        """f^(k) of every episode (runs, K): the update's draw, reused within the batch (Algorithms 1-2)."""
        return self.output_policy.episode_entries

    @property
    def cumulative_regret(self) -> np.ndarray | None:
        return None if self.regret is None else np.cumsum(self.regret, axis=1)

    def plateau_episode(self, fraction: float = 0.95) -> int | None:
        """Appendix D, Table 1's metric on the run-averaged cumulative regret: the first (1-based) episode k with
        Reg(k) >= fraction * Reg(K); None without regret, 1 if Reg(K) = 0."""
        if self.regret is None:
            return None
        cum = self.cumulative_regret.mean(axis=0)
        if cum[-1] <= 0:
            return 1
        return int(np.argmax(cum >= fraction * cum[-1])) + 1

    def per_run_plateaus(self, fraction: float = 0.95) -> np.ndarray | None:
        """The Appendix D, Table 1 plateau episode of every run (runs,) (the median is reported too)."""
        if self.regret is None:
            return None
        cum = self.cumulative_regret
        hit = cum >= fraction * cum[:, -1:]
        return np.where(cum[:, -1] > 0, np.argmax(hit, axis=1) + 1, 1)

    @property
    def episodes_per_second(self) -> float:
        return self.K * self.runs / self.duration_s if self.duration_s > 0 else float("inf")

    def summary(self) -> str:
        reg = "" if self.regret is None else (
            f"; mean total regret {self.cumulative_regret[:, -1].mean():.4g}, plateau episode "
            f"{self.plateau_episode()}")
        return (f"{self.config.get('name', 'GFA')}: runs={self.runs} K={self.K} B={self.B} M={self.M}; "
                f"{self.privacy.summary()}{reg}; {self.duration_s:.3g} s")
