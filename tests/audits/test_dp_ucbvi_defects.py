"""Planted defects in DP-UCBVI: each must come out of the audit as a violation (issue #4, item 4).

* the bonus / P~ computed from raw counts          -> privacy.dataflow fails
* a privatizer whose E is too small                -> assumption.good_event / count_error fail
* the privacy term of the bonus removed            -> assumption.optimism fails (where it matters)
and, as the sanity check that the auditor sees a real leak, the non-private UCBVI audited
like DP-UCBVI -> privacy.jdp.blackbox fails with a large lower bound.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from dpcheck.algorithms.envs.generators import random_mdp
from dpcheck.algorithms.envs.tabular import TabularMDP
from dpcheck.algorithms.online.bonus import BonusConstants
from dpcheck.algorithms.online.ucbvi import DPUCBVI, private_estimates
from dpcheck.algorithms.privatizers import CentralPrivatizer
from dpcheck.audit import ExecutionOptions
from dpcheck.audits.lib.ucbvi import (AgentSpec, assumption_checks, dataflow_check, jdp_blackbox_check,
                             optimism_check)


class _RawCountsMixin:
    """Keeps its own tally of the raw trajectories it sees as the central agent."""

    def _begin(self, runs, H, S, A):
        self.N = np.zeros((runs, H, S, A))
        self.Ntr = np.zeros((runs, H, S, A, S))

    def _after_episode(self, states, actions, rewards):
        runs, H = actions.shape
        r, h = np.arange(runs)[:, None], np.arange(H)[None, :]
        np.add.at(self.N, (r, h, states[:, :-1], actions), 1)
        np.add.at(self.Ntr, (r, h, states[:, :-1], actions, states[:, 1:]), 1)


class RawKernelDPUCBVI(_RawCountsMixin, DPUCBVI):
    """Defect: P~ from raw counts (N(s,a,s') / N(s,a)) where visited; N~ elsewhere."""

    def _estimates(self, counts):
        P, r, n = super()._estimates(counts)
        seen = self.N[..., None] > 0
        P = np.where(seen, self.Ntr / np.where(seen, self.N[..., None], 1.0), P)
        return P, r, n


class RawBonusDPUCBVI(_RawCountsMixin, DPUCBVI):
    """Defect: the bonus (and everything reading N~(s,a)) uses raw visit counts + E/2."""

    def _estimates(self, counts):
        P, r, _ = super()._estimates(counts)
        return P, r, self.N + counts.width / 2


class TinyWidthCentral(CentralPrivatizer):
    """Defect: declares E 100 times smaller than its noise needs (Assumption 3.1 fails)."""

    def _compute_width(self):
        return super()._compute_width() / 100.0


@pytest.mark.parametrize("defect", [RawKernelDPUCBVI, RawBonusDPUCBVI])
def test_raw_counts_in_planner_fail_dataflow(defect):
    check = dataflow_check(AgentSpec(agent_class=defect, mode="practical"), seed=0)
    assert check.verdict == "fail", check.reason
    assert check.measured["violations"] > 0


def test_correct_agents_pass_dataflow():
    for spec in (AgentSpec(mode="practical"), AgentSpec(mode="theory"), AgentSpec(privatizer="local", mode="practical")):
        check = dataflow_check(spec, seed=1)
        assert check.verdict == "pass", check.reason


def test_too_small_width_fails_assumption_3_1():
    env = random_mdp(3, 2, 3, np.random.default_rng(0), reward_noise="bernoulli")
    spec = AgentSpec(privatizer=TinyWidthCentral, mode="theory")
    checks = {c.id: c for c in assumption_checks(spec, env, K=64, runs=40, seed=0, alpha=0.05)}
    assert checks["assumption.good_event"].verdict == "fail"
    assert checks["assumption.good_event"].measured["failures"] == 40
    assert checks["assumption.count_error"].verdict == "fail"
    # the honest privatizer on the same runs
    ok = {c.id: c for c in assumption_checks(AgentSpec(privatizer="central", mode="theory"), env, K=64, runs=120,
                                              seed=0, alpha=0.05)}
    assert all(c.verdict == "pass" for c in ok.values()), [c.reason for c in ok.values()]


class HiddenNoiseTinyWidth(TinyWidthCentral):
    """Defect as above, and the releases omit N^ (noisy_* None, which the interface allows)."""

    def release(self):
        from dpcheck.algorithms.privatizers.base import PrivateCounts
        c = super().release()
        return PrivateCounts(visits=c.visits, transitions=c.transitions, rewards=c.rewards,
                             noisy_visits=None, noisy_transitions=None, width=c.width)


def test_unobservable_good_event_is_inconclusive_not_pass():
    """Without N^ the good event |N^ - N| <= E/4 is never observed: counting every run as good passed this
    privatizer, whose N^ errors exceed E/4 in every run."""
    env = random_mdp(3, 2, 3, np.random.default_rng(0), reward_noise="bernoulli")
    spec = AgentSpec(privatizer=HiddenNoiseTinyWidth, mode="theory")
    checks = {c.id: c for c in assumption_checks(spec, env, K=32, runs=40, seed=0, alpha=0.05)}
    good = checks["assumption.good_event"]
    assert good.verdict == "inconclusive" and "carry no N^" in good.reason
    assert checks["assumption.count_error"].verdict == "fail"


def _deterministic_chain():
    # deterministic transitions and rewards: the non-private estimates are exact after one visit,
    # so any optimism failure comes from the privacy noise (and the privacy term must cover it)
    H, S, A = 2, 2, 2
    P = np.zeros((H, S, A, S))
    P[:, :, 0, 0] = 1.0
    P[:, :, 1, 1] = 1.0
    r = np.zeros((H, S, A))
    r[:, 1, :] = 0.9
    r[:, 0, 1] = 0.3
    return TabularMDP(P, r, 0)


def test_removing_privacy_term_breaks_optimism():
    env = _deterministic_chain()
    full = replace(BonusConstants.practical())
    cut = replace(full, c_privacy=0.0)
    good = optimism_check(AgentSpec(mode="practical", constants=full), env, K=300, runs=60, seed=0, alpha=0.05)
    bad = optimism_check(AgentSpec(mode="practical", constants=cut), env, K=300, runs=60, seed=0, alpha=0.05)
    assert good.verdict == "pass" and "vacuous" not in good.details  # where it matters: Q~ < H often
    assert good.details["saturated_fraction"] < 0.9
    assert bad.verdict == "fail" and bad.measured["failures"] == 60


@pytest.mark.slow
def test_nonprivate_ucbvi_is_a_jdp_violation():
    check = jdp_blackbox_check(AgentSpec(privatizer="none", mode="practical"), ExecutionOptions(seed=0), samples=20_000)
    assert check.verdict == "fail"
    assert check.measured["epsilon_lower_bound"] > 3.0


@pytest.mark.slow
def test_dp_ucbvi_central_is_not_flagged():
    check = jdp_blackbox_check(AgentSpec(privatizer="central", mode="practical", width_mode="nominal"),
                               ExecutionOptions(seed=0), samples=20_000)
    assert check.verdict != "fail"
    assert check.measured["epsilon_lower_bound"] <= 1.0


# ----------------------------------------------------------------------------- the JDP black box's positive control
_AUDIT_JDP = dict(privatizer="central", mode="practical", width_mode="nominal")    # as the dp_ucbvi audit runs it


@pytest.mark.slow
@pytest.mark.parametrize("defect", [RawKernelDPUCBVI, RawBonusDPUCBVI])
def test_raw_count_planners_get_no_plain_jdp_pass(defect):
    """In the audit's JDP scenario (K = 4, H = 2, practical constants, E ~ 83.5) Q~ saturates, so even a planner
    reading the raw counts sends the same actions on both neighbours (eps_lb = 0). That used to be a plain PASS
    for RawKernelDPUCBVI; the positive control (the agent on the exact counts at the same E) shows no leak
    either, so the PASS is uninformative (RawBonusDPUCBVI saturates everywhere: vacuous)."""
    check = jdp_blackbox_check(AgentSpec(agent_class=defect, **_AUDIT_JDP), ExecutionOptions(seed=0), samples=20_000)
    assert check.verdict != "pass" or check.details.get("qualifier") in ("uninformative", "vacuous"), check.reason


@pytest.mark.slow
def test_jdp_pass_is_uninformative_where_exact_counts_leak_nothing():
    check = jdp_blackbox_check(AgentSpec(**_AUDIT_JDP), ExecutionOptions(seed=0), samples=20_000)
    assert check.verdict == "pass" and check.details["qualifier"] == "uninformative", check.reason
    ctl = check.details["positive_control"]
    assert ctl["verdict"] != "fail" and ctl["width_E"] == pytest.approx(83.5, rel=0.01)


@pytest.mark.slow
def test_jdp_pass_is_plain_where_the_control_sees_the_exact_counts():
    """Bonus constants with a privacy term 1/N~ (no saturation): the agent on the exact counts is told apart
    (eps_lb > 1), so the correct agent's PASS is evidence and stays unqualified."""
    small = BonusConstants(mode="practical", iota=1.0, c_variance=0.0, c_reward=0.0, c_privacy=1 / 83.5,
                           privacy_scales_with_HS=False, c_correction=0.0)
    check = jdp_blackbox_check(AgentSpec(constants=small, **_AUDIT_JDP), ExecutionOptions(seed=0), samples=20_000)
    assert check.verdict == "pass" and "qualifier" not in check.details, check.reason
    assert check.details["positive_control"]["verdict"] == "fail"
    assert check.details["positive_control"]["epsilon_lower_bound"] > 1.0


def test_exact_counts_control_releases_the_post_processed_exact_counts():
    from dpcheck.audits.lib.ucbvi.privacy import ExactCounts
    p = ExactCounts(8.0).start(2, 2, 2, 2, 3, np.random.default_rng(0))
    states = np.array([[0, 1, 1], [0, 0, 1]])
    actions = np.array([[1, 0], [0, 0]])
    p.observe(states, actions, np.ones((2, 2)))
    rel = p.release()
    tc = p.true_counts()
    assert p.width == 8.0 and rel.width == 8.0
    np.testing.assert_allclose(rel.visits, tc.visits + 4.0)                 # N~ = N + E/2 (Section 5.1.1 LP, no noise)
    np.testing.assert_allclose(rel.transitions, tc.transitions + 2.0)       # + E/(2S)
    np.testing.assert_allclose(rel.rewards, tc.rewards)


def test_explicit_bound_above_the_trivial_regret_is_vacuous_even_when_the_bonus_does_not_saturate():
    """Theory constants without the privacy term: Q~ is not saturated, optimism fails in every run, and eq. 75's bound
    is still 2.4e9 x k H at K = 64: no agent can break it, but it was a plain PASS (only saturation marked it)."""
    from dpcheck.algorithms.envs.generators import random_mdp
    from dpcheck.algorithms.online.bonus import BonusConstants
    from dpcheck.audits.lib.ucbvi import AgentSpec, explicit_bound_check
    env = random_mdp(3, 2, 3, np.random.default_rng(0), reward_noise="bernoulli")
    spec = AgentSpec(mode="theory", constants=BonusConstants(mode="theory", c_privacy=0.0, c_correction=0.0))
    from dpcheck.stats import pass_level
    with pass_level(0.05):        # the audit's PASS level at its family size (dpcheck.stats.pass_alpha)
        c = explicit_bound_check(spec, env, K=64, runs=60, seed=2, alpha=0.05 / 23)
    assert c.verdict == "pass" and c.details["qualifier"] == "vacuous" and "k H" in c.reason
    assert c.details["saturated_fraction"] < 0.01 and c.details["bound_over_trivial_min"] > 1e9


# ----------------------------------------------------------------------------- what the planner and the engines use
class NoisyVisitsDPUCBVI(DPUCBVI):
    """Defect: P~ and r~ normalised by the noisy visits N^ instead of N~ (eq. 1 prescribes N~): the rows of the P~
    the planner uses sum to anything from 1 to ~10^3, while the release itself is fine."""

    def _estimates(self, counts):
        P, r = private_estimates(counts.transitions, counts.noisy_visits, counts.rewards)
        return P, r, counts.visits


def _small_env():
    return random_mdp(3, 2, 3, np.random.default_rng(0), reward_noise="bernoulli")


def test_planner_normalising_by_noisy_visits_fails_valid_transition():
    env = _small_env()
    spec = AgentSpec(agent_class=NoisyVisitsDPUCBVI, mode="theory")
    checks = {c.id: c for c in assumption_checks(spec, env, K=32, runs=20, seed=0, alpha=0.05)}
    c = checks["assumption.valid_transition"]
    assert c.verdict == "fail", c.reason
    # the release was fine: only the planner's own P~ shows it
    assert c.details["release_violations"] == 0 and c.details["planner_violations"] > 0
    assert c.details["planner_counterexample"]["row sum"] > 1.5


def _halved_privacy_term(monkeypatch):
    """Defect: the bonus's privacy term uses E/2 (the declared constants and E unchanged)."""
    from dpcheck.algorithms.online import ucbvi as agent_module
    orig = agent_module.bernstein_bonus

    def halved(*args, E, **kw):
        return orig(*args, E=np.asarray(E, dtype=float) / 2, **kw)

    monkeypatch.setattr(agent_module, "bernstein_bonus", halved)


def _bonus_checks(K=64, runs=30):
    """assumption_checks as the audit runs them: a theory batch plus a practical batch (rigorous width)."""
    from dpcheck.audits.lib.ucbvi import monitored_run
    env = _small_env()
    practical = monitored_run(AgentSpec(mode="practical"), env, K=K, runs=runs, seed=1)
    checks = assumption_checks(AgentSpec(mode="theory"), env, K=K, runs=runs, seed=0, alpha=0.05,
                               monotone_runs=(practical,))
    return {c.id: c for c in checks}, practical


def test_halved_privacy_term_fails_the_bonus_check(monkeypatch):
    _halved_privacy_term(monkeypatch)
    checks, _ = _bonus_checks()
    c = checks["whitebox.bonus"]
    assert c.verdict == "fail", c.reason
    w = c.details["counterexample"]
    assert w["implied bonus Q~ - r~ - P~V~"] < w["eq. 31 bonus"]


def test_halved_privacy_term_breaks_practical_optimism_softened(monkeypatch):
    """assumption.optimism.practical (audits/dp_ucbvi.py): every practical run loses optimism; practical constants
    carry no guarantee, so the audit reports the miss as INCONCLUSIVE, not FAIL."""
    from dpcheck.audit import Audit
    _halved_privacy_term(monkeypatch)
    env = _small_env()
    spec = AgentSpec(mode="practical")
    from dpcheck.audits.lib.ucbvi import monitored_run
    run = monitored_run(spec, env, K=64, runs=60, seed=1)
    c = optimism_check(spec, env, K=64, runs=60, seed=1, alpha=0.05, run=run)
    assert c.verdict == "fail" and c.measured["failures"] == 60
    assert Audit.soften(c).verdict == "inconclusive"


def test_correct_planner_passes_valid_transition_and_bonus():
    checks, practical = _bonus_checks()
    assert checks["assumption.valid_transition"].verdict == "pass"
    assert checks["assumption.valid_transition"].details["planner_violations"] == 0
    b = checks["whitebox.bonus"]
    assert b.verdict == "pass" and "qualifier" not in b.details, b.reason      # informative: the practical batch
    assert b.measured["cases"] > 100 and b.details["max_abs_error"] < 1e-9
    c = optimism_check(AgentSpec(mode="practical"), _small_env(), K=64, runs=30, seed=1, alpha=0.05, run=practical)
    assert c.measured["failures"] == 0


def test_bonus_check_is_vacuous_where_q_is_saturated():
    from dpcheck.audits.lib.ucbvi import monitored_run
    env = _small_env()
    run = monitored_run(AgentSpec(mode="theory"), env, K=32, runs=10, seed=0)
    b = {c.id: c for c in assumption_checks(AgentSpec(mode="theory"), env, K=32, runs=10, seed=0, alpha=0.05,
                                            run=run)}["whitebox.bonus"]
    assert b.verdict == "pass" and b.details["qualifier"] == "vacuous"


def _engine_configs(privatizer="central", agent_class=None):
    from dpcheck.audits.lib.ucbvi import practical_noise
    spec = AgentSpec(privatizer=privatizer, mode="practical", width_mode="nominal", agent_class=agent_class)
    base = replace(spec, privatizer="none", agent_class=None)
    return [("UCBVI", base), ("DP-UCBVI", practical_noise(spec, 2, 8192, 1.0 if privatizer == "central" else 16.0))]


def _needs_numba():
    from dpcheck.algorithms.online import compiled
    if not compiled.available():
        pytest.skip("numba is not installed")


def _unnoised_compiled_rewards(monkeypatch):
    """Defect (in the compiled engine only): the reward family gets no noise; the numpy engine is untouched."""
    from dpcheck.algorithms.online import compiled
    orig = compiled._State.draw_noise

    def draw_noise(self, n, chunk):
        noise = orig(self, n, chunk)
        if noise.shape[-1] == self.C:
            noise[..., self.HSA + self.HSAS:] = 0.0
        return noise

    monkeypatch.setattr(compiled._State, "draw_noise", draw_noise)


def test_compiled_engine_without_reward_noise_fails_the_engine_check(monkeypatch):
    from dpcheck.audits.lib.ucbvi import engine_check
    _needs_numba()
    _unnoised_compiled_rewards(monkeypatch)
    env = random_mdp(2, 2, 2, np.random.default_rng(7))
    c = engine_check(_engine_configs(), env, K=128, seed=0)
    assert c.verdict == "fail", c.reason
    row = c.details["configurations"][1]
    assert row["noise_compiled"]["rewards"] < 1e-9 < row["noise_numpy"]["rewards"]
    assert c.details["configurations"][0]["differences"] == []          # exact counts: no noise to drop


@pytest.mark.parametrize("privatizer", ["central", "local"])
def test_correct_engines_pass_the_engine_check(privatizer):
    from dpcheck.audits.lib.ucbvi import engine_check
    _needs_numba()
    env = random_mdp(2, 2, 2, np.random.default_rng(7))
    c = engine_check(_engine_configs(privatizer), env, K=128, seed=0)
    assert c.verdict == "pass" and "qualifier" not in c.details, c.reason
    assert c.measured["compared"] == 2


def test_engine_check_is_vacuous_when_nothing_runs_compiled():
    from dpcheck.audits.lib.ucbvi import engine_check
    env = random_mdp(2, 2, 2, np.random.default_rng(7))
    variant = type("Variant", (DPUCBVI,), {})
    c = engine_check(_engine_configs(agent_class=variant)[1:], env, K=16, seed=0)
    assert c.verdict == "pass" and c.details["qualifier"] == "vacuous", c.reason
    assert c.measured["compared"] == 0
