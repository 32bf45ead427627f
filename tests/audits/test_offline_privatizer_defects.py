"""DP-APVI's count privatizers (Qiao & Wang, Offline RL with DP, eq. 2, eqs. 3-5, Lemma C.1, Lemma E.15): planted
defects that passed the offline privatizer audits or dp_apvi, each with the check that now catches it and the
correct privatizer passing that check.

* empty cells kept empty after the noise (``privatize`` zeroes n' where n = 0)  -> whitebox.noise_scale
  (zero counts through the release; the old probe called the ``noisy_counts`` hook and bypassed ``privatize``)
* the LP's band centred on the raw visits n instead of n'                       -> assumption.sum_consistency
  (the privatizer audits; dp_apvi's assumption.consistency caught it)
* ``--epsilon`` read as rho by ``from_approx_dp``                               -> whitebox.zcdp_conversion
  (offline_gaussian_privatizer)
* a Gaussian DpEvent of multiplier sigma / sqrt(H) (rho under-declared 2x)       -> whitebox.dp_event (dp_apvi)
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from dpcheck.algorithms.offline import DPAPVI
from dpcheck.algorithms.privatizers.offline import (OfflineCounts, OfflineGaussianPrivatizer,
                                                    OfflineLaplacePrivatizer)
from dpcheck.algorithms.privatizers.projection import post_process_offline
from dpcheck.audits.lib import offline as lo
from dpcheck.audits.lib import privatizers as pa
from dpcheck.audits.lib.offline import APVISpec
from dpcheck.checks import FAIL, PASS



# ------------------------------------------------------------------ planted defects
def _empty_cells_stay_empty(base):
    class EmptyCellsStayEmpty(base):
        """Defect: after the noise hook and the clip, n' is set back to 0 wherever n = 0, then the LP runs on
        that: 20 trajectories 0 -> 0 and one replaced by 0 -> 1 give P[n'(0 -> 1) > 0] = 0 vs 0.76 (rho = 1)."""

        def privatize(self, pair, triple, rng):
            out = super().privatize(pair, triple, rng)
            n_p = np.where(np.asarray(pair) > 0, out.noisy_visits, 0.0)
            n_t = np.where(np.asarray(triple) > 0, out.noisy_transitions, 0.0)
            pp = post_process_offline(n_t, n_p, out.width)
            return OfflineCounts(visits=pp.visits, transitions=pp.transitions, noisy_visits=n_p,
                                 noisy_transitions=n_t, width=out.width)
    EmptyCellsStayEmpty.__name__ = f"EmptyCellsStayEmpty[{base.__name__}]"
    return EmptyCellsStayEmpty


class LPOnRawVisits(OfflineGaussianPrivatizer):
    """Defect: the consistency LP's band centred on the raw visits n(s,a) instead of n'(s,a): ntil reads the data
    outside the release (Section 3.3)."""

    def privatize(self, pair, triple, rng):
        out = super().privatize(pair, triple, rng)
        pp = post_process_offline(out.noisy_transitions, np.asarray(pair, float), out.width)
        return OfflineCounts(visits=pp.visits, transitions=pp.transitions, noisy_visits=out.noisy_visits,
                             noisy_transitions=out.noisy_transitions, width=out.width)


class UnderDeclaredEvent(OfflineGaussianPrivatizer):
    """Defect: each family declared as GaussianDpEvent(sigma / sqrt(H)) (l2 sensitivity sqrt(H), not sqrt(2H)):
    the event says rho / 2 for the rho-zCDP noise drawn, so its PLD sits well within the claim."""

    def dp_event(self, H):
        import dp_accounting
        fam = dp_accounting.GaussianDpEvent(noise_multiplier=self.sigma(H) / math.sqrt(H))
        return dp_accounting.ComposedDpEvent([fam, fam])


def _with_privatizer(cls_):
    class Algo(DPAPVI):
        def __init__(self, rho=None, epsilon=None, **kw):
            super().__init__(rho=rho, epsilon=epsilon, **kw)
            self.privatizer = cls_(self.rho if self.rho is not None else self.epsilon, beta=self.delta)
    Algo.__name__ = f"DPAPVI[{cls_.__name__}]"
    return Algo


def _run_audit(monkeypatch, name, privatizer=None, *, skip=("check_blackbox",), **opts):
    """The registered audit (--quick), the checks named in ``skip`` (methods) left out; {check id: Check}."""
    from dpcheck.audits import privatizer_audits as pva
    from dpcheck.context import AuditContext, AuditOptions
    from dpcheck.registry import get
    cls = {"offline_gaussian_privatizer": pva.OfflineGaussianPrivatizerAudit,
           "offline_laplace_privatizer": pva.OfflineLaplacePrivatizerAudit}[name]
    for method in skip:
        monkeypatch.setattr(cls, method, lambda self, priv: None)
    if privatizer is not None:
        monkeypatch.setattr(cls, "privatizer", lambda self: privatizer)
    ctx = AuditContext(name, AuditOptions(quick=True, seed=0, **opts))
    get(name).run(ctx)
    return {c.id: c for c in ctx.checks}


# ------------------------------------------------------------------ empty cells kept empty
@pytest.mark.parametrize("mechanism,base", [("gaussian", OfflineGaussianPrivatizer),
                                            ("laplace", OfflineLaplacePrivatizer)])
def test_zero_counts_left_unnoised_by_privatize_fail_the_noise_scale_check(mechanism, base):
    def scale(cls_, runs):
        spec = APVISpec(mechanism=mechanism, algorithm=None if cls_ is None else _with_privatizer(cls_))
        out = {c.id: c for c in lo.noise_calibration_checks(spec, runs=runs, rng=np.random.default_rng(1),
                                                            alpha=0.05)}
        return out["whitebox.noise_scale"]
    honest = scale(None, lo.CALIBRATION_RUNS)          # the audits' runs: Laplace's variance needs them to PASS
    assert honest.verdict == PASS, honest.reason
    zero_rows = [r for r in honest.measured["rows"] if "n = 0" in r["family"]]
    assert len(zero_rows) == 2 and all(r["variance_ratio"] == pytest.approx(1.0) for r in zero_rows)
    planted = scale(_empty_cells_stay_empty(base), 2_000)
    assert planted.verdict == FAIL and "n = 0" in planted.reason and "which counts are 0" in planted.reason


def test_offline_privatizer_audit_fails_a_privatizer_that_keeps_empty_cells_empty(monkeypatch):
    v = _run_audit(monkeypatch, "offline_gaussian_privatizer", _empty_cells_stay_empty(OfflineGaussianPrivatizer)(1.0))
    assert v["whitebox.noise_scale"].verdict == FAIL
    # everything else the audit runs passes it (the black box's datasets hold every cell it touches)
    assert {k: c.verdict for k, c in v.items() if k != "whitebox.noise_scale"} == dict.fromkeys(
        set(v) - {"whitebox.noise_scale"}, PASS)


# ------------------------------------------------------------------ the LP's band around n'
def test_lp_band_on_the_raw_visits_fails_the_privatizer_audits_consistency_check():
    def consistency(priv):
        out = {c.id: c for c in pa.offline_noise_checks(priv, runs=200, rng=np.random.default_rng(0), alpha=0.05)}
        return out["assumption.sum_consistency"]
    assert consistency(OfflineGaussianPrivatizer(1.0)).verdict == PASS
    assert consistency(OfflineLaplacePrivatizer(1.0)).verdict == PASS
    bad = consistency(LPOnRawVisits(1.0))
    assert bad.verdict == FAIL and bad.details["max_band_deviation"] > bad.details["half_width"]


def test_consistency_violations_is_dp_apvis_band_condition():
    rng = np.random.default_rng(0)
    pair, triple = np.full((50, 3, 3, 2), 15.0), np.full((50, 3, 3, 2, 3), 5.0)
    good = OfflineGaussianPrivatizer(1.0).privatize(pair, triple, rng)
    assert not pa.consistency_violations(good).any()
    assert pa.consistency_violations(LPOnRawVisits(1.0).privatize(pair, triple, rng)).any()
    # through dp_apvi's count_checks: the same condition, its assumption.consistency
    from dpcheck.algorithms.offline import TabularCounts
    counts = TabularCounts(visits=pair, transitions=triple, reward_sums=None, n=90)
    for algo, want in ((None, PASS), (_with_privatizer(LPOnRawVisits), FAIL)):
        out = {c.id: c for c in lo.count_checks(APVISpec(algorithm=algo), counts, rng=rng, alpha=0.05)}
        assert out["assumption.consistency"].verdict == want


# ------------------------------------------------------------------ --epsilon read as rho
SKIP_SAMPLED = ("check_blackbox", "check_noise_scale", "check_noise")       # the conversion is exact: not needed


def test_epsilon_read_as_rho_fails_the_zcdp_conversion_of_the_privatizer_audit(monkeypatch):
    honest = _run_audit(monkeypatch, "offline_gaussian_privatizer", skip=SKIP_SAMPLED, epsilon=1.0, delta=1e-5)
    assert honest["whitebox.zcdp_conversion"].verdict == PASS
    assert honest["whitebox.zcdp_conversion"].measured["round_trip"]["epsilon_back"] == pytest.approx(1.0)
    monkeypatch.setattr(OfflineGaussianPrivatizer, "from_approx_dp",
                        classmethod(lambda cls, epsilon, delta_dp, beta=0.1: cls(rho=epsilon, beta=beta)))
    v = _run_audit(monkeypatch, "offline_gaussian_privatizer", skip=SKIP_SAMPLED, epsilon=1.0, delta=1e-5)
    assert v["whitebox.zcdp_conversion"].verdict == FAIL and "convert back" in v["whitebox.zcdp_conversion"].reason
    assert v["whitebox.dp_event"].verdict == v["whitebox.sensitivity"].verdict == PASS   # judged against that rho


def test_zcdp_conversion_runs_with_set_rho_and_not_for_a_pure_dp_claim(monkeypatch):
    v = _run_audit(monkeypatch, "offline_gaussian_privatizer", skip=SKIP_SAMPLED)
    assert v["whitebox.zcdp_conversion"].verdict == PASS and "round_trip" not in v["whitebox.zcdp_conversion"].measured
    assert "whitebox.zcdp_conversion" not in _run_audit(monkeypatch, "offline_laplace_privatizer", skip=SKIP_SAMPLED)


# ------------------------------------------------------------------ an under-declared DpEvent in dp_apvi
def test_under_declared_event_fails_dp_apvis_dp_event_check():
    for mechanism in ("gaussian", "laplace"):
        for budget in (0.1, 1.0, 10.0):
            c = lo.dp_event_check(APVISpec(mechanism=mechanism, budget=budget), 3, 2, 2)
            assert c.verdict == PASS and c.details["event_vs_noise"]["status"] == "consistent", c.reason
    bad = lo.dp_event_check(APVISpec(algorithm=_with_privatizer(UnderDeclaredEvent)), 3, 2, 2)
    assert bad.verdict == FAIL and "not drawn" in bad.reason
    assert bad.details["event_vs_noise"]["status"] == "inconsistent"
