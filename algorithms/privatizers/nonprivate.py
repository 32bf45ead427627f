"""NoPrivatizer: exact counts for the non-private baselines (docs/derivations.md#readings, UCBVI; Nash-VI).

N~ = N, R~ = R, E = 0, no post-processing (the LP with E = 0 would keep N anyway). It makes no privacy
claim: ``claim`` is None and ``dp_event()`` is ``NonPrivateDpEvent``. The baseline's convention for
unvisited pairs ("N = 0 => bonus = infinity") belongs to the algorithm, not here.
"""
from __future__ import annotations

import numpy as np

from dpcheck.algorithms.privatizers.base import CompiledNoise, CountPrivatizer, Declaration, PrivateCounts


class ExactRelease:
    """The noise hooks of a count privatizer that adds none: nothing drawn, nothing kept beyond the counts,
    the counts released as they are. Mixed in before :class:`CountPrivatizer` by :class:`NoPrivatizer` and by
    the audits' positive controls (``dpcheck.audits.lib.ucbvi.ExactCounts``), which differ only in E."""

    def _start_noise(self, rng):
        pass

    def _ingest(self, visits, transitions, rewards):
        pass

    def _noisy_counts(self):
        return self._N.copy(), self._Ntr.copy(), None if self._R is None else self._R.copy()


class NoPrivatizer(ExactRelease, CountPrivatizer):
    """Exact counts, E = 0 (non-private baselines)."""

    name = "none"
    notion = "none"
    source = "non-private baseline (no privacy claim)"

    def __init__(self, epsilon: float = 1.0, beta: float = 0.1, calibration: str = "strict",
                 width_mode: str = "rigorous"):
        # accepts (and ignores for the noise) the same arguments, so loaders can pass them uniformly
        super().__init__(epsilon=epsilon, beta=beta, calibration=calibration, width_mode=width_mode)

    @property
    def claim(self):
        return None

    @staticmethod
    def event_for(neighbouring: str = "replacement"):
        import dp_accounting
        return dp_accounting.NonPrivateDpEvent()

    def declare(self, H: int, S: int, A: int, K: int, rewards: bool = True, *, rng=None) -> Declaration:
        """No claim, NonPrivateDpEvent, E = 0, whatever the sizes."""
        if not self._declares_itself(NoPrivatizer):
            return super().declare(H, S, A, K, rewards, rng=rng)
        return Declaration(claim=None, width=0.0, event=self.event_for)

    def dp_event(self, neighbouring: str = "replacement"):
        return self.event_for(neighbouring)

    def compiled_noise(self) -> CompiledNoise | None:
        """The "exact" process: no noise, the counts released as they are."""
        self._require_started()
        # the mixed-in hooks count as NoPrivatizer's own: a subclass that overrides one is not exact
        return CompiledNoise("exact") if self._runs_as(NoPrivatizer, ("_start_noise", "_compute_width")) else None

    def _compute_width(self) -> float:
        return 0.0

    def release(self) -> PrivateCounts:
        self._require_started()
        v, t, r = self._noisy_counts()
        return PrivateCounts(visits=v, transitions=t, rewards=r, noisy_visits=v.copy(),
                             noisy_transitions=t.copy(), width=0.0)
