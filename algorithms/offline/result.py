"""What every offline learner of this package returns (APVIResult, LinearResult): the greedy policy, its
pessimistic values, the learner's configuration and the DpEvent of what it released."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dpcheck.algorithms.envs._validate import one_hot


@dataclass(frozen=True)
class OfflineResult:
    """policy (runs, H, S) int, values (runs, H+1, S), q_values (runs, H, S, A); ``config`` (the algorithm's
    parameters) and ``dp_event`` (of the released statistics; NonPrivateDpEvent with the noise off) are keyword
    fields, after every field of a subclass."""

    policy: np.ndarray
    values: np.ndarray
    q_values: np.ndarray
    config: dict = field(default_factory=dict, kw_only=True)
    dp_event: object = field(default=None, kw_only=True)

    @property
    def policy_probs(self) -> np.ndarray:
        """The policy as action probabilities (runs, H, S, A): one-hot on ``policy``."""
        return one_hot(self.policy, self.q_values.shape[-1])
