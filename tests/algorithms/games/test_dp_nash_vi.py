"""DP-Nash-VI core (Qiao & Wang 2024, Algorithm 1; Lemmas B.7-B.8, Theorems 4.1-4.2)."""
import numpy as np
import pytest

from dpcheck.algorithms.envs.games import MarkovGame
from dpcheck.algorithms.envs.generators import random_game, matching_pennies
from dpcheck.algorithms.envs.game_planning import best_response_values, correlated_policy_values, duality_gap
from dpcheck.algorithms.games.cce import cce_residual
from dpcheck.algorithms.games.dp_nash_vi import DPNashVI, confidence_log
from dpcheck.errors import InputError, MechanismError


class _Counts:
    def __init__(self, visits, transitions):
        self.visits, self.transitions = visits, transitions


class ExactCounts:
    """Test double for the CountPrivatizer interface: true counts, optionally shifted by a width E.

    With E > 0 it releases N~(s,a,s') = N + E/(2S), N~(s,a) = N + E/2: what the post-processing of
    noise-free counts gives (Section 5.3), so Assumption 3.1 holds with certainty.
    """

    def __init__(self, E=0.0):
        self.E = E

    def start(self, runs, H, S, A, K, rng, rewards=True):
        assert rewards is False  # games: known rewards
        self.S = S
        self.n = np.zeros((runs, H, S, A))
        self.m = np.zeros((runs, H, S, A, S))
        self.width = self.E

    def observe(self, states, actions, rewards):
        runs, H = actions.shape
        r = np.arange(runs)[:, None]
        h = np.arange(H)[None, :]
        np.add.at(self.n, (r, h, states[:, :-1], actions), 1)
        np.add.at(self.m, (r, h, states[:, :-1], actions, states[:, 1:]), 1)

    def release(self):
        return _Counts(self.n + self.E / 2, self.m + self.E / (2 * self.S))

    def true_counts(self):
        return _Counts(self.n.copy(), self.m.copy())


def t3(seed=0):
    return random_game(3, 2, 2, 3, np.random.default_rng(seed))


def test_nonprivate_runs_and_records_shapes():
    from dpcheck.audits.lib.tabular import CountAssumptionMonitor
    game = t3()
    # Assumption 3.1 is the checker's business (release_hook), not the algorithm's: exact counts, zero error
    mon = CountAssumptionMonitor(4, 0.0, has_rewards=False, source="test")
    res = DPNashVI(ExactCounts(), mode="practical", record_values=True).run(
        game, 30, np.random.default_rng(1), runs=4, release_hook=lambda c, p: mon.update(c, p.true_counts()))
    assert res.mu.shape == (4, 30, 3, 3, 2) and res.nu.shape == (4, 30, 3, 3, 2)
    assert res.Qb.shape == (4, 30, 3, 3, 2, 2) and res.Vb.shape == (4, 30, 4, 3)
    assert np.allclose(res.mu.sum(-1), 1) and np.allclose(res.pi.sum((-1, -2)), 1)
    # first episode: nothing visited -> Qb = H, Qu = 0 (non-private convention)
    assert np.all(res.Qb[:, 0] == 3) and np.all(res.Qu[:, 0] == 0) and res.vacuous[:, 0].all()
    assert mon.releases == 30 and np.all(mon.error_ratio == 0) and np.all(mon.sum_violations == 0)
    assert not hasattr(res, "count_error") and not hasattr(res, "good_event")   # no duplicate in the algorithm
    assert res.config["calibration"] is None and res.config["mode"] == "practical"


def test_every_stage_policy_is_a_cce_and_values_are_ordered():
    # the CCE property: both constraint families, 0 <= Vu <= Vb <= H, Vb = <pi, Qb>
    game = t3(2)
    res = DPNashVI(ExactCounts(), mode="practical", record_values=True).run(game, 60, np.random.default_rng(3), runs=2)
    H = game.H
    assert np.all(cce_residual(res.pi, res.Qb, res.Qu) <= 1e-8 * H)
    assert np.all(res.Vu >= 0) and np.all(res.Vb <= H) and np.all(res.Vu <= res.Vb + 1e-12)
    assert np.allclose(res.Vb[..., :H, :], (res.pi * res.Qb).sum((-1, -2)))
    assert np.all(res.Qu <= res.Qb)


def test_ucb_lcb_bracket_best_responses_with_certain_counts():
    # Lemmas B.7-B.8 and Theorem 4.1 on the good event (the test double makes it certain) with the theory constants
    # and with the practical constants at a small E (where the checks are not vacuous).
    game = t3(4)
    for algo in [DPNashVI(ExactCounts(E=1.0), mode="theory", record_values=True),
                 DPNashVI(ExactCounts(E=1.0), mode="practical", C1=2.0, C2=1.0, record_values=True)]:
        res = algo.run(game, 40, np.random.default_rng(5), runs=2)
        br = best_response_values(game, res.mu, res.nu)
        tol = 1e-9
        assert np.all(res.Qb >= br.Q_dagger_nu - tol)
        assert np.all(br.Q_mu_dagger >= res.Qu - tol)
        assert np.all(res.Vb[..., :game.H, :] >= br.V_dagger_nu[..., :game.H, :] - tol)
        assert np.all(br.V_mu_dagger[..., :game.H, :] >= res.Vu[..., :game.H, :] - tol)
        gap = duality_gap(game, res.mu, res.nu)
        assert np.all(gap <= res.certificate + tol)
        _, V_pi = correlated_policy_values(game, res.pi)
        assert np.all(V_pi[..., :game.H, :] <= res.Vb[..., :game.H, :] + tol)
        assert np.all(V_pi[..., :game.H, :] >= res.Vu[..., :game.H, :] - tol)


def test_theory_mode_is_vacuous_at_small_k():
    res = DPNashVI(ExactCounts(E=5.0), mode="theory").run(t3(), 20, np.random.default_rng(0))
    assert res.vacuous.all()
    assert np.allclose(res.certificate, 3.0) and res.delta[0] == 3.0 and res.k_out[0] == 0


def test_output_policy_is_the_earliest_minimiser_and_certificate_bounds_its_gap():
    game = t3(6)
    res = DPNashVI(ExactCounts(), mode="practical", record_values=True).run(game, 200, np.random.default_rng(7), runs=3)
    for i in range(3):
        k = res.k_out[i]
        assert res.delta[i] == res.certificate[i].min()
        assert k == np.flatnonzero(res.certificate[i] == res.certificate[i].min())[0]
        assert np.allclose(res.mu_out[i], res.mu[i, k]) and np.allclose(res.nu_out[i], res.nu[i, k])
    # Theorem 4.2: Delta_final <= mean certificate; the true gap of the output <= Delta (good event is certain)
    assert np.all(res.delta <= res.certificate.mean(axis=1) + 1e-12)
    assert np.all(duality_gap(game, res.mu_out, res.nu_out) <= res.delta + 1e-9)


@pytest.mark.slow
def test_nonprivate_learning_drives_the_gap_down():
    game = t3(8)
    res = DPNashVI(ExactCounts(), mode="practical").run(game, 1500, np.random.default_rng(9), runs=2)
    gaps = duality_gap(game, res.mu, res.nu)              # (runs, K)
    assert gaps[:, -200:].mean() < 0.5 * gaps[:, :50].mean()
    assert np.all(gaps >= -1e-12)


def test_b_equals_one_plays_greedy_on_the_ucb():
    mdp_game = random_game(3, 3, 1, 3, np.random.default_rng(10))
    res = DPNashVI(ExactCounts(), mode="practical", record_values=True).run(mdp_game, 50, np.random.default_rng(11))
    pi = res.pi[..., 0]                                   # (runs, K, H, S, A)
    greedy = res.Qb[..., 0].argmax(axis=-1)
    assert np.array_equal(pi.argmax(axis=-1), greedy) and np.all(pi.max(axis=-1) == 1.0)
    assert np.all(res.actions_min == 0)


def test_joint_sampling_follows_pi():
    # matching pennies: the CCE is uniform over the 4 profiles once Qb = Qu = r (E = 0 never happens,
    # so check the correlated frequencies of the deployed joint actions against pi of each episode)
    game = matching_pennies()
    res = DPNashVI(ExactCounts(), mode="practical", record_values=True).run(game, 400, np.random.default_rng(12), runs=5)
    j = res.actions_max[..., 0] * 2 + res.actions_min[..., 0]
    p = res.pi[:, :, 0, 0].reshape(5, 400, 4)
    expected = p.sum(axis=(0, 1))
    observed = np.bincount(j.ravel(), minlength=4)
    # chi-square-style tolerance: 5 sigma for 2000 draws
    assert np.all(np.abs(observed - expected) <= 5 * np.sqrt(expected + 1))


def test_reproducible_and_streams_are_separate():
    game = t3()
    a = DPNashVI(ExactCounts(), mode="practical").run(game, 50, np.random.default_rng(13), runs=2)
    b = DPNashVI(ExactCounts(), mode="practical").run(game, 50, np.random.default_rng(13), runs=2)
    assert np.array_equal(a.states, b.states) and np.array_equal(a.mu, b.mu)
    c = DPNashVI(ExactCounts(), mode="practical").run(game, 50, np.random.default_rng(14), runs=2)
    assert not np.array_equal(a.states, c.states)


def test_iota_and_constants():
    assert np.isclose(confidence_log(3, 3, 2, 2, 100, 0.1), np.log(30 * 3 * 3 * 2 * 2 * 100 / 0.1))
    algo = DPNashVI(mode="theory")
    assert (algo.C1, algo.C2) == (2.0, 10.0)


@pytest.mark.parametrize("kwargs", [{"mode": "fast"}, {"beta": 0.0}, {"beta": 1.5}, {"C1": -1.0}])
def test_bad_configuration_raises(kwargs):
    with pytest.raises(InputError):
        DPNashVI(ExactCounts(), **kwargs)


def test_bad_run_arguments_raise():
    algo = DPNashVI(ExactCounts())
    with pytest.raises(InputError):
        algo.run(t3(), 0, np.random.default_rng(0))
    with pytest.raises(InputError):
        algo.run(t3(), 5, 123)
    with pytest.raises(InputError):
        algo.run("not a game", 5, np.random.default_rng(0))


def test_misbehaving_privatizer_is_a_mechanism_error():
    class Broken(ExactCounts):
        def release(self):
            c = super().release()
            c.transitions = c.transitions * 0.0
            return c
    with pytest.raises(MechanismError):
        DPNashVI(Broken(E=2.0)).run(t3(), 3, np.random.default_rng(0))


def test_bad_input_raised_inside_the_privatizer_stays_input_error():
    """A privatizer that rejects its input (InputError) is bad input, not a misbehaving mechanism: the
    algorithm's guard used to rewrap it as MechanismError("privatizer failed ...")."""
    class Refuses(ExactCounts):
        def observe(self, states, actions, rewards):
            raise InputError("states must lie in [0, S)")
    with pytest.raises(InputError):
        DPNashVI(Refuses(E=2.0)).run(t3(), 3, np.random.default_rng(0))
    class Raises(ExactCounts):
        def observe(self, states, actions, rewards):
            raise RuntimeError("boom")
    with pytest.raises(MechanismError, match="failed in observe"):
        DPNashVI(Raises(E=2.0)).run(t3(), 3, np.random.default_rng(0))


def test_release_hook_sees_every_release_and_does_not_change_the_run():
    from dpcheck.algorithms.envs.generators import random_game
    from dpcheck.algorithms.games.dp_nash_vi import DPNashVI
    from dpcheck.algorithms.privatizers import CentralPrivatizer

    game = random_game(2, 2, 2, 2, np.random.default_rng(0))
    seen = []
    hook = lambda counts, priv: seen.append((np.asarray(counts.visits).shape, priv.true_counts().visits.sum()))
    res = DPNashVI(CentralPrivatizer(epsilon=1.0), mode="practical").run(
        game, 5, np.random.default_rng(1), runs=3, release_hook=hook)
    # one call per episode, before planning: the k-th release holds k episodes of H steps per run
    assert [n for _, n in seen] == [3 * game.H * k for k in range(5)]
    assert seen[0][0][0] == 3
    # the hook does not change what the algorithm does
    ref = DPNashVI(CentralPrivatizer(epsilon=1.0), mode="practical").run(game, 5, np.random.default_rng(1), runs=3)
    assert np.array_equal(ref.actions_max, res.actions_max) and np.allclose(ref.mu, res.mu)


def test_direct_kernel_sampling_matches_the_validated_step_path():
    """run() samples a MarkovGame's transitions from its kernel CDF directly (speed); a game seen only
    through reset/step must give the very same trajectories from the same seed."""
    from dpcheck.algorithms.privatizers import NoPrivatizer

    game = random_game(3, 2, 2, 3, np.random.default_rng(5))

    class Protocol:
        H, S, A, B, r, init = game.H, game.S, game.A, game.B, game.r, game.init

        def reset(self, rng, runs):
            return game.reset(rng, runs)

        def step(self, h, s, a, b, rng):
            return game.step(h, s, a, b, rng)

    fast = DPNashVI(NoPrivatizer(), mode="practical").run(game, 40, np.random.default_rng(2), runs=4)
    slow = DPNashVI(NoPrivatizer(), mode="practical").run(Protocol(), 40, np.random.default_rng(2), runs=4)
    assert np.array_equal(fast.states, slow.states) and np.array_equal(fast.actions_min, slow.actions_min)
