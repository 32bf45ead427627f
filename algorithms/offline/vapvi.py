"""DP-VAPVI, VAPVI and PEVI on linear MDPs (Qiao & Wang 2022, Algorithm 2), batched over runs.

The state and action sets are finite (every instance of algorithms/offline/instances.py is), so every sum over the K
trajectories of step h is a sum over (s, a[, s']) weighted by the counts n_h(s,a), n_h(s,a,s') and the
observed reward sums: ``sum_tau f(s_h^tau, a_h^tau, s_{h+1}^tau) = sum_{s,a,s'} n_h(s,a,s') f(s,a,s')``.
Exact, and the cost per step is O(runs S^2 A d + runs d^3) whatever K is.

Privacy (Algorithm 2, footnote 8, Lemma D.1; FRESH noise for every h). At every step h five statistics are
released, each with Gaussian noise of per-coordinate std ``sensitivity / sqrt(2 rho0)``, rho0 = rho/(5H):

    #  name            data  statistic                                   l2 sensitivity
    1  sigma_matrix    D'    sum phibar phibar^T (+ lambda I), noise K1_h  B^2/sqrt(2) ('paper') or B^2 ('replace')
    2  beta_vector     D'    sum phibar Vtil_{h+1}(sbar')^2 + g1_h       2 H^2 B
    3  theta_vector    D'    sum phibar Vtil_{h+1}(sbar')   + g2_h       2 H B
    4  lambda_matrix   D     sum phi phi^T / sigtil^2 (+ lambda I), K2_h  as #1
    5  w_vector        D     sum phi (r + Vtil_{h+1}(s'))/sigtil^2 + g3_h 2 H B

B = ``feature_bound`` (1 in the paper; the Appendix F features reach sqrt(7), so a
privacy-correct run there passes B = sqrt(7)). A matrix release ``M + (Z + Z^T)/sqrt(2)`` is the Gaussian
mechanism on the vector (upper off-diagonal entries, diagonal / sqrt(2)), whose l2 sensitivity is
``||Delta M||_F / sqrt(2)`` (Theorem 4.1 / Lemma D.1), hence the matrix sensitivities above (docs/derivations.md#neighbouring-relation; the flag
``matrix_neighbour``). Each release is declared as a :class:`PrivateStatistic` whose ``dp_event()`` is built
from the SAME sensitivity and std the sampler uses; their composition is rho-zCDP (5H rho0 = rho).

Widths (Lemma D.2, Section 4, Lemma D.2) are derived from the same stds: ``L = std(g2) sqrt(2 d log(10 H d/delta))``
(= 2H sqrt(d log(10Hd/delta)/rho0) for B = 1) and ``E = sqrt(8 d) std(Z) (2 + (log(5 c1 H/delta)/(c2 d))^(2/3))``
(= sqrt(2d/rho0)(...) for B = 1, 'paper').

Positive definiteness (Lemma D.2): Sigmatil_h and Lambdatil_h are solved with ``np.linalg.solve`` and their
smallest eigenvalue is recorded; a non-PD matrix (outside the Lemma D.2 event) is counted in
``not_pd_sigma`` / ``not_pd_lambda``. Where Lambdatil_h is not PD the elliptical penalty is undefined; we
set Gamma_h = +inf for that run and step (Qhat_h = 0: the most pessimistic choice), never a 0 penalty.
Sigmatil_h needs no fallback: its output is clipped to [1, H^2] by lines 7-8.

Dpen (Appendix F): give ``Dpen`` directly, or ``c_D`` with ``kappa > 0`` for the surrogate
``c_D (H^2 L/kappa + H^4 E sqrt(d)/kappa^1.5 + H^3 sqrt(d))``; nothing is divided by an unknown kappa.
"""
from __future__ import annotations

import math
from functools import partial
from dataclasses import dataclass

import numpy as np

from dpcheck.accounting import gaussian_rho, gaussian_sigma
from dpcheck.errors import InputError
from dpcheck.algorithms.envs._validate import check_rng
from dpcheck.algorithms.offline.result import OfflineResult
from dpcheck.algorithms.offline.dataset import (
    OfflineDataset, TabularCounts, check_features, positive_budget, probability,
)

MATRIX_NEIGHBOUR = ("paper", "replace")
STATISTICS = ("sigma_matrix", "beta_vector", "theta_vector", "lambda_matrix", "w_vector")


@dataclass(frozen=True)
class PrivateStatistic:
    """One Gaussian release of DP-VAPVI (Lemma D.1). ``step`` is 0-based; ``sensitivity`` is the l2
    sensitivity of the released vector (matrices: of (upper off-diagonal, diagonal/sqrt(2)));
    ``noise_std`` is the per-coordinate std the sampler uses for that vector."""

    name: str
    step: int
    data: str
    sensitivity: float
    noise_std: float

    @property
    def zcdp(self) -> float:
        """rho of this release: Delta^2 / (2 sigma^2) (Gaussian mechanism, Lemma 2.7)."""
        return gaussian_rho(self.sensitivity, self.noise_std)

    def dp_event(self):
        import dp_accounting
        return dp_accounting.GaussianDpEvent(noise_multiplier=self.noise_std / self.sensitivity)


@dataclass(frozen=True)
class VAPVINoise:
    """The 5H noise objects (Algorithm 2, footnote 8), fresh for every (run, h): g1, g2, g3 (runs, H, d) and the symmetric
    matrix noises N1 = (Z1 + Z1^T)/sqrt(2), N2 (runs, H, d, d) (K_i = (E/2) I + N_i)."""

    g1: np.ndarray
    g2: np.ndarray
    g3: np.ndarray
    N1: np.ndarray
    N2: np.ndarray


def gaussian_widths(stds: dict, H: int, d: int, delta: float, c1: float = 1.0, c2: float = 1.0) -> tuple[float, float]:
    """(E, L) of Lemma D.2 from per-release Gaussian stds (module docstring): ``E = sqrt(8 d) std(Z)
    (2 + (log(5 c1 H/delta)/(c2 d))^(2/3))`` with std(Z) the larger matrix std, ``L = std sqrt(2 d log(10 H d/delta))``
    with std the largest of std(g2), std(g3) and std(g1)/H (so ||g1|| <= H L too)."""
    zs = max(stds["sigma_matrix"], stds["lambda_matrix"])
    gs = max(stds["theta_vector"], stds["w_vector"], stds["beta_vector"] / H)
    E = math.sqrt(8.0 * d) * zs * (2.0 + (math.log(5.0 * c1 * H / delta) / (c2 * d)) ** (2.0 / 3.0))
    L = gs * math.sqrt(2.0 * d * math.log(10.0 * H * d / delta))
    return E, L


def gaussian_noise(rng: np.random.Generator, runs: int, H: int, d: int, stds: dict) -> VAPVINoise:
    """Fresh independent Gaussian noise for every (run, h). Draw order: g1, g2, g3, Z1, Z2; the matrix
    noises are (Z + Z^T)/sqrt(2) (P12: / sqrt(2), not / 2)."""
    g1 = rng.normal(0.0, stds["beta_vector"], size=(runs, H, d))
    g2 = rng.normal(0.0, stds["theta_vector"], size=(runs, H, d))
    g3 = rng.normal(0.0, stds["w_vector"], size=(runs, H, d))
    Z1 = rng.normal(0.0, stds["sigma_matrix"], size=(runs, H, d, d))
    Z2 = rng.normal(0.0, stds["lambda_matrix"], size=(runs, H, d, d))
    sym = lambda Z: (Z + np.swapaxes(Z, -1, -2)) / math.sqrt(2.0)
    return VAPVINoise(g1, g2, g3, sym(Z1), sym(Z2))


def _non_private_event():
    """The DpEvent of a learner that releases nothing private (read lazily: OfflineResult.declare)."""
    import dp_accounting
    return dp_accounting.NonPrivateDpEvent()


def gaussian_dp_event(stds: dict, sensitivities: dict, H: int):
    """The DpEvent of the 5H releases: at each of the H steps, every statistic k released once with Gaussian
    noise of std ``stds[k]`` for l2 sensitivity ``sensitivities[k]`` (noise multiplier std / Delta), composed."""
    import dp_accounting
    return dp_accounting.ComposedDpEvent([dp_accounting.GaussianDpEvent(stds[k] / sensitivities[k])
                                          for _ in range(H) for k in STATISTICS])


class RegressionPrivatizer:
    """The privatizer of DP-VAPVI's released regression statistics (Qiao & Wang, Offline RL with DP, docs/derivations.md#noise-calibration;
    docs/privatizers.md, "Offline linear"). At every step h DP-VAPVI releases Sigmatil_h = Sigma_h + (E/2) I + N1_h,
    beta_h + g1_h, theta_h + g2_h (on D'), Lambdatil_h = Lambda_h + (E/2) I + N2_h and w_h + g3_h (on D); the
    algorithm computes the statistics and their l2 sensitivities (``sensitivities``: name -> Delta, matrices
    as the vector (upper off-diagonal, diagonal / sqrt(2))), the privatizer draws the noise and declares it.

    A researcher subclasses it and provides

    * ``name`` (class attribute);
    * ``draw(rng, runs, H, d, sensitivities)`` -> :class:`VAPVINoise`: g1, g2, g3 (runs, H, d) and SYMMETRIC
      N1, N2 (runs, H, d, d), fresh for every step (the 5H-fold composition needs it); ``rng`` only;
    * ``widths(H, d, sensitivities, delta)`` -> (E, L) of Lemma D.2: w.p. >= 1 - delta, for every h,
      ||g1_h|| <= H L, ||g2_h||, ||g3_h|| <= L and ||N_i|| <= E/2 (so the E/2 shift keeps the matrices PD);
    * ``dp_event(H, sensitivities)`` -> the dp_accounting DpEvent of all 5H releases, ONE trajectory replaced;
    * ``claim`` (property) -> the :class:`dpcheck.Claim` (``notion="zCDP"`` with ``rho``, or ``"DP"``).

    Optional: ``noise_stds(H, sensitivities)`` -> name -> the per-coordinate std of each release's noise (the
    audits compare it with the measured one and use it in the Neyman-Pearson black box); None if not declared.
    The constructor takes the budget by keyword (``rho=`` or ``epsilon=``). :class:`GaussianRegressionPrivatizer`
    (the paper's) implements it.
    """

    name = "regression_privatizer"

    def draw(self, rng, runs: int, H: int, d: int, sensitivities: dict) -> VAPVINoise:
        raise NotImplementedError(self._missing("draw(rng, runs, H, d, sensitivities)", "return the VAPVINoise"))

    def widths(self, H: int, d: int, sensitivities: dict, delta: float) -> tuple[float, float]:
        raise NotImplementedError(self._missing("widths(H, d, sensitivities, delta)", "return (E, L) of Lemma D.2"))

    def dp_event(self, H: int, sensitivities: dict):
        raise NotImplementedError(self._missing("dp_event(H, sensitivities)", "the DpEvent of the 5H releases"))

    @property
    def claim(self):
        raise NotImplementedError(self._missing("claim", "a property returning the dpcheck.Claim promised"))

    def noise_stds(self, H: int, sensitivities: dict) -> dict | None:
        return None

    def _missing(self, hook: str, what: str) -> str:
        return f"{type(self).__name__} does not implement {hook} ({what}); see docs/privatizers.md"


REGRESSION_INTERFACE = ("draw", "widths", "dp_event", "claim")


class GaussianRegressionPrivatizer(RegressionPrivatizer):
    """The paper's privatizer (Lemma D.1): N(0, Delta^2 / (2 rho0)) per coordinate, rho0 = rho / (5H);
    the 5H Gaussian releases compose to rho-zCDP (Lemma E.16/E.17)."""

    name = "gaussian"

    def __init__(self, rho: float = 1.0, c1: float = 1.0, c2: float = 1.0):
        self.rho = positive_budget("rho", rho)
        self.c1, self.c2 = float(c1), float(c2)

    def noise_stds(self, H: int, sensitivities: dict) -> dict:
        r0 = self.rho / (5.0 * H)
        return {k: gaussian_sigma(s, r0) for k, s in sensitivities.items()}

    def widths(self, H, d, sensitivities, delta):
        return gaussian_widths(self.noise_stds(H, sensitivities), H, d, delta, self.c1, self.c2)

    def draw(self, rng, runs, H, d, sensitivities):
        return gaussian_noise(rng, runs, H, d, self.noise_stds(H, sensitivities))

    def dp_event(self, H, sensitivities):
        return gaussian_dp_event(self.noise_stds(H, sensitivities), sensitivities, H)

    @property
    def claim(self):
        from dpcheck.claims import Claim
        return Claim(rho=self.rho, notion="zCDP", source="Qiao & Wang, Offline RL with DP, Theorem 4.1 / Lemma D.1")


@dataclass(frozen=True)
class LinearResult(OfflineResult):
    """Output of DP-VAPVI / VAPVI / PEVI for a batch of runs (0-based h; runs first).

    policy         pi_hat_h(s) (runs, H, S) int; ``policy_probs`` (runs, H, S, A)
    values         Vtil_h(s) = max_a Qhat_h(s,a), pessimistic value estimates (runs, H+1, S)
    q_values       Qhat_h = {min(Qbar_h, H-h+1)}^+                    (runs, H, S, A)
    bellman        phi(s,a)^T wtil_h, the private Bellman estimate     (runs, H, S, A)
    penalties      Gamma_h(s,a)                                         (runs, H, S, A)
    weights        wtil_h                                               (runs, H, d)
    sigma2         sigtil_h^2(s,a) (1 for PEVI)                         (runs, H, S, A)
    statistics     the released (noisy) statistics, dict name -> array: sigma_matrix (runs,H,d,d) = Sigmatil_h,
                   beta_vector, theta_vector (runs,H,d), lambda_matrix = Lambdatil_h, w_vector (runs,H,d)
                   (PEVI: lambda_matrix and w_vector only, no noise)
    noise          VAPVINoise actually added (None when the noise is off)
    private_statistics  the 5H declarations (empty when the noise is off)
    min_eig_sigma, min_eig_lambda   smallest eigenvalue of Sigmatil_h, Lambdatil_h (runs, H)
    not_pd_sigma, not_pd_lambda     counts per run of steps where it was <= 0 (runs,)
    K, E, L, Dpen, additive         trajectories per dataset, widths, penalty constant, additive term Dpen/K
    max_feature_norm, feature_bound  measured max ||phi|| and the bound the noise was calibrated for
    config, dp_event
    """

    bellman: np.ndarray
    penalties: np.ndarray
    weights: np.ndarray
    sigma2: np.ndarray
    statistics: dict
    noise: VAPVINoise | None
    private_statistics: tuple
    min_eig_sigma: np.ndarray | None
    min_eig_lambda: np.ndarray
    not_pd_sigma: np.ndarray | None
    not_pd_lambda: np.ndarray
    K: int
    E: float
    L: float
    Dpen: float
    additive: float
    max_feature_norm: float
    feature_bound: float

    @property
    def feature_bound_violated(self) -> bool:
        """True when max ||phi|| exceeds the bound the noise assumes: the declared sensitivities are then
        wrong for these features (Appendix F) and the privacy claim does not hold."""
        return self.max_feature_norm > self.feature_bound * (1 + 1e-12)

    def summary(self) -> str:
        runs, H, S, A = self.q_values.shape
        return (f"{self.config.get('name')}: runs={runs} K={self.K} H={H} S={S} A={A} E={self.E:.4g} "
                f"L={self.L:.4g} Dpen/K={self.additive:.4g}; mean Vtil_1={self.values[:, 0].mean():.4g}; "
                f"non-PD Lambdatil steps={int(self.not_pd_lambda.sum())}; "
                f"max||phi||={self.max_feature_norm:.4g} (bound {self.feature_bound:g})")


def _as_counts(data, split: bool):
    """(D counts, D' counts) with reward sums; DP-VAPVI's split (Section 2; Algorithm 2)."""
    if isinstance(data, tuple):
        if len(data) != 2:
            raise InputError("data as a tuple must be (D, D')")
        D, Dp = (_as_counts(x, False)[0] for x in data)
        if D.visits.shape != Dp.visits.shape:
            raise InputError(f"D and D' disagree in shape: {D.visits.shape} vs {Dp.visits.shape}")
        if D.n != Dp.n:
            raise InputError(f"D and D' must both have K trajectories, got {D.n} and {Dp.n}")
        return D, Dp
    if isinstance(data, OfflineDataset):
        if data.rewards is None:
            raise InputError("the linear algorithms read the observed rewards r_h^tau; the dataset has none")
        if split:
            a, b = data.split()
            return a.counts(), b.counts()
        c = data.counts()
        return c, c
    if isinstance(data, TabularCounts):
        if data.reward_sums is None:
            raise InputError("the linear algorithms need reward sums (sample_counts(..., rewards=True))")
        if split:
            raise InputError("split=True needs an OfflineDataset (or a (D, D') tuple), not one TabularCounts")
        return data, data
    raise InputError(f"data must be an OfflineDataset, TabularCounts or (D, D'), got {type(data).__name__}")


def _solve(M, b):
    """Batched solve M x = b; pinv fallback for exactly singular matrices (probability 0 with noise)."""
    try:
        return np.linalg.solve(M, b)
    except np.linalg.LinAlgError:
        return np.linalg.pinv(M) @ b


class DPVAPVI:
    """DP-VAPVI (Algorithm 2). ``rho = inf`` switches every noise (and the E/2 shift) off.

    Parameters: rho (zCDP budget), delta (utility failure probability), C (elliptical-penalty constant),
    lam (ridge lambda > 0), Dpen or (c_D, kappa) (Appendix F), c1 = c2 = 1 inside E (Algorithm 1), matrix_neighbour
    'paper' | 'replace' (docs/derivations.md#neighbouring-relation), feature_bound B (Appendix F), split (True = D, D' halves of 2K trajectories).
    """

    name = "DP-VAPVI"

    def __init__(self, rho: float = 1.0, *, delta: float = 0.1, C: float = 1.0, lam: float = 1.0,
                 Dpen: float | None = None, c_D: float | None = None, kappa: float | None = None,
                 c1: float = 1.0, c2: float = 1.0, matrix_neighbour: str = "paper", feature_bound: float = 1.0,
                 split: bool = True, privatizer=None):
        self.plugin = privatizer
        if privatizer is not None:
            for member in REGRESSION_INTERFACE:
                if not hasattr(privatizer, member):
                    raise InputError(f"privatizer {privatizer!r} lacks {member} (see RegressionPrivatizer)")
            claim = privatizer.claim
            rho = claim.rho if claim.rho is not None else math.nan      # only for reports; the claim is the plug-in's
        self.rho = rho if privatizer is not None else positive_budget("rho", rho)
        self.delta = probability("delta", delta)
        self.C = self._nonneg("C", C)
        self.lam = positive_budget("lam", lam, allow_inf=False)
        self.c1 = positive_budget("c1", c1, allow_inf=False)
        self.c2 = positive_budget("c2", c2, allow_inf=False)
        self.feature_bound = positive_budget("feature_bound", feature_bound, allow_inf=False)
        if matrix_neighbour not in MATRIX_NEIGHBOUR:
            raise InputError(f"matrix_neighbour must be one of {MATRIX_NEIGHBOUR}, got {matrix_neighbour!r}")
        self.matrix_neighbour = matrix_neighbour
        self.split = bool(split)
        # the released statistics' privatizer: a plug-in, or the paper's Gaussian one (None: the noise is off)
        self.privatizer = privatizer if privatizer is not None else (
            None if math.isinf(self.rho) else GaussianRegressionPrivatizer(self.rho, self.c1, self.c2))
        self.Dpen = None if Dpen is None else self._nonneg("Dpen", Dpen)
        self.c_D = None if c_D is None else self._nonneg("c_D", c_D)
        self.kappa = None if kappa is None else positive_budget("kappa", kappa, allow_inf=False)
        self._check_dpen()

    @staticmethod
    def _nonneg(name, v):
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise InputError(f"{name} must be a finite number >= 0, got {v!r}") from None
        if isinstance(v, bool) or not (math.isfinite(x) and x >= 0):
            raise InputError(f"{name} must be a finite number >= 0, got {v!r}")
        return x

    def _check_dpen(self):
        if self.Dpen is not None and self.c_D is not None:
            raise InputError("give either Dpen or c_D (with kappa), not both")
        if self.Dpen is None and (self.c_D is None or self.kappa is None):
            raise InputError("DP-VAPVI needs the penalty constant: Dpen=..., or c_D=... with kappa=... > 0 (Appendix F)")

    @property
    def config(self) -> dict:
        cfg = {"name": self.name, "rho": self.rho, "delta": self.delta, "C": self.C, "lam": self.lam,
               "Dpen": self.Dpen, "c_D": self.c_D, "kappa": self.kappa, "c1": self.c1, "c2": self.c2,
               "matrix_neighbour": self.matrix_neighbour, "feature_bound": self.feature_bound, "split": self.split}
        if self.plugin is not None:
            cfg["privatizer"] = getattr(self.plugin, "name", type(self.plugin).__name__)
        return cfg

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + ", ".join(f"{k}={v!r}" for k, v in self.config.items() if k != "name") + ")"

    # ------------------------------------------------------------------ calibration (one source of truth)
    @property
    def noise_off(self) -> bool:
        return self.privatizer is None

    def rho0(self, H: int) -> float:
        """Budget per release: rho / (5H) (Lemma D.1)."""
        return self.rho / (5.0 * H)

    def sensitivities(self, H: int) -> dict:
        """l2 sensitivity of each of the five releases (module table)."""
        B = self.feature_bound
        mat = B * B * (1.0 / math.sqrt(2.0) if self.matrix_neighbour == "paper" else 1.0)
        return {"sigma_matrix": mat, "beta_vector": 2.0 * H * H * B, "theta_vector": 2.0 * H * B,
                "lambda_matrix": mat, "w_vector": 2.0 * H * B}

    def noise_stds(self, H: int) -> dict:
        """Per-coordinate std of each release: sensitivity / sqrt(2 rho0) (2H^4/rho0, 2H^2/rho0 and
        1/(4 rho0) are the VARIANCES for B = 1, 'paper'); 0 with the noise off."""
        if self.noise_off:
            return {k: 0.0 for k in STATISTICS}
        if self.plugin is not None:
            return self.plugin.noise_stds(H, self.sensitivities(H))
        return self.privatizer.noise_stds(H, self.sensitivities(H))

    def widths(self, H: int, d: int) -> tuple[float, float]:
        """(E, L) of Lemma D.2 from the noise stds (module docstring); (0, 0) with the noise off."""
        if self.noise_off:
            return 0.0, 0.0
        if self.plugin is not None:
            E, L = self.plugin.widths(H, d, self.sensitivities(H), self.delta)
            return float(E), float(L)
        return gaussian_widths(self.noise_stds(H), H, d, self.delta, self.c1, self.c2)

    def penalty_constant(self, H: int, d: int) -> float:
        """Dpen (Appendix F): the given value, or c_D (H^2 L/kappa + H^4 E sqrt(d)/kappa^1.5 + H^3 sqrt(d))."""
        if self.Dpen is not None:
            return self.Dpen
        E, L = self.widths(H, d)
        k = self.kappa
        return self.c_D * (H * H * L / k + H ** 4 * E * math.sqrt(d) / k ** 1.5 + H ** 3 * math.sqrt(d))

    def private_statistics(self, H: int) -> tuple:
        """The 5H releases, step by step (empty with the noise off)."""
        if self.noise_off:
            return ()
        sens, std = self.sensitivities(H), self.noise_stds(H)
        if std is None:            # a plug-in that declares no per-release stds: its dp_event is its declaration
            return ()
        data = {"sigma_matrix": "D'", "beta_vector": "D'", "theta_vector": "D'", "lambda_matrix": "D", "w_vector": "D"}
        return tuple(PrivateStatistic(k, h, data[k], sens[k], std[k]) for h in range(H) for k in STATISTICS)

    def dp_event(self, H: int):
        """Composition of the 5H Gaussian releases (rho-zCDP); NonPrivateDpEvent with the noise off."""
        import dp_accounting
        if self.plugin is not None:
            return self.plugin.dp_event(H, self.sensitivities(H))
        stats = self.private_statistics(H)
        if not stats:
            return dp_accounting.NonPrivateDpEvent()
        return dp_accounting.ComposedDpEvent([s.dp_event() for s in stats])

    # ------------------------------------------------------------------ seams (planted-defect tests override)
    def draw_noise(self, rng: np.random.Generator, runs: int, H: int, d: int) -> VAPVINoise:
        """Fresh independent noise for every (run, h): the plug-in's ``draw``, or the paper's Gaussian
        noise at :meth:`noise_stds` (:func:`gaussian_noise`; draw order g1, g2, g3, Z1, Z2)."""
        if self.plugin is not None:
            return self.plugin.draw(rng, runs, H, d, self.sensitivities(H))
        return gaussian_noise(rng, runs, H, d, self.noise_stds(H))

    def _additive(self, H: int, d: int, K: int) -> tuple[float, float]:
        """(Dpen, additive penalty Dpen / K) of line 11."""
        D = self.penalty_constant(H, d)
        return D, D / K

    # ------------------------------------------------------------------ the algorithm
    def run(self, data, features, rng: np.random.Generator, *, replay: dict | None = None) -> LinearResult:
        """Run Algorithm 2 on every dataset of the batch.

        data:     OfflineDataset with observed rewards (split into D, D' when ``split``), a (D, D') tuple of
                  datasets or TabularCounts (with reward sums), or one TabularCounts when ``split=False``
        features: phi as an (S, A, d) array matching the data's S and A
        rng:      the noise source
        replay:   the released statistics of another run (its ``LinearResult.statistics``), used in place of
                  the ones computed here, step by step. For a dataflow check (the privacy.dataflow check of the
                  dp_vapvi audit): Theorem 4.1's output is a post-processing of the 5H releases, so two datasets
                  that replay the same releases give the same output, unless code after a release reads the data.
        """
        check_rng(rng)
        D, Dp = _as_counts(data, self.split)
        runs, H, S, A = D.visits.shape
        phi = check_features(features, S, A)
        d = phi.shape[2]
        K = D.n
        E, L = self.widths(H, d)
        Dpen, additive = self._additive(H, d, K)
        noise = None if self.noise_off else self.draw_noise(rng, runs, H, d)
        I = np.eye(d)

        V = np.zeros((runs, H + 1, S))
        Qhat = np.empty((runs, H, S, A))
        bell = np.empty((runs, H, S, A))
        Gam = np.empty((runs, H, S, A))
        sig2 = np.empty((runs, H, S, A))
        W = np.empty((runs, H, d))
        stats = {k: np.empty((runs, H, d, d) if k.endswith("matrix") else (runs, H, d)) for k in STATISTICS}
        eig_s = np.empty((runs, H))
        eig_l = np.empty((runs, H))
        for h in range(H - 1, -1, -1):
            Vn = V[:, h + 1]                                                  # (runs, S)
            top = self._value_cap(h, H)                                        # H - h + 1 in 1-based steps
            # lines 4-6 on D'
            Sig = np.einsum("rsa,sai,saj->rij", Dp.visits[:, h], phi, phi) + self.lam * I
            b_beta = np.einsum("rsat,sai,rt->ri", Dp.transitions[:, h], phi, Vn * Vn)
            b_theta = np.einsum("rsat,sai,rt->ri", Dp.transitions[:, h], phi, Vn)
            if noise is not None:
                Sig = Sig + (E / 2.0) * I + noise.N1[:, h]
                b_beta = b_beta + noise.g1[:, h]
                b_theta = b_theta + noise.g2[:, h]
            if replay is not None:
                Sig, b_beta, b_theta = (replay[k][:, h] for k in ("sigma_matrix", "beta_vector", "theta_vector"))
            stats["sigma_matrix"][:, h], stats["beta_vector"][:, h], stats["theta_vector"][:, h] = Sig, b_beta, b_theta
            eig_s[:, h] = np.linalg.eigvalsh(Sig)[:, 0]
            beta, theta = self._variance_regression(h, Sig, b_beta, b_theta, Vn)
            # lines 7-8 (clip before squaring; sigtil^2 = max(1, .))
            m2 = np.clip(np.einsum("sai,ri->rsa", phi, beta), 0.0, top * top)
            m1 = np.clip(np.einsum("sai,ri->rsa", phi, theta), 0.0, top)
            sig2[:, h] = np.maximum(1.0, m2 - m1 * m1)
            # lines 9-10 on D
            wts = D.visits[:, h] / sig2[:, h]
            Lam = np.einsum("rsa,sai,saj->rij", wts, phi, phi) + self.lam * I
            target = (D.reward_sums[:, h] + np.einsum("rsat,rt->rsa", D.transitions[:, h], Vn)) / sig2[:, h]
            b_w = np.einsum("rsa,sai->ri", target, phi)
            if noise is not None:
                Lam = Lam + (E / 2.0) * I + noise.N2[:, h]
                b_w = b_w + noise.g3[:, h]
            if replay is not None:
                Lam, b_w = replay["lambda_matrix"][:, h], replay["w_vector"][:, h]
            stats["lambda_matrix"][:, h], stats["w_vector"][:, h] = Lam, b_w
            eig_l[:, h] = np.linalg.eigvalsh(Lam)[:, 0]
            W[:, h] = _solve(Lam, b_w[..., None])[..., 0]
            bell[:, h] = np.einsum("sai,ri->rsa", phi, W[:, h])
            # line 11 with Lambdatil (Lemma D.2), and the non-PD fallback of the module docstring
            Gam[:, h] = self._penalty(h, Lam, phi, additive, eig_l[:, h], bell[:, h], Vn)
            # lines 12-14
            Qhat[:, h] = np.maximum(np.minimum(bell[:, h] - Gam[:, h], top), 0.0)
            V[:, h] = Qhat[:, h].max(axis=-1)
        policy = np.argmax(Qhat, axis=-1)
        return LinearResult(
            policy=policy, values=V, q_values=Qhat, bellman=bell, penalties=Gam, weights=W, sigma2=sig2,
            statistics=stats, noise=noise, private_statistics=self.private_statistics(H),
            min_eig_sigma=eig_s, min_eig_lambda=eig_l, not_pd_sigma=(eig_s <= 0).sum(axis=1),
            not_pd_lambda=(eig_l <= 0).sum(axis=1), K=K, E=E, L=L, Dpen=Dpen, additive=additive,
            max_feature_norm=float(np.sqrt((phi ** 2).sum(-1)).max()), feature_bound=self.feature_bound,
            config=self.config, declare=partial(self.dp_event, H))

    def _value_cap(self, h: int, H: int) -> float:
        """The range of Vtil_h, H - h + 1 for the paper's 1-based h (H - h for the 0-based index): line 13's clip
        of Qhat_h, and lines 7-8's clip of the variance estimate. Lemma D.1's sensitivities assume it. Seam."""
        return float(H - h)

    def _variance_regression(self, h, Sig, b_beta, b_theta, V_next):
        """Lines 5-6: betatil_h = Sigmatil_h^{-1} beta-release, thetatil_h = Sigmatil_h^{-1} theta-release (runs, d):
        post-processing of the three D' releases only. Seam: h (0-based) and V_next = Vtil_{h+1} (runs, S) let a
        check plant a regression that reads something else (e.g. the raw D')."""
        return _solve(Sig, b_beta[..., None])[..., 0], _solve(Sig, b_theta[..., None])[..., 0]

    def _penalty(self, h, Lam, phi, additive, min_eig, bellman, V_next):
        """Line 11: Gamma_h = C sqrt(d) ||phi||_{Lambdatil_h^{-1}} + Dpen/K; +inf on runs where Lambdatil_h is
        not PD. Seam: h (0-based), Lam (runs, d, d), phi (S, A, d), min_eig (runs,), bellman = phi^T wtil_h
        (runs, S, A) and V_next = Vtil_{h+1} (runs, S) let a check plant e.g. Lemma D.3's oracle penalty."""
        S, A, d = phi.shape
        phi_flat = phi.reshape(S * A, d)
        sol = _solve(Lam, np.broadcast_to(phi_flat.T, Lam.shape[:1] + phi_flat.T.shape))   # (runs, d, S A)
        q = np.einsum("ni,rin->rn", phi_flat, sol).reshape(-1, S, A)
        g = self.C * math.sqrt(d) * np.sqrt(np.maximum(q, 0.0)) + additive
        return np.where((min_eig > 0)[:, None, None], g, np.inf)


class VAPVI(DPVAPVI):
    """Non-private VAPVI (docs/derivations.md#readings): DP-VAPVI with every noise and the E/2 shift removed, and the additive
    penalty 2 H^3 sqrt(d) / K (inferred from eq. 11 and the H^3 sqrt(d) term of Dpen)."""

    name = "VAPVI"

    def __init__(self, *, delta: float = 0.1, C: float = 1.0, lam: float = 1.0, split: bool = True):
        super().__init__(rho=math.inf, delta=delta, C=C, lam=lam, Dpen=0.0, split=split)
        self.Dpen = None

    def _check_dpen(self):
        pass

    def penalty_constant(self, H: int, d: int) -> float:
        return 2.0 * H ** 3 * math.sqrt(d)


class PEVI:
    """PEVI (Jin et al. 2021; docs/derivations.md#readings, external to the paper): one dataset, unweighted ridge regression,
    Gamma = beta ||phi||_{Lambda^{-1}} with beta = c d H sqrt(log(2 d H K / delta)) unless ``beta`` is given."""

    name = "PEVI"

    def __init__(self, *, delta: float = 0.1, c: float = 1.0, beta: float | None = None, lam: float = 1.0):
        self.delta = probability("delta", delta)
        self.c = DPVAPVI._nonneg("c", c)
        self.beta = None if beta is None else DPVAPVI._nonneg("beta", beta)
        self.lam = positive_budget("lam", lam, allow_inf=False)

    @property
    def config(self) -> dict:
        return {"name": self.name, "delta": self.delta, "c": self.c, "beta": self.beta, "lam": self.lam}

    def run(self, data, features, rng: np.random.Generator | None = None) -> LinearResult:
        """data: OfflineDataset with rewards or TabularCounts with reward sums; features (S, A, d).
        ``rng`` is unused (PEVI is deterministic) and accepted for a uniform call signature."""
        D, _ = _as_counts(data, False)
        runs, H, S, A = D.visits.shape
        phi = check_features(features, S, A)
        d, K = phi.shape[2], D.n
        beta = self.beta if self.beta is not None else self.c * d * H * math.sqrt(math.log(2 * d * H * K / self.delta))
        I = np.eye(d)
        phi_flat = phi.reshape(S * A, d)
        V = np.zeros((runs, H + 1, S))
        Qhat, bell, Gam = (np.empty((runs, H, S, A)) for _ in range(3))
        W = np.empty((runs, H, d))
        Lams, bs = np.empty((runs, H, d, d)), np.empty((runs, H, d))
        eig = np.empty((runs, H))
        for h in range(H - 1, -1, -1):
            Vn = V[:, h + 1]
            Lam = np.einsum("rsa,sai,saj->rij", D.visits[:, h], phi, phi) + self.lam * I
            b = np.einsum("rsa,sai->ri", D.reward_sums[:, h] + np.einsum("rsat,rt->rsa", D.transitions[:, h], Vn), phi)
            Lams[:, h], bs[:, h] = Lam, b
            eig[:, h] = np.linalg.eigvalsh(Lam)[:, 0]
            W[:, h] = _solve(Lam, b[..., None])[..., 0]
            bell[:, h] = np.einsum("sai,ri->rsa", phi, W[:, h])
            sol = _solve(Lam, np.broadcast_to(phi_flat.T, (runs,) + phi_flat.T.shape))
            q = np.einsum("ni,rin->rn", phi_flat, sol).reshape(runs, S, A)
            Gam[:, h] = beta * np.sqrt(np.maximum(q, 0.0))
            Qhat[:, h] = np.maximum(np.minimum(bell[:, h] - Gam[:, h], float(H - h)), 0.0)
            V[:, h] = Qhat[:, h].max(axis=-1)
        return LinearResult(
            policy=np.argmax(Qhat, axis=-1), values=V, q_values=Qhat, bellman=bell, penalties=Gam, weights=W,
            sigma2=np.ones((runs, H, S, A)), statistics={"lambda_matrix": Lams, "w_vector": bs}, noise=None,
            private_statistics=(), min_eig_sigma=None, min_eig_lambda=eig, not_pd_sigma=None,
            not_pd_lambda=(eig <= 0).sum(axis=1), K=K, E=0.0, L=0.0, Dpen=0.0, additive=0.0,
            max_feature_norm=float(np.sqrt((phi ** 2).sum(-1)).max()), feature_bound=math.inf,
            config={**self.config, "beta_used": beta}, declare=_non_private_event)
