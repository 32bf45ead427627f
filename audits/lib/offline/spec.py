"""DP-APVI as the audit runs it (Qiao & Wang 2022, Algorithm 1): :class:`APVISpec` and :class:`OfflinePlugin`.

:class:`APVISpec` -- the algorithm under audit (class, mechanism, budget, utility delta, constants by mode);
``make(budget)`` builds it at any budget (the calibration checks sweep budgets, so that a scale that is only
right at rho = 1 is caught). :class:`OfflinePlugin` -- a user's offline privatizer, built at any budget.
The count helpers build TabularCounts through the algorithm's own counting (``OfflineDataset.counts``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpcheck.claims import Claim, require_claim
from dpcheck.errors import MechanismError


SOURCE = "Qiao & Wang, Offline RL with Differential Privacy"
MECHANISMS = ("gaussian", "laplace")
MODES = ("theory", "practical")
# Algorithm 1's constants (theory) and scaled ones (practical: no guarantee; the paper's penalties exceed H
# for every n below ~1e5 on the smallest instance). The practical C2 keeps the privacy term's form.
THEORY = {"C1": math.sqrt(2.0), "C2": 16.0, "C": 2.0}
PRACTICAL = {"C1": 0.1, "C2": 0.01, "C": 2.0}
TOL = 1e-9


# ============================================================ the algorithm under audit
@dataclass(frozen=True)
class OfflinePlugin:
    """A user's offline count privatizer (:class:`dpcheck.algorithms.privatizers.OfflineCountPrivatizer`) as the
    audit builds it at any budget: ``klass(**{budget_name: b}, beta=..., **kwargs)``, guarded and probed by
    :func:`dpcheck.algorithms.privatizers.load_offline_privatizer`. ``budget_name`` is its claim's
    (``rho`` for zCDP, else ``epsilon``), ``budget`` the budget it was built with."""

    klass: type
    label: str
    budget_name: str
    budget: float
    kwargs: dict = field(default_factory=dict)
    family: str = "counts"        # "counts" (DP-APVI's OfflineCountPrivatizer) | "regression" (DP-VAPVI's)

    @staticmethod
    def _loader(family: str):
        from dpcheck.algorithms.privatizers import loader
        return loader.load_offline_privatizer if family == "counts" else loader.load_regression_privatizer

    @classmethod
    def load(cls, spec, family: str = "counts", **kw) -> "OfflinePlugin":
        """From ``file.py:Class`` (or a class) and the constructor keywords the user chose (``epsilon`` /
        ``rho``, ``beta``): built once (errors before any work), its claim read for the budget."""
        from dpcheck.algorithms.privatizers.loader import load_class
        klass = load_class(spec) if isinstance(spec, str) else spec
        label = spec if isinstance(spec, str) else getattr(spec, "__name__", repr(spec))
        priv = cls._loader(family)(klass, _label=label, **kw)
        claim = require_claim(priv.claim, f"privatizer {label!r}")
        name = "rho" if claim.rho is not None and claim.epsilon is None else "epsilon"
        budget = float(claim.rho if name == "rho" else claim.epsilon)
        rest = {k: v for k, v in kw.items() if k not in ("rho", "epsilon", "beta")}
        return cls(klass=klass, label=label, budget_name=name, budget=budget, kwargs=rest, family=family)

    def make(self, budget: float, beta: float | None = None):
        kw = {self.budget_name: float(budget), **self.kwargs}
        if beta is not None:
            kw["beta"] = float(beta)
        return self._loader(self.family)(self.klass, _label=self.label, _probe=False, **kw)


@dataclass(frozen=True)
class APVISpec:
    """DP-APVI as the audit runs it.

    mechanism: "gaussian" (rho-zCDP, eq. 2) or "laplace" (eps-DP, docs/derivations.md#noise-calibration); budget: rho or eps;
    delta: the paper's utility failure probability (in E and iota), NOT the delta of (eps, delta)-DP;
    algorithm: the class (DPAPVI or a subclass, e.g. a planted defect); mode: which constants.
    """

    mechanism: str = "gaussian"
    budget: float = 1.0
    delta: float = 0.1
    penalty: str = "bernstein"
    mode: str = "theory"
    algorithm: type | None = None
    extra: dict = field(default_factory=dict)
    noise_off: bool = False      # --privatizer none: the algorithm runs without noise, the claim stays (a sanity check)
    plugin: OfflinePlugin | None = None   # --privatizer file.py:Class: a user's count privatizer inside DP-APVI

    @property
    def gaussian(self) -> bool:
        """A zCDP claim (the built-in Gaussian, or a plug-in claiming rho-zCDP)."""
        if self.plugin is not None:
            return self.plugin.budget_name == "rho"
        return self.mechanism == "gaussian"

    @property
    def budget_name(self) -> str:
        return "rho" if self.gaussian else "epsilon"

    def privatizer(self, budget: float | None = None):
        """The plug-in built at ``budget`` (None for the built-ins)."""
        if self.plugin is None:
            return None
        return self.plugin.make(self.budget if budget is None else budget, self.delta)

    def make(self, budget: float | None = None, mode: str | None = None, **kw):
        from dpcheck.algorithms.offline import DPAPVI
        cls = self.algorithm or DPAPVI
        b = self.budget if budget is None else float(budget)
        if self.noise_off:
            b = math.inf
        consts = THEORY if (mode or self.mode) == "theory" else PRACTICAL
        args = dict(delta=self.delta, penalty=self.penalty, **consts, **self.extra)
        args.update(kw)
        if self.plugin is not None:
            return cls(privatizer=self.privatizer(b), **args)
        return cls(**{self.budget_name: b}, **args)

    def claim(self, budget: float | None = None) -> Claim:
        b = self.budget if budget is None else float(budget)
        if self.plugin is not None:
            return require_claim(self.privatizer(b).claim, f"privatizer {self.plugin.label!r}")
        if self.gaussian:
            return Claim(rho=b, notion="zCDP", source=f"{SOURCE}, Theorem 3.4 / Lemma C.1")
        return Claim(epsilon=b, notion="DP", source=f"{SOURCE}, docs/derivations.md#noise-calibration pure-DP variant")

    def declared_variance(self, H: int, budget: float | None = None) -> float | None:
        """The per-count noise variance the CLAIM implies: 2H/rho (eq. 2) or 2 (4H/eps)^2 (docs/derivations.md#noise-calibration); a plug-in's
        own ``noise_variance(H)`` (None when it declares none: its noise law is its own)."""
        b = self.budget if budget is None else float(budget)
        if self.plugin is not None:
            v = getattr(self.privatizer(b), "noise_variance", None)
            v = v(H) if callable(v) else None
            if v is None:
                return None
            try:
                ok = math.isfinite(float(v)) and float(v) >= 0
            except (TypeError, ValueError):
                ok = False
            if not ok:
                raise MechanismError(f"privatizer {self.plugin.label!r}: noise_variance({H}) returned {v!r}, expected "
                                     "None or a finite number >= 0")
            return float(v)
        return 2.0 * H / b if self.gaussian else 2.0 * (4.0 * H / b) ** 2

    def noise_sd(self, H: int, budget: float | None = None) -> float:
        v = self.declared_variance(H, budget)
        if v is None:      # a plug-in without a declared variance: its width E/2 bounds the noise w.h.p.
            return self.make(budget=budget).width(H, 2, 1) / 2.0
        return math.sqrt(v)

    def width_exponent(self, H: int, S: int, A: int, budgets) -> float:
        """The exponent k of E ~ budget^k over ``budgets``: -1/2 (Gaussian, E_rho), -1 (Laplace, E_eps); a plug-in's
        own, fitted (least squares in log-log) on its declared width E at those budgets (Theorem 3.4's privacy
        term is linear in E, so the privacy cost scales like the privatizer's E, whatever its noise law)."""
        if self.plugin is None:
            return -0.5 if self.gaussian else -1.0
        b = np.log(np.asarray(budgets, float))
        E = np.log([max(self.make(budget=x).width(H, S, A), 1e-300) for x in budgets])
        return float(np.polyfit(b, E, 1)[0])


def _claim_dict(spec: APVISpec, statement: str, source: str | None = None) -> dict:
    return {"statement": statement, "source": source or spec.claim().source}


def _counts(states, actions, S, A, runs=1):
    """TabularCounts of one dataset (lists of trajectories), repeated ``runs`` times, via the algorithm's
    own counting (OfflineDataset.counts)."""
    from dpcheck.algorithms.offline import OfflineDataset, TabularCounts
    c = OfflineDataset.from_arrays(np.asarray(states)[None], np.asarray(actions)[None], S=S, A=A).counts(
        engine="numpy", rewards=False)
    if runs == 1:
        return c
    return TabularCounts(visits=np.repeat(c.visits, runs, 0), transitions=np.repeat(c.transitions, runs, 0),
                         reward_sums=None, n=c.n)


def _repeat(counts, runs):
    from dpcheck.algorithms.offline import TabularCounts
    return TabularCounts(visits=np.repeat(counts.visits[:1], runs, 0),
                         transitions=np.repeat(counts.transitions[:1], runs, 0), reward_sums=None, n=counts.n)


def _flat(visits, transitions):
    R = visits.shape[0]
    return np.concatenate([visits.reshape(R, -1), transitions.reshape(R, -1)], axis=1)
