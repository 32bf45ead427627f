import copy
import json
import os

import pytest
from hypothesis import settings

# Deterministic, CI-friendly hypothesis profile: fixed seed, no deadline (machines are shared and noisy).
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

os.environ.setdefault("MPLBACKEND", "Agg")
# The command line's default --workers is every CPU (dpcheck.options.default_workers); the suite already runs
# one audit per xdist worker, so audits it starts use one worker unless a test says otherwise (the default
# itself: tests/cli/test_default_workers.py and the main job's test).
os.environ.setdefault("DPCHECK_WORKERS", "1")


def _control_family_error(monkeypatch):
    """Every audit run in the suite (in-process) must keep its checks' error within --alpha: a claim
    table whose ``tests`` undercount the checks that can err by chance fails whichever test ran it."""
    from dpcheck import context
    original = getattr(context.family_error, "unchecked", context.family_error)

    def checked(checks, family):
        f = original(checks, family)
        assert f["controlled"], (f"the audit's checks spent {f['error_bound']:.4g} of alpha = {f['alpha']:g} "
                                 f"({f['checks_at_risk']} checks at risk, claim table tests = {f['tests']})")
        return f
    checked.unchecked = original          # for a test that overspends on purpose
    monkeypatch.setattr(context, "family_error", checked)


@pytest.fixture(autouse=True)
def _family_error_is_controlled(monkeypatch):
    _control_family_error(monkeypatch)


@pytest.fixture(scope="session")
def quick_audit(tmp_path_factory):
    """``quick_audit(NAME, *extra)``: the exit code and JSON report of ``dpcheck audit NAME --quick --workers 1
    --quiet *extra`` (in-process, family error controlled), run once per session (per xdist worker) and shared
    by the tests that read the same report: an end-to-end test and the reference of the --cache tests.
    Tests sharing one run carry ``@pytest.mark.xdist_group(NAME)`` (pyproject's ``--dist loadgroup`` sends
    them to one worker). Each caller gets its own copy of the report."""
    from dpcheck.cli import main
    runs = {}

    def run(name, *extra):
        key = (name, *extra)
        if key not in runs:
            out = tmp_path_factory.mktemp(name)
            with pytest.MonkeyPatch.context() as mp:
                _control_family_error(mp)
                code = main(["audit", name, "--quick", "--workers", "1", "--out", str(out), "--quiet", *extra])
            runs[key] = (code, json.loads((out / f"{name}.json").read_text()))
        return copy.deepcopy(runs[key])
    return run


def pytest_collection_modifyitems(config, items):
    """Slow tests first (stable order otherwise): with xdist the long end-to-end runs then start at once
    instead of one of them being handed out last and leaving the other worker idle at the end."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
