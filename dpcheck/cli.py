"""The ``dpcheck`` command line: list, audit, report (the public contract; README "Commands").

    dpcheck list [--options NAME]
    dpcheck audit TARGET [--epsilon E] [--delta D] [--privatizer P] [--samples N] [--seed S]
                         [--alpha A] [--workers W] [--force-workers] [--backend local|dask]
                         [--scheduler ADDR] [--timeout SECONDS] [--memory-limit SIZE]
                         [--out DIR] [--json PATH] [--quick] [--strict] [--cache DIR]
                         [--set KEY=VALUE ...] [--debug] [--quiet]
    dpcheck report FILE.json [--out DIR]        (into another DIR: the JSON too, so DIR holds one run's set)

Every option is parsed once, before the audit starts (dpcheck.options); a bad value, an option
the audit does not use, or an unknown ``--set`` key is one line on stderr and exit 2.

Exit codes: 0 every check passes (inconclusive ones too, unless --strict); 1 a
violation was found; 2 usage error, bad input, internal error or an interrupted
run (one clear line on stderr; the traceback only with --debug).

Interruption: SIGTERM is handled like SIGINT. The run stops, joblib's worker
processes are killed, and the reports are written marked incomplete
(``status: interrupted``, never the verdict pass); exit 2. While the checks run,
the JSON and JUnit on disk say ``status: running``; a SIGKILL leaves them so.
The write order that keeps the files of one report consistent at every moment
is described in :mod:`dpcheck.report`. One run at a time writes a report's files
(:mod:`dpcheck.report_lock`): a second ``audit`` or ``report`` into them exits 2,
naming the first, before writing anything.
"""
from __future__ import annotations

import argparse
import re
import sys
import time
import traceback
from pathlib import Path

from dpcheck.errors import DPCheckError, InputError

EXIT_PASS, EXIT_FAIL, EXIT_ERROR = 0, 1, 2
_COUNTER = re.compile(r"(\d+)/(\d+)")

# what a user's AuditTarget (path.py:NAME) honours: no --privatizer, no --set keys
USER_TARGET_USES = ("epsilon", "delta", "samples", "seed", "alpha", "workers", "backend", "scheduler",
                    "quick", "cache_dir", "timeout")
USER_QUICK_SAMPLES = 200_000


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one clear line, exit 2 (argparse's own convention too)
        print(f"dpcheck: error: {message} (see '{self.prog} --help')", file=sys.stderr)
        sys.exit(EXIT_ERROR)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="dpcheck", description="Verify the privacy, assumption and regret claims of "
                "differentially private RL algorithms and mechanisms.")
    p.add_argument("--version", action="version", version=f"dpcheck {_version()}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    ls = sub.add_parser("list", help="list the registered audits")
    ls.add_argument("--options", metavar="NAME", dest="options_of",
                    help="the options and --set keys audit NAME uses (NAME may also be path.py:OBJ)")
    ls.add_argument("--claims", metavar="NAME", dest="claims_of",
                    help="audit NAME's claim table: each check id with the paper's statement, its source and "
                         "the method that checks it")

    a = sub.add_parser("audit", help="audit a registered algorithm or a user target (path.py:NAME, pkg.mod:NAME)",
                       description="An option the audit does not use is an error (exit 2); "
                                   "'dpcheck list --options NAME' shows the ones it uses and its --set keys.")
    a.add_argument("target", help="registered audit name, path/to/file.py:NAME or pkg.module:NAME")
    a.add_argument("--epsilon", metavar="E",
                   help="privacy budget to run and check at (overrides the default / the target's claim)")
    a.add_argument("--delta", metavar="D",
                   help="delta of an approximate-DP claim, in [0, 1) (only audits whose claim has one)")
    a.add_argument("--privatizer", metavar="P",
                   help="central | local | none | path/to/file.py:CLASS (algorithm audits only)")
    a.add_argument("--samples", metavar="N", help="outputs drawn per input of each neighbouring pair (selection and "
                   "certification together); an integer (1e6 allowed) in [20, 1e12]")
    a.add_argument("--seed", metavar="S", help="one seed fixes everything, in [0, 2^32 - 1] (default 0)")
    a.add_argument("--alpha", metavar="A", help="error probability of each check, in (0, 1) (default 0.05)")
    a.add_argument("--workers", metavar="W", help="parallel worker processes (default 1; at most the number of CPUs "
                   "unless --force-workers)")
    a.add_argument("--force-workers", action="store_true", help="allow --workers above the number of CPUs")
    a.add_argument("--backend", choices=("local", "dask"), help="local (default) or dask")
    a.add_argument("--scheduler", metavar="ADDR",
                   help="dask scheduler address (needs --backend dask; then --workers is not used)")
    a.add_argument("--timeout", metavar="SECONDS",
                   help="seconds one call of a user's mechanism (one chunk of outputs) may take before the "
                        "audit stops with exit 2, or 'off' (user targets; default 600)")
    a.add_argument("--memory-limit", dest="memory_limit", metavar="SIZE",
                   help="refuse a black-box draw whose outputs would need more memory than SIZE (500M, 8G, "
                        "bytes) or 'off' (default: $DPCHECK_MEMORY_LIMIT, else 1/6 of the available memory)")
    a.add_argument("--out", default="reports", metavar="DIR", help="directory for the reports (default reports/)")
    a.add_argument("--json", dest="json_path", metavar="PATH",
                   help="also write the JSON report to this path ('-' for stdout)")
    a.add_argument("--quick", action="store_true", help="a reduced run for CI smoke tests")
    a.add_argument("--strict", action="store_true", help="an inconclusive check fails the run")
    a.add_argument("--cache", dest="cache_dir", metavar="DIR", help="stream finished chunks here and resume from them")
    a.add_argument("--set", dest="extra", action="append", default=[], metavar="KEY=VALUE",
                   help="audit-specific option (e.g. --set mode=theory --set calibration=strict); "
                        "'dpcheck list --options NAME' lists an audit's keys")
    a.add_argument("--debug", action="store_true", help="show tracebacks")
    a.add_argument("--quiet", action="store_true", help="no progress lines")

    r = sub.add_parser("report", help="re-render the Markdown, HTML and JUnit views of a JSON report")
    r.add_argument("file")
    r.add_argument("--out", help="directory (default: next to the JSON file; another one gets a copy of the JSON "
                                 "too, so it holds one run's set)")
    r.add_argument("--debug", action="store_true")
    return p


def _version() -> str:
    from dpcheck._version import __version__
    return __version__


def _parse_extra(items) -> dict:
    """``--set`` items as {key: raw text}: the syntax checked here, the values by the audit's table."""
    from dpcheck.options import split_set
    return split_set(items)


# ------------------------------------------------------------------ options (validated once, here)
def options_from_args(args):
    """(AuditOptions, the set of fields given on the command line), every value parsed and the
    parallel options checked for consistency. Which options the audit uses is checked later
    against its registration (:func:`check_audit_options`)."""
    import importlib.util
    from dpcheck.context import AuditOptions
    from dpcheck.options import COMMON, cpu_limit

    given = {name for name in COMMON if getattr(args, name, None) not in (None, False)}
    kw = {name: getattr(args, name) for name in COMMON if name in given}
    options = AuditOptions(**kw, strict=args.strict, extra=_parse_extra(args.extra))
    if options.scheduler is not None and options.backend != "dask":
        raise InputError("--scheduler is the address of a dask scheduler: it needs --backend dask")
    if options.backend == "dask":
        if options.scheduler is not None and "workers" in given:
            raise InputError("--workers sets the size of a local dask cluster; with --scheduler the remote "
                             "cluster's workers run the chunks: drop --workers")
        if importlib.util.find_spec("distributed") is None:
            raise InputError("--backend dask needs dask.distributed: pip install 'dpcheck[dask]'")
    n_cpu = cpu_limit()
    if options.workers > n_cpu and not args.force_workers:
        raise InputError(f"--workers {options.workers} is more than the {n_cpu} CPU(s) this process may use "
                         f"(each worker is a process with its own memory): use --workers {n_cpu}, or add "
                         "--force-workers to start them anyway")
    if options.cache_dir is not None and Path(options.cache_dir).exists() and not Path(options.cache_dir).is_dir():
        raise InputError(f"--cache {options.cache_dir}: exists and is not a directory")
    return options, given


def check_audit_options(spec, options, given) -> None:
    """Refuse options the audit does not use; parse its --set keys (AuditSpec.check_options)."""
    spec.check_options(options, given)


def memory_limit_of(args):
    from dpcheck.options import parse_size
    return parse_size(args.memory_limit) if args.memory_limit is not None else None


def _with_limits(run, memory_limit):
    """``run(ctx)`` with the --memory-limit in force for every black-box draw it makes."""
    def limited(ctx):
        from dpcheck.limits import memory_limit_set
        with memory_limit_set(memory_limit):
            return run(ctx)
    return limited


# ------------------------------------------------------------------ targets
def load_object(spec: str):
    """Load ``path/to/file.py:NAME`` or ``pkg.module:NAME`` with clear errors."""
    from dpcheck.loading import load_object as _load
    if ":" not in spec:
        raise InputError(f"{spec!r} is neither a registered audit nor of the form path.py:NAME or pkg.module:NAME")
    return _load(spec, "target")


def resolve_target(spec: str):
    """A user's AuditTarget, or a zero-argument function returning one."""
    from dpcheck.target import AuditTarget
    obj = load_object(spec)
    if not isinstance(obj, AuditTarget) and callable(obj) and not isinstance(obj, type):
        try:
            obj = obj()
        except DPCheckError:
            raise
        except TypeError as e:
            raise InputError(f"{spec} is not an AuditTarget nor a zero-argument function returning one ({e})") from e
        except Exception as e:
            raise InputError(f"{spec}() raised {type(e).__name__}: {e}") from e
    if not isinstance(obj, AuditTarget):
        raise InputError(f"{spec} is a {type(obj).__name__}, not a dpcheck.AuditTarget "
                         "(nor a zero-argument function returning one)")
    return obj


def _user_target_audit(target):
    """run(ctx) for a user's AuditTarget: one black-box privacy check."""
    def run(ctx):
        from dataclasses import replace
        from dpcheck.blackbox import audit
        from dpcheck.options import DEFAULT_USER_TIMEOUT
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
                  progress=ctx.progress, cache_dir=o.cache_dir)
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


# ------------------------------------------------------------------ commands
def _print_options(spec) -> None:
    from dpcheck.options import COMMON
    print(f"{spec.name} — {spec.algorithm}")
    print(f"  notion: {spec.notion}; claim: {spec.claim}")
    used = []
    for name, flag in COMMON.items():
        if name in spec.uses:
            if name == "privatizer" and spec.privatizers:
                values = [*spec.privatizers, *(["none"] if "none" not in spec.privatizers else []),
                          *(["file.py:CLASS"] if spec.plugin_privatizers else [])]
                used.append(f"{flag} ({'|'.join(values)})")
            else:
                used.append(flag)
    print(f"  options it uses: {', '.join(used) or 'none'}")
    print("  for every audit: --out, --json, --strict, --memory-limit, --force-workers, --debug, --quiet")
    if spec.options:
        print("  --set keys:")
        for o in spec.options:
            print(f"    {o.describe()}")
    else:
        print("  --set keys: none")


def cmd_list(args) -> int:
    from dpcheck import registry
    reg = registry.load()
    if args.options_of is not None:
        name = args.options_of
        if name in reg:
            _print_options(reg[name])
        elif ":" in name:
            _print_options(user_target_spec(name))
        else:
            known = ", ".join(sorted(reg)) or "(none)"
            raise InputError(f"no audit named {name!r} (registered: {known})")
        return EXIT_PASS
    if args.claims_of is not None:
        from dpcheck.audit import format_claim_table
        if args.claims_of not in reg:
            known = ", ".join(sorted(reg)) or "(none)"
            raise InputError(f"no audit named {args.claims_of!r} (registered: {known})")
        spec = reg[args.claims_of]
        if not spec.claims:
            raise InputError(f"audit {args.claims_of!r} declares no claim table")
        print(f"{spec.name}: {spec.algorithm}\n")
        print(format_claim_table(spec.name, [r.to_dict() for r in spec.claims]))
        return EXIT_PASS
    if not reg:
        print("no audits registered")
        return EXIT_PASS
    w = max(len(n) for n in reg)
    wn = max(6, *(len(s.notion) for s in reg.values()))
    print(f"{'audit':{w}s}  {'notion':{wn}s}  algorithm — claim")
    for name in sorted(reg):
        s = reg[name]
        extra = f"  [privatizers: {', '.join(s.privatizers)}]" if s.privatizers else ""
        print(f"{name:{w}s}  {s.notion:{wn}s}  {s.algorithm} — {s.claim}{extra}")
    print("\nalso: dpcheck audit path/to/file.py:NAME  (a dpcheck.AuditTarget of your own)")
    print("options and --set keys of one audit: dpcheck list --options NAME; its claim table: "
          "dpcheck list --claims NAME")
    return EXIT_PASS


def cmd_audit(args) -> int:
    from dpcheck import registry, report as rpt
    from dpcheck.context import AuditContext
    from dpcheck.report_lock import ReportLock

    # every option is validated here, before the audit starts (dpcheck.options)
    options, given = options_from_args(args)
    memory_limit = memory_limit_of(args)
    reg = registry.load()
    if args.target in reg:
        spec = reg[args.target]
    elif ":" in args.target:
        check_audit_options(user_target_spec(args.target), options, given)   # before importing the user's file
        spec = user_target_spec(args.target, resolve_target(args.target))
    else:
        known = ", ".join(sorted(reg)) or "(none)"
        raise InputError(f"no audit named {args.target!r} (registered: {known}); "
                         "for your own mechanism use path/to/file.py:NAME")
    check_audit_options(spec, options, given)
    run = _with_limits(spec.run, memory_limit)
    name = args.target

    t0 = time.perf_counter()
    last = {"t": -1e9}

    def progress(msg):
        if args.quiet:
            return
        now = time.perf_counter() - t0
        m = _COUNTER.search(msg)
        # counters ("chunk 3/32") at most every 2 s, and always the last one
        if m and m.group(1) != m.group(2) and now - last["t"] < 2.0:
            return
        last["t"] = now
        print(f"[{now:7.1f}s] {msg}", file=sys.stderr, flush=True)

    out_dir = Path(args.out)
    if ":" in name:  # a user's file or module: name the reports after the module and the object
        mod, _, obj = name.rpartition(":")
        stem = rpt.stem_for(f"{Path(mod).stem if mod.endswith('.py') else mod}-{obj}")
    else:
        stem = rpt.stem_for(name)
    json_path = args.json_path if args.json_path not in (None, "-") else None
    writer = rpt.ReportWriter(out_dir, stem, json_path)
    stream_failed = []

    def stream(rep):  # the report so far (status running, never pass) after every finished check
        try:
            writer.stream(rep)
        except OSError as e:  # the last streamed report stays, still marked incomplete
            if not stream_failed:
                stream_failed.append(e)
                progress(f"warning: cannot update the reports in {out_dir}: {e}")

    ctx = AuditContext(name, options, progress=progress, on_check=stream)
    # one run at a time per report: the lock is taken before any report file is touched and held
    # past the last write; a second run stops here, exit 2, having written nothing (dpcheck.report_lock)
    own = rpt.report_files(out_dir, stem) + ([writer.copy] if writer.copy is not None else [])
    with ReportLock(own, {"run_id": ctx.run_id, "started": ctx.started.isoformat(timespec="seconds"),
                          "target": name, "command": "audit"}):
        rpt.remove_stale_temps(own)   # a killed run's: only its files' lock holder writes them
        return _run_audit(args, ctx, run, writer, out_dir, options, progress)


def _run_audit(args, ctx, run, writer, out_dir, options, progress) -> int:
    from dpcheck import report as rpt
    from dpcheck.context import exit_code

    name = ctx.target
    with _Signals() as signals:
        try:
            try:  # inside the try: a signal during begin still leaves an "interrupted" report
                writer.begin(ctx.report(status="running"))
            except OSError as e:
                raise _Unwritable(f"cannot write reports to {out_dir}: {e}") from e
            progress(f"dpcheck {_version()}: auditing {name} (seed={options.seed}, alpha={options.alpha}"
                     f"{', quick' if options.quick else ''}; run {ctx.run_id})")
            run(ctx)
        except _Unwritable:
            raise
        except (Exception, KeyboardInterrupt) as e:
            signals.defer()          # a second Ctrl-C / SIGTERM must not cut the report short
            _stop_workers()          # no loky worker may outlive an interrupted run
            interrupted = isinstance(e, KeyboardInterrupt)
            msg = f"interrupted ({signals.name or 'SIGINT'})" if interrupted else _one_line(e)
            rep = ctx.report(error=msg, status="interrupted" if interrupted else "error")
            paths = _finish(writer, rep, out_dir)
            if args.json_path == "-":
                import json
                print(json.dumps(rep, indent=2))
            elif ctx.checks:
                print(rpt.summary_table(rep))
            where = f" (the {len(ctx.checks)} finished checks are in {paths.get('json')}, marked incomplete)" \
                if ctx.checks else ""
            if args.debug:
                traceback.print_exc()
            print(f"dpcheck: error: {msg}{where}", file=sys.stderr)
            return EXIT_ERROR
        signals.defer()  # every check finished: write the complete set even if a signal comes now
        rep = ctx.report()
        paths = _finish(writer, rep, out_dir)
    if args.json_path == "-":
        import json
        print(json.dumps(rep, indent=2))
    else:
        print(rpt.summary_table(rep))
        print("reports: " + ", ".join(str(p) for p in paths.values()))
    if signals.received is not None:
        print(f"dpcheck: error: interrupted ({signals.name}) after the last check; the complete reports are "
              f"written", file=sys.stderr)
        return EXIT_ERROR
    return exit_code(rep, strict=options.strict)


def _finish(writer, rep, out_dir) -> dict:
    try:
        return writer.finish(rep)
    except OSError as e:
        raise InputError(f"cannot write reports to {out_dir}: {e}") from e


class _Unwritable(InputError):
    """The report folder cannot be written at the start of a run: say so, run nothing."""


class _Interrupted(KeyboardInterrupt):
    """SIGTERM, raised in the main thread as SIGINT raises KeyboardInterrupt, so both end a run the same way."""


class _Signals:
    """While the checks run, SIGTERM (and SIGINT) raise :class:`_Interrupted` in the main thread;
    after ``defer()`` they are only recorded, so the reports are written whole. Restores the
    previous handlers on exit. An ignored SIGINT (a background job of a non-interactive shell)
    stays ignored."""

    def __init__(self):
        self.received: int | None = None
        self._old: dict = {}

    @property
    def name(self) -> str | None:
        import signal
        return signal.Signals(self.received).name if self.received is not None else None

    def __enter__(self):
        import signal
        import threading
        if threading.current_thread() is not threading.main_thread():
            return self  # signal handlers can only be set from the main thread
        for sig in (signal.SIGINT, signal.SIGTERM):
            old = signal.getsignal(sig)
            if old is signal.SIG_IGN:
                continue
            self._old[sig] = old
            signal.signal(sig, self._raise)
        return self

    def _raise(self, signum, frame):
        self.received = signum
        self.defer()
        raise _Interrupted(signum)

    def _record(self, signum, frame):
        if self.received is None:
            self.received = signum

    def defer(self) -> None:
        import signal
        for sig in self._old:
            signal.signal(sig, self._record)

    def __exit__(self, *exc):
        import signal
        for sig, old in self._old.items():
            signal.signal(sig, old if old is not None else signal.SIG_DFL)
        return False


def _stop_workers() -> None:
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


def _one_line(e: BaseException) -> str:
    if isinstance(e, DPCheckError):
        return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    text = str(e).strip().splitlines()
    return f"internal error: {type(e).__name__}: {text[0] if text else ''} (run with --debug for the traceback)"


def cmd_report(args) -> int:
    """Render the views of a JSON report next to it, or into --out (then with a copy of the JSON, so the
    folder holds one run's set); under the lock of the files it writes (dpcheck.report_lock)."""
    from datetime import datetime, timezone
    from dpcheck import report as rpt
    from dpcheck.report_lock import ReportLock
    out = Path(args.out) if args.out else Path(args.file).parent
    stem = Path(args.file).name
    stem = stem[:-5] if stem.endswith(".json") else stem
    try:
        rep = rpt.load(args.file)
        in_place = (out / f"{stem}.json").resolve() == Path(args.file).resolve()
        formats = ("md", "html", "xml") if in_place else ("json", "md", "html", "xml")
        own = rpt.report_files(out, stem)
        holder = {"run_id": rep.get("run_id", "?"), "target": args.file, "command": "report",
                  "started": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        with ReportLock(own, holder):
            rpt.remove_stale_temps(own)
            if in_place:   # the source may have changed before the lock was ours: render what is there now
                rep = rpt.load(args.file)
            paths = rpt.write_all(rep, out, stem=stem, formats=formats)
        table = rpt.summary_table(rep)
    except DPCheckError:
        raise
    except OSError as e:
        raise InputError(f"cannot read {args.file} or write to {out}: {e}") from e
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        # a JSON file that passes the schema check but holds values of the wrong shape
        raise InputError(f"{args.file} is not a valid dpcheck report: {type(e).__name__}: {e}") from e
    print(table)
    print("rendered: " + ", ".join(str(p) for p in paths.values()))
    return EXIT_PASS


def main(argv=None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:      # a usage error (one line already printed), --help or --version
        return e.code if isinstance(e.code, int) else EXIT_ERROR
    debug = getattr(args, "debug", False)
    try:
        if args.command == "list":
            return cmd_list(args)
        if args.command == "audit":
            return cmd_audit(args)
        if args.command == "report":
            return cmd_report(args)
    except DPCheckError as e:
        if debug:
            traceback.print_exc()
        print(f"dpcheck: error: {_one_line(e)}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:  # before an audit started (cmd_audit handles its own): nothing was written
        print("dpcheck: error: interrupted", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:  # `dpcheck ... | head`: the reader left; say nothing more
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR
    except Exception as e:  # never a bare traceback for the user
        if debug:
            traceback.print_exc()
        print(f"dpcheck: error: {_one_line(e)}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
