"""The compiled engine of DPUCBVI.run: the same episodes, the whole loop in numba.

``DPUCBVI.run(..., engine="auto")`` uses it when the run is one it covers (:func:`ineligible` says why
not otherwise) and falls back to the numpy engine; ``engine="numpy"`` / ``"compiled"`` force one
(``"compiled"`` on an ineligible run is an InputError naming the reason). The engine used is reported in
the run's config.

Covered: the agents DPUCBVI and UCBVI themselves (not subclasses, which override the seams), bonuses
without term 4 (c_correction = 0: practical mode; the theory bonus keeps Q~ = H anyway), a TabularMDP
with deterministic or Bernoulli rewards, the built-in Central / Local / No privatizers (or a
StackedPrivatizer of them), no monitor and no release hook (they read every release in Python).

Randomness: every stream is drawn by numpy in chunks, in exactly the numpy engine's order (environment:
reset then one uniform per step and one per Bernoulli reward; tie-breaking: one (runs,H,S,A) array per
episode; noise: the privatizer's own draws, :func:`algorithms.privatizers.noise.laplace`), so the two
engines see the same numbers; the arithmetic is the numpy engine's, step for step (module docstring of
``_kernels``), so they give the same trajectories bit for bit (tests/test_compiled_engine.py). At the
end the privatizers' state (true counts, tree, local sums) is written back, so the privatizer object is
exactly where the numpy engine would have left it.
"""
from __future__ import annotations

import numpy as np

from dpcheck.errors import InputError

ENGINES = ("auto", "numpy", "compiled")
_CHUNK_ELEMENTS = 1 << 21          # ~16 MB of pre-drawn noise per chunk


def available() -> bool:
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def _parts(priv, runs):
    from algorithms.online.stacking import StackedPrivatizer
    if isinstance(priv, StackedPrivatizer):
        return [(p, sl) for (p, _), sl in zip(priv.parts, priv.slices)]
    return [(priv, slice(0, runs))]


def ineligible(agent, env, runs, *, monitor: bool, release_hook) -> str | None:
    """Why the compiled engine cannot run this configuration, or None if it can."""
    from algorithms.envs.tabular import TabularMDP
    from algorithms.online.ucbvi import DPUCBVI, UCBVI
    from algorithms.privatizers import CentralPrivatizer, LocalPrivatizer, NoPrivatizer
    from algorithms.privatizers.binary_mechanism import BinaryMechanism
    if not available():
        return "numba is not installed"
    if type(agent) not in (DPUCBVI, UCBVI):
        return f"{type(agent).__name__} is a variant (only DPUCBVI and UCBVI are compiled)"
    if agent.constants.c_correction > 0:
        return "the bonus has term 4 (c_correction > 0, theory mode), which is not compiled"
    if monitor or release_hook is not None:
        return "monitors and release hooks read every release in Python"
    if type(env) is not TabularMDP:
        return f"the environment is a {type(env).__name__}, not a TabularMDP"
    if env.reward_noise not in ("deterministic", "bernoulli") or getattr(env, "rewards_known", False):
        return f"reward model {env.reward_noise!r} is not compiled"
    for p, _ in _parts(agent.privatizer, runs):
        if type(p) not in (CentralPrivatizer, LocalPrivatizer, NoPrivatizer):
            return f"privatizer {type(p).__name__} is not one of the built-in Central / Local / None"
        if type(p) is CentralPrivatizer and (type(p._tree) is not BinaryMechanism or p._tree.counter.noise != "laplace"):
            return "the central privatizer's tree is not the Laplace binary mechanism"
        if not p.rewards:
            return "privatizers without reward streams are not compiled"
    return None


def choose(engine: str, agent, env, runs, *, monitor: bool, release_hook) -> str:
    if engine not in ENGINES:
        raise InputError(f"engine must be one of {ENGINES}, got {engine!r}")
    if engine == "numpy":
        return "numpy"
    why = ineligible(agent, env, runs, monitor=monitor, release_hook=release_hook)
    if why is None:
        return "compiled"
    if engine == "compiled":
        raise InputError(f"engine='compiled' cannot run this configuration: {why}")
    return "numpy"


class _State:
    """The privatizers' state gathered into the kernel's per-run arrays (and scattered back after)."""

    def __init__(self, priv, runs, H, S, A, K):
        from algorithms.online._kernels import CENTRAL, LOCAL, NONE
        from algorithms.privatizers import CentralPrivatizer, LocalPrivatizer
        from algorithms.privatizers.binary_mechanism import tree_levels
        self.parts = _parts(priv, runs)
        HSA = H * S * A
        self.HSA, self.HSAS, self.C = HSA, HSA * S, HSA * (S + 2)
        self.runs, self.H, self.S, self.A = runs, H, S, A
        L = tree_levels(K)
        self.kind = np.empty(runs, dtype=np.int64)
        self.N = np.empty((runs, HSA))
        self.Ntr = np.empty((runs, HSA * S))
        self.R = np.empty((runs, HSA))
        has_central = any(type(p) is CentralPrivatizer for p, _ in self.parts)
        has_local = any(type(p) is LocalPrivatizer for p, _ in self.parts)
        self.psum = np.zeros((runs, L, self.C) if has_central else (runs, 1, 1))
        self.noisy = np.zeros((runs, L + 1, self.C) if has_central else (runs, 1, 1))   # prefix releases
        self.sums = np.zeros((runs, self.C) if has_local else (runs, 1))
        self.noisy_parts = has_central or has_local
        self.t0 = None
        self._noise = None
        for p, sl in self.parts:
            n = sl.stop - sl.start
            self.N[sl] = p._N.reshape(n, -1)
            self.Ntr[sl] = p._Ntr.reshape(n, -1)
            self.R[sl] = p._R.reshape(n, -1)
            if type(p) is CentralPrivatizer:
                self.kind[sl] = CENTRAL
                self.psum[sl] = np.moveaxis(p._tree._psum, 0, 1)
                self.noisy[sl] = np.moveaxis(p._tree._prefix, 0, 1)
                t = p._tree.t
            elif type(p) is LocalPrivatizer:
                self.kind[sl] = LOCAL
                self.sums[sl] = np.concatenate([p._sum_v.reshape(n, -1), p._sum_t.reshape(n, -1),
                                                p._sum_r.reshape(n, -1)], axis=1)
                t = p.episodes
            else:
                self.kind[sl] = NONE
                t = p.episodes
            if self.t0 is None:
                self.t0 = t
            elif t != self.t0:
                raise InputError("stacked privatizers have seen different numbers of episodes")

    def draw_noise(self, n, chunk):
        """(n, runs, C) noise of the next n episodes, each part from its own stream in its own order.

        Written into buffers kept across chunks (a fresh multi-MB array per chunk costs more in page
        faults and copies than the draws themselves): a part that covers every run draws straight
        into the kernel's array; the others draw into their own scratch and are copied to their slice.
        """
        from algorithms.privatizers import CentralPrivatizer, LocalPrivatizer
        from algorithms.privatizers.noise import laplace
        if not self.noisy_parts:
            return np.zeros((n, self.runs, 1))       # no noisy part: the kernel never reads it
        if self._noise is None:
            self._noise = np.empty((chunk, self.runs, self.C))
            self._scratch = {}
        noise = self._noise[:n]
        HSA, HSAS = self.HSA, self.HSAS
        for p, sl in self.parts:
            m = sl.stop - sl.start
            if type(p) is CentralPrivatizer:        # one (runs, C) node draw per episode
                if m == self.runs:
                    laplace(p.rng, p.node_scale(), noise.shape, out=noise)
                else:
                    buf = laplace(p.rng, p.node_scale(), (n, m * self.C), out=self._buffer(sl, chunk, n))
                    noise[:, sl] = buf.reshape(n, m, self.C)
            elif type(p) is LocalPrivatizer:        # per episode: visits, then transitions, then rewards
                flat = laplace(p.rng, p.noise_scale(), (n, m * self.C), out=self._buffer(sl, chunk, n))
                noise[:, sl, :HSA] = flat[:, :m * HSA].reshape(n, m, HSA)
                noise[:, sl, HSA:HSA + HSAS] = flat[:, m * HSA:m * (HSA + HSAS)].reshape(n, m, HSAS)
                noise[:, sl, HSA + HSAS:] = flat[:, m * (HSA + HSAS):].reshape(n, m, HSA)
        return noise

    def _buffer(self, sl, chunk, n):
        m = sl.stop - sl.start
        if sl.start not in self._scratch:
            self._scratch[sl.start] = np.empty((chunk, m * self.C))
        return self._scratch[sl.start][:n].reshape(n, m * self.C)

    def scatter(self, episodes):
        """Write the state back into the privatizers (as if the numpy engine had run)."""
        from algorithms.privatizers import CentralPrivatizer, LocalPrivatizer
        H, S, A, HSA, HSAS = self.H, self.S, self.A, self.HSA, self.HSAS
        for p, sl in self.parts:
            n = sl.stop - sl.start
            p._N[...] = self.N[sl].reshape(n, H, S, A)
            p._Ntr[...] = self.Ntr[sl].reshape(n, H, S, A, S)
            p._R[...] = self.R[sl].reshape(n, H, S, A)
            p.episodes += episodes
            if type(p) is CentralPrivatizer:
                tree = p._tree
                tree._psum[...] = np.moveaxis(self.psum[sl], 1, 0)
                tree._prefix[...] = np.moveaxis(self.noisy[sl], 1, 0)
                tree.t += episodes
                tree.node_draws += episodes
                tree.last_level = (tree.t & -tree.t).bit_length() - 1 if tree.t else None
            elif type(p) is LocalPrivatizer:
                sums = self.sums[sl]
                p._sum_v[...] = sums[:, :HSA].reshape(p._sum_v.shape)
                p._sum_t[...] = sums[:, HSA:HSA + HSAS].reshape(p._sum_t.shape)
                p._sum_r[...] = sums[:, HSA + HSAS:].reshape(p._sum_r.shape)
                p._pending = None


def run_compiled(agent, env, K, runs, E, iota, rng_env, rng_ties, Q, actions, states, evaluator, progress):
    """The episode loop of DPUCBVI.run on the compiled kernels; updates Q, actions, states, evaluator."""
    from algorithms.online._kernels import run_episodes
    H, S, A = env.H, env.S, env.A
    st = _State(agent.privatizer, runs, H, S, A, K)
    c = agent.constants
    E_runs = np.broadcast_to(np.asarray(E, dtype=float), (runs,)).copy()
    c_priv = c.c_privacy * (H * S if c.privacy_scales_with_HS else 1.0)
    from algorithms.privatizers.projection import _NETWORKS
    network = np.array(_NETWORKS.get(S, []), dtype=np.int64).reshape(-1, 2)   # empty: insertion sort
    bernoulli = env.reward_noise == "bernoulli"
    m = 2 if bernoulli else 1
    random_ties = agent.tie_breaking == "random"
    record = actions is not None
    acts = actions if record else np.zeros((1, 1, 1), dtype=np.int8)
    sts = states if record else np.zeros((1, 1, 1), dtype=np.int16)
    init_cdf = np.ascontiguousarray(env._init_cdf, dtype=float)
    cdf = np.ascontiguousarray(env._cdf, dtype=float)
    rmean = np.ascontiguousarray(env.r, dtype=float)
    chunk = int(max(1, min(K, _CHUNK_ELEMENTS // max(1, runs * max(st.C, H * S * A)))))
    progress_every = max(1, K // 10)
    ties_buf = np.empty((chunk, runs, H, S, A)) if random_ties else np.zeros((1, 1, 1, 1, 1))
    env_buf = np.empty((chunk, 1 + H * m, runs))
    pol_buf = np.empty((chunk, runs, H, S), dtype=np.int8 if A < 128 else np.int32)
    e0 = 0
    while e0 < K:
        n = min(chunk, K - e0)
        noise = st.draw_noise(n, chunk)
        ties = rng_ties.random(out=ties_buf[:n]) if random_ties else ties_buf
        env_u = rng_env.random(out=env_buf[:n])
        policies = pol_buf[:n]
        run_episodes(n, e0, H, S, A, st.kind, E_runs, float(iota), float(c.c_variance), float(c.c_reward),
                     float(c_priv), bool(np.any(E_runs > 0)), float(c.scale), float(H),
                     Q, st.N, st.Ntr, st.R, st.psum, st.noisy, int(st.t0 + e0), st.sums, noise, ties,
                     random_ties, env_u, bernoulli, init_cdf, cdf, rmean, network, policies, acts, sts, record)
        if evaluator is not None:
            for e in range(n):                      # copies: the buffer is refilled by the next chunk
                evaluator.add(e0 + e, policies[e].copy())
        if progress is not None:
            for k in range(e0, e0 + n):
                if (k + 1) % progress_every == 0:
                    progress(f"{agent.algorithm}: episode {k + 1}/{K}")
        e0 += n
    st.scatter(K)
