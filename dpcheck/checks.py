"""Check results: small immutable records that explain themselves.

Every check in a report is one :class:`Check`: what was claimed (with its
source), what was measured, the confidence of the verdict, the verdict, and a
one-line reason. The JSON report is these records serialised.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"
VERDICTS = (PASS, FAIL, INCONCLUSIVE)
QUALIFIERS = ("vacuous", "uninformative")
KINDS = ("privacy", "assumption", "regret", "whitebox")


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, (np.bool_,)):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, (np.floating, float)):
        v = float(x)
        if math.isnan(v):
            return None
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return v
    if hasattr(x, "to_dict"):
        return _jsonable(x.to_dict())
    return x


@dataclass(frozen=True)
class Check:
    """One verified claim.

    id:       dotted name, e.g. ``privacy.jdp.blackbox`` or ``assumption.optimism``.
    kind:     privacy | assumption | regret | whitebox.
    verdict:  pass | fail | inconclusive.
    claim:    what was claimed, with ``source`` (paper, theorem or lemma).
    measured: the figures; privacy checks carry at least epsilon_lower_bound,
              confidence and samples.
    details:  anything else, including ``plots`` (see dpcheck.report).
    reason:   one line a reader can act on.
    """

    id: str
    kind: str
    verdict: str
    claim: dict
    measured: dict
    details: dict = field(default_factory=dict)
    reason: str = ""

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")

    def to_dict(self) -> dict[str, Any]:
        return _jsonable({
            "id": self.id, "kind": self.kind, "verdict": self.verdict,
            "claim": self.claim, "measured": self.measured,
            "details": self.details, "reason": self.reason,
        })


def combine(verdicts) -> str:
    """Overall verdict: fail if any check fails, else inconclusive if any is, else pass."""
    verdicts = list(verdicts)
    if FAIL in verdicts:
        return FAIL
    if INCONCLUSIVE in verdicts or not verdicts:
        return INCONCLUSIVE
    return PASS


def qualify(check: Check, qualifier: str, why: str, note: str | None = None) -> Check:
    """Mark a check whose pass says little: ``"vacuous"`` (the claim held only trivially, e.g. a
    bonus saturated at H makes optimism true by construction) or ``"uninformative"`` (the
    measurement could not tell the claim from its negation in this regime).

    Sets ``details["qualifier"]`` and ``details["vacuous"] = why`` (the explanation) and appends
    ``note`` -- by default "(vacuously: why)" or "(uninformative: why)" -- to the reason. The
    verdict is unchanged (a vacuous pass does not fail a run), but the reports show such a pass
    as its own state ("PASS (vacuous)"), so nobody mistakes it for evidence.
    """
    if qualifier not in QUALIFIERS:
        raise ValueError(f"qualifier must be one of {QUALIFIERS}, got {qualifier!r}")
    det = dict(check.details)
    det["qualifier"] = qualifier
    det["vacuous"] = why
    if note is None:
        note = f" ({'vacuously' if qualifier == 'vacuous' else 'uninformative'}: {why})"
    return Check(id=check.id, kind=check.kind, verdict=check.verdict, claim=check.claim, measured=check.measured,
                 details=det, reason=check.reason + note)


def vacuous(check: Check, why: str | None, note: str | None = None) -> Check:
    """The one rule for a check that holds only trivially in the regime it ran in (a bonus saturated at H
    makes optimism true by construction; penalties >= H make the learned value 0; a bound above its
    trivial value says nothing).

    With ``why`` given, a check that did not FAIL is qualified ``"vacuous"`` (:func:`qualify`): a PASS is
    shown as "PASS (vacuous)" in every report; an INCONCLUSIVE keeps its verdict and carries the
    explanation in its reason (more runs would not make it evidence). A FAIL is never qualified: a
    counterexample is evidence whatever the regime. ``why`` None or empty: the check is returned as is.
    ``note``: what to append to the reason instead of " (vacuously: why)".
    """
    if not why or check.verdict == FAIL:
        return check
    return qualify(check, "vacuous", why, note)


_vacuous = vacuous   # for functions whose ``vacuous`` argument shadows the name


def soften(check: Check, why: str | None, *, note: str | None = None) -> Check:
    """The one rule for a FAIL that contradicts no guarantee: with ``why`` given, a FAIL becomes
    INCONCLUSIVE, its reason is prefixed with ``why`` and ``details["note"]`` says what the claim does not
    cover (``note``, default ``why``); a PASS or an INCONCLUSIVE is returned as is.

    Two situations call for it: practical mode, whose constants are below the paper's so the claim is not
    guaranteed (:meth:`dpcheck.audit.Audit.soften`), and a rate measured in a window where the theorem's
    bound exceeds its trivial value, so the growth is pre-asymptotic (audits/lib/gfa/).
    """
    if not why or check.verdict != FAIL:
        return check
    det = dict(check.details)
    det["note"] = note if note is not None else why
    return Check(id=check.id, kind=check.kind, verdict=INCONCLUSIVE, claim=check.claim, measured=check.measured,
                 details=det, reason=f"{why}: {check.reason}")


def clopper_pearson(k, n, alpha: float, side: str = "two"):
    """Exact binomial confidence bounds for k successes in n trials (the one Clopper-Pearson
    implementation is :func:`dpcheck.stats.cp_lower` / :func:`dpcheck.stats.cp_upper`).

    side="lower": the one-sided (1 - alpha) lower bound; "upper": the upper bound;
    "two": the (1 - alpha) two-sided interval (alpha/2 in each tail). Vectorised.
    """
    from dpcheck.stats import cp_lower, cp_upper

    a = alpha / 2 if side == "two" else alpha
    if side == "lower":
        return cp_lower(k, n, a)
    if side == "upper":
        return cp_upper(k, n, a)
    return cp_lower(k, n, a), cp_upper(k, n, a)


def probability_check(*, id: str, failures: int, runs: int, beta: float, alpha: float,
                      claim: dict, kind: str = "assumption", details: dict | None = None,
                      what: str = "the event") -> Check:
    """"Holds with probability >= 1 - beta", checked over ``runs`` repetitions.

    Exact two-sided Clopper-Pearson bounds on the failure rate: fail when the lower bound at level
    1 - alpha is > beta (so a correct implementation fails with probability <= alpha / 2), pass when the
    upper bound at the PASS level is <= beta (the audit's own alpha inside an audit, where ``alpha`` is
    its family-wise share: dpcheck.stats.pass_alpha), else inconclusive.
    """
    from dpcheck.stats import pass_alpha
    a_pass = pass_alpha(alpha)
    lo, hi = clopper_pearson(failures, runs, alpha)
    lo, hi = float(lo), float(hi)
    hi_pass = float(clopper_pearson(failures, runs, a_pass)[1])
    if hi_pass <= beta:
        verdict = PASS
        reason = (f"{what} failed in {failures}/{runs} runs; failure rate <= {hi_pass:.3g} <= beta={beta:g} "
                  f"at {1 - a_pass:.0%}")
    elif lo > beta:
        verdict = FAIL
        reason = f"{what} failed in {failures}/{runs} runs; failure rate >= {lo:.3g} > beta={beta:g} at {1 - alpha:.2%}"
    else:
        verdict = INCONCLUSIVE
        reason = (f"{what} failed in {failures}/{runs} runs; the failure rate's upper bound {hi_pass:.3g} at "
                  f"{1 - a_pass:.0%} is above beta={beta:g} and its lower bound {lo:.3g} at {1 - alpha:.2%} is not "
                  f"(more runs needed)")
    return Check(id=id, kind=kind, verdict=verdict, claim=claim,
                 measured={"failures": failures, "runs": runs, "failure_rate": failures / max(runs, 1),
                           "failure_rate_interval": [lo, hi], "confidence": 1 - alpha,
                           "pass_upper": hi_pass, "pass_confidence": 1 - a_pass},
                 details=details or {}, reason=reason)


def invariant_check(*, id: str, violations: int, total: int, claim: dict, kind: str = "assumption",
                    details: dict | None = None, what: str = "invariant", vacuous: str | None = None) -> Check:
    """An invariant that must always hold: one counterexample fails it.

    ``vacuous``: if given, the invariant held only trivially (say why); the check
    passes but the reason and details say so, so nobody mistakes it for evidence.
    """
    if violations:
        verdict, reason = FAIL, f"{what}: {violations} of {total} cases violated"
    else:
        verdict, reason = PASS, f"{what}: held in all {total} cases"
    c = Check(id=id, kind=kind, verdict=verdict, claim=claim,
              measured={"violations": violations, "cases": total, "confidence": 1.0},
              details=dict(details or {}), reason=reason)
    return _vacuous(c, vacuous)
