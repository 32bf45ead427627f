"""Planted defects in DP-Nash-VI must be caught by the dp_nash_vi audit's checks (issue #5, item 3).

Each defect is a small test-only subclass of DPNashVI (or a CCE stand-in); the audit code is
unchanged and must turn it into a failing check.
"""
import numpy as np
import pytest

from dpcheck.algorithms.envs.generators import random_game
from dpcheck.algorithms.games.cce import CCESolution, cce_residual, solve_cce
from dpcheck.algorithms.games.dp_nash_vi import DPNashVI
from dpcheck.algorithms.privatizers import CentralPrivatizer, LocalPrivatizer, NoPrivatizer
from dpcheck.audits.lib.nash import assumption_checks, jdp_target
from dpcheck.blackbox import audit


class RawCountBonus(DPNashVI):
    """Defect 1: the bonus divides by the RAW visit counts N instead of the private N~."""

    def _release(self, priv):
        self._raw = np.asarray(priv.true_counts().visits, dtype=float)
        return DPNashVI._release(priv)

    def plan(self, r, P_tilde, N_visits, E, iota, unvisited=None, **kw):
        raw = np.maximum(self._raw.reshape(N_visits.shape), 1e-12)   # N = 0: an (effectively) infinite bonus
        return super().plan(r, P_tilde, raw, E, iota, unvisited, **kw)


class RawKernel(DPNashVI):
    """Defect 1b: the planner's kernel from the RAW transition counts (the bonus stays private)."""

    def plan(self, r, P_tilde, N_visits, *args, **kw):
        true = self.privatizer.true_counts()
        v = np.asarray(true.visits, dtype=float).reshape(N_visits.shape)
        t = np.asarray(true.transitions, dtype=float).reshape(P_tilde.shape)
        raw = np.where(v[..., None] > 0, t / np.maximum(v, 1.0)[..., None], 1.0 / P_tilde.shape[-1])
        return super().plan(r, raw, N_visits, *args, **kw)


class PlusGammaLCB(DPNashVI):
    """Defect 2: the LCB adds the bonus Gamma instead of subtracting it."""

    def lower_q(self, r, PVu, gamma, Gamma, H):
        return np.maximum(r + PVu - gamma + Gamma, 0.0)


def max_player_only_cce(Qb, Qu, H=None, method="auto", **kw):
    """Defect 3's solver: satisfies the max-player's constraints only (puts all mass on a global
    argmax of Qb, from which no row deviation gains) and ignores the min-player's."""
    A, B = Qb.shape[-2:]
    flat = Qb.reshape(Qb.shape[:-2] + (A * B,))
    pi = np.zeros_like(flat)
    np.put_along_axis(pi, flat.argmax(axis=-1)[..., None], 1.0, axis=-1)
    pi = pi.reshape(Qb.shape)
    return CCESolution(pi=pi, residual=np.zeros(Qb.shape[:-2]), tol=1e-8, n_pure=pi.size // (A * B),
                       n_simplex=0, n_highs=0)


class OneSidedCCE(DPNashVI):
    cce = staticmethod(max_player_only_cce)


def by_id(checks):
    return {c.id: c for c in checks}


@pytest.mark.slow
def test_raw_counts_in_the_bonus_are_caught_by_the_jdp_audit():
    make = lambda: CentralPrivatizer(epsilon=1.0)
    res = audit(jdp_target(make, 1.0, algo_cls=RawCountBonus), samples=20_000, seed=1)
    assert res.verdict == "fail" and res.epsilon_lower_bound > 2.0
    # the correct algorithm with the same privatizer and budget is not flagged
    ok = audit(jdp_target(make, 1.0), samples=20_000, seed=1)
    assert ok.verdict != "fail" and ok.epsilon_lower_bound <= 1.0


def test_raw_transitions_in_the_kernel_are_caught_by_the_jdp_audit():
    """Before the scenario's first step was made flat, the first stage game's equilibrium was pure with a margin
    no kernel change crossed: this planner gave exactly the correct algorithm's actions, and the audit passed."""
    make = lambda: CentralPrivatizer(epsilon=1.0)
    res = audit(jdp_target(make, 1.0, algo_cls=RawKernel), samples=20_000, seed=1)
    assert res.verdict == "fail" and res.epsilon_lower_bound > 2.0


@pytest.mark.parametrize("make", [lambda: CentralPrivatizer(epsilon=1.0), lambda: LocalPrivatizer(epsilon=1.0)],
                         ids=["central", "local"])
def test_planners_that_read_raw_counts_fail_the_dataflow_check(make):
    from dpcheck.audits.lib.nash import dataflow_check
    assert dataflow_check(make).verdict == "pass"
    for cls, planned in ((RawKernel, "Vu"), (RawCountBonus, "Qb")):
        c = dataflow_check(make, algo_cls=cls)
        assert c.verdict == "fail" and planned in c.details["changed"], (cls, c.details)


def test_dataflow_cannot_speak_for_an_algorithm_with_hidden_randomness():
    from dpcheck.audits.lib.nash import dataflow_check

    class HiddenNoise(DPNashVI):
        def plan(self, r, P_tilde, N_visits, *args, **kw):
            return super().plan(r + 1e-3 * np.random.default_rng().random(r.shape), P_tilde, N_visits, *args, **kw)
    c = dataflow_check(lambda: CentralPrivatizer(epsilon=1.0), algo_cls=HiddenNoise)
    assert c.verdict == "inconclusive" and "not reproducible" in c.reason


def test_lcb_with_plus_gamma_is_caught_by_the_optimism_check():
    game = random_game(3, 2, 2, 3, np.random.default_rng(0))
    good = by_id(assumption_checks(game, lambda: NoPrivatizer(), runs=20, K=40, rng=np.random.default_rng(1),
                                   mode="practical", C1=2.0, C2=1.0))
    assert good["assumption.optimism"].verdict != "fail"
    bad = by_id(assumption_checks(game, lambda: NoPrivatizer(), runs=20, K=40, rng=np.random.default_rng(1),
                                  algo_cls=PlusGammaLCB))
    assert bad["assumption.optimism"].verdict == "fail"
    assert bad["assumption.optimism"].details["lcb_violations"] > 0


def test_a_smoothed_cce_solver_fails_the_cce_check_where_stage_games_are_not_saturated():
    """The exact CCE mixed with 1% uniform: in theory mode every stage game has Qb = H and Qu = 0, any distribution
    is a CCE, and the check passed it (the audit said PASS overall). That batch is now marked vacuous; the practical
    batch, unsaturated, fails it, unsoftened (the CCE property does not depend on the constants)."""
    import dataclasses

    def smoothed(Qb, Qu, H=None, method="auto", **kw):
        sol = solve_cce(Qb, Qu, H=H, method=method, **kw)
        return dataclasses.replace(sol, pi=0.99 * sol.pi + 0.01 / (Qb.shape[-2] * Qb.shape[-1]))

    class SmoothedCCE(DPNashVI):
        cce = staticmethod(smoothed)
    game = random_game(3, 2, 2, 3, np.random.default_rng(0))

    def cce(mode, cls, wm):
        make = lambda: CentralPrivatizer(epsilon=1.0, beta=0.1, width_mode=wm)
        return by_id(assumption_checks(game, make, runs=40, K=60, rng=np.random.default_rng(1), mode=mode,
                                       algo_cls=cls))["assumption.cce"]
    theory = cce("theory", SmoothedCCE, "rigorous")
    assert theory.verdict == "pass" and theory.details["qualifier"] == "vacuous"
    assert cce("practical", DPNashVI, "nominal").verdict == "pass"
    assert cce("practical", SmoothedCCE, "nominal").verdict == "fail"


def test_cce_ignoring_the_min_player_is_caught():
    rng = np.random.default_rng(2)
    Qb, Qu = rng.uniform(0, 3, (2, 500, 3, 3))
    pi = max_player_only_cce(Qb, Qu).pi
    assert np.mean(cce_residual(pi, Qb, Qu) > 3e-8) > 0.3           # the verification sees it
    assert np.all(cce_residual(solve_cce(Qb, Qu, H=3).pi, Qb, Qu) <= 3e-8)
    game = random_game(3, 2, 2, 3, np.random.default_rng(3))
    checks = by_id(assumption_checks(game, lambda: NoPrivatizer(), runs=10, K=60, rng=np.random.default_rng(4),
                                     mode="practical", algo_cls=OneSidedCCE))
    assert checks["assumption.cce"].verdict == "fail"
