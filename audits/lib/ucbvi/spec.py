"""The DP-UCBVI agent under audit as configuration (Qiao & Wang 2023): :class:`AgentSpec` and the claim it is
audited against.
"""
from __future__ import annotations

import copy
import functools
from dataclasses import dataclass




SOURCE = "Qiao & Wang 2023, Near-Optimal Differentially Private Reinforcement Learning (AISTATS)"
VACUOUS = ("Q~ = H at every (k,h,s,a) (theory constants, reports/reproductions/dp_ucbvi_fig1/README.md): optimism is trivial and regret linear; "
           "this run is no evidence for the claim")


# ----------------------------------------------------------------------------- configuration
@dataclass(frozen=True)
class AgentSpec:
    """How to build the agent under audit: configuration only, picklable (chunks run in workers).

    privatizer: "central" | "local" | "none" | "file.py:Class" | a CountPrivatizer subclass (anything
    ``load_privatizer`` accepts). agent_class: DPUCBVI (default) or a subclass (variants, planted
    defects); constants: explicit BonusConstants overriding ``mode``'s.
    """

    privatizer: str = "central"
    epsilon: float = 1.0
    beta: float = 0.1
    calibration: str = "strict"
    width_mode: str = "rigorous"
    mode: str = "practical"
    agent_class: type | None = None
    constants: object | None = None
    tie_breaking: str = "random"

    @functools.cached_property
    def template(self):
        """The privatizer of this configuration, loaded and validated once per spec and never started:
        the claim, notion and declaration are read off it, and every run works on a copy of it
        (:meth:`make_privatizer`; the convention of audits/lib/privatizers/'s templates). Not pickled
        (a worker rebuilds it from the configuration) and not part of the AgentSpec's fingerprint."""
        from dpcheck.algorithms.privatizers import load_privatizer
        return load_privatizer(self.privatizer, epsilon=self.epsilon, beta=self.beta,
                               calibration=self.calibration, width_mode=self.width_mode)

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "template"}

    def make_privatizer(self):
        """A fresh, un-started copy of :attr:`template` for one run."""
        return copy.deepcopy(self.template)

    def make(self):
        from dpcheck.algorithms.online.ucbvi import DPUCBVI
        cls = self.agent_class or DPUCBVI
        return cls(self.make_privatizer(), beta=self.beta, mode=self.mode, constants=self.constants,
                   tie_breaking=self.tie_breaking)

    def notion(self) -> str:
        from dpcheck.audits.lib import privatizers as pa
        p = self.template
        if getattr(p, "notion", None) == "none":   # the non-private baseline: audited as JDP, no privatizer checks
            return "none"
        return pa.privatizer_notion(p, pa.claim_for_families(p, True))

    def describe(self) -> dict:
        return {"agent": (self.agent_class.__name__ if self.agent_class else "DPUCBVI"),
                "privatizer": self.privatizer, "epsilon": self.epsilon, "beta": self.beta,
                "calibration": self.calibration, "width_mode": self.width_mode, "mode": self.mode,
                "tie_breaking": self.tie_breaking}


def claim_for(spec: AgentSpec):
    """The privacy claim the agent is audited against: its privatizer's declared claim; the non-private
    baseline (which claims nothing) is held to DP-UCBVI's eps-JDP claim (Theorem 5.2)."""
    from dpcheck import Claim
    c = getattr(spec.template, "claim", None)
    if c is None:  # the non-private baseline claims nothing; audit it against the DP-UCBVI claim
        return Claim(epsilon=spec.epsilon, notion="JDP", source=f"{SOURCE}, Theorem 5.2 (claimed for DP-UCBVI)")
    return c
