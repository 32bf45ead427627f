"""Running an audit: options, the context an audit writes its checks to, and the report it builds.

A registered audit is ``run(ctx)``; it adds each check with ``ctx.add`` as soon
as it is finished. The context streams the report-so-far to disk after every
check (``on_check``), so an audit that later crashes or is interrupted loses no
finished work. That streamed report has ``status: running``, ``complete: false``
and never the verdict ``pass`` (only a run whose every check finished can pass);
how the files are written so that a kill at any moment leaves a consistent set
is in :mod:`dpcheck.report`.
"""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field, asdict
from datetime import datetime, timezone
from typing import Any, Callable

import numpy as np

from dpcheck.checks import Check, combine, _jsonable
from dpcheck.errors import InputError
from dpcheck.report import SCHEMA


@dataclass
class AuditOptions:
    """Everything the command line passes to an audit (README "Commands").

    Values are parsed here, once (dpcheck.options: the same parsers and messages for the command
    line and for library callers): strings such as ``"0.5"`` or ``"1e6"`` become numbers and a bad
    value is an InputError naming the flag. Which options an audit uses, and its ``--set`` keys
    in ``extra``, are checked against its registration (AuditSpec.check_options).
    timeout: seconds per call of a user's mechanism (user targets; None: the default 600 s,
             math.inf: no limit).
    """

    epsilon: float | None = None
    delta: float | None = None
    privatizer: str | None = None
    samples: int | None = None
    seed: int = 0
    alpha: float = 0.05
    workers: int = 1
    backend: str = "local"
    scheduler: str | None = None
    quick: bool = False
    strict: bool = False
    cache_dir: str | None = None
    extra: dict = field(default_factory=dict)
    timeout: float | None = None
    sequential: bool = False      # --sequential: the anytime-valid black box (dpcheck.sequential)

    def __post_init__(self):
        from dpcheck import options as op
        if self.epsilon is not None:
            self.epsilon = op.parse_epsilon(self.epsilon)
        if self.delta is not None:
            self.delta = op.parse_delta(self.delta)
        self.alpha = op.parse_alpha(self.alpha)
        if self.samples is not None:
            self.samples = op.parse_samples(self.samples)
        self.workers = op.parse_workers(self.workers)
        if self.backend not in ("local", "dask"):
            raise InputError(f"--backend must be local or dask, got {self.backend!r}")
        self.seed = op.parse_seed(self.seed)
        if self.timeout is not None:
            self.timeout = op.parse_timeout(self.timeout)
        if self.privatizer is not None and not str(self.privatizer).strip():
            raise InputError("--privatizer must not be empty")
        if self.scheduler is not None and (not str(self.scheduler).strip()
                                           or any(c.isspace() for c in str(self.scheduler))):
            raise InputError(f"--scheduler must be an address such as tcp://host:8786, got {self.scheduler!r}")
        self.extra = dict(self.extra or {})

    def to_dict(self) -> dict:
        d = asdict(self)
        return {k: v for k, v in d.items() if v not in (None, {}) and k != "cache_dir"}


class AuditContext:
    """What an audit sees: its options, a place for checks, progress, seeds and parallelism."""

    def __init__(self, target: str, options: AuditOptions, *, progress: Callable[[str], None] | None = None,
                 on_check: Callable[[dict], None] | None = None, run_id: str | None = None):
        self.target = target
        self.options = options
        self.checks: list[Check] = []
        self.config: dict[str, Any] = {}
        # the family-wise error split (set by dpcheck.audit.Audit: alpha, tests, alpha_per_check); a
        # user's AuditTarget is one check at the full alpha
        self.family: dict[str, Any] = {"alpha": float(options.alpha), "tests": 1,
                                       "alpha_per_check": float(options.alpha)}
        self._progress = progress
        self._on_check = on_check
        self.started = datetime.now(timezone.utc)
        self._t0 = time.perf_counter()
        # one id per run, written into every report file of the run (dpcheck.report: never a mix of runs)
        self.run_id = run_id or f"{self.started:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"

    # -- writing ---------------------------------------------------------------
    def add(self, check: Check) -> Check:
        if not isinstance(check, Check):
            raise TypeError(f"ctx.add expects a dpcheck.checks.Check, got {type(check).__name__}")
        self.checks.append(check)
        self.progress(f"{check.verdict.upper():12s} {check.id}: {check.reason}")
        if self._on_check is not None:
            self._on_check(self.report(status="running"))
        return check

    def progress(self, msg: str) -> None:
        if self._progress is not None:
            self._progress(msg)

    # -- randomness -------------------------------------------------------------------
    def seed_sequence(self, *key) -> np.random.SeedSequence:
        """A child seed that depends only on --seed and ``key`` (ints or strings)."""
        ints = [int(self.options.seed)]
        for k in key:
            if isinstance(k, str):
                ints.append(int.from_bytes(k.encode()[:8].ljust(8, b"\0"), "little") % (2**63))
            else:
                ints.append(int(k))
        return np.random.SeedSequence(ints)

    def rng(self, *key) -> np.random.Generator:
        return np.random.default_rng(self.seed_sequence(*key))

    # -- the report ------------------------------------------------------------------
    def report(self, error: str | None = None, *, status: str | None = None) -> dict:
        """The report of this run. With no arguments: the final report of a run whose every check
        finished (``status: complete``). ``status="running"``: the report so far, streamed after
        each check. ``error``: the run stopped early (status ``error``, or ``interrupted``).
        Only a complete report may carry the verdict ``pass``: otherwise a pass so far is
        ``inconclusive`` (the checks never run cannot vouch for the run); a fail stays a fail.
        """
        if status is None:
            status = "complete" if error is None else "error"
        if status not in ("running", "interrupted", "error", "complete"):
            raise ValueError(f"unknown report status {status!r}")
        if status == "complete" and error is not None:
            raise ValueError("a report with an error cannot be complete")
        verdicts = [c.verdict for c in self.checks]
        rep = {
            "schema": SCHEMA,
            "target": self.target,
            "dpcheck_version": _version(),
            "run_id": self.run_id,
            "status": status,
            "complete": status == "complete",
            "seed": int(self.options.seed),
            "alpha": float(self.options.alpha),
            "started": self.started.isoformat(timespec="seconds"),
            "duration_s": round(time.perf_counter() - self._t0, 3),
            "verdict": combine(verdicts),
            "options": self.options.to_dict(),
            "config": _jsonable(self.config),
            "checks": [c.to_dict() for c in self.checks],
        }
        rep["family"] = family_error(rep["checks"], self.family)
        if error is not None:
            rep["error"] = error
        if status != "complete" and rep["verdict"] == "pass":
            rep["verdict"] = "inconclusive"
        return rep


def family_error(checks: list[dict], family: dict) -> dict:
    """The family-wise error of a report's FAIL verdicts, from its checks' own confidences.

    A check decided from samples states ``measured.confidence`` = 1 - (its error probability); an exact
    one states 1. By the union bound, the probability that any check of a correct implementation says
    FAIL is at most ``error_bound`` = sum of (1 - confidence) over the checks, which the audit keeps
    <= ``alpha`` by running each of its ``tests`` checks at ``alpha_per_check`` = alpha / tests.
    ``controlled`` is False when the checks spent more than alpha (a bug in the audit's claim table).
    """
    at_risk = [1.0 - float(c["measured"]["confidence"]) for c in checks
               if isinstance(c.get("measured", {}).get("confidence"), (int, float))
               and float(c["measured"]["confidence"]) < 1.0]
    bound = float(sum(at_risk))
    alpha = float(family["alpha"])
    return {**family, "checks_at_risk": len(at_risk), "error_bound": bound,
            "controlled": bound <= alpha * (1 + 1e-9)}


def _version() -> str:
    from dpcheck._version import __version__
    return __version__


def exit_code(report: dict, strict: bool = False) -> int:
    """0 all pass; 1 a violation (or, with --strict, an inconclusive check or no checks); 2 an incomplete run."""
    if report.get("complete") is False:
        return 2
    v = report["verdict"]
    if v == "fail":
        return 1
    if strict and v != "pass":
        return 1
    return 0
