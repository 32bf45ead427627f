"""Ecosystem interop: Gymnasium models in, Gymnasium / PettingZoo-style environments out.

* :func:`from_gymnasium` reads the known model of a Gymnasium env with Discrete spaces (the
  toy_text envs expose ``env.unwrapped.P[s][a] = [(prob, next_state, reward, terminated), ...]``:
  FrozenLake, Taxi, CliffWalking) into a finite-horizon :class:`TabularMDP`.
* :class:`TabularMDPEnv` exposes a TabularMDP as a ``gymnasium.Env``.
* :class:`MarkovGameParallelEnv` exposes a MarkovGame with the PettingZoo ``ParallelEnv`` API
  (dict-per-agent reset/step). PettingZoo is not a dependency: we implement the API's shape
  without importing it, so ``pettingzoo.test.parallel_api_test`` can be run on it where installed.

Gymnasium is imported lazily (it is an optional extra, ``pip install dpcheck[gym]``).
"""
from __future__ import annotations

import numpy as np

from dpcheck.errors import InputError
from dpcheck.algorithms.envs._validate import cumulative
from dpcheck.algorithms.envs.games import MarkovGame
from dpcheck.algorithms.envs.tabular import TabularMDP


def _gym():
    try:
        import gymnasium
    except ImportError:  # pragma: no cover - depends on the installation
        raise InputError("gymnasium is not installed (pip install 'dpcheck[gym]')") from None
    return gymnasium


# ----------------------------------------------------------------------------- Gymnasium -> ours
def from_gymnasium(env, H: int, init=None, name: str | None = None) -> TabularMDP:
    """The finite-horizon TabularMDP (horizon H, stationary kernel) of a Gymnasium env's known model.

    Choices (ours; documented because they change numbers):
    * Mean rewards: r(s, a) = sum_{s'} P(s'|s, a) R(s, a, s') (Gymnasium rewards may depend on s').
    * Rescaling to [0, 1]: r01 = (R - R_min) / (R_max - R_min), with R_min, R_max the extremes of
      every reward in the model *and 0*. The map is affine and every episode has exactly H
      steps, so an H-step return G maps to (G - H R_min) / (R_max - R_min): optimal and
      suboptimal policies keep their order, and value gaps are divided by (R_max - R_min).
    * Termination: a transition flagged ``terminated`` moves to one extra absorbing state
      (index S, added only if the model has such transitions) whose reward is the rescaled 0,
      so "the episode has ended" earns what Gymnasium pays after the end (nothing), and the
      affine correspondence above holds for truncated-at-H returns.
    * The returned MDP carries ``reward_scale = (R_min, R_max - R_min)`` to convert values back.
    * Initial distribution: ``init`` if given, else ``env.unwrapped.initial_state_distrib``.
    """
    gym = _gym()
    obs, act = env.observation_space, env.action_space
    if not isinstance(obs, gym.spaces.Discrete) or not isinstance(act, gym.spaces.Discrete):
        raise InputError(f"from_gymnasium needs Discrete observation and action spaces, got {obs} and {act}")
    model = getattr(env.unwrapped, "P", None)
    if not isinstance(model, dict):
        raise InputError(f"{type(env.unwrapped).__name__} exposes no model env.unwrapped.P "
                         "(a dict P[s][a] = [(prob, next_state, reward, terminated), ...])")
    if isinstance(H, bool) or not isinstance(H, (int, np.integer)) or H < 1:
        raise InputError(f"H must be a positive integer, got {H!r}")
    S, A = int(obs.n), int(act.n)
    s0, a0 = int(obs.start), int(act.start)
    rows = []  # (s, a, s', prob, reward, terminated)
    for s in range(S):
        for a in range(A):
            try:
                outcomes = model[s + s0][a + a0]
            except (KeyError, IndexError, TypeError):
                raise InputError(f"env.unwrapped.P has no entry for state {s + s0}, action {a + a0}") from None
            for prob, nxt, rew, term in outcomes:
                rows.append((s, a, int(nxt) - s0, float(prob), float(rew), bool(term)))
    s_, a_, n_, p_, r_, t_ = (np.array(col) for col in zip(*rows))
    if n_.min() < 0 or n_.max() >= S:
        raise InputError("env.unwrapped.P has next states outside the observation space")
    absorbing = bool(t_.any())
    S_total = S + 1 if absorbing else S
    lo, hi = min(r_.min(), 0.0), max(r_.max(), 0.0)
    scale = hi - lo if hi > lo else 1.0
    P = np.zeros((S_total, A, S_total))
    r = np.zeros((S_total, A))
    np.add.at(P, (s_, a_, np.where(t_, S_total - 1, n_)), p_)
    np.add.at(r, (s_, a_), p_ * (r_ - lo) / scale)
    if absorbing:
        P[S, :, S] = 1.0
        r[S, :] = (0.0 - lo) / scale
    # Gymnasium's listed probabilities are floats like 1/3 that sum to 1 - 1e-16; renormalising
    # keeps our 1e-9 row check meaningful for real errors only.
    sums = P.sum(axis=-1, keepdims=True)
    if np.any(np.abs(sums - 1) > 1e-6):
        bad = np.argwhere(np.abs(sums[..., 0] - 1) > 1e-6)[0]
        raise InputError(f"env.unwrapped.P[{bad[0]}][{bad[1]}] probabilities sum to {sums[tuple(bad)][0]}")
    P /= sums
    r = np.clip(r, 0.0, 1.0)  # removes -1e-17 rounding only: r is an average of values in [0, 1]
    if init is None:
        init = getattr(env.unwrapped, "initial_state_distrib", None)
        if init is None:
            raise InputError("pass init=: the env exposes no initial_state_distrib")
    if not isinstance(init, (int, np.integer)):  # an int is a fixed s_1, passed through
        init = np.asarray(init, dtype=np.float64)
        if init.ndim == 1 and init.shape == (S,) and absorbing:
            init = np.append(init, 0.0)
        if init.ndim == 1 and init.size == S_total and init.sum() > 0:
            init = init / init.sum()  # Gymnasium stores e.g. 1/n floats; same renormalisation as P
    label = name or getattr(getattr(env, "spec", None), "id", None) or type(env.unwrapped).__name__
    mdp = TabularMDP(np.broadcast_to(P, (H,) + P.shape), np.broadcast_to(r, (H,) + r.shape), init,
                     name=str(label))
    # Recorded so reports can quote values in the env's own units: R = lo + scale * r01.
    object.__setattr__(mdp, "reward_scale", (lo, scale))
    return mdp


# ----------------------------------------------------------------------------- ours -> Gymnasium
try:  # the base class must exist at class-creation time; without gymnasium the class refuses to build
    import gymnasium as _gymnasium
    _EnvBase = _gymnasium.Env
except ImportError:  # pragma: no cover - depends on the installation
    _gymnasium = None
    _EnvBase = object


class TabularMDPEnv(_EnvBase):
    """A TabularMDP as a single-agent ``gymnasium.Env``.

    Observation: the state in Discrete(S) (with ``observe_step=True``, the pair (h, s) in
    Tuple(Discrete(H), Discrete(S)) -- the MDP is non-stationary, so an agent that must act
    optimally needs h; the step is always in ``info["h"]``). Action: Discrete(A).
    The episode ends after H steps with ``terminated=True``: the finite-horizon problem is
    over (V_{H+1} = 0, nothing to bootstrap), which is a termination, not a time-limit
    truncation. Randomness: ``self.np_random``, seeded by ``reset(seed=...)``.
    """

    metadata = {"render_modes": []}

    def __init__(self, mdp: TabularMDP, observe_step: bool = False):
        gym = _gym()
        if not isinstance(mdp, TabularMDP):
            raise InputError(f"TabularMDPEnv needs a TabularMDP, got {type(mdp).__name__}")
        self.mdp = mdp
        self.observe_step = bool(observe_step)
        self.action_space = gym.spaces.Discrete(mdp.A)
        if self.observe_step:
            self.observation_space = gym.spaces.Tuple((gym.spaces.Discrete(mdp.H), gym.spaces.Discrete(mdp.S)))
        else:
            self.observation_space = gym.spaces.Discrete(mdp.S)
        self._h = 0
        self._s = 0
        self._done = True

    def _obs(self):
        s = np.int64(self._s)
        # after the last step h = H is not a valid Discrete(H) value; report H - 1 (the episode is over)
        return (np.int64(min(self._h, self.mdp.H - 1)), s) if self.observe_step else s

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._h = 0
        self._s = int(self.mdp.reset(self.np_random, 1)[0])
        self._done = False
        return self._obs(), {"h": 0}

    def step(self, action):
        if self._done:
            raise InputError("step() called on a finished episode; call reset()")
        if not self.action_space.contains(action):
            raise InputError(f"action {action!r} is not in {self.action_space}")
        nxt, rew = self.mdp._step(self._h, np.array([self._s]), np.array([int(action)]), self.np_random)
        self._h += 1
        self._s = int(nxt[0])
        self._done = self._h >= self.mdp.H
        return self._obs(), float(rew[0]), self._done, False, {"h": self._h}


# ----------------------------------------------------------------------------- ours -> PettingZoo shape
class MarkovGameParallelEnv:
    """A MarkovGame with the PettingZoo ``ParallelEnv`` API (without importing PettingZoo).

    Agents "max_player" (actions Discrete(A)) and "min_player" (Discrete(B)) both observe the
    state (Discrete(S)); ``step({"max_player": a, "min_player": b})`` returns per-agent dicts
    (observations, rewards, terminations, truncations, infos) with rewards r_h(s, a, b) and
    -r_h(s, a, b) (zero-sum). After H steps both agents terminate and ``agents`` becomes empty,
    as PettingZoo requires. Randomness: a numpy Generator seeded by ``reset(seed=...)``.
    """

    metadata = {"render_modes": [], "name": "dpcheck_markov_game_v0", "is_parallelizable": True}
    possible_agents = ["max_player", "min_player"]
    render_mode = None

    def __init__(self, game: MarkovGame):
        if not isinstance(game, MarkovGame):
            raise InputError(f"MarkovGameParallelEnv needs a MarkovGame, got {type(game).__name__}")
        gym = _gym()
        self.game = game
        self.agents = []
        self.possible_agents = list(type(self).possible_agents)
        self.observation_spaces = {a: gym.spaces.Discrete(game.S) for a in self.possible_agents}
        self.action_spaces = {"max_player": gym.spaces.Discrete(game.A),
                              "min_player": gym.spaces.Discrete(game.B)}
        self._rng = np.random.default_rng()
        self._h = 0
        self._s = 0

    def observation_space(self, agent):
        return self.observation_spaces[agent]

    def action_space(self, agent):
        return self.action_spaces[agent]

    @property
    def num_agents(self) -> int:
        return len(self.agents)

    @property
    def max_num_agents(self) -> int:
        return len(self.possible_agents)

    def reset(self, seed=None, options=None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        for space in list(self.observation_spaces.values()) + list(self.action_spaces.values()):
            space.seed(None if seed is None else int(self._rng.integers(2**31)))
        self.agents = list(self.possible_agents)
        self._h = 0
        self._s = int(self.game.reset(self._rng, 1)[0])
        obs = {a: np.int64(self._s) for a in self.agents}
        return obs, {a: {"h": 0} for a in self.agents}

    def step(self, actions):
        if not self.agents:
            raise InputError("step() called on a finished episode; call reset()")
        try:
            a, b = int(actions["max_player"]), int(actions["min_player"])
        except (KeyError, TypeError, ValueError):
            raise InputError("actions must be a dict with integer entries for 'max_player' and 'min_player'") from None
        if not (0 <= a < self.game.A and 0 <= b < self.game.B):
            raise InputError(f"actions out of range: max_player {a} (A={self.game.A}), min_player {b} (B={self.game.B})")
        nxt, rew = self.game.step(self._h, np.array([self._s]), np.array([a]), np.array([b]), self._rng)
        self._h += 1
        self._s = int(nxt[0])
        done = self._h >= self.game.H
        agents = self.agents
        obs = {ag: np.int64(self._s) for ag in agents}
        rewards = {"max_player": float(rew[0]), "min_player": -float(rew[0])}
        terminations = {ag: done for ag in agents}
        truncations = {ag: False for ag in agents}
        infos = {ag: {"h": self._h} for ag in agents}
        if done:
            self.agents = []
        return obs, rewards, terminations, truncations, infos

    def state(self):
        return np.int64(self._s)

    def render(self):
        return None

    def close(self):
        pass
