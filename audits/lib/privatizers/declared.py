"""What a count privatizer declares, and which kind of privatizer it is.

:func:`declaration` (claim, DpEvent, width E from the privatizer's parameters and the sizes: ``declare()``),
:func:`claim_for_families`, :func:`privatizer_notion` (JDP / LDP), :func:`width_eps_slope` (the exponent of
E(eps) that the regret theorems' privacy term inherits), :func:`is_plugin` (a user's privatizer, audited as a
black box), :func:`privatizer_class` and :class:`ClaimedTemplate`.
"""
from __future__ import annotations

import copy

import numpy as np


def is_plugin(template) -> bool:
    """True for a user's (plug-in) privatizer: loaded from a file / module (GuardedPrivatizer) or any
    class not defined in ``dpcheck.algorithms.privatizers`` (a subclass of a built-in written elsewhere too)."""
    from dpcheck.algorithms.privatizers.loader import GuardedPrivatizer
    p = template.privatizer if isinstance(template, ClaimedTemplate) else template
    if isinstance(p, GuardedPrivatizer):
        return True
    return not type(p).__module__.startswith("dpcheck.algorithms.privatizers")


def privatizer_notion(p, own_claim=None) -> str:
    """"JDP" or "LDP" for a privatizer: its declared claim's notion first (privacy declared as data: a
    CountPrivatizer subclass inherits ``notion = "JDP"`` even when its claim says LDP), then its ``notion``
    attribute, then the Local hook ``message``; JDP otherwise (the non-private baseline included)."""
    if own_claim is not None and getattr(own_claim, "notion", None) in ("JDP", "LDP"):
        return own_claim.notion
    return "LDP" if (getattr(p, "notion", "JDP") == "LDP" or callable(getattr(p, "message", None))) else "JDP"


def declaration(p, H: int, S: int, A: int, K: int, rewards: bool = True):
    """What privatizer ``p`` declares for K users of an (H, S, A) model: claim, DpEvent per neighbouring
    relation, width E (:class:`dpcheck.algorithms.privatizers.base.Declaration`), from its parameters and the
    sizes, nothing run: ``p.declare(...)``. A plug-in without ``declare`` gets the plug-in fallback,
    read off a started copy (:func:`dpcheck.algorithms.privatizers.base.declare_by_starting`)."""
    from dpcheck.algorithms.privatizers.base import declare_by_starting
    declare = getattr(p, "declare", None)
    if callable(declare):
        d = declare(H, S, A, K, rewards=rewards)
        if d.width is not None:
            return d
        # width_mode="calibrated": E is a Monte-Carlo quantile drawn when the privatizer starts
    return declare_by_starting(p, H, S, A, K, rewards=rewards)


def width_eps_slope(make, eps_grid, *, H: int, S: int, A: int, K: int, rewards: bool = True) -> float:
    """The log-log slope in eps of the width E(eps) privatizer ``make(eps)`` declares (:func:`declaration`)
    for K users of an (H, S, A) model, over ``eps_grid``. The regret theorems bound the privacy cost through
    Assumption 3.1, linearly in E, and E = O~(1/eps) is a property of the papers' Laplace privatizers, not of
    every privatizer (a Gaussian one has E ~ eps^-1/2 at large eps): a plug-in's privacy cost at fixed K is
    claimed to scale with this slope (DP-UCBVI: Qiao & Wang 2023, Thms 5.2 / 5.7; DP-Nash-VI: Qiao & Wang
    2024, Thms 5.2 / 5.5 through Theorem 4.1). Used by dp_ucbvi and dp_nash_vi."""
    Es = [float(declaration(make(float(e)), H, S, A, K, rewards).width) for e in eps_grid]
    return float(np.polyfit(np.log(np.asarray(eps_grid, float)), np.log(Es), 1)[0])


def claim_for_families(p, rewards):
    """The privatizer's claim once it knows whether it runs with 2 or 3 families (rewards or not)."""
    return declaration(p, 1, 2, 1, 1, rewards).claim


def privatizer_class(p) -> type:
    """The class a user wrote (unwrapping the loader's GuardedPrivatizer), for labels."""
    from dpcheck.algorithms.privatizers.loader import unwrap
    return type(unwrap(p))


class ClaimedTemplate:
    """A privatizer template whose claim is fixed (the 2- or 3-family one) before it is started.

    ``privatizer``: the template it stands for (a deep copy -- what every run starts -- is a copy of it)."""

    def __init__(self, p, claim, rewards):
        self.privatizer, self.claim, self.name = p, claim, getattr(p, "name", type(p).__name__)

    def __deepcopy__(self, memo):
        return copy.deepcopy(self.privatizer, memo)
