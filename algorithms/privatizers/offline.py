"""Offline count privatizers of DP-APVI (Qiao & Wang 2022, Algorithm 1, eqs. 2-5, Lemma C.1, Section 3).

The dataset's counts, per step h (never pooled over h): ``n_h(s,a)`` (H S A pair counts) and
``n_h(s,a,s')`` (H S^2 A triple counts), batched over runs: (runs, H, S, A[, S]).

* :class:`OfflineCountPrivatizer`: the interface (a user's privatizer subclasses it; docs/privatizers.md);
  the two built-ins below implement it.
* :class:`OfflineGaussianPrivatizer` (rho-zCDP, eq. 2): ``n' = {n + N(0, sigma^2)}^+`` on every count,
  ``sigma^2 = 2H / rho`` (a VARIANCE); width ``E_rho = 4 sqrt(H log(4 H S^2 A / beta) / rho)`` (Lemma 3.1);
  post-processing with band ``E_rho / 2`` and no shift (Section 3.3); ``P~ = ntil(s,a,.)/ntil(s,a)`` if
  ``ntil(s,a) > E_rho`` else uniform (Section 3.3). Privacy (docs/derivations.md#neighbouring-relation, Lemma C.1): replacing one trajectory changes
  H pair counts by -1 and H by +1, l2 sensitivity ``sqrt(2H)`` per family, so each family is
  ``GaussianDpEvent(sigma / sqrt(2H))`` = rho/2-zCDP and the two compose to rho-zCDP.
* :class:`OfflineLaplacePrivatizer` (pure eps-DP, docs/derivations.md#noise-calibration): ``Lap(4H/eps)`` on every count; the union of
  both families has l1 sensitivity ``4H``, so it is ``LaplaceDpEvent(1)`` i.e. eps-DP; width
  ``E_eps = (8H/eps) log(2 H S^2 A / beta)``.

``beta`` is the utility failure probability the paper writes ``delta`` (renamed here so it is not confused with
the delta of (eps, delta)-DP). The clip ``{.}^+`` and everything after it are post-processing.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcheck.accounting import gaussian_sigma_squared, rho_from_epsilon
from dpcheck.claims import Claim
from dpcheck.errors import InputError

from dpcheck.algorithms.privatizers.base import Declaration
from dpcheck.algorithms.privatizers.projection import post_process_offline
from dpcheck.algorithms.privatizers.noise import laplace

SOURCE = "Qiao & Wang, Offline RL with Differential Privacy"


@dataclass(frozen=True)
class OfflineCounts:
    """Private counts of DP-APVI, batched over runs.

    visits:            ntil_h(s,a) = sum_s' ntil_h(s,a,s')   (runs, H, S, A)
    transitions:       ntil_h(s,a,s')                         (runs, H, S, A, S)
    noisy_visits:      n'_h(s,a)  (clipped noisy counts, before eqs. 3-4)
    noisy_transitions: n'_h(s,a,s')
    width:             E_rho (or E_eps)
    """

    visits: np.ndarray
    transitions: np.ndarray
    noisy_visits: np.ndarray
    noisy_transitions: np.ndarray
    width: float

    @property
    def kernel(self) -> np.ndarray:
        """P~_h(s'|s,a) (eq. 5): ntil(s,a,s')/ntil(s,a) if ntil(s,a) > E, else uniform 1/S."""
        S = self.transitions.shape[-1]
        ok = self.visits > self.width
        with np.errstate(invalid="ignore", divide="ignore"):
            P = self.transitions / self.visits[..., None]
        return np.where(ok[..., None], P, 1.0 / S)


def dataset_counts(states, actions, S: int, A: int):
    """Pair and triple counts of a batch of datasets.

    states (runs, n, H+1) ints, actions (runs, n, H) ints -> n_h(s,a) (runs,H,S,A), n_h(s,a,s') (runs,H,S,A,S).
    """
    st, ac = np.asarray(states), np.asarray(actions)
    if st.ndim != 3 or ac.ndim != 3 or st.shape[:2] != ac.shape[:2] or st.shape[2] != ac.shape[2] + 1:
        raise InputError(f"states must be (runs, n, H+1) and actions (runs, n, H); got {st.shape}, {ac.shape}")
    if st.size and (st.min() < 0 or st.max() >= S) or ac.size and (ac.min() < 0 or ac.max() >= A):
        raise InputError("states / actions out of range")
    runs, n, H = ac.shape
    r = np.repeat(np.arange(runs), n * H)
    h = np.tile(np.arange(H), runs * n)
    pair = np.zeros((runs, H, S, A))
    np.add.at(pair, (r, h, st[:, :, :H].ravel(), ac.ravel()), 1.0)
    triple = np.zeros((runs, H, S, A, S))
    np.add.at(triple, (r, h, st[:, :, :H].ravel(), ac.ravel(), st[:, :, 1:].ravel()), 1.0)
    return pair, triple


def _check_counts(pair, triple):
    pair, triple = np.asarray(pair, float), np.asarray(triple, float)
    if pair.ndim != 4 or triple.shape != pair.shape + (pair.shape[-2],):
        raise InputError(f"counts must be (runs,H,S,A) and (runs,H,S,A,S); got {pair.shape}, {triple.shape}")
    if np.any(pair < 0) or np.any(triple < 0):
        raise InputError("counts must be non-negative")
    return pair, triple


def _positive_finite(name, v, what=""):
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number, got {v!r}") from None
    if isinstance(v, bool) or not (x > 0 and math.isfinite(x)):
        raise InputError(f"{name} must be a finite number > 0, got {v!r}")
    return x


def _check_beta(beta):
    b = _positive_finite("beta", beta)
    if not b < 1:
        raise InputError(f"beta (the paper's utility failure probability delta) must lie in (0, 1), got {beta!r}")
    return b


OFFLINE_INTERFACE = ("privatize", "width", "dp_event", "claim", "declare")


class OfflineCountPrivatizer:
    """The count-privatizer interface of DP-APVI (Qiao & Wang, Offline RL with DP, docs/derivations.md#noise-calibration; docs/privatizers.md,
    "Offline tabular: DP-APVI"). ONE release, from a whole dataset, of noisy pair counts n'_h(s,a) and triple
    counts n'_h(s,a,s'); everything after it (clip at 0, the consistency LP (docs/derivations.md#readings), the kernel P~ of eq. 5, the
    planner) is post-processing and done here, with the width E the privatizer declares.

    A researcher subclasses it and provides

    * ``name`` (class attribute) and ``beta`` (the failure probability of the width, in (0, 1));
    * ``noisy_counts(pair, triple, rng)`` -> (n' pair (runs,H,S,A), n' triple (runs,H,S,A,S)): the counts plus
      the noise, before the clip; ``rng`` (a numpy Generator) is the only randomness allowed;
    * ``width(H, S, A)`` -> E, public and data-independent, with P(|n' - n| <= E/2 for every count) >= 1 - beta
      (Lemma C.2's event, which Lemmas C.3-C.10 use);
    * ``dp_event(H)`` -> the dp_accounting DpEvent of the noise actually drawn, replacing ONE trajectory
      (it moves H pair and H triple counts by -1 and as many by +1: l1 4H for both families, l2 sqrt(2H) each);
    * ``claim`` (property) -> the :class:`dpcheck.Claim` (``notion="DP"`` with ``epsilon``, or ``"zCDP"`` with
      ``rho``).

    Optional: ``noise_variance(H)`` (the per-count variance of the noise: the audits compare it with the
    variance measured), ``sensitivity(H)`` (the sensitivity the noise is calibrated for: l2 per family for a
    zCDP claim, l1 of both families for a DP claim). The constructor takes the budget by keyword
    (``epsilon=`` or ``rho=``, as the claim has it) and ``beta=``. The built-ins below implement this class.
    """

    name = "offline_privatizer"
    beta = 0.1

    # -- what a subclass provides --------------------------------------------------------
    def noisy_counts(self, pair, triple, rng):
        raise NotImplementedError(self._missing("noisy_counts(pair, triple, rng)", "return n' = n + noise"))

    def width(self, H: int, S: int, A: int) -> float:
        raise NotImplementedError(self._missing("width(H, S, A)", "return the public width E"))

    def dp_event(self, H: int):
        raise NotImplementedError(self._missing("dp_event(H)", "the dp_accounting DpEvent of the noise drawn"))

    @property
    def claim(self) -> Claim:
        raise NotImplementedError(self._missing("claim", "a property returning the dpcheck.Claim promised"))

    def noise_variance(self, H: int) -> float | None:
        """Per-count variance of the noise (optional; None: not declared)."""
        return None

    def _missing(self, hook: str, what: str) -> str:
        return f"{type(self).__name__} does not implement {hook} ({what}); see docs/privatizers.md"

    # -- what the base class does --------------------------------------------------------
    def declare(self, H: int, S: int, A: int) -> Declaration:
        """Claim, DpEvent (replacement of one trajectory) and width E for an (H, S, A) dataset, from the
        parameters and the sizes (the same ``dp_event(H)`` / ``width(H, S, A)`` ``privatize`` uses)."""
        def event(neighbouring: str = "replacement"):
            if neighbouring != "replacement":
                raise InputError(f"{type(self).__name__} declares its DpEvent under replacement only, "
                                 f"got {neighbouring!r}")
            return self.dp_event(H)
        sens = getattr(self, "sensitivity", None)
        return Declaration(claim=self.claim, width=self.width(H, S, A), event=event, scale=self._scale(H),
                           sensitivity=sens(H) if callable(sens) else None)

    def _scale(self, H: int):
        return None

    def privatize(self, pair, triple, rng: np.random.Generator) -> OfflineCounts:
        """n' from :meth:`noisy_counts`, clip at 0 (eq. 2), then the Section 3.3 projection with band E/2."""
        pair, triple = _check_counts(pair, triple)
        if not isinstance(rng, np.random.Generator):
            raise InputError("rng must be a numpy.random.Generator")
        H, S, A = pair.shape[1:]
        noisy_p, noisy_t = self.noisy_counts(pair, triple, rng)
        noisy_p, noisy_t = np.asarray(noisy_p, float), np.asarray(noisy_t, float)
        if noisy_p.shape != pair.shape or noisy_t.shape != triple.shape:
            # the user's hook broke its contract: a plain exception, named by the loader's guard
            raise ValueError(f"noisy_counts() returned shapes {noisy_p.shape}, {noisy_t.shape}; expected "
                             f"{pair.shape}, {triple.shape}")
        if not (np.all(np.isfinite(noisy_p)) and np.all(np.isfinite(noisy_t))):
            raise ValueError("noisy_counts() returned NaN or infinity")
        noisy_p, noisy_t = np.maximum(noisy_p, 0.0), np.maximum(noisy_t, 0.0)
        E = float(self.width(H, S, A))
        if not (math.isfinite(E) and E >= 0):
            raise ValueError(f"width({H}, {S}, {A}) returned {E!r}, expected a finite number >= 0")
        pp = post_process_offline(noisy_t, noisy_p, E)
        return OfflineCounts(visits=pp.visits, transitions=pp.transitions, noisy_visits=noisy_p,
                             noisy_transitions=noisy_t, width=E)


class _OfflinePrivatizer(OfflineCountPrivatizer):
    """The built-ins: i.i.d. noise of one law on every count (``_noise``), pair counts drawn first."""

    def noisy_counts(self, pair, triple, rng):
        H = pair.shape[1]
        return pair + self._noise(rng, pair.shape, H), triple + self._noise(rng, triple.shape, H)


class OfflineGaussianPrivatizer(_OfflinePrivatizer):
    """DP-APVI's Gaussian count privatizer: rho-zCDP (Qiao & Wang 2022, eq. 2, Lemma C.1)."""

    name = "offline_gaussian"

    def __init__(self, rho: float, beta: float = 0.1):
        self.rho = _positive_finite("rho", rho)
        self.beta = _check_beta(beta)

    @classmethod
    def from_approx_dp(cls, epsilon: float, delta_dp: float, beta: float = 0.1):
        """(eps, delta_dp)-DP through zCDP (docs/derivations.md#noise-calibration): the rho whose Lemma E.15 conversion is exactly
        (eps, delta_dp)-DP (:func:`dpcheck.accounting.rho_from_epsilon`)."""
        epsilon = _positive_finite("epsilon", epsilon)
        delta_dp = _positive_finite("delta_dp", delta_dp)
        if not delta_dp < 1:
            raise InputError(f"delta_dp must lie in (0, 1), got {delta_dp!r}")
        return cls(rho=rho_from_epsilon(epsilon, delta_dp), beta=beta)

    def sigma(self, H: int) -> float:
        """Standard deviation sigma^2 = 2H / rho: each of the two families (pairs, triples) gets rho / 2
        (zCDP composes additively) at l2 sensitivity sqrt(2H) (Lemma C.1)."""
        return gaussian_sigma_squared(2.0 * H, self.rho / 2)

    def width(self, H: int, S: int, A: int) -> float:
        """E_rho = 4 sqrt(H log(4 H S^2 A / beta) / rho) (eq. 3, Lemma C.2)."""
        return 4.0 * math.sqrt(H * math.log(4.0 * H * S * S * A / self.beta) / self.rho)

    def _noise(self, rng, shape, H):
        return rng.normal(0.0, self.sigma(H), size=shape)

    def _scale(self, H: int) -> float:
        return self.sigma(H)

    def noise_variance(self, H: int) -> float:
        return self.sigma(H) ** 2

    def dp_event(self, H: int):
        import dp_accounting
        fam = dp_accounting.GaussianDpEvent(noise_multiplier=self.sigma(H) / math.sqrt(2.0 * H))
        return dp_accounting.ComposedDpEvent([fam, fam])

    def sensitivity(self, H: int) -> float:
        """Declared l2 sensitivity of one family under replacement: sqrt(2H)."""
        return math.sqrt(2.0 * H)

    @property
    def claim(self) -> Claim:
        return Claim(rho=self.rho, notion="zCDP", source=f"{SOURCE}, Lemma C.1 / Theorem 3.4 (DP-APVI is rho-zCDP)")


class OfflineLaplacePrivatizer(_OfflinePrivatizer):
    """Pure-DP variant: Lap(4H/eps) on every count (docs/derivations.md#noise-calibration)."""

    name = "offline_laplace"

    def __init__(self, epsilon: float, beta: float = 0.1):
        self.epsilon = _positive_finite("epsilon", epsilon)
        self.beta = _check_beta(beta)

    def scale(self, H: int) -> float:
        """b = 4H / eps (l1 sensitivity 4H of both families together)."""
        return 4.0 * H / self.epsilon

    def width(self, H: int, S: int, A: int) -> float:
        """E_eps = (8H/eps) log(2 H S^2 A / beta) (docs/derivations.md#noise-calibration)."""
        return 8.0 * H / self.epsilon * math.log(2.0 * H * S * S * A / self.beta)

    def _noise(self, rng, shape, H):
        return laplace(rng, self.scale(H), shape)

    def _scale(self, H: int) -> float:
        return self.scale(H)

    def noise_variance(self, H: int) -> float:
        return 2.0 * self.scale(H) ** 2

    def sensitivity(self, H: int) -> float:
        """Declared l1 sensitivity of both families together under replacement: 4H."""
        return 4.0 * H

    def dp_event(self, H: int):
        import dp_accounting
        return dp_accounting.LaplaceDpEvent(noise_multiplier=self.scale(H) / self.sensitivity(H))

    @property
    def claim(self) -> Claim:
        return Claim(epsilon=self.epsilon, notion="DP", source=f"{SOURCE}, docs/derivations.md#noise-calibration pure-DP variant (Laplace)")
