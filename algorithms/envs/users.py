"""Scripted users: the JDP "user tree" of Qiao & Wang 2023, Section 2.2 and Qiao & Wang 2024, Section 2.2.

Following Vietri et al. (2020), a user is a depth-H response tree: for every sequence of actions
(a_1, ..., a_h) the agent might send her, the tree fixes the reward r_h she reports and the next
state s_{h+1}; her first state s_1 is fixed too. A user sequence U = (u_1, ..., u_K) is therefore
a fixed object, and when an algorithm is run against U **the algorithm is the only source of
randomness**. That is what a JDP audit needs:

    U  = users_from_model(mdp, K, rng_users)           # any fixed users
    U' = U.replace(k, other_users, j)                  # neighbours: differ in user k only
    mechanism(U, rng, size) = actions sent to users != k in `size` independent runs of the
                              algorithm on U (runs axis = samples), i.e. M_{-k}(U) of Def. 2.2

and the black-box auditor compares the distributions of M_{-k}(U) and M_{-k}(U') with fresh
algorithm randomness only. For games (Qiao & Wang 2024, Section 2.2) a user *pair* answers joint actions
j = a * B + b: build the users on ``game.joint_mdp()`` and
hand them to DPNashVI wrapped in :class:`UserPairs` (the per-episode game protocol).

Three kinds, all batched over runs (each run faces one user per episode; the Python loop is over
the H steps only):
  * :class:`TableUsers`  -- the explicit tree (K, 1 + A + ... + A^H) for tiny instances;
  * :class:`HashedUsers` -- a deterministic pseudo-random tree from a per-user 64-bit key
                            (splitmix64 of the action history): any H, no memory;
  * :class:`FixedTrajectoryUsers` -- the trivial user who reports the same trajectory whatever
                            the actions;
plus :func:`users_from_model`: hashed users whose responses are draws from a TabularMDP, sampled
lazily (the hash of the history supplies the uniform for an inverse-CDF draw), so over the choice
of keys each user behaves exactly like an episode of the MDP, while each single user is a fixed
tree. These users expose ``mdp`` so that algorithms can compute exact regret against the model.

Interface used by the online algorithms: ``H, S, A, K``, ``per_episode = True``,
``rollout(policy, rng, episode=k)`` -> Trajectories (states, actions, rewards).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace as dc_replace
from typing import ClassVar

import numpy as np

from dpcheck.errors import InputError
from dpcheck.algorithms.envs._validate import (
    ReadOnlyArrays,
    as_index_array, as_policy, check_rng, check_runs, cumulative, sample_from_cdf,
)
from dpcheck.algorithms.envs.tabular import TabularMDP, Trajectories

_MAX_TABLE_NODES = 10_000_000


# ----------------------------------------------------------------------------- hashing
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser (Steele, Lea & Flood 2014), elementwise on uint64 (wrapping arithmetic)."""
    x = np.asarray(x, dtype=np.uint64)
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * _M1
        x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


def _uniform(x: np.ndarray, salt: int) -> np.ndarray:
    """A uniform on [0, 1) from a 64-bit hash and a salt (top 53 bits, like numpy's doubles)."""
    with np.errstate(over="ignore"):
        h = _mix(x ^ (np.uint64(salt) * _GOLDEN))
    return (h >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def _extend(history_hash: np.ndarray, h: int, actions: np.ndarray) -> np.ndarray:
    """Hash of the history (a_1..a_h) -> hash of (a_1..a_{h+1}); h enters so equal suffixes differ."""
    with np.errstate(over="ignore"):
        token = (actions.astype(np.uint64) + np.uint64(1)) * _GOLDEN + np.uint64(h) * _M1
    return _mix(history_hash ^ token)


def _check_sizes(H, S, A):
    for name, v in (("H", H), ("S", S), ("A", A)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise InputError(f"{name} must be a positive integer, got {v!r}")
    return int(H), int(S), int(A)


# ----------------------------------------------------------------------------- base class
@dataclass(frozen=True, eq=False)
class ScriptedUsers(ReadOnlyArrays):
    """A batch of K users, each a deterministic response function of (h, own action history).

    Subclasses store per-user arrays with the user axis first (names in ``_per_user``) and
    implement ``_start(users) -> (s_1, memo)`` and ``_advance(h, users, memo, states, actions)
    -> (next_states, rewards, memo)``, where ``memo`` (runs,) summarises the history so far.
    Steps are 0-based: responding at step h means reporting r_h and s_{h+1} of the paper's h+1.
    """

    H: int
    S: int
    A: int
    per_episode: ClassVar[bool] = True
    _per_user: ClassVar[tuple[str, ...]] = ()

    @property
    def K(self) -> int:
        return len(getattr(self, self._per_user[0]))

    def __len__(self) -> int:
        return self.K

    def __repr__(self) -> str:
        return f"{type(self).__name__}(K={self.K}, H={self.H}, S={self.S}, A={self.A})"

    # -- to be provided by subclasses
    def _start(self, users):
        raise NotImplementedError

    def _advance(self, h, users, memo, states, actions):
        raise NotImplementedError

    # -- public, vectorised
    def _users(self, users, n=None) -> np.ndarray:
        u = as_index_array("users", users, self.K)
        if u.ndim == 0:
            u = np.full(1 if n is None else n, int(u))
        if u.ndim != 1 or (n is not None and u.shape != (n,)):
            raise InputError(f"users must be an int or a ({n if n is not None else 'runs'},) array, got shape {u.shape}")
        return u

    def responses(self, users, actions) -> tuple[np.ndarray, np.ndarray]:
        """What each user reports along an action history.

        users (n,) int (or one int), actions (n, L) int with L <= H: the actions a_1..a_L sent to
        user users[i] in run i. Returns states (n, L+1) = s_1..s_{L+1} and rewards (n, L).
        """
        actions = np.asarray(actions)
        if actions.ndim != 2 or actions.shape[1] > self.H:
            raise InputError(f"actions must have shape (n, L) with L <= H = {self.H}, got {actions.shape}")
        actions = as_index_array("actions", actions, self.A)
        n, L = actions.shape
        u = self._users(users, n)
        states = np.empty((n, L + 1), dtype=np.int64)
        rewards = np.empty((n, L), dtype=np.float64)
        s, memo = self._start(u)
        states[:, 0] = s
        for h in range(L):
            s, rewards[:, h], memo = self._advance(h, u, memo, s, actions[:, h])
            states[:, h + 1] = s
        return states, rewards

    def rollout(self, policy, rng: np.random.Generator, runs: int | None = None, *,
                episode=0) -> Trajectories:
        """Run ``policy`` against user ``episode`` (an int, or (runs,) users, one per run).

        policy as in :meth:`TabularMDP.rollout`: (H, S) / (H, S, A) shared or with a leading run
        axis. ``rng`` is used only to draw actions from a stochastic policy: the user adds no
        randomness.
        """
        check_rng(rng)
        pol, deterministic = as_policy(policy, self.H, self.S, self.A)
        if runs is None and pol.ndim == (2 if deterministic else 3) and np.ndim(episode) == 1:
            runs = np.size(episode)
        runs = TabularMDP._runs_for(pol, deterministic, runs)
        pol = TabularMDP._per_run(pol, deterministic, runs)
        u = self._users(episode, runs)
        states = np.empty((runs, self.H + 1), dtype=np.int64)
        actions = np.empty((runs, self.H), dtype=np.int64)
        rewards = np.empty((runs, self.H), dtype=np.float64)
        s, memo = self._start(u)
        states[:, 0] = s
        run_idx = np.arange(runs)
        for h in range(self.H):
            if deterministic:
                a = pol[run_idx, h, s]
            else:
                a = sample_from_cdf(cumulative(pol[run_idx, h, s]), rng)
            s, rewards[:, h], memo = self._advance(h, u, memo, s, a)
            actions[:, h] = a
            states[:, h + 1] = s
        return Trajectories(states, actions, rewards)

    # -- neighbouring sequences
    def select(self, indices) -> "ScriptedUsers":
        """The users at ``indices`` (in that order), as a new sequence of the same kind."""
        idx = as_index_array("indices", np.atleast_1d(indices), self.K)
        return dc_replace(self, **{f: _frozen(getattr(self, f)[idx]) for f in self._per_user})

    def replace(self, k: int, other: "ScriptedUsers", j: int = 0) -> "ScriptedUsers":
        """U' = U with user k replaced by user j of ``other``: a neighbouring sequence (Def. 2.2).

        ``other`` must be of the same kind and sizes; to replace a user by one of another kind,
        convert both with :meth:`to_table` first (tiny instances).
        """
        if type(other) is not type(self):
            raise InputError(f"cannot replace a user of {type(self).__name__} by one of {type(other).__name__}; "
                             "convert both with to_table()")
        if (other.H, other.S, other.A) != (self.H, self.S, self.A) or not self._same_shared(other):
            raise InputError("the replacement user must have the same H, S, A (and model)")
        k = int(as_index_array("k", k, self.K))
        j = int(as_index_array("j", j, other.K))
        updates = {}
        for f in self._per_user:
            arr = np.array(getattr(self, f))
            arr[k] = getattr(other, f)[j]
            updates[f] = _frozen(arr)
        return dc_replace(self, **updates)

    def _same_shared(self, other) -> bool:
        return True

    def differing_users(self, other: "ScriptedUsers") -> np.ndarray:
        """Indices of users whose response trees differ (compared on the full tree; tiny instances)."""
        a, b = self.to_table(), other.to_table()
        if a.K != b.K or (a.H, a.S, a.A) != (b.H, b.S, b.A):
            raise InputError("user sequences of different sizes are not neighbours")
        diff = ((a.next_states != b.next_states).any(axis=1) | (a.rewards != b.rewards).any(axis=1))
        return np.flatnonzero(diff)

    def to_table(self) -> "TableUsers":
        """The explicit response trees (K, 1 + A + ... + A^H), by enumerating every action history."""
        H, S, A = self.H, self.S, self.A
        n_nodes = _n_nodes(A, H)
        if n_nodes * self.K > _MAX_TABLE_NODES:
            raise InputError(f"response trees too large to tabulate: K * {n_nodes} nodes")
        K = self.K
        next_states = np.zeros((K, n_nodes), dtype=np.int64)
        rewards = np.zeros((K, n_nodes))
        users = np.arange(K)
        s, memo = self._start(users)
        next_states[:, 0] = s
        # breadth-first over depth: the frontier holds (user, node, state, memo) for every history
        f_user, f_node, f_state, f_memo = users, np.zeros(K, dtype=np.int64), s, memo
        for h in range(H):
            f_user = np.repeat(f_user, A)
            f_node = np.repeat(f_node, A) * A + np.tile(np.arange(A), len(f_node)) + 1
            acts = (f_node - 1) % A
            f_state, rew, f_memo = self._advance(h, f_user, np.repeat(f_memo, A, axis=0),
                                                 np.repeat(f_state, A), acts)
            next_states[f_user, f_node] = f_state
            rewards[f_user, f_node] = rew
        return TableUsers(H, S, A, next_states[:, 0].copy(), next_states, rewards)


def _frozen(arr):
    arr = np.array(arr)
    arr.setflags(write=False)
    return arr


def _n_nodes(A, H):
    return H + 1 if A == 1 else (A ** (H + 1) - 1) // (A - 1)


# ----------------------------------------------------------------------------- kinds
@dataclass(frozen=True, eq=False, repr=False)
class TableUsers(ScriptedUsers):
    """Explicit response trees. Node of history (a_1..a_h): root 0, child(n, a) = n * A + a + 1.

    initial_states (K,):       s_1 of each user
    next_states (K, n_nodes):  at the node of (a_1..a_h), h >= 1: s_{h+1} (entry 0 repeats s_1)
    rewards (K, n_nodes):      at the node of (a_1..a_h), h >= 1: r_h (entry 0 unused, 0)
    """

    initial_states: np.ndarray = None
    next_states: np.ndarray = None
    rewards: np.ndarray = None
    _per_user: ClassVar[tuple[str, ...]] = ("initial_states", "next_states", "rewards")

    def __post_init__(self):
        H, S, A = _check_sizes(self.H, self.S, self.A)
        n = _n_nodes(A, H)
        s1 = as_index_array("initial_states", self.initial_states, S)
        if s1.ndim != 1:
            raise InputError(f"initial_states must have shape (K,), got {s1.shape}")
        K = s1.shape[0]
        nxt = as_index_array("next_states", self.next_states, S)
        if nxt.shape != (K, n):
            raise InputError(f"next_states must have shape (K, {n}) = (K, 1 + A + ... + A^H), got {nxt.shape}")
        rew = np.asarray(self.rewards, dtype=np.float64)
        if rew.shape != (K, n):
            raise InputError(f"rewards must have shape (K, {n}), got {rew.shape}")
        if not np.all(np.isfinite(rew)) or rew.min() < 0 or rew.max() > 1:
            raise InputError("rewards must lie in [0, 1]")
        for name, arr in (("initial_states", s1), ("next_states", nxt), ("rewards", rew)):
            object.__setattr__(self, name, _frozen(arr))

    def _start(self, users):
        return self.initial_states[users], np.zeros(len(users), dtype=np.int64)

    def _advance(self, h, users, memo, states, actions):
        node = memo * self.A + actions + 1
        return self.next_states[users, node], self.rewards[users, node], node

    def to_table(self) -> "TableUsers":
        return self


def random_table_users(K: int, S: int, A: int, H: int, rng: np.random.Generator) -> TableUsers:
    """K users with independent uniformly random response trees (states uniform, rewards U[0,1])."""
    check_rng(rng)
    H, S, A = _check_sizes(H, S, A)
    K = check_runs(K)
    n = _n_nodes(A, H)
    if n * K > _MAX_TABLE_NODES:
        raise InputError(f"response trees too large to tabulate: K * {n} nodes; use HashedUsers")
    nxt = rng.integers(0, S, size=(K, n))
    rew = rng.random((K, n))
    rew[:, 0] = 0.0
    nxt[:, 0] = rng.integers(0, S, size=K)
    return TableUsers(H, S, A, nxt[:, 0].copy(), nxt, rew)


@dataclass(frozen=True, eq=False, repr=False)
class HashedUsers(ScriptedUsers):
    """Pseudo-random response trees from per-user 64-bit keys (splitmix64 of the history).

    keys (K,) uint64. s_1 = floor(S u_0), s_{h+1} = floor(S u_h), r_h = u'_h (``rewards="uniform"``)
    or 1(u'_h < 1/2) (``"binary"``), where u, u' are uniforms hashed from (key, a_1..a_h).
    """

    keys: np.ndarray = None
    rewards: str = "uniform"
    _per_user: ClassVar[tuple[str, ...]] = ("keys",)

    def __post_init__(self):
        _check_sizes(self.H, self.S, self.A)
        keys = np.asarray(self.keys)
        if keys.ndim != 1 or keys.size == 0 or keys.dtype.kind not in "iu":
            raise InputError(f"keys must be a non-empty (K,) integer array, got {keys.shape} {keys.dtype}")
        if self.rewards not in ("uniform", "binary"):
            raise InputError(f"rewards must be 'uniform' or 'binary', got {self.rewards!r}")
        object.__setattr__(self, "keys", _frozen(keys.astype(np.uint64)))

    @classmethod
    def random(cls, K, S, A, H, rng, rewards="uniform") -> "HashedUsers":
        check_rng(rng)
        K = check_runs(K)
        return cls(H, S, A, rng.integers(0, 2**64 - 1, size=K, dtype=np.uint64, endpoint=True), rewards)

    def _start(self, users):
        memo = _mix(self.keys[users])
        return np.minimum((_uniform(memo, 1) * self.S).astype(np.int64), self.S - 1), memo

    def _advance(self, h, users, memo, states, actions):
        memo = _extend(memo, h, actions)
        nxt = np.minimum((_uniform(memo, 1) * self.S).astype(np.int64), self.S - 1)
        u = _uniform(memo, 2)
        rew = u if self.rewards == "uniform" else (u < 0.5).astype(np.float64)
        return nxt, rew, memo


@dataclass(frozen=True, eq=False, repr=False)
class ModelUsers(HashedUsers):
    """Users whose response trees are draws from ``mdp``, sampled lazily (see module docstring).

    s_1 = F^{-1}_{d_1}(u_0), s_{h+1} = F^{-1}_{P_h(.|s_h, a_h)}(u_h), r_h = r_h(s_h, a_h) for
    deterministic rewards or 1(u'_h < r_h(s_h, a_h)) for Bernoulli ones, with u, u' hashed from
    (key, a_1..a_h). Over random keys an episode is distributed exactly as in the MDP.
    """

    mdp: TabularMDP = None

    def __post_init__(self):
        if not isinstance(self.mdp, TabularMDP):
            raise InputError("ModelUsers needs a TabularMDP")
        if (self.H, self.S, self.A) != (self.mdp.H, self.mdp.S, self.mdp.A):
            raise InputError("ModelUsers sizes must match the MDP")
        super().__post_init__()

    def _same_shared(self, other) -> bool:
        return other.mdp is self.mdp

    def _start(self, users):
        memo = _mix(self.keys[users])
        u = _uniform(memo, 1)
        init_cdf, _ = self.mdp.sampling_tables()
        return (init_cdf[None, :] <= u[:, None]).sum(axis=-1), memo

    def _advance(self, h, users, memo, states, actions):
        memo = _extend(memo, h, actions)
        u = _uniform(memo, 1)
        _, cdf = self.mdp.sampling_tables()
        nxt = (cdf[h, states, actions] <= u[:, None]).sum(axis=-1)
        mean = self.mdp.r[h, states, actions]
        if self.mdp.reward_noise == "bernoulli":
            rew = (_uniform(memo, 2) < mean).astype(np.float64)
        else:
            rew = mean.astype(np.float64)
        return nxt, rew, memo


def users_from_model(mdp: TabularMDP, K: int, rng: np.random.Generator) -> ModelUsers:
    """K users whose response trees are sampled (lazily) from ``mdp``; keys drawn from ``rng``."""
    check_rng(rng)
    if not isinstance(mdp, TabularMDP):
        raise InputError(f"users_from_model needs a TabularMDP, got {type(mdp).__name__}")
    K = check_runs(K)
    keys = rng.integers(0, 2**64 - 1, size=K, dtype=np.uint64, endpoint=True)
    return ModelUsers(mdp.H, mdp.S, mdp.A, keys, "uniform", mdp)


@dataclass(frozen=True, eq=False, repr=False)
class FixedTrajectoryUsers(ScriptedUsers):
    """The trivial users: user k reports states[k] and rewards[k] whatever actions she is sent.

    states (K, H+1) int, rewards (K, H) in [0, 1].
    """

    states: np.ndarray = None
    rewards: np.ndarray = None
    _per_user: ClassVar[tuple[str, ...]] = ("states", "rewards")

    def __post_init__(self):
        H, S, A = _check_sizes(self.H, self.S, self.A)
        st = as_index_array("states", self.states, S)
        if st.ndim != 2 or st.shape[1] != H + 1:
            raise InputError(f"states must have shape (K, H+1) = (K, {H + 1}), got {st.shape}")
        rew = np.asarray(self.rewards, dtype=np.float64)
        if rew.shape != (st.shape[0], H):
            raise InputError(f"rewards must have shape (K, H) = ({st.shape[0]}, {H}), got {rew.shape}")
        if not np.all(np.isfinite(rew)) or rew.min() < 0 or rew.max() > 1:
            raise InputError("rewards must lie in [0, 1]")
        object.__setattr__(self, "states", _frozen(st))
        object.__setattr__(self, "rewards", _frozen(rew))

    @classmethod
    def from_trajectories(cls, traj: Trajectories, A: int, S: int | None = None) -> "FixedTrajectoryUsers":
        states = np.asarray(traj.states)
        S = int(states.max()) + 1 if S is None else S
        return cls(states.shape[1] - 1, S, A, states, traj.rewards)

    def _start(self, users):
        return self.states[users, 0], np.zeros(len(users), dtype=np.int64)

    def _advance(self, h, users, memo, states, actions):
        return self.states[users, h + 1], self.rewards[users, h], memo


def neighbouring_users(users: ScriptedUsers, k: int, replacement: ScriptedUsers, j: int = 0):
    """(U, U') with U' = U except user k, who becomes user j of ``replacement`` (Def. 2.2)."""
    return users, users.replace(k, replacement, j)


# ----------------------------------------------------------------------------- games
class UserPairs:
    """K scripted user *pairs* of a two-player game, in the per-episode game protocol of DPNashVI.run
    (Qiao & Wang 2024, Section 2.2): ``H, S, A, B, r, init``, ``per_episode = True``, ``reset(rng, runs, episode=k)``,
    ``step(h, states, a, b, rng, episode=k) -> (next_states, rewards)``.

    ``users`` is any :class:`ScriptedUsers` on joint actions ``j = a * B + b`` (so ``users.A == A * B``);
    pair k answers episode k (``episode`` an int or (runs,) users). ``r`` (H, S, A, B) is the game's known
    reward (the games setting privatizes transitions only), so the users' own reported rewards are unused.
    Users add no randomness: ``rng`` is never drawn from.

    ``step`` continues the episode begun by the last ``reset`` (the users' history summary is kept between
    the calls, which is what lets a user respond to her whole action history); one episode is in flight
    per object at a time, as in DPNashVI.run's loop.
    """

    per_episode = True
    # the episode in flight: written by reset before step reads it, so no part of what a run computes
    __fingerprint_transient__ = frozenset({"_episode"})

    def __init__(self, users: ScriptedUsers, r, B: int, name: str = "scripted user pairs"):
        if not isinstance(users, ScriptedUsers):
            raise InputError(f"users must be ScriptedUsers on joint actions, got {type(users).__name__}")
        r = np.asarray(r, dtype=np.float64)
        if r.ndim != 4 or r.shape[0] != users.H or r.shape[1] != users.S:
            raise InputError(f"r must have shape (H, S, A, B) = ({users.H}, {users.S}, A, B), got {r.shape}")
        if not np.all(np.isfinite(r)) or r.min() < 0 or r.max() > 1:
            raise InputError("r must lie in [0, 1]")
        if int(B) != r.shape[3] or r.shape[2] * r.shape[3] != users.A:
            raise InputError(f"users answer {users.A} joint actions but r has A*B = {r.shape[2]}*{r.shape[3]}")
        r.setflags(write=False)
        self.users, self.r, self.name = users, r, name
        self.H, self.S, self.A, self.B = users.H, users.S, r.shape[2], r.shape[3]
        self.K = users.K
        s1, _ = users._start(np.arange(users.K))
        self.init = np.bincount(s1, minlength=self.S) / users.K      # s_1 over the users (a point mass if shared)
        self._episode = None

    def __repr__(self) -> str:
        return f"UserPairs({self.users!r}, B={self.B})"

    def replace(self, k: int, other: "UserPairs", j: int = 0) -> "UserPairs":
        """The neighbouring sequence: pair k replaced by pair j of ``other`` (same reward)."""
        if not np.array_equal(self.r, other.r):
            raise InputError("neighbouring user pairs must share the game's known reward")
        return UserPairs(self.users.replace(k, other.users, j), self.r, self.B, self.name)

    def reset(self, rng, runs, episode=0):
        u = self.users._users(episode, int(runs))
        s, memo = self.users._start(u)
        self._episode = (u, memo)
        return s

    def step(self, h, states, a, b, rng, episode=0):
        if self._episode is None:
            raise InputError("UserPairs.step called before reset (an episode starts with reset)")
        u, memo = self._episode
        states = np.asarray(states)
        j = np.asarray(a, dtype=np.int64) * self.B + np.asarray(b, dtype=np.int64)
        nxt, _, memo = self.users._advance(h, u, memo, states, j)
        self._episode = (u, memo)
        return nxt, self.r[h, states, a, b]
