"""The ``dpcheck`` command line: list, audit, report (the public contract; README "Commands").

    dpcheck list [--options NAME]
    dpcheck audit TARGET [--epsilon E] [--delta D] [--privatizer P] [--samples N] [--seed S]
                         [--alpha A] [--workers W] [--force-workers] [--backend local|dask]
                         [--scheduler ADDR] [--timeout SECONDS] [--memory-limit SIZE]
                         [--out DIR] [--json PATH] [--quick] [--strict] [--cache DIR]
                         [--sequential] [--set KEY=VALUE ...] [--debug] [--quiet]
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

# the command line is a thin layer over the Python API (dpcheck.api): validation, targets, runs
from dpcheck.api import (USER_QUICK_SAMPLES, USER_TARGET_USES, Unwritable as _Unwritable,  # noqa: F401,E402
                         load_object, one_line as _one_line, resolve_target, stop_workers as _stop_workers,
                         user_target_spec)


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
    a.add_argument("--workers", metavar="W", help="parallel worker processes, or 'auto' (default: $DPCHECK_WORKERS, "
                   "else auto = every CPU this process may use; results are identical for any W; at most the "
                   "number of CPUs unless --force-workers)")
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
    a.add_argument("--sequential", action="store_true",
                   help="black box: anytime-valid sequential test that stops at a certified violation "
                        "(--samples is the budget; docs/sequential.md)")
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


# ------------------------------------------------------------------ options (validated once: dpcheck.api)
def options_from_args(args):
    """(AuditOptions, the set of fields given on the command line): dpcheck.api.make_options."""
    from dpcheck.api import make_options
    from dpcheck.options import COMMON
    return make_options({name: getattr(args, name, None) for name in COMMON}, strict=args.strict,
                        extra=_parse_extra(args.extra), force_workers=args.force_workers)


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
    from dpcheck.api import Run
    from dpcheck.options import COMMON

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

    # every option is validated here, before the audit starts (dpcheck.api.make_options)
    r = Run(args.target, {name: getattr(args, name, None) for name in COMMON}, strict=args.strict,
            extra=_parse_extra(args.extra), force_workers=args.force_workers, memory_limit=args.memory_limit,
            out=args.out, json_path=args.json_path if args.json_path not in (None, "-") else None,
            progress=progress, default_workers=True)
    # one run at a time per report: the lock is taken before any report file is touched and held
    # past the last write; a second run stops here, exit 2, having written nothing (dpcheck.report_lock)
    with r.lock():
        return _run_audit(args, r, progress)


def _run_audit(args, r, progress) -> int:
    from dpcheck import report as rpt

    ctx, options, out_dir, name = r.ctx, r.options, r.out, r.name
    with _Signals() as signals:
        try:
            r.begin()  # inside the try: a signal during begin still leaves an "interrupted" report
            progress(f"dpcheck {_version()}: auditing {name} (seed={options.seed}, alpha={options.alpha}"
                     f"{', quick' if options.quick else ''}; run {ctx.run_id})")
            r.run(ctx)
        except _Unwritable:
            raise
        except (Exception, KeyboardInterrupt, SystemExit) as e:   # SystemExit: sys.exit in code we did not wrap
            signals.defer()          # a second Ctrl-C / SIGTERM must not cut the report short
            _stop_workers()          # no loky worker may outlive an interrupted run
            interrupted = isinstance(e, KeyboardInterrupt)
            msg = f"interrupted ({signals.name or 'SIGINT'})" if interrupted else _one_line(e)
            rep = r.finish(ctx.report(error=msg, status="interrupted" if interrupted else "error")).data
            paths = r.paths
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
        report = r.finish(ctx.report())
        rep, paths = report.data, r.paths
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
    return report.exit_code()


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
