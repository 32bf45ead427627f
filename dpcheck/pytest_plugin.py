"""pytest plugin: gate a privacy claim inside your own test suite (README "In a test suite").

Installed with dpcheck (entry point ``pytest11``: nothing to configure). Two ways to use it::

    # a marker: the audit runs before the test; a FAIL fails the test with the report's reason
    @pytest.mark.dpcheck("dp_apvi", privatizer=MyCountPrivatizer, quick=True)
    def test_my_privatizer_in_dp_apvi(dpcheck_report):
        assert dpcheck_report.check("privacy.blackbox")["measured"]["eps_lb"] < 1.5

    # a fixture: call it with anything dpcheck.run takes (an audit name, "file.py:NAME", an AuditTarget)
    def test_my_mechanism(dpcheck_audit):
        dpcheck_audit(AuditTarget(name="mine", mechanism=mech, pairs=[(0, 1)], claim=Claim(epsilon=1.0)),
                      samples=200_000)

Either way the test fails when the audit does not pass (FAIL; INCONCLUSIVE too with ``strict=True`` or
``--dpcheck-strict``), with the failing checks and the report's path in the message; bad input
(InputError, a misbehaving mechanism) fails it with the one-line error. Every report is written (JSON,
Markdown, HTML, JUnit) into ``--dpcheck-out DIR`` (default: a folder under pytest's temporary
directory, one per test) and its path is attached to the test as the user property ``dpcheck_report``
(it appears in pytest's JUnit XML). An INCONCLUSIVE verdict that does not fail the test is a
:class:`DPCheckInconclusiveWarning`.
"""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest


from dpcheck.errors import DPCheckInconclusiveWarning  # defined there: assert_dp warns with it too


def pytest_addoption(parser):
    group = parser.getgroup("dpcheck", "dpcheck privacy audits")
    group.addoption("--dpcheck-out", metavar="DIR", default=None,
                    help="write every dpcheck report here (default: under pytest's temporary directory)")
    group.addoption("--dpcheck-strict", action="store_true", default=False,
                    help="an INCONCLUSIVE audit fails its test (as dpcheck audit --strict)")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "dpcheck(target, **options): run a dpcheck audit (dpcheck.run's arguments) before the test; "
                   "the test fails unless it passes; the report is the dpcheck_report fixture")


def _folder(request, tmp_path_factory) -> Path:
    base = request.config.getoption("--dpcheck-out")
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.nodeid)[-120:]
    if base is None:
        return tmp_path_factory.mktemp("dpcheck", numbered=True) / name
    return Path(base) / name


def _gate(request, folder: Path, target, kwargs: dict):
    """Run the audit into ``folder`` and fail the test unless it passes; returns the Report."""
    import dpcheck
    from dpcheck.errors import DPCheckError
    strict = kwargs.pop("strict", None)
    if strict is None:
        strict = request.config.getoption("--dpcheck-strict")
    kwargs.setdefault("out", folder)
    try:
        report = dpcheck.run(target, strict=strict, **kwargs)
    except DPCheckError as e:
        error, partial = e, getattr(e, "report", None)
    else:
        error = None
    if error is not None:    # outside the except: the failure is one message, not a chained traceback
        if partial is not None and partial.paths.get("json"):
            request.node.user_properties.append(("dpcheck_report", str(partial.paths["json"])))
        where = f" (partial report: {partial.paths['json']})" if partial is not None and partial.paths.get("json") else ""
        pytest.fail(f"dpcheck: {error}{where}", pytrace=False)
    if report.paths.get("json"):
        request.node.user_properties.append(("dpcheck_report", str(report.paths["json"])))
    if not report.passed:
        pytest.fail(report.reason(), pytrace=False)
    if report.verdict == "inconclusive":
        names = ", ".join(c["id"] for c in report.inconclusive())
        warnings.warn(DPCheckInconclusiveWarning(
            f"{report.target}: INCONCLUSIVE ({names}); report {report.paths.get('json')}"), stacklevel=2)
    from dpcheck.report import qualifier
    weak = [c["id"] for c in report.data.get("checks", []) if qualifier(c) == "uninformative"]
    if weak:        # as assert_dp: a pass that could not have seen what it is named after, said out loud
        warnings.warn(DPCheckInconclusiveWarning(
            f"{report.target}: PASS (uninformative) ({', '.join(weak)}); report {report.paths.get('json')}"),
            stacklevel=2)
    return report


@pytest.fixture
def dpcheck_audit(request, tmp_path_factory):
    """``dpcheck_audit(target, **options)``: dpcheck.run, failing the test unless the audit passes.
    Returns the Report. Several calls in one test write to numbered folders."""
    calls = []

    def audit(target, **kwargs):
        calls.append(target)
        folder = _folder(request, tmp_path_factory) / f"run{len(calls)}"
        return _gate(request, folder, target, dict(kwargs))
    return audit


_FOLDER = pytest.StashKey[Path]()


@pytest.fixture
def dpcheck_report(request, tmp_path_factory):
    """The Report of the test's ``@pytest.mark.dpcheck(target, **options)`` audit. The audit runs when
    the test is called, just before its body, so a gate that does not pass is the test's failure (not a
    setup error) and the body does not run."""
    marker = request.node.get_closest_marker("dpcheck")
    if marker is None:
        raise pytest.UsageError(f"{request.node.nodeid}: the dpcheck_report fixture needs "
                                "@pytest.mark.dpcheck(target, **options)")
    if len(marker.args) != 1:
        raise pytest.UsageError(f"{request.node.nodeid}: @pytest.mark.dpcheck takes one target "
                                f"(an audit name, 'file.py:NAME' or an AuditTarget), got {len(marker.args)}")
    request.node.stash[_FOLDER] = _folder(request, tmp_path_factory)
    return None          # replaced by the Report in pytest_runtest_call


class _ItemRequest:
    """What :func:`_gate` needs of a fixture request, for an item."""

    def __init__(self, item):
        self.node, self.config = item, item.config


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    marker = item.get_closest_marker("dpcheck")
    if marker is None or _FOLDER not in item.stash:
        return
    report = _gate(_ItemRequest(item), item.stash[_FOLDER], marker.args[0], dict(marker.kwargs))
    funcargs = getattr(item, "funcargs", None)
    if funcargs is not None and "dpcheck_report" in funcargs:
        funcargs["dpcheck_report"] = report


def pytest_collection_modifyitems(config, items):
    # a test with the marker that does not ask for the report still gets its audit run
    for item in items:
        if item.get_closest_marker("dpcheck") is not None and "dpcheck_report" not in getattr(item, "fixturenames", ()):
            item.fixturenames.append("dpcheck_report")
