"""Compiled counting of offline datasets (numba): one pass over the trajectories.

Same counts as the numpy path of ``OfflineDataset.counts`` (integers, so identical); the reward sums add
the same floats in trajectory order, the numpy path block by block, so they agree to rounding.
Used only when numba imports (it is a dependency of the project; the numpy path stays the reference).
"""
from __future__ import annotations

from numba import njit


@njit(cache=True, nogil=True)
def count_transitions(states, actions, rewards, has_rewards, S, A, trip, rsum):
    """states (runs, n, H+1), actions (runs, n, H) int64; rewards (runs, n, H) float (ignored unless
    has_rewards) -> adds into trip (runs*H*S*A*S,) int64 and rsum (runs*H*S*A,) float64."""
    runs, n, H = actions.shape
    for r in range(runs):
        for i in range(n):
            for h in range(H):
                p = ((r * H + h) * S + states[r, i, h]) * A + actions[r, i, h]
                trip[p * S + states[r, i, h + 1]] += 1
                if has_rewards:
                    rsum[p] += rewards[r, i, h]
