"""Several count privatizers side by side in one batch of runs (common random numbers across them).

A regret sweep runs the same algorithm with privatizers that differ only in their parameters (the eps grid
of Qiao & Wang 2024, Theorems 5.2 / 5.5; README.md "Speed"), every run from the same seed, so that a
privacy cost R_priv - R_nonpriv is a paired difference. Run one after the other, each run is a Python loop
over K episodes on a handful of runs, where per-call overhead dominates. :class:`StackedPrivatizers` lets an
algorithm run them as ONE batch: member i owns the i-th block of ``runs / n`` runs, and every member starts
from its own copy of the noise stream the algorithm hands over, i.e. exactly the stream it would get in a
run of its own from the same seed. With an algorithm that replays the environment and policy draws of one
block for every block (``DPNashVI.run(..., blocks=n)``), block i of the stacked run is the run of member i
alone, draw for draw.
"""
from __future__ import annotations

import copy
import functools
from dataclasses import replace

import numpy as np

from dpcheck.errors import InputError

__all__ = ["StackedPrivatizers"]

@functools.lru_cache(maxsize=None)
def _release_kernel():
    """``_stacked_kernels.release_rows`` (numba), or None if numba is not installed; imported once per process.
    (An lru_cache, not a module-level list filled on first use: the chunk cache's fingerprint walks this
    function's code, not its cache, so the key does not depend on whether the kernel was loaded yet.)"""
    try:
        from dpcheck.algorithms.privatizers._stacked_kernels import release_rows
    except ImportError:
        return None
    return release_rows


class StackedPrivatizers:
    """Members ``privatizers[i]`` on blocks of ``runs / n`` runs each; ``width`` is per run, shape (runs,).

    All members must be private (a width > 0) or all exact (width 0): the algorithm's exact-count convention
    is a property of the whole batch.
    """

    def __init__(self, privatizers):
        self.members = list(privatizers)
        if not self.members:
            raise InputError("StackedPrivatizers needs at least one privatizer")
        self.blocks = len(self.members)

    def __repr__(self):
        return f"StackedPrivatizers({self.members!r})"

    def start(self, runs: int, H: int, S: int, A: int, K: int, rng: np.random.Generator, rewards: bool = True):
        if runs % self.blocks:
            raise InputError(f"StackedPrivatizers: runs={runs} is not a multiple of {self.blocks} members")
        self.runs, self.per_block = int(runs), int(runs) // self.blocks
        # each member gets the stream state ``rng`` has now: what it would receive in a run of its own
        for m in self.members:
            m.start(self.per_block, H, S, A, K, copy.deepcopy(rng), rewards=rewards)
        widths = np.array([float(m.width) for m in self.members])
        if (widths == 0).any() and not (widths == 0).all():
            raise InputError("StackedPrivatizers: members mix exact (width 0) and private counts")
        self._width = np.repeat(widths, self.per_block)
        # the members' post-processing (the Section 5.1.1 LP, projection.py) in one call over all blocks, where
        # every member releases through CountPrivatizer.release and each block alone already takes the LP's
        # column path: that path treats every row on its own, so the rows come out as in the members' calls
        from dpcheck.algorithms.privatizers import projection as pj
        from dpcheck.algorithms.privatizers.base import CountPrivatizer
        self._joint_release = (all(type(m).release is CountPrivatizer.release for m in self.members)
                               and not (widths == 0).all() and 2 <= S <= pj._COLUMN_MAX_S
                               and self.per_block * H * S * A >= pj._COLUMN_MIN_ROWS)
        # its numba kernel (_stacked_kernels.py, numpy's result bit for bit) where numpy's row sum is a left fold
        self._release_kernel = _release_kernel() if self._joint_release and S < 8 else None
        if self._release_kernel is not None:
            self._Erow = np.repeat(widths, self.per_block * H * S * A)
            self._network = np.array(pj.sorting_network(S), dtype=np.int64).reshape(-1, 2)
        return self

    def _release_jointly(self):
        """CountPrivatizer.release of every member (N^ from its own noise process, then the LP with band E/4 and
        the shift E/(2S) of its own width E), as one batch."""
        from dpcheck.algorithms.privatizers import projection as pj
        from dpcheck.algorithms.privatizers.base import PrivateCounts
        noisy = [m._noisy_counts() for m in self.members]
        nv = np.concatenate([x[0] for x in noisy], axis=0)
        nt = np.concatenate([x[1] for x in noisy], axis=0)
        rw = None if noisy[0][2] is None else np.concatenate([x[2] for x in noisy], axis=0)
        S = nt.shape[-1]
        if self._release_kernel is not None:
            ok, trans, visits = self._release_kernel(nt.reshape(-1, S), nv.reshape(-1), self._Erow, self._network)
            if ok:
                return PrivateCounts(visits=visits.reshape(nv.shape), transitions=trans.reshape(nt.shape), rewards=rw,
                                     noisy_visits=nv, noisy_transitions=nt, width=self._width)
        E = self._width.reshape((-1,) + (1,) * (nv.ndim - 1))
        res = pj._project(nt, nv, E / 4.0, False)
        trans = res.counts + (E / (2.0 * S))[..., None]
        return PrivateCounts(visits=pj._sum_last(trans), transitions=trans, rewards=rw, noisy_visits=nv,
                             noisy_transitions=nt, width=self._width)

    @property
    def width(self) -> np.ndarray:
        """E of every run, (runs,): member i's width on block i."""
        return self._width

    def release(self):
        if self._joint_release:
            return self._release_jointly()
        parts = [m.release() for m in self.members]
        cat = (lambda name: None if getattr(parts[0], name) is None
               else np.concatenate([getattr(p, name) for p in parts], axis=0))
        return replace(parts[0], visits=cat("visits"), transitions=cat("transitions"), rewards=cat("rewards"),
                       noisy_visits=cat("noisy_visits"), noisy_transitions=cat("noisy_transitions"),
                       width=self._width)

    def observe(self, states, actions, rewards=None) -> None:
        n = self.per_block
        for i, m in enumerate(self.members):
            sl = slice(i * n, (i + 1) * n)
            m.observe(states[sl], actions[sl], None if rewards is None else rewards[sl])
