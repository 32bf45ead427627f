"""The dp_apvi audit (issue #11 items 2, 4, 5): claim table, the --quick run through the CLI, the planted
defects caught by the check that should catch them, and bad input (exit 2, one line, no traceback)."""
from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from dpcheck.algorithms.offline import DPAPVI, tab_full, tab_partial
from dpcheck.algorithms.offline.apvi import penalty as apvi_penalty
from dpcheck.algorithms.privatizers.offline import OfflineGaussianPrivatizer
from dpcheck.audits.lib import offline as lo
from dpcheck.audits.lib.offline import spec as lo_spec, whitebox as lo_whitebox
from dpcheck.audits.lib.offline import APVISpec
from dpcheck.blackbox import audit as bb_audit
from dpcheck.cli import main


# ---------------------------------------------------------------- planted defects (issue #11 item 4)
class ReusedNoisePrivatizer(OfflineGaussianPrivatizer):
    """Defect: one noise draw per (s, a[, s']) reused at every step h (fresh per h required)."""

    def _noise(self, rng, shape, H):
        z = rng.normal(0.0, self.sigma(H), size=(shape[0], 1) + tuple(shape[2:]))
        return np.broadcast_to(z, shape)


class ReusedNoiseAPVI(DPAPVI):
    def __init__(self, rho=None, **kw):
        super().__init__(rho=rho, **kw)
        self.privatizer = ReusedNoisePrivatizer(self.rho, beta=self.delta)


class NoLPAPVI(DPAPVI):
    """Defect: the consistency LP (eqs. 3-4) skipped: ntil(s,a,s') = n'(s,a,s'), ntil(s,a) = their sum."""

    def __init__(self, rho=None, **kw):
        kw["consistency"] = "naive"
        super().__init__(rho=rho, **kw)


class NoPrivacyTermAPVI(DPAPVI):
    """Defect: Gamma without its privacy term C2 S H E iota / ntil (only the Bernstein part)."""

    def _penalty(self, kernel, visits, V_next, *, E, iota, H):
        c = dataclasses.replace(self.constants, C2=0.0, second_order_floor=0.0)
        return apvi_penalty(kernel, visits, V_next, E=E, iota=iota, H=H, constants=c)


class RhoAsEpsilonPrivatizer(OfflineGaussianPrivatizer):
    """Defect: sigma = Delta / rho (rho used where a Laplace-style epsilon belongs); declared consistently."""

    def sigma(self, H):
        return math.sqrt(2.0 * H) / self.rho


class RhoAsEpsilonApproxPrivatizer(OfflineGaussianPrivatizer):
    """Defect: the (eps, delta_dp) Gaussian calibration with rho in place of eps:
    sigma = sqrt(2H) sqrt(2 log(1.25/1e-5)) / rho."""

    def sigma(self, H):
        return math.sqrt(2.0 * H) * math.sqrt(2 * math.log(1.25 / 1e-5)) / self.rho


def _with_privatizer(cls_):
    class Algo(DPAPVI):
        def __init__(self, rho=None, **kw):
            super().__init__(rho=rho, **kw)
            self.privatizer = cls_(self.rho, beta=self.delta)
    Algo.__name__ = f"DPAPVI[{cls_.__name__}]"
    return Algo


def test_reused_noise_is_caught_by_the_released_counts_black_box():
    spec = APVISpec(algorithm=ReusedNoiseAPVI)
    tgt, det = lo.counts_target(spec)
    check = bb_audit(tgt, samples=20_000, alpha=0.05, seed=0).to_check(id="privacy.blackbox.counts")
    assert check.verdict == "fail", check.reason
    # the honest algorithm on the same target passes
    ok = bb_audit(lo.counts_target(APVISpec())[0], samples=20_000, alpha=0.05, seed=0).to_check(id="x")
    assert ok.verdict == "pass", ok.reason


def test_reused_noise_is_caught_by_the_independence_check():
    checks = {c.id: c for c in lo.noise_calibration_checks(APVISpec(algorithm=ReusedNoiseAPVI), runs=500,
                                                             rng=np.random.default_rng(0), alpha=0.05)}
    assert checks["whitebox.noise_independence"].verdict == "fail"
    assert checks["whitebox.noise_independence"].measured["max_abs_correlation"] > 0.9


@pytest.mark.slow
def test_correct_noise_passes_scale_and_independence_at_the_audits_runs():
    honest = {c.id: c for c in lo.noise_calibration_checks(APVISpec(), runs=50_000, rng=np.random.default_rng(0),
                                                            alpha=0.05)}
    assert honest["whitebox.noise_independence"].verdict == "pass"
    assert honest["whitebox.noise_scale"].verdict == "pass"


class QuietGaussianPrivatizer(OfflineGaussianPrivatizer):
    """Defect: draws 0.96 x the declared std (variance 0.92 x, so rho 1.085 x the claim); the DpEvent and the
    PLD read the declared sigma and cannot see it."""

    def _noise(self, rng, shape, H):
        return rng.normal(0.0, 0.96 * self.sigma(H), size=shape)


class SharedStepNoisePrivatizer(OfflineGaussianPrivatizer):
    """Defect: one draw per (run, step) added to every count of that step (pairs and triples alike)."""

    def noisy_counts(self, pair, triple, rng):
        R, H = pair.shape[:2]
        g = rng.normal(0.0, self.sigma(H), size=(R, H))
        return pair + g[:, :, None, None], triple + g[:, :, None, None, None]


def test_slightly_too_little_noise_fails_the_noise_scale_check():
    """A two-sided +-10% band passed this privatizer (worst variance ratio 0.917): less noise than the claim
    needs must FAIL once the interval lies below 1, and a PASS certifies the variance to 2%."""
    spec = APVISpec(algorithm=_with_privatizer(QuietGaussianPrivatizer))
    checks = {c.id: c for c in lo.noise_calibration_checks(spec, runs=20_000, rng=np.random.default_rng(0),
                                                            alpha=0.05 / 20)}
    assert checks["whitebox.noise_scale"].verdict == "fail"
    assert "less noise than the claim needs" in checks["whitebox.noise_scale"].reason


def test_noise_shared_by_the_counts_of_a_step_fails_the_independence_check():
    """Fresh noise per count, not only per step: one draw shared by every count of a step was passed when only
    the same count at two steps was compared."""
    spec = APVISpec(algorithm=_with_privatizer(SharedStepNoisePrivatizer))
    checks = {c.id: c for c in lo.noise_calibration_checks(spec, runs=2000, rng=np.random.default_rng(0),
                                                            alpha=0.05)}
    indep = checks["whitebox.noise_independence"]
    assert indep.verdict == "fail" and indep.measured["max_abs_correlation"] > 0.9, indep.reason


def _count_checks(spec, seed=0, runs=300):
    inst = tab_partial(np.random.default_rng(seed), S=4, A=3, H=3)
    counts = inst.sample_counts(1000, np.random.default_rng(seed + 1), runs)
    return {c.id: c for c in lo.count_checks(spec, counts, rng=np.random.default_rng(seed + 2), alpha=0.05)}


def test_skipped_consistency_lp_is_caught_by_the_consistency_check():
    bad = _count_checks(APVISpec(algorithm=NoLPAPVI))
    assert bad["assumption.consistency"].verdict == "fail"
    assert bad["assumption.consistency"].details["max_band_deviation"] > bad["assumption.consistency"].details["half_width"]
    # the noise itself is unchanged: the noise bound still holds, P~ is still a distribution
    assert bad["assumption.noise_bound"].verdict == "pass"
    good = _count_checks(APVISpec())
    assert {c.verdict for c in good.values()} == {"pass"}


def _pessimism(spec, seed=0):
    # the audit's noise-dominated points: rho = 1e-4, n = 3e4 (Gaussian); eps = 0.05, n = 1e5 (Laplace)
    inst = tab_full(np.random.default_rng(seed), S=2, A=2, H=3)
    budget, n = (1e-4, 30_000) if spec.gaussian else (0.05, 100_000)
    return {c.id: c for c in lo.pessimism_checks(spec, inst, n=n, runs=300, rng=np.random.default_rng(seed + 1),
                                                 alpha=0.05, budget=budget, suffix=".noise_dominated")}


@pytest.mark.parametrize("mechanism", ["gaussian", "laplace"])
def test_penalty_without_privacy_term_is_caught_by_pessimism_where_noise_dominates(mechanism):
    bad = _pessimism(APVISpec(mechanism=mechanism, algorithm=NoPrivacyTermAPVI))
    assert bad["assumption.pessimism.noise_dominated"].verdict == "fail", bad["assumption.pessimism.noise_dominated"].reason
    assert bad["assumption.penalty_validity.noise_dominated"].verdict == "fail"
    good = _pessimism(APVISpec(mechanism=mechanism))
    assert good["assumption.pessimism.noise_dominated"].verdict == "pass"
    # the honest pass there holds because Gamma >= H: the report says so
    assert good["assumption.pessimism.noise_dominated"].details["qualifier"] == "vacuous"


def test_penalty_without_privacy_term_changes_the_privacy_cost_rate():
    inst = tab_full(np.random.default_rng(0), S=2, A=2, H=3)
    bad = {c.id: c for c in lo.rate_checks(APVISpec(algorithm=NoPrivacyTermAPVI), inst, n_grid=(1e5, 1e6, 1e7),
                                           budget_factors=(0.1, 1, 10), runs=20, seed=0, alpha=0.05)}
    assert bad["regret.privacy_cost.n"].verdict == "fail", bad["regret.privacy_cost.n"].reason


@pytest.mark.parametrize("priv", [RhoAsEpsilonPrivatizer, RhoAsEpsilonApproxPrivatizer])
def test_gaussian_scale_from_rho_as_epsilon_is_caught_by_the_noise_scale_check(priv):
    # at the audit's default rho = 1 the Delta/rho scale coincides with the right one: the budget sweep sees it
    spec = APVISpec(algorithm=_with_privatizer(priv), budget=1.0)
    checks = {c.id: c for c in lo.noise_calibration_checks(spec, runs=2000, rng=np.random.default_rng(0), alpha=0.05)}
    assert checks["whitebox.noise_scale"].verdict == "fail", checks["whitebox.noise_scale"].reason


@pytest.mark.slow
def test_rho_as_epsilon_with_too_little_noise_fails_the_declared_event_too():
    spec = APVISpec(algorithm=_with_privatizer(RhoAsEpsilonPrivatizer), budget=2.0)
    assert lo.dp_event_check(spec, 3, 2, 2).verdict == "fail"
    assert lo.dp_event_check(APVISpec(budget=2.0), 3, 2, 2).verdict == "pass"


# ---------------------------------------------------------------- known answers
def test_step_swap_pair_attains_the_declared_sensitivity_and_cancels_across_steps():
    for H in (2, 3, 4):
        x, y = lo.step_swap_pair(H, 2, 2)
        cx = lo_spec._counts([x.states], [x.actions], 2, 2)
        cy = lo_spec._counts([y.states], [y.actions], 2, 2)
        d = lo_whitebox._family_distance(cx, cy, gaussian=True)
        assert d == pytest.approx([math.sqrt(2 * H)] * 2)
        assert lo_whitebox._family_distance(cx, cy, gaussian=False) == [pytest.approx(4 * H)]
        if H % 2 == 0:      # even H: the changes sum to 0 over steps (noise shared across h cancels)
            assert np.allclose((cx.visits - cy.visits).sum(axis=1), 0)
            assert np.allclose((cx.transitions - cy.transitions).sum(axis=1), 0)


def test_sensitivity_search_and_conversion_known_answers():
    c = lo.sensitivity_search_check(APVISpec(), examples=40)
    assert c.verdict == "pass" and c.measured["step_swap_ratio"] == pytest.approx(1.0)
    assert c.measured["max_ratio_to_declared"] <= 1 + 1e-9
    rho = OfflineGaussianPrivatizer.from_approx_dp(1.0, 1e-5).rho
    conv = lo.zcdp_conversion_check(APVISpec(budget=rho), 3, approx=(1.0, 1e-5))
    assert conv.verdict == "pass" and conv.measured["round_trip"]["epsilon_back"] == pytest.approx(1.0)
    # a wrong round trip (rho for another epsilon) fails
    assert lo.zcdp_conversion_check(APVISpec(budget=rho * 1.5), 3, approx=(1.0, 1e-5)).verdict == "fail"


def test_policy_target_datasets_flip_the_greedy_choice_without_noise():
    D, Dp = lo.policy_datasets(2, 2, 2, copies=3)
    r = lo.policy_reward(2, 2, 2)
    algo = DPAPVI(rho=math.inf, C1=0.0, C2=0.0)
    pD = algo.run(lo_spec._counts(*D, 2, 2), r, np.random.default_rng(0)).policy[0]
    pDp = algo.run(lo_spec._counts(*Dp, 2, 2), r, np.random.default_rng(0)).policy[0]
    assert pD[0, 0] == 0 and pDp[0, 0] == 1


def test_coverage_of_user_counts_reports_the_sample_size_condition():
    inst = tab_full(np.random.default_rng(0), S=2, A=2, H=3)
    small = inst.sample_counts(50, np.random.default_rng(1), 1)
    big = inst.sample_counts(10**6, np.random.default_rng(1), 1)
    assert lo.coverage_check(counts=small, spec=APVISpec()).verdict == "inconclusive"
    assert lo.coverage_check(counts=big, spec=APVISpec()).verdict == "pass"
    assert lo.coverage_check(inst).measured["dbar_m"] == pytest.approx(inst.coverage().dbar_m)


# ---------------------------------------------------------------- claim table and the CLI
def test_claim_table_and_options_are_listed(capsys):
    from dpcheck.audits.dp_apvi import DPAPVIAudit
    from dpcheck.audits.lib import offline, privatizers
    for r in DPAPVIAudit.claims:
        mod, fn = r.method.split(".")
        assert callable(getattr({"offline": offline, "privatizers": privatizers}[mod], fn)), r
    for i in ("privacy.blackbox.counts", "assumption.pessimism.noise_dominated", "assumption.noise_bound.data",
              "assumption.coverage.data", "regret.privacy_cost.budget"):
        assert DPAPVIAudit.row(i) is not None, i
    assert main(["list", "--claims", "dp_apvi"]) == 0
    out = capsys.readouterr().out
    assert "whitebox.zcdp_conversion" in out and "Lemma E.15" in out
    assert main(["list", "--options", "dp_apvi"]) == 0
    out = capsys.readouterr().out
    assert "data=" in out and "rho=" in out and "mode=" in out
    assert "--privatizer (gaussian|laplace|none|file.py:CLASS)" in out   # an OfflineCountPrivatizer plugs in
    assert main(["list"]) == 0
    assert "dp_apvi" in capsys.readouterr().out


def _dataset(tmp_path, name="d.npz", **over):
    rng = np.random.default_rng(0)
    n, H, S, A = 40, 3, 2, 2
    arrays = dict(states=rng.integers(0, S, (n, H + 1)), actions=rng.integers(0, A, (n, H)),
                  rewards=rng.random((n, H)), S=S, A=A)
    arrays.update(over)
    path = tmp_path / name
    np.savez(path, **{k: v for k, v in arrays.items() if v is not None})
    return str(path)


@pytest.mark.slow
def test_quick_end_to_end_through_the_cli_with_a_user_dataset(tmp_path):
    data = _dataset(tmp_path)
    code = main(["audit", "dp_apvi", "--quick", "--set", f"data={data}", "--out", str(tmp_path), "--quiet"])
    rep = json.loads((tmp_path / "dp_apvi.json").read_text())
    by_id = {c["id"]: c for c in rep["checks"]}
    assert code == 0, [(i, c["verdict"], c["reason"]) for i, c in by_id.items() if c["verdict"] != "pass"]
    assert {"privacy.blackbox.counts", "privacy.blackbox.data", "privacy.blackbox.policy", "privacy.dataflow",
            "whitebox.dp_event", "whitebox.zcdp_conversion", "whitebox.sensitivity", "whitebox.sensitivity.search",
            "whitebox.noise_scale", "whitebox.noise_independence", "assumption.noise_bound",
            "assumption.consistency", "assumption.count_accuracy", "assumption.valid_transition",
            "assumption.noise_bound.data", "assumption.consistency.data", "assumption.coverage",
            "assumption.coverage.data", "assumption.penalty_validity", "assumption.pessimism",
            "assumption.pessimism.noise_dominated", "regret.bound.n", "regret.privacy_cost.n",
            "regret.privacy_cost.budget", "regret.suboptimality_bound", "regret.suboptimality.n",
            "regret.suboptimality.budget"} <= set(by_id)
    # 40 trajectories are far too few for Theorem 3.4: said, not hidden
    assert by_id["assumption.coverage.data"]["verdict"] == "inconclusive"
    assert rep["config"]["rho"] == 1.0


@pytest.mark.slow
def test_epsilon_delta_choose_rho_and_laplace_runs(tmp_path):
    code = main(["audit", "dp_apvi", "--quick", "--epsilon", "2", "--delta", "1e-6", "--out", str(tmp_path / "g"),
                 "--quiet", "--samples", "20000"])
    rep = json.loads((tmp_path / "g" / "dp_apvi.json").read_text())
    L = math.log(1e6)
    assert rep["config"]["rho"] == pytest.approx((math.sqrt(L + 2) - math.sqrt(L)) ** 2)
    by_id = {c["id"]: c for c in rep["checks"]}
    assert by_id["whitebox.zcdp_conversion"]["verdict"] == "pass"
    assert code == 0 and by_id["privacy.blackbox.counts"]["verdict"] == "pass"
    code = main(["audit", "dp_apvi", "--quick", "--privatizer", "laplace", "--epsilon", "2", "--out",
                 str(tmp_path / "l"), "--quiet", "--samples", "20000"])
    rep = json.loads((tmp_path / "l" / "dp_apvi.json").read_text())
    by_id = {c["id"]: c for c in rep["checks"]}
    assert code == 0 and rep["config"]["epsilon"] == 2.0 and rep["config"]["mechanism"] == "laplace"
    assert "whitebox.zcdp_conversion" not in by_id
    assert by_id["regret.privacy_cost.budget"]["verdict"] == "pass"      # slope -1 in eps (E_eps ~ 1/eps)


def _bad(tmp_path, capsys, args):
    code = main(["audit", "dp_apvi", "--quick", "--out", str(tmp_path / "r"), "--quiet", *args])
    err = capsys.readouterr().err.strip()
    return code, err


@pytest.mark.parametrize("over,needle", [
    (dict(states=np.full((5, 4), 7)), "states out of range"),
    (dict(actions=np.full((5, 3), -1), states=np.zeros((5, 4), int), rewards=None), "actions out of range"),
    (dict(states=np.array([[0, 1, 0, 1], [0, 1, 0]], dtype=object)), "ragged"),
    (dict(rewards=np.full((40, 3), np.nan)), "NaN"),
    (dict(rewards=np.full((40, 3), 1.5)), "[0, 1]"),
    (dict(S=None), "missing array 'S'"),
])
def test_bad_datasets_exit_2_with_one_line(tmp_path, capsys, over, needle):
    if "states" in over and over["states"].dtype == object:
        path = tmp_path / "ragged.npz"
        # numpy can only store ragged episodes as an object array (pickled)
        np.savez(path, states=over["states"], actions=np.zeros((2, 3), int), S=2, A=2)
        path = str(path)
    else:
        path = _dataset(tmp_path, **over)
    code, err = _bad(tmp_path, capsys, ["--set", f"data={path}"])
    assert code == 2
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert needle in err, err


@pytest.mark.parametrize("args,needle", [
    (["--set", "rho=0"], "rho"),
    (["--set", "rho=-1"], "rho"),
    (["--set", "rho=nan"], "rho"),
    (["--epsilon", "1", "--set", "rho=1"], "not both"),
    (["--privatizer", "laplace", "--set", "rho=1"], "laplace"),
    (["--privatizer", "tree"], "gaussian"),
    (["--set", "data=/nonexistent/x.npz"], "not found"),
])
def test_bad_options_exit_2_with_one_line(tmp_path, capsys, args, needle):
    code, err = _bad(tmp_path, capsys, args)
    assert code == 2
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert needle in err, err


# ---------------------------------------------------------------- the whole audit catches each defect
def _reuse_noise(monkeypatch):
    monkeypatch.setattr(OfflineGaussianPrivatizer, "_noise", ReusedNoisePrivatizer._noise)


def _skip_lp(monkeypatch):
    original = DPAPVI.__init__

    def init(self, *a, **kw):
        kw["consistency"] = "naive"
        original(self, *a, **kw)
    monkeypatch.setattr(DPAPVI, "__init__", init)


def _drop_privacy_term(monkeypatch):
    monkeypatch.setattr(DPAPVI, "_penalty", NoPrivacyTermAPVI._penalty)


def _rho_as_epsilon(monkeypatch):
    monkeypatch.setattr(OfflineGaussianPrivatizer, "sigma", RhoAsEpsilonPrivatizer.sigma)


@pytest.mark.slow
@pytest.mark.parametrize("plant,caught_by", [
    (_reuse_noise, {"privacy.blackbox.counts", "whitebox.noise_independence"}),
    (_skip_lp, {"assumption.consistency"}),
    (_drop_privacy_term, {"assumption.pessimism.noise_dominated", "assumption.penalty_validity.noise_dominated"}),
    (_rho_as_epsilon, {"whitebox.noise_scale"}),
])
def test_the_registered_audit_fails_on_each_planted_defect(tmp_path, monkeypatch, plant, caught_by):
    plant(monkeypatch)
    code = main(["audit", "dp_apvi", "--quick", "--samples", "20000", "--out", str(tmp_path), "--quiet"])
    rep = json.loads((tmp_path / "dp_apvi.json").read_text())
    failed = {c["id"] for c in rep["checks"] if c["verdict"] == "fail"}
    assert code == 1 and caught_by <= failed, failed


def test_offline_dataset_load_round_trip_and_errors(tmp_path):
    from dpcheck.algorithms.offline import OfflineDataset
    from dpcheck.errors import InputError
    path = _dataset(tmp_path)
    d = OfflineDataset.load(path)
    z = np.load(path)
    assert d.runs == 1 and d.n == 40 and d.H == 3 and (d.S, d.A) == (2, 2)
    assert np.array_equal(d.states[0], z["states"]) and np.allclose(d.rewards[0], z["rewards"])
    np.save(tmp_path / "x.npy", np.zeros(3))
    with pytest.raises(InputError, match="not an .npz"):
        OfflineDataset.load(tmp_path / "x.npy")
    with pytest.raises(InputError, match="one positive integer"):
        OfflineDataset.load(_dataset(tmp_path, "s.npz", S=np.array([2, 3])))


@pytest.mark.slow
def test_noise_off_is_a_privacy_violation_through_the_cli(tmp_path):
    code = main(["audit", "dp_apvi", "--quick", "--privatizer", "none", "--samples", "20000", "--out", str(tmp_path),
                 "--quiet"])
    rep = json.loads((tmp_path / "dp_apvi.json").read_text())
    by_id = {c["id"]: c for c in rep["checks"]}
    assert code == 1 and rep["complete"]
    for i in ("privacy.blackbox.counts", "whitebox.dp_event", "whitebox.zcdp_conversion", "whitebox.noise_scale"):
        assert by_id[i]["verdict"] == "fail", i


class RawVisitsAPVI(DPAPVI):
    """Defect: the fallback and the penalties read the raw visit counts n(s,a) instead of ntil(s,a)."""

    def private_counts(self, counts, rng):
        from dpcheck.algorithms.privatizers.offline import OfflineCounts
        pc = super().private_counts(counts, rng)
        scale = counts.visits / np.maximum(pc.visits, 1e-12)
        return OfflineCounts(visits=counts.visits, transitions=pc.transitions * scale[..., None],
                             noisy_visits=pc.noisy_visits, noisy_transitions=pc.noisy_transitions, width=pc.width)


def test_dataflow_check_sees_raw_data_read_after_the_release():
    inst = tab_full(np.random.default_rng(0), S=2, A=2, H=3)
    assert lo.dataflow_check(APVISpec(), inst, n=10**4, runs=10, seed=0).verdict == "pass"
    bad = lo.dataflow_check(APVISpec(algorithm=RawVisitsAPVI), inst, n=10**4, runs=10, seed=0)
    assert bad.verdict == "fail", bad.reason
    assert lo.dataflow_check(APVISpec(noise_off=True), inst, n=10**4, runs=10, seed=0).verdict == "fail"


# ---------------------------------------------------------------- regret.suboptimality.budget: the gap's privacy part
class BudgetBlindAPVI(DPAPVI):
    """Defect: the noise and the width E are those of rho = 0.3 whatever budget the algorithm is given, so its
    gap does not depend on the budget at all."""

    def __init__(self, rho=None, **kw):
        super().__init__(rho=rho, **kw)
        if self.privatizer is not None:
            self.privatizer = OfflineGaussianPrivatizer(0.3, beta=self.delta)


def _budget_check(**spec_kw):
    wide = tab_full(np.random.default_rng(7), S=5, A=5, H=3)
    spec = APVISpec(mechanism="gaussian", budget=1.0, delta=0.1, mode="practical", **spec_kw)
    E = dataclasses.replace(spec, noise_off=False, algorithm=None).make().width(3, 5, 5)
    return lo.suboptimality_budget_check(spec, wide, n=int(round(40 * E)), budget_factors=(0.1, 0.3, 1, 3, 10),
                                         runs=200, seed=3, alpha=0.05)


def test_budget_check_passes_the_papers_gaussian_on_its_privacy_part():
    c = _budget_check()
    assert c.verdict == "pass" and c.measured["slope"] < -0.5
    assert c.details["width_exponent"] == -0.5 and min(c.details["privacy_part_mean"]) > 0


@pytest.mark.parametrize("plant", ["noise_off", "budget_blind"])
def test_budget_check_does_not_pass_a_gap_whose_privacy_part_does_not_fall(plant):
    # the old rule ("the gap does not grow": slope <= 0.1) passed both: with the noise off the gap is flat, and a
    # privatizer deaf to the budget leaves it flat too
    c = _budget_check(noise_off=True) if plant == "noise_off" else _budget_check(algorithm=BudgetBlindAPVI)
    assert c.verdict != "pass"
    if plant == "noise_off":
        assert c.verdict == "inconclusive" and c.details["no_privacy_part_budgets"] == c.details["budgets"]
    else:
        assert abs(c.measured["slope"]) < 0.1
