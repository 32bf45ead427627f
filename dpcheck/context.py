"""Running an audit: options, the context an audit writes its checks to, and the report it builds.

A registered audit is ``run(ctx)``; it adds each check with ``ctx.add`` as soon
as it is finished. The context streams the report-so-far to disk after every
check (``on_check``), so an audit that later crashes or is interrupted loses no
finished work.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field, asdict
from datetime import datetime, timezone
from typing import Any, Callable

import numpy as np

from dpcheck.checks import Check, combine, _jsonable
from dpcheck.errors import InputError

SCHEMA = "dpcheck.report/1"


@dataclass
class AuditOptions:
    """Everything the command line passes to an audit (DESIGN.md "Command line").

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
                 on_check: Callable[[dict], None] | None = None):
        self.target = target
        self.options = options
        self.checks: list[Check] = []
        self.config: dict[str, Any] = {}
        self._progress = progress
        self._on_check = on_check
        self.started = datetime.now(timezone.utc)
        self._t0 = time.perf_counter()

    # -- writing ---------------------------------------------------------------
    def add(self, check: Check) -> Check:
        if not isinstance(check, Check):
            raise TypeError(f"ctx.add expects a dpcheck.checks.Check, got {type(check).__name__}")
        self.checks.append(check)
        self.progress(f"{check.verdict.upper():12s} {check.id}: {check.reason}")
        if self._on_check is not None:
            self._on_check(self.report())
        return check

    def progress(self, msg: str) -> None:
        if self._progress is not None:
            self._progress(msg)

    # -- randomness and parallel work ---------------------------------------------
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

    def run_chunks(self, fn, n_chunks: int, *key, args=(), cache_key: str | None = None) -> list:
        from dpcheck.parallel import run_chunks
        o = self.options
        return run_chunks(fn, n_chunks, self.seed_sequence(*key), workers=o.workers, backend=o.backend,
                          scheduler=o.scheduler, args=args, cache_dir=o.cache_dir,
                          cache_key=(f"{self.target}:{o.seed}:{cache_key}" if cache_key else None))

    # -- the report ------------------------------------------------------------------
    def report(self, error: str | None = None) -> dict:
        verdicts = [c.verdict for c in self.checks]
        rep = {
            "schema": SCHEMA,
            "target": self.target,
            "dpcheck_version": _version(),
            "seed": int(self.options.seed),
            "alpha": float(self.options.alpha),
            "started": self.started.isoformat(timespec="seconds"),
            "duration_s": round(time.perf_counter() - self._t0, 3),
            "verdict": combine(verdicts),
            "options": self.options.to_dict(),
            "config": _jsonable(self.config),
            "checks": [c.to_dict() for c in self.checks],
        }
        if error is not None:
            rep["error"] = error
            rep["complete"] = False
            if rep["verdict"] == "pass":  # an unfinished audit cannot vouch for the checks it never ran
                rep["verdict"] = "inconclusive"
        else:
            rep["complete"] = True
        return rep


def _version() -> str:
    from dpcheck import __version__
    return __version__


def exit_code(report: dict, strict: bool = False) -> int:
    """0 all pass; 1 a violation (or, with --strict, an inconclusive check or no checks)."""
    v = report["verdict"]
    if v == "fail":
        return 1
    if strict and v != "pass":
        return 1
    return 0
