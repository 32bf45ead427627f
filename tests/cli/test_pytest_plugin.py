"""The pytest plugin (dpcheck/pytest_plugin.py), run in a user's test suite through pytester."""
import importlib.metadata
import tomllib
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[2]

# installed, the plugin loads through its pytest11 entry point; before the install knows it, by name.
# Subprocess runs: an in-process run would share (and half-restore) this process's dpcheck modules.
ENTRY = any(ep.name == "dpcheck" for ep in importlib.metadata.entry_points(group="pytest11"))
LOAD = () if ENTRY else ("-p", "dpcheck.pytest_plugin")

MECHANISMS = '''
import numpy as np
import pytest
from dpcheck import AuditTarget, Claim

def laplace(scale):
    def mech(count, rng, size):
        return rng.laplace(float(count), scale, size)
    return mech

CLAIM = Claim(epsilon=1.0, source="Laplace mechanism")
GOOD = AuditTarget(name="good", mechanism=laplace(1.0), pairs=[(0, 1)], claim=CLAIM)
BAD = AuditTarget(name="bad", mechanism=laplace(0.25), pairs=[(0, 1)], claim=CLAIM)   # true eps 4
'''


def test_the_plugin_is_declared_as_a_pytest11_entry_point():
    eps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["pytest11"]
    assert eps == {"dpcheck": "dpcheck.pytest_plugin"}


@pytest.mark.slow
def test_fixture_passes_a_correct_mechanism_and_fails_a_broken_one_with_the_reason(pytester):
    pytester.makepyfile(test_user=MECHANISMS + '''
def test_good(dpcheck_audit):
    r = dpcheck_audit(GOOD, samples=100_000, seed=1)
    assert r.verdict == "pass"

def test_bad(dpcheck_audit):
    dpcheck_audit(BAD, samples=100_000, seed=1)
    raise AssertionError("not reached: the gate fails first")
''')
    out = pytester.path / "reports"
    res = pytester.runpytest_subprocess(*LOAD, "--dpcheck-out", str(out), "-p", "no:cacheprovider",
                             "--junitxml", str(pytester.path / "junit.xml"))
    res.assert_outcomes(passed=1, failed=1)
    res.stdout.fnmatch_lines(["*bad: verdict fail*", "*FAIL privacy.blackbox:*", "*report: *bad.json*"])
    res.stdout.no_fnmatch_line("*not reached*")
    assert sorted(p.name for p in out.rglob("*.json")) == ["bad.json", "good.json"]
    junit = (pytester.path / "junit.xml").read_text()
    assert 'name="dpcheck_report"' in junit and "good.json" in junit and "bad.json" in junit


@pytest.mark.slow
def test_marker_runs_the_audit_before_the_test_and_hands_over_the_report(pytester):
    pytester.makepyfile(test_user=MECHANISMS + '''
@pytest.mark.dpcheck("laplace_example", quick=True, seed=3)
def test_builtin(dpcheck_report):
    assert dpcheck_report.target == "laplace_example"
    assert dpcheck_report.check("privacy.blackbox")["verdict"] == "pass"

@pytest.mark.dpcheck(BAD, samples=100_000, seed=1)
def test_marker_without_fixture_still_gates():
    pass

@pytest.mark.dpcheck("laplace_example", quick=True, epsilon=-1)
def test_bad_input_is_one_line():
    pass

def test_fixture_without_marker(dpcheck_report):
    pass
''')
    res = pytester.runpytest_subprocess(*LOAD, "-p", "no:cacheprovider")
    res.assert_outcomes(passed=1, failed=2, errors=1)
    res.stdout.fnmatch_lines(["*needs @pytest.mark.dpcheck(target, **options)*"])
    res.stdout.fnmatch_lines(["*dpcheck: --epsilon must be a finite number > 0, got -1*"])
    res.stdout.no_fnmatch_line("*During handling of the above exception*")


@pytest.mark.slow
def test_inconclusive_warns_and_strict_fails(pytester):
    # an audit that ends INCONCLUSIVE (dpcheck.run replaced by one returning such a report)
    pytester.makepyfile(test_user='''
import pytest
import dpcheck
from dpcheck.api import Report

def fake_run(target, strict=False, **kw):
    return Report({"target": target, "verdict": "inconclusive", "complete": True,
                   "checks": [{"id": "regret.exponent", "verdict": "inconclusive", "reason": "interval too wide"}]},
                  strict=strict)

@pytest.fixture(autouse=True)
def _fake(monkeypatch):
    monkeypatch.setattr(dpcheck, "run", fake_run)

def test_fixture(dpcheck_audit):
    assert dpcheck_audit("anything").verdict == "inconclusive"

@pytest.mark.dpcheck("anything")
def test_marker(dpcheck_report):
    assert dpcheck_report.verdict == "inconclusive"

@pytest.mark.dpcheck("anything", strict=True)
def test_marker_strict(dpcheck_report):
    pass
''')
    res = pytester.runpytest_subprocess(*LOAD, "-p", "no:cacheprovider")
    res.assert_outcomes(passed=2, failed=1, warnings=2)
    res.stdout.fnmatch_lines(["*DPCheckInconclusiveWarning: anything: INCONCLUSIVE (regret.exponent)*"])
    res.stdout.fnmatch_lines(["*INCONCLUSIVE regret.exponent: interval too wide*"])
    strict = pytester.runpytest_subprocess(*LOAD, "-p", "no:cacheprovider", "--dpcheck-strict")
    strict.assert_outcomes(failed=3)


@pytest.mark.slow
def test_an_uninformative_pass_warns_and_passes_even_when_strict(pytester):
    # as assert_dp and --strict: a PASS that could not reliably see a 2x excess passes, with a warning
    pytester.makepyfile(test_user='''
import pytest
import dpcheck
from dpcheck.api import Report

def fake_run(target, strict=False, **kw):
    return Report({"target": target, "verdict": "pass", "complete": True,
                   "checks": [{"id": "privacy.blackbox", "verdict": "pass", "reason": "budget too small",
                               "details": {"qualifier": "uninformative"}}]}, strict=strict)

@pytest.fixture(autouse=True)
def _fake(monkeypatch):
    monkeypatch.setattr(dpcheck, "run", fake_run)

def test_fixture(dpcheck_audit):
    assert dpcheck_audit("anything").verdict == "pass"
''')
    for extra in ((), ("--dpcheck-strict",)):
        res = pytester.runpytest_subprocess(*LOAD, "-p", "no:cacheprovider", *extra)
        res.assert_outcomes(passed=1, warnings=1)
        res.stdout.fnmatch_lines(["*DPCheckInconclusiveWarning: anything: PASS (uninformative) (privacy.blackbox)*"])
