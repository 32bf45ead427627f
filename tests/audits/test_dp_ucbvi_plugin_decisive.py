"""dp_ucbvi's JDP K-checks with a plug-in privatizer (issue 19 item 2): decisive with a correct plug-in, and never
a plain PASS where the plug-in's declared width puts the audit's K window inside the privacy burn-in.

Cheap: the burn-in end K_b from a declared width, the window rule, the PASS -> PASS (uninformative) marking, the
regret sweep's run count, and regret_checks on planted curves. Slow: the example Gaussian-tree plug-in's
--quick regret sweep at audit seed 0 (audits/lib/ucbvi/regret.py, PLUGIN_MIN_RUNS)."""
from pathlib import Path

import numpy as np
import pytest

from dpcheck.algorithms.envs.generators import random_mdp
from dpcheck.audits.lib import ucbvi
from dpcheck.audits.lib.ucbvi import AgentSpec
from dpcheck.checks import FAIL, INCONCLUSIVE, PASS, Check

GAUSSIAN = f"{Path(__file__).resolve().parents[2] / 'examples' / 'my_privatizer.py'}:GaussianTreePrivatizer"
KG = 2 ** np.arange(6, 14)                      # the --quick K grid: window [1024, 4096]


def _write_huge(tmp_path):
    """A plug-in file: the Gaussian tree declaring 1000x its own width (still a valid, if useless, Assumption
    3.1 bound): its burn-in K_b = S A E / H outlasts the whole --quick grid."""
    f = tmp_path / "huge_width.py"
    f.write_text(
        "import importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('my_privatizer', {GAUSSIAN.split(':')[0]!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "class HugeWidth(m.GaussianTreePrivatizer):\n"
        "    def width_for(self, H, S, A, K, rewards):\n"
        "        return 1000.0 * super().width_for(H, S, A, K, rewards)\n")
    return f"{f}:HugeWidth"


def _env(seed=0):
    return random_mdp(2, 2, 2, np.random.default_rng(seed + 7))        # the audit's MDP at audit seed ``seed``


def _plugin(priv=GAUSSIAN):
    return AgentSpec(privatizer=priv, mode="practical", width_mode="nominal")


# ----------------------------------------------------------------------------- burn-in end and window rule
def test_burn_in_end_is_S_A_E_over_H_with_the_practical_privacy_coefficient():
    from dpcheck.audits.lib import privatizers as pa
    env, spec, K = _env(), _plugin(), int(KG[-1])
    E = pa.declaration(ucbvi.practical_noise(spec, env.H, K, 1.0).make_privatizer(), env.H, env.S, env.A, K).width
    assert ucbvi.burn_in_end(spec, env, K, 1.0) == pytest.approx(env.S * env.A * E / env.H)   # practical: c = 1
    # the width falls with eps, so does the burn-in
    assert ucbvi.burn_in_end(spec, env, K, 4.0) < ucbvi.burn_in_end(spec, env, K, 1.0)


def test_burn_in_end_of_the_example_plugin_leaves_the_quick_window_measurable(tmp_path):
    env, K = _env(), int(KG[-1])
    kb = ucbvi.burn_in_end(_plugin(), env, K, 1.0)
    assert 100 < kb < 250                               # E = 84 at eps = 1: K_b = 2 E ~ 167
    assert ucbvi.burn_in_unmeasurable((1024, 4096), kb) is None
    huge = ucbvi.burn_in_end(_plugin(_write_huge(tmp_path)), env, K, 1.0)
    assert huge == pytest.approx(1000 * kb, rel=1e-6)
    why = ucbvi.burn_in_unmeasurable((1024, 4096), huge)
    assert why and "burn-in" in why and "K_b" in why


@pytest.mark.parametrize("start, K_b, measurable", [(1024, 512, True), (1024, 513, False), (1024, 100, True),
                                                    (2048, 1023, True), (64, 1e6, False)])
def test_window_must_start_a_margin_past_the_burn_in(start, K_b, measurable):
    assert ucbvi.BURN_IN_MARGIN == 2.0
    assert (ucbvi.burn_in_unmeasurable((start, 4 * start), K_b) is None) == measurable


def _check(verdict, **details):
    return Check(id="regret.privacy_cost.jdp_K", kind="regret", verdict=verdict, claim={}, measured={"slope": 0.1},
                 details=details, reason="slope in K 0.1")


def test_marking_turns_only_a_plain_pass_into_an_uninformative_pass():
    out = ucbvi.mark_unmeasurable(_check(PASS), "burn-in not over")
    assert out.verdict == PASS and out.details["qualifier"] == "uninformative"
    assert "burn-in not over" in out.reason and out.measured == {"slope": 0.1}
    for v in (FAIL, INCONCLUSIVE):
        assert ucbvi.mark_unmeasurable(_check(v), "x") == _check(v)
    vac = _check(PASS, qualifier="vacuous", vacuous="why")
    assert ucbvi.mark_unmeasurable(vac, "x") == vac


# ----------------------------------------------------------------------------- the sweep's run count
def test_plugins_get_plugin_min_runs_under_quick_and_builtins_keep_theirs():
    from dpcheck.audits.dp_ucbvi import regret_sweep
    for priv, quick, runs in (("central", True, 4), ("central", False, 8), ("local", True, 4),
                              (GAUSSIAN, True, ucbvi.PLUGIN_MIN_RUNS), (GAUSSIAN, False, 8)):
        K_grid, r, eps = regret_sweep(AgentSpec(privatizer=priv), "JDP", quick=quick)
        assert r == runs, (priv, quick)
        assert list(K_grid) == list(KG if quick else 2 ** np.arange(7, 15))
        assert eps == [0.5, 1, 2, 4]
    assert ucbvi.PLUGIN_MIN_RUNS == 8


# ----------------------------------------------------------------------------- regret_checks on planted curves
def _planted(monkeypatch):
    """regret_checks with the agent runs replaced by paired planted curves: UCBVI 3 sqrt(K) and the private
    agent + a cost 40 K^0.3 / eps (increment exponent 0.3: inside the JDP cost's PASS bound 0.35 and above
    exponent_regime's floor 0.25), with 0.1% noise per run and K: both K-checks PASS plainly on them."""
    import dpcheck.audits.lib.ucbvi.regret as reg
    K = np.arange(1, int(KG[-1]) + 1, dtype=float)

    def curves(spec, env, K_, runs, seed):
        rng = np.random.default_rng(seed)
        base = 3 * np.sqrt(K)[None, :] * np.ones((runs, 1))
        if spec.privatizer == "none":
            return base
        eps = spec.epsilon / 84.0                          # practical_noise: eps_eff = 3 H L eps = 84 eps
        return base + 40 * K ** 0.3 / eps * (1 + 1e-3 * rng.standard_normal((runs, K.size)))
    monkeypatch.setattr(reg, "regret_curves", curves)


def _ids(spec, runs=8):
    from dpcheck.stats import pass_level
    with pass_level(0.05):                                    # as in the audit: PASS at alpha, FAIL at its share
        return {c.id: c for c in ucbvi.regret_checks(spec, _env(), K_grid=KG, runs=runs, seed=3, alpha=0.05 / 23,
                                                      eps_grid=[0.5, 1, 2, 4])}


@pytest.mark.slow
def test_a_plugin_whose_width_puts_the_window_in_the_burn_in_gets_an_uninformative_pass(monkeypatch, tmp_path):
    _planted(monkeypatch)
    good = _ids(_plugin())
    huge = _ids(_plugin(_write_huge(tmp_path)))
    for cid in ("regret.exponent.jdp", "regret.privacy_cost.jdp_K"):
        assert good[cid].verdict == PASS and "qualifier" not in good[cid].details, good[cid].reason
        assert huge[cid].verdict == PASS and huge[cid].details["qualifier"] == "uninformative", huge[cid].reason
        assert "burn-in" in huge[cid].reason and "K_b" in huge[cid].details["vacuous"]
        assert huge[cid].measured == good[cid].measured            # the same measurement, only its reading differs
    # the eps check is not about the K window: unchanged
    assert "qualifier" not in huge["regret.privacy_cost.jdp_eps"].details


def test_an_ldp_plugin_is_not_marked(monkeypatch):
    """The burn-in rule is the JDP cost's: an LDP plug-in (the built-in Local privatizer, subclassed outside
    the package) whose K_b = 2 E exceeds half the window's start keeps its verdicts unqualified."""
    from dpcheck.algorithms.privatizers import LocalPrivatizer

    class MyLocal(LocalPrivatizer):
        pass
    _planted(monkeypatch)
    spec = AgentSpec(privatizer=MyLocal, mode="practical", width_mode="nominal")
    assert ucbvi.burn_in_unmeasurable((1024, 4096), ucbvi.burn_in_end(spec, _env(), int(KG[-1]), 1.0))
    from dpcheck.stats import pass_level
    with pass_level(0.05):
        ids = {c.id: c for c in ucbvi.regret_checks(spec, _env(), K_grid=KG, runs=8, seed=3, alpha=0.05 / 23,
                                                    eps_grid=[0.5, 1, 2, 4])}
    for cid in ("regret.exponent.ldp", "regret.privacy_cost.ldp_K"):
        assert ids[cid].verdict == PASS and "burn-in" not in ids[cid].reason, ids[cid].reason


def test_builtin_privatizers_are_never_marked(monkeypatch):
    _planted(monkeypatch)
    ids = _ids(AgentSpec(privatizer="central", mode="practical", width_mode="nominal"))
    for cid in ("regret.exponent.jdp", "regret.privacy_cost.jdp_K"):
        assert "qualifier" not in ids[cid].details, ids[cid].reason


# ----------------------------------------------------------------------------- the example plug-in, end to end
@pytest.mark.slow
def test_example_gaussian_plugin_quick_k_checks_are_decisive_at_seed_0():
    """The audit's --quick regret sweep at audit seed 0 with examples/my_privatizer.py's Gaussian tree
    (regret_sweep: 8 runs): regret.exponent.jdp and regret.privacy_cost.jdp_K PASS and are not qualified.
    With --quick's former 4 runs both were PASS (uninformative) (the intervals straddled the bounds)."""
    from dpcheck.audits.dp_ucbvi import regret_sweep
    from dpcheck.stats import pass_level
    spec = _plugin()
    K_grid, runs, eps_grid = regret_sweep(spec, "JDP", quick=True)
    with pass_level(0.05):                                    # PASS at the audit's alpha, FAIL at its share
        ids = {c.id: c for c in ucbvi.regret_checks(spec, _env(0), K_grid=K_grid, runs=runs, seed=3,
                                                    alpha=0.05 / 23, eps_grid=eps_grid)}
    for cid in ("regret.exponent.jdp", "regret.privacy_cost.jdp_K"):
        c = ids[cid]
        assert c.verdict == PASS, c.reason
        assert c.details.get("qualifier") is None and "uninformative" not in c.reason, c.reason
    assert ids["regret.privacy_cost.jdp_eps"].verdict != FAIL


@pytest.mark.slow
def test_planted_linear_privacy_cost_fails_through_the_plugin_path_too():
    """The capped-counts agent of tests/project/test_false_alarm.py (N~ capped at 2E: the privacy term of the
    bonus never falls below 1/2, the cost grows linearly) with the example plug-in and its 8-run --quick
    sweep: both K-checks FAIL (the burn-in rule only ever reads a PASS)."""
    from dpcheck.algorithms.online.ucbvi import DPUCBVI
    from dpcheck.audits.dp_ucbvi import regret_sweep
    from dpcheck.stats import pass_level

    class CappedCountsDPUCBVI(DPUCBVI):
        def _estimates(self, counts):
            P, r, n = super()._estimates(counts)
            return P, r, np.minimum(n, 2 * counts.width)

    spec = AgentSpec(privatizer=GAUSSIAN, mode="practical", width_mode="nominal", agent_class=CappedCountsDPUCBVI)
    K_grid, runs, eps_grid = regret_sweep(spec, "JDP", quick=True)
    with pass_level(0.05):
        ids = {c.id: c for c in ucbvi.regret_checks(spec, _env(0), K_grid=K_grid, runs=runs, seed=3,
                                                    alpha=0.05 / 23, eps_grid=eps_grid)}
    assert ids["regret.privacy_cost.jdp_K"].verdict == FAIL, ids["regret.privacy_cost.jdp_K"].reason
    assert ids["regret.exponent.jdp"].verdict == FAIL, ids["regret.exponent.jdp"].reason
