"""What the DP-VAPVI audit runs (Qiao & Wang 2022, Algorithm 2): :class:`Setup` and :func:`algorithm`.

:class:`Setup` -- an instance with its true model (:func:`instance_setup`: LIN-TAB on TAB-FULL or the
Appendix F instance) or a user's dataset (no model); :func:`algorithm` -- DP-VAPVI with the mode's constants
(or a user's privatizer of the released statistics); :func:`plugin_width_exponent`; :func:`variance_setup` (an
instance whose values have a variance > 1, so that Algorithm 2's variance-aware weights are exercised).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcheck.errors import InputError


SOURCE = "Qiao & Wang, Offline RL with Differential Privacy (DP-VAPVI, Algorithm 2)"
STATS = ("sigma_matrix", "beta_vector", "theta_vector", "lambda_matrix", "w_vector")

# practical-mode constants (Section 6: C, Dpen are tuned hyper-parameters there; reported in the config)
PRACTICAL = {"C": 2.0, "c_D": 1e-3}
THEORY = {"C": 1.0, "c_D": 1.0}


# ============================================================================ configuration
@dataclass(frozen=True)
class Setup:
    """What the audit runs DP-VAPVI on: an instance with its true model, or user data (no model).

    features (S, A, d); instance: OfflineInstance or None; data: OfflineDataset (user data) or None;
    kappa: exact kappa (instance) or the empirical one (user data); kappa_used: the kappa the
    penalty surrogate uses (kappa, or the next eigenvalue when kappa = 0 -- Appendix F, reported).
    """

    name: str
    features: np.ndarray
    instance: object
    data: object
    kappa: float
    kappa_used: float
    kappa_exact: bool
    next_eigenvalue: float

    @property
    def H(self) -> int:
        return self.instance.mdp.H if self.instance is not None else self.data.H

    @property
    def max_norm(self) -> float:
        return float(np.sqrt((self.features ** 2).sum(-1)).max())


def algorithm(rho, *, mode: str, setup: Setup, lam: float, feature_bound: float, matrix_neighbour="replace",
              delta: float = 0.1, split: bool = True, cls=None, plugin=None):
    """DP-VAPVI with the mode's constants (C, c_D on the kappa the setup uses); ``plugin`` (an
    :class:`dpcheck.audits.lib.offline.OfflinePlugin` of family "regression"): a user's privatizer of the
    released statistics, built at budget ``rho`` (its own budget name)."""
    from dpcheck.algorithms.offline import DPVAPVI
    cls = cls or DPVAPVI
    k = THEORY if mode == "theory" else PRACTICAL
    # rho = inf is the noise-off counterpart (VAPVI's degenerate form): no privatizer at all
    extra = {} if plugin is None or math.isinf(rho) else {"privatizer": plugin.make(rho)}
    return cls(rho=rho, delta=delta, C=k["C"], lam=lam, c_D=k["c_D"], kappa=setup.kappa_used,
               matrix_neighbour=matrix_neighbour, feature_bound=feature_bound, split=split, **extra)


def plugin_width_exponent(make, H: int, d: int, budgets) -> float:
    """The exponent k of the privacy term ~ budget^k for a plug-in: the mean of the fitted log-log slopes of
    its declared widths E and L over ``budgets`` (Lemma D.16 / Theorem 4.1: the privacy term of Dpen is linear
    in L and E; the paper's Gaussian gives -1/2 for both)."""
    b = np.log(np.asarray(budgets, float))
    w = np.log([make(x).widths(H, d) for x in budgets])          # (len, 2)
    return float(np.mean([np.polyfit(b, w[:, i], 1)[0] for i in range(2)]))


def instance_setup(name: str, seed: int) -> Setup:
    """LIN-TAB on TAB-FULL (S = A = 2, H = 3; every assumption holds) or the Appendix F instance (H = 20)."""
    from dpcheck.algorithms.offline import appendix_f, lin_tab, tab_full
    rng = np.random.default_rng(seed)
    if name == "lin_tab":
        inst = lin_tab(tab_full(rng, S=2, A=2, H=3))
    elif name == "appendix_f":
        inst = appendix_f(rng)
    else:
        raise InputError(f"--set instance must be lin_tab or appendix_f, got {name!r}")
    ff = inst.feature_figures()
    used = ff.kappa if ff.kappa > 0 else ff.next_eigenvalue
    return Setup(name=inst.name, features=inst.features, instance=inst, data=None, kappa=ff.kappa,
                 kappa_used=float(used), kappa_exact=True, next_eigenvalue=ff.next_eigenvalue)


def variance_setup(H: int = 8) -> Setup:
    """LIN-TAB(COIN): an instance on which DP-VAPVI's variance estimate sigtil_h^2 (Algorithm 2, lines 4-8)
    exceeds its floor 1. On LIN-TAB(TAB-FULL) (H = 3, V in [0, 2], so Var <= 1) and Appendix F (V = 0 at the
    audited K) sigtil^2 = max(1, .) = 1 whatever the data, so a variance estimate read from the raw data instead
    of the releases Sigmatil, beta, theta gives the same weights and no dataflow check can see it.

    S = 3, A = 2, one-hot features (d = 6): state 0 flips a fair coin (either action) between the absorbing
    rewarding state 1 (reward 1 per step) and the trap 2, which returns to 0 w.p. 1/2; uniform start and
    behaviour. Var(V_{h+1}) at state 0 is ~(H - h - 1)^2 / 4, up to ~12 at H = 8. Deterministic (no seed)."""
    from dpcheck.algorithms.envs.tabular import TabularMDP
    from dpcheck.algorithms.offline import OfflineInstance, lin_tab
    S, A = 3, 2
    P = np.zeros((H, S, A, S))
    P[:, 0, :, 1] = P[:, 0, :, 2] = 0.5
    P[:, 1, :, 1] = 1.0
    P[:, 2, :, 0] = P[:, 2, :, 2] = 0.5
    r = np.zeros((H, S, A))
    r[:, 1, :] = 1.0
    mdp = TabularMDP(P=P, r=r, init=np.full(S, 1.0 / S))
    inst = lin_tab(OfflineInstance(mdp, np.full((H, S, A), 1.0 / A), name="COIN"))
    ff = inst.feature_figures()
    return Setup(name=inst.name, features=inst.features, instance=inst, data=None, kappa=ff.kappa,
                 kappa_used=ff.kappa, kappa_exact=True, next_eigenvalue=ff.next_eigenvalue)
