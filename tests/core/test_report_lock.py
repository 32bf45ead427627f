"""One run at a time per report (dpcheck.report_lock): a second run into the same report files is refused
with exit 2, naming the first, and writes nothing; a SIGKILLed run leaves no lock that blocks; a killed
run's temporary files are removed by the next run that holds the lock, and only its own.

The false PASS this prevents (issue 17): two runs of one audit into one --out left the JSON of the
passing run next to the other's views, and the passing verdict standing for the failing run.
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
from dpcheck.checks import Check
from dpcheck.cli import main
from dpcheck.report_lock import LOCK_SUFFIX, ReportBusy, ReportLock, key_of

ROOT = Path(dpcheck.__file__).resolve().parent.parent
STEM = "_lock_probe"
HOLDER = {"run_id": "20000101T000000Z-feedbeef", "started": "2000-01-01T00:00:00+00:00",
          "target": "the_first_one", "command": "audit"}


@registry.register(STEM, algorithm="test", notion="DP", claim="nothing")
def _run_probe(ctx):
    ctx.add(Check(id="a.one", kind="assumption", verdict="pass", claim={"source": "test"},
                  measured={"confidence": 1.0}, reason="ok"))


def _files(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in d.iterdir()} if d.exists() else {}


def _run_ids(d: Path, stem: str) -> set:
    """The run ids the report files of ``stem`` in ``d`` carry (None for a file without one)."""
    ids = set()
    for p in d.glob(f"{stem}.*"):
        t = p.read_text()
        m = re.search(r"\d{8}T\d{6}Z-[0-9a-f]{8}", t) if p.suffix != ".json" else None
        ids.add(json.loads(t)["run_id"] if p.suffix == ".json" else (m.group(0) if m else None))
    return ids


# ------------------------------------------------------------------ in-process: a lock held by "another run"
def test_second_run_into_the_same_report_is_refused_and_writes_nothing(tmp_path, capsys):
    d = tmp_path / "out"
    assert main(["audit", STEM, "--out", str(d), "--quiet"]) == 0
    before = _files(d)
    assert sorted(before) == sorted(f"{STEM}{s}" for s in (".json", ".md", ".html", ".junit.xml"))  # no lock left
    capsys.readouterr()
    with ReportLock([d / f"{STEM}.json"], HOLDER):   # flock is per open file: this process holds it as another would
        assert main(["audit", STEM, "--out", str(d), "--quiet"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "Traceback" not in err[0]
        assert f"pid {os.getpid()}" in err[0] and HOLDER["run_id"] in err[0] and HOLDER["started"] in err[0]
        assert "the_first_one" in err[0] and str(d / STEM) in err[0]
        after = _files(d)
        del after[f".{STEM}{LOCK_SUFFIX}"]
        assert after == before            # the refused run wrote nothing
    assert _files(d) == before            # the holder removes its lock file


def test_json_copy_onto_a_locked_report_is_refused(tmp_path, capsys):
    """--json PATH lands on another run's report: refused, nothing written in either folder."""
    d, other = tmp_path / "d", tmp_path / "other"
    with ReportLock([d / "shared.json"], HOLDER):
        for target in (d / "shared.json", d / "shared.md"):   # the copy would overwrite its JSON or a view
            assert main(["audit", STEM, "--out", str(other), "--json", str(target), "--quiet"]) == 2
            assert HOLDER["run_id"] in capsys.readouterr().err
            assert not list(other.glob(f"{STEM}*")) and sorted(_files(d)) == [f".shared{LOCK_SUFFIX}"]


def test_report_command_respects_the_lock(tmp_path, capsys):
    d = tmp_path / "d"
    assert main(["audit", STEM, "--out", str(d), "--quiet"]) == 0
    (d / f"{STEM}.md").unlink()
    before = _files(d)
    capsys.readouterr()
    with ReportLock([d / f"{STEM}.json"], HOLDER):
        assert main(["report", str(d / f"{STEM}.json")]) == 2
        assert HOLDER["run_id"] in capsys.readouterr().err
        after = _files(d)
        del after[f".{STEM}{LOCK_SUFFIX}"]
        assert after == before
    assert main(["report", str(d / f"{STEM}.json")]) == 0     # free again: renders the missing view
    assert (d / f"{STEM}.md").exists()


def test_reports_of_other_targets_may_share_a_folder(tmp_path):
    d = tmp_path / "d"
    with ReportLock([d / "some_other_audit.json"], HOLDER):
        assert main(["audit", STEM, "--out", str(d), "--quiet"]) == 0
    assert (d / f"{STEM}.json").exists()


def test_stale_temps_of_this_report_only_are_removed_once_the_lock_is_held(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    mine = [f".{STEM}.json.abcd_123.tmp", f".{STEM}.html.zz9zz9zz.tmp", f".{STEM}.junit.xml.q1w2e3r4.tmp"]
    others = [f".{STEM}.json.json.abcd_123.tmp",   # report "_lock_probe.json", not this one
              ".other.json.abcd_123.tmp", f".{STEM}.json.abc.tmp", f"{STEM}.json.abcd_123.tmp"]
    for n in mine + others:
        (d / n).write_text("partial")
    with ReportLock([d / f"{STEM}.json"], HOLDER):   # a live run holds them: a refused run leaves them
        assert main(["audit", STEM, "--out", str(d), "--quiet"]) == 2
        assert all((d / n).exists() for n in mine)
    assert main(["audit", STEM, "--out", str(d), "--quiet"]) == 0
    assert not any((d / n).exists() for n in mine)
    assert all((d / n).exists() for n in others)


def test_a_lock_is_released_when_the_run_raises(tmp_path):
    d = tmp_path / "d"
    assert main(["audit", STEM, "--out", str(d), "--set", "x=1", "--quiet"]) == 2    # refused option: no lock taken
    assert not d.exists()
    lock = ReportLock([d / f"{STEM}.json"], HOLDER)
    with pytest.raises(RuntimeError):
        with lock:
            raise RuntimeError
    assert main(["audit", STEM, "--out", str(d), "--quiet"]) == 0


def test_a_lock_file_removed_while_waiting_is_locked_anew(tmp_path, monkeypatch):
    """The holder removes its lock file as it lets go; a run that had opened that file must not take
    the lock of the removed file (a third run would then lock a new file beside it)."""
    import fcntl
    first = ReportLock([tmp_path / "x.json"], HOLDER).acquire()
    real, calls = fcntl.flock, []

    def flock(fd, op):
        calls.append(fd)
        if len(calls) == 1:
            first.release()          # after the second run opened the file, before it locks it
        return real(fd, op)

    monkeypatch.setattr(fcntl, "flock", flock)
    second = ReportLock([tmp_path / "x.json"], {**HOLDER, "run_id": "second"}).acquire()
    monkeypatch.undo()
    assert len(calls) == 2           # it noticed and locked the file now at the path
    with pytest.raises(ReportBusy, match="run second"):
        ReportLock([tmp_path / "x.json"], HOLDER).acquire()
    second.release()
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("name, key", [("x.json", "x"), ("x.junit.xml", "x"), ("x.md", "x"), ("x.html", "x"),
                                       ("x.json.json", "x.json"), ("r.txt", "r.txt"), (".json", ".json")])
def test_key_of(name, key):
    assert key_of(name) == key


# ------------------------------------------------------------------ separate processes
HOLD = textwrap.dedent('''
    import sys
    from dpcheck.report_lock import ReportLock
    ReportLock(sys.argv[1:], {"run_id": "20000101T000000Z-feedbeef", "started": "2000-01-01T00:00:00+00:00",
                              "target": "helper", "command": "audit"}).acquire()
    print("locked", flush=True)
    sys.stdin.read()          # hold until killed
''')

SLOW = textwrap.dedent('''
    import sys, time
    from dpcheck import registry
    from dpcheck.checks import Check
    from dpcheck.cli import main

    @registry.register("_lock_slow", algorithm="test", notion="DP", claim="nothing",
                       options=(registry.SetOption("n", int), registry.SetOption("sleep", float)))
    def run(ctx):
        for k in range(int(ctx.options.extra["n"])):
            time.sleep(float(ctx.options.extra["sleep"]))
            ctx.add(Check(id="t.c%d" % k, kind="assumption", verdict="pass", claim={"source": "t"},
                          measured={"confidence": 1.0}, reason="ok"))

    if __name__ == "__main__":
        sys.exit(main(sys.argv[1:]))
''')


def _env(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(tmp_path)])
    return env


@pytest.mark.slow
def test_a_real_audit_is_refused_while_another_process_holds_the_report_and_not_after_it_is_killed(tmp_path):
    """`dpcheck audit laplace_example --quick` (and `dpcheck report`) against a lock held by another
    process: exit 2 naming it, nothing written; after SIGKILL of the holder its lock file is left
    behind but blocks nothing."""
    d = tmp_path / "d"
    assert main(["audit", STEM, "--out", str(tmp_path / "g"), "--quiet"]) == 0
    d.mkdir()
    (d / "laplace_example.json").write_text((tmp_path / "g" / f"{STEM}.json").read_text())   # a valid report
    (tmp_path / "hold.py").write_text(HOLD)
    holder = subprocess.Popen([sys.executable, str(tmp_path / "hold.py"), str(d / "laplace_example.json")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_env(tmp_path))
    try:
        assert holder.stdout.readline().strip() == "locked"
        before = _files(d)
        assert sorted(before) == [f".laplace_example{LOCK_SUFFIX}", "laplace_example.json"]
        for cmd in (["audit", "laplace_example", "--quick", "--out", str(d)],
                    ["report", str(d / "laplace_example.json")]):
            out = subprocess.run([sys.executable, "-m", "dpcheck", *cmd], capture_output=True, text=True,
                                 env=_env(tmp_path), timeout=120)
            err = out.stderr.strip().splitlines()
            assert out.returncode == 2 and len(err) == 1, out.stderr
            assert f"pid {holder.pid}" in err[0] and "20000101T000000Z-feedbeef" in err[0] and "2000-01-01" in err[0]
            assert _files(d) == before
    finally:
        holder.kill()
        holder.communicate(timeout=60)
    assert holder.returncode == -signal.SIGKILL
    assert (d / f".laplace_example{LOCK_SUFFIX}").exists()      # a record, not a lock
    out = subprocess.run([sys.executable, "-m", "dpcheck", "report", str(d / "laplace_example.json")],
                         capture_output=True, text=True, env=_env(tmp_path), timeout=120)
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in d.iterdir()) == sorted(f"laplace_example{s}" for s in (".json", ".md", ".html",
                                                                                         ".junit.xml"))


@pytest.mark.slow
def test_two_real_runs_into_one_folder(tmp_path):
    """Run A streams into D; run B of the same audit into D exits 2 naming A (pid and run id) and
    leaves A's files alone; after A is SIGKILLed, B runs, removes A's temporary files, and the set is B's."""
    d = tmp_path / "d"
    script = tmp_path / "slow_audit.py"
    script.write_text(SLOW)
    cmd = [sys.executable, str(script), "audit", "_lock_slow", "--out", str(d), "--quiet"]
    a = subprocess.Popen(cmd + ["--set", "n=100000", "--set", "sleep=0.05"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=_env(tmp_path))
    try:
        rid = None
        while rid is None:              # until A has streamed its first report (a progress condition)
            assert a.poll() is None, a.communicate()
            try:
                rid = json.loads((d / "_lock_slow.json").read_text())["run_id"]
            except (OSError, ValueError, KeyError):
                time.sleep(0.02)
        b = subprocess.run(cmd + ["--set", "n=1", "--set", "sleep=0"], capture_output=True, text=True,
                           env=_env(tmp_path), timeout=120)
        assert a.poll() is None        # A was alive all along
        err = b.stderr.strip().splitlines()
        assert b.returncode == 2 and len(err) == 1, b.stderr
        assert f"pid {a.pid}" in err[0] and rid in err[0] and "_lock_slow" in err[0]
        assert _run_ids(d, "_lock_slow") == {rid}
    finally:
        a.kill()
        a.communicate(timeout=60)
    stale = d / "._lock_slow.json.k1lled_0.tmp"     # what a kill inside _atomic_write leaves
    stale.write_text("{")
    b = subprocess.run(cmd + ["--set", "n=2", "--set", "sleep=0"], capture_output=True, text=True,
                       env=_env(tmp_path), timeout=120)
    assert b.returncode == 0, b.stderr
    assert not stale.exists()
    rep = json.loads((d / "_lock_slow.json").read_text())
    assert rep["complete"] is True and rep["run_id"] != rid and _run_ids(d, "_lock_slow") == {rep["run_id"]}
    assert sorted(p.name for p in d.iterdir()) == sorted(f"_lock_slow{s}" for s in (".json", ".md", ".html",
                                                                                    ".junit.xml"))
