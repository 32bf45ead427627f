"""Privacy claims: what a mechanism or algorithm promises.

A :class:`Claim` is the privacy half of a paper's theorem, stated as data:
the notion (DP, JDP, LDP or zCDP), the budget, and where the claim comes from.
It is validated on construction so that a negative or non-numeric epsilon is
rejected with a clear message before any sampling starts.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, asdict
from numbers import Real

from dpcheck.accounting import approx_dp_delta, zcdp_delta
from dpcheck.errors import InputError

NOTIONS = ("DP", "JDP", "LDP", "zCDP")


def _number(name: str, value, *, allow_none: bool = False) -> float | None:
    if value is None:
        if allow_none:
            return None
        raise InputError(f"{name} is required")
    if isinstance(value, bool) or not isinstance(value, (Real, str)):
        raise InputError(f"{name} must be a number, got {value!r}")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number, got {value!r}") from None
    if math.isnan(x):
        raise InputError(f"{name} must be a number, got NaN")
    return x


@dataclass(frozen=True)
class Claim:
    """A privacy guarantee to be checked.

    notion:  "DP" (central, one record), "JDP" (joint DP, one user replaced,
             adversary sees the other users' outputs), "LDP" (local, what one
             user sends), or "zCDP" (rho-zero-concentrated DP; Bun & Steinke 2016).
    epsilon: the epsilon of (epsilon, delta)-DP; for zCDP may be omitted.
    delta:   0 for pure DP.
    rho:     the zCDP parameter (zCDP claims only).
    source:  where the claim comes from, e.g. "Qiao & Wang 2024, Lemma 5.1".
    """

    epsilon: float | None = None
    delta: float = 0.0
    rho: float | None = None
    notion: str = "DP"
    source: str = ""
    neighbouring: str = "replacement"

    def __post_init__(self):
        notion = str(self.notion)
        canon = {n.lower(): n for n in NOTIONS}
        if notion.lower() not in canon:
            raise InputError(f"unknown privacy notion {self.notion!r}; expected one of {', '.join(NOTIONS)}")
        object.__setattr__(self, "notion", canon[notion.lower()])
        eps = _number("epsilon", self.epsilon, allow_none=True)
        delta = _number("delta", self.delta)
        rho = _number("rho", self.rho, allow_none=True)
        if eps is not None and not (eps >= 0 and math.isfinite(eps)):
            raise InputError(f"epsilon must be a finite number >= 0, got {self.epsilon!r}")
        if not 0 <= delta < 1:
            raise InputError(f"delta must lie in [0, 1), got {self.delta!r}")
        if rho is not None and not (rho >= 0 and math.isfinite(rho)):
            raise InputError(f"rho must be a finite number >= 0, got {self.rho!r}")
        if self.notion == "zCDP":
            if rho is None:
                raise InputError("a zCDP claim needs rho")
        elif eps is None:
            raise InputError(f"a {self.notion} claim needs epsilon")
        if self.neighbouring not in ("replacement", "add_remove"):
            raise InputError("neighbouring must be 'replacement' or 'add_remove'")
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "delta", delta)
        object.__setattr__(self, "rho", rho)

    # -- privacy profile -------------------------------------------------------
    def delta_at(self, eps: float) -> float:
        """The largest delta the claim allows at ``eps``: the privacy profile delta(eps).

        Pure / approximate DP at (epsilon, delta): for eps >= epsilon the claim
        allows delta; below epsilon, (epsilon, delta)-DP implies
        (eps, 1 - (1 - delta)(1 + e^eps)/(1 + e^epsilon))-DP, the tight profile of
        the randomised-response extreme (Kairouz, Oh & Viswanath 2015, Thm 2.1).
        zCDP: delta(eps) = inf_{a>1} exp((a-1)(a rho - eps)) / (a-1) * (1 - 1/a)^a
        (Canonne, Kamath & Steinke 2020, Prop. 7), minimised numerically over a
        (both in :mod:`dpcheck.accounting`).
        """
        if self.notion == "zCDP":
            return zcdp_delta(self.rho, eps)
        return approx_dp_delta(self.epsilon, self.delta, eps)

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None and v != ""}

    def describe(self) -> str:
        if self.notion == "zCDP":
            return f"rho={self.rho:g}-zCDP"
        d = f", delta={self.delta:g}" if self.delta else ""
        return f"epsilon={self.epsilon:g}{d} {self.notion}"


def require_claim(value, who: str) -> "Claim":
    """``value`` if it is a :class:`Claim`; else the MechanismError a plug-in that declares something else gets
    (``who`` names it), not an internal AttributeError further on."""
    if not isinstance(value, Claim):
        from dpcheck.errors import MechanismError
        raise MechanismError(f"{who}: its claim is a {type(value).__name__}, not a dpcheck.Claim")
    return value
