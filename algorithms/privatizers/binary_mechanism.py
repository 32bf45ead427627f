"""Binary (tree) mechanism for continual counting (Chan, Shi & Song 2011, Algorithm 2).

Papers: Chan, Shi & Song 2011, Algorithm 2, as used by Qiao & Wang 2023 and 2024, Section 5.1
(docs/derivations.md#noise-calibration).

* ``L = floor(log2 K) + 1`` levels; node ``(j, m)`` covers positions ``(m-1) 2^j + 1 .. m 2^j`` and holds
  the p-sum of the items there. Every position is in one node per level, so in at most L nodes.
* A node's noise is drawn ONCE, when the node completes (after item ``m 2^j``), and reused by every
  later release (docs/derivations.md#readings: fresh noise per release multiplies the privacy cost by the number of releases).
* The release after ``t`` items is ``B(t)`` = sum of the ``popcount(t)`` noisy nodes of the dyadic
  decomposition of ``{1..t}``; ``B(0) = 0``.

Implementation: the lazy form of Chan et al. At time ``t`` exactly one node completes, at level
``i = lowest set bit of t`` (index ``m = t / 2^i``, odd); its p-sum is ``z_t`` plus the p-sums of the
open nodes below level ``i``, which are then discarded. Nodes with even ``m`` are never used by any
release and are never formed. The releases are kept by recurrence rather than re-summed:
``B(t) = B(t - 2^i) + noisy node (i, t >> i)`` (the decomposition of ``{1..t}`` is that of
``{1..t - 2^i}`` plus the new node), with ``prefix[j] = B(t with its bits below j cleared)`` for
``j = 0..L``; a step writes ``prefix[0..i]`` and a release is ``prefix[0]`` -- one pass instead of
``popcount(t)``. The sum is the same set of noisy nodes, added from the highest level down. One step costs
O(i + 1) array operations (amortised 2) over all counters, which are batched in an arbitrary array
shape (runs, ...).

Matrix-valued streams (Zhou 2022, Section 6.1: the Gram-matrix counters of Private-LinOpt-VI/-PO) use
the same tree with ``TreeCounter(..., symmetric=True)``: the counters' last two axes are a square
matrix and every node's noise is a symmetric Gaussian matrix (i.i.d. entries on and above the
diagonal, mirrored below: neither ``W + W^T`` nor an independent lower triangle), so every release
is exactly symmetric. ``BinaryMechanism(..., keep_noise=True)`` also keeps the noise of the live
nodes so that checkers can read the total noise of the current release (``noise()``, the N_{h,p}^k of
Zhou 2022, Section 6.1) without subtracting two large sums.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from dpcheck.errors import InputError
from dpcheck.algorithms.privatizers.noise import laplace

NOISES = ("laplace", "gaussian")


def tree_levels(K: int) -> int:
    """L = floor(log2 K) + 1: the number of dyadic levels for positions 1..K (docs/derivations.md#noise-calibration; never ln)."""
    K = int(K)
    if K < 1:
        raise InputError(f"the stream length K must be >= 1, got {K}")
    return K.bit_length()


def release_nodes(t: int) -> list[tuple[int, int]]:
    """The nodes (j, m) whose noisy p-sums make up B(t), most significant bit first (Section 5.1)."""
    nodes, start = [], 0
    for j in range(int(t).bit_length() - 1, -1, -1):
        if (t >> j) & 1:
            nodes.append((j, start // (1 << j) + 1))
            start += 1 << j
    return nodes


def nodes_containing(position: int, K: int) -> list[tuple[int, int]]:
    """The formed nodes (odd m, complete by K) that contain ``position`` (1-based): at most L."""
    out = []
    for j in range(tree_levels(K)):
        m = (position - 1) // (1 << j) + 1
        if m % 2 == 1 and m * (1 << j) <= K:
            out.append((j, m))
    return out


@dataclass(frozen=True)
class TreeCounter:
    """Configuration of a batch of binary-tree counters, and the privacy it declares.

    horizon:     K, the number of items of every stream (the tree needs it in advance).
    node_scale:  the scale of every node's noise: Laplace scale b (density exp(-|x|/b)/(2b)), or
                 Gaussian standard deviation sigma.
    sensitivity: how much one user can change the vector of ALL true node p-sums of the counters this
                 tree serves: l1 norm for Laplace noise, l2 norm for Gaussian noise. (DP-UCBVI, one
                 family, replacement: 2 H L; add/remove: H L.)
    noise:       "laplace" (pure DP) or "gaussian".
    symmetric:   the counters' last two axes form a square matrix and each node's noise is a symmetric
                 Gaussian matrix (entries on/above the diagonal i.i.d., mirrored; Zhou 2022,
                 Section 6.1). The mechanism is then the Gaussian mechanism on the upper triangle (diagonal
                 included) of the node p-sums, so ``sensitivity`` is the l2 change of those entries;
                 the Frobenius norm used by the paper bounds it from above.

    The noisy node vector is the Laplace (Gaussian) mechanism applied to the node p-sums, and every
    release is post-processing of it, so ``dp_event()`` is exactly
    ``LaplaceDpEvent(node_scale / sensitivity)`` (resp. ``GaussianDpEvent``): privacy loss at most
    ``sensitivity / node_scale`` for Laplace.
    """

    horizon: int
    node_scale: float
    sensitivity: float = 1.0
    noise: str = "laplace"
    symmetric: bool = False

    def __post_init__(self):
        tree_levels(self.horizon)
        if not (np.isfinite(self.node_scale) and self.node_scale >= 0):
            raise InputError(f"node_scale must be a finite number >= 0, got {self.node_scale!r}")
        if not (np.isfinite(self.sensitivity) and self.sensitivity > 0):
            raise InputError(f"sensitivity must be a finite number > 0, got {self.sensitivity!r}")
        if self.noise not in NOISES:
            raise InputError(f"noise must be one of {NOISES}, got {self.noise!r}")
        if self.symmetric is not False and self.symmetric is not True:
            raise InputError(f"symmetric must be True or False, got {self.symmetric!r}")
        if self.symmetric and self.noise != "gaussian":
            raise InputError("symmetric matrix noise is defined for Gaussian node noise only")

    @property
    def levels(self) -> int:
        return tree_levels(self.horizon)

    @property
    def epsilon(self) -> float:
        """Pure-DP epsilon of the whole tree (Laplace): sensitivity / node_scale."""
        if self.noise != "laplace":
            raise InputError("epsilon is defined for Laplace node noise only; use dp_event()")
        return float("inf") if self.node_scale == 0 else self.sensitivity / self.node_scale

    def dp_event(self):
        import dp_accounting
        if self.node_scale == 0:
            return dp_accounting.NonPrivateDpEvent()
        mult = self.node_scale / self.sensitivity
        if self.noise == "laplace":
            return dp_accounting.LaplaceDpEvent(noise_multiplier=mult)
        return dp_accounting.GaussianDpEvent(noise_multiplier=mult)

    def draw(self, rng: np.random.Generator, shape, out: np.ndarray | None = None) -> np.ndarray:
        """Noise of one node for every counter in ``shape`` (into ``out`` if given, any strides).

        Draws are consumed in C order, so ``shape = (n, *counters)`` gives exactly the noises of n
        successive nodes (the compiled DP-UCBVI engine pre-draws a chunk of episodes this way)."""
        if out is not None and self.noise == "laplace" and self.node_scale != 0 and out.flags.c_contiguous:
            return laplace(rng, self.node_scale, shape, out=out)
        if self.node_scale == 0:
            w = np.zeros(shape)
        elif self.noise == "laplace":
            w = laplace(rng, self.node_scale, shape)
        elif self.symmetric:
            w = symmetric_gaussian(rng, self.node_scale, shape)
        else:
            w = rng.normal(0.0, self.node_scale, size=shape)
        if out is None:
            return w
        out[...] = w
        return out


def symmetric_gaussian(rng: np.random.Generator, sigma: float, shape) -> np.ndarray:
    """Symmetric Gaussian matrices over the last two axes of ``shape`` (Zhou 2022, Section 6.1).

    One N(0, sigma^2) draw per entry (p, q) with p <= q (row-major upper triangle, diagonal included,
    consumed in C order over the leading axes), copied to (q, p): every entry has variance sigma^2 and
    the matrix is exactly symmetric.
    """
    shape = tuple(shape)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise InputError(f"symmetric matrix noise needs square trailing axes, got shape {shape}")
    rows, cols = _upper_triangle(shape[-1])
    upper = rng.normal(0.0, sigma, size=shape[:-2] + (rows.size,))
    out = np.empty(shape)
    out[..., rows, cols] = upper
    out[..., cols, rows] = upper
    return out


@functools.lru_cache(maxsize=64)
def _upper_triangle(n: int) -> tuple[np.ndarray, np.ndarray]:
    """np.triu_indices(n), computed once per n (read-only): LinOpt's trees call symmetric_gaussian once per
    node, and building the indices was three quarters of each call (profile of private_linopt_vi --quick)."""
    rows, cols = np.triu_indices(n)
    rows.setflags(write=False)
    cols.setflags(write=False)
    return rows, cols


class BinaryMechanism:
    """A batch of binary-tree counters sharing one :class:`TreeCounter` configuration.

    ``BinaryMechanism(counter, shape, rng)``; ``step(z)`` ingests item ``t`` of every stream
    (``z`` of shape ``shape``, entries in [0, 1]); ``release()`` returns ``B(t)`` for every counter.
    All noise comes from ``rng``. ``node_draws`` counts the node noises drawn so far (one node per
    step per counter) so tests can verify that nothing is redrawn; ``last_noise`` is the noise of the
    node the last step completed. With ``keep_noise=True`` the noise of every live node is kept and
    ``noise()`` returns the total noise of the current release (checkers only; the release itself is
    computed exactly as without it).
    """

    def __init__(self, counter: TreeCounter, shape, rng: np.random.Generator, keep_noise: bool = False):
        self.counter = counter
        self.shape = tuple(int(d) for d in np.atleast_1d(shape)) if np.ndim(shape) else (int(shape),)
        self.rng = rng
        L = counter.levels
        self.t = 0
        self.node_draws = 0
        self.last_level = None                           # level of the node completed by the last step
        # p-sums of the open node at each level; prefix[j] = B(t with its bits below j cleared), j = 0..L
        self._psum = np.zeros((L,) + self.shape)
        self._prefix = np.zeros((L + 1,) + self.shape)
        self.last_noise = None
        self._noise = np.zeros((L,) + self.shape) if keep_noise else None
        if counter.symmetric and (len(self.shape) < 2 or self.shape[-1] != self.shape[-2]):
            raise InputError(f"a symmetric tree needs square trailing counter axes, got shape {self.shape}")

    @property
    def levels(self) -> int:
        return self.counter.levels

    def step(self, z) -> None:
        z = np.asarray(z, dtype=float)
        if z.shape != self.shape:
            raise InputError(f"binary mechanism: item shape {z.shape} != counter shape {self.shape}")
        if self.t >= self.counter.horizon:
            raise InputError(f"binary mechanism: more than K={self.counter.horizon} items")
        self.t += 1
        i = (self.t & -self.t).bit_length() - 1          # lowest set bit: the level that completes
        # Chan et al.: alpha_i = sum_{j<i} alpha_j + z_t ; alpha_j = 0 for j < i
        node = self._psum[:i].sum(axis=0) + z if i else z.copy()
        self._psum[:i] = 0.0
        self._psum[i] = node
        self._advance(i, node + self._draw(i))

    def step_sparse(self, index, values) -> None:
        """``step(z)`` for an item given sparsely: ``z.ravel()[index] = values``, 0 elsewhere (indices
        distinct). Same node values and the same noise draws as the dense step (x + 0 = x exactly)."""
        if self.t >= self.counter.horizon:
            raise InputError(f"binary mechanism: more than K={self.counter.horizon} items")
        self.t += 1
        i = (self.t & -self.t).bit_length() - 1
        node = self._psum[:i].sum(axis=0) if i else np.zeros(self.shape)
        node.reshape(-1)[index] += values
        self._psum[:i] = 0.0
        self._psum[i] = node
        self._advance(i, node + self._draw(i))

    def _draw(self, i):
        """The noise of the node completing at level i: drawn once here, never again (docs/derivations.md#readings)."""
        noise = self.counter.draw(self.rng, self.shape)
        self.last_noise = noise
        if self._noise is not None:
            self._noise[i] = noise
        return noise

    def _advance(self, i, noisy_node) -> None:
        """B(t) = B(t - 2^i) + the noisy node completed at level i; prefix[0..i] := B(t)."""
        np.add(self._prefix[i + 1], noisy_node, out=self._prefix[0])
        self._prefix[1:i + 1] = self._prefix[0]
        self.node_draws += 1
        self.last_level = i

    def export_state(self) -> dict:
        """A copy of the state: ``t`` items seen, ``node_draws``, ``partial_sums`` (L, *shape) (the true
        p-sum of the latest node of each level) and ``prefix`` (L+1, *shape) (prefix[i] = B(t) with
        the bits below i cleared; prefix[0] = B(t))."""
        return {"t": self.t, "node_draws": self.node_draws, "partial_sums": self._psum.copy(),
                "prefix": self._prefix.copy()}

    def import_state(self, state: dict) -> None:
        """Continue from ``state`` (the form :meth:`export_state` gives): the level of the last
        completed node follows from t (the lowest set bit)."""
        t = int(state["t"])
        if not 0 <= t <= self.counter.horizon:
            raise InputError(f"binary mechanism: t={t} outside 0..K={self.counter.horizon}")
        self._psum[...] = state["partial_sums"]
        self._prefix[...] = state["prefix"]
        self.t = t
        self.node_draws = int(state["node_draws"])
        self.last_level = (t & -t).bit_length() - 1 if t else None

    def completed_node(self) -> tuple[tuple[int, int], np.ndarray]:
        """((j, m), true p-sum) of the node the last step completed (white-box sensitivity audits)."""
        i = self.last_level
        return (i, self.t >> i), self._psum[i].copy()

    def release(self) -> np.ndarray:
        """B(t): the sum of the noisy nodes of the set bits of t (popcount(t) nodes); B(0) = 0."""
        return self._prefix[0].copy()

    def noise(self) -> np.ndarray:
        """The total noise of the current release: the sum of the noises of the popcount(t) nodes of
        B(t) (needs ``keep_noise=True``; for checkers and tests only)."""
        if self._noise is None:
            raise InputError("noise() needs BinaryMechanism(..., keep_noise=True)")
        return self._sum_set_bits(self._noise)

    def exact(self) -> np.ndarray:
        """The true prefix sum sum_{i<=t} z_i (for checkers and tests only)."""
        return self._sum_set_bits(self._psum)

    def _sum_set_bits(self, per_level: np.ndarray) -> np.ndarray:
        # the latest completed node of level j is node (j, t >> j) exactly when bit j of t is set,
        # so the set bits of t index the dyadic decomposition of {1..t} (Section 5.1)
        bits = [j for j in range(self.t.bit_length()) if (self.t >> j) & 1]
        if not bits:
            return np.zeros(self.shape)
        # = per_level[bits].sum(axis=0) (a reduction over the outer axis adds the levels in order),
        # without the fancy-indexed copy of popcount(t) levels
        out = per_level[bits[0]].copy()
        for j in bits[1:]:
            out += per_level[j]
        return out
