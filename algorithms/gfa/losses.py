"""Losses and scores of Algorithms 1 and 2 (He & Zhou 2026, Algorithm 1, Algorithm 2).

Two implementations of each loss, which the tests require to agree:

* literal reference functions on one dataset of trajectories (what an audit evaluates on neighbouring
  datasets D, D' to measure the score's sensitivity, docs/derivations.md#noise-calibration):
  :func:`bellman_error_loss` (L^BE with the inf term taken literally over the list),
  :func:`outcome_model` (R^(f)(tau)), :func:`outcome_loss` (L^BR), :func:`bellman_error_score`,
  :func:`outcome_score`;
* incremental sufficient statistics batched over runs used by the algorithms:
  :class:`BellmanErrorStatistics` keeps E_h[g, g'] for the distinct step functions g in F_h, g' in F_{h+1}
  (F_{H+1} = {0}); :class:`OutcomeLossStatistics` keeps L[f].

Losses are SUMS over trajectories, never means (the sensitivity analysis of Section 3.3, docs/derivations.md#noise-calibration depends on it).
Datasets: states (n, H+1), actions (n, H), rewards (n, H) (Algorithm 1) or outcomes (n,) (Algorithm 2);
the statistics take the same with a leading run axis.
"""
from __future__ import annotations

import numpy as np

from dpcheck.errors import InputError
from dpcheck.algorithms.gfa.function_class import FunctionClass

# Work arrays of the incremental updates are chunked over trajectories to stay below this many floats.
_CHUNK_FLOATS = 1 << 22


def _dataset(fc: FunctionClass, states, actions, extra, what: str, runs_axis: bool):
    lead = 1 if runs_axis else 0
    s = np.asarray(states)
    a = np.asarray(actions)
    x = np.asarray(extra, dtype=np.float64)
    if s.ndim != 2 + lead or a.ndim != 2 + lead:
        raise InputError(f"states/actions must have {2 + lead} axes, got {s.shape} and {a.shape}")
    if s.shape[-1] != fc.H + 1 or a.shape[-1] != fc.H or s.shape[:-1] != a.shape[:-1]:
        raise InputError(f"states must be (..., n, H+1 = {fc.H + 1}) and actions (..., n, H = {fc.H}); "
                         f"got {s.shape} and {a.shape}")
    if s.size and (s.min() < 0 or s.max() >= fc.S) or a.size and (a.min() < 0 or a.max() >= fc.A):
        raise InputError(f"states must lie in 0..{fc.S - 1} and actions in 0..{fc.A - 1}")
    want = a.shape if what == "rewards" else a.shape[:-1]
    if x.shape != want:
        raise InputError(f"{what} must have shape {want}, got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise InputError(f"{what} contain NaN or infinite values")
    return s.astype(np.int64), a.astype(np.int64), x


# ------------------------------------------------------------------------------------------- literal
def _pred_target(fc: FunctionClass, s, a, r):
    """pred[f, n, h] = f_h(s_h, a_h); target[f, n, h] = r_h + max_a f_{h+1}(s_{h+1}, a) (0 at h = H)."""
    V = fc.values                                       # (N, H, S, A)
    H = fc.H
    pred = np.stack([V[:, h, s[:, h], a[:, h]] for h in range(H)], axis=-1)
    nxt = [V[:, h + 1].max(axis=-1)[:, s[:, h + 1]] if h + 1 < H else np.zeros((fc.N, s.shape[0]))
           for h in range(H)]
    return pred, r[None, :, :] + np.stack(nxt, axis=-1)


def bellman_error_loss(fc: FunctionClass, states, actions, rewards) -> np.ndarray:
    """L^BE_D(f) for every entry (N,), literally (Algorithm 1):

        sum_h E_{D,h}(f_h, f_{h+1}) - min_{f' in F} sum_h E_{D,h}(f'_h, f_{h+1})

    with the min over the LIST of entries (equal to the per-step decomposition for product classes).
    """
    s, a, r = _dataset(fc, states, actions, rewards, "rewards", False)
    pred, target = _pred_target(fc, s, a, r)          # (N, n, H) each
    own = ((pred - target) ** 2).sum(axis=(1, 2))
    # cross[f', f] = sum_{n,h} (pred[f'] - target[f])^2
    cross = ((pred[:, None] - target[None, :]) ** 2).sum(axis=(2, 3))
    return own - cross.min(axis=0)


def bellman_error_score(fc: FunctionClass, states, actions, rewards, *, eta: float, s1: int) -> np.ndarray:
    """S(f) = eta f_1(s_1) - L^BE_D(f) (N,) (Algorithm 1, line 5)."""
    return eta * fc.initial_values(int(s1)) - bellman_error_loss(fc, states, actions, rewards)


def outcome_model(fc: FunctionClass, states, actions) -> np.ndarray:
    """R^(f)(tau) = sum_h [f_h(s_h, a_h) - max_a f_{h+1}(s_{h+1}, a)] (N, n) (Definition 3.3; f_{H+1} = 0)."""
    s, a, _ = _dataset(fc, states, actions, np.zeros(np.shape(actions)[:-1]), "outcomes", False)
    pred, target = _pred_target(fc, s, a, np.zeros(a.shape))
    return (pred - target).sum(axis=-1)


def outcome_loss(fc: FunctionClass, states, actions, outcomes) -> np.ndarray:
    """L^BR_D(f) = sum_tau (R^(f)(tau) - r(tau))^2 (N,) (Algorithm 2)."""
    s, a, r = _dataset(fc, states, actions, outcomes, "outcomes", False)
    return ((outcome_model(fc, s, a) - r[None, :]) ** 2).sum(axis=1)


def outcome_score(fc: FunctionClass, states, actions, outcomes, *, eta: float, rho) -> np.ndarray:
    """S(f) = eta fbar_1 - L^BR_D(f) (N,), fbar_1 = E_{s_1 ~ rho} max_a f_1(s_1, a) (Algorithm 2, line 5)."""
    return eta * fc.initial_values(np.asarray(rho, float)) - outcome_loss(fc, states, actions, outcomes)


# --------------------------------------------------------------------------------------- incremental
class BellmanErrorStatistics:
    """E_h[g, g'] = sum_{tau in D} (g(s_h, a_h) - r_h - max_a g'(s_{h+1}, a))^2 for every run.

    tables[h] (runs, n_h, n_{h+1}) over the distinct step functions (n_{H+1} = 1: f_{H+1} = 0).
    """

    def __init__(self, fc: FunctionClass, runs: int):
        self.fc = fc
        self.runs = int(runs)
        n = fc.sizes + (1,)
        self.tables = [np.zeros((self.runs, n[h], n[h + 1])) for h in range(fc.H)]
        self.n = 0

    def add(self, states, actions, rewards) -> None:
        """Add n trajectories per run: states (runs, n, H+1), actions (runs, n, H), rewards (runs, n, H)."""
        s, a, r = _dataset(self.fc, states, actions, rewards, "rewards", True)
        fc = self.fc
        for h in range(fc.H):
            g = fc.layers[h]                                     # (n_h, S, A)
            nxt = fc.layer_max[h + 1]                            # (n_{h+1}, S)
            per = g.shape[0] * nxt.shape[0] * self.runs
            step = max(1, _CHUNK_FLOATS // max(per, 1))
            for lo in range(0, s.shape[1], step):
                sl = slice(lo, lo + step)
                pred = np.moveaxis(g[:, s[:, sl, h], a[:, sl, h]], 0, -1)          # (runs, m, n_h)
                target = r[:, sl, h, None] + np.moveaxis(nxt[:, s[:, sl, h + 1]], 0, -1)  # (runs, m, n_{h+1})
                self.tables[h] += ((pred[..., :, None] - target[..., None, :]) ** 2).sum(axis=1)
        self.n += s.shape[1]

    def own(self) -> np.ndarray:
        """sum_h E_h(f_h, f_{h+1}) for every entry (runs, N)."""
        idx = self.fc.index
        zero = np.zeros(self.fc.N, dtype=np.int64)
        return sum(self.tables[h][:, idx[:, h], idx[:, h + 1] if h + 1 < self.fc.H else zero]
                   for h in range(self.fc.H))

    def infimum(self, mode: str = "auto") -> np.ndarray:
        """inf_{f' in F} sum_h E_h(f'_h, f_{h+1}) for every entry f (runs, N).

        "product": sum_h min_{g in F_h} E_h(g, f_{h+1}) (valid for product classes); "literal": min over the
        list of entries (Algorithm 1); "auto": product when ``fc.is_product``.
        """
        fc = self.fc
        if mode == "auto":
            mode = "product" if fc.is_product else "literal"
        idx = fc.index
        nxt = [idx[:, h + 1] if h + 1 < fc.H else np.zeros(fc.N, dtype=np.int64) for h in range(fc.H)]
        if mode == "product":
            return sum(self.tables[h].min(axis=1)[:, nxt[h]] for h in range(fc.H))
        if mode != "literal":
            raise InputError(f"inf mode must be 'auto', 'product' or 'literal', got {mode!r}")
        # cross[r, f', f] = sum_h E_h[r, f'_h, f_{h+1}], in blocks of f' to bound memory
        out = np.full((self.runs, fc.N), np.inf)
        step = max(1, _CHUNK_FLOATS // max(self.runs * fc.N, 1))
        for lo in range(0, fc.N, step):
            rows = slice(lo, lo + step)
            cross = sum(self.tables[h][:, idx[rows, h]][:, :, nxt[h]] for h in range(fc.H))
            out = np.minimum(out, cross.min(axis=1))
        return out

    def loss(self, mode: str = "auto") -> np.ndarray:
        """L^BE(f) (runs, N)."""
        return self.own() - self.infimum(mode)

    def chain_losses(self) -> list:
        """l_h(g, g') = E_h(g, g') - min_{g''} E_h(g'', g') (runs, n_h, n_{h+1}): L^BE is their chain sum
        for a product class."""
        return [t - t.min(axis=1, keepdims=True) for t in self.tables]


class OutcomeLossStatistics:
    """L[f] = sum_{tau in D} (R^(f)(tau) - r(tau))^2 for every run and entry (runs, N)."""

    def __init__(self, fc: FunctionClass, runs: int):
        self.fc = fc
        self.runs = int(runs)
        self.L = np.zeros((self.runs, fc.N))
        self.n = 0

    def add(self, states, actions, outcomes) -> None:
        """Add n trajectories per run: states (runs, n, H+1), actions (runs, n, H), outcomes (runs, n)."""
        s, a, r = _dataset(self.fc, states, actions, outcomes, "outcomes", True)
        fc = self.fc
        step = max(1, _CHUNK_FLOATS // max(self.runs * fc.N * fc.H, 1))
        for lo in range(0, s.shape[1], step):
            sl = slice(lo, lo + step)
            model = np.zeros((self.runs, s[:, sl].shape[1], fc.N))
            for h in range(fc.H):
                g = fc.layers[h][:, s[:, sl, h], a[:, sl, h]]                  # (n_h, runs, m)
                model += np.moveaxis(g, 0, -1)[..., fc.index[:, h]]
                if h + 1 < fc.H:
                    v = fc.layer_max[h + 1][:, s[:, sl, h + 1]]                # (n_{h+1}, runs, m)
                    model -= np.moveaxis(v, 0, -1)[..., fc.index[:, h + 1]]
            self.L += ((model - r[:, sl, None]) ** 2).sum(axis=1)
        self.n += s.shape[1]

    def loss(self) -> np.ndarray:
        return self.L.copy()
