import os

import pytest
from hypothesis import settings

# Deterministic, CI-friendly hypothesis profile: fixed seed, no deadline (machines are shared and noisy).
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture(autouse=True)
def _family_error_is_controlled(monkeypatch):
    """Every audit run in the suite (in-process) must keep its checks' error within --alpha: a claim
    table whose ``tests`` undercount the checks that can err by chance fails whichever test ran it."""
    from dpcheck import context
    original = context.family_error

    def checked(checks, family):
        f = original(checks, family)
        assert f["controlled"], (f"the audit's checks spent {f['error_bound']:.4g} of alpha = {f['alpha']:g} "
                                 f"({f['checks_at_risk']} checks at risk, claim table tests = {f['tests']})")
        return f
    checked.unchecked = original          # for a test that overspends on purpose
    monkeypatch.setattr(context, "family_error", checked)
