"""The Python API: everything ``dpcheck audit`` does, from Python (README "Python API").

    >>> import dpcheck
    >>> r = dpcheck.run("laplace_example", quick=True)
    >>> r.verdict, r.passed, r.exit_code()
    ('pass', True, 0)
    >>> r.write("reports")            # the JSON, Markdown, HTML and JUnit files, under the report lock

:func:`run` takes the command line's options as keyword arguments (``--set KEY=VALUE`` as
``options={"KEY": VALUE}``, ``--cache`` as ``cache``) and validates them exactly as the command line
does: the same parsers, the same refusal of an option the audit does not use, the same messages, raised
as :class:`dpcheck.errors.InputError` (the command line prints it and exits 2). The target is a
registered audit's name, ``path/to/file.py:NAME`` / ``pkg.module:NAME``, or an
:class:`~dpcheck.target.AuditTarget` object; ``privatizer`` is a name, a ``file.py:Class`` spec, or the
plug-in class itself.

With ``out=DIR`` the run streams its reports into DIR as the command line does (one run per report,
:mod:`dpcheck.report_lock`; a failed run leaves its finished checks there, marked incomplete). A run
that stops on bad input or a misbehaving mechanism raises; the exception carries the partial report as
``error.report`` (a :class:`Report`), so no finished check is lost. The command line (:mod:`dpcheck.cli`)
is a thin layer over this module: it adds signal handling and printing.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Mapping

from dpcheck.errors import DPCheckError, InputError

# what a user's AuditTarget (path.py:NAME) honours: no --privatizer, no --set keys
USER_TARGET_USES = ("epsilon", "delta", "samples", "seed", "alpha", "workers", "backend", "scheduler",
                    "quick", "cache_dir", "timeout", "sequential")
USER_QUICK_SAMPLES = 200_000


class Report:
    """One audit's report: the JSON document (``data``) and the files it was written to (``paths``)."""

    def __init__(self, data: dict, paths: Mapping[str, Path] | None = None, strict: bool = False):
        self.data = data
        self.paths = dict(paths or {})
        self.strict = strict

    @property
    def target(self) -> str:
        return self.data["target"]

    @property
    def verdict(self) -> str:
        """``pass``, ``fail`` or ``inconclusive`` (an incomplete run is never ``pass``)."""
        return self.data["verdict"]

    @property
    def complete(self) -> bool:
        return self.data.get("complete") is not False

    @property
    def checks(self) -> list[dict]:
        return list(self.data.get("checks", []))

    @property
    def config(self) -> dict:
        return dict(self.data.get("config", {}))

    @property
    def family(self) -> dict:
        return dict(self.data.get("family", {}))

    def check(self, check_id: str) -> dict:
        for c in self.checks:
            if c["id"] == check_id:
                return c
        raise KeyError(f"no check {check_id!r} in the report of {self.target} "
                       f"(checks: {', '.join(c['id'] for c in self.checks)})")

    def failures(self) -> list[dict]:
        return [c for c in self.checks if c["verdict"] == "fail"]

    def inconclusive(self) -> list[dict]:
        return [c for c in self.checks if c["verdict"] == "inconclusive"]

    def exit_code(self, strict: bool | None = None) -> int:
        """The command line's exit code: 0 pass (inconclusive too unless strict), 1 fail, 2 incomplete."""
        from dpcheck.context import exit_code
        return exit_code(self.data, strict=self.strict if strict is None else strict)

    @property
    def passed(self) -> bool:
        """True when the command line would exit 0 (with the run's ``strict`` setting)."""
        return self.exit_code() == 0

    def reason(self) -> str:
        """One paragraph on why the run did not pass (empty when it passed)."""
        if self.passed:
            return ""
        bad = self.failures() or (self.inconclusive() if self.strict or not self.complete else [])
        lines = [f"{self.target}: verdict {self.verdict}"
                 + ("" if self.complete else f" (incomplete: {self.data.get('error') or self.data.get('status')})")]
        lines += [f"  {c['verdict'].upper()} {c['id']}: {c.get('reason', '')}" for c in bad]
        if self.paths.get("json"):
            lines.append(f"  report: {self.paths['json']}")
        return "\n".join(lines)

    def summary(self) -> str:
        from dpcheck.report import summary_table
        return summary_table(self.data)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.data, indent=indent)

    def write(self, out_dir, stem: str | None = None) -> dict[str, Path]:
        """Write the JSON, Markdown, HTML and JUnit files into ``out_dir`` (under the report lock: a run
        writing the same files at the moment is refused with InputError). Returns their paths."""
        from dpcheck import report as rpt
        from dpcheck.report_lock import ReportLock
        out = Path(out_dir)
        stem = stem or report_stem(self.target)
        own = rpt.report_files(out, stem)
        holder = {"run_id": self.data.get("run_id", "?"), "target": self.target, "command": "write",
                  "started": self.data.get("started", "?")}
        try:
            out.mkdir(parents=True, exist_ok=True)
            with ReportLock(own, holder):
                rpt.remove_stale_temps(own)
                paths = rpt.write_all(self.data, out, stem=stem)
        except OSError as e:
            raise InputError(f"cannot write reports to {out}: {e}") from e
        self.paths = {k: Path(v) for k, v in paths.items()}
        return self.paths

    def __repr__(self) -> str:
        n = len(self.checks)
        return f"<dpcheck.Report {self.target}: {self.verdict}, {n} check{'s' * (n != 1)}>"


# ------------------------------------------------------------------ options (validated once, here)
def make_options(values: Mapping[str, Any], *, strict: bool = False, extra: Mapping[str, Any] | None = None,
                 force_workers: bool = False, default_workers: bool = False):
    """(AuditOptions, the set of option names given): ``values`` maps AuditOptions fields (the common
    options, dpcheck.options.COMMON) to what the caller gave; None means not given. Every value is
    parsed and the parallel options are checked for consistency. Which options the audit uses is
    checked later against its registration (AuditSpec.check_options).
    default_workers: when no workers are given, use the command line's default (dpcheck.options.default_workers:
    $DPCHECK_WORKERS, else every usable CPU) for local runs that are not sequential; otherwise 1."""
    import importlib.util
    from dpcheck.context import AuditOptions
    from dpcheck.options import COMMON, cpu_limit

    unknown = sorted(set(values) - set(COMMON))
    if unknown:
        raise InputError(f"unknown option(s) {', '.join(unknown)}; the options are {', '.join(COMMON)}")
    given = {name for name, v in values.items() if v is not None and v is not False}
    kw = {name: values[name] for name in given}
    options = AuditOptions(**kw, strict=bool(strict), extra=dict(extra or {}))
    if options.scheduler is not None and options.backend != "dask":
        raise InputError("--scheduler is the address of a dask scheduler: it needs --backend dask")
    if options.backend == "dask":
        if options.scheduler is not None and "workers" in given:
            raise InputError("--workers sets the size of a local dask cluster; with --scheduler the remote "
                             "cluster's workers run the chunks: drop --workers")
        if importlib.util.find_spec("distributed") is None:
            raise InputError("--backend dask needs dask.distributed: pip install 'dpcheck[dask]'")
    if default_workers and "workers" not in given and options.backend == "local" and not options.sequential:
        from dpcheck.options import default_workers as cli_default
        options.workers = cli_default()
    n_cpu = cpu_limit()
    if options.workers > n_cpu and not force_workers:
        raise InputError(f"--workers {options.workers} is more than the {n_cpu} CPU(s) this process may use "
                         f"(each worker is a process with its own memory): use --workers {n_cpu}, or add "
                         "--force-workers to start them anyway")
    if options.sequential:
        from dpcheck.sequential import check_options
        check_options(options.cache_dir, options.workers, options.backend, options.scheduler)
    if options.cache_dir is not None and Path(options.cache_dir).exists() and not Path(options.cache_dir).is_dir():
        raise InputError(f"--cache {options.cache_dir}: exists and is not a directory")
    return options, given


def privatizer_spec(privatizer) -> str | None:
    """A plug-in class (or instance's class) as the ``file.py:Class`` spec the audits load in every
    worker; names and specs pass through."""
    if privatizer is None or isinstance(privatizer, str):
        return privatizer
    import inspect
    cls = privatizer if isinstance(privatizer, type) else type(privatizer)
    if not isinstance(privatizer, type):
        raise InputError(f"privatizer={privatizer!r}: pass the class ({cls.__name__}), not an instance: each "
                         "run constructs its own with the audit's epsilon")
    if "<locals>" in cls.__qualname__:
        raise InputError(f"privatizer {cls.__qualname__}: a class defined inside a function cannot be loaded "
                         "by the audit's workers; define it at module level")
    try:
        path = inspect.getsourcefile(cls)
    except TypeError:
        path = None
    if path is None or cls.__module__ == "__main__":
        raise InputError(f"privatizer {cls.__qualname__}: define it in a module file (the audit loads it as "
                         "file.py:Class), not in __main__ or an interactive session")
    return f"{path}:{cls.__qualname__}"


# ------------------------------------------------------------------ targets
def load_object(spec: str):
    """Load ``path/to/file.py:NAME`` or ``pkg.module:NAME`` with clear errors."""
    from dpcheck.loading import load_object as _load
    if ":" not in spec:
        raise InputError(f"{spec!r} is neither a registered audit nor of the form path.py:NAME or pkg.module:NAME")
    return _load(spec, "target")


def resolve_target(spec: str):
    """A user's AuditTarget, or a zero-argument function returning one."""
    obj = load_object(spec)
    return _as_target(obj, spec)


def _as_target(obj, label: str):
    from dpcheck.target import AuditTarget
    if not isinstance(obj, AuditTarget) and callable(obj) and not isinstance(obj, type):
        from dpcheck.loading import raised_text
        try:
            obj = obj()
        except DPCheckError:
            raise
        except (Exception, SystemExit) as e:      # a factory is user code: sys.exit in it is bad input too
            raise InputError(f"{label} is not an AuditTarget nor a zero-argument function returning one ({e})"
                             if isinstance(e, TypeError) else f"{label}() raised {raised_text(e)}") from e
    if not isinstance(obj, AuditTarget):
        raise InputError(f"{label} is a {type(obj).__name__}, not a dpcheck.AuditTarget "
                         "(nor a zero-argument function returning one)")
    return obj


def _user_target_audit(target):
    """run(ctx) for a user's AuditTarget: one black-box privacy check."""
    def run(ctx):
        from dataclasses import replace
        from dpcheck.options import DEFAULT_USER_TIMEOUT
        from dpcheck.sequential import audit      # dpcheck.blackbox.audit unless --sequential
        o = ctx.options
        # a hanging mechanism is stopped after --timeout seconds per call (dpcheck.target.call_with_deadline)
        t = replace(target, timeout=o.timeout if o.timeout is not None else DEFAULT_USER_TIMEOUT)
        if o.epsilon is not None or o.delta is not None:
            claim = t.claim
            if o.epsilon is not None:
                claim = replace(claim, epsilon=o.epsilon)
            if o.delta is not None:
                claim = replace(claim, delta=o.delta)
            t = replace(t, claim=claim)
        ctx.config["claim"] = t.claim.to_dict()
        ctx.config["timeout_s_per_call"] = t.timeout
        kw = dict(alpha=o.alpha, seed=o.seed, workers=o.workers, backend=o.backend, scheduler=o.scheduler,
                  progress=ctx.progress, cache_dir=o.cache_dir, sequential=bool(o.sequential))
        if o.samples is not None:
            kw["samples"] = o.samples
        elif o.quick:
            kw["samples"] = USER_QUICK_SAMPLES
        res = audit(t, **kw)
        ctx.add(res.to_check(id="privacy.blackbox"))
    return run


def user_target_spec(name: str, target=None):
    """The registration a user's AuditTarget gets: black box, USER_TARGET_USES, no --set keys."""
    from dpcheck.registry import AuditSpec
    claim = target.claim.describe() if target is not None else "the target's own Claim"
    return AuditSpec(name=name, run=_user_target_audit(target) if target is not None else (lambda ctx: None),
                     algorithm="user AuditTarget", notion=getattr(getattr(target, "claim", None), "notion", "DP"),
                     claim=claim, uses=USER_TARGET_USES)


def resolve(target, options, given):
    """(name, AuditSpec) of ``target``: a registered name, ``file.py:NAME`` / ``pkg.mod:NAME``, or an
    AuditTarget object; the options checked against what the audit uses."""
    from dpcheck import registry
    from dpcheck.target import AuditTarget
    if isinstance(target, AuditTarget):
        name = target.name
        spec = user_target_spec(name, target)
    elif isinstance(target, str):
        found = registry.find(target) if ":" not in target else None
        if found is not None:
            name, spec = target, found
        elif ":" in target:
            user_target_spec(target).check_options(options, given)   # before importing the user's file
            name, spec = target, user_target_spec(target, resolve_target(target))
        else:
            known = ", ".join(sorted(registry.load())) or "(none)"
            raise InputError(f"no audit named {target!r} (registered: {known}); "
                             "for your own mechanism use path/to/file.py:NAME")
    else:
        raise InputError(f"target must be an audit name, 'path.py:NAME' or a dpcheck.AuditTarget, got "
                         f"{type(target).__name__}")
    spec.check_options(options, given)
    return name, spec


def report_stem(name: str) -> str:
    """The file stem of a target's reports: the audit's name, or ``module-object`` for a user's file."""
    from dpcheck import report as rpt
    if ":" in name:
        mod, _, obj = name.rpartition(":")
        return rpt.stem_for(f"{Path(mod).stem if mod.endswith('.py') else mod}-{obj}")
    return rpt.stem_for(name)


def with_memory_limit(run, memory_limit, warm_up: tuple | None = None):
    """``run(ctx)`` with the memory limit in force for every black-box draw it makes; with ``warm_up`` = (workers,
    modules), the worker pool is started first (dpcheck.parallel.prestart: the workers' start-up overlaps the
    audit's own set-up instead of delaying its first pass) and no warm-up task is left waiting after it."""
    def limited(ctx):
        from dpcheck import parallel
        from dpcheck.limits import memory_limit_set
        if warm_up is not None:
            parallel.prestart(*warm_up)
        try:
            with memory_limit_set(memory_limit):
                return run(ctx)
        finally:
            parallel.drain_prestart()
    return limited


def _warm_up(target, options) -> tuple | None:
    """(workers, (the audit's module,)) for :func:`with_memory_limit` when a registered audit runs on more than one
    local worker, else None. Started with the run itself, not before: a run refused for its options or by the
    report lock starts no workers."""
    if not (options.workers > 1 and options.backend == "local" and isinstance(target, str) and ":" not in target):
        return None
    from dpcheck import registry
    module = registry.module_of(target)
    return (options.workers, (module,)) if module is not None else None


class Run:
    """One prepared audit run: validated options, the resolved audit, its context and (with ``out``)
    its report writer. :meth:`execute` runs it under the report lock."""

    def __init__(self, target, values: Mapping[str, Any], *, strict=False, extra=None, force_workers=False,
                 memory_limit=None, out=None, json_path=None, progress: Callable[[str], None] | None = None,
                 default_workers: bool = False):
        from dpcheck import report as rpt
        from dpcheck.context import AuditContext
        from dpcheck.options import parse_size
        self.options, given = make_options(values, strict=strict, extra=extra, force_workers=force_workers,
                                           default_workers=default_workers)
        limit = parse_size(memory_limit) if memory_limit is not None else None
        self.name, self.spec = resolve(target, self.options, given)
        self.run = with_memory_limit(self.spec.run, limit, _warm_up(target, self.options))
        self.out = Path(out) if out is not None else None
        self.stem = report_stem(self.name)
        self.writer = (rpt.ReportWriter(self.out, self.stem, json_path, plots=self._plot_prefetch())
                       if self.out is not None else None)
        self.stream_failed: list[OSError] = []
        self.ctx = AuditContext(self.name, self.options, progress=progress,
                                on_check=self._stream if self.writer is not None else None)
        self.paths: dict = {}

    def _plot_prefetch(self):
        """With more than one local worker, the HTML's plots are rendered in a side process as the checks
        arrive (dpcheck.sidework); with one, at the end in this process, as always."""
        o = self.options
        if o.workers > 1 and o.backend == "local":
            from dpcheck.sidework import PlotPrefetch
            return PlotPrefetch()
        return None

    def _stream(self, rep):   # the report so far (status running, never pass) after every finished check
        try:
            self.writer.stream(rep)
        except OSError as e:  # the last streamed report stays, still marked incomplete
            if not self.stream_failed:
                self.stream_failed.append(e)
                self.ctx.progress(f"warning: cannot update the reports in {self.out}: {e}")

    def lock(self):
        """The report lock of this run's files (a no-op without ``out``)."""
        import contextlib
        from dpcheck import report as rpt
        from dpcheck.report_lock import ReportLock
        if self.writer is None:
            return contextlib.nullcontext()
        own = rpt.report_files(self.out, self.stem) + ([self.writer.copy] if self.writer.copy is not None else [])
        ctx = self.ctx
        return ReportLock(own, {"run_id": ctx.run_id, "started": ctx.started.isoformat(timespec="seconds"),
                                "target": self.name, "command": "audit"})

    def begin(self) -> None:
        from dpcheck import report as rpt
        if self.writer is None:
            return
        rpt.remove_stale_temps(rpt.report_files(self.out, self.stem)
                               + ([self.writer.copy] if self.writer.copy is not None else []))
        try:
            self.writer.begin(self.ctx.report(status="running"))
        except OSError as e:
            raise Unwritable(f"cannot write reports to {self.out}: {e}") from e

    def finish(self, rep: dict) -> Report:
        if self.writer is not None:
            try:
                self.paths = self.writer.finish(rep)
            except OSError as e:
                raise InputError(f"cannot write reports to {self.out}: {e}") from e
        return Report(rep, self.paths, strict=self.options.strict)


class Unwritable(InputError):
    """The report folder cannot be written at the start of a run: say so, run nothing."""


def run(target, *, epsilon=None, delta=None, privatizer=None, samples=None, seed=None, alpha=None,
        workers=None, backend=None, scheduler=None, timeout=None, quick=False, strict=False, cache=None,
        options: Mapping[str, Any] | None = None, memory_limit=None, force_workers=False, out=None,
        json_path=None, progress: Callable[[str], None] | None = None, sequential=False) -> Report:
    """Run one audit and return its :class:`Report` (the command line's ``dpcheck audit``).

    ``target``: a registered audit (``"dp_nash_vi"``), ``"path/to/file.py:NAME"`` or an AuditTarget.
    The keyword arguments are the command line's options (``options`` holds the ``--set`` keys,
    ``cache`` is ``--cache DIR``, ``sequential=True`` is ``--sequential``); an option the audit does not use is an InputError, as on the command
    line. ``out``: also write the reports into this folder while the run goes (else nothing is written;
    :meth:`Report.write` writes later). ``progress``: called with each progress line.

    Raises InputError / MechanismError (dpcheck.errors) for bad input or a misbehaving mechanism; the
    exception's ``report`` attribute holds the partial report (finished checks kept, marked incomplete).
    """
    for flag, v in (("quick", quick), ("strict", strict), ("sequential", sequential), ("force_workers", force_workers)):
        if not isinstance(v, bool) and type(v).__name__ != "bool_":      # quick="no" must not read as True
            raise InputError(f"{flag} must be True or False, got {v!r}")
    values = dict(epsilon=epsilon, delta=delta, privatizer=privatizer_spec(privatizer), samples=samples,
                  seed=seed, alpha=alpha, workers=workers, backend=backend, scheduler=scheduler,
                  timeout=timeout, quick=bool(quick), cache_dir=None if cache is None else str(cache),
                  sequential=bool(sequential))
    r = Run(target, values, strict=strict, extra=_set_text(options), force_workers=force_workers,
            memory_limit=memory_limit, out=out, json_path=json_path, progress=progress)
    with r.lock():
        r.begin()
        try:
            r.run(r.ctx)
        except BaseException as e:
            interrupted = isinstance(e, KeyboardInterrupt)
            if interrupted or isinstance(e, (Exception, SystemExit)):
                stop_workers()
                msg = "interrupted" if interrupted else one_line(e)
                partial = r.finish(r.ctx.report(error=msg, status="interrupted" if interrupted else "error"))
                try:
                    e.report = partial
                except (AttributeError, TypeError):
                    pass
            raise
        return r.finish(r.ctx.report())


def _set_text(options: Mapping[str, Any] | None) -> dict:
    """``options={"mode": "theory", "beta": 0.1}`` as the ``--set`` table's raw text (parsed by the audit's
    table exactly as ``--set KEY=VALUE`` is)."""
    from dpcheck.options import split_set
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise InputError(f"options must be a mapping of --set keys to values, got {type(options).__name__}")
    return split_set([f"{k}={v}" for k, v in options.items()])


def one_line(e: BaseException) -> str:
    """An error as one line for the user (the traceback only with --debug)."""
    if isinstance(e, DPCheckError):
        return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    if isinstance(e, SystemExit):           # sys.exit in code we did not wrap: not our exit
        return f"sys.exit({e.code!r}) was called during the run"
    text = str(e).strip().splitlines()
    hint = (": an option value (--epsilon, a --set budget) is probably outside the range this audit can compute "
            "with" if isinstance(e, OverflowError) else "")
    return (f"internal error: {type(e).__name__}: {text[0] if text else ''}{hint} (run with --debug for the "
            "traceback)")


def stop_workers() -> None:
    """Kill joblib's loky worker processes (an interrupted run must leave none computing).

    joblib aborts the Parallel call an exception passes through; its reusable executor may
    still hold workers (idle, or busy with a task of an aborted call), so shut it down too.
    """
    try:
        from joblib.externals.loky import reusable_executor
    except ImportError:
        return
    ex = getattr(reusable_executor, "_executor", None)
    if ex is None:
        return
    try:
        ex.shutdown(wait=True, kill_workers=True)
    except Exception:  # best effort: the run is already ending with an error
        pass
