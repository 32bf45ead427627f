"""The ``dpcheck`` command line (DESIGN.md "Command line").

    dpcheck list
    dpcheck audit TARGET [--epsilon E] [--delta D] [--privatizer P] [--samples N] [--seed S]
                         [--alpha A] [--workers W] [--backend local|dask] [--scheduler ADDR]
                         [--out DIR] [--json PATH] [--quick] [--strict] [--debug]
    dpcheck report FILE.json [--out DIR]

Exit codes: 0 every check passes (inconclusive ones too, unless --strict); 1 a
violation was found; 2 usage error, bad input, internal error or an interrupted
run (one clear line on stderr; the traceback only with --debug).

Interruption: SIGTERM is handled like SIGINT. The run stops, joblib's worker
processes are killed, and the reports are written marked incomplete
(``status: interrupted``, never the verdict pass); exit 2. While the checks run,
the JSON and JUnit on disk say ``status: running``; a SIGKILL leaves them so.
The write order that keeps the files of one report consistent at every moment
is described in :mod:`dpcheck.report`.
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


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one clear line, exit 2 (argparse's own convention too)
        self.print_usage(sys.stderr)
        print(f"dpcheck: error: {message}", file=sys.stderr)
        sys.exit(EXIT_ERROR)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="dpcheck", description="Verify the privacy, assumption and regret claims of "
                "differentially private RL algorithms and mechanisms.")
    p.add_argument("--version", action="version", version=f"dpcheck {_version()}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    sub.add_parser("list", help="list the registered audits")

    a = sub.add_parser("audit", help="audit a registered algorithm or a user target (path.py:NAME, pkg.mod:NAME)")
    a.add_argument("target", help="registered audit name, path/to/file.py:NAME or pkg.module:NAME")
    a.add_argument("--epsilon", help="privacy budget to run and check at (overrides the default / the target's claim)")
    a.add_argument("--delta", help="delta of an approximate-DP claim")
    a.add_argument("--privatizer", help="central | local | none | path/to/file.py:CLASS")
    a.add_argument("--samples", type=_int, help="outputs drawn per input of each neighbouring pair "
                   "(selection and certification together)")
    a.add_argument("--seed", type=_int, default=0, help="one seed fixes everything (default 0)")
    a.add_argument("--alpha", type=float, default=0.05, help="error probability of each check (default 0.05)")
    a.add_argument("--workers", type=_int, default=1, help="parallel worker processes (default 1)")
    a.add_argument("--backend", choices=("local", "dask"), default="local")
    a.add_argument("--scheduler", help="dask scheduler address (with --backend dask)")
    a.add_argument("--out", default="reports", help="directory for the reports (default reports/)")
    a.add_argument("--json", dest="json_path", help="also write the JSON report to this path ('-' for stdout)")
    a.add_argument("--quick", action="store_true", help="a reduced run for CI smoke tests")
    a.add_argument("--strict", action="store_true", help="an inconclusive check fails the run")
    a.add_argument("--cache", dest="cache_dir", help="stream finished chunks here and resume from them")
    a.add_argument("--set", dest="extra", action="append", default=[], metavar="KEY=VALUE",
                   help="audit-specific option (e.g. --set mode=theory --set calibration=strict)")
    a.add_argument("--debug", action="store_true", help="show tracebacks")
    a.add_argument("--quiet", action="store_true", help="no progress lines")

    r = sub.add_parser("report", help="re-render the Markdown, HTML and JUnit views of a JSON report")
    r.add_argument("file")
    r.add_argument("--out", help="directory (default: next to the JSON file)")
    r.add_argument("--debug", action="store_true")
    return p


def _int(s: str) -> int:
    try:
        return int(float(s)) if "e" in s.lower() else int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {s!r}") from None


def _version() -> str:
    from dpcheck import __version__
    return __version__


def _parse_extra(items) -> dict:
    out = {}
    for it in items:
        if "=" not in it:
            raise InputError(f"--set expects KEY=VALUE, got {it!r}")
        k, v = it.split("=", 1)
        for conv in (int, float):
            try:
                v = conv(v)
                break
            except ValueError:
                continue
        out[k.strip()] = v
    return out


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
        o = ctx.options
        t = target
        if o.epsilon is not None or o.delta is not None:
            claim = t.claim
            if o.epsilon is not None:
                claim = replace(claim, epsilon=o.epsilon)
            if o.delta is not None:
                claim = replace(claim, delta=o.delta)
            t = replace(t, claim=claim)
        ctx.config["claim"] = t.claim.to_dict()
        kw = dict(alpha=o.alpha, seed=o.seed, workers=o.workers, backend=o.backend, scheduler=o.scheduler,
                  progress=ctx.progress, cache_dir=o.cache_dir)
        if o.samples is not None:
            kw["samples"] = o.samples
        res = audit(t, **kw)
        ctx.add(res.to_check(id="privacy.blackbox"))
    return run


# ------------------------------------------------------------------ commands
def cmd_list(args) -> int:
    from dpcheck import registry
    reg = registry.load()
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
    return EXIT_PASS


def cmd_audit(args) -> int:
    from dpcheck import registry, report as rpt
    from dpcheck.context import AuditContext, AuditOptions, exit_code

    options = AuditOptions(epsilon=args.epsilon, delta=args.delta, privatizer=args.privatizer,
                           samples=args.samples, seed=args.seed, alpha=args.alpha, workers=args.workers,
                           backend=args.backend, scheduler=args.scheduler, quick=args.quick,
                           strict=args.strict, cache_dir=args.cache_dir, extra=_parse_extra(args.extra))
    reg = registry.load()
    if args.target in reg:
        run = reg[args.target].run
        name = args.target
    elif ":" in args.target:
        run = _user_target_audit(resolve_target(args.target))
        name = args.target
    else:
        known = ", ".join(sorted(reg)) or "(none)"
        raise InputError(f"no audit named {args.target!r} (registered: {known}); "
                         "for your own mechanism use path/to/file.py:NAME")

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
    from dpcheck import report as rpt
    rep = rpt.load(args.file)
    out = Path(args.out) if args.out else Path(args.file).parent
    stem = Path(args.file).name
    stem = stem[:-5] if stem.endswith(".json") else stem
    try:
        paths = rpt.write_all(rep, out, stem=stem, formats=("md", "html", "xml"))
    except OSError as e:
        raise InputError(f"cannot write the views to {out}: {e}") from None
    print(rpt.summary_table(rep))
    print("rendered: " + ", ".join(str(p) for p in paths.values()))
    return EXIT_PASS


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
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
