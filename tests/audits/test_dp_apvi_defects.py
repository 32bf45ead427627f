"""Planted defects in DP-APVI (Qiao & Wang, Offline RL with DP, Algorithm 1) that the audit's rho = 1 and
rho = 1e-4 operating points cannot see, each caught by the check that should catch it:

* the Bernstein variance of Gamma taken of Vtil_h (still 0 during the backward induction) instead of
  Vtil_{h+1}: Gamma's statistical term is silently 0. At rho = 1 the privacy term is ~99% of Gamma, so only
  a statistics-dominated budget shows it -> assumption.penalty_validity / pessimism.statistics_dominated fail;
* Gamma = 0 instead of C H where ntil <= E (eq. 5's fallback branch): every pair of TAB-FULL has ntil > E at
  the other points; TAB-PARTIAL's uncovered pairs fall in it -> assumption.pessimism.statistics_dominated fails;
* the compiled (numba) counter recording s_h instead of s_{h+1}: only a user's dataset is counted by it
  -> whitebox.counting fails.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from dpcheck.algorithms.offline import DPAPVI, tab_partial
from dpcheck.algorithms.offline.apvi import penalty as apvi_penalty
from dpcheck.audits.dp_apvi import STATISTICS_DOMINATED_BUDGET
from dpcheck.audits.lib import offline as lo
from dpcheck.audits.lib.offline import APVISpec
from dpcheck.cli import main


class VarianceOfCurrentStepAPVI(DPAPVI):
    """Defect: Var_{P~}(Vtil_h) with Vtil_h not yet computed (zeros) in place of Var_{P~}(Vtil_{h+1})."""

    def _penalty(self, kernel, visits, V_next, *, E, iota, H):
        return apvi_penalty(kernel, visits, np.zeros_like(V_next), E=E, iota=iota, H=H, constants=self.constants)


class ZeroFallbackPenaltyAPVI(DPAPVI):
    """Defect: Gamma = 0 (instead of C H) where ntil(s,a) <= E."""

    def _penalty(self, kernel, visits, V_next, *, E, iota, H):
        gamma, var = apvi_penalty(kernel, visits, V_next, E=E, iota=iota, H=H, constants=self.constants)
        return np.where(visits > E, gamma, 0.0), var


def _statistics_dominated(spec, seed=0):
    # the audit's statistics-dominated point: TAB-PARTIAL, n = 1e6, rho = 1e6 (eps = 1e4)
    inst = tab_partial(np.random.default_rng(seed), S=4, A=3, H=3)
    return {c.id: c for c in lo.pessimism_checks(spec, inst, n=10**6, runs=300, rng=np.random.default_rng(seed + 1),
                                                 alpha=0.05, budget=STATISTICS_DOMINATED_BUDGET[spec.gaussian],
                                                 suffix=".statistics_dominated")}


@pytest.mark.parametrize("mechanism", ["gaussian", "laplace"])
def test_correct_penalty_passes_where_its_statistical_term_dominates(mechanism):
    good = _statistics_dominated(APVISpec(mechanism=mechanism))
    for i in ("assumption.penalty_validity.statistics_dominated", "assumption.pessimism.statistics_dominated"):
        assert good[i].verdict == "pass" and "qualifier" not in good[i].details, good[i].reason
        # the point does what it is for: the statistical term is most of Gamma, and the fallback is exercised
        assert good[i].details["statistical_share"] > 0.5
        assert good[i].details["fallback_pairs_fraction"] > 0


@pytest.mark.parametrize("mechanism", ["gaussian", "laplace"])
def test_variance_of_the_wrong_value_fails_where_the_statistical_term_dominates(mechanism):
    bad = _statistics_dominated(APVISpec(mechanism=mechanism, algorithm=VarianceOfCurrentStepAPVI))
    c = bad["assumption.penalty_validity.statistics_dominated"]
    assert c.verdict == "fail", c.reason
    assert c.details["statistical_share"] < 0.1          # the reported penalties show the term is missing
    assert bad["assumption.pessimism.statistics_dominated"].verdict == "fail"


def test_zero_penalty_in_the_fallback_branch_fails_pessimism():
    bad = _statistics_dominated(APVISpec(algorithm=ZeroFallbackPenaltyAPVI))
    assert bad["assumption.pessimism.statistics_dominated"].verdict == "fail", \
        bad["assumption.pessimism.statistics_dominated"].reason


@pytest.mark.slow
@pytest.mark.parametrize("algorithm,caught_by", [
    (VarianceOfCurrentStepAPVI, {"assumption.penalty_validity.statistics_dominated",
                                 "assumption.pessimism.statistics_dominated"}),
    (ZeroFallbackPenaltyAPVI, {"assumption.pessimism.statistics_dominated"}),
])
def test_the_registered_audit_fails_on_each_planted_penalty_defect(tmp_path, monkeypatch, algorithm, caught_by):
    monkeypatch.setattr(DPAPVI, "_penalty", algorithm._penalty)
    code = main(["audit", "dp_apvi", "--quick", "--samples", "20000", "--out", str(tmp_path), "--quiet"])
    rep = json.loads((tmp_path / "dp_apvi.json").read_text())
    failed = {c["id"] for c in rep["checks"] if c["verdict"] == "fail"}
    assert code == 1 and caught_by <= failed, failed


# ---------------------------------------------------------------- the compiled counter a user's dataset goes through
def _kernel_recording_current_state(states, actions, rewards, has_rewards, S, A, trip, rsum):
    """Defect: the compiled counter's one-pass loop with s' = s_h instead of s_{h+1} (pure Python stand-in)."""
    runs, n, H = actions.shape
    for r in range(runs):
        for i in range(n):
            for h in range(H):
                p = ((r * H + h) * S + states[r, i, h]) * A + actions[r, i, h]
                trip[p * S + states[r, i, h]] += 1
                if has_rewards:
                    rsum[p] += rewards[r, i, h]


def test_compiled_counter_recording_the_wrong_next_state_fails_the_counting_check(monkeypatch):
    from dpcheck.algorithms.offline import dataset
    inst = tab_partial(np.random.default_rng(0), S=4, A=3, H=3)
    sets = [("TAB-PARTIAL", inst.collect(300, np.random.default_rng(1), runs=2))]
    assert lo.counting_check(sets).verdict == "pass"
    monkeypatch.setattr(dataset, "_compiled_kernel", lambda: _kernel_recording_current_state)
    bad = lo.counting_check(sets)
    assert bad.verdict == "fail" and "n_h(s,a,s')" in bad.reason, bad.reason


@pytest.mark.slow
def test_the_registered_audit_fails_on_the_wrong_compiled_counter(tmp_path, monkeypatch):
    from dpcheck.algorithms.offline import dataset
    monkeypatch.setattr(dataset, "_compiled_kernel", lambda: _kernel_recording_current_state)
    code = main(["audit", "dp_apvi", "--quick", "--workers", "1", "--samples", "20000", "--out", str(tmp_path),
                 "--quiet"])
    rep = json.loads((tmp_path / "dp_apvi.json").read_text())
    failed = {c["id"] for c in rep["checks"] if c["verdict"] == "fail"}
    assert code == 1 and failed == {"whitebox.counting"}, failed
