"""numba kernel of the calibrated width's Monte Carlo (dpcheck.algorithms.privatizers.width.simulate_max_noise)."""
from __future__ import annotations

from numba import njit


@njit(cache=True)
def prefix_error_max(eta, t0, tree, state, maxabs):
    """Advance the release errors of ``eta.shape[1]`` counters by the positions t0+1 .. t0+n.

    eta (n, c): the noise drawn at each position; state (L+1, c): state[j] = error of the release at
    t with its bits below j cleared (tree), state[0] = running sum (local); maxabs (c,) running max of
    |error| -- both updated in place.
    """
    n, c = eta.shape
    for i in range(n):
        t = t0 + i + 1
        if tree:
            lvl = 0
            while not (t >> lvl) & 1:
                lvl += 1
            for k in range(c):
                e = state[lvl + 1, k] + eta[i, k]
                for j in range(lvl + 1):
                    state[j, k] = e
                a = abs(e)
                if a > maxabs[k]:
                    maxabs[k] = a
        else:
            for k in range(c):
                e = state[0, k] + eta[i, k]
                state[0, k] = e
                a = abs(e)
                if a > maxabs[k]:
                    maxabs[k] = a
