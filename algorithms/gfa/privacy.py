"""Privacy calibration of Algorithms 1 and 2 as data (He & Zhou 2026, Section 2.2, Section 3.3, docs/derivations.md#noise-calibration).

Every update is one exponential mechanism over the class with temperature

    beta_EM = eps0 / (2 Delta_S)                    (the factor 2: the score's sensitivity, Section 2.2)

so each update is (eps0, 0)-DP; the M = ceil(K/B) updates (A2: the k = 1 update sees no data, keeping
M is conservative) compose adaptively (Lemma E.2; :func:`dpcheck.accounting.advanced_composition`) to

    eps_total = eps0 sqrt(2 M ln(1/delta)) + M eps0 (e^{eps0} - 1)          (at this delta)

and the billboard lemma (Lemma E.3) lifts the (eps, delta)-DP of {f^(k)} to (eps, delta)-JDP of the actions
and the output policy. :class:`GFAPrivacy` declares all of it from the parameters alone (no run needed):
Delta_S, eps0, beta_EM, M, the composed epsilon, the :class:`dpcheck.Claim`, and a dp_accounting event.

Per-update budget rules (docs/derivations.md#noise-calibration):
    "exact"        largest eps0 with eps0 sqrt(2 M ln(1/delta)) + M eps0 (e^{eps0} - 1) <= eps (bisection; default)
    "section_3_3"  eps0 = eps / (2 sqrt(2 M ln(1/delta)))
    "appendix_e"   eps0 = eps / sqrt(2 M ln(1/delta))  -- drops the second term, so it OVERSHOOTS eps
                   (``composed_epsilon > epsilon``; a white-box check must catch it)

Sensitivities (docs/derivations.md#noise-calibration): Algorithm 1 ``8 H``; Algorithm 2 ``(H+1)^2`` (paper), ``H^2`` (telescoping) or ``1``
(binary-outcome classes such as Appendix D) on request.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from dpcheck.accounting import (advanced_composition, advanced_composition_inverse, advanced_composition_root,
                                pure_dp_event)
from dpcheck.claims import Claim
from dpcheck.errors import InputError
from dpcheck.options import as_float

EPS0_RULES = ("exact", "section_3_3", "appendix_e")


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int,)) and not (
            hasattr(value, "__index__") and not isinstance(value, float)):
        raise InputError(f"{name} must be an integer >= 1, got {value!r}")
    v = int(value)
    if v < 1:
        raise InputError(f"{name} must be an integer >= 1, got {value!r}")
    return v


def _budget(name: str, value, *, allow_inf: bool) -> float:
    v = as_float(name, value)
    if math.isnan(v) or v <= 0 or (math.isinf(v) and not allow_inf):
        raise InputError(f"{name} must be a {'number > 0 (inf = non-private)' if allow_inf else 'finite number > 0'}"
                         f", got {value!r}")
    return v


def number_of_updates(K: int, B: int) -> int:
    """M = ceil(K / B): updates at episodes k = iB + 1 (Algorithms 1-2; docs/derivations.md#readings)."""
    return -(-_positive_int("K", K) // _positive_int("batch size B", B))


def per_update_epsilon(epsilon: float, delta: float, M: int, rule: str = "exact") -> float:
    """eps0 of one update so that M of them give (epsilon, delta)-DP (rules in the module docstring)."""
    if rule not in EPS0_RULES:
        raise InputError(f"eps0 rule must be one of {EPS0_RULES}, got {rule!r}")
    epsilon = _budget("epsilon", epsilon, allow_inf=True)
    if math.isinf(epsilon):
        return math.inf
    if not 0 < delta < 1:
        raise InputError(f"delta must lie in (0, 1) for advanced composition, got {delta!r}")
    M = _positive_int("number of updates M", M)
    root = advanced_composition_root(M, delta)
    if rule == "section_3_3":
        return epsilon / (2.0 * root)
    if rule == "appendix_e":
        return epsilon / root
    return advanced_composition_inverse(epsilon, M, delta)


def sensitivity(algorithm: int, H: int, kind: str = "paper") -> float:
    """Delta_S of the score (Section 3.3, docs/derivations.md#noise-calibration).

    algorithm 1: "paper" -> 8 H (4H per loss term; the only value).
    algorithm 2: "paper" -> (H+1)^2; "telescoping" -> H^2; "binary" -> 1 (R^(f), r in {0, 1}).
    """
    H = _positive_int("H", H)
    if algorithm == 1:
        if kind != "paper":
            raise InputError(f"Algorithm 1 has only the 'paper' sensitivity 8H, got kind={kind!r}")
        return 8.0 * H
    if algorithm == 2:
        table = {"paper": float((H + 1) ** 2), "telescoping": float(H * H), "binary": 1.0}
        if kind not in table:
            raise InputError(f"Algorithm 2 sensitivity kind must be one of {tuple(table)}, got {kind!r}")
        return table[kind]
    raise InputError(f"algorithm must be 1 or 2, got {algorithm!r}")


@dataclass(frozen=True)
class GFAPrivacy:
    """What one run of Algorithm 1/2 promises, declared from its parameters (Section 3.3, docs/derivations.md#noise-calibration).

    algorithm        1 or 2
    epsilon, delta   the (eps, delta)-JDP budget (epsilon = inf: non-private, argmax selection)
    K, B, M          episodes, batch size, number of exponential-mechanism updates M = ceil(K/B)
    sensitivity      Delta_S of the score
    eps0_rule        how eps0 was derived (docs/derivations.md#noise-calibration)
    eps0             per-update pure-DP epsilon of one exponential mechanism
    beta_em          temperature eps0 / (2 Delta_S)
    composed_epsilon eps0 sqrt(2 M ln(1/delta)) + M eps0 (e^{eps0} - 1): what the M updates really give
    source           paper reference of the claim
    """

    algorithm: int
    epsilon: float
    delta: float
    K: int
    B: int
    M: int
    sensitivity: float
    eps0_rule: str
    eps0: float
    beta_em: float
    composed_epsilon: float
    source: str

    @classmethod
    def declare(cls, algorithm: int, *, epsilon: float, delta: float, K: int, B: int, sensitivity: float,
                eps0_rule: str = "exact") -> "GFAPrivacy":
        eps = _budget("epsilon", epsilon, allow_inf=True)
        M = number_of_updates(K, B)
        if not math.isinf(eps) and not 0 < float(delta) < 1:
            raise InputError(f"delta must lie in (0, 1), got {delta!r}")
        d_s = _budget("sensitivity", sensitivity, allow_inf=False)
        eps0 = per_update_epsilon(eps, delta, M, eps0_rule)
        beta = math.inf if math.isinf(eps0) else eps0 / (2.0 * d_s)
        composed = math.inf if math.isinf(eps0) else advanced_composition(eps0, M, delta)
        src = {1: "He & Zhou (arXiv 2605.07049), Theorem 3.1 (Algorithm 1)",
               2: "He & Zhou (arXiv 2605.07049), Theorem 3.4 (Algorithm 2)"}[algorithm]
        return cls(algorithm=algorithm, epsilon=eps, delta=float(delta), K=int(K), B=int(B), M=M,
                   sensitivity=d_s, eps0_rule=eps0_rule, eps0=eps0, beta_em=beta, composed_epsilon=composed,
                   source=src)

    @property
    def private(self) -> bool:
        return math.isfinite(self.epsilon)

    @property
    def claim(self) -> Claim | None:
        """(epsilon, delta)-JDP over the actions and the output policy (Def 2.3); None when non-private."""
        if not self.private:
            return None
        return Claim(epsilon=self.epsilon, delta=self.delta, notion="JDP", source=self.source)

    @property
    def within_budget(self) -> bool:
        """composed_epsilon <= epsilon (False for the overshooting "appendix_e" rule)."""
        return not self.private or self.composed_epsilon <= self.epsilon * (1 + 1e-12)

    def dp_event(self):
        """dp_accounting: M self-composed eps0-DP updates (NonPrivateDpEvent if eps = inf).

        dp_accounting has no "generic pure eps0-DP" event; binary randomized response with noise parameter
        p = 2 / (1 + e^{eps0}) (keep w.p. e^{eps0}/(1 + e^{eps0})) has exactly the privacy profile of
        (eps0, 0)-DP and dominates every eps0-DP mechanism (Kairouz, Oh & Viswanath 2015), so a PLD accountant
        on this event (``NeighboringRelation.REPLACE_ONE``: one user replaced, Section 2.2) gives a valid -- and at
        most the advanced-composition -- epsilon for the M updates.
        """
        import dp_accounting
        if not self.private:
            return dp_accounting.NonPrivateDpEvent()
        return dp_accounting.SelfComposedDpEvent(pure_dp_event(self.eps0), self.M)

    def to_dict(self) -> dict:
        from dataclasses import asdict
        return asdict(self)

    def summary(self) -> str:
        if not self.private:
            return f"Algorithm {self.algorithm}: non-private (argmax), K={self.K} B={self.B} M={self.M}"
        return (f"Algorithm {self.algorithm}: ({self.epsilon:g}, {self.delta:g})-JDP; M={self.M} updates of "
                f"eps0={self.eps0:.6g} ({self.eps0_rule}); Delta_S={self.sensitivity:g}, "
                f"beta_EM={self.beta_em:.6g}; composed eps={self.composed_epsilon:.6g}")
