"""What the DP-UCBVI planner actually plans with (Qiao & Wang 2023, eq. 1 and Algorithm 1 lines 6-8), read
through ``DPUCBVI.run``'s ``estimates_hook`` and ``plan_hook``: the P~ handed to value iteration and the
bonus added to it.

Why not from the release: audits/lib/tabular.CountAssumptionMonitor judges P~ = N~(s,a,.)/N~(s,a) computed
from the privatizer's release (Remark 3.2), which says nothing about the P~ the agent builds from it; an
agent that normalised by the noisy N^ (rows summing to up to ~10^3) passed that check. :class:`PlannerMonitor`
checks the planner's own (P~, r~, N~) and recovers the bonus it added from Q~ (see :meth:`PlannerMonitor.plan`).
"""
from __future__ import annotations

import math

import numpy as np

from dpcheck.checks import Check, invariant_check, vacuous

REL_TOL = 1e-9          # as audits/lib/tabular.py: rounding of sums of O(S) terms
# Recomputing sqrt(Var_{P~} V~) in another summation order moves Var by ~1e-16 (max V~^2 + 1) (cancellation
# in E[V^2] - (E V)^2, clipped at 0), so the square root by up to ~1e-8 (max V~ + 1); 1e-6 leaves a 100x margin
VAR_TOL = 1e-6


def reference_bonus(P, n, V_next, *, E, iota: float, constants) -> np.ndarray:
    """Eq. 31 (docs/derivations.md#constants), written out here independently of algorithms/online/bonus.py:

        b_h(s,a) = scale (c_var sqrt(Var_{P~}(V~_{h+1}) iota / N~) + c_rew sqrt(iota / N~)
                          + c_priv [H S] E iota / N~ + c_corr sqrt(iota) sqrt(W_h(s,a) / N~)),
        W_h(s,a) = sum_s' P~(s'|s,a) min{g(N~_{h+1}(s')), H^2} (W_H = 0), g of eq. 83,

    the privacy term present when E > 0, +inf where N~ = 0. Shapes: P (runs,H,S,A,S), n (runs,H,S,A),
    V_next (runs,H,S) = V~_{h+1} (zeros at h = H), E a scalar or (runs,). Returns (bonus, variance coefficient
    c_var scale sqrt(iota / N~)), both (runs,H,S,A)."""
    runs, H, S, A, _ = P.shape
    c = constants
    E_r = np.broadcast_to(np.asarray(E, dtype=float), (runs,)).reshape(runs, 1, 1, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = np.where(n > 0, 1.0 / np.where(n > 0, n, 1.0), np.inf)
        mean = np.einsum("rhsat,rht->rhsa", P, V_next)
        second = np.einsum("rhsat,rht->rhsa", P, V_next ** 2)
        var = np.maximum(second - mean ** 2, 0.0)
        b = c.c_variance * np.sqrt(var * iota * inv) + c.c_reward * np.sqrt(iota * inv)
        if np.any(E_r > 0):
            b = b + c.c_privacy * (H * S if c.privacy_scales_with_HS else 1.0) * E_r * iota * inv
        if c.c_correction > 0 and H > 1:
            m = n.sum(axis=-1)[:, 1:]                                  # N~_{h+1}(s') (runs,H-1,S)
            m_inv = np.where(m > 0, 1.0 / np.where(m > 0, m, 1.0), np.inf)
            E2 = E_r[:, :, :, 0] ** 2
            g = c.g_constant * (H ** 3 * S * A * iota ** 2 * m_inv
                                + (H ** 4 * S ** 4 * A ** 2 * E2 * iota ** 4
                                   + H ** 6 * S ** 4 * A ** 2 * iota ** 4) * m_inv ** 2)
            W = np.einsum("rhsat,rht->rhsa", P[:, :-1], np.minimum(g, float(H) ** 2))
            b[:, :-1] = b[:, :-1] + c.c_correction * math.sqrt(iota) * np.sqrt(W * inv[:, :-1])
        b = c.scale * b
        coef = c.scale * c.c_variance * np.sqrt(iota * inv)
    return np.where(np.isfinite(inv), b, np.inf), coef


class PlannerMonitor:
    """Fed by ``DPUCBVI.run(estimates_hook=mon.estimates, plan_hook=mon.plan)``; per run:

    * ``transition_violations``: (h,s,a) rows of the planner's P~ that are not full-support distributions
      (an entry <= 0, or a sum off 1 by more than 1e-9): Remark 3.2 for the P~ value iteration reads;
    * ``bonus_violations`` / ``bonus_cases``: entries where the value-iteration target was below
      min(Q~^{k-1}, H) (so Q~ equals it) and the bonus it implies, Q~ - r~ - P~ V~_{h+1}, differs from
      :func:`reference_bonus` at the agent's width, iota and constants (Algorithm 1 lines 6-8, eq. 31).
    """

    def __init__(self, runs: int, H: int, S: int, A: int, *, width, iota: float, constants):
        self.runs, self.H = int(runs), int(H)
        self.E, self.iota, self.constants = width, float(iota), constants
        self.transition_violations = np.zeros(self.runs, dtype=np.int64)
        self.transition_cases = 0
        self.bonus_violations = np.zeros(self.runs, dtype=np.int64)
        self.bonus_cases = 0
        self.max_bonus_error = 0.0
        self.worst: dict = {}
        self._Q_prev = np.full((self.runs, H, S, A), float(H))
        self._est = None

    def estimates(self, k, P, r, n) -> None:
        """estimates_hook: the (P~, r~, N~) of episode k."""
        P, r, n = np.asarray(P, float), np.asarray(r, float), np.asarray(n, float)
        with np.errstate(invalid="ignore"):
            bad = ~(np.all(P > 0, axis=-1) & (np.abs(P.sum(axis=-1) - 1.0) <= REL_TOL))
        self.transition_violations += bad.reshape(self.runs, -1).sum(axis=1)
        self.transition_cases += int(np.prod(bad.shape))
        if "valid_transition" not in self.worst and bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            self.worst["valid_transition"] = {"episode": int(k), "index (run,h,s,a)": idx,
                                              "planner P~(.|s,a)": P[idx].tolist(),
                                              "row sum": float(P[idx].sum()), "planner N~(s,a)": float(n[idx])}
        self._est = (P, r, n)

    def plan(self, k, Q, policy) -> None:
        """plan_hook: Q~^k of episode k, against the estimates of the same episode."""
        Q = np.asarray(Q, float)
        Q_cap = np.minimum(self._Q_prev, float(self.H))
        self._Q_prev = Q.copy()
        active = Q < Q_cap                      # there Q~ = r~ + P~ V~_{h+1} + b exactly (Algorithm 1 line 8)
        if self._est is None or not active.any():
            return
        P, r, n = self._est
        V_next = np.zeros(Q.shape[:3])
        V_next[:, :-1] = Q[:, 1:].max(axis=-1)
        b_ref, coef = reference_bonus(P, n, V_next, E=self.E, iota=self.iota, constants=self.constants)
        mean = np.einsum("rhsat,rht->rhsa", P, V_next)
        implied = Q - r - mean
        with np.errstate(invalid="ignore"):
            err = np.abs(implied - b_ref)
            tol = REL_TOL * (self.H + np.abs(b_ref)) + VAR_TOL * coef * (1.0 + np.abs(V_next).max())
            bad = active & ~(err <= tol)
        self.bonus_cases += int(active.sum())
        self.bonus_violations += bad.reshape(self.runs, -1).sum(axis=1)
        finite = active & np.isfinite(err)
        if finite.any():
            self.max_bonus_error = max(self.max_bonus_error, float(err[finite].max()))
        if "bonus" not in self.worst and bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            self.worst["bonus"] = {"episode": int(k), "index (run,h,s,a)": idx, "Q~": float(Q[idx]),
                                   "implied bonus Q~ - r~ - P~V~": float(implied[idx]),
                                   "eq. 31 bonus": float(b_ref[idx]), "N~(s,a)": float(n[idx])}

    # -- the checks ------------------------------------------------------------------------
    def transition_check(self, base: Check) -> Check:
        """``base`` (the release-level assumption.valid_transition of CountAssumptionMonitor) extended with
        the planner's own P~: one invalid row in either fails it."""
        planner = int(self.transition_violations.sum())
        release = int(base.measured.get("violations", 0))
        total = int(base.measured.get("cases", 0)) + self.transition_cases
        statement = ("P~(.|s,a) is a full-support distribution, both N~(s,a,.)/N~(s,a) from the release and the "
                     "P~ the planner hands value iteration (eq. 1; Remark 3.2; always, via the fallback)")
        c = invariant_check(
            id=base.id, violations=release + planner, total=total, claim={**base.claim, "statement": statement},
            details={**base.details, "release_violations": release, "planner_violations": planner,
                     "planner_counterexample": self.worst.get("valid_transition")},
            what="valid P~ (release and planner)")
        return c


def bonus_check(monitors, *, id: str, claim: dict, details: dict) -> Check:
    """:meth:`PlannerMonitor.bonus_check` over several monitored batches (theory mode reveals the bonus almost
    nowhere: Q~ = H; the practical batch does). Vacuous when no batch revealed it."""
    ms = [m for m in monitors if m is not None]
    viol = int(sum(m.bonus_violations.sum() for m in ms))
    cases = int(sum(m.bonus_cases for m in ms))
    worst = next((m.worst["bonus"] for m in ms if "bonus" in m.worst), None)
    c = invariant_check(id=id, kind="whitebox", violations=viol, total=cases, claim=claim,
                        what="the planner's bonus equals eq. 31",
                        details={**details, "cases_per_batch": [m.bonus_cases for m in ms],
                                 "max_abs_error": max((m.max_bonus_error for m in ms), default=0.0),
                                 "counterexample": worst})
    return vacuous(c, "the value-iteration target was below min(Q~^{k-1}, H) nowhere: Q~ never revealed the bonus"
                   if cases == 0 else None)
