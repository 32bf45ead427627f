"""Gymnasium models in (FrozenLake, Taxi, CliffWalking), Gymnasium / PettingZoo-style envs out."""
import warnings

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")
from gymnasium.utils.env_checker import check_env  # noqa: E402

from dpcheck.errors import InputError  # noqa: E402
from dpcheck.algorithms.envs import (  # noqa: E402
    greedy, matching_pennies, optimal_values, policy_values, random_game, riverswim,
)
from dpcheck.algorithms.envs.gym_interop import (  # noqa: E402
    MarkovGameParallelEnv, TabularMDPEnv, from_gymnasium,
)


def make(name, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return gym.make(name, **kw)


def play_in_gym(env, policy, H, seed):
    """Return of one H-step episode in the Gymnasium env itself (0 reward after termination)."""
    s, _ = env.reset(seed=seed)
    total = 0.0
    for h in range(H):
        s, r, term, trunc, _ = env.step(int(policy[h, s]))
        total += r
        if term:
            break
    return total


@pytest.mark.parametrize("name", ["FrozenLake-v1", "Taxi-v4", "CliffWalking-v1"])
def test_from_gymnasium_builds_valid_mdps(name):
    env = make(name)
    m = from_gymnasium(env, H=5)  # Taxi at H=5 is already (5, 501, 6, 501): keep tests light
    n_obs, n_act = env.observation_space.n, env.action_space.n
    assert m.S in (n_obs, n_obs + 1) and m.A == n_act and m.H == 5
    assert m.r.min() >= 0 and m.r.max() <= 1
    lo, scale = m.reward_scale
    assert lo <= 0 and scale > 0


def test_cliffwalking_optimal_return_is_the_shortest_safe_path():
    env = make("CliffWalking-v1")
    H = 20
    m = from_gymnasium(env, H=H)
    Q, V = optimal_values(m)
    lo, scale = m.reward_scale
    # affine rescaling: G = H * lo + scale * V01; the optimal path along the cliff edge is 13 steps of -1
    assert H * lo + scale * (V[0] @ m.init) == pytest.approx(-13.0)
    # and the greedy policy achieves exactly that in Gymnasium's own simulator (deterministic env)
    pi = greedy(Q)
    assert play_in_gym(env, pi[:, :48], H, seed=0) == -13.0


def test_frozenlake_values_match_gymnasium_simulation():
    env = make("FrozenLake-v1")
    H = 15
    m = from_gymnasium(env, H=H)
    pi = greedy(optimal_values(m)[0])[:, :16]
    _, V = policy_values(m, greedy(optimal_values(m)[0]))
    success = V[0] @ m.init  # lo = 0, scale = 1: the value is the success probability within H steps
    returns = np.array([play_in_gym(env, pi, H, seed=i) for i in range(1500)])
    se = np.sqrt(success * (1 - success) / len(returns))
    assert abs(returns.mean() - success) < 5 * se


def test_from_gymnasium_rejects_non_discrete_and_modelless_envs():
    with pytest.raises(InputError, match="Discrete"):
        from_gymnasium(make("CartPole-v1"), H=5)

    class NoModel(gym.Env):
        observation_space = gym.spaces.Discrete(2)
        action_space = gym.spaces.Discrete(2)
    with pytest.raises(InputError, match="model"):
        from_gymnasium(NoModel(), H=5)
    with pytest.raises(InputError, match="H"):
        from_gymnasium(make("FrozenLake-v1"), H=0)


def test_from_gymnasium_init_override():
    m = from_gymnasium(make("CliffWalking-v1"), H=3, init=0)
    assert m.init[0] == 1.0
    with pytest.raises(InputError, match="init"):
        from_gymnasium(make("CliffWalking-v1"), H=3, init=np.ones(5))


def test_tabular_mdp_env_passes_gymnasium_checker():
    for observe_step in (False, True):
        env = TabularMDPEnv(riverswim(H=5), observe_step=observe_step)
        check_env(env, skip_render_check=True)


def test_tabular_mdp_env_episode_and_seeding():
    env = TabularMDPEnv(riverswim(H=4, reward_noise="bernoulli"))
    traj = []
    for _ in range(2):
        obs, info = env.reset(seed=3)
        assert obs == 0 and info["h"] == 0
        steps = [env.step(1) for _ in range(4)]
        assert [s[2] for s in steps] == [False, False, False, True]
        traj.append([(int(s[0]), s[1]) for s in steps])
    assert traj[0] == traj[1]
    with pytest.raises(InputError, match="reset"):
        env.step(0)


def test_markov_game_parallel_env_api():
    game = random_game(3, 2, 3, 4, np.random.default_rng(0))
    env = MarkovGameParallelEnv(game)
    assert env.possible_agents == ["max_player", "min_player"]
    assert env.action_space("min_player").n == 3 and env.observation_space("max_player").n == 3
    runs = []
    for _ in range(2):
        obs, infos = env.reset(seed=11)
        assert set(obs) == set(env.agents) == set(env.possible_agents) and env.num_agents == 2
        log = []
        s_prev = int(obs["max_player"])
        while env.agents:
            acts = {ag: env.action_space(ag).sample() for ag in env.agents}
            obs, rew, term, trunc, infos = env.step(acts)
            assert all(env.observation_space(ag).contains(o) for ag, o in obs.items())
            h = infos["max_player"]["h"] - 1
            assert rew["max_player"] == game.r[h, s_prev, acts["max_player"], acts["min_player"]]
            assert rew["min_player"] == -rew["max_player"]
            s_prev = int(obs["max_player"])
            log.append((s_prev, int(acts["max_player"]), int(acts["min_player"])))
        assert len(log) == game.H and all(term.values()) and env.num_agents == 0
        runs.append(log)
    assert runs[0] == runs[1]  # reset(seed=...) fixes the episode, action sampling included
    with pytest.raises(InputError, match="reset"):
        env.step({"max_player": 0, "min_player": 0})


def test_parallel_env_rewards_are_the_game_rewards():
    env = MarkovGameParallelEnv(matching_pennies())
    env.reset(seed=0)
    _, rew, term, _, _ = env.step({"max_player": 1, "min_player": 1})
    assert rew == {"max_player": 1.0, "min_player": -1.0} and all(term.values())
    env.reset(seed=0)
    with pytest.raises(InputError, match="out of range"):
        env.step({"max_player": 2, "min_player": 0})
