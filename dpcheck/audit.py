"""The shape every algorithm audit takes: a claim table, an options table, and ``run``.

An audit turns a paper's claims into checks. A reader should go from a theorem in the paper to the
check that tests it in one hop, so an audit is a class whose top is its **claim table**: one
:class:`ClaimRow` per check id, with the paper's statement, where the paper says it (paper, theorem
/ lemma / equation), and the method of the class that checks it. ``dpcheck list --claims NAME``
prints the table; every check the audit adds gets its row's source and statement in its ``claim``
(``claim["table"]``), and a check id that is not in the table is a programming error.

What every audit repeats lives here, once:

* :class:`ExecutionOptions` -- alpha, seed, samples, workers, backend, scheduler, cache, progress,
  quick -- validated at the command line and handed whole to every black-box call
  (:meth:`Audit.blackbox`), so ``--cache``, ``--workers`` and ``--backend dask`` reach all of them;
* the defaults (:class:`Defaults`: epsilon and the samples pair, declared beside the claim table and
  resolved here once: ``self.epsilon``, :meth:`Audit.samples`);
* the ``--set`` table (``options``, a tuple of :class:`dpcheck.options.SetOption`) parsed into a frozen
  dataclass, ``self.params`` (``self.params.calibration``, ...);
* per-step seeding from the one seed (:meth:`Audit.seed_sequence`, :meth:`Audit.rng`,
  :meth:`Audit.int_seed`);
* theory vs practical mode: :meth:`Audit.soften` turns a practical-mode miss (constants below the
  paper's, no guarantee) into "inconclusive"; :meth:`Audit.vacuous` marks a pass that holds only
  trivially (shown as "PASS (vacuous)" in every report);
* the config record (``self.config``) and progress lines (:meth:`Audit.progress`).

Slope / interval verdicts are :func:`dpcheck.regret.slope_verdict` (one helper for every rate check).

A new audit is a short declaration (docs/interfaces.md "How to add an algorithm audit"): a subclass with
``name``, ``algorithm``, ``notion``, ``summary``, ``uses`` and the claim table ``claims``, a ``run`` that
``self.add``s one check per claim, and ``register()``. audits/examples.py (``LaplaceExample``) is
the template.

``dpcheck`` imports no algorithm: an audit module imports :mod:`dpcheck`, never the reverse; audits
are found through the ``dpcheck.audits`` entry-point group (:mod:`dpcheck.registry`).
"""
from __future__ import annotations

import abc
import importlib
from dataclasses import dataclass, replace
from typing import Callable, ClassVar

import numpy as np

from dpcheck.checks import Check, soften, vacuous
from dpcheck.options import SetOption

KINDS = ("privacy", "assumption", "regret", "whitebox")


@dataclass(frozen=True)
class ClaimRow:
    """One row of an audit's claim table.

    id:        the check id it produces (dotted: ``kind.what[.variant]``, docs/interfaces.md "Check ids");
               a trailing ``*`` matches a family (``privacy.blackbox*``).
    kind:      privacy | assumption | regret | whitebox.
    statement: what the paper claims, in its words (formulas as in the paper).
    source:    where: paper, theorem / lemma / equation.
    method:    the name of the method of the audit class that checks it, or a dotted name of the function that
               does (checked at registration: :func:`resolve_method`; ``gfa.regret_checks`` is that function of
               audits/lib/gfa/).
    tests:     how many checks of this row decide from samples and so can err by chance (each is run at
               the audit's alpha / family size, :meth:`Audit.family_size`); 1 by default, which is
               conservative for an exact row (an invariant, exact accounting: it cannot err by chance); a
               wildcard row that yields k such checks says k.
    """

    id: str
    kind: str
    statement: str
    source: str
    method: str
    tests: int = 1

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"ClaimRow {self.id!r}: kind must be one of {KINDS}, got {self.kind!r}")
        if not isinstance(self.tests, int) or self.tests < 0:
            raise ValueError(f"ClaimRow {self.id!r}: tests must be a whole number >= 0, got {self.tests!r}")

    def matches(self, check_id: str) -> bool:
        return check_id == self.id or (self.id.endswith("*") and check_id.startswith(self.id[:-1]))

    def to_dict(self) -> dict:
        return {"id": self.id, "kind": self.kind, "statement": self.statement, "source": self.source,
                "method": self.method, "tests": self.tests}


@dataclass(frozen=True)
class ExecutionOptions:
    """How an audit runs (not what it claims): validated once at the command line, passed whole.

    alpha:     error probability of each check: the run's --alpha divided by the audit's family size
               (:meth:`Audit.family_size`), so that all checks together FAIL a correct implementation with
               probability <= --alpha (Bonferroni); seed: fixes everything; samples: black-box outputs
    per input of each pair (None: the audit's default); workers / backend / scheduler: dpcheck.parallel;
    cache_dir: stream finished chunks there and resume; quick: the reduced CI run; progress: the
    progress-line callback; sequential: black boxes run the anytime-valid test of dpcheck.sequential
    (only for audits that declare "sequential" in ``uses``).
    """

    alpha: float = 0.05
    seed: int = 0
    samples: int | None = None
    workers: int = 1
    backend: str = "local"
    scheduler: str | None = None
    cache_dir: str | None = None
    quick: bool = False
    progress: Callable[[str], None] | None = None
    sequential: bool = False

    @classmethod
    def from_context(cls, ctx) -> "ExecutionOptions":
        o = ctx.options
        return cls(alpha=float(o.alpha), seed=int(o.seed), samples=o.samples, workers=int(o.workers),
                   backend=o.backend, scheduler=o.scheduler, cache_dir=o.cache_dir, quick=bool(o.quick),
                   progress=ctx.progress, sequential=bool(getattr(o, "sequential", False)))

    def parallel(self) -> dict:
        """The keyword arguments every dpcheck.parallel / dpcheck.blackbox call takes."""
        return dict(workers=self.workers, backend=self.backend, scheduler=self.scheduler,
                    cache_dir=self.cache_dir, progress=self.progress)

    def pick(self, default, quick):
        """``quick`` under --quick, else ``default`` (sizes of every part of an audit)."""
        return quick if self.quick else default

    def audit(self, target, samples: int, seed: int | None = None):
        """:func:`dpcheck.blackbox.audit` of ``target`` with these options (alpha, seed unless ``seed`` is
        given, workers / backend / scheduler / cache / progress): how a library check runs its black box. The
        mechanism is the implementation under audit: whether its outputs depend on its generator is a finding about
        it (a verdict), not bad input (``probe="rng"``, :func:`dpcheck.probe.rng_finding`)."""
        from dpcheck.sequential import audit      # dpcheck.blackbox.audit unless --sequential
        return audit(target, samples=int(samples), alpha=self.alpha, seed=self.seed if seed is None else int(seed),
                     sequential=self.sequential, probe="rng", **self.parallel())

    def budget(self, pair) -> int:
        """Black-box outputs per input: --samples if given, else ``pair`` = (default, --quick) -- the one
        place a samples default is resolved (an audit's pair is its :class:`Defaults`)."""
        return int(self.samples) if self.samples is not None else int(self.pick(*pair))


@dataclass(frozen=True)
class Defaults:
    """What an audit uses for an option the command line does not give, declared beside its claim table
    (``defaults = Defaults(epsilon=1.0, samples=(200_000, 20_000))``) and resolved in one place
    (:class:`Audit`: ``self.epsilon``, :meth:`Audit.samples`).

    epsilon:     the claim's epsilon without --epsilon (None: the audit's budget is another parameter,
                 e.g. rho); validated by the same parser as --epsilon (dpcheck.options.parse_epsilon).
    samples:     (default, --quick) black-box outputs per input of each pair without --samples.
    samples_for: ((check id, (default, --quick)), ...): checks run at their own budget (the audit's
                 comment says why); --samples overrides every one.
    """

    epsilon: float | None = None
    samples: tuple[int, int] | None = None
    samples_for: tuple = ()

    def __post_init__(self):
        from dpcheck.options import parse_epsilon, parse_samples
        if self.epsilon is not None:
            object.__setattr__(self, "epsilon", parse_epsilon(self.epsilon))
        pairs = ([self.samples] if self.samples is not None else []) + [p for _, p in self.samples_for]
        for pair in pairs:
            if len(pair) != 2:
                raise ValueError(f"Defaults: a samples default is a (default, --quick) pair, got {pair!r}")
            for n in pair:
                parse_samples(n)

    def samples_of(self, check_id: str | None = None) -> tuple[int, int]:
        """The (default, --quick) pair of ``check_id`` (its own if declared, else the audit's)."""
        own = dict(self.samples_for).get(check_id)
        if own is not None:
            return own
        if self.samples is None:
            raise ValueError("this audit declares no samples default (Defaults.samples)")
        return self.samples


class Audit(abc.ABC):
    """Base class of an algorithm audit (module docstring). Subclasses declare the class attributes
    below and implement :meth:`run`; ``register()`` makes them ``dpcheck audit NAME``."""

    name: ClassVar[str]
    algorithm: ClassVar[str]
    notion: ClassVar[str]
    summary: ClassVar[str]                      # the one-line claim ``dpcheck list`` shows
    claims: ClassVar[tuple[ClaimRow, ...]] = ()
    defaults: ClassVar["Defaults"] = None       # epsilon and samples without --epsilon / --samples
    options: ClassVar[tuple[SetOption, ...]] = ()  # the --set table
    uses: ClassVar[tuple[str, ...]] = ("seed", "alpha")
    privatizers: ClassVar[tuple[str, ...]] = ()
    plugin_privatizers: ClassVar[bool] = True    # False: --privatizer takes only the names in ``privatizers``

    def __init__(self, ctx):
        self.ctx = ctx
        # --alpha bounds the probability that ANY check fails a correct implementation: each of the
        # family's checks runs at alpha / family size (Bonferroni; docs/interfaces.md "Family-wise error")
        m = self.family_size()
        exe = ExecutionOptions.from_context(ctx)
        self.exe = replace(exe, alpha=exe.alpha / m)
        ctx.family = {"alpha": exe.alpha, "tests": m, "alpha_per_check": self.exe.alpha}
        self.opts = ctx.options                  # the parsed command-line values (epsilon, privatizer, ...)
        # --epsilon (parsed and validated once, dpcheck.options) or the audit's declared default
        d = self.defaults or Defaults()
        self.epsilon = ctx.options.epsilon if ctx.options.epsilon is not None else d.epsilon
        # the --set values as the audit's options dataclass (one field per SetOption; None: not given and
        # no default). Parsed again here so a library caller's raw AuditOptions(extra=...) is typed too.
        from dpcheck.options import options_dataclass, parse_set
        parsed = parse_set(self.options, dict(ctx.options.extra or {}), self.name)
        self.params = options_dataclass(f"{type(self).__name__}Options", self.options)(**parsed)
        self.config = ctx.config

    # -- what a subclass writes ------------------------------------------------------------
    @abc.abstractmethod
    def run(self) -> None:
        """Add every check with :meth:`add` as soon as it is finished."""

    # -- registration ----------------------------------------------------------------------
    @classmethod
    def register(cls, *, validate: Callable | None = None, wrap: Callable | None = None) -> type:
        """Register the audit under ``cls.name`` (dpcheck.registry), its claim table with it.

        ``wrap``: a decorator for the run function (e.g. dpcheck.parallel.with_result_cache)."""
        from dpcheck.registry import register
        cls.check_table()

        def run(ctx):
            from dpcheck.stats import pass_level
            audit = cls(ctx)
            with pass_level(ctx.family["alpha"]):    # PASS at the audit's alpha, FAIL at its share (stats)
                return audit.run()
        run.__name__ = run.__qualname__ = f"{cls.__name__}.run"
        run.__module__ = cls.__module__
        if wrap is not None:
            run = wrap(run)
        register(cls.name, algorithm=cls.algorithm, notion=cls.notion, claim=cls.summary,
                 privatizers=cls.privatizers, plugin_privatizers=cls.plugin_privatizers, uses=cls.uses, options=cls.options,
                 validate=validate, claims=cls.claims)(run)
        return cls

    @classmethod
    def check_table(cls) -> None:
        ids = [r.id for r in cls.claims]
        if len(set(ids)) != len(ids):
            raise ValueError(f"audit {cls.__name__}: duplicate ids in its claim table: {ids}")
        for r in cls.claims:
            if "." not in r.method:
                if not callable(getattr(cls, r.method, None)):
                    raise ValueError(f"audit {cls.__name__}: claim {r.id!r} names the method {r.method!r}, "
                                     "which it does not have")
            elif resolve_method(r.method, cls.__module__) is None:
                tried = ", ".join(method_candidates(r.method, cls.__module__))
                raise ValueError(f"audit {cls.__name__}: claim {r.id!r} names the function {r.method!r}, which "
                                 f"does not exist (looked for {tried})")

    @classmethod
    def family_size(cls) -> int:
        """The number of checks that can err by chance: the sum of the claim table's ``tests``."""
        return max(1, sum(r.tests for r in cls.claims))

    @classmethod
    def row(cls, check_id: str) -> ClaimRow | None:
        return next((r for r in cls.claims if r.matches(check_id)), None)

    def samples(self, check_id: str | None = None) -> int:
        """Black-box outputs per input for ``check_id``: --samples, else the audit's declared pair."""
        return self.exe.budget((self.defaults or Defaults()).samples_of(check_id))

    # -- writing checks --------------------------------------------------------------------
    def add(self, check: Check) -> Check:
        """Add a finished check; its claim-table row goes into ``claim["table"]``."""
        row = self.row(check.id)
        if row is None:
            raise ValueError(f"audit {self.name}: check {check.id!r} is not in its claim table")
        claim = dict(check.claim) if isinstance(check.claim, dict) else {"statement": str(check.claim)}
        claim["table"] = {"statement": row.statement, "source": row.source, "method": row.method}
        return self.ctx.add(replace(check, claim=claim))

    def add_or_note(self, check: Check | None, key: str, note: str) -> Check | None:
        """:meth:`add` ``check``; a check this configuration cannot run (None) leaves ``note``, why not, in the
        config under ``key`` instead, so that the report says what was not checked."""
        if check is None:
            self.config[key] = note
            return None
        return self.add(check)

    def progress(self, msg: str) -> None:
        self.ctx.progress(msg)

    # -- randomness: everything from the one --seed -----------------------------------------
    def seed_sequence(self, *key) -> np.random.SeedSequence:
        """A child seed that depends only on --seed and ``key`` (ints or strings)."""
        return self.ctx.seed_sequence(*key)

    def rng(self, *key) -> np.random.Generator:
        return self.ctx.rng(*key)

    def int_seed(self, *key) -> int:
        """An integer seed derived from --seed and ``key`` (for APIs that take an int)."""
        return int(self.seed_sequence(*key).generate_state(1)[0])

    # -- the black-box runner --------------------------------------------------------------
    def blackbox(self, target, *, id: str, samples: int, seed: int | None = None, claim_source: str | None = None,
                 kind: str = "privacy"):
        """Audit ``target`` black box with the run's execution options; returns (Check, AuditResult)."""
        res = self.exe.audit(target, samples, seed)
        src = claim_source if claim_source is not None else getattr(target.claim, "source", None)
        return res.to_check(id=id, kind=kind, claim_source=src), res

    # -- theory vs practical mode ----------------------------------------------------------
    @staticmethod
    def soften(check: Check, practical: bool = True) -> Check:
        """A miss in practical mode (constants below the paper's: no guarantee) is evidence, not a
        violation: FAIL becomes INCONCLUSIVE, and the check says why (the one rule:
        :func:`dpcheck.checks.soften`)."""
        return soften(check, "practical mode (no guarantee)" if practical else None,
                      note="practical mode: constants below the theory values, the claim is not guaranteed")

    #: a check that holds only trivially: :func:`dpcheck.checks.vacuous` (the one rule; a FAIL stays a FAIL)
    vacuous = staticmethod(vacuous)

    # -- describing the audit --------------------------------------------------------------
    @classmethod
    def claim_table(cls) -> list[dict]:
        return [r.to_dict() for r in cls.claims]


def method_candidates(method: str, module: str) -> list[str]:
    """Where a dotted claim-table method is looked for, in order: relative to the package of the audit's
    module (``lib.nash.regret_checks`` from dpcheck.audits.dp_nash_vi), relative to that package's ``lib``
    (where the reusable checks live: ``gfa.regret_checks`` is audits/lib/gfa/), then as an absolute name
    (``dpcheck.audits.lib.mine.regret_checks``)."""
    package = module.rpartition(".")[0]
    return [f"{package}.{method}", f"{package}.lib.{method}", method] if package else [method]


def resolve_method(method: str, module: str) -> Callable | None:
    """The callable a dotted claim-table method names (:func:`method_candidates`, first match), or None.

    Imports the module part of each candidate; a module that exists but fails to import raises (that is
    not a misspelt name and must not be reported as one)."""
    for full in method_candidates(method, module):
        parts = full.split(".")
        for i in range(len(parts) - 1, 0, -1):
            name = ".".join(parts[:i])
            try:
                obj = importlib.import_module(name)
            except ModuleNotFoundError as e:
                if e.name and (name == e.name or name.startswith(e.name + ".")):
                    continue                    # this prefix is no module: try a shorter one
                raise
            for attr in parts[i:]:
                obj = getattr(obj, attr, None)
            if callable(obj):
                return obj
            break                               # the longest module prefix decides this candidate
    return None


def format_claim_table(name: str, rows: list[dict]) -> str:
    """The claim table as ``dpcheck list --claims NAME`` prints it: per check, the paper's statement, then
    its source and the function that checks it on an indented line (nothing cut off)."""
    if not rows:
        return f"{name}: no claim table"
    idw = max(len(r["id"]) for r in rows)
    kw = max(len(r["kind"]) for r in rows)
    pad = " " * (idw + kw + 4)
    out = [f"{'check':{idw}s}  {'kind':{kw}s}  claim", f"{pad}source  [checked by]"]
    for r in rows:
        out.append(f"{r['id']:{idw}s}  {r['kind']:{kw}s}  {r['statement']}")
        out.append(f"{pad}{r['source']}  [{r['method']}]")
    return "\n".join(out)


__all__ = ["Audit", "ClaimRow", "Defaults", "ExecutionOptions", "format_claim_table", "KINDS"]


class _CallableModule(type(abc)):
    """``dpcheck.audit`` is both the black-box audit function (``dpcheck.audit(target, ...)``, the
    public API) and this module: importing the module sets the package attribute to it, so the
    module forwards calls to :func:`dpcheck.sequential.audit` (the batch black box, ``sequential=True``
    the sequential one; a target's ``search`` first) and the documented call keeps working."""

    def __call__(self, target, *args, **kwargs):
        from dpcheck.sequential import audit
        return audit(target, *args, **kwargs)


import sys as _sys  # noqa: E402

_sys.modules[__name__].__class__ = _CallableModule
