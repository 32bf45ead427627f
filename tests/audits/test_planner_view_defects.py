"""A built-in privatizer whose post-processing hands the LP a raw count (where N^ < 0) while its noisy fields stay
honest: the N^ black box cannot see it, the planner-view black box (privacy.blackbox.planner_view in the privatizer
audits, privacy.privatizer.planner_view in dp_ucbvi and dp_nash_vi) does. The defect is monkeypatched onto the
built-in class (a subclass would be audited as a user's privatizer, searched on every view)."""
from dataclasses import replace

import numpy as np
import pytest

import dpcheck
from dpcheck.algorithms.privatizers import CentralPrivatizer


@pytest.fixture
def raw_where_negative(monkeypatch):
    honest = CentralPrivatizer.post_processed

    def leaky(self, noisy_visits, noisy_transitions, rewards=None):
        fed = honest(self, np.where(noisy_visits < 0, self.true_counts().visits, noisy_visits),
                     np.where(noisy_transitions < 0, self.true_counts().transitions, noisy_transitions), rewards)
        return replace(fed, noisy_visits=noisy_visits, noisy_transitions=noisy_transitions)
    monkeypatch.setattr(CentralPrivatizer, "post_processed", leaky)


def test_the_central_privatizer_audit_sees_raw_counts_fed_to_the_lp(raw_where_negative):
    r = dpcheck.run("central_privatizer", quick=True, seed=0)
    assert r.check("privacy.blackbox")["verdict"] == "pass"               # N^ is honest ...
    assert r.check("privacy.blackbox.planner_view")["verdict"] == "fail"  # ... what the planner reads is not
    assert r.verdict == "fail"


@pytest.mark.slow
def test_the_correct_central_privatizer_passes_its_planner_view():
    r = dpcheck.run("central_privatizer", quick=True, seed=0)
    assert r.check("privacy.blackbox.planner_view")["verdict"] == "pass" and r.verdict == "pass"
