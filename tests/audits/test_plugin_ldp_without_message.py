"""A plug-in eps-LDP privatizer without ``message()``: what the adversary sees under LDP is one user's message, and
the released stream (a post-processing of the messages) cannot establish eps-LDP. Every audit that meets such a
class reports ``privacy.ldp.blackbox`` (``privacy.blackbox`` in local_privatizer) INCONCLUSIVE, one rule
(audits/lib/privatizers/plugin_search.py ``plugin_message_blackbox``). dp_ucbvi and dp_nash_vi used to leave the
row out, so the report could PASS on the stream alone.

The stream's searched black box is stubbed (a PASS): only which rows are reported, and how, is under test."""
import json
import textwrap

import pytest

from dpcheck.checks import INCONCLUSIVE, PASS, Check

PLUGIN = textwrap.dedent('''
    from dpcheck.algorithms.privatizers import LocalPrivatizer


    class NoMessageLocal(LocalPrivatizer):
        """The built-in Local randomiser's noise, but the message is kept private: no message() to audit."""
        name = "no_message_local"
        message = None

        def _ingest(self, visits, transitions, rewards):
            msg = LocalPrivatizer.message(self, *self._pending, rng=self.rng)
            self._pending = None
            self._sum_v += msg.visits
            self._sum_t += msg.transitions
            if self.rewards:
                self._sum_r += msg.rewards
''')


@pytest.fixture
def no_message(tmp_path, monkeypatch):
    """(privatizer spec, calls): the plug-in file and the stubbed plug-in black box's calls (search, id)."""
    from dpcheck.audits.lib import privatizers as pa
    from dpcheck.audits.lib.privatizers import plugin_search
    f = tmp_path / "nomsg.py"
    f.write_text(PLUGIN)
    calls = []

    def stub(template, exe=None, *, search="stream", id="privacy.blackbox", **kw):
        calls.append((search, id))
        return Check(id=id, kind="privacy", verdict=PASS, claim={}, measured={"epsilon_lower_bound": 0.0},
                     reason=f"stub {search}")
    monkeypatch.setattr(pa, "plugin_blackbox", stub)
    monkeypatch.setattr(plugin_search, "plugin_blackbox", stub)
    return f"{f}:NoMessageLocal", calls


@pytest.mark.slow
def test_dp_nash_vi_reports_the_ldp_row_inconclusive(no_message):
    from dpcheck.audit import ExecutionOptions
    from dpcheck.audits.lib import nash
    spec, calls = no_message
    make = nash.privatizer_factory(spec, 1.0, "strict", "rigorous")
    from dpcheck.claims import Claim
    claim = Claim(epsilon=1.0, notion="LDP", source="test")
    out = {c.id: c for c in nash.privatizer_checks(make, claim, "LDP", quick=True, samples=1000, seed=0,
                                                    blackbox=None, exe=ExecutionOptions())}
    assert out["privacy.ldp.blackbox"].verdict == INCONCLUSIVE
    assert "no message" in out["privacy.ldp.blackbox"].reason and "privacy.privatizer.blackbox" in out[
        "privacy.ldp.blackbox"].reason
    assert calls == [("stream", "privacy.privatizer.blackbox")]


@pytest.mark.slow
def test_dp_ucbvi_reports_the_ldp_row_inconclusive(no_message, monkeypatch, tmp_path):
    from dpcheck.audits import dp_ucbvi as mod
    from dpcheck.cli import main
    spec, calls = no_message
    monkeypatch.setattr(mod.DPUCBVIAudit, "assumptions", lambda self, spec, theory: None)
    monkeypatch.setattr(mod.DPUCBVIAudit, "regret", lambda self, spec, practical: None)
    main(["audit", "dp_ucbvi", "--quick", "--privatizer", spec, "--out", str(tmp_path), "--quiet", "--workers", "1"])
    rep = json.loads((tmp_path / "dp_ucbvi.json").read_text())
    got = {c["id"]: c for c in rep["checks"]}
    assert got["privacy.ldp.blackbox"]["verdict"] == INCONCLUSIVE and rep["verdict"] != PASS
    assert got["privacy.privatizer.blackbox"]["verdict"] == PASS          # the stream alone
    assert calls == [("stream", "privacy.privatizer.blackbox")]


def test_local_privatizer_audit_is_unchanged(no_message, tmp_path):
    from dpcheck.audit import ExecutionOptions
    from dpcheck.audits.lib import privatizers as pa
    from dpcheck.algorithms.privatizers import load_privatizer
    spec, calls = no_message
    p = load_privatizer(spec, epsilon=1.0)
    c = pa.plugin_message_blackbox(pa.ClaimedTemplate(p, p.claim, True), ExecutionOptions(),
                                   stream_id="privacy.blackbox.stream")
    assert c.id == "privacy.blackbox" and c.verdict == INCONCLUSIVE and calls == []
    assert c.claim["epsilon"] == 1.0 and c.claim["notion"] == "LDP"
