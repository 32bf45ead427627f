"""Changing regularisers (Zhou 2022, Section 3, eqs. 1-2-2.3, Section 3, Z = lambda I): the interface LinOpt-VI-Reg / LinOpt-PO-Reg read.

A :class:`Regularizer` is a frozen configuration. ``start(runs, sizes, rng)`` returns its running state,
a :class:`TreeStatistics`, which ingests the rows of every finished episode (``observe``) and releases, at
the start of episode k, the regularised statistics the algorithm may read (``release``):

    Lambda_{h,p}^k = G_{h,p}^k + Z_{h,p}^k   (runs, H, d1, d1)     u_{h,p}^k = g_{h,p}^k + z_{h,p}^k   (runs, H, d1)
    Lambda_{h,r}^k = G_{h,r}^k + Z_{h,r}^k   (runs, H, d2, d2)     u_{h,r}^k = g_{h,r}^k + z_{h,r}^k   (runs, H, d2)

The algorithm never sees G and Z apart. ``constants(sizes)`` are the Assumption 2 constants (lambda_min,
lambda_max, nu per side) from which :func:`confidence_radii` computes beta_p(alpha), beta_r(alpha) (Lemma 3.1,
per-component constants); ``regularization()`` returns (Z_p, z_p, Z_r, z_r) for checkers only.

Both regularisers keep the sums G, g in the project's binary tree (algorithms/privatizers/binary_mechanism.py):
the ridge one with zero node noise, the privatizer with Gaussian node noise. The tree's release with zero
noise is the exact prefix sum (added in a fixed dyadic order), so the private algorithm with its noise off
and the ridge instantiation are the same computation bit for bit (Section 3, Z = lambda I reduction check).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcheck.errors import InputError
from dpcheck.algorithms.privatizers.binary_mechanism import BinaryMechanism, TreeCounter, tree_levels

COUNTERS = ("p1", "p2", "r1", "r2")   # B_{h,p,1}, B_{h,p,2}, B_{h,r,1}, B_{h,r,2} of Section 6.1


@dataclass(frozen=True)
class LinearSizes:
    """The public sizes a regulariser is configured for: K episodes, horizon H, feature dimensions d1
    (transition) and d2 (reward), and the declared d >= max(d1, d2) (Assumption 1)."""

    K: int
    H: int
    d1: int
    d2: int
    d: int | None = None

    def __post_init__(self):
        for name in ("K", "H", "d1", "d2"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise InputError(f"{name} must be an integer >= 1, got {v!r}")
            object.__setattr__(self, name, int(v))
        d = max(self.d1, self.d2) if self.d is None else self.d
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < max(self.d1, self.d2):
            raise InputError(f"d must be an integer >= max(d1, d2) = {max(self.d1, self.d2)}, got {self.d!r}")
        object.__setattr__(self, "d", int(d))

    @property
    def m(self) -> int:
        """Tree depth m = max(1, ceil(log2 K)) (proofs of Theorems 6.4-6.5, docs/derivations.md#noise-calibration): the levels of a tree over the K - 1
        insertions that releases prefix(k - 1), k <= K, ever use (episode K is never inserted)."""
        return tree_levels(self.insertions)

    @property
    def insertions(self) -> int:
        """Items per stream: episodes 1..K-1 (at least 1 so that the tree is defined for K = 1)."""
        return max(1, self.K - 1)


@dataclass(frozen=True)
class Assumption2:
    """The constants of Assumption 2, per side: with probability >= 1 - alpha, for all k, h,
    ||Z_{h,p}^k|| <= lambda_max_p, ||(Z_{h,p}^k)^{-1}|| <= 1/lambda_min_p, ||z_{h,p}^k||_{(Z^k)^{-1}} <= nu_p,
    and the same for r."""

    lambda_min_p: float
    lambda_max_p: float
    nu_p: float
    lambda_min_r: float
    lambda_max_r: float
    nu_r: float

    @property
    def lambda_min(self) -> float:
        return min(self.lambda_min_p, self.lambda_min_r)

    @property
    def lambda_max(self) -> float:
        return max(self.lambda_max_p, self.lambda_max_r)

    @property
    def nu(self) -> float:
        return max(self.nu_p, self.nu_r)

    def kappa(self, K: int, H: int) -> float:
        """kappa_{lambda_min} = ln(1 + K H^2 / lambda_min) (Assumption 2)."""
        return math.log1p(K * H * H / self.lambda_min)


def confidence_radii(c: Assumption2, sizes: LinearSizes, alpha: float) -> tuple[float, float]:
    """(beta_p(alpha), beta_r(alpha)) of Lemma 3.1, with the per-component constants:

    beta_p = (H/2) sqrt(2 ln(H/alpha) + d1 ln(1 + K H^2 / lambda_min_p)) + sqrt(d1 lambda_max_p) + nu_p
    beta_r = (1/2) sqrt(2 ln(H/alpha) + d2 ln(1 + K / (d2 lambda_min_r))) + sqrt(d2 lambda_max_r) + nu_r
    """
    K, H, d1, d2 = sizes.K, sizes.H, sizes.d1, sizes.d2
    beta_p = (H / 2.0) * math.sqrt(2.0 * math.log(H / alpha) + d1 * math.log1p(K * H * H / c.lambda_min_p)) \
        + math.sqrt(d1 * c.lambda_max_p) + c.nu_p
    beta_r = 0.5 * math.sqrt(2.0 * math.log(H / alpha) + d2 * math.log1p(K / (d2 * c.lambda_min_r))) \
        + math.sqrt(d2 * c.lambda_max_r) + c.nu_r
    return beta_p, beta_r


class Regularizer:
    """Interface of Section 3, eqs. 1-2 (see the module docstring). Subclasses are frozen dataclasses providing

    * ``name``;
    * ``constants(sizes, alpha) -> Assumption2`` (from the parameters and sizes, never from data);
    * ``trees(sizes) -> dict`` counter name (COUNTERS) -> :class:`TreeCounter` (node std 0 = exact sums);
      the privatizer's ``dp_event`` is built from the same TreeCounters its noise is drawn from;
    * ``shifts(sizes, alpha) -> (shift_p, shift_r)``: Z = N + shift I, N the tree noise of the release.

    A regulariser whose Z is not "tree noise + shift I" overrides ``start`` instead and returns any object
    with the members of :class:`TreeStatistics` the algorithms use: ``observe(x_p, y_p, x_r, y_r)``,
    ``release()``, ``regularization()`` (checker side) and ``shift_p``, ``shift_r`` (for the ||N|| figure).
    """

    name = "regularizer"

    def constants(self, sizes: LinearSizes, alpha: float) -> Assumption2:
        raise NotImplementedError

    def trees(self, sizes: LinearSizes) -> dict:
        raise NotImplementedError

    def shifts(self, sizes: LinearSizes, alpha: float) -> tuple[float, float]:
        raise NotImplementedError

    def floors(self, sizes: LinearSizes, alpha: float) -> tuple[float, float]:
        """Eigenvalue floors applied to a released Lambda that is not positive definite: the
        Assumption 2 lower bounds lambda_min_p, lambda_min_r."""
        c = self.constants(sizes, alpha)
        return c.lambda_min_p, c.lambda_min_r

    def start(self, runs: int, sizes: LinearSizes, rng: np.random.Generator, alpha: float) -> "TreeStatistics":
        return TreeStatistics(self, runs, sizes, rng, alpha)


@dataclass(frozen=True)
class RidgeRegularizer(Regularizer):
    """Z_{h,p}^k = lam_p I, Z_{h,r}^k = lam_r I, z = 0 (Section 3, Z = lambda I): UCRL-VTR / OPPO. Assumption 2 holds with
    probability 1 with lambda_min = lambda_max = lam and nu = 0. ``lam_r`` defaults to ``lam``."""

    lam: float = 1.0
    lam_r: float | None = None
    name = "ridge"

    def __post_init__(self):
        for key in ("lam", "lam_r"):
            v = getattr(self, key)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)) \
                    or not (math.isfinite(v) and v > 0):
                raise InputError(f"{key} must be a finite number > 0, got {v!r}")

    @property
    def _lam_r(self) -> float:
        return float(self.lam if self.lam_r is None else self.lam_r)

    def constants(self, sizes, alpha=None):
        lr = self._lam_r
        return Assumption2(float(self.lam), float(self.lam), 0.0, lr, lr, 0.0)

    def trees(self, sizes):
        return {name: TreeCounter(sizes.insertions, node_scale=0.0, noise="gaussian", symmetric=name.endswith("1"))
                for name in COUNTERS}

    def shifts(self, sizes, alpha=None):
        return float(self.lam), self._lam_r


class TreeStatistics:
    """Running state of a regulariser: four batches of binary-tree counters (Section 6.1), one per counter kind,
    each batched over (runs, H):

        p1: phi phi^T (runs, H, d1, d1), symmetric matrix noise    p2: phi V (runs, H, d1)
        r1: varphi varphi^T (runs, H, d2, d2), symmetric            r2: varphi r (runs, H, d2)

    ``observe`` inserts episode t's items at its end; ``release`` returns the regularised statistics
    for episode t + 1, i.e. prefix(t) + shift I. Episode K is never inserted: the trees hold K - 1 items.
    """

    def __init__(self, regularizer: Regularizer, runs: int, sizes: LinearSizes, rng: np.random.Generator,
                 alpha: float):
        self.regularizer = regularizer
        self.sizes = sizes
        self.runs = int(runs)
        H, d1, d2 = sizes.H, sizes.d1, sizes.d2
        trees = regularizer.trees(sizes)
        self.shift_p, self.shift_r = regularizer.shifts(sizes, alpha)
        shapes = {"p1": (runs, H, d1, d1), "p2": (runs, H, d1), "r1": (runs, H, d2, d2), "r2": (runs, H, d2)}
        # the four counter kinds draw from independent child streams, so the noise of one never
        # depends on the shape of another
        streams = rng.spawn(len(COUNTERS))
        self.trees = {name: BinaryMechanism(trees[name], shapes[name], stream, keep_noise=trees[name].node_scale > 0)
                      for name, stream in zip(COUNTERS, streams)}
        self._eye_p = np.eye(d1)
        self._eye_r = np.eye(d2)
        self.episodes = 0

    def observe(self, x_p, y_p, x_r, y_r) -> None:
        """Rows of the episode just finished (Algorithm 1 line 14): x_p (runs, H, d1), y_p (runs, H),
        x_r (runs, H, d2), y_r (runs, H). The items are x x^T and x y."""
        self.episodes += 1
        if self.episodes > self.sizes.insertions:
            return                                   # episode K: its data is never released
        self.trees["p1"].step(x_p[..., :, None] * x_p[..., None, :])
        self.trees["p2"].step(x_p * y_p[..., None])
        self.trees["r1"].step(x_r[..., :, None] * x_r[..., None, :])
        self.trees["r2"].step(x_r * y_r[..., None])

    def release(self):
        """(Lambda_p, u_p, Lambda_r, u_r) for the next episode: G_hat + shift I, g_hat."""
        Lp = self.trees["p1"].release()
        Lp += self.shift_p * self._eye_p
        Lr = self.trees["r1"].release()
        Lr += self.shift_r * self._eye_r
        return Lp, self.trees["p2"].release(), Lr, self.trees["r2"].release()

    def noise(self, name: str) -> np.ndarray:
        """The total tree noise of counter ``name`` in the current release (0 for exact counters)."""
        tree = self.trees[name]
        if tree._noise is None:
            return np.zeros(tree.shape)
        return tree.noise()

    def regularization(self):
        """(Z_p, z_p, Z_r, z_r) of the current release: Z = N + shift I, z = vector noise (checkers only)."""
        return (self.noise("p1") + self.shift_p * self._eye_p, self.noise("p2"),
                self.noise("r1") + self.shift_r * self._eye_r, self.noise("r2"))

    def exact(self):
        """(G_p, g_p, G_r, g_r): the true sufficient statistics of the current release (checkers only)."""
        return tuple(self.trees[n].exact() for n in COUNTERS)
