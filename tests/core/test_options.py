"""Issue 9: every option is validated once at the boundary, an option an audit does not use is an error,
and resource limits (memory estimate, --workers cap, per-call timeout) protect the machine.

Each bad input must give exit 2 and exactly one line on stderr, before any work starts."""
import json
import math
import signal
import textwrap
import threading
import time

import numpy as np
import pytest

from dpcheck import AuditTarget, Claim, registry
from dpcheck.checks import Check
from dpcheck.cli import main
from dpcheck.errors import InputError, MechanismError
from dpcheck.options import SetOption, parse_int, parse_set, parse_size, split_set
from dpcheck.target import MechanismTimeout, call_with_deadline

SEEN = {}


def _check(id):
    return Check(id=id, kind="assumption", verdict="pass", claim={"source": "test"},
                 measured={"confidence": 1.0}, reason=id)


@registry.register("_opt_all", algorithm="test", notion="DP", claim="nothing",
                   uses=("epsilon", "delta", "samples", "seed", "alpha", "workers", "backend", "scheduler", "quick"),
                   options=(SetOption("mode", str, choices=("a", "b"), default="a", help="a mode"),
                            SetOption("beta", float, bounds=(0, 1), help="a probability"),
                            SetOption("flag", bool, default=False),
                            SetOption("k", int, bounds=(0, None), default=3)))
def _run_all(ctx):
    SEEN["options"] = ctx.options
    ctx.add(_check("a.one"))


@registry.register("_opt_none", algorithm="test", notion="DP", claim="pure eps-DP")
def _run_none(ctx):
    ctx.add(_check("a.one"))


def _run(argv, tmp_path, capsys):
    rc = main(argv + ["--out", str(tmp_path), "--quiet"])
    err = capsys.readouterr().err
    return rc, err


# ------------------------------------------------------------------ bad values: exit 2, one line
@pytest.mark.parametrize("flag, value, needle", [
    ("--epsilon", "abc", "--epsilon must be a number"), ("--epsilon", "-1", "--epsilon must be"),
    ("--epsilon", "inf", "finite"), ("--epsilon", "nan", "finite"), ("--epsilon", "0", "> 0"),
    ("--delta", "abc", "--delta must be a number"), ("--delta", "-0.1", "[0, 1)"), ("--delta", "1", "[0, 1)"),
    ("--delta", "1.5", "[0, 1)"),
    ("--alpha", "0", "(0, 1)"), ("--alpha", "1", "(0, 1)"), ("--alpha", "x", "--alpha must be a number"),
    ("--samples", "zzz", "--samples must be an integer"), ("--samples", "1.5", "integer"),
    ("--samples", "1e99", "[20, 1e+12]"), ("--samples", "10", "[20, 1e+12]"), ("--samples", "inf", "integer"),
    ("--samples", "1.5e0", "integer"),
    ("--seed", "-1", "--seed must be an integer in [0, 2^32 - 1]"), ("--seed", "abc", "--seed must be an integer"),
    ("--seed", str(2**32), "2^32"),
    ("--workers", "0", "--workers must be an integer >= 1"), ("--workers", "two", "--workers must be an integer"),
    ("--timeout", "0", "--timeout must be"), ("--timeout", "abc", "--timeout must be"),
    ("--memory-limit", "12Q", "--memory-limit must be a size"), ("--memory-limit", "-1G", "--memory-limit"),
    ("--backend", "spark", "invalid choice"),
])
def test_bad_values_exit_2_one_line(flag, value, needle, tmp_path, capsys):
    rc, err = _run(["audit", "_opt_all", flag, value], tmp_path, capsys)
    assert rc == 2
    assert needle in err and "Traceback" not in err and "internal error" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert "options" not in SEEN or SEEN.pop("options") is None  # the audit never started


@pytest.mark.parametrize("items, needle", [
    (["a"], "--set expects KEY=VALUE, got 'a'"), (["=1"], "KEY a name"), (["mode=a", "mode=b"], "given twice"),
    (["mode=c"], "--set mode (audit '_opt_all') must be one of a|b, got 'c'"),
    (["beta=2"], "must lie in (0, 1)"), (["beta=x"], "must be a number"), (["flag=maybe"], "true or false"),
    (["k=1.5"], "integer"), (["k=-1"], "(0, inf)"), (["nope=1"], "its --set keys: mode, beta, flag, k"),
])
def test_bad_set_items(items, needle, tmp_path, capsys):
    argv = ["audit", "_opt_all"]
    for it in items:
        argv += ["--set", it]
    rc, err = _run(argv, tmp_path, capsys)
    assert rc == 2 and needle in err and len(err.strip().splitlines()) == 1, err


def test_values_are_parsed_once_and_defaults_filled(tmp_path, capsys):
    rc, _ = _run(["audit", "_opt_all", "--epsilon", "0.5", "--delta", "1e-6", "--samples", "1e4", "--seed", "7",
                  "--alpha", "0.1", "--set", "beta=0.25", "--set", "flag=yes"], tmp_path, capsys)
    assert rc == 0
    o = SEEN.pop("options")
    assert (o.epsilon, o.delta, o.samples, o.seed, o.alpha) == (0.5, 1e-6, 10_000, 7, 0.1)
    assert isinstance(o.samples, int) and isinstance(o.seed, int)
    assert o.extra == {"mode": "a", "beta": 0.25, "flag": True, "k": 3}
    rep = json.loads((tmp_path / "_opt_all.json").read_text())
    assert rep["options"]["extra"]["beta"] == 0.25


def test_parsers():
    assert parse_int("x", "1e6") == 10**6 and parse_int("x", "200_000") == 200_000 and parse_int("x", 5) == 5
    assert parse_int("x", np.int64(3)) == 3
    for bad in ("2.5", "1.5e0", "inf", "nan", "", "1e", True):
        with pytest.raises(InputError):
            parse_int("x", bad)
    assert parse_size("1K") == 1024 and parse_size("2g") == 2 * 1024**3 and parse_size("500MB") == 500 * 1024**2
    assert parse_size("off") == math.inf and parse_size("123") == 123
    assert split_set(["a=1", "b = x=y"]) == {"a": "1", "b": "x=y"}
    assert parse_set((SetOption("a", int, default=2),), {}, "t") == {"a": 2}
    assert parse_set((SetOption("a", int),), {}, "t") == {}           # default None: absent, the audit decides
    with pytest.raises(InputError, match="takes no --set options"):
        parse_set((), {"x": "1"}, "t")


def test_register_rejects_unknown_uses():
    with pytest.raises(ValueError, match="unknown option"):
        registry.register("_opt_bad", algorithm="t", notion="DP", claim="c", uses=("epsilon", "epsilom"))
    with pytest.raises(ValueError, match="distinct"):
        registry.register("_opt_bad", algorithm="t", notion="DP", claim="c",
                          options=(SetOption("a"), SetOption("a")))
    with pytest.raises(TypeError):
        SetOption("a", list)


# ------------------------------------------------------------------ unused options are errors
@pytest.mark.parametrize("argv, needle", [
    (["--epsilon", "1"], "--epsilon is not used by audit '_opt_none'"),
    (["--delta", "0.5"], "--delta is not used by audit '_opt_none' (its claim: pure eps-DP)"),
    (["--privatizer", "central"], "--privatizer is not used"), (["--samples", "100"], "--samples is not used"),
    (["--quick"], "--quick is not used"), (["--workers", "1"], "--workers is not used"),
    (["--cache", "cachedir"], "--cache is not used"), (["--timeout", "5"], "--timeout is not used"),
    (["--set", "x=1"], "--set x: audit '_opt_none' takes no --set options"),
])
def test_unused_option_is_an_error(argv, needle, tmp_path, capsys):
    rc, err = _run(["audit", "_opt_none", *argv], tmp_path, capsys)
    assert rc == 2 and needle in err and len(err.strip().splitlines()) == 1, err
    assert "the options it uses: --seed, --alpha" in err or "--set" in needle


@pytest.mark.parametrize("audit, argv, needle", [
    ("dp_nash_vi", ["--delta", "0.5"], "--delta is not used by audit 'dp_nash_vi'"),
    ("dp_nash_vi", ["--set", "mode=garbage"], "its --set keys: calibration"),
    ("dp_nash_vi", ["--set", "unknown_key=1"], "has no option 'unknown_key'"),
    ("dp_nash_vi", ["--timeout", "5"], "--timeout is not used"),
    ("dp_ucbvi", ["--set", "mode=garbage"], "must be one of theory|practical, got 'garbage'"),
    ("dp_ucbvi", ["--set", "calibration=loose"], "must be one of paper|strict"),
    ("dp_ucbvi", ["--delta", "0.1"], "--delta is not used"),
    ("central_privatizer", ["--set", "width_mode=wide"], "rigorous|calibrated|nominal"),
    ("offline_laplace_privatizer", ["--privatizer", "local"], "--privatizer is not used"),
    ("offline_gaussian_privatizer", ["--set", "rho=1", "--epsilon", "1"], "not both"),
    ("offline_gaussian_privatizer", ["--delta", "1e-5"], "--delta is used only with --epsilon"),
    ("laplace_example", ["--timeout", "3"], "--timeout is not used"),
    ("laplace_example", ["--set", "mode=theory"], "takes no --set options"),
])
def test_builtin_audits_refuse_what_they_ignore(audit, argv, needle, tmp_path, capsys):
    rc, err = _run(["audit", audit, "--quick", *argv], tmp_path, capsys)
    assert rc == 2 and needle in err and len(err.strip().splitlines()) == 1, err
    assert not list(tmp_path.glob("*.json"))        # refused before the audit started


def test_builtin_declarations():
    reg = registry.load()
    assert "delta" not in reg["dp_nash_vi"].uses and "delta" not in reg["dp_ucbvi"].uses
    assert "delta" in reg["offline_gaussian_privatizer"].uses
    assert "privatizer" not in reg["laplace_example"].uses
    for name in ("dp_nash_vi", "dp_ucbvi", "central_privatizer", "local_privatizer"):
        assert "privatizer" in reg[name].uses and "calibration" in {o.name for o in reg[name].options}
    assert {o.name for o in reg["dp_ucbvi"].options} == {"calibration", "beta", "mode"}


def _user_file(tmp_path, body):
    f = tmp_path / "target.py"
    f.write_text("import time\nimport numpy as np\nfrom dpcheck import AuditTarget, Claim\n" + textwrap.dedent(body))
    return f


LAPLACE = """
def lap(d, rng, n):
    return d + rng.laplace(0, 1, n)
T = AuditTarget("lap", lap, [(0, 1)], Claim(epsilon=1.0))
"""


def test_user_target_refuses_privatizer_and_set(tmp_path, capsys):
    f = _user_file(tmp_path, LAPLACE)
    rc, err = _run(["audit", f"{f}:T", "--privatizer", "central"], tmp_path, capsys)
    assert rc == 2 and f"--privatizer is not used by audit '{f}:T'" in err
    rc, err = _run(["audit", f"{f}:T", "--set", "calibration=strict"], tmp_path, capsys)
    assert rc == 2 and "takes no --set options" in err
    # refused before the user's file is imported (its top-level code never runs)
    marker = tmp_path / "imported"
    g = _user_file(tmp_path, f"open({str(marker)!r}, 'w').close()\n" + LAPLACE)
    rc, err = _run(["audit", f"{g}:T", "--privatizer", "local"], tmp_path, capsys)
    assert rc == 2 and not marker.exists()


# ------------------------------------------------------------------ parallel options
def test_workers_capped_by_cpus_unless_forced(tmp_path, capsys, monkeypatch):
    import dpcheck.options
    monkeypatch.setattr(dpcheck.options, "cpu_limit", lambda: 2)
    rc, err = _run(["audit", "_opt_all", "--workers", "3"], tmp_path, capsys)
    assert rc == 2 and "--workers 3 is more than the 2 CPU(s)" in err and "--force-workers" in err
    rc, err = _run(["audit", "_opt_all", "--workers", "3", "--force-workers"], tmp_path, capsys)
    assert rc == 0 and SEEN.pop("options").workers == 3


def test_backend_scheduler_consistency(tmp_path, capsys):
    rc, err = _run(["audit", "_opt_all", "--scheduler", "tcp://127.0.0.1:1"], tmp_path, capsys)
    assert rc == 2 and "needs --backend dask" in err
    rc, err = _run(["audit", "_opt_all", "--backend", "dask", "--scheduler", "tcp://127.0.0.1:1", "--workers", "2"],
                   tmp_path, capsys)
    assert rc == 2 and "drop --workers" in err


# ------------------------------------------------------------------ memory estimate
def test_memory_estimate_refuses_and_names_what_fits(tmp_path, capsys):
    f = _user_file(tmp_path, LAPLACE)
    rc, err = _run(["audit", f"{f}:T", "--samples", "1000000", "--memory-limit", "1M"], tmp_path, capsys)
    assert rc == 2
    line = err.strip().splitlines()[-1]
    # the audit streams: it holds one pair's selection sample (2 x 250000) and one chunk of 65536:
    # 565536 x 8 bytes = 4.31 MB; 1 MB holds 2 x 32768 + 65536, the selection of 131074 per side
    assert "4.31 MB" in line and "memory limit 1 MB" in line and "--samples 131074 would fit" in line
    assert "'lap'" in line and "Traceback" not in err
    # --quick on a user target draws 200000 per side (that is what the estimate is for)
    rc, err = _run(["audit", f"{f}:T", "--quick", "--memory-limit", "1K"], tmp_path, capsys)
    assert rc == 2 and "--samples 200000 needs" in err


def test_memory_limit_from_the_environment(monkeypatch):
    from dpcheck.blackbox import audit
    from dpcheck.limits import memory_limit_set
    t = AuditTarget("vec", lambda d, rng, n: d + rng.normal(size=(n, 4)), [(0, 1), (1, 2)], Claim(epsilon=1.0))
    monkeypatch.setenv("DPCHECK_MEMORY_LIMIT", "100K")
    # (2 x 2500 selection + 10000 in one chunk) x 32 bytes = 469 KB
    with pytest.raises(InputError, match=r"2 x 2500 and 1 chunk\(s\) in flight = 15000 outputs x 32 bytes.*"
                                         r"DPCHECK_MEMORY_LIMIT"):
        audit(t, samples=10000)
    with memory_limit_set(math.inf):                 # --memory-limit off: no check
        assert audit(t, samples=200).samples == 200
    monkeypatch.setenv("DPCHECK_MEMORY_LIMIT", "1G")
    assert audit(t, samples=200).samples == 200


# ------------------------------------------------------------------ per-call timeout
HANGING = """
def hang(d, rng, n):
    while True:                      # swallows ordinary exceptions: the deadline must still get out
        try:
            time.sleep(0.05)
        except Exception:
            pass
T = AuditTarget("hang", hang, [(0, 1)], Claim(epsilon=1.0))

def late(d, rng, n):                 # fine on the probe draw, hangs on the real one
    if n > 2:
        time.sleep(600)
    return d + rng.laplace(0, 1, n)
LATE = AuditTarget("late", late, [(0, 1)], Claim(epsilon=1.0))
"""


@pytest.mark.slow
@pytest.mark.parametrize("name, workers", [("T", "1"), ("LATE", "1"), ("LATE", "2")])
def test_hanging_user_mechanism_is_stopped(name, workers, tmp_path, capsys, monkeypatch):
    import dpcheck.options
    monkeypatch.setattr(dpcheck.options, "cpu_limit", lambda: 2)
    f = _user_file(tmp_path, HANGING)
    rc, err = _run(["audit", f"{f}:{name}", "--timeout", "0.5", "--samples", "1000", "--workers", workers],
                   tmp_path, capsys)
    assert rc == 2
    line = err.strip().splitlines()[-1]
    assert f"target '{name.lower() if name == 'LATE' else 'hang'}'" in line
    assert "timeout of 0.5 s" in line and "--timeout" in line and "Traceback" not in err
    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0          # no alarm left behind


def test_timeout_keeps_finished_checks(tmp_path, capsys):
    t = AuditTarget("sleepy", lambda d, rng, n: time.sleep(600), [(0, 1)], Claim(epsilon=1.0), timeout=0.3)

    @registry.register("_opt_hang", algorithm="test", notion="DP", claim="c")
    def run(ctx):
        from dpcheck.blackbox import audit
        ctx.add(_check("a.done"))
        audit(t, samples=100)

    rc, err = _run(["audit", "_opt_hang"], tmp_path, capsys)
    assert rc == 2 and "'sleepy'" in err and "0.3 s" in err
    rep = json.loads((tmp_path / "_opt_hang.json").read_text())
    assert [c["id"] for c in rep["checks"]] == ["a.done"] and rep["complete"] is False


def test_call_with_deadline_outside_the_main_thread_and_restores_the_alarm():
    box = {}

    def worker():
        try:
            call_with_deadline(lambda: time.sleep(5), 0.2, "mechanism of target 'x'")
        except MechanismTimeout as e:
            box["e"] = e

    th = threading.Thread(target=worker)
    th.start()
    th.join(10)
    assert "abandoned in a background thread" in str(box["e"]) and isinstance(box["e"], MechanismError)
    # in the main thread a timer someone else had set is given back, with its handler
    fired = []
    old = signal.signal(signal.SIGALRM, lambda *a: fired.append(1))
    try:
        signal.setitimer(signal.ITIMER_REAL, 30.0)
        assert call_with_deadline(lambda: 3, 1.0, "m") == 3
        with pytest.raises(MechanismTimeout):
            call_with_deadline(lambda: time.sleep(5), 0.1, "m")
        remaining = signal.getitimer(signal.ITIMER_REAL)[0]
        assert 0 < remaining <= 30.0 and not fired
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert call_with_deadline(lambda: 4, None, "m") == 4 and call_with_deadline(lambda: 5, math.inf, "m") == 5


# ------------------------------------------------------------------ list and report
def test_list_options(capsys):
    assert main(["list", "--options", "dp_ucbvi"]) == 0
    out = capsys.readouterr().out
    assert "mode=theory|practical" in out and "calibration=paper|strict" in out and "--delta" not in out
    assert "--privatizer (central|local|none|file.py:CLASS)" in out
    assert main(["list", "--options", "some/file.py:T"]) == 0
    out = capsys.readouterr().out
    assert "--timeout" in out and "--privatizer" not in out
    assert main(["list", "--options", "no_such_audit"]) == 2
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("audit ") and "dpcheck list --options NAME" in out


_HEAD = ('"schema": "dpcheck.report/1", "target": "t", "dpcheck_version": "0", "seed": 0, "alpha": 0.05, '
         '"started": "x", "duration_s": 1, "verdict": "pass"')


@pytest.mark.parametrize("content", [
    "{" + _HEAD + ', "checks": 3}', "{" + _HEAD + ', "checks": [1]}',
    "{" + _HEAD + ', "checks": [{"id": "a", "kind": "privacy", "verdict": "pass", "claim": 3, "measured": "x"}]}',
    "{" + _HEAD + ', "checks": [], "options": 5, "config": 3}',
    '[1, 2]', '{"schema": "dpcheck.report/1"}', "not json",
])
def test_malformed_report_files_exit_2(content, tmp_path, capsys):
    f = tmp_path / "r.json"
    f.write_text(content)
    assert main(["report", str(f)]) == 2
    err = capsys.readouterr().err
    assert "internal error" not in err and len(err.strip().splitlines()) == 1, err
    assert "report" in err


def test_usage_errors_are_one_line(capsys):
    assert main(["audit"]) == 2
    assert main(["audit", "_opt_all", "--epsilonn", "1"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 2 and "unrecognized arguments: --epsilonn" in err
    assert main(["--version"]) == 0


def test_declarations_match_what_each_audit_module_reads():
    """Per audit module: the options its audits declare are exactly the ones its code reads (o.NAME,
    o.extra["KEY"]). Declared but never read would be silently ignored; read but not declared would be
    refused on the command line."""
    import importlib
    import inspect
    import re
    from dpcheck.options import COMMON
    reg = registry.load()
    modules = {}
    for spec in reg.values():
        mod = spec.run.__module__
        if mod.startswith("dpcheck.audits."):
            uses, keys = modules.setdefault(mod, (set(), set()))
            uses.update(spec.uses)
            keys.update(o.name for o in spec.options)
    assert {"dpcheck.audits.dp_nash_vi", "dpcheck.audits.dp_ucbvi", "dpcheck.audits.privatizer_audits", "dpcheck.audits.examples"} <= set(modules)
    for mod, (uses, keys) in modules.items():
        src = inspect.getsource(importlib.import_module(mod))
        read = set(re.findall(r"\b(?:o|options|opts|exe)\.([a-z_]+)", src)) & set(COMMON)
        if "self.int_seed(" in src or "self.rng(" in src:     # per-step seeds derive from the run's --seed
            read |= {"seed"}
        if "self.blackbox(" in src:     # dpcheck.audit.Audit.blackbox hands the execution options to every call
            read |= {"alpha", "seed", "workers", "backend", "scheduler", "cache_dir"}
        if "exe.pick(" in src:          # ExecutionOptions.pick: the --quick size
            read.add("quick")
        if re.search(r"[(,]\s*(?:self\.)?exe\s*[,)]", src):   # ExecutionOptions handed whole to a library check
            read |= {"alpha", "seed", "workers", "backend", "scheduler", "cache_dir"}
        if "self.samples(" in src or "exe.budget(" in src:   # the audit's Defaults pair: --samples, --quick
            read |= {"samples", "quick"}
        if "self.epsilon" in src:       # Audit.epsilon: --epsilon or the audit's Defaults
            read.add("epsilon")
        read_keys = set(re.findall(r"""extra(?:\.get\(|\[)["'](\w+)["']""", src))
        read_keys |= set(re.findall(r"self\.params\.(\w+)", src))     # dpcheck.audit.Audit's options dataclass
        assert uses == read, (mod, uses ^ read)
        assert keys == read_keys, (mod, keys ^ read_keys)


def test_set_table_becomes_an_options_dataclass():
    import dataclasses
    spec = registry.load()["dp_ucbvi"]
    cls = spec.options_type()
    parsed = parse_set(spec.options, {"beta": "0.2"}, "dp_ucbvi")
    o = cls(**parsed)
    assert (o.calibration, o.beta, o.mode) == ("strict", 0.2, None)
    meta = {f.name: f.metadata for f in dataclasses.fields(cls)}
    assert meta["mode"]["choices"] == ("theory", "practical") and meta["beta"]["bounds"] == (0, 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.beta = 0.3


@pytest.mark.slow
@pytest.mark.parametrize("name, rc_expected", [("FINE", 0), ("LATE", 2)])
def test_user_file_target_on_dask(name, rc_expected, tmp_path, capsys):
    """A user file's `def` mechanism reaches dask workers (it used to hang: workers could not import the
    file's module), and a hanging call there is stopped too (worker threads: the thread fallback)."""
    pytest.importorskip("dask.distributed")
    f = _user_file(tmp_path, HANGING + LAPLACE.replace("T = ", "FINE = "))
    rc, err = _run(["audit", f"{f}:{name}", "--backend", "dask", "--samples", "200", "--timeout", "1"],
                   tmp_path, capsys)
    assert rc == rc_expected, err
    if rc_expected == 2:
        assert "timeout of 1 s" in err and "'late'" in err
