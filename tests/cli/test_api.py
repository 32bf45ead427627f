"""dpcheck.run / dpcheck.Report: the command line's audit from Python, with the same validation."""
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import dpcheck
from dpcheck import AuditTarget, Claim
from dpcheck.cli import main
from dpcheck.errors import InputError, MechanismError

ROOT = Path(__file__).resolve().parents[2]


def _laplace(scale):
    def mech(count, rng, size):
        return rng.laplace(float(count), scale, size)
    return mech


def _cli_error(capsys, argv) -> str:
    assert main(argv) == 2
    return capsys.readouterr().err.strip().removeprefix("dpcheck: error: ")


@pytest.mark.slow
def test_run_returns_the_report_the_cli_writes(tmp_path):
    r = dpcheck.run("laplace_example", quick=True, seed=3)
    assert isinstance(r, dpcheck.Report)
    assert r.verdict == "pass" and r.passed and r.exit_code() == 0 and r.complete
    assert [c["id"] for c in r.checks] == ["privacy.blackbox"]
    assert r.config["claim"]["epsilon"] == 1.0 and r.data["options"]["quick"] is True
    assert json.loads(r.to_json())["verdict"] == "pass"
    assert r.paths == {}                                  # nothing written unless asked
    paths = r.write(tmp_path / "a")
    assert {p.suffix for p in paths.values()} == {".json", ".md", ".html", ".xml"}
    assert json.loads(paths["json"].read_text()) == r.data
    # the command line at the same seed measures the same figures
    assert main(["audit", "laplace_example", "--quick", "--seed", "3", "--out", str(tmp_path / "b"), "--quiet"]) == 0
    cli = json.loads((tmp_path / "b" / "laplace_example.json").read_text())
    assert cli["checks"][0]["measured"] == r.checks[0]["measured"]


@pytest.mark.parametrize("kwargs, argv", [
    (dict(epsilon=-1), ["--epsilon", "-1"]),
    (dict(alpha=1.5), ["--alpha", "1.5"]),
    (dict(samples=10), ["--samples", "10"]),
    (dict(privatizer="central"), ["--privatizer", "central"]),      # an option laplace_example does not use
    (dict(options={"mode": "theory"}), ["--set", "mode=theory"]),      # a --set key it does not have
    (dict(workers=10**4), ["--workers", "10000"]),
])
def test_bad_options_raise_what_the_cli_prints(kwargs, argv, capsys, tmp_path):
    with pytest.raises(InputError) as e:
        dpcheck.run("laplace_example", quick=True, **kwargs)
    cli = _cli_error(capsys, ["audit", "laplace_example", "--quick", "--out", str(tmp_path), *argv])
    assert str(e.value).replace("'", "") == cli.replace("'", "")     # the CLI's values are text: '-1' for -1


def test_unknown_targets_and_bad_kinds_are_input_errors():
    with pytest.raises(InputError, match="no audit named 'nope'"):
        dpcheck.run("nope")
    with pytest.raises(InputError, match="target must be"):
        dpcheck.run(42)
    with pytest.raises(TypeError):
        dpcheck.run("laplace_example", epsilom=1)       # a misspelt keyword is Python's own error


@pytest.mark.slow
def test_an_audit_target_object_is_audited_and_a_broken_one_fails(tmp_path):
    claim = Claim(epsilon=1.0, source="Laplace mechanism")
    good = AuditTarget(name="mine", mechanism=_laplace(1.0), pairs=[(0, 1)], claim=claim)
    bad = AuditTarget(name="mine_bad", mechanism=_laplace(0.25), pairs=[(0, 1)], claim=claim)   # true eps 4
    r = dpcheck.run(good, samples=100_000, seed=1)
    assert r.verdict == "pass" and r.target == "mine"
    b = dpcheck.run(bad, samples=100_000, seed=1, out=tmp_path)
    assert b.verdict == "fail" and not b.passed and b.exit_code() == 1
    assert b.failures()[0]["id"] == "privacy.blackbox"
    assert "FAIL privacy.blackbox" in b.reason() and str(tmp_path) in b.reason()
    assert json.loads((tmp_path / "mine_bad.json").read_text())["verdict"] == "fail"


def test_a_mechanism_that_raises_is_a_mechanism_error_with_the_partial_report(tmp_path):
    def broken(count, rng, size):
        raise RuntimeError("boom")
    t = AuditTarget(name="broken", mechanism=broken, pairs=[(0, 1)], claim=Claim(epsilon=1.0))
    with pytest.raises(MechanismError) as e:
        dpcheck.run(t, samples=1000, out=tmp_path)
    assert e.value.report.complete is False and e.value.report.verdict != "pass"
    on_disk = json.loads((tmp_path / "broken.json").read_text())
    assert on_disk["status"] == "error" and on_disk["complete"] is False


def test_strict_turns_inconclusive_into_a_failed_gate():
    data = {"target": "x", "verdict": "inconclusive", "complete": True, "checks": [
        {"id": "a", "verdict": "inconclusive", "reason": "too few samples"}]}
    assert dpcheck.Report(data).passed and dpcheck.Report(data).exit_code() == 0
    strict = dpcheck.Report(data, strict=True)
    assert not strict.passed and strict.exit_code() == 1 and "INCONCLUSIVE a: too few samples" in strict.reason()
    with pytest.raises(KeyError, match="no check 'b'"):
        strict.check("b")


def test_a_privatizer_class_is_passed_as_its_file_spec():
    from dpcheck.api import privatizer_spec
    from examples.my_privatizer import GaussianTreePrivatizer
    spec = privatizer_spec(GaussianTreePrivatizer)
    assert spec == f"{ROOT / 'examples' / 'my_privatizer.py'}:GaussianTreePrivatizer"
    assert privatizer_spec("central") == "central" and privatizer_spec(None) is None
    with pytest.raises(InputError, match="pass the class"):
        privatizer_spec(GaussianTreePrivatizer(epsilon=1.0))

    class Local(GaussianTreePrivatizer):
        pass
    with pytest.raises(InputError, match="inside a function"):
        privatizer_spec(Local)


@pytest.mark.slow
def test_a_plug_in_class_runs_its_audit_from_python():
    from examples.my_privatizer import GaussianTreePrivatizer
    r = dpcheck.run("central_privatizer", privatizer=GaussianTreePrivatizer, quick=True, seed=3)
    assert r.verdict == "pass", r.reason()
    assert r.data["options"]["privatizer"].endswith("my_privatizer.py:GaussianTreePrivatizer")


@pytest.mark.slow
def test_the_readme_one_liner(tmp_path):
    # README "Python API": works from any directory after the install
    code = "import dpcheck; r = dpcheck.run('laplace_example', quick=True); print(r.verdict)"
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and r.stdout.strip() == "pass", r.stderr


def test_import_dpcheck_stays_light():
    r = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import sys, dpcheck
        heavy = [m for m in ("scipy", "statsmodels", "joblib", "dpcheck.api", "dpcheck.audits") if m in sys.modules]
        assert not heavy, heavy
        assert dpcheck.Report.__module__ == "dpcheck.api"
    """)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_dpcheck_audit_stays_the_function_after_the_module_is_imported():
    import dpcheck.audit   # noqa: F401  (the module of the Audit base class shares the name)
    t = AuditTarget(name="mine", mechanism=_laplace(1.0), pairs=[(0, 1)], claim=Claim(epsilon=1.0))
    res = dpcheck.audit(t, samples=2_000, seed=1)
    assert res.verdict == "pass" and hasattr(dpcheck.audit, "Audit")


def test_flags_must_be_booleans():
    import dpcheck
    from dpcheck.errors import InputError
    for kw in ({"quick": "no"}, {"strict": "no"}, {"sequential": 1}):
        with pytest.raises(InputError, match="must be True or False"):
            dpcheck.run("laplace_example", **kw)
