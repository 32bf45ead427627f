"""Test instances for DP-APVI and DP-VAPVI (Qiao & Wang 2022, Appendix F) and their coverage figures.

* :func:`tab_full`    TAB-FULL: P_h(.|s,a) ~ Dirichlet(1), r ~ U[0,1], d1 uniform, mu uniform (every pair covered).
* :func:`tab_partial` TAB-PARTIAL: as TAB-FULL, but mu gives probability 0 to the worst action of every
                      (h, s) when it is strictly sub-optimal under pi* (Assumption 2.1 still holds; some pairs
                      are uncovered, which exercises the C*H branch and the uniform fallback).
* :func:`lin_tab`     LIN-TAB: one-hot features phi(s,a) = e_(s,a), d = S A, on any tabular instance; satisfies
                      ||phi|| = 1 and kappa = min d^mu_h(s,a) > 0 for full-support mu.
* :func:`appendix_f`  the linear MDP of Section 6 / Appendix F: S = 2, A = 100, d = 10, H = 20.
                      It BREAKS the theory's assumptions -- max ||phi||_2 = sqrt(7) > 1 and kappa = 0 (the
                      2^7 bit of the action code is 0 for every a <= 99) -- and :meth:`OfflineInstance.feature_figures`
                      reports both figures instead of hiding them (Appendix F); :func:`xi_two_state`
                      gives its xi (Section 2) exactly, to compare with sqrt(d).

Every instance is an :class:`OfflineInstance`: the true MDP (for exact evaluation with
``dpcheck.algorithms.envs.planning``), the behaviour policy mu, and for linear instances the feature map.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dpcheck.errors import InputError
from dpcheck.algorithms.envs._validate import as_policy, check_rng, one_hot
from dpcheck.algorithms.envs.generators import random_mdp
from dpcheck.algorithms.envs.planning import occupancy, optimal_values, greedy
from dpcheck.algorithms.envs.tabular import TabularMDP
from dpcheck.algorithms.offline.dataset import OfflineDataset, TabularCounts, check_features, sample_counts


@dataclass(frozen=True)
class Coverage:
    """Coverage figures of a behaviour policy (Assumption 2.1), exact from the true model.

    d_mu            d^mu_h(s,a)                                   (H, S, A)
    covered         C_h = {d^mu_h(s,a) > 0}                       (H, S, A) bool
    dbar_m          min of d^mu_h(s,a) over covered (h,s,a)      (Theorem 3.4)
    d_opt           d^{pi*}_h(s,a) of the lowest-index greedy optimal policy   (H, S, A)
    assumption_2_1  d^{pi*} > 0 implies d^mu > 0 everywhere (for that pi*)
    """

    d_mu: np.ndarray
    covered: np.ndarray
    dbar_m: float
    d_opt: np.ndarray
    assumption_2_1: bool


@dataclass(frozen=True)
class FeatureFigures:
    """Where a linear instance meets or breaks the linear-MDP assumptions (Assumption 2.1; Section 2; Appendix F).

    max_norm          max_(s,a) ||phi(s,a)||_2 (the analysis and the noise calibration assume <= 1)
    norm_ok           max_norm <= 1 (+1e-12)
    sigma_p           Sigma^p_h = E_{mu,h}[phi phi^T]              (H, d, d)
    eigenvalues       eigenvalues of Sigma^p_h, increasing         (H, d)
    kappa_h           lambda_min(Sigma^p_h)                        (H,)
    kappa             min_h kappa_h (Assumption 2.2 needs > 0)
    next_eigenvalue   min_h of the second-smallest eigenvalue (what a kappa surrogate would use; nan if d = 1)
    dead_coordinates  feature coordinates that are 0 for every (s,a) (each forces kappa = 0)
    """

    max_norm: float
    norm_ok: bool
    sigma_p: np.ndarray
    eigenvalues: np.ndarray
    kappa_h: np.ndarray
    kappa: float
    next_eigenvalue: float
    dead_coordinates: tuple


@dataclass(frozen=True, eq=False)
class OfflineInstance:
    """A true MDP, a behaviour policy mu (H, S, A) and, for linear instances, features phi (S, A, d).

    ``params`` keeps the instance's generating figures (e.g. alpha, r_h, theta_h of Appendix F).
    """

    mdp: TabularMDP
    behaviour: np.ndarray
    name: str
    features: np.ndarray | None = None
    params: dict = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.mdp, TabularMDP):
            raise InputError(f"expected a TabularMDP, got {type(self.mdp).__name__}")
        pol, det = as_policy(self.behaviour, self.mdp.H, self.mdp.S, self.mdp.A, name="behaviour policy")
        object.__setattr__(self, "behaviour", one_hot(pol, self.mdp.A) if det else np.asarray(pol, float))
        if self.features is not None:
            object.__setattr__(self, "features", check_features(self.features, self.mdp.S, self.mdp.A))

    @property
    def d(self) -> int | None:
        return None if self.features is None else self.features.shape[2]

    def collect(self, n: int, rng: np.random.Generator, runs: int = 1) -> OfflineDataset:
        """n trajectories per run from mu (Section 2)."""
        return OfflineDataset.collect(self.mdp, self.behaviour, n, rng, runs)

    def sample_counts(self, n: int, rng: np.random.Generator, runs: int = 1, rewards: bool = False) -> TabularCounts:
        """The counts of n trajectories per run, drawn from their exact law (dataset.sample_counts)."""
        return sample_counts(self.mdp, self.behaviour, n, rng, runs, rewards)

    def coverage(self) -> Coverage:
        d_mu = occupancy(self.mdp, self.behaviour)
        Q, _ = optimal_values(self.mdp)
        d_opt = occupancy(self.mdp, greedy(Q))
        covered = d_mu > 0
        return Coverage(d_mu=d_mu, covered=covered, dbar_m=float(d_mu[covered].min()), d_opt=d_opt,
                        assumption_2_1=bool(np.all(covered | (d_opt <= 0))))

    def feature_figures(self) -> FeatureFigures:
        if self.features is None:
            raise InputError(f"instance {self.name!r} has no feature map (not a linear instance)")
        return feature_figures(self.features, occupancy(self.mdp, self.behaviour))


def feature_figures(features, d_mu) -> FeatureFigures:
    """Assumption figures of features (S, A, d) under occupancies d_mu (H, S, A) (Assumption 2.1-1.4)."""
    phi = np.asarray(features, float)
    d = phi.shape[-1]
    sigma = np.einsum("hsa,sai,saj->hij", d_mu, phi, phi)
    eig = np.linalg.eigvalsh(sigma)
    norm = float(np.sqrt((phi ** 2).sum(-1)).max())
    dead = tuple(int(i) for i in np.flatnonzero(np.all(phi == 0, axis=(0, 1))))
    if dead:
        # a zero coordinate makes Sigma^p_h exactly singular; report the exact 0, not eigvalsh's +-1e-17
        eig[:, 0] = 0.0
    return FeatureFigures(max_norm=norm, norm_ok=norm <= 1 + 1e-12, sigma_p=sigma, eigenvalues=eig,
                          kappa_h=eig[:, 0], kappa=float(eig[:, 0].min()),
                          next_eigenvalue=float(eig[:, 1].min()) if d > 1 else float("nan"),
                          dead_coordinates=dead)


def xi_two_state(mdp: TabularMDP) -> float:
    """xi of Section 2 exactly, for a two-state MDP with deterministic rewards (sqrt(d) > xi may fail
    on Appendix F when some alpha is near 0 or 1).

    With r deterministic, r + V(s') - (T_h V)(s,a) = V(s') - P V; write p = P_h(0|s,a), D = V(0) - V(1) in
    [-H, H]. Then sigma_V^2 = max(1, p (1-p) D^2) and the ratio is (1-p)|D| / sigma_V for s' = 0 (possible iff
    p > 0) and p |D| / sigma_V for s' = 1 (iff p < 1). Both grow linearly in |D| until sqrt(p(1-p)) |D| = 1,
    then stay constant, so the suprema over |D| <= H are min((1-p) H, sqrt((1-p)/p)) and min(p H, sqrt(p/(1-p))).
    """
    if not isinstance(mdp, TabularMDP) or mdp.S != 2:
        raise InputError("xi_two_state needs a TabularMDP with S = 2")
    if mdp.reward_noise != "deterministic":
        raise InputError("xi_two_state assumes deterministic rewards (Section 2)")
    p = mdp.P[..., 0].ravel()
    H = mdp.H
    with np.errstate(divide="ignore", invalid="ignore"):
        to0 = np.where(p > 0, np.minimum((1 - p) * H, np.sqrt((1 - p) / p)), 0.0)
        to1 = np.where(p < 1, np.minimum(p * H, np.sqrt(p / (1 - p))), 0.0)
    return float(np.max(np.maximum(to0, to1)))


def empirical_coverage(counts: TabularCounts) -> np.ndarray:
    """Empirical dbar_m of datasets: min positive n_h(s,a)/n per run -> (runs,)."""
    return counts.empirical_coverage()


def empirical_kappa(counts: TabularCounts, features) -> np.ndarray:
    """Empirical kappa of datasets: min_h lambda_min(1/n sum_tau phi phi^T) per run -> (runs,).
    (Sigma^p_h with d^mu replaced by the visit frequencies.)"""
    H, S, A = counts.shape
    phi = check_features(features, S, A)
    sigma = np.einsum("rhsa,sai,saj->rhij", counts.visits / counts.n, phi, phi)
    return np.linalg.eigvalsh(sigma)[..., 0].min(axis=1)


# ------------------------------------------------------------------------------------------ tabular
def tab_full(rng: np.random.Generator, S: int = 2, A: int = 2, H: int = 3) -> OfflineInstance:
    """TAB-FULL: Dirichlet(1) kernels, U[0,1] rewards, d1 uniform, mu uniform."""
    mdp = random_mdp(S, A, H, rng, init="uniform")
    return OfflineInstance(mdp, np.full((H, S, A), 1.0 / A), name=f"TAB-FULL-S{S}A{A}H{H}")


def tab_partial(rng: np.random.Generator, S: int = 2, A: int = 3, H: int = 3) -> OfflineInstance:
    """TAB-PARTIAL: TAB-FULL's model; mu is uniform on all actions except, at every (h, s), the
    lowest-index action with the smallest Q*_h(s, .), which gets probability 0 when it is strictly
    sub-optimal. The greedy optimal policy is then always supported (Assumption 2.1 holds; checked)."""
    if not (isinstance(A, (int, np.integer)) and A >= 2):
        raise InputError(f"TAB-PARTIAL needs A >= 2 to leave an action uncovered, got A = {A!r}")
    mdp = random_mdp(S, A, H, rng, init="uniform")
    Q, V = optimal_values(mdp)
    worst = np.argmin(Q, axis=-1)                                         # (H, S)
    strict = np.take_along_axis(Q, worst[..., None], -1)[..., 0] < V[:H] - 1e-12
    mu = np.ones((H, S, A))
    hh, ss = np.nonzero(strict)
    mu[hh, ss, worst[hh, ss]] = 0.0
    mu /= mu.sum(-1, keepdims=True)
    inst = OfflineInstance(mdp, mu, name=f"TAB-PARTIAL-S{S}A{A}H{H}")
    if not inst.coverage().assumption_2_1:      # cannot happen by construction; guards the construction
        raise AssertionError("TAB-PARTIAL construction broke Assumption 2.1")
    return inst


def lin_tab(instance: OfflineInstance) -> OfflineInstance:
    """LIN-TAB: the tabular instance seen as a linear MDP with one-hot features e_(s,a), d = S A
    (nu_h(s')_(s,a) = P_h(s'|s,a), theta_h = r_h)."""
    mdp = instance.mdp
    phi = np.eye(mdp.S * mdp.A).reshape(mdp.S, mdp.A, mdp.S * mdp.A)
    return OfflineInstance(mdp, instance.behaviour, name=f"LIN-TAB({instance.name})", features=phi)


# ------------------------------------------------------------------------------------------ Appendix F
def action_code(A: int = 100, bits: int = 8, bit_order: str = "lsb") -> np.ndarray:
    """abin(a) in {0,1}^bits for a = 0..A-1 (Appendix F; the paper leaves the bit order open; LSB-first by default) -> (A, bits)."""
    if bit_order not in ("lsb", "msb"):
        raise InputError(f"bit_order must be 'lsb' or 'msb', got {bit_order!r}")
    if A > 2 ** bits:
        raise InputError(f"{bits} bits cannot encode A = {A} actions")
    shifts = np.arange(bits) if bit_order == "lsb" else np.arange(bits)[::-1]
    return ((np.arange(A)[:, None] >> shifts[None, :]) & 1).astype(np.float64)


def appendix_f(rng: np.random.Generator, H: int = 20, p: float = 0.6, bit_order: str = "lsb",
               reward_noise: str = "deterministic") -> OfflineInstance:
    """The Section 6 / Appendix F linear MDP, states {0,1}, actions {0..99}, d = 10.

    delta(s,a) = 1 iff [s = 0] == [a = 0]; phi(s,a) = (abin(a), delta, 1 - delta);
    P_h(0|s,a) = alpha_{h,1} if delta = 1 else alpha_{h,2} (alpha ~ U[0,1] iid, once per instance);
    theta_h = (r_h/8, 0, r_h/8, 1/2 - r_h/2, r_h/8, 0, r_h/8, 0, r_h/2, 1/2 - r_h/2), r_h ~ U[0,1];
    mu: action 0 w.p. p, each other action w.p. (1-p)/99; d1 uniform. Draw order: alpha (H, 2), then r_h (H,).
    """
    check_rng(rng)
    if isinstance(H, bool) or not isinstance(H, (int, np.integer)) or H < 1:
        raise InputError(f"H must be a positive integer, got {H!r}")
    if not 0 < float(p) < 1:
        raise InputError(f"p must lie in (0, 1), got {p!r}")
    S, A = 2, 100
    code = action_code(A, 8, bit_order)
    s_is0 = (np.arange(S) == 0)[:, None]
    a_is0 = (np.arange(A) == 0)[None, :]
    delta = (s_is0 == a_is0).astype(np.float64)                                 # (S, A)
    phi = np.concatenate([np.broadcast_to(code, (S, A, 8)), delta[..., None], 1.0 - delta[..., None]], axis=-1)
    alpha = rng.random((H, 2))
    r_scalar = rng.random(H)
    rr = r_scalar
    theta = np.stack([rr / 8, 0 * rr, rr / 8, 0.5 - rr / 2, rr / 8, 0 * rr, rr / 8, 0 * rr, rr / 2, 0.5 - rr / 2], axis=1)
    nu0 = np.zeros((H, 10))
    nu0[:, 8], nu0[:, 9] = alpha[:, 0], alpha[:, 1]
    p0 = np.einsum("sai,hi->hsa", phi, nu0)                                     # P_h(0|s,a)
    P = np.stack([p0, 1.0 - p0], axis=-1)
    r = np.einsum("sai,hi->hsa", phi, theta)
    # r lies in [0, 1] analytically (Appendix F); clip float rounding only
    r = np.clip(r, 0.0, 1.0)
    mdp = TabularMDP(P, r, np.full(S, 0.5), reward_noise, name=f"appendix-F-H{H}")
    mu = np.full((H, S, A), (1.0 - p) / (A - 1))
    mu[:, :, 0] = p
    return OfflineInstance(mdp, mu, name=f"APPENDIX-F-H{H}", features=phi,
                           params={"alpha": alpha, "r_h": r_scalar, "theta": theta, "p": float(p),
                                   "bit_order": bit_order})
