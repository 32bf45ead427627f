"""Events for black-box auditing: families of sets E of outputs, chosen on a selection sample.

Every family reduces an output to a scalar *score* and the event to a threshold on it,
E = {score >= t}, so one sorting-based search serves them all:

- ``ThresholdScorer``: the output itself (scalar outputs, or one coordinate of a vector),
  both tails ({x >= t} and, through the score -x, {x <= t}).
- ``CellScorer``: discrete outputs; the score of an output is the estimated log
  likelihood ratio ln(P^[D] / P^[D']) of its cell, so {score >= t} are the unions of cells
  sorted by likelihood ratio. Cells never seen in the fitting sample form one pooled cell, scored by the
  Good-Turing estimates of the unseen mass on each side (the share of cells seen exactly once):
  outputs with many rare values (a leak spread over labels that never repeat) still give an event.
- ``NaiveBayesScorer``: vector outputs; the score is the sum over coordinates of binned
  per-coordinate log likelihood ratios (a learned score in the spirit of DP-Sniper's
  classifier; exact up to binning for mechanisms with independent coordinates, such as
  Laplace or Gaussian histograms).
- ``LogisticScorer``: vector outputs; the logit of a logistic regression of the input on the
  output (DP-Sniper), for leaks in linear combinations of coordinates.
- ``BoostedScorer``: vector outputs of up to 64 coordinates (not already cells); gradient-boosted trees, for
  leaks in the joint law that neither marginals nor half-planes show.
- ``ThresholdScorer`` on each coordinate of short vectors, both tails; on long vectors, on the coordinates whose
  marginals differ most on the fitting sample (:func:`most_different_coordinates`).
- ``HistogramScorer``: scalar continuous outputs binned at pooled quantiles, each bin scored by its log likelihood
  ratio (a union of intervals: a leak inside the range); and, when a value repeats, a ``CellScorer`` of those
  atoms (a point mass in a continuous output, e.g. a count released without its noise on some runs).

Threshold search (DP-Opt style, no pinned mass, hence no ln(1/c) cap): for every candidate
t (every distinct selection score under D) the selection counts are projected to the size of
the certification sample and the objective, a Clopper-Pearson-based bound, is evaluated;
Wilson bounds rank all candidates in O(n log n) (two sorts and a searchsorted), and the best
few are re-ranked with exact Clopper-Pearson bounds.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcheck import stats

MAX_CANDIDATES = 4096  # distinct thresholds evaluated (plus the tails below)
TAIL_CANDIDATES = 512
N_EXACT = 64          # candidates re-ranked with exact Clopper-Pearson bounds
SELECTION_Z = 2.0      # pessimism of the selection estimates, in standard deviations (best_threshold)
# Weak signals on small samples (Laplace eps = 0.1 at 10^4): once SELECTION_Z standard deviations
# of selection noise are charged, no event may be expected to certify a positive bound. The
# auditor then retries the whole choice (all directions and families) with less pessimism;
# the plug-in z = 0 still points at the informative event, which certifies > 0 most of the time.
SELECTION_LADDER = (SELECTION_Z, 1.0, 0.0)
SMOOTH = 0.5          # pseudo-count of the log-likelihood-ratio estimates (Jeffreys-like)


# ----------------------------------------------------------------- objectives
@dataclass(frozen=True)
class Objective:
    """What a threshold maximises, evaluated at bounds (p_lo, q_hi).

    kind="ratio": ln((p_lo - delta) / q_hi), the epsilon lower bound at ``delta``.
    kind="difference": p_lo - e^eps q_hi, a lower bound on the hockey-stick divergence at eps
    (compared with the claimed privacy profile delta(eps)).
    kind="odds": the epsilon lower bound at ``delta`` of :func:`dpcheck.stats.odds_eps_bound` (the exact
    odds-ratio test), which takes counts, not bounds: :func:`best_threshold` evaluates it itself
    (``__call__`` gives the "ratio" value, used for the plug-in "is it informative" test).
    """
    kind: str
    delta: float = 0.0
    eps: float = 0.0

    def __call__(self, p_lo, q_hi):
        if self.kind in ("ratio", "odds"):
            return stats.eps_bound(p_lo, q_hi, self.delta)
        return np.asarray(p_lo) - stats.exp_times(self.eps, q_hi)


def threshold_candidates(a: np.ndarray, b: np.ndarray) -> tuple | None:
    """(candidate thresholds, #{a >= t}, #{b >= t}) of :func:`best_threshold` for sorted scores a, b; None when
    every score of a is -inf. It depends on the scores only: pass one ``candidates`` dict to the calls of
    :func:`best_threshold` that search the same scores at other levels or objectives."""
    na, nb = a.shape[0], b.shape[0]
    lo = int(np.searchsorted(a, -np.inf, side="right"))       # -inf: cells outside every event
    if lo >= na:
        return None
    new = a[lo + 1:] != a[lo:-1]
    if new.all() and na - lo > MAX_CANDIDATES:
        # every value distinct (a continuous score): the first index of each is its own, and the thinning below
        # picks indices without the index array of a million values
        step = max(1, (na - lo - 2 * TAIL_CANDIDATES) // MAX_CANDIDATES)
        starts = np.unique(np.r_[np.arange(lo, lo + TAIL_CANDIDATES),
                                 np.arange(lo + TAIL_CANDIDATES, na - TAIL_CANDIDATES, step),
                                 np.arange(na - TAIL_CANDIDATES, na)])
        cand = a[starts]
        return cand, na - starts, nb - np.searchsorted(b, cand, side="left")
    starts = np.r_[lo, lo + np.flatnonzero(new) + 1]           # first index of each distinct value
    if starts.size > MAX_CANDIDATES:
        step = max(1, (starts.size - 2 * TAIL_CANDIDATES) // MAX_CANDIDATES)
        starts = np.unique(np.r_[starts[:TAIL_CANDIDATES], starts[TAIL_CANDIDATES:-TAIL_CANDIDATES:step],
                                 starts[-TAIL_CANDIDATES:]])
    cand = a[starts]
    return cand, na - starts, nb - np.searchsorted(b, cand, side="left")


def best_threshold(a: np.ndarray, b: np.ndarray, n_cert: int, alpha: float,
                   objective: Objective, z_sel: float = None,
                   candidates: dict | None = None) -> tuple[float, float, int, int]:
    """Threshold t maximising the objective for E = {score >= t}; returns (t, value, k_d, k_d').

    a, b: (n_sel,) selection scores under D and D', each sorted ascending. Counts are projected
    to n_cert, the size of the certification sample the chosen event will be certified on.
    Candidates are the distinct values of a; above MAX_CANDIDATES of them, every one of the
    TAIL_CANDIDATES smallest and largest is kept (tiny-mass events live there) and the rest
    thinned evenly (the objective is smooth in t in the bulk). z_sel: pessimism of the
    selection estimates (default SELECTION_Z; see :data:`SELECTION_LADDER`). (inf, -inf, 0, 0)
    when no candidate is informative (then E is empty and certifies nothing).
    """
    z_sel = SELECTION_Z if z_sel is None else z_sel
    na, nb = a.shape[0], b.shape[0]
    key = (id(a), id(b))
    if candidates is not None and key in candidates:
        found = candidates[key][2]
    else:
        found = threshold_candidates(a, b)
        if candidates is not None:
            candidates[key] = (a, b, found)                # (a, b kept: their ids stay theirs)
    if found is None:
        return math.inf, -math.inf, 0, 0
    cand, kd, kq = found                                   # thresholds, #{score_d >= t}, #{score_dp >= t}
    # Winner's curse: the maximum over many candidates of a noisy objective favours deep-tail
    # thresholds whose selection ratio is high by chance (Laplace eps = 1 at 10^5: 15 vs 0
    # selection counts beat the bulk event and certify 0.30). Projecting pessimistic selection
    # estimates (Wilson bounds at z = z_sel standard deviations) makes the penalty grow with
    # the selection noise of each candidate.
    z = stats.z_of(alpha)
    pd_ = stats.wilson_lower(kd, na, z_sel) * n_cert
    pq_ = stats.wilson_upper(kq, nb, z_sel) * n_cert
    if objective.kind == "odds":       # the event's two one-sided levels, 2 alpha, spent on one test
        approx = stats.odds_eps_approx(pd_, pq_, n_cert, 2 * alpha, objective.delta)
    else:
        approx = objective(stats.wilson_lower(pd_, n_cert, z), stats.wilson_upper(pq_, n_cert, z))
    # An event whose plug-in objective is <= 0 (no more likely under D than allowed, e.g. the
    # trivial E = everything, whose CP bounds are the tightest of all) can never certify
    # anything: it must not win just because it loses least.
    with np.errstate(divide="ignore", invalid="ignore"):
        informative = objective(kd / na, kq / nb) > 0
    approx = np.where(informative, approx, -np.inf)
    if not informative.any():
        return math.inf, -math.inf, 0, 0
    m = min(N_EXACT, cand.size)
    top = np.argpartition(-approx, m - 1)[:m] if cand.size > m else np.arange(cand.size)
    if objective.kind == "odds":
        exact = np.where(informative[top], approx[top], -np.inf)
    else:
        exact = np.where(informative[top], objective(stats.cp_lower(pd_[top], n_cert, alpha),
                                                     stats.cp_upper(pq_[top], n_cert, alpha)), -np.inf)
    j = top[int(np.argmax(exact))]
    value = float(np.max(exact))
    return float(cand[j]), value, int(kd[j]), int(kq[j])


# ----------------------------------------------------------------- scorers
class Scorer:
    """A fitted score; ``score(x)`` maps outputs (n, ...) to (n,) floats.

    ``learned`` scorers were fitted on data; their threshold must be chosen on other data
    (cross-fitting), or the union of cells that look extreme by chance wins the selection
    and certifies nothing (seen on a geometric mechanism with hundreds of cells).
    """
    family = "score"
    learned = True
    thread_safe = True      # False: its score must not run in a thread beside others (process-wide settings)

    def score(self, x: np.ndarray) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError

    def describe(self, t: float) -> dict:  # pragma: no cover - interface
        raise NotImplementedError

    def sorted_scores(self, x: np.ndarray) -> np.ndarray:
        """np.sort(self.score(x)) (a family may compute it without scoring every output)."""
        return np.sort(self.score(x))

    def mirror(self) -> "Scorer | None":
        """The scorer this family fits with D and D' swapped, when that is exactly this one's score negated (log
        likelihood-ratio estimates: ln a - ln b = -(ln b - ln a) in floating point too), so that the reverse
        direction costs no second fit; None when it must be fitted again (a classifier's optimiser is not
        symmetric)."""
        return None


class ThresholdScorer(Scorer):
    """score = sign * x[:, coord] (coord None for scalar outputs); sign -1 gives the lower tail."""
    family = "threshold"
    learned = False

    def __init__(self, sign: int, coord: int | None = None):
        self.sign, self.coord = sign, coord

    def score(self, x):
        v = x if self.coord is None else x[:, self.coord]
        return self.sign * v.astype(float, copy=False)

    def sorted_score(self, x, cache: dict):
        """sort(score(x)) from one cached sort of the raw column (both tails, and both directions, share it)."""
        key = (id(x), self.coord, self.sign)
        if key not in cache:
            up = (id(x), self.coord, 1)
            if up not in cache:
                v = x if self.coord is None else x[:, self.coord]
                cache[up] = np.sort(v.astype(float, copy=False))
            if self.sign < 0:
                cache[key] = -cache[up][::-1]
        return cache[key]

    def mirror(self):
        return self             # not fitted: both directions use the same thresholds

    def describe(self, t):
        name = "M(D)" if self.coord is None else f"M(D)[{self.coord}]"
        op, thr = (">=", t) if self.sign > 0 else ("<=", -t)
        return {"family": "threshold", "statistic": "output" if self.coord is None else f"coordinate {self.coord}",
                "tail": "upper" if self.sign > 0 else "lower", "threshold": thr,
                "text": f"{name} {op} {thr:.6g}"}


def _as_keys(x: np.ndarray) -> np.ndarray:
    """Outputs (n, ...) as sortable 1-D keys: the values themselves, floats by their bits (so -0.0 and 0.0,
    which compare equal, are different outputs, as they are to anyone who prints them), or rows viewed as
    bytes."""
    if x.ndim == 1:
        if x.dtype.kind == "f" and x.dtype.itemsize in (2, 4, 8):     # (a longdouble's padding bytes are undefined)
            return np.ascontiguousarray(x).view(np.dtype(f"i{x.dtype.itemsize}"))
        return x
    flat = np.ascontiguousarray(x.reshape(x.shape[0], -1))
    return flat.view(np.dtype((np.void, flat.dtype.itemsize * flat.shape[1]))).ravel()


class CellScorer(Scorer):
    """Cells of a discrete output, scored by their estimated log likelihood ratio."""
    family = "cells"

    def __init__(self, cells: np.ndarray, labels: np.ndarray, log_ratio: np.ndarray, unseen: float = -np.inf,
                 vocab: np.ndarray | None = None):
        self.cells, self.labels, self.log_ratio, self.unseen = cells, labels, log_ratio, float(unseen)
        self.vocab = vocab

    @staticmethod
    def _codes(x: np.ndarray, vocab: np.ndarray) -> np.ndarray:
        """String vectors as integer codes in ``vocab`` (-1: a string not in it), so that rows are keys of one width
        whatever width of string a chunk of outputs came in."""
        flat = x.ravel()
        i = np.minimum(np.searchsorted(vocab, flat), vocab.size - 1)
        return np.where(vocab[i] == flat, i, -1).astype(np.int64).reshape(x.shape)

    @classmethod
    def fit(cls, d: np.ndarray, dp: np.ndarray) -> "CellScorer":
        vocab = None
        if d.ndim > 1 and d.dtype.kind in "US":
            vocab = np.unique(np.concatenate([d.ravel(), dp.ravel()]))
        kd_keys = _as_keys(d if vocab is None else cls._codes(d, vocab))
        kp_keys = _as_keys(dp if vocab is None else cls._codes(dp, vocab))
        cells, first, inv = np.unique(np.concatenate([kd_keys, kp_keys]), return_index=True, return_inverse=True)
        inv = inv.ravel()
        cd = np.bincount(inv[: len(kd_keys)], minlength=cells.size)
        cp = np.bincount(inv[len(kd_keys):], minlength=cells.size)
        # labels in cell order (row keys sort by bytes, not by value)
        labels = np.concatenate([d, dp])[first]
        lr = np.log((cd + SMOOTH) / len(kd_keys)) - np.log((cp + SMOOTH) / len(kp_keys))
        # Good-Turing: the mass of the values a side has not shown yet is about its share of singletons
        unseen = (math.log((np.count_nonzero(cd == 1) + SMOOTH) / len(kd_keys))
                  - math.log((np.count_nonzero(cp == 1) + SMOOTH) / len(kp_keys)))
        return cls(cells, labels, lr, unseen, vocab)

    @classmethod
    def fit_atoms(cls, d: np.ndarray, dp: np.ndarray) -> "CellScorer | None":
        """Cells for the values that repeat in the fitting sample of a (1-D) continuous output (atoms: exact ties
        have probability 0 under a continuous law, so a repeated value is a point mass, e.g. a count released
        without its noise on some runs); every other value is pooled into one cell scored by its frequency on
        each side. None when no value repeats. (One sort of the keys: np.unique with indices and counts took
        ~100 ms on 2^20 integer keys, fifteen times the sort.)"""
        kd, kp = _as_keys(d), _as_keys(dp)
        keys = np.sort(np.concatenate([kd, kp]))
        repeated = keys[1:][keys[1:] == keys[:-1]]
        if repeated.size == 0:
            return None
        atoms = repeated[np.r_[True, repeated[1:] != repeated[:-1]]]
        cd = np.bincount(np.searchsorted(atoms, kd[np.isin(kd, atoms)]), minlength=atoms.size)
        cp = np.bincount(np.searchsorted(atoms, kp[np.isin(kp, atoms)]), minlength=atoms.size)
        lr = np.log((cd + SMOOTH) / d.size) - np.log((cp + SMOOTH) / dp.size)
        rest = (math.log((d.size - cd.sum() + SMOOTH) / d.size) - math.log((dp.size - cp.sum() + SMOOTH) / dp.size))
        # a key is the value itself, or its bits (floats): the label is the value either way
        labels = atoms if atoms.dtype == d.dtype else atoms.view(d.dtype)
        return cls(atoms, labels, lr, rest)

    def mirror(self):
        # 0.0 - x, not -x: a zero log ratio is +0.0 in the fit with D and D' swapped too
        return CellScorer(self.cells, self.labels, 0.0 - self.log_ratio, 0.0 - self.unseen, self.vocab)

    def cell_index(self, x):
        keys = _as_keys(x if self.vocab is None else self._codes(x, self.vocab))
        i = np.searchsorted(self.cells, keys)
        i = np.minimum(i, self.cells.size - 1)
        return np.where(self.cells[i] == keys, i, -1)

    def score(self, x):
        i = self.cell_index(x)
        return np.where(i >= 0, self.log_ratio[np.maximum(i, 0)], self.unseen)

    def describe(self, t):
        inside = np.flatnonzero(self.log_ratio >= t)
        inside = inside[np.argsort(-self.log_ratio[inside])]
        shown = [_label(self.labels[i]) for i in inside[:20]]
        more = f" and {inside.size - 20} more" if inside.size > 20 else ""
        unseen = bool(self.unseen >= t)
        listed = ", ".join(map(str, shown)) + more
        text = (f"M(D) in {{{listed}}} or never seen in selection" if unseen and shown else
                "M(D) never seen in selection" if unseen else f"M(D) in {{{listed}}}")
        return {"family": "cells", "statistic": "estimated log likelihood ratio of the cell",
                "tail": "upper", "threshold": t, "cells": shown, "n_cells": int(inside.size),
                "unseen_included": unseen, "text": text}


def _label(v):
    v = np.asarray(v)
    return v.item() if v.ndim == 0 else v.tolist()


class NaiveBayesScorer(Scorer):
    """Sum over coordinates of binned per-coordinate log likelihood ratios."""
    family = "naive_bayes"

    def __init__(self, edges: list, tables: list):
        self.edges, self.tables = edges, tables

    @classmethod
    def fit(cls, d: np.ndarray, dp: np.ndarray, bins: int = 64) -> "NaiveBayesScorer":
        # d, dp: (n, k) flattened vector outputs
        edges, tables = [], []
        for j in range(d.shape[1]):  # loop over coordinates, not samples
            e, tab = _binned_log_ratio(*sorted_columns(d[:, j], dp[:, j]), bins)
            edges.append(e)
            tables.append(tab)
        return cls(edges, tables)

    def score(self, x):
        s = np.zeros(x.shape[0])
        for j, (e, tab) in enumerate(zip(self.edges, self.tables)):
            s += tab[np.searchsorted(e, x[:, j], side="right")]
        return s

    def mirror(self):
        return type(self)(self.edges, [0.0 - tab for tab in self.tables])     # (+0.0 stays +0.0, as refitted)

    def describe(self, t):
        return {"family": "naive_bayes", "statistic": "sum of per-coordinate binned log likelihood ratios",
                "tail": "upper", "threshold": t, "text": f"score(M(D)) >= {t:.6g} (naive-Bayes log LR)"}


def sorted_columns(xd: np.ndarray, xq: np.ndarray, pmap=map) -> tuple:
    """(sorted xd, sorted xq, both sorted together as float64), for one coordinate of the two sides. xd and xq
    are sorted in the type they are counted in (:func:`_counted`), the pooled values (for quantiles) as floats."""
    def up(x):
        x = _counted(x)
        x.sort()
        return x
    sd, sq = pmap(up, (xd, xq))
    pooled = np.concatenate([sd, sq]).astype(float, copy=False)
    pooled.sort()
    return sd, sq, pooled


def _counted(x: np.ndarray) -> np.ndarray:
    """A copy of x in the type its values are compared with the (float64) bin edges in: float64, except a wider
    float (longdouble), whose values keep their precision (a value just below an edge that rounds onto it in
    float64 stays in its bin, as :meth:`NaiveBayesScorer.score` puts it)."""
    x = np.asarray(x)
    wide = x.dtype.kind == "f" and x.dtype.itemsize > 8
    return x.copy() if wide else x.astype(float)


def _binned_log_ratio(sd: np.ndarray, sq: np.ndarray, pooled: np.ndarray, bins: int) -> tuple:
    """(edges at the pooled quantiles, each bin's estimated log likelihood ratio) of one coordinate, from
    :func:`sorted_columns`: quantiles of sorted data, and bin counts by searching the edges in it, are each a few
    times faster than on the raw outputs (the same values: the bins are [e_(b-1), e_b))."""
    e = np.unique(np.quantile(pooled, np.linspace(0, 1, bins + 1)[1:-1]))
    cd, cq = _bin_counts(sd, e), _bin_counts(sq, e)
    return e, np.log((cd + SMOOTH) / sd.size) - np.log((cq + SMOOTH) / sq.size)


def _bin_counts(sorted_x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Counts of sorted values in the bins (-inf, e_0), [e_0, e_1), ..., [e_last, inf): the bincount of
    searchsorted(edges, x, side="right"), by searching the edges in the values instead."""
    return np.diff(np.r_[0, np.searchsorted(sorted_x, edges, side="left"), sorted_x.size])


class HistogramScorer(NaiveBayesScorer):
    """A scalar continuous output binned at quantiles of the pooled fitting sample, each bin scored by its estimated
    log likelihood ratio: {score >= t} is a union of intervals, so a leak inside the range (a bump in the middle,
    where neither tail differs) gives an event, which the two tails {x >= t}, {x <= t} cannot."""
    family = "histogram"

    @classmethod
    def fit(cls, d: np.ndarray, dp: np.ndarray, bins: int = 64, columns: tuple | None = None) -> "HistogramScorer":
        """``columns``: :func:`sorted_columns` of d, dp, if already computed."""
        e, tab = _binned_log_ratio(*(columns or sorted_columns(d.reshape(-1), dp.reshape(-1))), bins)
        return cls([e], [tab])

    def score(self, x):
        return super().score(np.asarray(x).reshape(-1, 1))

    def sorted_scores(self, x):
        # the scores take one value per bin: the bins' values in order, each repeated as often as the bin is hit
        # (0.0 + table, as score() sums them, so that a zero has score()'s sign)
        e, tab = self.edges[0], 0.0 + self.tables[0]
        v = _counted(np.asarray(x).reshape(-1))
        v.sort()
        counts = _bin_counts(v, e)
        order = np.argsort(tab, kind="stable")
        return np.repeat(tab[order], counts[order])

    def describe(self, t):
        e, tab = self.edges[0], self.tables[0]
        lo = np.r_[-np.inf, e]
        hi = np.r_[e, np.inf]
        inside = np.flatnonzero(tab >= t)
        shown = [f"[{lo[i]:.4g}, {hi[i]:.4g})" for i in inside[:8]]
        more = f" and {inside.size - 8} more" if inside.size > 8 else ""
        return {"family": "histogram", "statistic": "estimated log likelihood ratio of the bin", "tail": "upper",
                "threshold": t, "n_bins": int(inside.size),
                "text": f"M(D) in {' u '.join(shown)}{more} (bins by estimated log LR)"}


class LogisticScorer(Scorer):
    """Logistic regression of "came from D" on the output coordinates (DP-Sniper's simplest classifier).

    Catches leaks that live in a linear combination of coordinates, which per-coordinate
    likelihood ratios miss (e.g. (d + Z + small noise, Z): each coordinate alone hides d).
    Coordinates are standardised on the training data; at most ``max_train`` outputs per side.
    """
    family = "logistic"

    def __init__(self, mean, scale, coef, intercept):
        self.mean, self.scale, self.coef, self.intercept = mean, scale, coef, intercept

    @classmethod
    def fit(cls, d: np.ndarray, dp: np.ndarray, max_train: int = 50_000) -> "LogisticScorer":
        from sklearn.linear_model import LogisticRegression

        d, dp = d[:max_train].astype(float), dp[:max_train].astype(float)
        x = np.concatenate([d, dp])
        mean, scale = x.mean(axis=0), x.std(axis=0)
        scale = np.where(scale > 0, scale, 1.0)
        y = np.r_[np.ones(d.shape[0]), np.zeros(dp.shape[0])]
        model = LogisticRegression(C=1e4, max_iter=500).fit((x - mean) / scale, y)
        return cls(mean, scale, model.coef_.ravel() / scale, float(model.intercept_[0]) - float(model.coef_.ravel() @ (mean / scale)))

    def score(self, x):
        return x.astype(float, copy=False) @ self.coef + self.intercept

    def describe(self, t):
        w = ", ".join(f"{c:.4g}" for c in self.coef[:8]) + (", ..." if self.coef.size > 8 else "")
        return {"family": "logistic", "statistic": "logistic-regression logit w.M(D) + b",
                "tail": "upper", "threshold": t, "weights": self.coef.tolist()[:64], "intercept": self.intercept,
                "text": f"w.M(D) + b >= {t:.6g} (logistic, w = [{w}])"}


class BoostedScorer(Scorer):
    """Gradient-boosted trees classifying "came from D" on the output coordinates (a nonlinear DP-Sniper
    classifier): its score sees leaks in the joint law of several coordinates whose marginals are equal and which
    no half-plane separates (a checkerboard, the parity of a sum, a bit tied to a strip of a continuous value).
    At most ``max_train`` outputs per side; fixed seed (the fit is part of the selection, never certified)."""
    family = "boosted"
    thread_safe = False     # threadpool_limits is process-wide: two at once restore each other's limit

    def __init__(self, model):
        self.model = model

    @classmethod
    def fit(cls, d: np.ndarray, dp: np.ndarray, max_train: int = 50_000) -> "BoostedScorer":
        from sklearn.ensemble import HistGradientBoostingClassifier
        from threadpoolctl import threadpool_limits
        d, dp = d[:max_train].astype(float), dp[:max_train].astype(float)
        y = np.r_[np.ones(d.shape[0]), np.zeros(dp.shape[0])]
        model = HistGradientBoostingClassifier(max_iter=100, learning_rate=0.1, early_stopping=False, random_state=0)
        with threadpool_limits(1):          # the workers are the parallelism; OpenMP threads beside them contend
            return cls(model.fit(np.concatenate([d, dp]), y))

    def score(self, x):
        from threadpoolctl import threadpool_limits
        with threadpool_limits(1):
            return self.model.decision_function(np.asarray(x, dtype=float))

    def describe(self, t):
        return {"family": "boosted", "statistic": "gradient-boosted trees' logit of 'from D'", "tail": "upper",
                "threshold": t, "text": f"score(M(D)) >= {t:.6g} (boosted trees)"}


def output_kind(x: np.ndarray, declared: str = "auto") -> str:
    """"discrete" for labels / integers / few distinct values, else "continuous"."""
    if declared != "auto":
        return declared
    if x.dtype.kind in "iubUS":
        return "discrete"
    return "continuous"


def pair_kind(d: np.ndarray, dp: np.ndarray, declared: str = "auto") -> str:
    """The output kind of one neighbouring pair, from both its sides: continuous if either side is (integer data
    in one pair must not deny another pair's float outputs their families)."""
    both = {output_kind(d, declared), output_kind(dp, declared)}
    return "continuous" if "continuous" in both else "discrete"


def scorers_for(d_sel: np.ndarray, dp_sel: np.ndarray, kind: str, max_cells: int = 4096,
                max_coordinates: int = 16, max_logistic: int = 256, max_boosted: int = 64, pmap=map) -> list[Scorer]:
    """Candidate scorers for one direction (D against D'), fitted on the selection sample.

    d_sel, dp_sel: (n_sel, ...) selection outputs. Selection is free (only the chosen event
    is certified), so every family that fits is tried. ``pmap``: the map that runs independent fits (the same
    scorers with any).
    """
    numeric = d_sel.dtype.kind in "iubf"
    out: list[Scorer] = []
    vector = d_sel.ndim > 1 and int(np.prod(d_sel.shape[1:])) > 1
    if not vector:
        d1, p1 = d_sel.reshape(-1), dp_sel.reshape(-1)
        if numeric:
            out += [ThresholdScorer(+1), ThresholdScorer(-1)]
        if kind == "discrete" or not numeric:
            out.append(CellScorer.fit(d1, p1))
        elif np.unique(np.concatenate([d1[:20000], p1[:20000]])).size <= 256:
            # a float output with few values (e.g. a clipped or rounded release): cells too
            cs = CellScorer.fit(d1, p1)
            if cs.cells.size <= max_cells:
                out.append(cs)
        else:
            # a continuous output: intervals inside the range (histogram bins, about 200 fitting outputs per bin
            # and side) and its atoms, if any value repeats
            columns = sorted_columns(d1, p1, pmap)
            out.append(HistogramScorer.fit(d1, p1, bins=int(np.clip(d1.size // 200, 16, 1024)), columns=columns))
            # no two values equal (as floats): no key repeats, no atoms (the usual case, without sorting the keys)
            pooled = columns[2]
            atoms = CellScorer.fit_atoms(d1, p1) if (pooled[1:] == pooled[:-1]).any() else None
            if atoms is not None and atoms.cells.size <= max_cells:
                out.append(atoms)
        return out
    d2 = d_sel.reshape(d_sel.shape[0], -1)
    p2 = dp_sel.reshape(dp_sel.shape[0], -1)
    if kind == "discrete" or not numeric:
        keys = np.unique(_as_keys(np.concatenate([d2[:50000], p2[:50000]])))
        if keys.size <= max_cells or not numeric:
            out.append(CellScorer.fit(d2, p2))
    if numeric:
        out.append(NaiveBayesScorer.fit(d2, p2))
        if kind == "continuous" and d2.shape[1] <= max_logistic:
            out.append(LogisticScorer.fit(d2, p2))
        if d2.shape[1] <= max_boosted and not (kind == "discrete" and out and isinstance(out[0], CellScorer)):
            out.append(BoostedScorer.fit(d2, p2))
        if d2.shape[1] <= max_coordinates:
            out += [ThresholdScorer(s, j) for j in range(d2.shape[1]) for s in (+1, -1)]
        else:
            # long vectors: thresholds on the coordinates whose marginals differ most on the fitting sample (a leak in
            # one rare coordinate drowns in the binning noise of all the others in the naive-Bayes sum)
            out += [ThresholdScorer(s, int(j)) for j in most_different_coordinates(d2, p2, max_coordinates)
                    for s in (+1, -1)]
    return out


def most_different_coordinates(d: np.ndarray, dp: np.ndarray, k: int, *, rows: int = 20_000,
                               levels=(0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99)) -> np.ndarray:
    """The ``k`` coordinates of (n, m) outputs whose marginals under D and D' differ most: per coordinate, the
    largest two-proportion z over exceedances of the pooled quantiles at ``levels`` (a KS distance at a few points,
    in units of its standard error), on at most ``rows`` outputs per side, fewer for very long vectors (at most
    2 x 10^7 values per side)."""
    rows = max(100, min(rows, 20_000_000 // max(1, d.shape[1])))
    d = np.asarray(d[:rows], dtype=float)
    dp = np.asarray(dp[:rows], dtype=float)
    pooled = np.concatenate([d, dp])
    z = np.zeros(d.shape[1])
    for q in np.quantile(pooled, levels, axis=0):          # (m,) per level
        a, b = (d > q).mean(axis=0), (dp > q).mean(axis=0)
        pbar = 0.5 * (a + b)
        se = np.sqrt(np.maximum(pbar * (1 - pbar), 1e-12) * (1.0 / d.shape[0] + 1.0 / dp.shape[0]))
        z = np.maximum(z, np.abs(a - b) / se)
    return np.argsort(-z, kind="stable")[:k]


def flat(x: np.ndarray) -> np.ndarray:
    """Outputs as (n,) for scalars, (n, k) for vectors."""
    if x.ndim == 1:
        return x
    if int(np.prod(x.shape[1:])) == 1:
        return x.reshape(-1)
    return x.reshape(x.shape[0], -1)


def selection_scores_both(d_sel, dp_sel, kind: str, cache: dict | None = None, pmap=map) -> tuple[list, list]:
    """:func:`selection_scores` for both directions at once: (D against D', D' against D). The reverse direction's
    scorers are the forward ones mirrored (:meth:`Scorer.mirror`) wherever that is exact, their sorted scores the
    forward ones negated and reversed; only the others (classifiers) are fitted again. Equal to two calls of
    :func:`selection_scores`, bit for bit.

    ``pmap``: a map (``ThreadPoolExecutor.map``) to run the independent sorts and fits with; each job computes
    what it would compute alone, so the result is the same with any."""
    cache = {} if cache is None else cache
    half = d_sel.shape[0] // 2
    first, second = (d_sel[:half], dp_sel[:half]), (d_sel[half:], dp_sel[half:])
    fwd = scorers_for(*first, kind, pmap=pmap)
    mirrors = [sc.mirror() for sc in fwd]
    if any(m is None for m in mirrors):
        refit = scorers_for(*first[::-1], kind, pmap=pmap)
        if [type(r) for r in refit] != [type(sc) for sc in fwd]:     # (the families are chosen symmetrically)
            return selection_scores(d_sel, dp_sel, kind, cache), selection_scores(dp_sel, d_sel, kind, cache)
    # the raw columns the thresholds read, one sort each (both tails and directions take theirs from the cache)
    columns = {(id(x), sc.coord): (ThresholdScorer(+1, sc.coord), x) for sc in fwd if not sc.learned
               for x in (d_sel, dp_sel)}
    _run_all(pmap, [lambda sc=sc, x=x: sc.sorted_score(x, cache) for sc, x in columns.values()])
    # the learned scores of the second half: forward, and the refitted reverse ones where there is no mirror
    jobs = {(k, s): (sc, x) for k, sc in enumerate(fwd) if sc.learned for s, x in enumerate(second)}
    jobs |= {(k, 2 + s): (refit[k], x) for k, m in enumerate(mirrors) if m is None for s, x in enumerate(second)}
    got = {}
    for safe, how in ((True, pmap), (False, map)):   # the thread-safe scorers through pmap, the others here
        mine = [key for key, (sc, _) in jobs.items() if sc.thread_safe == safe]
        got |= dict(zip(mine, _run_all(how, [lambda sc=jobs[key][0], x=jobs[key][1]: sc.sorted_scores(x)
                                             for key in mine])))
    out_f, out_b = [], []
    for k, (sc, m) in enumerate(zip(fwd, mirrors)):
        if not sc.learned:
            out_f.append((sc, sc.sorted_score(d_sel, cache), sc.sorted_score(dp_sel, cache)))
            out_b.append((m, m.sorted_score(dp_sel, cache), m.sorted_score(d_sel, cache)))
            continue
        x, y = got[k, 0], got[k, 1]
        out_f.append((sc, x, y))
        # the mirror's sorted scores: the forward ones negated (0.0 - x: a zero score stays +0.0, as refitted)
        out_b.append((m, 0.0 - y[::-1], 0.0 - x[::-1]) if m is not None else (refit[k], got[k, 3], got[k, 2]))
    return out_f, out_b


def _run_all(pmap, jobs: list) -> list:
    """The results of calling each job (no arguments), in order, through ``pmap``."""
    return list(pmap(lambda job: job(), jobs))


def selection_scores(d_sel, dp_sel, kind: str, cache: dict | None = None):
    """Every candidate scorer with the *sorted* selection scores its threshold is chosen on.

    Learned scorers are fitted on the first half of the selection sample and scored on the
    second half (cross-fitting); fixed scorers (thresholds of the output) use all of it.
    ``cache`` (keyed by array identity) shares sorts between tails and directions.
    """
    cache = {} if cache is None else cache
    half = d_sel.shape[0] // 2
    out = []
    for sc in scorers_for(d_sel[:half], dp_sel[:half], kind):
        if sc.learned:
            out.append((sc, sc.sorted_scores(d_sel[half:]), sc.sorted_scores(dp_sel[half:])))
        else:
            out.append((sc, sc.sorted_score(d_sel, cache), sc.sorted_score(dp_sel, cache)))
    return out
