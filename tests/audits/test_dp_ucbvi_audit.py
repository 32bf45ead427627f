"""The registered audit ``dpcheck audit dp_ucbvi`` and its building blocks (audits/lib/ucbvi/)."""
from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest

from dpcheck.algorithms.envs.generators import random_mdp
from dpcheck.audits.lib.ucbvi import (AgentSpec, explicit_bound, explicit_bound_check, jdp_users, ldp_message_check,
                             optimism_check, practical_noise, whitebox_check)
from dpcheck.cli import main
from dpcheck.audit import ExecutionOptions


def test_jdp_users_are_neighbours_in_user_one_only():
    U, U2 = jdp_users(K=5, H=2)
    assert list(U.differing_users(U2)) == [0]


@pytest.mark.slow
def test_whitebox_strict_passes_paper_fails_under_replacement():
    # docs/derivations.md#neighbouring-relation: the paper's sensitivity H certifies only 2 eps under replacement neighbours
    assert whitebox_check(AgentSpec(privatizer="central", calibration="strict")).verdict == "pass"
    paper = whitebox_check(AgentSpec(privatizer="central", calibration="paper"))
    assert paper.verdict == "fail"
    assert paper.measured["epsilon_pld"] == pytest.approx(2.0, rel=1e-2)
    assert paper.measured["epsilon_pld_add_remove"] == pytest.approx(1.0, rel=1e-2)
    local = whitebox_check(AgentSpec(privatizer="local", calibration="paper", epsilon=0.5))
    assert local.verdict == "fail" and local.measured["epsilon_pld"] == pytest.approx(1.0, rel=1e-2)
    assert whitebox_check(AgentSpec(privatizer="none")).verdict == "fail"


def test_ldp_message_audit_strict_passes():
    check = ldp_message_check(AgentSpec(privatizer="local", calibration="strict"), ExecutionOptions(seed=0), samples=20_000)
    assert check.verdict != "fail"
    assert check.measured["epsilon_lower_bound"] <= 1.0


def test_ldp_message_audit_catches_noise_too_small():
    # a local privatizer run at 8x its stated eps leaks 8x: the black box must see more than eps = 1
    from dpcheck.algorithms.privatizers import LocalPrivatizer

    class Leaky(LocalPrivatizer):
        def noise_scale(self):
            return super().noise_scale() / 8

    check = ldp_message_check(AgentSpec(privatizer=Leaky, calibration="strict"), ExecutionOptions(seed=0),
                              samples=20_000)
    assert check.verdict == "fail" and check.measured["epsilon_lower_bound"] > 1.0


def test_optimism_and_explicit_bound_are_flagged_vacuous_in_theory_mode():
    env = random_mdp(2, 2, 2, np.random.default_rng(0))
    spec = AgentSpec(privatizer="central", mode="theory")
    opt = optimism_check(spec, env, K=32, runs=40, seed=0, alpha=0.05)
    assert opt.verdict == "pass" and "vacuous" in opt.details and "vacuously" in opt.reason
    bound = explicit_bound_check(spec, env, K=32, runs=40, seed=0, alpha=0.05)
    assert bound.verdict == "pass" and "vacuous" in bound.details


def test_explicit_bound_formula():
    # eq. 75 at H=1, S=A=1, K=1, E=0, iota=1: 1000 (sqrt(1) + 0 + 1)
    assert explicit_bound(1, 1, 1, [1], 0.0, 1.0)[0] == pytest.approx(2000.0)


def test_practical_noise_is_per_node_unit_laplace():
    spec = practical_noise(AgentSpec(privatizer="central", epsilon=2.0), H=3, K=16, eps=2.0)
    p = spec.make_privatizer()
    p.start(1, 3, 2, 2, 16, np.random.default_rng(0))
    assert p.node_scale() == pytest.approx(1 / 2.0)  # Lap(1/eps) per node (Chowdhury & Zhou's code)
    spec = practical_noise(AgentSpec(privatizer="local", epsilon=2.0), H=3, K=16, eps=2.0)
    p = spec.make_privatizer()
    p.start(1, 3, 2, 2, 16, np.random.default_rng(0))
    assert p.noise_scale() == pytest.approx(1 / 2.0)


@pytest.mark.parametrize("privatizer", ["central", "local"])
def test_count_error_order_plots_are_labelled_with_the_count_error(privatizer):
    from dpcheck.audits.lib.ucbvi import count_error_order_check
    checks = count_error_order_check(AgentSpec(privatizer=privatizer), K_grid=(16, 32, 64), runs=4, seed=0)
    assert [c.id for c in checks] == ["assumption.count_error_order_eps", "assumption.count_error_order_K"]
    for c in checks:
        assert c.details["plots"][0]["ylabel"].startswith("max |N^ - N|")


def test_claim_table_names_existing_checking_functions():
    import importlib
    from dpcheck.audits.dp_ucbvi import DPUCBVIAudit
    modules = {"ucbvi": "dpcheck.audits.lib.ucbvi", "privatizers": "dpcheck.audits.lib.privatizers"}
    for row in DPUCBVIAudit.claims:
        mod, fn = row.method.split(".")
        assert callable(getattr(importlib.import_module(modules[mod]), fn)), row


def _report(tmp_path):
    return json.loads((tmp_path / "dp_ucbvi.json").read_text())


@pytest.mark.slow
@pytest.mark.xdist_group("dp_ucbvi")
def test_cli_quick_central(quick_audit):
    code, rep = quick_audit("dp_ucbvi")        # shared with tests/cli/test_cache_resume.py's reference run
    assert code in (0, 1) and rep["verdict"] in ("pass", "inconclusive", "fail")
    ids = {c["id"]: c for c in rep["checks"]}
    for want in ("whitebox.dp_event", "whitebox.sensitivity", "whitebox.tree_noise_reuse",
                 "privacy.privatizer.blackbox", "privacy.dataflow", "privacy.jdp.blackbox", "assumption.count_error",
                 "assumption.sum_consistency", "assumption.no_underestimation", "assumption.valid_transition",
                 "assumption.good_event", "assumption.optimism", "assumption.monotone",
                 "assumption.count_error_order_eps", "assumption.count_error_order_K", "regret.explicit_bound",
                 "regret.exponent.jdp", "regret.privacy_cost.jdp_K", "regret.privacy_cost.jdp_eps",
                 "whitebox.bonus", "whitebox.compiled_engine", "assumption.optimism.practical"):
        assert want in ids
    for must_pass in ("whitebox.dp_event", "privacy.dataflow", "assumption.count_error", "assumption.good_event",
                      "assumption.count_error_order_eps", "assumption.count_error_order_K", "whitebox.bonus",
                      "assumption.valid_transition", "assumption.optimism.practical"):
        assert ids[must_pass]["verdict"] == "pass"
    assert ids["privacy.jdp.blackbox"]["verdict"] != "fail"
    cfg = rep["config"]
    assert cfg["calibration"] == "strict" and "theory" in cfg["constants"] and "practical" in cfg["constants"]
    assert cfg["mode"]["optimism"] == "theory"
    assert "vacuous" in ids["assumption.optimism"]["details"]
    assert ids["regret.exponent.jdp"]["details"]["plots"]
    # every check carries its claim-table row: the paper's statement, its source and the checking function
    from dpcheck.audits.dp_ucbvi import DPUCBVIAudit
    for c in rep["checks"]:
        row = DPUCBVIAudit.row(c["id"])
        assert row is not None and c["claim"]["table"]["source"] == row.source
    assert {r.id for r in DPUCBVIAudit.claims} == set(ids) | {"privacy.ldp.blackbox", "regret.exponent.ldp",
                                                              "regret.privacy_cost.ldp_K", "regret.privacy_cost.ldp_eps"}


@pytest.mark.slow
def test_cli_nonprivate_baseline_is_a_violation(tmp_path):
    code = main(["audit", "dp_ucbvi", "--privatizer", "none", "--quick", "--out", str(tmp_path), "--quiet"])
    rep = _report(tmp_path)
    ids = {c["id"]: c for c in rep["checks"]}
    assert code == 1 and rep["verdict"] == "fail"
    assert ids["privacy.jdp.blackbox"]["verdict"] == "fail"
    assert ids["privacy.jdp.blackbox"]["measured"]["epsilon_lower_bound"] > 3.0


@pytest.mark.slow
def test_cli_user_privatizer_class(tmp_path):
    f = tmp_path / "mypriv.py"
    f.write_text(textwrap.dedent("""
        from dpcheck.algorithms.privatizers import LocalPrivatizer
        class MyLocal(LocalPrivatizer):
            pass
    """))
    code = main(["audit", "dp_ucbvi", "--privatizer", f"{f}:MyLocal", "--quick", "--out", str(tmp_path), "--quiet"])
    rep = _report(tmp_path)
    ids = {c["id"] for c in rep["checks"]}
    assert code in (0, 1) and "privacy.ldp.blackbox" in ids


@pytest.mark.parametrize("argv", [["--privatizer", "bogus"], ["--set", "mode=fast"],
                                  ["--set", "calibration=loose"], ["--epsilon", "-1"]])
def test_cli_bad_input_exits_2(tmp_path, argv):
    assert main(["audit", "dp_ucbvi", "--quick", "--out", str(tmp_path), "--quiet", *argv]) == 2


def test_notion_comes_from_the_declared_claim(tmp_path):
    # a CountPrivatizer subclass inherits notion = "JDP"; its declared LDP claim must decide how it is audited
    f = tmp_path / "ldp_by_claim.py"
    f.write_text(
        "from dpcheck.algorithms.privatizers import CentralPrivatizer\n"
        "from dpcheck.claims import Claim\n"
        "class LdpByClaim(CentralPrivatizer):\n"
        "    @property\n"
        "    def claim(self):\n"
        "        return Claim(epsilon=self.epsilon, notion='LDP', source='test')\n")
    from dpcheck.audits.lib.ucbvi import AgentSpec
    assert AgentSpec(privatizer=f"{f}:LdpByClaim").notion() == "LDP"
    assert AgentSpec(privatizer="central").notion() == "JDP"
    assert AgentSpec(privatizer="local").notion() == "LDP"
    assert AgentSpec(privatizer="none").notion() == "none"


@pytest.mark.slow
def test_one_privatizer_object_per_agent_configuration(monkeypatch):
    """The spec loads (and validates) its privatizer once; reads use that template, every run a copy of it;
    the template is neither pickled to workers nor part of the AgentSpec's fingerprint."""
    import pickle
    from dpcheck.algorithms.privatizers.base import CountPrivatizer
    from dpcheck.audits.lib.ucbvi import claim_for
    from dpcheck.fingerprint import fingerprint
    built = []
    init = CountPrivatizer.__init__
    monkeypatch.setattr(CountPrivatizer, "__init__", lambda self, *a, **k: (built.append(1), init(self, *a, **k))[1])
    spec = AgentSpec(privatizer="central", epsilon=0.5)
    assert spec.notion() == "JDP" and claim_for(spec).epsilon == 0.5
    whitebox_check(spec)
    a, b = spec.make(), spec.make()
    assert len(built) == 1
    assert a.privatizer is not b.privatizer and a.privatizer is not spec.template
    assert a.privatizer.get_params() == spec.template.get_params()
    assert "template" not in pickle.loads(pickle.dumps(spec)).__dict__
    assert fingerprint(spec) == fingerprint(AgentSpec(privatizer="central", epsilon=0.5))   # no template built


# ----------------------------------------------------------------------------- --quick's second regret look
def _escalation_run(monkeypatch, tmp_path, first: dict, second: dict, *argv):
    """Run ``dpcheck audit dp_ucbvi`` with privacy and assumption steps stubbed out and regret_checks replaced by
    one that returns ``first`` (then ``second``) verdicts; returns (the calls' (K_max, runs, alpha), report)."""
    from dpcheck.audits import dp_ucbvi as mod
    from dpcheck.audits.lib import ucbvi as lib
    from dpcheck.checks import Check
    calls = []

    def fake(spec, env, *, K_grid, runs, seed, alpha, eps_grid, progress=None, exe=None):
        calls.append((int(K_grid[-1]), runs, alpha))
        table = first if len(calls) == 1 else second
        out = [Check(id=cid, kind="regret", verdict=v, claim={}, measured={}, reason=f"look {len(calls)}")
               for cid, v in table.items()]
        if out:                                         # as regret_checks under --cache: the report on the first
            out[0].details["cache"] = {"look": len(calls)}
        return out
    monkeypatch.setattr(lib, "regret_checks", fake)
    monkeypatch.setattr(mod.DPUCBVIAudit, "privacy", lambda self, spec, practical: None)
    monkeypatch.setattr(mod.DPUCBVIAudit, "assumptions", lambda self, spec, theory: None)
    monkeypatch.setattr(mod.DPUCBVIAudit, "engine", lambda self, spec, practical: None)
    main(["audit", "dp_ucbvi", "--out", str(tmp_path), "--quiet", "--workers", "1", *argv])
    return calls, json.loads((tmp_path / "dp_ucbvi.json").read_text())


IDS = ("regret.exponent.jdp", "regret.privacy_cost.jdp_K", "regret.privacy_cost.jdp_eps")


def test_quick_decides_inconclusive_rate_checks_on_the_default_sweep_at_half_alpha(monkeypatch, tmp_path):
    first = dict(zip(IDS, ("inconclusive", "pass", "inconclusive")))
    second = dict(zip(IDS, ("fail", "fail", "pass")))          # the second look's jdp_K is not taken
    calls, rep = _escalation_run(monkeypatch, tmp_path, first, second, "--quick")
    share = rep["family"]["alpha_per_check"]
    # the second look on the default sweep's K grid with ESCALATION_RUNS (16) runs
    assert calls == [(2 ** 13, 4, pytest.approx(share / 2)), (2 ** 14, 16, pytest.approx(share / 2))]
    got = {c["id"]: c for c in rep["checks"]}
    assert {i: got[i]["verdict"] for i in IDS} == dict(zip(IDS, ("fail", "pass", "pass")))
    assert got["regret.exponent.jdp"]["details"]["escalated_from"]["verdict"] == "inconclusive"
    assert "second look" in got["regret.exponent.jdp"]["reason"] and "second look" not in got[IDS[1]]["reason"]
    esc = rep["config"]["regret_sweep"]["escalated"]
    assert esc["checks"] == [IDS[0], IDS[2]] and esc["runs"] == 16
    # each sweep's cache report survives once: the first look's on its first check, the second look's in the config
    assert got[IDS[0]]["details"]["cache"] == {"look": 1} and esc["cache"] == {"look": 2}
    assert all("cache" not in got[i]["details"] for i in IDS[1:])


def test_quick_takes_one_look_when_decided_and_default_one_look_at_full_alpha(monkeypatch, tmp_path):
    decided = dict(zip(IDS, ("pass", "pass", "fail")))
    calls, rep = _escalation_run(monkeypatch, tmp_path / "q", decided, {}, "--quick")
    assert calls == [(2 ** 13, 4, pytest.approx(rep["family"]["alpha_per_check"] / 2))]
    assert "escalated" not in rep["config"]["regret_sweep"]
    undecided = dict(zip(IDS, ("inconclusive",) * 3))
    calls, rep = _escalation_run(monkeypatch, tmp_path / "d", undecided, decided)
    assert calls == [(2 ** 14, 8, pytest.approx(rep["family"]["alpha_per_check"]))]      # no second look
    assert {c["id"]: c["verdict"] for c in rep["checks"]} == undecided
