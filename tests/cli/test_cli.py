"""The command line contract (DESIGN.md): exit codes 0/1/2, one clear line, no traceback, no lost work."""
import json
import subprocess
import sys

import pytest

from dpcheck import registry
from dpcheck.checks import Check, invariant_check
from dpcheck.cli import main


def _check(id, verdict):
    return Check(id=id, kind="assumption", verdict=verdict, claim={"source": "test"},
                 measured={"confidence": 1.0}, reason=f"{id} {verdict}")


@registry.register("_test_pass", algorithm="test", notion="DP", claim="nothing")
def _run_pass(ctx):
    ctx.config["mode"] = "test"
    ctx.add(_check("a.one", "pass"))
    ctx.add(_check("a.two", "inconclusive"))


@registry.register("_test_fail", algorithm="test", notion="DP", claim="nothing")
def _run_fail(ctx):
    ctx.add(_check("a.one", "pass"))
    ctx.add(_check("a.bad", "fail"))


@registry.register("_test_crash", algorithm="test", notion="DP", claim="nothing")
def _run_crash(ctx):
    ctx.add(_check("a.done", "pass"))
    raise RuntimeError("privatizer exploded")


def test_exit_codes_and_reports(tmp_path, capsys):
    assert main(["audit", "_test_pass", "--out", str(tmp_path), "--quiet"]) == 0
    assert main(["audit", "_test_pass", "--out", str(tmp_path), "--quiet", "--strict"]) == 1
    assert main(["audit", "_test_fail", "--out", str(tmp_path), "--quiet"]) == 1
    rep = json.loads((tmp_path / "_test_fail.json").read_text())
    assert rep["schema"] == "dpcheck.report/1" and rep["verdict"] == "fail"
    for key in ("target", "dpcheck_version", "seed", "alpha", "started", "duration_s", "checks"):
        assert key in rep
    assert (tmp_path / "_test_fail.md").exists()
    assert (tmp_path / "_test_fail.html").exists()
    junit = (tmp_path / "_test_fail.junit.xml").read_text()
    assert 'failures="1"' in junit and "<failure" in junit
    out = capsys.readouterr().out
    assert "FAIL" in out and "a.bad" in out


def test_crash_keeps_finished_checks(tmp_path, capsys):
    assert main(["audit", "_test_crash", "--out", str(tmp_path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "privatizer exploded" in err and "Traceback" not in err
    rep = json.loads((tmp_path / "_test_crash.json").read_text())
    assert rep["complete"] is False and [c["id"] for c in rep["checks"]] == ["a.done"]
    assert rep["verdict"] == "inconclusive"      # never "pass" for an audit that did not finish
    assert rep["status"] == "error" and rep["error"].startswith("internal error: RuntimeError")
    junit = (tmp_path / "_test_crash.junit.xml").read_text()
    assert "<error" in junit and rep["run_id"] in junit


def test_crash_with_json_to_stdout_prints_the_incomplete_report(tmp_path, capsys):
    assert main(["audit", "_test_crash", "--out", str(tmp_path), "--json", "-", "--quiet"]) == 2
    out = capsys.readouterr()
    rep = json.loads(out.out)                    # stdout is the JSON alone, parseable
    assert rep["complete"] is False and rep["verdict"] == "inconclusive" and rep["status"] == "error"
    assert "privatizer exploded" in out.err


def test_json_copy_belongs_to_the_run(tmp_path):
    copy = tmp_path / "ci" / "result.json"
    assert main(["audit", "_test_fail", "--out", str(tmp_path), "--json", str(copy), "--quiet"]) == 1
    a, b = json.loads(copy.read_text()), json.loads((tmp_path / "_test_fail.json").read_text())
    assert a == b and a["complete"] is True and a["run_id"]
    assert not list(tmp_path.rglob("*.tmp"))     # atomic writes leave no temporary files


def test_json_to_stdout(tmp_path, capsys):
    assert main(["audit", "_test_pass", "--out", str(tmp_path), "--json", "-", "--quiet"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["verdict"] == "inconclusive"


@pytest.mark.parametrize("argv, needle", [
    (["audit", "no_such_dir/no_such_file.py:nothing"], "no such file"),
    (["audit", "no_such_audit"], "no audit named"),
    (["audit", "_test_pass", "--epsilon", "-1"], "epsilon"),
    (["audit", "_test_pass", "--epsilon", "abc"], "epsilon"),
    (["audit", "_test_pass", "--alpha", "2"], "alpha"),
    (["audit", "_test_pass", "--samples", "zzz"], "integer"),
    (["report", "does_not_exist.json"], "no such report"),
])
def test_bad_input_exit_2_one_line(argv, needle, capsys, tmp_path):
    rc = main(argv + (["--out", str(tmp_path)] if argv[0] == "audit" else []))
    assert rc == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_user_file_that_is_not_a_target(tmp_path, capsys):
    f = tmp_path / "t.py"
    f.write_text("x = 3\ndef f(a):\n    return a\nclass C: pass\ndef boom():\n    raise ValueError('nope')\n")
    for name, needle in [("x", "not a dpcheck.AuditTarget"), ("missing", "no attribute"),
                         ("f", "zero-argument"), ("C", "not a dpcheck.AuditTarget"), ("boom", "nope")]:
        assert main(["audit", f"{f}:{name}", "--out", str(tmp_path)]) == 2
        assert needle in capsys.readouterr().err
    md = tmp_path / "README.md"
    md.write_text("# hello")
    assert main(["audit", f"{md}:x", "--out", str(tmp_path)]) == 2
    assert "not a Python file" in capsys.readouterr().err
    bad = tmp_path / "syntax.py"
    bad.write_text("def (:\n")
    assert main(["audit", f"{bad}:x", "--out", str(tmp_path)]) == 2
    assert "SyntaxError" in capsys.readouterr().err


def test_report_rerenders_from_json(tmp_path, capsys):
    assert main(["audit", "_test_fail", "--out", str(tmp_path), "--quiet"]) == 1
    for p in tmp_path.glob("_test_fail.[mh]*"):
        p.unlink()
    other = tmp_path / "other"
    assert main(["report", str(tmp_path / "_test_fail.json"), "--out", str(other)]) == 0
    assert (other / "_test_fail.md").exists() and (other / "_test_fail.html").exists()
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "something else"}')
    assert main(["report", str(bad)]) == 2
    assert "not a dpcheck report" in capsys.readouterr().err


@pytest.mark.slow
def test_list_runs():
    out = subprocess.run([sys.executable, "-m", "dpcheck", "list"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


@pytest.mark.slow
def test_console_script_bad_input_no_traceback(tmp_path):
    out = subprocess.run([sys.executable, "-m", "dpcheck", "audit", "no_such_dir/no_such_file.py:nothing",
                          "--out", str(tmp_path)], capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_unwritable_report_folder_is_bad_input(tmp_path, capsys):
    f = tmp_path / "a_file"
    f.write_text("x")
    assert main(["audit", "_test_pass", "--out", str(f / "sub"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dpcheck: error: cannot write reports to") and len(err.strip().splitlines()) == 1


def test_a_json_copy_onto_a_report_view_is_refused(tmp_path):
    # --json r/laplace_example.md: the "JSON copy" held the Markdown view after the run
    from dpcheck.cli import main
    code = main(["audit", "laplace_example", "--out", str(tmp_path), "--json", str(tmp_path / "laplace_example.md"),
                 "--quiet"])
    assert code == 2 and not (tmp_path / "laplace_example.json").exists()


def test_strict_fails_a_run_with_no_checks_and_every_inconclusive_one():
    """The documented exit codes (docs/interfaces.md): 0 all pass; 1 a violation, or with --strict an inconclusive
    check or no checks at all; 2 an incomplete run."""
    from dpcheck.context import exit_code
    none = {"complete": True, "verdict": "inconclusive", "checks": []}
    assert exit_code(none, strict=True) == 1 and exit_code(none) == 0
    inc = {"complete": True, "verdict": "inconclusive", "checks": [{"verdict": "inconclusive"}]}
    assert exit_code(inc, strict=True) == 1 and exit_code(inc) == 0
    assert exit_code({"complete": True, "verdict": "fail", "checks": [{"verdict": "fail"}]}) == 1
    assert exit_code({"complete": True, "verdict": "pass", "checks": [{"verdict": "pass"}]}, strict=True) == 0
    assert exit_code({"complete": False, "verdict": "pass", "checks": []}, strict=True) == 2
