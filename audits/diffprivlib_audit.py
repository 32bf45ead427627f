"""Audit "diffprivlib": every mechanism of IBM's diffprivlib (``diffprivlib.mechanisms``) black box, at the
guarantee its documentation states, on the neighbouring inputs that stress it.

`dpcheck audit diffprivlib [--epsilon E] [--samples N] [--quick]`

One check per mechanism (``privacy.<Class>``), the family-wise alpha split over all of them
(docs/interfaces.md "Family-wise error"). Each mechanism is built as its documentation prescribes at
``epsilon`` (default 1; the classic ``Gaussian`` needs epsilon <= 1 and is run at min(epsilon, 1)),
delta = 1e-5 where the guarantee is approximate; a chunk of outputs comes from one mechanism object
seeded with a ``RandomState`` drawn from dpcheck's generator, so every draw follows the audit's seed.
The inputs of each pair differ by the mechanism's declared sensitivity (1) and, for bounded-domain
mechanisms, sit at the edge of the domain, where truncation or folding changes the output law most.
docs/diffprivlib.md has the table of what holds and what each pair is.

``Vector`` (objective perturbation, Chaudhuri, Monteleoni & Sarwate 2011) is not audited: its output is
a perturbed objective *function*, and its guarantee is about the minimiser of that function for a convex
loss with bounded data -- an audit of it is an audit of a learner (diffprivlib.models), not of a
mechanism. The abstract bases (DPMechanism, DPMachine, TruncationAndFoldingMixin) are not mechanisms.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from dpcheck.audit import Audit, ClaimRow, Defaults
from dpcheck.registry import SAMPLING

DELTA = 1e-5          # delta of the approximate-DP mechanisms
DOMAIN = (0.0, 10.0)  # bounded-domain mechanisms: inputs 0 and 1 sit at the lower edge
SAMPLES = (50_000, 8_000)    # outputs per side (default, --quick: Uniform's (0, 0.1) claim needs 8,000 to see a power below 0.1); diffprivlib draws one output per call
DOCS = "diffprivlib 0.6 documentation (Holohan et al. 2019, arXiv 1907.02444)"
NOT_AUDITED = {"Vector": "output is a perturbed objective function (a learner's guarantee, not a mechanism's)"}
BASES = ("DPMechanism", "DPMachine", "TruncationAndFoldingMixin")


# the claim table: one black-box check per mechanism (the pairs are MECHANISMS' below)
CLAIMS = (
    ClaimRow("privacy.Laplace", "privacy",
             "diffprivlib.mechanisms.Laplace at epsilon (delta = 0) is (epsilon, delta)-DP on neighbouring inputs 0.0 vs 1.0",
             f"{DOCS}; Dwork et al. 2006", "run"),
    ClaimRow("privacy.LaplaceTruncated", "privacy",
             "diffprivlib.mechanisms.LaplaceTruncated at epsilon (delta = 0) is (epsilon, delta)-DP on neighbouring inputs 0.0 vs 1.0",
             f"{DOCS}; the class docstring", "run"),
    ClaimRow("privacy.LaplaceFolded", "privacy",
             "diffprivlib.mechanisms.LaplaceFolded at epsilon (delta = 0) is (epsilon, delta)-DP on neighbouring inputs 0.0 vs 1.0",
             f"{DOCS}; Holohan et al. 2018, arXiv 1808.10410", "run"),
    ClaimRow("privacy.LaplaceBoundedDomain", "privacy",
             "diffprivlib.mechanisms.LaplaceBoundedDomain at epsilon (delta = 0) is (epsilon, delta)-DP on neighbouring inputs 0.0 vs 1.0",
             f"{DOCS}; Holohan et al. 2018, arXiv 1808.10410", "run"),
    ClaimRow("privacy.LaplaceBoundedNoise", "privacy",
             "diffprivlib.mechanisms.LaplaceBoundedNoise at epsilon (delta = 1e-05) is (epsilon, delta)-DP on neighbouring inputs 0.0 vs 1.0",
             f"{DOCS}; Geng et al. 2018, arXiv 1810.00877", "run"),
    ClaimRow("privacy.Gaussian", "privacy",
             "diffprivlib.mechanisms.Gaussian at epsilon (delta = 1e-05) is (epsilon, delta)-DP on neighbouring inputs 0.0 vs 1.0",
             f"{DOCS}; Dwork & Roth 2014, Theorem A.1", "run"),
    ClaimRow("privacy.GaussianAnalytic", "privacy",
             "diffprivlib.mechanisms.GaussianAnalytic at epsilon (delta = 1e-05) is (epsilon, delta)-DP on neighbouring inputs 0.0 vs 1.0",
             f"{DOCS}; Balle & Wang 2018", "run"),
    ClaimRow("privacy.GaussianDiscrete", "privacy",
             "diffprivlib.mechanisms.GaussianDiscrete at epsilon (delta = 1e-05) is (epsilon, delta)-DP on neighbouring inputs 0 vs 1",
             f"{DOCS}; Canonne, Kamath & Steinke 2020", "run"),
    ClaimRow("privacy.Geometric", "privacy",
             "diffprivlib.mechanisms.Geometric at epsilon (delta = 0) is (epsilon, delta)-DP on neighbouring inputs 0 vs 1",
             f"{DOCS}; Ghosh, Roughgarden & Sundararajan 2012", "run"),
    ClaimRow("privacy.GeometricTruncated", "privacy",
             "diffprivlib.mechanisms.GeometricTruncated at epsilon (delta = 0) is (epsilon, delta)-DP on neighbouring inputs 0 vs 1",
             f"{DOCS}; the class docstring", "run"),
    ClaimRow("privacy.GeometricFolded", "privacy",
             "diffprivlib.mechanisms.GeometricFolded at epsilon (delta = 0) is (epsilon, delta)-DP on neighbouring inputs 0 vs 1",
             f"{DOCS}; the class docstring", "run"),
    ClaimRow("privacy.Binary", "privacy",
             "diffprivlib.mechanisms.Binary at epsilon (delta = 0) is (epsilon, delta)-DP on neighbouring inputs '0' vs '1'",
             f"{DOCS}; Warner 1965 (randomised response)", "run"),
    ClaimRow("privacy.Exponential", "privacy",
             "diffprivlib.mechanisms.Exponential at epsilon (delta = 0) is (epsilon, delta)-DP on neighbouring inputs utilities (0, 0, 0) vs (1, 0, 0)",
             f"{DOCS}; McSherry & Talwar 2007", "run"),
    ClaimRow("privacy.PermuteAndFlip", "privacy",
             "diffprivlib.mechanisms.PermuteAndFlip at epsilon (delta = 0) is (epsilon, delta)-DP on neighbouring inputs utilities (0, 0, 0) vs (1, 0, 0)",
             f"{DOCS}; McKenna & Sheldon 2020", "run"),
    ClaimRow("privacy.ExponentialCategorical", "privacy",
             "diffprivlib.mechanisms.ExponentialCategorical at epsilon (delta = 0) is (epsilon, delta)-DP on neighbouring inputs values a vs b (utility distance 1, the largest)",
             f"{DOCS}; McSherry & Talwar 2007", "run"),
    ClaimRow("privacy.ExponentialHierarchical", "privacy",
             "diffprivlib.mechanisms.ExponentialHierarchical at epsilon (delta = 0) is (epsilon, delta)-DP on neighbouring inputs leaves A vs D (different branches)",
             f"{DOCS}; McSherry & Talwar 2007", "run"),
    ClaimRow("privacy.Staircase", "privacy",
             "diffprivlib.mechanisms.Staircase at epsilon (delta = 0) is (epsilon, delta)-DP on neighbouring inputs 0.0 vs 1.0",
             f"{DOCS}; Geng & Viswanath 2016", "run"),
    ClaimRow("privacy.Uniform", "privacy",
             "diffprivlib.mechanisms.Uniform at epsilon (delta = 0.1) is (epsilon, delta)-DP on neighbouring inputs 0 vs 1 (epsilon = 0, delta = 0.1)",
             f"{DOCS}; (0, delta)-DP", "run"),
    ClaimRow("privacy.Snapping", "privacy",
             "diffprivlib.mechanisms.Snapping at epsilon (delta = 0) is (epsilon, delta)-DP on neighbouring inputs 0.0 vs 1.0",
             f"{DOCS}; Mironov 2012", "run"),
    ClaimRow("privacy.Bingham", "privacy",
             "diffprivlib.mechanisms.Bingham at epsilon (delta = 0) is (epsilon, delta)-DP on neighbouring inputs A = diag(2, 1) vs diag(2, 2) (a unit-norm row added: A' - A = e2 e2^T)",
             f"{DOCS}; Kapralov & Talwar 2013", "run"),
)


@dataclass(frozen=True)
class Mechanism:
    """How to audit one diffprivlib mechanism: build it at (eps, delta) with a RandomState, draw one
    output for an input, the neighbouring pair, the claim's delta, the kind of output."""

    name: str
    build: Callable[[float, Any, Any], Any]    # (eps, input, RandomState) -> mechanism object
    draw: Callable[[Any, Any], Any]            # (mechanism, input) -> one output
    pair: tuple
    delta: float = 0.0
    output: str = "continuous"
    eps_cap: float | None = None               # the largest epsilon the mechanism accepts
    source: str = ""

    def epsilon(self, eps: float) -> float:
        return min(eps, self.eps_cap) if self.eps_cap is not None else eps


def _mech(name):
    import diffprivlib.mechanisms as m
    return getattr(m, name)


def _value(m, x):
    return m.randomise(x)


def _unit_vector(m, x):
    v = np.asarray(m.randomise(np.asarray(x, dtype=float)), dtype=float)
    return v * (1.0 if v[0] >= 0 else -1.0)      # +-v is one output (an eigenvector's sign is arbitrary)


def _choice(m, x):
    return m.randomise()


LO, HI = DOMAIN
MECHANISMS = (
    Mechanism("Laplace", lambda e, x, rs: _mech("Laplace")(epsilon=e, sensitivity=1, random_state=rs),
              _value, (0.0, 1.0), source="Dwork et al. 2006"),
    Mechanism("LaplaceTruncated", lambda e, x, rs: _mech("LaplaceTruncated")(
        epsilon=e, sensitivity=1, lower=LO, upper=HI, random_state=rs), _value, (LO, LO + 1)),
    Mechanism("LaplaceFolded", lambda e, x, rs: _mech("LaplaceFolded")(
        epsilon=e, sensitivity=1, lower=LO, upper=HI, random_state=rs), _value, (LO, LO + 1),
        source="Holohan et al. 2018, arXiv 1808.10410"),
    Mechanism("LaplaceBoundedDomain", lambda e, x, rs: _mech("LaplaceBoundedDomain")(
        epsilon=e, sensitivity=1, lower=LO, upper=HI, random_state=rs), _value, (LO, LO + 1),
        source="Holohan et al. 2018, arXiv 1808.10410"),
    Mechanism("LaplaceBoundedNoise", lambda e, x, rs: _mech("LaplaceBoundedNoise")(
        epsilon=e, delta=DELTA, sensitivity=1, random_state=rs), _value, (0.0, 1.0), delta=DELTA,
        source="Geng et al. 2018, arXiv 1810.00877"),
    Mechanism("Gaussian", lambda e, x, rs: _mech("Gaussian")(epsilon=e, delta=DELTA, sensitivity=1, random_state=rs),
              _value, (0.0, 1.0), delta=DELTA, eps_cap=1.0, source="Dwork & Roth 2014, Theorem A.1"),
    Mechanism("GaussianAnalytic", lambda e, x, rs: _mech("GaussianAnalytic")(
        epsilon=e, delta=DELTA, sensitivity=1, random_state=rs), _value, (0.0, 1.0), delta=DELTA,
        source="Balle & Wang 2018"),
    Mechanism("GaussianDiscrete", lambda e, x, rs: _mech("GaussianDiscrete")(
        epsilon=e, delta=DELTA, sensitivity=1, random_state=rs), _value, (0, 1), delta=DELTA, output="discrete",
        source="Canonne, Kamath & Steinke 2020"),
    Mechanism("Geometric", lambda e, x, rs: _mech("Geometric")(epsilon=e, sensitivity=1, random_state=rs),
              _value, (0, 1), output="discrete", source="Ghosh, Roughgarden & Sundararajan 2012"),
    Mechanism("GeometricTruncated", lambda e, x, rs: _mech("GeometricTruncated")(
        epsilon=e, sensitivity=1, lower=int(LO), upper=int(HI), random_state=rs), _value, (int(LO), int(LO) + 1),
        output="discrete"),
    Mechanism("GeometricFolded", lambda e, x, rs: _mech("GeometricFolded")(
        epsilon=e, sensitivity=1, lower=int(LO), upper=int(HI), random_state=rs), _value, (int(LO), int(LO) + 1),
        output="discrete"),
    Mechanism("Binary", lambda e, x, rs: _mech("Binary")(epsilon=e, value0="0", value1="1", random_state=rs),
              lambda m, x: int(m.randomise(x)), ("0", "1"), output="discrete", source="Warner 1965 (randomised response)"),
    Mechanism("Exponential", lambda e, u, rs: _mech("Exponential")(
        epsilon=e, sensitivity=1, utility=list(u), random_state=rs), _choice, ((0.0, 0.0, 0.0), (1.0, 0.0, 0.0)),
        output="discrete", source="McSherry & Talwar 2007"),
    Mechanism("PermuteAndFlip", lambda e, u, rs: _mech("PermuteAndFlip")(
        epsilon=e, sensitivity=1, utility=list(u), random_state=rs), _choice, ((0.0, 0.0, 0.0), (1.0, 0.0, 0.0)),
        output="discrete", source="McKenna & Sheldon 2020"),
    Mechanism("ExponentialCategorical", lambda e, x, rs: _mech("ExponentialCategorical")(
        epsilon=e, utility_list=[["a", "b", 1.0], ["a", "c", 1.0], ["b", "c", 0.5]], random_state=rs),
        lambda m, x: "abc".index(m.randomise(x)), ("a", "b"), output="discrete", source="McSherry & Talwar 2007"),
    Mechanism("ExponentialHierarchical", lambda e, x, rs: _mech("ExponentialHierarchical")(
        epsilon=e, hierarchy=[["A", "B"], ["C", "D"]], random_state=rs),
        lambda m, x: "ABCD".index(m.randomise(x)), ("A", "D"), output="discrete", source="McSherry & Talwar 2007"),
    Mechanism("Staircase", lambda e, x, rs: _mech("Staircase")(epsilon=e, sensitivity=1, random_state=rs),
              _value, (0.0, 1.0), source="Geng & Viswanath 2016"),
    Mechanism("Uniform", lambda e, x, rs: _mech("Uniform")(delta=0.1, sensitivity=1, random_state=rs),
              _value, (0.0, 1.0), delta=0.1, eps_cap=0.0, source="(0, delta)-DP"),
    Mechanism("Snapping", lambda e, x, rs: _mech("Snapping")(
        epsilon=e, sensitivity=1, lower=LO, upper=HI, random_state=rs), _value, (LO, LO + 1),
        source="Mironov 2012"),
    Mechanism("Bingham", lambda e, x, rs: _mech("Bingham")(epsilon=e, sensitivity=1.0, random_state=rs),
              _unit_vector, (((2.0, 0.0), (0.0, 1.0)), ((2.0, 0.0), (0.0, 2.0))), source="Kapralov & Talwar 2013"),
)
PAIR_TEXT = {
    "Exponential": "utilities (0, 0, 0) vs (1, 0, 0)", "PermuteAndFlip": "utilities (0, 0, 0) vs (1, 0, 0)",
    "Bingham": "A = diag(2, 1) vs diag(2, 2) (a unit-norm row added: A' - A = e2 e2^T)",
    "ExponentialCategorical": "values a vs b (utility distance 1, the largest)",
    "ExponentialHierarchical": "leaves A vs D (different branches)", "Uniform": "0 vs 1 (epsilon = 0, delta = 0.1)",
}


def pair_text(m: Mechanism) -> str:
    return PAIR_TEXT.get(m.name, f"{m.pair[0]!r} vs {m.pair[1]!r}")


def target(m: Mechanism, eps: float, claim_epsilon: float | None = None):
    """The AuditTarget of mechanism ``m`` at ``eps`` (claimed at ``claim_epsilon``, default: its guarantee)."""
    from dpcheck import AuditTarget, Claim
    e = m.epsilon(eps)

    def mechanism(x, rng, size):
        rs = np.random.RandomState(int(rng.integers(2**32)))
        mech = m.build(e, x, rs)
        return np.asarray([m.draw(mech, x) for _ in range(size)])

    claim = Claim(epsilon=e if claim_epsilon is None else claim_epsilon, delta=m.delta,
                  source=f"diffprivlib.mechanisms.{m.name}" + (f" ({m.source})" if m.source else ""))
    return AuditTarget(name=f"diffprivlib.{m.name}", mechanism=mechanism, pairs=[m.pair], claim=claim,
                       output=m.output)


class DiffprivlibAudit(Audit):
    name = "diffprivlib"
    algorithm = "diffprivlib.mechanisms (IBM), every mechanism"
    notion = "DP"
    summary = "each mechanism (eps, delta)-DP at its documented calibration"
    uses = SAMPLING
    defaults = Defaults(epsilon=1.0, samples=SAMPLES)
    claims = CLAIMS

    def run(self) -> None:
        import diffprivlib
        import diffprivlib.mechanisms as dm
        eps, samples = self.epsilon, self.samples()
        public = sorted(n for n in dir(dm) if n[:1].isupper() and isinstance(getattr(dm, n), type))
        covered = {m.name for m in MECHANISMS}
        missing = [n for n in public if n not in covered and n not in NOT_AUDITED and n not in BASES]
        self.config.update(diffprivlib=diffprivlib.__version__, epsilon=eps, samples_per_side=samples,
                           not_audited=NOT_AUDITED, new_mechanisms_not_covered=missing)
        if missing:
            self.progress(f"diffprivlib {diffprivlib.__version__} has mechanisms this audit does not know: "
                          f"{', '.join(missing)}")
        for i, m in enumerate(MECHANISMS):
            self.progress(f"diffprivlib.{m.name} ({i + 1}/{len(MECHANISMS)}), {samples} outputs per side")
            check, _ = self.blackbox(target(m, eps), id=f"privacy.{m.name}", samples=samples,
                                     seed=self.int_seed("diffprivlib", m.name))
            self.add(check)


DiffprivlibAudit.register()
