"""What every offline learner of this package returns (APVIResult, LinearResult): the greedy policy, its
pessimistic values, the learner's configuration and the DpEvent of what it released."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from dpcheck.algorithms.envs._validate import one_hot


@dataclass(frozen=True)
class OfflineResult:
    """policy (runs, H, S) int, values (runs, H+1, S), q_values (runs, H, S, A); ``config`` (the algorithm's
    parameters) and ``declare`` are keyword fields, after every field of a subclass.

    ``dp_event`` (of the released statistics; NonPrivateDpEvent with the noise off) is computed when it is
    read, by ``declare()``: a run does not import dp_accounting (about 1.6 s, for scipy.signal), which a black
    box calling the algorithm as its mechanism in fresh worker processes would otherwise pay in each."""

    policy: np.ndarray
    values: np.ndarray
    q_values: np.ndarray
    config: dict = field(default_factory=dict, kw_only=True)
    declare: Callable[[], object] | None = field(default=None, kw_only=True, repr=False, compare=False)

    @property
    def dp_event(self):
        """The dp_accounting DpEvent of what the run released (None if the learner declared none)."""
        return None if self.declare is None else self.declare()

    @property
    def policy_probs(self) -> np.ndarray:
        """The policy as action probabilities (runs, H, S, A): one-hot on ``policy``."""
        return one_hot(self.policy, self.q_values.shape[-1])
