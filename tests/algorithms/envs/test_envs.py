"""TabularMDP / MarkovGame: validation, immutability, batched simulation, instances."""
import numpy as np
import pytest
from scipy import stats

from dpcheck.errors import InputError
from dpcheck.algorithms.envs import (
    MarkovGame, TabularMDP, matching_pennies, random_game, random_mdp, riverswim,
    rock_paper_scissors,
)


def tiny_mdp(**kw):
    P = np.array([[[[0.5, 0.5], [1.0, 0.0]], [[0.0, 1.0], [0.2, 0.8]]]])  # H=1, S=2, A=2
    r = np.array([[[0.1, 0.9], [0.0, 1.0]]])
    return TabularMDP(P, r, np.array([0.3, 0.7]), **kw)


# ------------------------------------------------------------------ validation
@pytest.mark.parametrize("mutate, message", [
    (lambda P, r, d: (P[..., :1], r, d), "shape"),
    (lambda P, r, d: (P[0], r, d), "4 axes"),
    (lambda P, r, d: (P * 1.01, r, d), "sum to 1"),
    (lambda P, r, d: (P.tolist() + [["x"]], r, d), "numeric"),
    (lambda P, r, d: (P, r + 1.0, d), r"\[0, 1\]"),
    (lambda P, r, d: (P, -r, d), r"\[0, 1\]"),
    (lambda P, r, d: (P, r[..., :1], d), "shape"),
    (lambda P, r, d: (P, r, np.array([0.5, 0.6])), "sum to 1"),
    (lambda P, r, d: (P, r, 5), "out of range"),
    (lambda P, r, d: (P, np.full_like(r, np.nan), d), "NaN"),
    (lambda P, r, d: (np.full_like(P, np.nan), r, d), "NaN"),
])
def test_malformed_mdp_raises_input_error(mutate, message):
    m = tiny_mdp()
    P, r, d = mutate(np.array(m.P), np.array(m.r), np.array(m.init))
    with pytest.raises(InputError, match=message):
        TabularMDP(P, r, d)


def test_negative_transition_entry_is_named():
    P = np.array([[[[1.2, -0.2]], [[0.5, 0.5]]]])
    with pytest.raises(InputError, match="negative"):
        TabularMDP(P, np.zeros((1, 2, 1)), 0)


def test_row_sum_tolerance_is_1e_9():
    def kernel(eps):
        return np.array([[[[0.5, 0.5 + eps]], [[1.0, 0.0]]]])
    TabularMDP(kernel(1e-11), np.zeros((1, 2, 1)), 0)
    with pytest.raises(InputError, match="sum to 1"):
        TabularMDP(kernel(1e-8), np.zeros((1, 2, 1)), 0)


def test_unknown_reward_noise():
    with pytest.raises(InputError, match="reward_noise"):
        tiny_mdp(reward_noise="gaussian")


def test_mdp_is_immutable_and_copies_input():
    P = np.array(tiny_mdp().P)
    m = TabularMDP(P, np.zeros((1, 2, 2)), 0)
    P[0, 0, 0] = [0.0, 1.0]
    assert m.P[0, 0, 0, 0] == 0.5
    with pytest.raises(ValueError):
        m.P[0, 0, 0, 0] = 1.0
    with pytest.raises(Exception):
        m.r = np.ones((1, 2, 2))
    assert (m.H, m.S, m.A) == (1, 2, 2)
    assert "H=1" in repr(m)


def test_game_validation():
    g = random_game(2, 2, 3, 2, np.random.default_rng(0))
    with pytest.raises(InputError, match="5 axes"):
        MarkovGame(g.P[0], g.r, 0)
    with pytest.raises(InputError, match=r"\[0, 1\]"):
        MarkovGame(g.P, g.r * 3, 0)
    with pytest.raises(InputError, match="sum to 1"):
        MarkovGame(g.P * 0.5, g.r, 0)
    with pytest.raises(InputError, match="shape"):
        MarkovGame(g.P, g.r[..., :1], 0)


# ------------------------------------------------------------------ simulation
def test_step_frequencies_match_kernel():
    m = tiny_mdp(reward_noise="bernoulli")
    rng = np.random.default_rng(1)
    n = 200_000
    states = np.repeat([0, 1], n // 2)
    actions = np.tile([0, 1], n // 2)
    nxt, rew = m.step(0, states, actions, rng)
    for s in range(2):
        for a in range(2):
            sel = (states == s) & (actions == a)
            counts = np.bincount(nxt[sel], minlength=2)
            p = m.P[0, s, a]
            # zero-probability next states are never drawn
            assert np.all(counts[p == 0] == 0)
            if np.all(p > 0):
                assert stats.chisquare(counts, p * sel.sum()).pvalue > 1e-4
            assert abs(rew[sel].mean() - m.r[0, s, a]) < 5 * np.sqrt(0.25 / sel.sum()) + 1e-12
            assert set(np.unique(rew[sel])) <= {0.0, 1.0}


def test_deterministic_rewards_are_means():
    m = tiny_mdp()
    _, rew = m.step(0, np.array([0, 1, 1]), np.array([1, 0, 1]), np.random.default_rng(0))
    np.testing.assert_array_equal(rew, [0.9, 0.0, 1.0])


def test_reset_follows_init_and_fixed_start():
    m = tiny_mdp()
    s = m.reset(np.random.default_rng(3), 100_000)
    assert s.shape == (100_000,)
    assert abs(s.mean() - 0.7) < 0.01
    assert np.all(riverswim().reset(np.random.default_rng(0), 50) == 0)


def test_step_rejects_bad_input():
    m = tiny_mdp()
    rng = np.random.default_rng(0)
    with pytest.raises(InputError, match="step h"):
        m.step(1, np.array([0]), np.array([0]), rng)
    with pytest.raises(InputError, match="states"):
        m.step(0, np.array([2]), np.array([0]), rng)
    with pytest.raises(InputError, match="same shape"):
        m.step(0, np.array([0, 1]), np.array([0]), rng)
    with pytest.raises(InputError, match="Generator"):
        m.step(0, np.array([0]), np.array([0]), 42)


def test_rollout_shapes_and_reproducibility():
    m = random_mdp(4, 3, 5, np.random.default_rng(0), init="uniform", reward_noise="bernoulli")
    pol = np.random.default_rng(1).integers(0, 3, size=(5, 4))
    t1 = m.rollout(pol, np.random.default_rng(7), runs=64)
    t2 = m.rollout(pol, np.random.default_rng(7), runs=64)
    assert t1.states.shape == (64, 6) and t1.actions.shape == (64, 5) and t1.rewards.shape == (64, 5)
    for a, b in zip(t1, t2):
        np.testing.assert_array_equal(a, b)
    # deterministic policy: actions are the policy's choice in the visited state
    np.testing.assert_array_equal(t1.actions, pol[np.arange(5), t1.states[:, :5]])


def test_rollout_per_run_policies_and_zero_probability_actions():
    m = riverswim(H=5)
    pols = np.zeros((2, 5, 6), dtype=int)
    pols[1] = 1
    t = m.rollout(pols, np.random.default_rng(0))
    assert np.all(t.actions[0] == 0) and np.all(t.actions[1] == 1)
    stoch = np.zeros((5, 6, 2))
    stoch[..., 1] = 1.0  # the zero-probability action must never be drawn
    t = m.rollout(stoch, np.random.default_rng(0), runs=1000)
    assert np.all(t.actions == 1)


def test_rollout_stochastic_action_frequencies():
    m = riverswim(H=1)
    pol = np.zeros((1, 6, 2))
    pol[..., 0], pol[..., 1] = 0.3, 0.7
    t = m.rollout(pol, np.random.default_rng(5), runs=100_000)
    assert abs(t.actions.mean() - 0.7) < 0.006


def test_rollout_rejects_bad_policy():
    m = riverswim(H=3)
    rng = np.random.default_rng(0)
    with pytest.raises(InputError, match="runs is required"):
        m.rollout(np.zeros((3, 6), int), rng)
    with pytest.raises(InputError, match="outside"):
        m.rollout(np.full((3, 6), 2), rng, runs=2)
    with pytest.raises(InputError, match="shape"):
        m.rollout(np.zeros((3, 5), int), rng, runs=2)
    with pytest.raises(InputError, match="sum to 1"):
        m.rollout(np.full((3, 6, 2), 0.6), rng, runs=2)


def test_game_joint_mdp_and_rollout():
    g = random_game(3, 2, 3, 4, np.random.default_rng(2))
    j = g.joint_mdp()
    assert (j.H, j.S, j.A) == (4, 3, 6)
    for a in range(2):
        for b in range(3):
            np.testing.assert_array_equal(j.P[:, :, a * 3 + b], g.P[:, :, a, b])
            np.testing.assert_array_equal(j.r[:, :, a * 3 + b], g.r[:, :, a, b])
    mu = np.random.default_rng(3).integers(0, 2, size=(4, 3))
    nu = np.random.default_rng(4).integers(0, 3, size=(4, 3))
    t = g.rollout((mu, nu), np.random.default_rng(0), runs=50)
    h = np.arange(4)
    np.testing.assert_array_equal(t.actions_max, mu[h, t.states[:, :4]])
    np.testing.assert_array_equal(t.actions_min, nu[h, t.states[:, :4]])
    np.testing.assert_array_equal(t.joint_actions, t.actions_max * 3 + t.actions_min)
    np.testing.assert_array_equal(t.rewards, g.r[h, t.states[:, :4], t.actions_max, t.actions_min])
    nxt, rew = g.step(0, np.array([0, 1]), np.array([1, 0]), np.array([2, 2]), np.random.default_rng(0))
    assert nxt.shape == (2,) and rew[0] == g.r[0, 0, 1, 2]


def test_game_from_mdp_roundtrip():
    m = riverswim(H=4)
    g = MarkovGame.from_mdp(m)
    assert g.B == 1
    np.testing.assert_array_equal(g.joint_mdp().P, m.P)


# ------------------------------------------------------------------ instances
def test_riverswim_definition():
    m = riverswim()
    assert (m.H, m.S, m.A) == (20, 6, 2)
    P = m.P[0]
    np.testing.assert_array_equal(P[:, 0].argmax(axis=1), [0, 0, 1, 2, 3, 4])
    np.testing.assert_allclose(P[2, 1, 1:4], [0.05, 0.60, 0.35])
    np.testing.assert_allclose(P[0, 1, :2], [0.40, 0.60])
    np.testing.assert_allclose(P[5, 1, 4:], [0.40, 0.60])
    assert m.r[0, 0, 0] == 0.005 and m.r[0, 5, 1] == 1.0 and np.count_nonzero(m.r) == 40
    assert np.all(m.P == m.P[0]) and m.init[0] == 1.0


def test_random_generators_are_seeded_and_dirichlet():
    a = random_mdp(3, 2, 4, np.random.default_rng(11))
    b = random_mdp(3, 2, 4, np.random.default_rng(11))
    np.testing.assert_array_equal(a.P, b.P)
    big = random_game(3, 2, 2, 2000, np.random.default_rng(0))
    # Dirichlet(1,1,1) marginal of one coordinate is Beta(1, 2): mean 1/3
    assert abs(big.P[..., 0].mean() - 1 / 3) < 0.01
    assert abs(big.r.mean() - 0.5) < 0.01
    assert stats.kstest(big.P[..., 0].ravel(), stats.beta(1, 2).cdf).pvalue > 1e-4


def test_matrix_games():
    mp, rps = matching_pennies(), rock_paper_scissors()
    assert (mp.H, mp.S, mp.A, mp.B) == (1, 1, 2, 2)
    np.testing.assert_array_equal(mp.r[0, 0], [[1, 0], [0, 1]])
    assert rps.r.min() == 0 and rps.r.max() == 1
    np.testing.assert_allclose(rps.r[0, 0] + rps.r[0, 0].T, 1.0)  # zero-sum symmetric after rescaling


# ------------------------------------------------------------------ scripted users (JDP user trees)
from dpcheck.algorithms.envs.planning import expected_return  # noqa: E402
from dpcheck.algorithms.envs.users import (  # noqa: E402
    FixedTrajectoryUsers, HashedUsers, TableUsers, neighbouring_users, random_table_users,
    users_from_model,
)


def all_histories(A, H):
    import itertools
    return np.array(list(itertools.product(range(A), repeat=H)))


@pytest.mark.parametrize("make", [
    lambda rng: random_table_users(4, 3, 2, 3, rng),
    lambda rng: HashedUsers.random(4, 3, 2, 3, rng),
    lambda rng: HashedUsers.random(4, 3, 2, 3, rng, rewards="binary"),
    lambda rng: users_from_model(random_mdp(3, 2, 3, rng, reward_noise="bernoulli"), 4, rng),
])
def test_users_are_deterministic_trees(make):
    U = make(np.random.default_rng(0))
    hist = all_histories(2, 3)
    users = np.repeat(np.arange(4), len(hist))
    acts = np.tile(hist, (4, 1))
    s1, r1 = U.responses(users, acts)
    s2, r2 = U.responses(users[::-1], acts[::-1])
    # same (user, history) -> same answer, whatever else is in the batch and in which order
    np.testing.assert_array_equal(s1, s2[::-1])
    np.testing.assert_array_equal(r1, r2[::-1])
    assert s1.min() >= 0 and s1.max() < 3 and r1.min() >= 0 and r1.max() <= 1
    # a response depends on the history only through its prefix (a tree, not a lookahead)
    s_pre, r_pre = U.responses(users, acts[:, :2])
    np.testing.assert_array_equal(s_pre, s1[:, :3])
    np.testing.assert_array_equal(r_pre, r1[:, :2])
    # the explicit tree answers exactly as the user does
    T = U.to_table()
    s3, r3 = T.responses(users, acts)
    np.testing.assert_array_equal(s1, s3)
    np.testing.assert_array_equal(r1, r3)
    # rollouts: the user adds no randomness
    pol = np.random.default_rng(1).integers(0, 2, size=(3, 3))
    t1 = U.rollout(pol, np.random.default_rng(1), runs=3, episode=2)
    t2 = U.rollout(pol, np.random.default_rng(99), runs=3, episode=2)
    np.testing.assert_array_equal(t1.states, t2.states)
    np.testing.assert_array_equal(t1.rewards, t2.rewards)


def test_hashed_users_respond_to_actions():
    U = HashedUsers.random(1, 50, 2, 4, np.random.default_rng(0))
    hist = all_histories(2, 4)
    s, _ = U.responses(0, hist)
    # 16 histories, 50 states: distinct histories almost surely give distinct final answers
    assert len({tuple(x) for x in s}) > 8


def test_fixed_trajectory_users_ignore_actions():
    st_ = np.array([[0, 1, 2], [2, 2, 0]])
    rw = np.array([[0.5, 1.0], [0.0, 0.25]])
    U = FixedTrajectoryUsers(2, 3, 4, st_, rw)
    hist = all_histories(4, 2)
    s, r = U.responses(np.ones(len(hist), dtype=int), hist)
    assert np.all(s == st_[1]) and np.all(r == rw[1])
    with pytest.raises(InputError, match="shape"):
        FixedTrajectoryUsers(3, 3, 4, st_, rw)
    with pytest.raises(InputError, match=r"\[0, 1\]"):
        FixedTrajectoryUsers(2, 3, 4, st_, rw + 1)


def test_model_users_behave_like_the_mdp_over_keys():
    m = random_mdp(3, 2, 4, np.random.default_rng(3), init="random", reward_noise="bernoulli")
    K = 100_000
    U = users_from_model(m, K, np.random.default_rng(4))
    pi = np.random.default_rng(5).dirichlet(np.ones(2), size=(4, 3))
    t = U.rollout(pi, np.random.default_rng(6), episode=np.arange(K))
    ret = t.rewards.sum(axis=1)
    assert abs(ret.mean() - expected_return(m, pi)) < 5 * ret.std() / np.sqrt(K)
    counts = np.bincount(t.states[:, 0], minlength=3)
    assert stats.chisquare(counts, m.init * K).pvalue > 1e-4
    sel = (t.states[:, 1] == 1) & (t.actions[:, 1] == 0)
    counts = np.bincount(t.states[sel, 2], minlength=3)
    assert stats.chisquare(counts, m.P[1, 1, 0] * sel.sum()).pvalue > 1e-4
    assert U.mdp is m and U.per_episode


def test_neighbouring_user_sequences_differ_in_exactly_one_user():
    rng = np.random.default_rng(7)
    m = random_mdp(2, 2, 3, rng)
    U = users_from_model(m, 6, rng)
    other = users_from_model(m, 2, rng)
    U_, U2 = neighbouring_users(U, 3, other, j=1)
    assert U_ is U
    np.testing.assert_array_equal(U.differing_users(U2), [3])
    np.testing.assert_array_equal(U.differing_users(U), [])
    # across kinds through the explicit trees
    fixed = FixedTrajectoryUsers(3, 2, 2, np.zeros((1, 4), dtype=int), np.zeros((1, 3))).to_table()
    U3 = U.to_table().replace(0, fixed)
    np.testing.assert_array_equal(U.differing_users(U3), [0])
    with pytest.raises(InputError, match="to_table"):
        U.replace(0, fixed)
    with pytest.raises(InputError):
        U.replace(0, users_from_model(random_mdp(2, 2, 3, rng), 1, rng))
    assert U.select([5, 0]).K == 2


def test_table_users_validation():
    with pytest.raises(InputError, match="next_states"):
        TableUsers(2, 2, 2, np.zeros(1, int), np.zeros((1, 6), int), np.zeros((1, 7)))
    with pytest.raises(InputError, match=r"\[0, 1\]"):
        TableUsers(2, 2, 2, np.zeros(1, int), np.zeros((1, 7), int), np.full((1, 7), 2.0))
    with pytest.raises(InputError, match="too large"):
        random_table_users(10, 2, 4, 12, np.random.default_rng(0))


def test_inverse_cdf_never_lands_on_zero_probability_outcomes_at_the_edges():
    """u = 0 and u -> 1 are the edge draws; zero-probability first/last outcomes must be skipped."""
    from dpcheck.algorithms.envs._validate import cumulative, sample_from_cdf

    class Fixed:
        def __init__(self, u):
            self.u = u

        def random(self, shape):
            return np.full(shape, self.u)

    probs = np.array([[0.0, 0.3, 0.7, 0.0], [1 / 3, 1 / 3, 1 / 3, 0.0]])
    cdf = cumulative(probs)
    np.testing.assert_array_equal(sample_from_cdf(cdf, Fixed(0.0)), [1, 0])
    np.testing.assert_array_equal(sample_from_cdf(cdf, Fixed(np.nextafter(1.0, 0.0))), [2, 2])


def test_pickled_instances_stay_immutable():
    import pickle
    m = riverswim(H=3)
    g = random_game(2, 2, 2, 2, np.random.default_rng(0))
    U = users_from_model(m, 2, np.random.default_rng(0))
    for obj, arr in ((m, "P"), (g, "r"), (U, "keys")):
        copy = pickle.loads(pickle.dumps(obj))
        assert not getattr(copy, arr).flags.writeable
        np.testing.assert_array_equal(getattr(copy, arr), getattr(obj, arr))
