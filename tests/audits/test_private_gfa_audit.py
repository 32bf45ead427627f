"""The private_gfa / private_gfa_outcome audits (issue #13, items 2, 5, 6): claim tables, the checks of
audits/lib/gfa/ on the correct learners and on planted defects (each caught by the check that should
catch it), bad input through the CLI (exit 2, one line), and the --quick end-to-end runs."""

import numpy as np
import pytest

from dpcheck.algorithms.gfa import (PrivateGeneralMDP, PrivateOutcomeRL, appendix_d, argmax_with_ties, gf3)
from dpcheck.audits.lib import gfa
from dpcheck.audit import ExecutionOptions
from dpcheck.cli import main


# ------------------------------------------------------------------------------------- planted defects
class NoFactorTwo(PrivateGeneralMDP):
    """Temperature eps0 / Delta_S: the factor 2 on the sensitivity dropped (the mechanism is 2 eps0-DP)."""

    def _temperature(self, privacy):
        return privacy.eps0 / privacy.sensitivity


class NoFactorTwoOutcome(PrivateOutcomeRL):
    def _temperature(self, privacy):
        return privacy.eps0 / privacy.sensitivity


class NoComposition(PrivateGeneralMDP):
    """Every update spends the whole budget: eps0 = eps (the composition over M updates ignored)."""

    def _temperature(self, privacy):
        return privacy.epsilon / (2.0 * privacy.sensitivity)


class ArgmaxSampling(PrivateGeneralMDP):
    """Samples by argmax of the score instead of the exponential mechanism."""

    def _select(self, scores, beta, rng):
        return argmax_with_ties(scores, rng, "lowest")


class StaleScore(PrivateGeneralMDP):
    """Scores on the data before the previous batch: each batch reaches the statistics one update late."""

    def _add(self, stats, states, actions, rewards):
        pending = getattr(stats, "_pending", None)
        if pending is not None:
            super()._add(stats, *pending)
        stats._pending = (states, actions, rewards)


class StaleScoreOutcome(PrivateOutcomeRL):
    def _add(self, stats, states, actions, rewards):
        pending = getattr(stats, "_pending", None)
        if pending is not None:
            super()._add(stats, *pending)
        stats._pending = (states, actions, rewards)


@pytest.fixture(scope="module")
def gf():
    return gf3()


@pytest.fixture(scope="module")
def ad2():
    return appendix_d("easy", H=2)


def _agent(gf, cls=PrivateGeneralMDP, **kw):
    args = dict(epsilon=1.0, delta=1e-5, B=4, s1=0)
    args.update(kw)
    return cls(gf.fclass, **args)


# ------------------------------------------------------------------------------------- claim tables
def test_claim_tables_and_options_are_registered():
    from dpcheck.registry import get
    a, b = get("private_gfa"), get("private_gfa_outcome")
    ids_a = {r.id for r in a.claims}
    ids_b = {r.id for r in b.claims}
    common = {"privacy.jdp.blackbox", "privacy.em_selection", "whitebox.sensitivity", "whitebox.composition",
              "whitebox.score_dataset", "assumption.realizability", "assumption.coverability",
              "regret.exponent.private", "regret.exponent.nonprivate", "regret.privacy_cost.eps",
              "regret.output_policy"}
    assert common <= ids_a and common <= ids_b
    assert "assumption.completeness" in ids_a and "assumption.completeness" not in ids_b
    assert "assumption.deterministic" in ids_b
    assert {o.name for o in a.options} >= {"function_class", "batch", "K", "eps0_rule", "tuning"}
    assert "sensitivity" in {o.name for o in b.options}
    assert any("8H" in r.statement for r in a.claims) and any("(H+1)^2" in r.statement for r in b.claims)


def test_list_claims_and_options(capsys):
    assert main(["list", "--claims", "private_gfa"]) == 0
    out = capsys.readouterr().out
    assert "whitebox.composition" in out and "gfa.composition_check" in out
    assert main(["list", "--options", "private_gfa_outcome"]) == 0
    out = capsys.readouterr().out
    assert "function_class" in out and "batch" in out and "sensitivity" in out


# ------------------------------------------------------------------------------------- correct learners
@pytest.mark.slow
def test_checks_pass_on_the_correct_algorithm_1(gf):
    ag = _agent(gf)
    assert gfa.composition_check(ag, [16, 256, 4096]).verdict == "pass"
    sel = gfa.selection_check(ag, 256, draws=60_000, seed=1)
    assert sel.verdict == "pass" and sel.measured["power_against"]["beta_x2"] > 0.99
    assert gfa.sensitivity_check(ag, 0, examples=30).verdict == "pass"
    assert gfa.score_dataset_check(ag, gf.mdp, K=14, runs=2, seed=3).verdict == "pass"


def test_checks_pass_on_the_correct_algorithm_2(ad2):
    ag = PrivateOutcomeRL(ad2.fclass, epsilon=1.0, delta=1e-5, B=3)
    assert gfa.composition_check(ag, [9, 90]).verdict == "pass"
    assert gfa.selection_check(ag, 90, draws=40_000, seed=2).verdict == "pass"
    s = gfa.sensitivity_check(ag, ad2.mdp.init, examples=30)
    assert s.verdict == "pass" and s.measured["max_change"] <= 9.0
    assert gfa.score_dataset_check(ag, ad2.mdp, K=12, runs=2, seed=4).verdict == "pass"


def test_composition_check_accounts_the_updates_exactly(gf):
    """M eps0-DP updates through the PLD accountant: one update gives eps0 itself; the declared exact eps0
    composes within eps; the appendix_e rule overshoots advanced composition but the PLD value is reported."""
    ag = _agent(gf, B=1)
    c = gfa.composition_check(ag, [1])
    row = c.details["grid"][0]
    assert row["M"] == 1 and row["epsilon_pld"] == pytest.approx(row["eps0_used"], rel=1e-2)
    c = gfa.composition_check(_agent(gf, B=1, eps0_rule="appendix_e"), [50])
    assert c.details["grid"][0]["declared_composed_epsilon"] > 1.0


def test_sensitivity_search_gets_close_to_the_bound_on_extreme_classes(gf):
    """On a {0, 1} class the residual reaches -2 (f = 0, r = 1, max f' = 1): the change is a sizeable
    fraction of 8H, never above it."""
    ag = _agent(gf)
    ext = gfa.extreme_class(3, seed=0)
    import copy
    e = copy.copy(ag)
    e.fclass = ext
    res = gfa.sensitivity_search(e, 0, examples=60)
    assert 4.0 <= res["max_change"] <= 24.0


@pytest.mark.slow
def test_selection_check_detects_a_small_temperature_error(gf):
    """Known answer: a 25% temperature error is caught with the reported power (near 1 at 200k draws)."""
    class Off25(PrivateGeneralMDP):
        def _temperature(self, privacy):
            return 1.25 * privacy.beta_em
    c = gfa.selection_check(_agent(gf, cls=Off25), 256, draws=200_000, seed=5)
    assert c.verdict == "fail"


# ------------------------------------------------------------------------------------- planted defects
def test_defect_no_factor_two_caught_by_the_selection_law(gf):
    c = gfa.selection_check(_agent(gf, cls=NoFactorTwo), 256, draws=50_000, seed=1)
    assert c.verdict == "fail" and c.measured["p_value"] < 1e-6
    assert c.measured["beta_em_used"] == pytest.approx(2 * c.measured["beta_em_declared"])


def test_defect_no_factor_two_caught_in_algorithm_2(ad2):
    ag = NoFactorTwoOutcome(ad2.fclass, epsilon=1.0, delta=1e-5, B=3)
    assert gfa.selection_check(ag, 90, draws=40_000, seed=1).verdict == "fail"


def test_defect_composition_ignored_caught_by_the_accountant(gf):
    ag = _agent(gf, cls=NoComposition, B=4)
    c = gfa.composition_check(ag, [64])
    assert c.verdict == "fail" and c.measured["epsilon_pld"] > 2.0
    assert c.details["grid"][0]["M"] == 16


def test_defect_argmax_caught_by_the_selection_law_and_the_black_box(gf):
    ag = _agent(gf, cls=ArgmaxSampling)
    c = gfa.selection_check(ag, 256, draws=20_000, seed=1)
    assert c.verdict == "fail"
    one = _agent(gf, cls=ArgmaxSampling, B=1)
    bb = gfa.jdp_blackbox_check(one, gf.mdp, ExecutionOptions(seed=0), K=4, samples=5_000)
    assert bb.verdict == "fail" and bb.measured["epsilon_lower_bound"] > 1.0


def test_defect_stale_score_caught_by_the_data_flow_check(gf, ad2):
    c = gfa.score_dataset_check(_agent(gf, cls=StaleScore, B=3), gf.mdp, K=15, runs=2, seed=0)
    assert c.verdict == "fail" and c.details["first_mismatch"]["update"] == 1   # batch 1 scored without batch 0
    ag = StaleScoreOutcome(ad2.fclass, epsilon=1.0, delta=1e-5, B=3)
    assert gfa.score_dataset_check(ag, ad2.mdp, K=12, runs=2, seed=0).verdict == "fail"


@pytest.mark.slow
def test_jdp_black_box_does_not_flag_the_correct_learner(gf):
    bb = gfa.jdp_blackbox_check(_agent(gf, B=1), gf.mdp, ExecutionOptions(seed=0), K=4, samples=10_000)
    assert bb.verdict != "fail" and bb.measured["epsilon_lower_bound"] <= 1.0
    # the scripted pair moves the scores far less than their sensitivity: even at 2x the declared eps0 it shows
    # less than the claim, so a PASS there is no evidence and says so (a learner 20x too hot passed plainly)
    assert bb.details["pair_reachable_epsilon"] < bb.measured["epsilon_claimed"]
    assert bb.verdict != "pass" or bb.details["qualifier"] == "uninformative"


def test_pair_reach_is_zero_for_identical_users_and_grows_with_the_temperature(gf):
    from dpcheck.audits.lib.gfa.privacy import jdp_users, pair_reach
    ag = _agent(gf, B=1)
    U, U2 = jdp_users(ag, gf.mdp, 4)
    assert pair_reach(ag, gf.mdp, U, U, 4, runs=2) == 0.0
    r1, r2 = (pair_reach(ag, gf.mdp, U, U2, 4, factor=f, runs=2) for f in (1.0, 2.0))
    assert 0 < r1 < r2 < ag.claim.epsilon


# ------------------------------------------------------------------------------------- assumptions
def test_assumption_checks_match_the_spec_oracles(gf):
    ch = {c.id: c for c in gfa.assumption_checks(1, gf, reference=gfa.REFERENCE["GF-3"])}
    assert all(c.verdict == "pass" for c in ch.values()), {k: c.reason for k, c in ch.items()}
    assert ch["assumption.coverability"].measured["C_cov"] == pytest.approx(3.52)
    ad = appendix_d("easy")
    ch = {c.id: c for c in gfa.assumption_checks(2, ad, reference=gfa.REFERENCE["appendix-D-easy"])}
    assert all(c.verdict == "pass" for c in ch.values()), {k: c.reason for k, c in ch.items()}
    assert ch["assumption.coverability"].measured["C_cov_prime"] == pytest.approx(9.34375)


def test_assumption_checks_fail_on_a_class_without_q_star(gf):
    from dpcheck.algorithms.gfa import FunctionClass, GFAInstance
    vals = np.delete(gf.fclass.values, [0], axis=0)          # drop Q* (entry 0)
    fc = FunctionClass.from_values(vals)
    inst = GFAInstance(mdp=gf.mdp, fclass=fc, name="no Q*", target=-1, s1=0)
    ch = {c.id: c for c in gfa.assumption_checks(1, inst)}
    assert ch["assumption.realizability"].verdict == "fail"   # Q* = (F_1[0], F_2[0], F_3[0]) occurs once
    assert ch["assumption.completeness"].verdict == "pass"    # the step sets are unchanged
    vals = gf.fclass.values.copy()
    vals[:, 0] = np.clip(vals[:, 0] + 0.01, 0, 1)             # shift every F_1 function: Q*_1 leaves the class
    inst = GFAInstance(mdp=gf.mdp, fclass=FunctionClass.from_values(vals), name="shifted", target=-1, s1=0)
    ch = {c.id: c for c in gfa.assumption_checks(1, inst)}
    assert ch["assumption.realizability"].verdict == "fail"
    assert ch["assumption.completeness"].verdict == "fail"


# ------------------------------------------------------------------------------------- regret
def test_output_policy_identity_and_bounds(gf):
    ag = _agent(gf, epsilon=16.0, B=8)
    c = gfa.output_policy_check(ag, gf, K=64, runs=3, seed=0)
    assert c.verdict == "pass" and 0 <= c.measured["suboptimality_mean"] <= 1
    np_t, p_t = gfa.appendix_bound(1, K=4096, H=3, N=192, C_cov=3.52, epsilon=1.0, delta=1e-5, sensitivity=24.0)
    np_t2, p_t2 = gfa.appendix_bound(1, K=4096, H=3, N=192, C_cov=3.52, epsilon=32.0, delta=1e-5, sensitivity=24.0)
    assert np_t == np_t2 and p_t / p_t2 == pytest.approx(32 ** 0.4)


def test_private_exponent_decision_on_known_curves(gf):
    """regret.exponent.private (gfa.private_exponent_check, the decision the audit and
    benchmarks/gfa_outcome_window.py share) on costs with known exponents: K^0.45 passes in the growing
    regime; K^1.6 fails where the theorem's bound is below K J* (K up to 2^20 on GF-3) and is inconclusive
    where it is vacuous (K up to 2^11); a flat cost (mean increments within noise of 0, some <= 0) is
    INCONCLUSIVE: no exponent is defined (it used to be PASS (uninformative) without any fit)."""
    from dpcheck.algorithms.gfa import coverability
    C = coverability(gf.mdp, gf.fclass).value
    rng = np.random.default_rng(0)

    def decide(K, D):
        rates = gfa.RateSetting(1, gf, tuple(K), 64.0, 1e-5, C, "paper", 0.05 / 12, 0)
        return gfa.private_exponent_check(rates, D, {})

    small, large = [2 ** k for k in range(8, 12)], [2 ** k for k in range(17, 21)]
    for K in (small, large):
        Kn = np.asarray(K, float)
        slow = decide(K, 3 * Kn ** 0.45 * (1 + 0.05 * rng.standard_normal((24, 4))))
        assert slow.verdict == "pass" and "qualifier" not in slow.details and slow.details["fit"]["ci_pass"][1] < 0.7
        steep = decide(K, 1e-3 * Kn ** 1.6 * (1 + 0.05 * rng.standard_normal((24, 4))))
        vacuous = steep.details["bound_vacuity"]["vacuous"]
        assert vacuous == (K is small)
        assert steep.verdict == ("inconclusive" if vacuous else "fail")
        flat = decide(K, 50 + rng.standard_normal((24, 4)))
        assert flat.verdict == "inconclusive" and "qualifier" not in flat.details
        assert "does not increase" in flat.reason


def test_private_exponent_is_not_passed_when_one_mean_increment_dips(gf):
    """A privacy cost linear in K (exponent 1, far above 3/5 + 0.1) whose mean dips once on the grid (e.g. the
    non-private mean is larger at that K) has no exponent to fit there: INCONCLUSIVE naming the step, never a
    PASS (the old rule read the dip as "the cost is not growing" and passed it, uninformative)."""
    rng = np.random.default_rng(0)
    K = [2 ** k for k in range(9, 16)]
    D = 0.3 * np.asarray(K, float)[None, :] + rng.normal(0, 5, size=(32, len(K)))
    D[:, 2] = D[:, 1] - 1.0                                        # the mean cost falls on [1024, 2048]
    rates = gfa.RateSetting(1, gf, tuple(K), 16.0, 1e-5, 3.52, "paper", 0.05 / 20, 0)
    c = gfa.private_exponent_check(rates, D, {})
    assert c.verdict == "inconclusive", c.reason
    assert "[1024, 2048]" in c.reason and "qualifier" not in c.details
    # the same cost without the dip is fitted and fails where the theorem's bound is below K J* (GF-3, K <= 2^15)
    # or is softened to INCONCLUSIVE where it is vacuous: never a PASS either way
    D[:, 2] = 0.3 * K[2] + rng.normal(0, 5, size=32)
    assert gfa.private_exponent_check(rates, D, {}).verdict != "pass"


def test_privacy_cost_in_eps_is_not_passed_when_the_mean_cost_is_not_positive_at_some_eps():
    """regret.privacy_cost.eps fits the log of the mean cost: where that mean is <= 0 the log is undefined (the
    fit clips it at a tiny value), so a PASS is INCONCLUSIVE with the eps named (it was PASS (uninformative)). On
    the default grid of five eps the middle one has no weight in the slope (log 64 is the grid's mean), so a
    cost <= 0 there leaves a slope in [-1.1, 0]. A cost ~ eps^(-2/5), positive everywhere, passes; one growing
    with eps fails."""
    rng = np.random.default_rng(0)
    eps = [4.0, 16.0, 64.0, 256.0, 1024.0]
    noise = lambda: rng.normal(0, 1, size=(24, 5))
    kw = dict(alpha=0.05 / 12, seed=0, source="test", details={})
    good = 100 * np.asarray(eps) ** -0.4 + noise()
    assert gfa.privacy_cost_eps_check(eps, good, **kw).verdict == "pass"
    dips = good.copy()
    dips[:, 2] = noise()[:, 2] - 3.0                            # the mean cost is ~ -3 at eps = 64
    c = gfa.privacy_cost_eps_check(eps, dips, **kw)
    assert c.verdict == "inconclusive" and "not clearly positive" in c.reason and c.reason.endswith(
        "at 64: its log-log slope is not established") and "qualifier" not in c.details
    grows = 2 * np.asarray(eps) ** 0.5 + noise()
    assert gfa.privacy_cost_eps_check(eps, grows, **kw).verdict == "fail"


@pytest.mark.slow
def test_regret_checks_on_a_small_grid(gf):
    """Known behaviour on GF-3 (theory tuning): the privacy cost falls with eps; every check carries its
    interval, and a FAIL of a K-exponent where the bound is vacuous is softened."""
    from dpcheck.algorithms.gfa import coverability
    C = coverability(gf.mdp, gf.fclass).value
    checks = {c.id: c for c in gfa.regret_checks(1, gf, K_grid=[256, 512, 1024, 2048], eps_K=16.0,
                                                 eps_grid=(4.0, 64.0, 1024.0), K_eps=1024, runs=8, runs_np=24,
                                                 delta=1e-5, tuning="theory", C_cov=C, seed=0, alpha=0.05)}
    assert set(checks) == {"regret.exponent.private", "regret.exponent.nonprivate", "regret.privacy_cost.eps"}
    cost = checks["regret.privacy_cost.eps"]
    assert cost.verdict == "pass" and cost.measured["ci"][1] < 0
    for c in checks.values():
        assert "confidence" in c.measured
        if c.id.startswith("regret.exponent") and "bound_vacuity" in c.details:
            assert c.verdict != "fail" or not c.details["bound_vacuity"]["vacuous"]


# ------------------------------------------------------------------------------------- bad input (CLI)
def _run_cli(tmp_path, name, *sets):
    argv = ["audit", name, "--quick", "--out", str(tmp_path / "out"), "--quiet"]
    for s in sets:
        argv += ["--set", s]
    return main(argv)


def _one_line(capsys):
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("name", ["private_gfa", "private_gfa_outcome"])
@pytest.mark.parametrize("values, needle", [
    (np.full((2, 3, 3, 2), 1.5), "[0, 1]"),
    (np.full((2, 3, 3, 2), -0.2), "[0, 1]"),
    (np.zeros((0, 3, 3, 2)), "empty"),
    (np.zeros((3, 3, 2)), "axes"),
])
def test_bad_function_class_exits_2_with_one_line(tmp_path, capsys, name, values, needle):
    path = tmp_path / "fc.npz"
    np.savez(path, values=values)
    assert _run_cli(tmp_path, name, f"function_class={path}") == 2
    line = _one_line(capsys)
    assert needle in line and "function_class" in line


@pytest.mark.parametrize("name", ["private_gfa", "private_gfa_outcome"])
def test_class_of_the_wrong_shape_for_the_instance_exits_2(tmp_path, capsys, name):
    path = tmp_path / "fc.npz"
    np.savez(path, values=np.zeros((2, 2, 5, 3)))
    assert _run_cli(tmp_path, name, f"function_class={path}") == 2
    assert "(H, S, A)" in _one_line(capsys)


@pytest.mark.parametrize("name", ["private_gfa", "private_gfa_outcome"])
@pytest.mark.parametrize("b", ["0", "-3"])
def test_batch_below_one_exits_2(tmp_path, capsys, name, b):
    assert _run_cli(tmp_path, name, f"batch={b}") == 2
    assert "batch size B must be an integer >= 1" in _one_line(capsys)


def test_other_file_problems_exit_2(tmp_path, capsys):
    assert _run_cli(tmp_path, "private_gfa", f"function_class={tmp_path / 'missing.npz'}") == 2
    assert "no such file" in _one_line(capsys)
    bad = tmp_path / "bad.npz"
    bad.write_text("not a zip")
    assert _run_cli(tmp_path, "private_gfa", f"function_class={bad}") == 2
    assert "not a readable .npz" in _one_line(capsys)
    other = tmp_path / "other.npz"
    np.savez(other, q=np.zeros(3))
    assert _run_cli(tmp_path, "private_gfa", f"function_class={other}") == 2
    assert "'values'" in _one_line(capsys)


def test_a_users_class_with_its_own_mdp_loads(tmp_path, gf):
    """A class and MDP as arrays round-trip: the GF-3 class with its MDP gives the same instance."""
    path = tmp_path / "gf3.npz"
    np.savez(path, values=gf.fclass.values, P=gf.mdp.P, r=gf.mdp.r, init=gf.mdp.init)
    fc, mdp = gfa.load_function_class(str(path), 1)
    assert fc.N == 192 and mdp.H == 3
    inst = gfa.instance_with_class(1, fc, mdp)
    assert inst.s1 == 0
    ch = {c.id: c for c in gfa.assumption_checks(1, inst)}
    assert ch["assumption.completeness"].verdict == "pass"


# ------------------------------------------------------------------------------------- end to end
@pytest.mark.slow
@pytest.mark.parametrize("name", ["private_gfa", "private_gfa_outcome"])
def test_quick_end_to_end(tmp_path, name):
    import json
    code = main(["audit", name, "--quick", "--workers", "1", "--out", str(tmp_path), "--quiet"])
    rep = json.load(open(tmp_path / f"{name}.json"))
    ids = {c["id"]: c["verdict"] for c in rep["checks"]}
    from dpcheck.registry import get
    assert set(ids) == {r.id for r in get(name).claims}
    assert "fail" not in ids.values(), ids
    assert code == 0


@pytest.mark.slow
def test_same_figures_in_one_process_and_on_dask(tmp_path):
    """private_gfa_outcome --quick: every check's figures are the same with --workers 1 and with two dask workers.
    The checks that run beside the regret batches may run anywhere, the hypothesis sensitivity search included
    since dpcheck.hypothesis_search (before it, a dask worker met other examples than the main process)."""
    import json
    reps = {}
    for tag, extra in (("one", ["--workers", "1"]), ("dask", ["--workers", "2", "--backend", "dask"])):
        out = tmp_path / tag
        assert main(["audit", "private_gfa_outcome", "--quick", "--seed", "3", "--out", str(out), "--quiet",
                     *extra]) == 0
        reps[tag] = {c["id"]: json.dumps([c["verdict"], c["measured"]], sort_keys=True)     # NaN == NaN as text
                     for c in json.load(open(out / "private_gfa_outcome.json"))["checks"]}
    assert reps["one"] == reps["dask"]


@pytest.mark.slow
def test_binary_sensitivity_fails_for_arbitrary_users_and_h_squared_is_tight(ad2):
    """Known answers on the H = 2 Appendix D class: an arbitrary user (states not following the dynamics,
    outcome in [0, 1]) moves the score by H^2 = 4, so the PoC default's Delta_S = 1 (docs/derivations.md#noise-calibration, docs/private_gfa.md: valid only
    for trajectories of the deterministic MDP with binary outcomes) fails, while the telescoping H^2 is met
    with equality and the paper's (H+1)^2 holds."""
    got = {}
    for kind in ("binary", "telescoping", "paper"):
        ag = PrivateOutcomeRL(ad2.fclass, epsilon=1.0, delta=1e-5, B=3, sensitivity=kind)
        got[kind] = gfa.sensitivity_check(ag, ad2.mdp.init, examples=60)
    assert got["binary"].verdict == "fail"
    assert got["telescoping"].verdict == "pass" and got["telescoping"].measured["max_change"] == pytest.approx(4.0)
    assert got["paper"].verdict == "pass"


def test_composition_check_reads_the_draws_and_temperatures_really_made(gf):
    """The correct learner's observed draws equal ceil(K/B) and its observed temperature the declared one."""
    ok = gfa.composition_check(_agent(gf, B=8), [64, 200], mdp=gf.mdp)
    assert ok.verdict == "pass" and [r["observed"]["draws"] for r in ok.details["grid"]] == [8, 25]
    assert all(r["observed"]["max_beta"] == pytest.approx(r["beta_declared"]) for r in ok.details["grid"])
    # the composition-ignored defect is caught with the observed temperatures too
    bad = gfa.composition_check(_agent(gf, cls=NoComposition, B=4), [64], mdp=gf.mdp)
    assert bad.verdict == "fail" and bad.details["grid"][0]["observed"]["draws"] == 16


def test_exponent_passes_that_say_nothing_are_marked():
    """A pass with an interval below 0.25 (saturated regret) or wider than 1 is never a plain PASS."""
    from dpcheck.regret import fit_increment_exponent, slope_check
    K = np.array([512, 1024, 2048, 4096])
    rng = np.random.default_rng(0)
    flat = 100 + 5 * np.log(K)[None, :] + rng.normal(0, 0.01, size=(16, 4))       # saturating regret
    noisy = np.cumsum(np.abs(rng.normal(50, 60, size=(4, 4))), axis=1)              # few, noisy runs
    for R in (flat, noisy):
        fit = fit_increment_exponent(K, R, interval="t")
        c = slope_check(fit, bound=100.0, id="regret.exponent.private", statement="", source="", xname="K",
                        details={})
        assert c.verdict == "pass"
        assert gfa._regime(c, fit, "K^(3/5)").details.get("qualifier") == "uninformative"


def test_output_policy_simulation_catches_a_per_step_mixture(gf, monkeypatch):
    """A released policy that mixes per step (a fresh k at every step) has another return than
    Unif(pi_1..pi_K) run per episode; the simulated part of the check sees it (GF-3, eps = 1: distinct pi_k)."""
    import dpcheck.algorithms.gfa as pkg

    class PerStep(pkg.MixturePolicy):
        def sample(self, rng):
            runs, K = self.episode_entries.shape
            H = self.fclass.H
            k = rng.integers(K, size=(runs, H))
            pols = self.fclass.greedy_policies(self.episode_entries[np.arange(runs)[:, None], k])  # (runs, H, H, S)
            return pols[:, np.arange(H), np.arange(H)]

    ag = _agent(gf, epsilon=1.0, B=2)
    assert gfa.output_policy_check(ag, gf, K=40, runs=2, seed=3, n_mc=40_000).verdict == "pass"
    monkeypatch.setattr(pkg, "MixturePolicy", PerStep)
    bad = gfa.output_policy_check(ag, gf, K=40, runs=2, seed=3, n_mc=40_000)
    assert bad.verdict == "fail"
    sim = bad.details["simulation"]
    assert abs(sim["mean_return"] - sim["J_hat"]) > sim["hoeffding_radius"]


@pytest.mark.slow
def test_selection_check_does_not_false_alarm_over_seeds(gf):
    # a correct sampler: FAIL needs p < alpha / 100, so 40 seeds at the --quick draw count give no FAIL
    # (a "p < alpha" rule fails about one run in twenty)
    ag = _agent(gf)
    got = [gfa.selection_check(ag, 256, draws=50_000, seed=s) for s in range(40)]
    assert [c.verdict for c in got].count("fail") == 0
    assert sum(c.measured["p_value"] < 0.05 for c in got) <= 6       # the p-values themselves are uniform


# ------------------------------------------------------------------------------------- decisive rate checks (issue 17)
def _exponent_check(R, bound=0.6, K=(512, 1024, 2048, 4096), seed=0):
    from dpcheck.regret import fit_increment_exponent, slope_check
    fit = fit_increment_exponent(list(K), R, alpha=0.05, seed=seed, interval="t")
    c = slope_check(fit, bound=bound, id="regret.exponent.nonprivate", statement="", source="", xname="K",
                    details={"K_grid": list(K)})
    return c, fit


def test_settled_runs_explain_an_inconclusive_nonprivate_exponent_and_leave_it_inconclusive():
    """Runs whose regret is B(K) x one constant (settled within the same batches at every K) plus one run
    that settles differently at the smallest K: the interval is wide (INCONCLUSIVE); with >= 75% settled runs
    the reason says so, and the check stays INCONCLUSIVE (it used to be PASS (uninformative): the settled runs'
    own exponent is the batch size's by construction and tests nothing)."""
    from dpcheck.algorithms.gfa import remark_3_7_batch_size
    K = (512, 1024, 2048, 4096)
    B = np.array([remark_3_7_batch_size(k) for k in K], float)
    m = np.array([2.375, 1.25, 0.5, 1.625, 1.25, 2.125, 2.125, 1.5, 1.625, 1.25, 0.5, 1.75])
    R = m[:, None] * B[None, :]
    R[8, 0] = 3.25 * B[0]                       # one run settles later at K = 512 (seen on Appendix D)
    c, fit = _exponent_check(R)
    assert c.verdict == "inconclusive"
    s = gfa.settled_runs(K, R)
    assert (s["runs"], s["of"]) == (11, 12)
    out = gfa._settled_regime(c, s, R)
    assert out.verdict == "inconclusive" and "qualifier" not in out.details
    assert "11 of 12 runs" in out.reason and "batch size" in out.reason
    assert out.details["settled_runs"]["exponent"] <= 0.6


def test_the_nonprivate_window_from_1024_decides_runs_that_settle_late_at_512_and_never_passes_linear_regret():
    """private_gfa_outcome fits the non-private exponent from K = 1024 (its size table's np_from): runs that all
    grow like B(K) from there, a few of which settled late inside K = 512's batches, are INCONCLUSIVE over the
    whole grid (the mean's exponent ~0.55 against 0.6) and PASS from 1024 on; linear regret is not passed on
    either window."""
    from dpcheck.algorithms.gfa import remark_3_7_batch_size
    from dpcheck.audits.private_gfa import PrivateGFAOutcomeAudit
    assert {z["np_from"] for z in PrivateGFAOutcomeAudit.sizes.values()} == {1024}
    K = (512, 1024, 2048, 4096)
    B = np.array([remark_3_7_batch_size(k) for k in K], float)
    rates = gfa.RateSetting(2, None, K, 8.0, 1e-5, 1.0, 1.0, 0.05 / 14, 0)
    rng = np.random.default_rng(4)
    m = rng.choice([0.5, 1.25, 1.625, 2.125, 2.625], size=24)
    R = m[:, None] * B[None, :]
    # three runs settle later inside K = 512's batches: more regret there, so a first increment near 0 (seen on
    # Appendix D, e.g. regret 83.4, 84, 120.8, 168 at K = 512 ... 4096)
    R[:3, 0] = np.array([1.38, 1.38, 1.3]) * m[:3] * B[0]
    from dpcheck.regret import fit_increment_exponent, slope_check
    from dpcheck.stats import pass_level

    def verdict(R, window):
        with pass_level(0.05):
            fit = gfa._upper_bound_fit(fit_increment_exponent, list(K), R, alpha=rates.alpha, seed=0,
                                       interval="t", window=window)
        return slope_check(fit, bound=0.6, xname="K", id="regret.exponent.nonprivate", statement="", source="",
                           details={}).verdict

    assert verdict(R, None) == "inconclusive"
    assert verdict(R, (1024, 2048)) == "pass"
    linear = np.asarray(K, float)[None, :] * rng.uniform(0.05, 0.1, size=(24, 1))
    assert verdict(linear, (1024, 2048)) != "pass" and verdict(linear, None) != "pass"


def test_settled_runs_never_pass_a_learner_whose_other_runs_grow_faster_than_claimed():
    """Three quarters of the runs settled (B(K) x c), a quarter growing like K^0.9 with a heavy-tailed scale:
    the mean's increment exponent is far above 0.6 and its interval straddles the bound. Only the interval may
    pass the check: the settled-runs rule used to make 190 of 200 such INCONCLUSIVEs PASS (uninformative)."""
    from dpcheck.algorithms.gfa import remark_3_7_batch_size
    from dpcheck.regret import fit_increment_exponent, slope_check
    Kg = [2 ** k for k in range(9, 16)]
    B = np.array([remark_3_7_batch_size(k) for k in Kg], float)
    rng = np.random.default_rng(0)
    verdicts = []
    for trial in range(10):
        R = np.zeros((128, len(Kg)))
        R[:96] = B[None, :] * rng.uniform(0.1, 1.0, size=(96, 1))
        R[96:] = (0.02 * np.asarray(Kg, float)[None, :] ** 0.9 * rng.lognormal(-2, 2, size=(32, 1))
                  + B[None, :] * rng.uniform(0.1, 1, size=(32, 1)) + rng.normal(0, 0.01, size=(32, len(Kg))))
        fit = gfa._upper_bound_fit(fit_increment_exponent, Kg, R, alpha=0.05 / 20, seed=trial, interval="t")
        c = slope_check(fit, bound=0.6, xname="K", id="regret.exponent.nonprivate", statement="", source="",
                        details={"K_grid": Kg})
        s = gfa.settled_runs(Kg, R)
        assert s["share"] >= gfa.SETTLED_SHARE
        out = gfa._settled_regime(c, s, R)
        verdicts.append((c.verdict, out.verdict))
    assert ("inconclusive", "inconclusive") in verdicts
    assert all(v == w for v, w in verdicts), verdicts


def test_settled_rule_never_passes_a_learner_that_stops_learning():
    """A learner that never settles (regret linear in K, e.g. argmax ignored) has no settled runs: its
    exponent check is not changed (FAIL stays FAIL; an INCONCLUSIVE stays INCONCLUSIVE); fewer than 75%
    settled runs change nothing either; a FAIL is never changed even if the runs settle."""
    rng = np.random.default_rng(0)
    K = np.array([512, 1024, 2048, 4096], float)
    lin = rng.uniform(0.2, 0.4, size=(12, 1)) * K[None, :] + rng.normal(0, 5, size=(12, 4))
    c, fit = _exponent_check(lin)
    assert c.verdict == "fail"
    s = gfa.settled_runs(K, lin)
    assert s["runs"] == 0
    assert gfa._settled_regime(c, s, lin).verdict == "fail"
    inc = replace_verdict(c, "inconclusive")
    assert gfa._settled_regime(inc, s, lin).verdict == "inconclusive"
    forced = {**s, "share": 1.0, "runs": 12, "mask": np.ones(12, bool)}
    assert gfa._settled_regime(c, forced, lin).verdict == "fail"
    assert gfa._settled_regime(inc, forced, lin).verdict == "inconclusive"
    half = {**s, "share": 0.5}
    assert gfa._settled_regime(inc, half, lin).verdict == "inconclusive"


def replace_verdict(check, verdict):
    from dataclasses import replace
    return replace(check, verdict=verdict)


def test_regret_curves_use_common_random_numbers_across_k():
    """Run i of the non-private batched learner uses one seed at every K: on Appendix D its regret is
    B(K) x a per-run constant for most runs (the correlation across K the exponent's bootstrap relies on)."""
    from dpcheck.algorithms.gfa import per_start_coverability
    inst = appendix_d("easy")
    C = per_start_coverability(inst.mdp, inst.fclass).value
    _, Rn = gfa.regret_curves(2, inst, K_grid=[256, 512, 1024], eps_list=[8.0], runs=1, runs_np=8, delta=1e-5,
                              tuning="theory", C_cov=C, seed=3, K_of_eps={8.0: [256]})
    assert gfa.settled_runs([256, 512, 1024], Rn)["share"] >= 0.75


@pytest.mark.parametrize("workers", [1, pytest.param(2, marks=pytest.mark.slow)])   # 2: a loky pool (~3 s)
def test_side_work_runs_in_the_regret_pool_and_changes_nothing(workers):
    """regret_curves(side=...): the audit's serial checks run as the pool's first chunks; each result reaches
    on_side, and the regret runs are the same as without side work (and as the serial path, exe=None)."""
    from dpcheck.algorithms.gfa import per_start_coverability
    inst = appendix_d("easy")
    C = per_start_coverability(inst.mdp, inst.fclass).value
    kw = dict(K_grid=[64, 128], eps_list=[8.0], runs=2, runs_np=2, delta=1e-5, tuning="theory", C_cov=C, seed=5)
    got = {}
    side = [(np.add, (1, 2), {}), (np.linspace, (0.0, 1.0), {"num": 3})]
    priv, Rn = gfa.regret_curves(2, inst, exe=ExecutionOptions(seed=0, workers=workers), side=side,
                                 on_side=got.__setitem__, **kw)
    assert got[0] == 3 and got[1].tolist() == [0.0, 0.5, 1.0]
    priv0, Rn0 = gfa.regret_curves(2, inst, **kw)
    assert np.array_equal(Rn, Rn0) and np.array_equal(priv[8.0], priv0[8.0])
    with pytest.raises(ValueError, match="on_side"):
        gfa.regret_curves(2, inst, side=side, **kw)


class UniformSelection(PrivateOutcomeRL):
    """Planted defect for the rate checks: the learner ignores the scores (selects uniformly), so it never
    learns and its regret (and privacy cost) grows linearly in K."""

    def _select(self, scores, beta, rng):
        return rng.integers(0, scores.shape[-1], size=scores.shape[0])


class UniformSelectionNonPrivate(UniformSelection):
    def __init__(self, function_class, *, B=1, eta=1.0, tie_breaking="random"):
        super().__init__(function_class, epsilon=float("inf"), B=B, eta=eta, tie_breaking=tie_breaking)


def _outcome_quick_regret(seed, agent_class=None, config="quick"):
    from dpcheck.algorithms.gfa import per_start_coverability
    from dpcheck.audits.private_gfa import PrivateGFAOutcomeAudit
    inst = appendix_d("easy")
    C = per_start_coverability(inst.mdp, inst.fclass).value
    from dpcheck.stats import pass_level
    z = PrivateGFAOutcomeAudit.sizes[config]
    share = 0.05 / sum(r.tests for r in PrivateGFAOutcomeAudit.claims)   # the audit's family-wise share
    with pass_level(0.05):        # as in the audit: FAIL at the share, PASS at alpha = 0.05
        checks = gfa.regret_checks(2, inst, K_grid=z["K_grid"], eps_K=z["eps_K"], eps_grid=z["eps_grid"],
                                   K_eps=z["K_eps"], runs=z["runs"], runs_np=z["runs_np"], delta=1e-5,
                                   tuning="theory", C_cov=C, seed=seed, alpha=share, agent_class=agent_class,
                                   runs_K=z.get("runs_K"), np_from=z.get("np_from"))
    return {c.id: c for c in checks}


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_outcome_quick_rate_checks_are_decisive_on_the_reference(seed):
    """private_gfa_outcome --quick's rate checks on the reference learners at fixed seeds, at the audit's levels
    (FAIL at the family-wise share of alpha = 0.05, PASS at 0.05): not INCONCLUSIVE (issue 17 item 4)."""
    checks = _outcome_quick_regret(seed)
    for cid in ("regret.exponent.nonprivate", "regret.privacy_cost.eps"):
        assert checks[cid].verdict == "pass", (cid, checks[cid].reason)
    # the private K-exponent measures ~K^0.55 here against 0.7. Seed 1 (exponent 0.61) was INCONCLUSIVE with
    # two-sided intervals (95% upper end 0.711); the one-sided 95% upper bound of the one-sided claim is 0.693
    c = checks["regret.exponent.private"]
    assert c.verdict == "pass", c.reason
    assert c.details["sides"].startswith("one-sided")


@pytest.mark.slow
def test_outcome_default_private_exponent_is_measured_where_the_cost_grows():
    """private_gfa_outcome's default K sweep ends where the privacy cost stops growing (K = 2^12 at eps 8): its
    K-exponent is a plain PASS in the growing regime (interval's lower end >= 0.25), not an uninformative pass
    of a flat window nor an INCONCLUSIVE one. The earlier window, K = 2^10..2^14 with 24 runs, measured the
    flat part: INCONCLUSIVE on 8 of 60 default audits and an uninformative PASS on most of the rest."""
    c = _outcome_quick_regret(0, config="default")["regret.exponent.private"]
    assert c.verdict == "pass", c.reason
    assert "qualifier" not in c.details, c.reason
    assert "growing regime" in c.reason
    assert c.measured["seeds"] == 96


def test_one_sided_claims_use_one_sided_bounds():
    """gfa._upper_bound_fit: the FAIL interval's lower end is the one-sided (1 - alpha) bound and the PASS
    interval's upper end the one-sided (1 - alpha_pass) bound: half-widths t_{1-a} / t_{1-a/2} of the two-sided
    ones (studentised interval, n - 1 df)."""
    from scipy.stats import t as student

    from dpcheck.regret import fit_increment_exponent
    from dpcheck.stats import pass_level
    rng = np.random.default_rng(3)
    K = np.array([512, 1024, 2048, 4096])
    R = np.cumsum(np.sqrt(K)[None, :] * rng.lognormal(0, 0.4, (24, 4)), axis=1)
    share, n = 0.05 / 12, 24
    with pass_level(0.05):
        two = fit_increment_exponent(K, R, alpha=share, seed=0, interval="t")
        one = gfa._upper_bound_fit(fit_increment_exponent, K, R, alpha=share, seed=0, interval="t")
    assert one.exponent == two.exponent
    ratio_fail = (one.exponent - one.ci[0]) / (two.exponent - two.ci[0])
    ratio_pass = (one.ci_pass[1] - one.exponent) / (two.ci_pass[1] - two.exponent)
    assert ratio_fail == pytest.approx(student.ppf(1 - share, n - 1) / student.ppf(1 - share / 2, n - 1), rel=1e-9)
    assert ratio_pass == pytest.approx(student.ppf(0.95, n - 1) / student.ppf(0.975, n - 1), rel=1e-9)
    assert one.pass_confidence == pytest.approx(0.90) and one.confidence == pytest.approx(1 - 2 * share)
    # the check states its FAIL error, alpha (not the interval's 2 alpha), for the family-wise union bound
    from dpcheck.regret import slope_check
    c = gfa._one_sided_confidence(slope_check(one, bound=0.7, id="regret.exponent.private", statement="", source="",
                                              xname="K", details={}), share)
    assert c.measured["confidence"] == pytest.approx(1 - share)
    assert c.measured["interval_confidence"] == pytest.approx(1 - 2 * share)


@pytest.mark.slow
@pytest.mark.parametrize("defect,config", [("private", "quick"), ("nonprivate", "quick"), ("private", "default")])
def test_outcome_quick_rate_checks_do_not_pass_a_learner_that_never_learns(monkeypatch, defect, config):
    """The same sizes (and the default's) with a learner that selects uniformly (the private one, or the
    non-private batched one of Remark 3.7): its K-exponent is not passed (the bound is vacuous at these K, so a
    FAIL is softened to INCONCLUSIVE)."""
    import dpcheck.algorithms.gfa
    if defect == "nonprivate":
        monkeypatch.setattr(dpcheck.algorithms.gfa, "NonPrivateOutcomeRL", UniformSelectionNonPrivate)
    checks = _outcome_quick_regret(0, agent_class=UniformSelection if defect == "private" else None, config=config)
    c = checks[f"regret.exponent.{defect}"]
    assert c.verdict != "pass", c.reason
    assert c.measured.get("ci") is None or c.measured["ci"][0] > 0.7, c.reason
