"""Finite function classes F = F_1 x ... x F_H as data (He & Zhou 2026, Section 2.1).

A :class:`FunctionClass` is a list of N entries f = (f_1, ..., f_H), each f_h : S x A -> [0, 1], stored
in factored form:

    layers[h]   (n_h, S, A)  the DISTINCT step-h functions that occur in the class (0-based h)
    index       (N, H) int   entry f uses layers[h][index[f, h]] at step h

so that the per-step sufficient statistics live on the small sets F_h, while the entries keep the
user's order and duplicates, compared exactly (the Appendix D class has 243 entries but only 207 distinct functions; the
duplicates double their prior mass in the exponential mechanism and |F| = 243 enters the accounting).
The convention f_{H+1} == 0 is implicit (a single zero function at step H+1).

* :meth:`FunctionClass.product` -- a full product F_1 x ... x F_H; entries in C order over (i_1, ..., i_H)
  (i_1 most significant), ``is_product = True``: the inf term of L^BE decomposes per step and the
  exponential mechanism factorises along h.
* :meth:`FunctionClass.from_values` -- an explicit list (N, H, S, A) (a user's class as arrays); it is
  flagged ``is_product`` exactly when its index tuples are the whole grid n_1 x ... x n_H, each once (then the
  literal inf over the list equals the per-step decomposition); the user's order is kept.

Validation (one-line :class:`InputError`): non-numeric, NaN, values outside [0, 1] (every sensitivity bound
of Section 3.3, docs/derivations.md#noise-calibration assumes f in [0, 1]), wrong number of axes, an empty class or an empty step set.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from dpcheck.algorithms.envs._validate import as_float_array
from dpcheck.errors import InputError

def _unit_array(name: str, value, ndim: int) -> np.ndarray:
    """A read-only float64 array of ``ndim`` axes with values in [0, 1] (dpcheck.algorithms.envs' validation, plus
    the function-class wording for an empty class and the [0, 1] range)."""
    try:
        shape = np.shape(value)
    except ValueError:                 # ragged: as_float_array names the problem
        shape = ()
    if len(shape) == ndim and any(n == 0 for n in shape):
        raise InputError(f"{name} is empty (shape {shape}); a function class needs at least one entry")
    arr = as_float_array(name, value, ndim)
    bad = (arr < 0) | (arr > 1)
    if np.any(bad):
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise InputError(f"{name} must lie in [0, 1] (the sensitivity bounds of Section 3.3, docs/derivations.md#noise-calibration need it); "
                         f"entry {idx} is {arr[idx]!r}")
    return arr


@dataclass(frozen=True, eq=False)
class FunctionClass:
    """A finite class of Q-function candidates f = (f_1..f_H), f_h : S x A -> [0, 1] (module docstring).

    layers      tuple of H read-only arrays (n_h, S, A): the distinct step-h functions
    index       (N, H) int: entry f = (layers[0][index[f,0]], ..., layers[H-1][index[f,H-1]])
    is_product  the entries are exactly the grid n_1 x ... x n_H (each combination once, C order)
    name        a label for reports

    Build with :meth:`product` or :meth:`from_values`; the constructor validates the arrays.
    """

    layers: tuple
    index: np.ndarray
    is_product: bool = False
    name: str = ""
    _values: list = field(default_factory=list, init=False, repr=False, compare=False)

    def __post_init__(self):
        if not isinstance(self.layers, (tuple, list)) or len(self.layers) == 0:
            raise InputError("a function class needs at least one step (layers must be a non-empty sequence)")
        layers = tuple(_unit_array(f"F_{h + 1}", g, 3) for h, g in enumerate(self.layers))
        S, A = layers[0].shape[1:]
        for h, g in enumerate(layers):
            if g.shape[1:] != (S, A):
                raise InputError(f"F_{h + 1} has functions on {g.shape[1:]} but F_1 on {(S, A)}: all steps "
                                 "need the same (S, A)")
        idx = np.array(self.index)
        if idx.ndim != 2 or idx.shape[1] != len(layers) or idx.shape[0] == 0:
            raise InputError(f"index must have shape (N >= 1, H = {len(layers)}), got {idx.shape}")
        if not np.issubdtype(idx.dtype, np.integer):
            raise InputError(f"index must be integer, got dtype {idx.dtype}")
        idx = idx.astype(np.int64)
        for h, g in enumerate(layers):
            if idx[:, h].min() < 0 or idx[:, h].max() >= g.shape[0]:
                raise InputError(f"index[:, {h}] must lie in 0..{g.shape[0] - 1}")
        sizes = [g.shape[0] for g in layers]
        if self.is_product and not (idx.shape[0] == math.prod(sizes) and
                                    np.unique(np.ravel_multi_index(idx.T, sizes)).size == idx.shape[0]):
            raise InputError("is_product=True but the entries are not the full grid F_1 x ... x F_H (each "
                             "combination once); the per-step inf decomposition would be wrong (Algorithm 1)")
        idx.setflags(write=False)
        object.__setattr__(self, "layers", layers)
        object.__setattr__(self, "index", idx)
        object.__setattr__(self, "is_product", bool(self.is_product))

    # ------------------------------------------------------------------ constructors
    @classmethod
    def product(cls, layers, name: str = "") -> "FunctionClass":
        """F = F_1 x ... x F_H from per-step sets ``layers[h]`` (n_h, S, A); N = prod n_h entries in C order.

        Entries within a step may repeat (they stay distinct entries of F_h, like a list).
        """
        if not isinstance(layers, (tuple, list)) or len(layers) == 0:
            raise InputError("a product class needs at least one step set F_1")
        arrs = tuple(_unit_array(f"F_{h + 1}", g, 3) for h, g in enumerate(layers))
        sizes = [g.shape[0] for g in arrs]
        grid = np.indices(sizes).reshape(len(sizes), -1).T
        return cls(arrs, grid, is_product=True, name=name)

    @classmethod
    def from_values(cls, values, name: str = "") -> "FunctionClass":
        """A class given as an explicit list: ``values`` (N, H, S, A) in [0, 1] (duplicates allowed)."""
        vals = _unit_array("function class values", values, 4)
        N, H = vals.shape[:2]
        layers, index = [], np.empty((N, H), dtype=np.int64)
        for h in range(H):
            uniq, inv = np.unique(vals[:, h].reshape(N, -1), axis=0, return_inverse=True)
            layers.append(uniq.reshape((-1,) + vals.shape[2:]))
            index[:, h] = np.asarray(inv).reshape(-1)
        sizes = [g.shape[0] for g in layers]
        is_product = (N == math.prod(sizes)
                      and np.unique(np.ravel_multi_index(index.T, sizes)).size == N)
        fc = cls(tuple(layers), index, is_product=is_product, name=name)
        object.__setattr__(fc, "_values", [vals])
        return fc

    # ------------------------------------------------------------------ sizes
    @property
    def N(self) -> int:
        """|F|: the number of entries (duplicates counted)."""
        return int(self.index.shape[0])

    def __len__(self) -> int:
        return self.N

    @property
    def H(self) -> int:
        return len(self.layers)

    @property
    def S(self) -> int:
        return int(self.layers[0].shape[1])

    @property
    def A(self) -> int:
        return int(self.layers[0].shape[2])

    @property
    def sizes(self) -> tuple:
        """(n_1, ..., n_H): the number of distinct step functions (of entries, for product classes)."""
        return tuple(int(g.shape[0]) for g in self.layers)

    def __repr__(self) -> str:
        label = f"{self.name!r}, " if self.name else ""
        kind = "product" if self.is_product else "list"
        return f"FunctionClass({label}N={self.N}, H={self.H}, S={self.S}, A={self.A}, {kind}, sizes={self.sizes})"

    # ------------------------------------------------------------------ derived arrays
    @property
    def values(self) -> np.ndarray:
        """All entries as one array (N, H, S, A) (materialised on first use)."""
        if not self._values:
            vals = np.stack([self.layers[h][self.index[:, h]] for h in range(self.H)], axis=1)
            vals.setflags(write=False)
            self._values.append(vals)
        return self._values[0]

    def entry(self, f: int) -> np.ndarray:
        """Entry f as (H, S, A)."""
        return np.stack([self.layers[h][self.index[f, h]] for h in range(self.H)])

    def distinct_entries(self) -> int:
        """Number of distinct Q-functions among the N entries (207 for the Appendix D class, Appendix D)."""
        return int(np.unique(self.index, axis=0).shape[0])

    @functools.cached_property
    def layer_greedy(self) -> tuple:
        """Greedy actions of every distinct step function: tuple of (n_h, S) int, ties -> lowest action (Lemma E.4)."""
        return tuple(np.argmax(g, axis=-1) for g in self.layers)

    @functools.cached_property
    def layer_max(self) -> tuple:
        """max_a g(s, a) for every distinct step function: tuple of (n_h, S); plus the zero f_{H+1} (1, S)."""
        return tuple(g.max(axis=-1) for g in self.layers) + (np.zeros((1, self.S)),)

    @functools.cached_property
    def entry_at_position(self) -> np.ndarray:
        """For product classes: the entry at each C-order grid position of (i_1..i_H) (N,) (the user's order
        of a product given as a list may differ from C order)."""
        if not self.is_product:
            raise InputError("entry_at_position needs a product class")
        order = np.empty(self.N, dtype=np.int64)
        order[np.ravel_multi_index(self.index.T, self.sizes)] = np.arange(self.N)
        return order

    def greedy_policies(self, entries=None) -> np.ndarray:
        """pi_f for the given entries (..., H, S) int (all N if None); lowest action index on ties (Lemma E.4)."""
        e = np.arange(self.N) if entries is None else np.asarray(entries, dtype=np.int64)
        return np.stack([self.layer_greedy[h][self.index[e, h]] for h in range(self.H)], axis=-2)

    def initial_values(self, init) -> np.ndarray:
        """The optimism term for every entry (N,): E_{s_1 ~ init} max_a f_1(s_1, a).

        With a point mass this is f_1(s_1) of Algorithm 1 (Algorithm 1 line 5); with the known rho it is fbar_1 of
        Algorithm 2. ``init`` is an (S,) distribution or an int state.
        """
        if isinstance(init, (int, np.integer)) and not isinstance(init, bool):
            v = self.layer_max[0][:, int(init)]
        else:
            v = self.layer_max[0] @ np.asarray(init, dtype=np.float64)
        return v[self.index[:, 0]]

    def check_shape(self, H: int, S: int, A: int, what: str = "the environment") -> None:
        if (self.H, self.S, self.A) != (H, S, A):
            raise InputError(f"the function class has (H, S, A) = {(self.H, self.S, self.A)} but {what} has "
                             f"{(H, S, A)}")
