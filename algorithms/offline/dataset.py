"""Offline data of DP-APVI / DP-VAPVI (Qiao & Wang 2022, Section 2).

* :class:`OfflineDataset` -- ``n`` independent trajectories of length ``H`` from one behaviour policy
  ``mu``, batched over independent runs: ``states (runs, n, H+1)``, ``actions (runs, n, H)``,
  ``rewards (runs, n, H)``. The privacy unit is ONE trajectory (row ``[:, tau]``). Build it from your own
  arrays with :meth:`OfflineDataset.from_arrays` (validated, one-line :class:`InputError` per defect) or
  simulate it with :meth:`OfflineDataset.collect`. DP-VAPVI's split (Section 2: ``D`` for the Q regression,
  ``D'`` for the variance, two halves of 2K trajectories) is :meth:`OfflineDataset.split`.
* :class:`TabularCounts` -- the sufficient statistics ``n_h(s,a)``, ``n_h(s,a,s')`` (Algorithm 1, per step h,
  never pooled) and the observed reward sums per ``(h,s,a)`` (the linear regressions need them). Counted
  from a dataset with one ``np.bincount`` (:meth:`OfflineDataset.counts`) or drawn directly from their
  exact law (:func:`sample_counts`), which costs O(runs H S) multinomial draws instead of O(runs n H)
  and so makes the large-n regime (n ~ 1e6-1e7) cheap.

Steps are 0-based in arrays: the paper's step h is index h - 1.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcheck.errors import InputError
from dpcheck.options import as_float
from dpcheck.algorithms.envs._validate import as_policy, axis_length, check_rng, check_runs
from dpcheck.algorithms.envs.tabular import TabularMDP


_BLOCK_ROWS = 8192      # trajectories per counting block (OfflineDataset.counts)
COUNT_ENGINES = ("auto", "numpy", "compiled")


def _compiled_kernel():
    """The numba counting kernel, or None when numba is unavailable."""
    try:
        from dpcheck.algorithms.offline._count_kernel import count_transitions
    except ImportError:
        return None
    return count_transitions


def _positive_int(name, v):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise InputError(f"{name} must be a positive integer, got {v!r}")
    return int(v)


def _index_array(name, value, upper):
    """An int64 array of ``value``; ragged nesting, non-integers and out-of-range entries -> InputError."""
    if isinstance(value, np.ndarray) and value.dtype != object:
        arr = value
    else:
        try:
            arr = np.asarray(value)
        except ValueError:
            raise InputError(f"{name}: ragged episodes (trajectories of different lengths)") from None
        if arr.dtype == object:
            raise InputError(f"{name}: ragged episodes (trajectories of different lengths)")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise InputError(f"{name} must be integers (NaN or fractional entry found)")
    elif arr.dtype.kind not in "iub":
        raise InputError(f"{name} must be an integer array, got dtype {arr.dtype}")
    if arr.size and (arr.min() < 0 or arr.max() >= upper):
        bad = (arr < 0) | (arr >= upper)
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise InputError(f"{name} out of range: entry {idx} is {arr[idx]!r}, allowed 0..{upper - 1}")
    return np.ascontiguousarray(arr, dtype=np.int64)


@dataclass(frozen=True)
class TabularCounts:
    """Sufficient statistics of a batch of offline datasets (Algorithm 1), per step, batched over runs.

    visits       n_h(s,a)           (runs, H, S, A)     = transitions.sum(-1)
    transitions  n_h(s,a,s')        (runs, H, S, A, S)
    reward_sums  sum of observed r_h^tau over the tau with (s_h^tau, a_h^tau) = (s,a)  (runs, H, S, A);
                 None when the rewards were not observed (the tabular algorithm knows r, Section 2)
    n            trajectories per run
    """

    visits: np.ndarray
    transitions: np.ndarray
    reward_sums: np.ndarray | None
    n: int

    @property
    def runs(self) -> int:
        return self.visits.shape[0]

    @property
    def shape(self) -> tuple[int, int, int]:
        """(H, S, A)."""
        return tuple(self.visits.shape[1:])

    def empirical_kernel(self) -> np.ndarray:
        """Phat_h(s'|s,a) = n_h(s,a,s')/n_h(s,a) if n_h(s,a) > 0 else 1/S (eq. 15) -> (runs, H, S, A, S)."""
        S = self.transitions.shape[-1]
        with np.errstate(invalid="ignore", divide="ignore"):
            P = self.transitions / self.visits[..., None]
        return np.where(self.visits[..., None] > 0, P, 1.0 / S)

    def empirical_coverage(self) -> np.ndarray:
        """Empirical dbar_m per run (Assumption 2.1 with d^mu replaced by n_h(s,a)/n): the smallest positive
        visit frequency over (h,s,a) -> (runs,); 0 for a run without any visit."""
        freq = self.visits / self.n
        pos = np.where(freq > 0, freq, np.inf).reshape(self.runs, -1).min(axis=1)
        return np.where(np.isfinite(pos), pos, 0.0)


@dataclass(frozen=True)
class OfflineDataset:
    """``n`` trajectories of length ``H`` per run, from one behaviour policy (Qiao & Wang 2022, Section 2).

    states   (runs, n, H+1) int64 in 0..S-1: s_1..s_{H+1} of every trajectory
    actions  (runs, n, H)   int64 in 0..A-1
    rewards  (runs, n, H)   float in [0, 1], or None (tabular: r is known and not read from data, Section 2)
    S, A     sizes of the state and action sets

    Construct through :meth:`from_arrays` (validates; int64 inputs are used without a copy, so do not
    modify them afterwards) or :meth:`collect` (simulates). One trajectory ``[:, tau]`` is the privacy unit.
    """

    states: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray | None
    S: int
    A: int

    runs = axis_length("actions", 0)
    n = axis_length("actions", 1)
    H = axis_length("actions", 2)

    @classmethod
    def from_arrays(cls, states, actions, rewards=None, *, S: int, A: int) -> "OfflineDataset":
        """Validate user arrays. A single run may omit the run axis: ``states (n, H+1)``, ``actions (n, H)``.

        Raises InputError (one line) for ragged episodes, out-of-range or non-integer states/actions,
        mismatched shapes, NaN or out-of-[0,1] rewards.
        """
        S, A = _positive_int("S", S), _positive_int("A", A)
        st = _index_array("states", states, S)
        ac = _index_array("actions", actions, A)
        if st.ndim == 2 and ac.ndim == 2:
            st, ac = st[None], ac[None]
        if st.ndim != 3 or ac.ndim != 3:
            raise InputError(f"states must be (runs, n, H+1) and actions (runs, n, H); got {st.shape} and {ac.shape}")
        if st.shape[:2] != ac.shape[:2] or st.shape[2] != ac.shape[2] + 1:
            raise InputError(f"states {st.shape} and actions {ac.shape} disagree: need (runs, n, H+1) and (runs, n, H)")
        if ac.shape[0] < 1 or ac.shape[1] < 1 or ac.shape[2] < 1:
            raise InputError(f"the dataset needs at least one run, one trajectory and one step; actions {ac.shape}")
        rw = None
        if rewards is not None:
            try:
                rw = np.array(rewards, dtype=np.float64)
            except (TypeError, ValueError):
                raise InputError("rewards: ragged episodes or non-numeric entries") from None
            if rw.ndim == 2 and ac.shape[0] == 1:
                rw = rw[None]
            if rw.shape != ac.shape:
                raise InputError(f"rewards must have the shape of actions {ac.shape}, got {rw.shape}")
            if not np.all(np.isfinite(rw)):
                raise InputError("rewards contain NaN or infinite entries")
            if rw.size and (rw.min() < 0 or rw.max() > 1):
                idx = tuple(int(i) for i in np.argwhere((rw < 0) | (rw > 1))[0])
                raise InputError(f"rewards must lie in [0, 1]; entry {idx} is {rw[idx]!r}")
        return cls._trusted(st, ac, rw, S, A)

    @classmethod
    def load(cls, path) -> "OfflineDataset":
        """A user's dataset from an ``.npz`` file (``np.savez``): arrays ``states`` (n, H+1) and ``actions``
        (n, H) of integers (a leading run axis is allowed), optional ``rewards`` (n, H) in [0, 1], and the
        scalars ``S`` and ``A`` (sizes of the state and action sets; required, so that an out-of-range
        state or action is caught rather than silently growing the model). Validated by
        :meth:`from_arrays`; every defect is one-line :class:`InputError` (missing file or key, not an
        .npz, ragged episodes -- which numpy can only store as an object array --, NaN rewards, ...).
        Extra keys are ignored; :func:`load_npz_arrays` returns them all (e.g. a known reward table)."""
        arrays = load_npz_arrays(path)
        for key in ("states", "actions", "S", "A"):
            if key not in arrays:
                raise InputError(f"{path}: missing array {key!r} (need states, actions, S, A; optional rewards)")
        S, A = (scalar_int(path, k, arrays[k]) for k in ("S", "A"))
        return cls.from_arrays(arrays["states"], arrays["actions"], arrays.get("rewards"), S=S, A=A)

    @classmethod
    def _trusted(cls, st, ac, rw, S, A):
        return cls(states=st, actions=ac, rewards=rw, S=int(S), A=int(A))

    @classmethod
    def collect(cls, mdp: TabularMDP, behaviour, n: int, rng: np.random.Generator, runs: int = 1) -> "OfflineDataset":
        """Simulate ``n`` trajectories per run from ``behaviour`` (mu: (H, S, A) probabilities or (H, S)
        ints) on ``mdp``; rewards are drawn with the MDP's reward noise."""
        if not isinstance(mdp, TabularMDP):
            raise InputError(f"expected a TabularMDP, got {type(mdp).__name__}")
        check_rng(rng)
        n, runs = _positive_int("n", n), check_runs(runs)
        as_policy(behaviour, mdp.H, mdp.S, mdp.A, name="behaviour policy")
        tr = mdp.rollout(behaviour, rng, runs=runs * n)
        shape = (runs, n)
        return cls._trusted(tr.states.reshape(shape + (mdp.H + 1,)), tr.actions.reshape(shape + (mdp.H,)),
                            tr.rewards.reshape(shape + (mdp.H,)), mdp.S, mdp.A)

    def split(self) -> tuple["OfflineDataset", "OfflineDataset"]:
        """(D, D') = (first K, last K) trajectories of 2K (Section 2, DP-VAPVI; Algorithm 2 needs independent D, D').
        D feeds the Q regression, D' the variance estimate. An odd n is an InputError."""
        if self.n % 2:
            raise InputError(f"split needs an even number of trajectories (2K), got n = {self.n}")
        K = self.n // 2
        part = lambda x, sl: None if x is None else x[:, sl]
        first, second = slice(0, K), slice(K, 2 * K)
        return (OfflineDataset(part(self.states, first), part(self.actions, first), part(self.rewards, first), self.S, self.A),
                OfflineDataset(part(self.states, second), part(self.actions, second), part(self.rewards, second), self.S, self.A))

    def counts(self, engine: str = "auto", rewards: bool = True) -> TabularCounts:
        """n_h(s,a), n_h(s,a,s') (and reward sums if rewards were observed).

        engine: 'auto' (the compiled one-pass kernel of ``_count_kernel`` when numba imports, else numpy),
        'numpy' (blocked np.bincount, the reference) or 'compiled'. Both give identical counts.
        rewards=False skips the reward sums (the tabular algorithm knows r, Section 2).

        Flat index of a transition: (((run H + h) S + s) A + a) S + s' -- so the triple counts come out in
        (runs, H, S, A, S) order and the pair counts are their sum over s' (no second pass over data).
        """
        if engine not in COUNT_ENGINES:
            raise InputError(f"engine must be one of {COUNT_ENGINES}, got {engine!r}")
        runs, n, H = self.actions.shape
        S, A = self.S, self.A
        SAS = S * A * S
        observed = self.rewards if rewards else None
        if engine != "numpy":
            kernel = _compiled_kernel()
            if kernel is None and engine == "compiled":
                raise InputError("engine='compiled' needs numba, which is not installed")
            if kernel is not None:
                trip = np.zeros(runs * H * SAS, np.int64)
                rsum = np.zeros(runs * H * S * A)
                rw = observed if observed is not None else np.zeros((1, 1, 1))
                kernel(self.states, self.actions, rw, observed is not None, S, A, trip, rsum)
                trip = trip.reshape(runs, H, S, A, S).astype(np.float64)
                rsum = None if observed is None else rsum.reshape(runs, H, S, A)
                return TabularCounts(visits=trip.sum(axis=-1), transitions=trip, reward_sums=rsum, n=n)
        X = self.states.reshape(runs * n, H + 1)
        Y = self.actions.reshape(runs * n, H)
        R = None if observed is None else observed.reshape(runs * n, H)
        trip = np.zeros(runs * H * SAS, np.int64)
        rsum = None if R is None else np.zeros(runs * H * S * A)
        # Blocks of trajectories small enough for the cache: a whole-array expression on the (n, H+1)
        # layout iterates H-long inner loops, a per-step loop reads strided columns of the whole array
        # H times; within a cached block both costs vanish (profiled at n = 1e5, H = 10: blocks of 8192
        # rows were the fastest of the three, see benchmarks/bench_offline.py).
        B = max(1, min(runs * n, _BLOCK_ROWS))
        idx = np.empty((B, H), np.int64)
        tmp = np.empty((B, H), np.int64)
        step_offset = np.arange(H) * SAS
        for b in range(0, runs * n, B):
            x = X[b:b + B]
            m = x.shape[0]
            o, t = idx[:m], tmp[:m]
            np.multiply(x[:, :H], A * S, out=o)
            o += x[:, 1:]
            np.multiply(Y[b:b + B], S, out=t)
            o += t
            o += step_offset
            np.floor_divide(np.arange(b, b + m), n, out=t[:, 0])          # run of each row
            t[:, 0] *= H * SAS
            o += t[:, :1]
            flat = o.reshape(-1)
            trip += np.bincount(flat, minlength=trip.size)
            if R is not None:
                flat //= S                                                 # ((run H + h) S + s) A + a
                rsum += np.bincount(flat, weights=R[b:b + B].reshape(-1), minlength=rsum.size)
        trip = trip.reshape(runs, H, S, A, S).astype(np.float64)
        if rsum is not None:
            rsum = rsum.reshape(runs, H, S, A)
        return TabularCounts(visits=trip.sum(axis=-1), transitions=trip, reward_sums=rsum, n=n)


def load_npz_arrays(path) -> dict:
    """Every array of an ``.npz`` file, loaded without pickle. InputError (one line) for a missing or
    unreadable file, a file that is not an .npz archive, and object arrays (how numpy stores ragged
    episodes: lists of trajectories of different lengths)."""
    import os
    import zipfile
    p = os.fspath(path)
    if not os.path.isfile(p):
        raise InputError(f"dataset file not found: {p}")
    try:
        z = np.load(p, allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise InputError(f"{p}: cannot read as an .npz archive ({type(e).__name__}: {e})") from None
    if not isinstance(z, np.lib.npyio.NpzFile):        # a bare .npy gives one array
        raise InputError(f"{p}: not an .npz archive (save the arrays with numpy.savez)")
    with z:
        out = {}
        for k in z.files:
            try:
                out[k] = z[k]
            except ValueError as e:
                raise InputError(f"{p}: array {k!r} cannot be read as numbers: an object array (ragged episodes, "
                                 f"trajectories of different lengths, or non-numeric entries) or a corrupt member "
                                 f"({e})") from None
            except (OSError, zipfile.BadZipFile, EOFError) as e:
                raise InputError(f"{p}: array {k!r} cannot be read ({type(e).__name__}: {e})") from None
        return out


def scalar_int(path, key, value) -> int:
    """The one positive integer stored under ``key`` of the .npz at ``path`` (a size such as S or A):
    InputError (one line) for anything else. Public for the audits that read a user's .npz themselves."""
    arr = np.asarray(value)
    if arr.size != 1 or arr.dtype.kind not in "iuf" or float(arr.reshape(())) != int(arr.reshape(())):
        raise InputError(f"{path}: {key} must be one positive integer, got {value!r}")
    return _positive_int(key, int(arr.reshape(())))


def sample_counts(mdp: TabularMDP, behaviour, n: int, rng: np.random.Generator, runs: int = 1,
                  rewards: bool = False) -> TabularCounts:
    """Draw the counts of ``n`` iid trajectories of ``behaviour`` on ``mdp`` from their exact law.

    Why exact: trajectories are iid Markov chains, so given the number N_h(s) of trajectories in state s
    at step h, their (a_h, s_{h+1}) are iid with probabilities mu_h(a|s) P_h(s'|s,a), independent of
    everything before; hence N_1 ~ Multinomial(n, d1), (n_h(s,a,s'))_{a,s'} ~ Multinomial(N_h(s),
    mu_h(.|s) P_h(.|s,.)), N_{h+1}(s') = sum_{s,a} n_h(s,a,s'). With ``rewards=True`` the reward sums of
    deterministic rewards are r_h(s,a) n_h(s,a); Bernoulli rewards give Binomial(n_h(s,a), r_h(s,a)).
    """
    if not isinstance(mdp, TabularMDP):
        raise InputError(f"expected a TabularMDP, got {type(mdp).__name__}")
    check_rng(rng)
    n, runs = _positive_int("n", n), check_runs(runs)
    pol, det = as_policy(behaviour, mdp.H, mdp.S, mdp.A, name="behaviour policy")
    if det:
        pol = np.eye(mdp.A)[pol]
    H, S, A = mdp.H, mdp.S, mdp.A
    trip = np.empty((runs, H, S, A, S))
    N = rng.multinomial(n, mdp.init, size=runs)                      # (runs, S)
    for h in range(H):
        probs = (pol[h][:, :, None] * mdp.P[h]).reshape(S, A * S)      # (S, A S)
        probs = probs / probs.sum(axis=-1, keepdims=True)
        draw = rng.multinomial(N, np.broadcast_to(probs, (runs, S, A * S)))
        trip[:, h] = draw.reshape(runs, S, A, S)
        N = trip[:, h].sum(axis=(1, 2)).astype(np.int64)
    visits = trip.sum(axis=-1)
    rsum = None
    if rewards:
        if mdp.reward_noise == "bernoulli":
            rsum = rng.binomial(visits.astype(np.int64), np.broadcast_to(mdp.r, visits.shape)).astype(np.float64)
        else:
            rsum = visits * mdp.r
    return TabularCounts(visits=visits, transitions=trip, reward_sums=rsum, n=n)


def check_features(features, S: int, A: int, d: int | None = None) -> np.ndarray:
    """A feature map phi as an (S, A, d) float array; InputError if its shape does not match (S, A[, d])."""
    try:
        phi = np.array(features, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError("features must be a numeric (S, A, d) array") from None
    if phi.ndim != 3 or phi.shape[:2] != (S, A) or phi.shape[2] < 1:
        raise InputError(f"feature map has the wrong dimension: need (S, A, d) = ({S}, {A}, d), got {phi.shape}")
    if d is not None and phi.shape[2] != d:
        raise InputError(f"feature map has the wrong dimension: d = {phi.shape[2]}, expected {d}")
    if not np.all(np.isfinite(phi)):
        raise InputError("feature map contains NaN or infinite entries")
    phi.setflags(write=False)
    return phi


def positive_budget(name: str, value, allow_inf: bool = True) -> float:
    """A privacy budget (rho or epsilon): a number > 0; +inf means noise off (non-private)."""
    x = as_float(name, value, "a number > 0")
    if not x > 0 or math.isnan(x) or (math.isinf(x) and not allow_inf):
        raise InputError(f"{name} must be a number > 0{' (inf = noise off)' if allow_inf else ''}, got {value!r}")
    return x


def probability(name: str, value) -> float:
    """A failure probability in (0, 1) (the paper's utility delta, not the delta of (eps, delta)-DP)."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number in (0, 1), got {value!r}") from None
    if isinstance(value, bool) or not 0 < x < 1:
        raise InputError(f"{name} must lie in (0, 1), got {value!r}")
    return x
