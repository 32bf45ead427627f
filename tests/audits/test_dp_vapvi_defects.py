"""Planted defects in DP-VAPVI (Qiao & Wang, Offline RL with DP, Algorithm 2) that the audit's instances could
not see, each caught by the check that should catch it:

* the variance regression (lines 5-6) solved on the raw D' instead of the released Sigmatil, beta, theta: on
  LIN-TAB and Appendix F sigtil^2 = max(1, .) = 1 whatever the data -> privacy.dataflow fails on LIN-TAB(COIN);
* the value clip at H - h + 2 (1-based; a 0-based slip): Vtil_{h+1} reaches H - h, so w_vector moves by up to
  2 (H + 1) B against the declared 2 H B -> whitebox.sensitivity fails on the algorithm's own value range;
* the compiled (numba) counter recording s_h instead of s_{h+1} -> whitebox.counting fails.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from dpcheck.algorithms.offline import DPVAPVI
from dpcheck.algorithms.offline.vapvi import _as_counts, _solve
from dpcheck.audits.lib import offline_linear as ol
from dpcheck.cli import main


def _algo(setup, cls=DPVAPVI, rho=1.0, split=True):
    return ol.algorithm(rho, mode="practical", setup=setup, lam=min(1.0, setup.kappa_used / 2), feature_bound=1.0,
                        cls=cls, split=split)


class RawVarianceRegression(DPVAPVI):
    """Defect: betatil, thetatil regressed on the raw D' (no noise, no E/2 shift) instead of the releases."""

    def run(self, data, features, rng, **kw):
        self._raw, self._phi = _as_counts(data, self.split)[1], np.asarray(features, float)
        return super().run(data, features, rng, **kw)

    def _variance_regression(self, h, Sig, b_beta, b_theta, V_next):
        Dp, phi = self._raw, self._phi
        Sig0 = np.einsum("rsa,sai,saj->rij", Dp.visits[:, h], phi, phi) + self.lam * np.eye(phi.shape[-1])
        beta = _solve(Sig0, np.einsum("rsat,sai,rt->ri", Dp.transitions[:, h], phi, V_next * V_next)[..., None])
        theta = _solve(Sig0, np.einsum("rsat,sai,rt->ri", Dp.transitions[:, h], phi, V_next)[..., None])
        return beta[..., 0], theta[..., 0]


@pytest.fixture(scope="module")
def lin_tab():
    return ol.instance_setup("lin_tab", 0)


@pytest.fixture(scope="module")
def coin():
    return ol.variance_setup()


def _dataflow(lin_tab, coin, cls=DPVAPVI, variance=True):
    return ol.dataflow_check(_algo(lin_tab, cls), lin_tab, runs=10, seed=1,
                             variance_case=(_algo(coin, cls), coin, (10**6, 10**7)) if variance else None)


def test_variance_regression_on_the_raw_data_fails_the_dataflow_check_on_the_coin_instance(lin_tab, coin):
    bad = _dataflow(lin_tab, coin, RawVarianceRegression)
    assert bad.verdict == "fail" and "sigma2" in bad.reason and "COIN" in bad.reason, bad.reason
    # LIN-TAB alone cannot see it (sigtil^2 = 1 whatever the data), and says so
    alone = _dataflow(lin_tab, coin, RawVarianceRegression, variance=False)
    assert alone.verdict == "pass" and alone.details["qualifier"] == "uninformative", alone.reason


def test_correct_algorithm_passes_the_dataflow_check_with_sigma2_above_1(lin_tab, coin):
    ok = _dataflow(lin_tab, coin)
    assert ok.verdict == "pass" and "qualifier" not in ok.details, ok.reason
    rows = [r for r in ok.measured["sizes"] if r["setup"] == coin.name]
    assert min(r["data_variance_above_1"] for r in rows) > 0.1 and min(r["sigma2_max"] for r in rows) > 4


@pytest.mark.slow
def test_the_registered_audit_fails_on_the_raw_variance_regression(tmp_path, monkeypatch):
    original = DPVAPVI.run

    def run(self, data, features, rng, **kw):
        self._raw, self._phi = _as_counts(data, self.split)[1], np.asarray(features, float)
        return original(self, data, features, rng, **kw)
    monkeypatch.setattr(DPVAPVI, "run", run)
    monkeypatch.setattr(DPVAPVI, "_variance_regression", RawVarianceRegression._variance_regression)
    code = main(["audit", "dp_vapvi", "--quick", "--workers", "1", "--samples", "5000", "--out", str(tmp_path),
                 "--quiet"])
    rep = json.loads((tmp_path / "dp_vapvi.json").read_text())
    failed = {c["id"] for c in rep["checks"] if c["verdict"] == "fail"}
    assert code == 1 and "privacy.dataflow" in failed, failed


# ------------------------------------------------------------------ the value clip one step too high
class ClipOneTooHigh(DPVAPVI):
    """Defect: Qhat_h clipped at H - h + 2 (1-based; a 0-based slip): Vtil_1 up to H + 1, w moves by 2 (H + 1) B."""

    def _value_cap(self, h, H):
        return float(H - h + 1)


def _sensitivity(setup, cls=DPVAPVI):
    from dpcheck.audits.lib.offline_linear.targets import _counts
    x, _ = ol.neighbour_datasets(setup, setup.H, K=20, seed=0)     # the audit's dataset (DPVAPVIAudit._counts)
    algo = _algo(setup, cls, split=False)
    return ol.sensitivity_check(algo, setup.features, setup.H, rho_claim=1.0, examples=20,
                                counts=_counts(x, *setup.features.shape[:2]))


def test_value_clip_one_step_too_high_fails_the_sensitivity_check(lin_tab):
    bad = _sensitivity(lin_tab, ClipOneTooHigh)
    assert bad.verdict == "fail" and "outside its range" in bad.reason, bad.reason
    # the search alone (values drawn from the paper's range) passes it
    assert max(bad.measured["searched_ratio"].values()) <= 1 + 1e-9


def test_correct_clip_keeps_the_values_in_range_and_reaches_its_top(lin_tab):
    ok = _sensitivity(lin_tab)
    assert ok.verdict == "pass", ok.reason
    vr = ok.measured["value_range"]
    assert vr["outside"] == [] and vr["at_top"] > 0.01          # the clip binds: a slip in it would show


# ------------------------------------------------------------------ the compiled counter (shared with dp_apvi)
from test_dp_apvi_defects import _kernel_recording_current_state  # noqa: E402 (the same planted kernel)


def _collected(coin, n=200):
    return [("coin", coin.instance.collect(n, np.random.default_rng(0), runs=2))]


def test_compiled_counter_recording_the_wrong_next_state_fails_the_counting_check(coin, monkeypatch):
    from dpcheck.algorithms.offline import dataset
    monkeypatch.setattr(dataset, "_compiled_kernel", lambda: _kernel_recording_current_state)
    bad = ol.counting_check(_collected(coin))
    assert bad.verdict == "fail" and "engine 'auto' vs numpy" in bad.reason and "n_h(s,a,s')" in bad.reason, bad.reason


def test_counting_check_passes_the_real_engines_and_says_when_there_is_no_compiled_one(coin, monkeypatch):
    ok = ol.counting_check(_collected(coin))
    assert ok.verdict == "pass" and ok.measured["compiled_engine"] and "qualifier" not in ok.details, ok.reason
    from dpcheck.algorithms.offline import dataset
    monkeypatch.setattr(dataset, "_compiled_kernel", lambda: None)          # numba absent: 'auto' is numpy
    c = ol.counting_check(_collected(coin))
    assert c.verdict == "pass" and c.details["qualifier"] == "vacuous" and "numba is not installed" in c.reason
