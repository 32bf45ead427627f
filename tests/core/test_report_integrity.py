"""Report integrity under interruption (dpcheck.report's invariant; DESIGN.md "a CI gate must never say PASS wrongly").

A kill at any moment (SIGKILL included) must leave either the previous run's files or files of the
new run only, whose JSON says complete: false and never the verdict pass; SIGTERM ends a run like
SIGINT (a clean "interrupted" report, exit 2) and leaves no joblib worker running.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import dpcheck
from dpcheck import registry
from dpcheck import report as rpt
from dpcheck.checks import Check
from dpcheck.cli import main
from dpcheck.context import AuditContext, AuditOptions

ROOT = Path(dpcheck.__file__).resolve().parent.parent
STEM = "_integrity"
VIEWS = (".md", ".html", ".junit.xml")


def _check(id, verdict="pass"):
    return Check(id=id, kind="assumption", verdict=verdict, claim={"source": "test"},
                 measured={"confidence": 1.0}, reason=f"{id} {verdict}")


# ------------------------------------------------------------------ reading a set of report files
def run_id_of(name: str, text: str) -> str | None:
    """The run id a report file carries (None if it carries none)."""
    if name.endswith(".json"):
        return json.loads(text).get("run_id")
    if name.endswith(".md"):
        m = re.match(r"<!-- dpcheck-run-id: (\S+)", text)
    elif name.endswith(".html"):
        m = re.search(r"<meta name='dpcheck-run-id' content='([^']*)'>", text)
    else:
        m = re.search(r'<property name="run_id" value="([^"]*)"/>', text)
    return m.group(1) if m else None


def says_pass_while_incomplete(name: str, text: str) -> bool:
    if name.endswith(".json"):
        r = json.loads(text)
        return r["verdict"] == "pass" and not (r.get("complete") is True and r.get("status") == "complete")
    if name.endswith(".junit.xml"):
        st = re.search(r'name="status" value="([^"]*)"', text).group(1)
        return st != "complete" and ("<error" not in text)
    if name.endswith(".html"):
        return "dpcheck-status' content='complete'" not in text and "INCOMPLETE" not in text
    return "status: complete" not in text.splitlines()[0] and "INCOMPLETE" not in text


def view_claims_complete_or_pass(name: str, text: str) -> bool:
    """Whether a view (Markdown, HTML, JUnit, the --json copy) tells its reader the run is complete or passed."""
    if name.endswith(".json"):
        r = json.loads(text)
        return r.get("complete") is True or r.get("status") == "complete" or r["verdict"] == "pass"
    if name.endswith(".junit.xml"):
        st = re.search(r'name="status" value="([^"]*)"', text).group(1)
        return st == "complete" or "<error" not in text
    if name.endswith(".html"):
        return "dpcheck-status' content='complete'" in text or "Verdict: <b>PASS" in text
    return "status: complete" in text.splitlines()[0] or "**Verdict: PASS**" in text


def assert_consistent(files: dict[str, str], old: dict[str, str] | None = None) -> str:
    """The on-disk invariant of dpcheck.report for one report's files {name: text}; returns which state.

    Besides one run id and no pass while incomplete: no view (Markdown, HTML, JUnit, the --json copy)
    says complete or PASS unless the JSON is there, complete, with the same run id (the JSON is the
    commit point; a view may lag behind it, never run ahead of it)."""
    if not files:
        return "empty"
    ids = {n: run_id_of(n, t) for n, t in files.items()}
    assert len(set(ids.values())) == 1, f"a mix of runs: {ids}"
    rid = next(iter(ids.values()))
    main_json = files.get(f"{STEM}.json")
    rep = json.loads(main_json) if main_json is not None else None
    for n, t in files.items():
        if n != f"{STEM}.json" and view_claims_complete_or_pass(n, t):
            assert rep is not None and rep.get("complete") is True and rep.get("status") == "complete" \
                and rep.get("run_id") == run_id_of(n, t), f"{n} says complete/PASS ahead of the JSON"
    if old and rid == run_id_of(f"{STEM}.json", old[f"{STEM}.json"]):
        for n, t in files.items():  # only the previous run's files, unchanged
            assert old.get(n) == t, f"{n} of the previous run was changed"
        return "old"
    for n, t in files.items():
        assert not says_pass_while_incomplete(n, t), f"{n} says pass for an incomplete run"
    if rep is not None:
        if rep["complete"]:
            assert rep["status"] == "complete"
            return "complete"
        assert rep["verdict"] != "pass"
    return "incomplete"


def read_set(d: Path, copy: Path | None = None) -> dict[str, str]:
    out = {p.name: p.read_text() for p in d.glob(f"{STEM}*") if not p.name.endswith(".tmp")}
    if copy is not None and copy.exists():
        out["copy.json"] = copy.read_text()
    return out


# ------------------------------------------------------------------ in-process: the report while it streams
@registry.register("_integrity_stream", algorithm="test", notion="DP", claim="nothing",
                   options=(registry.SetOption("out", str),))
def _run_stream(ctx):
    out = Path(ctx.options.extra["out"])
    ctx.add(_check("a.one"))
    # what a CI reading the files right now (or after a SIGKILL now) sees
    ctx.config["seen"] = {p.name: p.read_text() for p in sorted(out.glob("_integrity_stream*"))}
    ctx.add(_check("a.two"))


def test_streamed_report_is_incomplete_and_never_pass(tmp_path):
    # an older complete run into the same folder
    assert main(["audit", "_integrity_stream", "--out", str(tmp_path), "--quiet", "--set", f"out={tmp_path}"]) == 0
    old = json.loads((tmp_path / "_integrity_stream.json").read_text())
    assert old["complete"] is True and old["status"] == "complete" and old["verdict"] == "pass"
    assert main(["audit", "_integrity_stream", "--out", str(tmp_path), "--quiet", "--set", f"out={tmp_path}"]) == 0
    new = json.loads((tmp_path / "_integrity_stream.json").read_text())
    assert new["run_id"] != old["run_id"]
    seen = new["config"]["seen"]
    # mid-run: the old views are gone, the JSON and JUnit are this run's and say incomplete
    assert sorted(seen) == ["_integrity_stream.json", "_integrity_stream.junit.xml"]
    mid = json.loads(seen["_integrity_stream.json"])
    assert mid["run_id"] == new["run_id"] and mid["status"] == "running" and mid["complete"] is False
    assert mid["verdict"] == "inconclusive" and [c["id"] for c in mid["checks"]] == ["a.one"]
    assert "<error" in seen["_integrity_stream.junit.xml"] and new["run_id"] in seen["_integrity_stream.junit.xml"]
    # the final set: one run id in every file
    final = {p.name: p.read_text() for p in tmp_path.glob("_integrity_stream*")}
    assert {run_id_of(n, t) for n, t in final.items()} == {new["run_id"]}
    assert len(final) == 4


def test_context_report_statuses():
    ctx = AuditContext("t", AuditOptions())
    ctx.add(_check("a"))
    assert ctx.report(status="running")["verdict"] == "inconclusive"
    assert ctx.report(status="running")["complete"] is False
    done = ctx.report()
    assert done["verdict"] == "pass" and done["complete"] is True and done["status"] == "complete"
    err = ctx.report(error="boom")
    assert err["status"] == "error" and err["complete"] is False and err["verdict"] == "inconclusive"
    intr = ctx.report(error="interrupted", status="interrupted")
    assert intr["status"] == "interrupted" and intr["verdict"] == "inconclusive"
    ctx.add(_check("b", "fail"))
    assert ctx.report(status="running")["verdict"] == "fail"   # a violation found stays one
    assert len({ctx.report()["run_id"], ctx.report(status="running")["run_id"]}) == 1
    with pytest.raises(ValueError):
        rpt.ReportWriter(".", "x").stream(done)    # only finish() may commit a run


# ------------------------------------------------------------------ every kill point, replayed
@registry.register("_integrity", algorithm="test", notion="DP", claim="nothing")
def _run_three(ctx):
    for k in range(3):
        ctx.add(_check(f"a.c{k}"))


@pytest.mark.parametrize("with_copy", [False, True])
def test_every_kill_point_leaves_a_consistent_set(tmp_path, monkeypatch, with_copy):
    """Record every file operation of a run into a folder holding an older complete set, then
    replay each prefix of them: each prefix is what a SIGKILL at that moment leaves on disk
    (each operation is atomic: os.replace or unlink)."""
    copy = tmp_path / "elsewhere" / "copy.json" if with_copy else None
    extra = ["--json", str(copy)] if copy else []
    assert main(["audit", "_integrity", "--out", str(tmp_path), "--quiet", *extra]) == 0
    old = read_set(tmp_path, copy)
    assert len(old) == 4 + bool(copy)
    ops = _record_ops(monkeypatch)
    assert main(["audit", "_integrity", "--out", str(tmp_path), "--quiet", *extra]) == 0
    assert len(ops) > 8
    states, disk = _replay(ops, old, copy)
    assert states == {"old", "incomplete", "complete"}
    # after the last write: the whole set, every file this run's and complete
    assert sorted(disk) == sorted(old)
    assert all(view_claims_complete_or_pass(n, t) for n, t in disk.items())


def _record_ops(monkeypatch) -> list:
    """Every file operation of dpcheck.report from now on, in order: ("write", path, text) / ("remove", path, None)."""
    ops = []
    real_write, real_remove = rpt._atomic_write, rpt._remove

    def write(path, text):
        ops.append(("write", Path(path), text))
        return real_write(path, text)

    def remove(path):
        ops.append(("remove", Path(path), None))
        return real_remove(path)

    monkeypatch.setattr(rpt, "_atomic_write", write)
    monkeypatch.setattr(rpt, "_remove", remove)
    return ops


def _replay(ops, old, copy=None):
    """Apply each prefix of ``ops`` to ``old`` (what a SIGKILL at that moment leaves; each operation is
    atomic: os.replace or unlink) and check it; (the states seen, the files after the last operation)."""
    states = set()
    for k in range(len(ops) + 1):
        disk = dict(old)
        for op, path, text in ops[:k]:
            name = "copy.json" if copy is not None and path == copy else path.name
            if op == "write":
                disk[name] = text
            else:
                disk.pop(name, None)
        states.add(assert_consistent(disk, old))
    return states, disk


def test_rerender_into_a_folder_of_another_run_never_mixes(tmp_path, monkeypatch):
    """`dpcheck report SRC.json --out DIR` where DIR holds another run's set of the same name: DIR ends
    with SRC's run alone (the JSON is written there too), and no kill point mixes the two runs."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    assert main(["audit", "_integrity", "--out", str(src), "--quiet"]) == 0
    assert main(["audit", "_integrity", "--out", str(dst), "--quiet"]) == 0
    old = read_set(dst)
    ops = _record_ops(monkeypatch)
    assert main(["report", str(src / f"{STEM}.json"), "--out", str(dst)]) == 0
    states, disk = _replay(ops, old)
    assert states == {"old", "complete"}
    assert read_set(dst) == disk and sorted(disk) == sorted(old)
    assert {run_id_of(n, t) for n, t in disk.items()} == {json.loads(read_set(src)[f"{STEM}.json"])["run_id"]}


# ------------------------------------------------------------------ subprocesses killed mid-run
SLOW = textwrap.dedent('''
    import os, sys, time
    from dpcheck import registry
    from dpcheck.checks import Check
    from dpcheck.cli import main
    from dpcheck.parallel import run_chunks

    def chunk(i, seed, pid_dir, sleep):
        open(os.path.join(pid_dir, "w%d" % os.getpid()), "w").close()
        time.sleep(sleep)
        return i

    @registry.register("_integrity", algorithm="test", notion="DP", claim="nothing",
                       uses=("seed", "alpha", *registry.PARALLEL),
                       options=(registry.SetOption("n", int), registry.SetOption("sleep", float),
                                registry.SetOption("pids", str)))
    def run(ctx):
        x = ctx.options.extra
        for k in range(int(x["n"])):
            if x.get("pids"):
                o = ctx.options
                run_chunks(chunk, 4, ctx.seed_sequence("c", k), workers=o.workers, backend=o.backend,
                           scheduler=o.scheduler, args=(x["pids"], float(x["sleep"])))
            else:
                time.sleep(float(x["sleep"]))
            ctx.add(Check(id="t.c%d" % k, kind="assumption", verdict="pass", claim={"source": "t"},
                          measured={"confidence": 1.0}, reason="ok"))

    if __name__ == "__main__":
        sys.exit(main(sys.argv[1:]))
''')


def _env(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(tmp_path)])
    return env


def _foreground_sigint():
    """The child's SIGINT as a terminal's foreground job has it (the default action). A pytest started
    as a background job of a non-interactive shell (``pytest ... &``) ignores SIGINT, every child
    inherits that, and dpcheck rightly keeps an inherited ignored SIGINT ignored
    (test_an_inherited_ignored_sigint_stays_ignored), so the Ctrl-C tests would test nothing there."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(tmp_path, out, *args, sigint_ignored=False):
    script = tmp_path / "slow_audit.py"
    script.write_text(SLOW)
    pre = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if sigint_ignored else _foreground_sigint
    return subprocess.Popen([sys.executable, str(script), "audit", "_integrity", "--out", str(out), "--quiet", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(tmp_path),
                            preexec_fn=pre)


def _wait_for_checks(out: Path, n: int, proc, timeout=60.0) -> None:
    """Poll the streamed JSON until it holds >= n checks (a progress condition, not a clock)."""
    t_end = time.monotonic() + timeout
    p = out / f"{STEM}.json"
    while time.monotonic() < t_end:
        assert proc.poll() is None, proc.communicate()
        try:
            rep = json.loads(p.read_text())
            if rep.get("status") == "running" and len(rep["checks"]) >= n:
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.02)
    raise AssertionError(f"no streamed report with {n} checks")


def _old_set(tmp_path, out):
    p = _start(tmp_path, out, "--set", "n=2", "--set", "sleep=0")
    assert p.wait(60) == 0, p.communicate()
    old = read_set(out)
    assert json.loads(old[f"{STEM}.json"])["verdict"] == "pass" and len(old) == 4
    return old


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("after", [0, 2])
def test_killed_rerun_never_leaves_a_mix_or_a_pass(tmp_path, sig, after):
    out = tmp_path / "reports"
    old = _old_set(tmp_path, out)
    proc = _start(tmp_path, out, "--set", "n=200", "--set", "sleep=0.05")
    _wait_for_checks(out, after, proc)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    files = read_set(out)
    assert assert_consistent(files, old) == "incomplete"
    rep = json.loads(files[f"{STEM}.json"])
    assert rep["complete"] is False and rep["verdict"] != "pass" and len(rep["checks"]) >= after
    # a CI reading JUnit sees an error (or no JUnit at all: a kill just after the JSON, before the JUnit)
    assert "<error" in files.get(f"{STEM}.junit.xml", "<error")
    if sig != signal.SIGKILL:   # SIGTERM is handled like SIGINT
        name = signal.Signals(sig).name
        assert proc.returncode == 2
        assert rep["status"] == "interrupted" and rep["error"] == f"interrupted ({name})"
        assert sorted(files) == sorted(f"{STEM}{s}" for s in (".json",) + VIEWS)   # the whole set, marked incomplete
        assert "Traceback" not in err and err.strip().splitlines()[-1].startswith(f"dpcheck: error: interrupted ({name})")
    else:
        assert proc.returncode == -signal.SIGKILL
        assert rep["status"] == "running"
        assert not any(n.endswith((".md", ".html")) for n in files)    # the old views were removed


@pytest.mark.slow
def test_an_inherited_ignored_sigint_stays_ignored(tmp_path):
    """A background job of a non-interactive shell ignores SIGINT (POSIX); dpcheck keeps it ignored, so a
    Ctrl-C meant for the shell does not stop it, while SIGTERM still ends the run as an interruption."""
    out = tmp_path / "reports"
    proc = _start(tmp_path, out, "--set", "n=200", "--set", "sleep=0.05", sigint_ignored=True)
    _wait_for_checks(out, 2, proc)
    proc.send_signal(signal.SIGINT)
    _wait_for_checks(out, 4, proc)            # still running, checks still coming
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    rep = json.loads((out / f"{STEM}.json").read_text())
    assert proc.returncode == 2 and rep["status"] == "interrupted" and rep["error"] == "interrupted (SIGTERM)"
    assert rep["complete"] is False and rep["verdict"] != "pass" and len(rep["checks"]) >= 4


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"     # a zombie computes nothing
    except FileNotFoundError:
        return False


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_kill_during_parallel_work_leaves_no_worker(tmp_path, sig):
    out, pids = tmp_path / "reports", tmp_path / "pids"
    pids.mkdir()
    proc = _start(tmp_path, out, "--workers", "2", "--set", "n=50", "--set", "sleep=2", "--set", f"pids={pids}")
    t_end = time.monotonic() + 60
    while len(list(pids.iterdir())) < 2 and time.monotonic() < t_end:  # both workers are inside a chunk
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    workers = [int(p.name[1:]) for p in pids.iterdir()]
    assert len(workers) >= 2 and all(_alive(w) for w in workers)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    t_end = time.monotonic() + 10      # a worker killed now dies at once; one left alone sleeps 2 s more
    while any(_alive(w) for w in workers) and time.monotonic() < t_end:
        time.sleep(0.05)
    assert not any(_alive(w) for w in workers), "a loky worker outlived the interrupted audit"
    rep = json.loads((out / f"{STEM}.json").read_text())
    assert rep["complete"] is False and rep["verdict"] != "pass"
    if sig == signal.SIGTERM:
        assert proc.returncode == 2 and rep["status"] == "interrupted" and "Traceback" not in err


@pytest.mark.slow
def test_sigterm_during_a_user_target(tmp_path):
    """The `path.py:NAME` route (black-box audit of a user's mechanism), interrupted inside the mechanism."""
    f = tmp_path / "slow_target.py"
    f.write_text(textwrap.dedent('''
        import time
        import numpy as np
        from dpcheck import AuditTarget, Claim

        def slow(count, rng, size):
            open(__file__ + ".started", "w").close()
            time.sleep(0.5)
            return count + rng.laplace(0.0, 1.0, size)

        target = AuditTarget(name="slow", mechanism=slow, pairs=[(10, 11)], claim=Claim(epsilon=1.0, source="t"))
    '''))
    out = tmp_path / "reports"
    proc = subprocess.Popen([sys.executable, "-m", "dpcheck", "audit", f"{f}:target", "--out", str(out), "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(tmp_path))
    marker = Path(str(f) + ".started")
    t_end = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < t_end:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "Traceback" not in err and "interrupted (SIGTERM)" in err
    js = list(out.glob("*.json"))
    assert len(js) == 1
    rep = json.loads(js[0].read_text())
    assert rep["status"] == "interrupted" and rep["complete"] is False and rep["verdict"] != "pass"
    assert {run_id_of(p.name, p.read_text()) for p in out.iterdir() if not p.name.endswith(".tmp")} == {rep["run_id"]}


@registry.register("_integrity_crash_late", algorithm="test", notion="DP", claim="nothing")
def _run_crash_late(ctx):
    ctx.add(_check("a.one"))
    ctx.add(_check("a.two"))
    raise FloatingPointError("all outputs are inf")


def test_exception_after_passes_leaves_an_incomplete_set(tmp_path, capsys):
    assert main(["audit", "_integrity_crash_late", "--out", str(tmp_path), "--quiet"]) == 2
    files = {p.name: p.read_text() for p in tmp_path.glob("_integrity_crash_late*")}
    assert len(files) == 4
    rep = json.loads(files["_integrity_crash_late.json"])
    assert rep["status"] == "error" and rep["complete"] is False and rep["verdict"] == "inconclusive"
    assert {run_id_of(n, t) for n, t in files.items()} == {rep["run_id"]}
    assert "<error" in files["_integrity_crash_late.junit.xml"]
    assert "INCOMPLETE" in files["_integrity_crash_late.html"] and "INCOMPLETE" in files["_integrity_crash_late.md"]
    out = capsys.readouterr()
    assert "overall: INCOMPLETE (error), INCONCLUSIVE so far" in out.out
    assert "all outputs are inf" in out.err and "Traceback" not in out.err


# ------------------------------------------------------------------ `dpcheck report` on bad files
def _good_report(tmp_path) -> str:
    assert main(["audit", "_integrity", "--out", str(tmp_path / "g"), "--quiet"]) == 0
    return (tmp_path / "g" / f"{STEM}.json").read_text()


@pytest.mark.parametrize("content, needle", [
    (lambda good: good[: len(good) // 2], "not a JSON report"),                # truncated by a kill
    (lambda good: "", "not a JSON report"),
    (lambda good: b"\x89PNG\r\n\x1a\n\x00\xff".decode("latin-1"), "not a"),
    (lambda good: "[1, 2]", "not a dpcheck report"),
    (lambda good: "3", "not a dpcheck report"),
    (lambda good: json.dumps({"schema": "dpcheck.report/1", "target": "x"}), "lacks the fields"),
    (lambda good: good.replace('"checks": [', '"checks": 3, "x": ['), "invalid field"),
    (lambda good: re.sub(r'"verdict": "pass"', '"verdict": "maybe"', good, count=1), "invalid field"),
    (lambda good: good.replace('"duration_s": ', '"duration_s": "soon", "_": '), "invalid field"),
    (lambda good: good.replace('"measured": {', '"measured": [], "_m": {'), "wrong type"),
    (lambda good: good.replace('"status": "complete"', '"status": "running"')
                      .replace('"complete": true', '"complete": false'), "says pass but is incomplete"),
])
@pytest.mark.slow
def test_report_command_on_bad_files_one_line_exit_2(tmp_path, content, needle):
    good = _good_report(tmp_path)
    bad = tmp_path / "bad.json"
    text = content(good)
    if text.startswith("\x89PNG"):
        bad.write_bytes(text.encode("latin-1"))
    else:
        bad.write_text(text)
    out = subprocess.run([sys.executable, "-m", "dpcheck", "report", str(bad)], capture_output=True, text=True,
                         env=_env(tmp_path))
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr and needle in lines[0], out.stderr


def test_report_command_on_a_directory(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    assert "no such report file" in capsys.readouterr().err


def test_report_command_rerenders_an_incomplete_report_as_incomplete(tmp_path, capsys):
    assert main(["audit", "_integrity_crash_late", "--out", str(tmp_path), "--quiet"]) == 2
    other = tmp_path / "other"
    assert main(["report", str(tmp_path / "_integrity_crash_late.json"), "--out", str(other)]) == 0
    assert "<error" in (other / "_integrity_crash_late.junit.xml").read_text()
    assert "INCOMPLETE" in (other / "_integrity_crash_late.html").read_text()
