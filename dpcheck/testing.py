"""pytest helpers: ``assert_dp`` turns a black-box audit into a deterministic test assertion.

Calibrated in the spirit of Google's statistical DP tests (the stochastic tester of Google's
differential-privacy library), but with a certified bound instead of votes:

- No flakiness: the seed is fixed, so the same mechanism gets the same verdict on every run,
  on every machine, for any number of workers.
- False alarms: a correct mechanism fails only if the seed happens to fall in the <= alpha
  event where a Clopper-Pearson bound is wrong (alpha = 0.01 by default, Bonferroni-split
  over everything certified; see :mod:`dpcheck.blackbox`).
- Detection: with the default 2 x 10^5 samples per side, Laplace noise 15 % short of its
  claim at eps = 1 (true eps 1.18, Google's calibration point) is caught for nearly every
  seed (tests/core/test_testing.py checks 20 seeds). The result's ``power`` says what a given
  budget can catch; ``strict=True`` also fails when it could not catch a doubling (INCONCLUSIVE), and without
  it that result lets the test pass with a :class:`dpcheck.errors.DPCheckInconclusiveWarning`; a PASS that
  could not reliably see a doubling (:attr:`AuditResult.uninformative`) warns too, strict or not (a pass under
  ``--strict`` as well).
- ``sequential=True`` runs the anytime-valid test (:func:`dpcheck.sequential.audit`), and a target with a
  ``PairSearch`` has its pairs found first, as ``dpcheck audit`` does.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable, Sequence

from dpcheck.blackbox import AuditResult
from dpcheck.claims import Claim
from dpcheck.errors import DPCheckInconclusiveWarning, InputError
from dpcheck.sequential import audit
from dpcheck.target import AuditTarget

DEFAULT_SAMPLES = 200_000
DEFAULT_ALPHA = 0.01


def assert_dp(target: AuditTarget | Callable[..., Any], pairs: Sequence | None = None, claim: Claim | None = None,
              *, epsilon: float | None = None, delta: float = 0.0, samples: int = DEFAULT_SAMPLES,
              alpha: float = DEFAULT_ALPHA, seed: int = 0, strict: bool = False, per_call: bool = False,
              **audit_kwargs) -> AuditResult:
    """Assert that a mechanism keeps its privacy claim; returns the :class:`AuditResult`.

    Either pass an :class:`AuditTarget`, or a mechanism ``mechanism(data, rng, size)`` (or
    ``mechanism(data, rng)`` with ``per_call=True``) with ``pairs`` and a ``claim`` or
    ``epsilon`` / ``delta``. Raises AssertionError when the audit certifies a violation
    (and, with ``strict``, when it is inconclusive); an inconclusive result without ``strict``, and an uninformative
    pass, warn
    (:class:`dpcheck.errors.DPCheckInconclusiveWarning`, as the pytest plugin does) and is returned.
    ``audit_kwargs`` go to :func:`dpcheck.sequential.audit` (the batch black box's options, plus
    ``sequential=True`` for the anytime-valid test); a target with a ``PairSearch`` has its pairs found first.

    >>> assert_dp(lambda d, rng, n: d + rng.laplace(0, 1, n), pairs=[(0, 1)], epsilon=1.0)  # doctest: +SKIP
    """
    if not isinstance(target, AuditTarget):
        if pairs is None:
            raise InputError("assert_dp: give an AuditTarget, or a mechanism with pairs=[(D, D'), ...]")
        if claim is None:
            if epsilon is None:
                raise InputError("assert_dp: give claim=Claim(...) or epsilon=")
            claim = Claim(epsilon=epsilon, delta=delta)
        name = getattr(target, "__name__", "mechanism")
        target = AuditTarget(name=name, mechanism=target, pairs=pairs, claim=claim, per_call=per_call)
    elif claim is not None or epsilon is not None:
        from dataclasses import replace
        target = replace(target, claim=claim if claim is not None else Claim(epsilon=epsilon, delta=delta))
    result = audit(target, samples=samples, alpha=alpha, seed=seed, **audit_kwargs)
    # strict fails an INCONCLUSIVE result, as --strict does; an uninformative PASS is a pass there too (the CLI's
    # one rule, docs/interfaces.md), said out loud
    if result.verdict == "fail" or (strict and result.verdict == "inconclusive"):
        raise AssertionError(f"{target.name}: {result.claim.describe()} {result.verdict}: {result.reason}\n"
                             f"{result.summary()}")
    what = f"{target.name}: {result.claim.describe()}"
    if result.verdict == "inconclusive":
        warnings.warn(DPCheckInconclusiveWarning(f"{what} INCONCLUSIVE: {result.reason} (strict=True fails the test)"),
                      stacklevel=2)
    elif result.uninformative:
        warnings.warn(DPCheckInconclusiveWarning(
            f"{what} PASS (UNINFORMATIVE): {result.reason}; this budget detects only eps >= {result.power:.3g}, so "
            "a 2x excess could pass unseen (raise samples)"), stacklevel=2)
    return result
