"""The sequential black box end to end (dpcheck.sequential.audit(sequential=True) and
``dpcheck audit --sequential``): early detection, valid lower bounds at the stop, honest verdicts."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from examples import mechanisms as M  # noqa: E402

from dpcheck import AuditTarget, Claim  # noqa: E402
from dpcheck.sequential import audit  # noqa: E402   (blackbox.audit unless sequential=True)
from dpcheck.errors import InputError  # noqa: E402
from dpcheck.sequential import SequentialAuditResult, _schedule  # noqa: E402

RNM_PAIRS = [([0, 0, 0, 0, 0], [1, 1, 1, 1, 1]), ([1, 0, 0, 0, 0], [0, 1, 0, 0, 0])]


def target(mech, pairs=((0, 1),), claim=None):
    return AuditTarget(name="seq", mechanism=mech, pairs=list(pairs), claim=claim or Claim(epsilon=1.0))


def test_two_times_laplace_is_caught_with_far_fewer_samples_than_the_budget():
    # scale 1/(2 eps) claimed as eps-DP: true eps 2. Budget 10^5 per side; the test stops at the crossing.
    used = []
    for seed in range(8):
        r = audit(target(M.laplace_count(1.0, scale_factor=0.5)), samples=10**5, seed=seed, sequential=True)
        assert isinstance(r, SequentialAuditResult)
        assert r.verdict == "fail" and r.stopped == "violation"
        assert r.e_value >= 1 / 0.05
        assert 1.0 <= r.epsilon_lower_bound <= 2.0          # above the claim, below the truth
        used.append(r.samples_used)
    assert np.median(used) <= 2000 and max(used) < 10**4


def test_lower_bound_at_the_stop_never_exceeds_the_true_epsilon():
    # correct mechanisms (eps_lb <= claimed = true) and broken ones (eps_lb <= their true eps), seeded
    cases = [(target(M.laplace_count(1.0)), 1.0, 4000),
             (target(M.geometric(0.5), claim=Claim(epsilon=0.5)), 0.5, 4000),
             (target(M.laplace_count(1.0, scale_factor=0.5)), 2.0, 10**5),
             (target(M.report_noisy_max(1.0, return_value=True), RNM_PAIRS), 2.5, 10**5)]
    for t, true_eps, n in cases:
        for seed in range(3):
            r = audit(t, samples=n, seed=seed, sequential=True)
            assert r.epsilon_lower_bound <= true_eps, (t.mechanism, seed, r.reason)


def test_correct_laplace_passes_on_budget_with_power_and_samples_reported():
    r = audit(target(M.laplace_count(1.0)), samples=20_000, seed=3, sequential=True)
    assert r.verdict == "pass" and r.stopped == "budget"
    assert r.samples_used == r.samples_drawn == 20_000
    assert r.power <= 2.0
    c = r.to_check()
    assert c.measured["samples_used"] == 20_000 and c.measured["stopped"] == "budget"
    assert c.details["sequential"] is True and "e-process" in c.details["method"]


def test_a_small_budget_is_inconclusive_not_pass():
    # 60 outputs per side (30 tested) cannot show a 2x excess with an e-process: never a PASS
    r = audit(target(M.laplace_count(1.0)), samples=60, seed=0, sequential=True)
    assert r.verdict == "inconclusive" and "use more samples" in r.reason


@pytest.mark.slow
def test_false_alarms_of_the_whole_sequential_audit_with_reselection():
    # 200 whole audits of a correct Laplace (budget 2000): events re-chosen from all earlier outputs
    fails = sum(audit(target(M.laplace_count(1.0)), samples=2000, seed=s, sequential=True).verdict == "fail"
                for s in range(200))
    assert fails <= 10 + 3 * (200 * 0.05 * 0.95) ** 0.5


def _reverse_leak(count, rng, size):
    """Laplace(1) on input 0; on input 1 the same, except that 20 % of the outputs are a point mass at 50 that input 0
    practically never produces: an infinite privacy loss in one direction only."""
    x = rng.laplace(0.0, 1.0, size)
    if count == 1:
        x[rng.random(size) < 0.2] = 50.0
    return x


@pytest.mark.parametrize("pair", [(0, 1), (1, 0)])
def test_a_leak_in_one_direction_is_caught_whichever_way_the_pair_is_given(pair):
    # both directions of the pair are bet on; scoring the reverse direction on the forward outputs PASSed the
    # (0, 1) order with every one of 2 x 10^4 samples (core hunt finding)
    r = audit(target(_reverse_leak, (pair,)), samples=20_000, seed=0, sequential=True)
    assert r.verdict == "fail" and r.stopped == "violation" and r.samples_used <= 2000, r.reason


def test_schedule_spends_exactly_the_budget():
    for n in (20, 101, 2000, 12345):
        s = _schedule(n)
        assert sum(s) == n and all(b > 0 for b in s)
    assert _schedule(2000)[:4] == [100, 100, 200, 400]


def test_options_it_cannot_honour_are_errors():
    t = target(M.laplace_count(1.0))
    with pytest.raises(InputError, match="--cache"):
        audit(t, samples=1000, sequential=True, cache_dir="/tmp/x")
    with pytest.raises(InputError, match="--workers"):
        audit(t, samples=1000, sequential=True, workers=2)


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "dpcheck", "audit", *args], cwd=cwd, capture_output=True, text=True)


@pytest.mark.slow
def test_cli_sequential_reports_samples_used(tmp_path):
    (tmp_path / "t.py").write_text(
        f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
        "from examples import mechanisms as M\nfrom dpcheck import AuditTarget, Claim\n"
        "bad = AuditTarget('bad', M.laplace_count(1.0, scale_factor=0.5), [(0, 1)], Claim(epsilon=1.0))\n")
    out = tmp_path / "rep"
    p = _cli(f"{tmp_path / 't.py'}:bad", "--sequential", "--samples", "50000", "--out", str(out), "--quiet",
             cwd=ROOT)
    assert p.returncode == 1, p.stderr
    rep = json.loads(next(out.glob("*.json")).read_text())
    check = rep["checks"][0]
    assert check["verdict"] == "fail"
    assert 0 < check["measured"]["samples_used"] < 50000
    p = _cli(f"{tmp_path / 't.py'}:bad", "--sequential", "--cache", str(tmp_path / "c"), "--out", str(out),
             cwd=ROOT)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "--sequential" in p.stderr


def test_api_run_sequential_and_registered_audits_refuse_it():
    import dpcheck
    bad = target(M.laplace_count(1.0, scale_factor=0.5))
    r = dpcheck.run(bad, samples=20_000, sequential=True)
    m = r.check("privacy.blackbox")["measured"]
    assert r.verdict == "fail" and m["stopped"] == "violation" and m["samples_used"] < 20_000
    with pytest.raises(InputError, match="--sequential is not used"):
        dpcheck.run("laplace_example", quick=True, sequential=True)
