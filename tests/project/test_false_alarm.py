"""False-alarm rate of dp_ucbvi's rate checks on the reference implementation (issue 9).

A reduced version of benchmarks/false_alarm.py (which also covers the default configuration, the
count-error order checks, the tree-reuse test and dp_nash_vi's regret.exponent.nonprivate): the
--quick regret sweep of ``dpcheck audit dp_ucbvi --seed s`` for s = 0..49, checks run directly.

Binomial reasoning for "at most 6 FAILs in 50 seeds": if a check's false-alarm rate is <= alpha = 0.05,
P(X >= 7) <= 1 - Binom(6; 50, 0.05) = 0.012, so the assertion flags a valid check in ~1% of seed sets
(the seeds are fixed, so the test is deterministic); a check failing 20% of the time passes it only with
probability Binom(6; 50, 0.2) = 0.10. The statistic regret.privacy_cost_K used before issue 9 (cumulative
log-log slope, percentile bootstrap, FAIL above 0.35) is measured on the same curves as the control:
it fails the bound, so the test has the power to see the defect it guards against.
"""
from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _bench():
    spec = importlib.util.spec_from_file_location("false_alarm", os.path.join(ROOT, "benchmarks", "false_alarm.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_quick_rate_checks_false_alarm_rate_is_within_alpha_over_50_seeds():
    fa = _bench()
    fails = {}
    verdicts = {}
    for s in range(50):
        v = fa.run_ucbvi_regret(s, "quick")
        verdicts[s] = v
        for cid, verdict in v.items():
            fails[cid] = fails.get(cid, 0) + (verdict == "fail")
    for cid in ("regret.exponent.jdp", "regret.privacy_cost.jdp_K", "regret.privacy_cost.jdp_eps"):
        assert fails[cid] <= 6, (cid, fails[cid])
    # the reported case: dp_ucbvi --quick --seed 7 failed regret.privacy_cost_K (slope 0.41 > 0.35)
    assert verdicts[7]["regret.privacy_cost.jdp_K[legacy]"] == "fail"
    assert verdicts[7]["regret.privacy_cost.jdp_K"] != "fail"
    # control: the old statistic exceeds the bound on the same curves
    assert fails["regret.privacy_cost.jdp_K[legacy]"] >= 7


@pytest.mark.slow
def test_planted_linear_privacy_cost_still_fails():
    """A real defective agent: N~ capped at 2E, so the privacy term E/N~ of the bonus never falls below 1/2,
    the agent keeps exploring and the privacy cost grows linearly in K. On the MDP of audit seed 0
    (--quick sweep) both regret.exponent and regret.privacy_cost_K must FAIL."""
    from dpcheck.algorithms.envs.generators import random_mdp
    from dpcheck.algorithms.online.ucbvi import DPUCBVI
    from dpcheck.audits.lib.ucbvi import AgentSpec, regret_checks

    class CappedCountsDPUCBVI(DPUCBVI):
        def _estimates(self, counts):
            P, r, n = super()._estimates(counts)
            return P, r, np.minimum(n, 2 * counts.width)

    spec = AgentSpec(privatizer="central", epsilon=1.0, mode="practical", width_mode="nominal",
                     agent_class=CappedCountsDPUCBVI)
    env = random_mdp(2, 2, 2, np.random.default_rng(0 + 7))
    by_id = {c.id: c for c in regret_checks(spec, env, K_grid=2 ** np.arange(6, 14), runs=4, seed=3, alpha=0.05,
                                            eps_grid=[0.5, 1, 2, 4])}
    assert by_id["regret.privacy_cost.jdp_K"].verdict == "fail"
    assert by_id["regret.privacy_cost.jdp_K"].measured["ci"][0] > 0.9
    assert by_id["regret.exponent.jdp"].verdict == "fail"


def test_benchmark_cli_writes_the_table_and_json(tmp_path, capsys):
    import json
    fa = _bench()
    out = tmp_path / "fa.json"
    code = fa.main(["--seeds", "2", "--check", "whitebox.tree_noise_reuse", "--config", "quick", "--out", str(out)])
    rows = json.loads(out.read_text())["rows"]
    assert code == 0
    assert [(r["check"], r["config"], r["seeds"]) for r in rows] == [("whitebox.tree_noise_reuse", "quick", 2)]
    assert rows[0]["fails"] == 0 and rows[0]["alpha"] == 0.05 and 0 < rows[0]["cp_upper_95"] < 1
    assert "CP95up" in capsys.readouterr().out


@pytest.mark.slow
def test_quick_jdp_rate_checks_are_decisive_at_the_family_share():
    """Issue 17: dp_ucbvi's JDP exponent was INCONCLUSIVE in 11 of 60 --quick runs, mostly where the regret
    had flattened in the fit window (audit seed 3: exponent -0.28, interval [-5.5, 5.0]). Such a run is
    INCONCLUSIVE with the flattening in its reason (dpcheck.regret.exponent_regime; it used to be PASS
    (uninformative), which no interval supported). As the audit does (audits/dp_ucbvi.py regret_escalation):
    each look at half the family share (23 checks), PASS at the audit's alpha, and a rate check the quick sweep
    leaves INCONCLUSIVE decided on the default sweep. Over seeds 0..19 none FAILs; after the second look
    regret.exponent.jdp stays inconclusive on 2 seeds (2, 3) and regret.privacy_cost.jdp_K on 3 (2, 3, 19) --
    15%, above issue 17's 10%: the price of not passing what the intervals cannot establish. (The audit's
    second look now takes 16 runs, audits/dp_ucbvi.py ESCALATION_RUNS, which decides half of those: 5 of 60
    --quick seeds inconclusive in benchmarks/results/false_alarm_audits.md; this test keeps the default sweep's 8.)"""
    from dpcheck.audits.lib.ucbvi import rate_checks
    from dpcheck.stats import pass_level
    fa = _bench()
    share = 0.05 / 23
    ids = ("regret.exponent.jdp", "regret.privacy_cost.jdp_K", "regret.privacy_cost.jdp_eps")
    counts, first_looks = {}, {}
    for s in range(20):
        K_grid, R_np, curves, ss = fa.ucbvi_curves(s, "quick")
        with pass_level(0.05):
            first = {c.id: c for c in rate_checks(K_grid, R_np, curves, eps_main=1.0, notion="JDP", alpha=share / 2,
                                                  seed=ss)}
        first_looks[s] = first
        if any(first[i].verdict == "inconclusive" for i in ids):
            K_grid, R_np, curves, ss = fa.ucbvi_curves(s, "default")
            with pass_level(0.05):
                second = {c.id: c for c in rate_checks(K_grid, R_np, curves, eps_main=1.0, notion="JDP",
                                                       alpha=share / 2, seed=ss)}
            first = {i: (second[i] if c.verdict == "inconclusive" else c) for i, c in first.items()}
        for i in ids:
            counts.setdefault(i, []).append(first[i])
    for cid in ids:
        verdicts = [c.verdict for c in counts[cid]]
        assert "fail" not in verdicts, cid
        assert verdicts.count("inconclusive") <= 3, (cid, verdicts)
    seed3 = first_looks[3]["regret.exponent.jdp"]
    assert seed3.verdict == "inconclusive" and "looks flat in the window" in seed3.reason, seed3.reason


def test_whole_audit_benchmark_covers_every_registered_audit():
    """issue 17: the audit-level false-alarm table measures every built-in audit (an audit registered later
    and forgotten here would have no false-alarm row)."""
    from dpcheck import registry
    # the built-in audits: those the dpcheck.audits package registers (other tests register their own)
    builtin = {n for n, spec in registry.load().items()
               if (getattr(spec.run, "__module__", "") or "").startswith("dpcheck.audits.")}
    assert len(builtin) >= 18 and builtin <= set(_bench().AUDITS)
