"""DP-APVI and its variants (Qiao & Wang 2022, Algorithm 1), batched over runs.

Pipeline (one run = one dataset; the leading axis of every array is the run):

1. counts n_h(s,a), n_h(s,a,s') (Algorithm 1) from an :class:`OfflineDataset` (one bincount) or a
   :class:`TabularCounts`;
2. private counts through the existing privatizers (``algorithms/privatizers/offline.py``):
   Gaussian ``sigma^2 = 2H/rho`` (rho-zCDP, eq. 2, Lemma C.1) or Laplace ``Lap(4H/eps)`` (eps-DP, docs/derivations.md#noise-calibration),
   clip at 0, the consistency LP of eqs. 3-4 (``post_process_offline``), and the kernel P~ with the uniform
   fallback where ``ntil(s,a) <= E`` (eq. 5);
3. pessimistic backward induction (Algorithm 1 step 2): Qtil = r + P~ Vtil_{h+1}; Gamma; Qbar = {min(Qtil - Gamma,
   H-h+1)}^+; greedy policy (lowest index on ties); Vtil_h = max_a Qbar.

Penalty (one formula for every variant, so that the non-private reduction is the same code):

    Gamma_h(s,a) = first + C2 * H * iota * max(S * E, floor) / ntil_h(s,a)     if ntil_h(s,a) > E
                 = C * H                                                       otherwise
    first = C1 * sqrt( Var_{P~_h(.|s,a)}(Vtil_{h+1}) * iota / (ntil_h(s,a) - E) )     (Bernstein, Algorithm 1)
          = C1 * H * sqrt( iota / (ntil_h(s,a) - E) )                                 (Hoeffding, eq. 8)

* DP-APVI (paper): C1 = sqrt(2), C2 = 16, floor = 0 (the literal term 16 S H E iota / ntil).
  ``second_order_floor = 1`` is an optional floor (docs/derivations.md#widths-e) (``max(S E, 1)``, for rho near non-private).
* APVI (APVI, eq. 7, docs/derivations.md#readings): E = 0 (exact counts, P^ with the 1/S fallback where n = 0), C1 = sqrt(2),
  C2 = 7/3, floor = 1: ``sqrt(2 Var_{P^}(Vtil) iota / n) + (7/3) H iota / n`` -- eq. 22's empirical Bernstein.
* rho = inf (or epsilon = inf) switches the noise off: exact counts, E = 0, same code path; with APVI's
  constants it IS APVI (tests/algorithms/offline/test_offline_apvi.py checks bit-equality).

``delta`` is the paper's utility failure probability (in E_rho and iota); it is not the delta of
(eps, delta)-DP. The privatizers call it ``beta``.
"""
from __future__ import annotations

import math
from functools import partial
from dataclasses import dataclass

import numpy as np

from dpcheck.errors import InputError
from dpcheck.algorithms.envs._validate import check_rng
from dpcheck.algorithms.offline.result import OfflineResult
from dpcheck.algorithms.envs.tabular import TabularMDP
from dpcheck.algorithms.privatizers.offline import OfflineCounts, OfflineGaussianPrivatizer, OfflineLaplacePrivatizer
from dpcheck.algorithms.privatizers.projection import post_process_offline
from dpcheck.algorithms.offline.dataset import OfflineDataset, TabularCounts, positive_budget, probability

PENALTIES = ("bernstein", "hoeffding")
CONSISTENCY = ("lp", "naive")


@dataclass(frozen=True)
class PenaltyConstants:
    """Constants of Gamma (module docstring). ``kind``: 'bernstein' (Algorithm 1) or 'hoeffding' (eq. 8).
    Code names C1/C2/C are Algorithm 1's (not the Lemma D.11 thresholds)."""

    kind: str = "bernstein"
    C1: float = math.sqrt(2.0)
    C2: float = 16.0
    C: float = 2.0
    second_order_floor: float = 0.0

    def __post_init__(self):
        if self.kind not in PENALTIES:
            raise InputError(f"penalty must be one of {PENALTIES}, got {self.kind!r}")
        for name in ("C1", "C2", "second_order_floor"):
            v = getattr(self, name)
            if isinstance(v, bool) or not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise InputError(f"{name} must be a finite number >= 0, got {v!r}")
        if isinstance(self.C, bool) or not (isinstance(self.C, (int, float)) and math.isfinite(self.C) and self.C > 1):
            raise InputError(f"C must be a finite number > 1 (so that Qbar = 0 where ntil <= E), got {self.C!r}")


def penalty(kernel, visits, V_next, *, E: float, iota: float, H: int, constants: PenaltyConstants):
    """Gamma_h for one step, all runs: kernel (runs, S, A, S), visits (runs, S, A), V_next (runs, S)
    -> (Gamma (runs, S, A), variance Var_{P~}(Vtil_{h+1}) (runs, S, A))."""
    S = kernel.shape[-1]
    PV = np.einsum("rsat,rt->rsa", kernel, V_next)
    PV2 = np.einsum("rsat,rt->rsa", kernel, V_next * V_next)
    var = np.maximum(PV2 - PV * PV, 0.0)            # population variance; clip float cancellation
    ok = visits > E
    with np.errstate(divide="ignore", invalid="ignore"):
        denom = np.where(ok, visits - E, 1.0)
        if constants.kind == "bernstein":
            first = constants.C1 * np.sqrt(var * iota / denom)
        else:
            first = constants.C1 * H * np.sqrt(iota / denom)
        second = constants.C2 * H * iota * max(S * E, constants.second_order_floor) / np.where(ok, visits, 1.0)
    return np.where(ok, first + second, constants.C * H), var


@dataclass(frozen=True)
class APVIResult(OfflineResult):
    """Output of (DP-)APVI for a batch of runs (arrays: runs first, then the paper's indices, 0-based h).

    policy      pi_hat_h(s) greedy action (runs, H, S) int; ``policy_probs`` gives (runs, H, S, A)
    values      Vtil_h(s), the pessimistic value estimates (runs, H+1, S); values[:, H] = 0
    q_values    Qbar_h(s,a) = {min(Qtil - Gamma, H-h+1)}^+        (runs, H, S, A)
    q_tilde     Qtil_h(s,a) = r_h + P~_h Vtil_{h+1}                (runs, H, S, A)
    penalties   Gamma_h(s,a)                                        (runs, H, S, A)
    variances   Var_{P~_h(.|s,a)}(Vtil_{h+1})                       (runs, H, S, A)
    kernel      P~_h(s'|s,a) (uniform fallback where ntil <= E)     (runs, H, S, A, S)
    counts      the private statistics used: OfflineCounts (noisy n', post-processed ntil, width E)
    width       E (E_rho, E_eps, or 0 with the noise off)
    iota        log(H S A / delta)
    n           trajectories per run
    config      the algorithm's parameters (``DPAPVI.config``)
    dp_event    dp_accounting event of the released counts (NonPrivateDpEvent with the noise off)
    """

    q_tilde: np.ndarray
    penalties: np.ndarray
    variances: np.ndarray
    kernel: np.ndarray
    counts: OfflineCounts
    width: float
    iota: float
    n: int

    def summary(self) -> str:
        runs, H, S, A = self.q_values.shape
        zero = float(np.mean(np.all(self.q_values == 0, axis=-1)))
        return (f"{self.config.get('name', 'APVI')}: runs={runs} n={self.n} H={H} S={S} A={A} E={self.width:.4g} "
                f"iota={self.iota:.4g}; mean Vtil_1={self.values[:, 0].mean():.4g}; "
                f"fraction of (h,s) with Qbar = 0 for every action: {zero:.3g}")


def _reward_array(reward, H, S, A):
    if isinstance(reward, TabularMDP):
        reward = reward.r
    r = np.asarray(reward, dtype=np.float64)
    if r.shape != (H, S, A):
        raise InputError(f"reward must have shape (H, S, A) = ({H}, {S}, {A}), got {r.shape}")
    if not np.all(np.isfinite(r)) or r.min() < 0 or r.max() > 1:
        raise InputError("reward must be finite and lie in [0, 1]")
    return r


class DPAPVI:
    """DP-APVI (Algorithm 1, Section 3). Exactly one of ``rho`` (Gaussian, rho-zCDP), ``epsilon``
    (Laplace, eps-DP, docs/derivations.md#noise-calibration) and ``privatizer`` (any :class:`OfflineCountPrivatizer`, e.g. a user's plug-in
    from ``load_offline_privatizer``: its claim, width E and DpEvent are the algorithm's); ``inf`` switches the
    noise off.

    penalty: 'bernstein' (Algorithm 1) or 'hoeffding' (eq. 8); consistency: 'lp' (eqs. 3-4) or 'naive'
    (Remark 3.1 ablation: ntil(s,a,s') = n'(s,a,s'), ntil(s,a) = sum_s' n'(s,a,s')).
    """

    name = "DP-APVI"

    def __init__(self, rho: float | None = None, *, epsilon: float | None = None, delta: float = 0.1,
                 penalty: str = "bernstein", C1: float = math.sqrt(2.0), C2: float = 16.0, C: float = 2.0,
                 second_order_floor: float = 0.0, consistency: str = "lp", privatizer=None):
        if sum(x is not None for x in (rho, epsilon, privatizer)) != 1:
            raise InputError("give exactly one privacy budget: rho (Gaussian, zCDP), epsilon (Laplace, pure DP) or "
                             "a privatizer (an OfflineCountPrivatizer)")
        self.rho = None if rho is None else positive_budget("rho", rho)
        self.epsilon = None if epsilon is None else positive_budget("epsilon", epsilon)
        self.delta = probability("delta", delta)
        self.constants = PenaltyConstants(penalty, float(C1), float(C2), float(C), float(second_order_floor))
        if consistency not in CONSISTENCY:
            raise InputError(f"consistency must be one of {CONSISTENCY}, got {consistency!r}")
        self.consistency = consistency
        if privatizer is not None:
            for member in ("privatize", "width", "dp_event", "claim"):
                if not hasattr(privatizer, member):
                    raise InputError(f"privatizer {privatizer!r} lacks {member} (see OfflineCountPrivatizer)")
            self.privatizer = privatizer
            return
        budget = self.rho if self.rho is not None else self.epsilon
        if math.isinf(budget):
            self.privatizer = None
        elif self.rho is not None:
            self.privatizer = OfflineGaussianPrivatizer(self.rho, beta=self.delta)
        else:
            self.privatizer = OfflineLaplacePrivatizer(self.epsilon, beta=self.delta)

    @classmethod
    def from_approx_dp(cls, epsilon: float, delta_dp: float, **kw) -> "DPAPVI":
        """(eps, delta_dp)-DP via zCDP (docs/derivations.md#noise-calibration): rho = (sqrt(log(1/delta_dp) + eps) - sqrt(log(1/delta_dp)))^2."""
        rho = OfflineGaussianPrivatizer.from_approx_dp(epsilon, delta_dp).rho
        return cls(rho=rho, **kw)

    @property
    def config(self) -> dict:
        c = self.constants
        return {"name": self.name, "rho": self.rho, "epsilon": self.epsilon, "delta": self.delta,
                "mechanism": "none" if self.privatizer is None else self.privatizer.name,
                "penalty": c.kind, "C1": c.C1, "C2": c.C2, "C": c.C, "second_order_floor": c.second_order_floor,
                "consistency": self.consistency}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + ", ".join(f"{k}={v!r}" for k, v in self.config.items() if k != "name") + ")"

    def width(self, H: int, S: int, A: int) -> float:
        """E_rho (eq. 3, Lemma C.2), E_eps (docs/derivations.md#noise-calibration), or 0 with the noise off."""
        return 0.0 if self.privatizer is None else self.privatizer.width(H, S, A)

    def dp_event(self, H: int):
        """The released counts' privacy, as dp_accounting data (the privatizer's own declaration)."""
        import dp_accounting
        if self.privatizer is None:
            return dp_accounting.NonPrivateDpEvent()
        return self.privatizer.dp_event(H)

    # ------------------------------------------------------------------ the release (public; a seam planted-defect tests override)
    def private_counts(self, counts: TabularCounts, rng) -> OfflineCounts:
        """What DP-APVI releases and reads, from the dataset's counts n: the privatizer's OfflineCounts (noisy n'
        -- the only data-dependent release -- then the clip, the consistency LP (docs/derivations.md#readings) and the width E), or the exact counts
        with E = 0 when the noise is off; ``consistency="naive"`` replaces the LP (docs/derivations.md#readings). ``run`` reads the
        data through this method only; the audits call it to see exactly what the algorithm releases."""
        if self.privatizer is None:
            pp = post_process_offline(counts.transitions, counts.visits, 0.0)
            private = OfflineCounts(visits=pp.visits, transitions=pp.transitions, noisy_visits=counts.visits,
                                    noisy_transitions=counts.transitions, width=0.0)
        else:
            private = self.privatizer.privatize(counts.visits, counts.transitions, rng)
        if self.consistency == "naive":
            private = OfflineCounts(visits=private.noisy_transitions.sum(axis=-1),
                                    transitions=private.noisy_transitions, noisy_visits=private.noisy_visits,
                                    noisy_transitions=private.noisy_transitions, width=private.width)
        return private

    def _penalty(self, kernel, visits, V_next, *, E, iota, H):
        return penalty(kernel, visits, V_next, E=E, iota=iota, H=H, constants=self.constants)

    # ------------------------------------------------------------------ the algorithm
    def run(self, data, reward, rng: np.random.Generator) -> APVIResult:
        """Run on every dataset of the batch.

        data:   OfflineDataset (counted here) or TabularCounts (e.g. ``dataset.sample_counts``)
        reward: known mean reward r (H, S, A) in [0, 1], or the TabularMDP carrying it (Section 2)
        rng:    the noise source (no draws with the noise off)
        """
        check_rng(rng)
        if isinstance(data, OfflineDataset):
            counts = data.counts(rewards=False)
        elif isinstance(data, TabularCounts):
            counts = data
        else:
            raise InputError(f"data must be an OfflineDataset or TabularCounts, got {type(data).__name__}")
        runs, H, S, A = counts.visits.shape
        r = _reward_array(reward, H, S, A)
        private = self.private_counts(counts, rng)
        E = float(private.width)
        kernel = private.kernel                                   # (runs, H, S, A, S), eq. 5
        iota = math.log(H * S * A / self.delta)

        V = np.zeros((runs, H + 1, S))
        Qbar = np.empty((runs, H, S, A))
        Qtil = np.empty((runs, H, S, A))
        Gamma = np.empty((runs, H, S, A))
        var = np.empty((runs, H, S, A))
        for h in range(H - 1, -1, -1):
            Qtil[:, h] = r[h] + np.einsum("rsat,rt->rsa", kernel[:, h], V[:, h + 1])
            Gamma[:, h], var[:, h] = self._penalty(kernel[:, h], private.visits[:, h], V[:, h + 1], E=E, iota=iota, H=H)
            # clip at H-h+1 (0-based: H-h) first, then at 0
            Qbar[:, h] = np.maximum(np.minimum(Qtil[:, h] - Gamma[:, h], H - h), 0.0)
            V[:, h] = Qbar[:, h].max(axis=-1)
        policy = np.argmax(Qbar, axis=-1)                         # lowest index on ties
        return APVIResult(policy=policy, values=V, q_values=Qbar, q_tilde=Qtil, penalties=Gamma, variances=var,
                          kernel=kernel, counts=private, width=E, iota=iota, n=counts.n, config=self.config,
                          declare=partial(self.dp_event, H))


class APVI(DPAPVI):
    """Non-private APVI (eq. 7, docs/derivations.md#readings) with the penalty:
    ``sqrt(2 Var_{P^}(Vtil) iota / n) + (7/3) H iota / n`` where n > 0, else C H. Same code as DP-APVI with
    the noise off (exact counts, E = 0) and C2 = 7/3, second_order_floor = 1."""

    name = "APVI"

    def __init__(self, *, delta: float = 0.1, penalty: str = "bernstein", C1: float = math.sqrt(2.0),
                 C2: float = 7.0 / 3.0, C: float = 2.0, second_order_floor: float = 1.0):
        super().__init__(rho=math.inf, delta=delta, penalty=penalty, C1=C1, C2=C2, C=C,
                         second_order_floor=second_order_floor)
