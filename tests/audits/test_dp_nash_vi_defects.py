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


# ---------------------------------------------------------------- mutation hunt: false PASSes made to fail
def _privatizer_checks(make, notion, samples=40_000):
    """lib.nash.privatizer_checks as the audit runs them (--quick sizes), with the plain black-box runner."""
    from dpcheck.audits.lib.nash import privatizer_checks
    from dpcheck.claims import Claim

    def blackbox(target, *, id, samples, claim_source=None):
        res = audit(target, samples=samples, seed=0)
        return res.to_check(id=id, kind="privacy", claim_source=claim_source), res
    claim = Claim(epsilon=1.0, notion=notion, source="Qiao & Wang 2024")
    return by_id(privatizer_checks(make, claim, notion, quick=True, samples=samples, seed=0, blackbox=blackbox))


def raw_where_negative_release(self):
    """Defect (hunt M03b): release() hands the Section 5.1.1 LP the TRUE count wherever N^ < 0 ("a negative count
    carries no information"); the reported N^ (noisy_*) is untouched, so only the planner's view N~ leaks.
    Monkeypatched onto the built-in class (a subclass defined here would be audited as a user's privatizer)."""
    from dpcheck.algorithms.privatizers.base import PrivateCounts
    from dpcheck.algorithms.privatizers.projection import _post_process
    nv, nt, rw = self._noisy_counts()
    pp = _post_process(np.where(nt < 0, self._Ntr, nt), np.where(nv < 0, self._N, nv), self.width, with_value=False)
    return PrivateCounts(visits=pp.visits, transitions=pp.transitions, rewards=rw,
                         noisy_visits=nv, noisy_transitions=nt, width=self.width)


@pytest.mark.parametrize("cls, notion", [(CentralPrivatizer, "JDP"), (LocalPrivatizer, "LDP")],
                         ids=["central", "local"])
def test_raw_counts_fed_to_the_projection_fail_the_planner_view(monkeypatch, cls, notion):
    stream = "privacy.privatizer.blackbox" if notion == "JDP" else "privacy.ldp.blackbox"
    ok = _privatizer_checks(lambda: cls(epsilon=1.0), notion)
    assert ok["privacy.privatizer.planner_view"].verdict == "pass" and ok[stream].verdict == "pass"
    monkeypatch.setattr(cls, "release", raw_where_negative_release)
    bad = _privatizer_checks(lambda: cls(epsilon=1.0), notion)
    assert bad[stream].verdict == "pass"                     # N^ (Central) / the message (Local) is unchanged
    assert bad["privacy.privatizer.planner_view"].verdict == "fail"
    assert bad["privacy.privatizer.planner_view"].measured["epsilon_lower_bound"] > 3.0


def test_a_local_scale_that_drops_H_fails_the_ldp_black_box_at_two_steps(monkeypatch):
    """Defect (hunt M14): the Local privatizer's noise scale drops the factor H (b_l = F / eps, H = 1's); the
    declaration keeps it, so the white box passes; at H = 2 the messages are 2 eps-LDP (at H = 1 they are right)."""
    assert _privatizer_checks(lambda: LocalPrivatizer(epsilon=1.0), "LDP")["privacy.ldp.blackbox"].verdict == "pass"
    monkeypatch.setattr(LocalPrivatizer, "noise_scale", lambda self: self.scale_for(1, self.families))
    assert _privatizer_checks(lambda: LocalPrivatizer(epsilon=1.0), "LDP")["privacy.ldp.blackbox"].verdict == "fail"


def test_a_central_scale_that_drops_H_fails_the_stream_black_box_at_two_steps(monkeypatch):
    """Defect (hunt M01): the tree's node scale drops the factor H. At the default 200,000 samples (at --quick's
    40,000 the bound reaches ~0.9 of the true 2)."""
    monkeypatch.setattr(CentralPrivatizer, "node_scale", lambda self: self.scale_for(1, self.K, self.families))
    bad = _privatizer_checks(lambda: CentralPrivatizer(epsilon=1.0), "JDP", samples=200_000)
    assert bad["privacy.privatizer.blackbox"].verdict == "fail"


def _exact(algo_cls=None, make=lambda: NoPrivatizer(), runs=30, K=120, seed=0):
    """The audit's exact-model batch at --quick sizes (non-private, deterministic transitions, A = 2 != B = 3)."""
    from dpcheck.audits.lib.nash import EXACT_CONSTANTS, exact_model_game
    game = exact_model_game(3, 2, 3, 3, np.random.default_rng(seed))
    return by_id(assumption_checks(game, make, runs=runs, K=K, rng=np.random.default_rng(1), mode="practical",
                                   algo_cls=algo_cls, alpha=0.05 / 32, **EXACT_CONSTANTS))


EXACT_IDS = ("assumption.optimism", "assumption.optimism_correlated", "assumption.certificate",
             "assumption.certificate_chain", "assumption.cce", "whitebox.trajectory_counts")


def test_the_exact_model_checks_pass_informatively_on_the_reference_implementation():
    checks = _exact()
    for i in EXACT_IDS:
        assert checks[i].verdict == "pass" and "qualifier" not in checks[i].details, (i, checks[i].reason)
    frac = checks["assumption.optimism"].details["config"]["informative_fraction"]
    assert frac["ucb (Qb_h < H - h)"] > 0.2 and frac["lcb (Qu_h > 0)"] > 0.2
    assert frac["certificate (Delta_final < H)"] == 1.0
    assert checks["assumption.optimism"].details["config"]["exact_model"]


class PlusGammaInTheLCB(DPNashVI):
    """Defect (hunt M06): the LCB adds gamma (line 8's term) instead of subtracting it. With the audit's theory and
    practical constants every bonus saturates (Qu = 0), and the optimism checks passed vacuously."""

    def lower_q(self, r, PVu, gamma, Gamma, H):
        return np.maximum(r + PVu + gamma - Gamma, 0.0)


def test_plus_gamma_in_the_lcb_fails_the_exact_model_optimism_check():
    c = _exact(PlusGammaInTheLCB)["assumption.optimism"]
    assert c.verdict == "fail" and c.details["lcb_violations"] > 0 and c.details["ucb_violations"] == 0


class OutputsTheLastPolicy(DPNashVI):
    """Defect (hunt M12b): pi^out is the last episode's policy, not the certificate's argmin (Delta_final kept)."""

    def run(self, game, K, rng, runs=1, **kw):
        res = super().run(game, K, rng, runs=runs, **kw)
        res.k_out = np.full(runs, K - 1)
        res.mu_out, res.nu_out = res.mu[:, -1].copy(), res.nu[:, -1].copy()
        return res


def test_outputting_the_last_policy_fails_the_certificate_chain():
    c = _exact(OutputsTheLastPolicy)["assumption.certificate_chain"]
    assert c.verdict == "fail" and c.details["wrong_k_out"] > 0


class LastMinimiser(DPNashVI):
    """pi^out at the LAST minimiser of the certificates (<= instead of Algorithm 1's strict <): in theory mode every
    certificate is H, and a check that asked only for "a minimiser" passed it."""

    def run(self, game, K, rng, runs=1, **kw):
        res = super().run(game, K, rng, runs=runs, **kw)
        ar = np.arange(runs)
        res.k_out = K - 1 - np.argmin(res.certificate[:, ::-1], axis=1)
        pi = res.pi[ar, res.k_out]
        res.mu_out, res.nu_out = pi.sum(axis=-1), pi.sum(axis=-2)
        return res


def test_the_certificate_chain_asks_for_the_earliest_minimiser():
    game = random_game(3, 2, 2, 3, np.random.default_rng(0))
    make = lambda: CentralPrivatizer(epsilon=1.0)
    c = by_id(assumption_checks(game, make, runs=20, K=20, rng=np.random.default_rng(1), algo_cls=LastMinimiser))
    assert c["assumption.certificate_chain"].verdict == "fail"
    ok = by_id(assumption_checks(game, make, runs=20, K=20, rng=np.random.default_rng(1)))
    assert ok["assumption.certificate_chain"].verdict == "pass"


def swapped_encoding(A, B):
    """Defect (hunt M13): the joint action reaches the privatizer as a A + b instead of a B + b (planted on the
    privatizer's side of the same call: what it tallies is what the algorithm's line 19 would feed it)."""

    class SwappedEncoding(NoPrivatizer):
        def observe(self, states, actions, rewards):
            a, b = np.divmod(np.asarray(actions), B)
            return super().observe(states, a * A + b, rewards)
    return SwappedEncoding


def test_a_joint_action_encoding_that_confuses_A_and_B_fails_the_trajectory_counts():
    c = _exact(make=swapped_encoding(2, 3))["whitebox.trajectory_counts"]
    assert c.verdict == "fail" and c.measured["violations"] == 30
    # on a game with A = B the same defect is the identity: why the exact batch's game has A != B
    game = random_game(2, 2, 2, 2, np.random.default_rng(0))
    same = by_id(assumption_checks(game, swapped_encoding(2, 2), runs=5, K=10, rng=np.random.default_rng(1)))
    assert same["whitebox.trajectory_counts"].verdict == "pass"
