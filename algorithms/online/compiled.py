"""The compiled engine of DPUCBVI.run: the same episodes, the whole loop in numba.

``DPUCBVI.run(..., engine="auto")`` uses it when the run is one it covers (:func:`ineligible` says why
not otherwise) and falls back to the numpy engine; ``engine="numpy"`` / ``"compiled"`` force one
(``"compiled"`` on an ineligible run is an InputError naming the reason). The engine used is reported in
the run's config.

Covered: the agents DPUCBVI and UCBVI themselves (not subclasses, which override the seams), bonuses
without term 4 (c_correction = 0: practical mode; the theory bonus keeps Q~ = H anyway), a TabularMDP
with deterministic or Bernoulli rewards, privatizers that provide a compiled noise plan
(``compiled_noise()``, :class:`dpcheck.algorithms.privatizers.base.CompiledNoise`: the built-in Central /
Local / No privatizers do, as does a StackedPrivatizer of such parts; any other runs on the numpy engine),
no monitor and no release hook (they read every release in Python).

Randomness: every stream is drawn by numpy in chunks, in exactly the numpy engine's order (environment:
reset then one uniform per step and one per Bernoulli reward; tie-breaking: one (runs,H,S,A) array per
episode; noise: drawn by the privatizer itself, ``CompiledNoise.draw``, from its own stream as its
``observe`` would), so the two engines see the same numbers; the arithmetic is the numpy engine's, step for step (module docstring of
``_kernels``), so they give the same trajectories bit for bit (tests/algorithms/online/test_compiled_engine.py). At the
end the privatizers' state (true counts, tree, local sums) is handed back, so the privatizer object is
exactly where the numpy engine would have left it.

Interfaces only: the engine reads and writes the privatizers through ``compiled_noise()``,
``export_state()`` / ``import_state(...)`` (in the form the plan's noise process prescribes; it never
asks what class a privatizer is), the environment through ``sampling_tables()`` and the agent through the
:class:`EpisodeLoop` record DPUCBVI.run builds; it imports no agent class (ucbvi imports this module).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np

from dpcheck.errors import InputError

ENGINES = ("auto", "numpy", "compiled")
_CHUNK_ELEMENTS = 1 << 21          # ~16 MB of pre-drawn noise per chunk


@dataclass(frozen=True)
class EpisodeLoop:
    """What DPUCBVI.run hands the compiled engine besides the privatizer, the environment and the
    random streams: sizes, the width and iota of docs/derivations.md#widths-e / Algorithm 1, the bonus constants, tie-breaking."""

    algorithm: str             # for progress messages
    K: int
    runs: int
    width: float | np.ndarray  # E: one scalar or (runs,) (a stacked batch of privatizers)
    iota: float
    c_variance: float
    c_reward: float
    c_privacy: float           # already multiplied by H S when the constants say privacy scales with HS
    scale: float
    random_ties: bool


class KernelArgs(NamedTuple):
    """The arguments of ``_kernels.run_episodes``, by name and in its order (the numba kernel takes them
    positionally; tests/algorithms/online/test_compiled_interfaces.py holds the two lists equal). Shapes and meanings:
    run_episodes' docstring. Built once per run; the per-chunk fields are replaced for each call."""

    n: int                 # episodes in this chunk
    e0: int                # first episode of the chunk
    H: int
    S: int
    A: int
    kind: np.ndarray       # (runs,) NONE / CENTRAL / LOCAL
    E: np.ndarray          # (runs,) widths
    iota: float
    c_var: float
    c_rew: float
    c_priv: float
    any_private: bool
    scale: float
    Hf: float
    Q: np.ndarray
    N: np.ndarray
    Ntr: np.ndarray
    R: np.ndarray
    psum: np.ndarray
    noisy: np.ndarray
    t0: int                # items already in the trees at the chunk's start
    sums: np.ndarray
    noise: np.ndarray
    ties: np.ndarray
    random_ties: bool
    env_u: np.ndarray
    bernoulli: bool
    init_cdf: np.ndarray
    cdf: np.ndarray
    rmean: np.ndarray
    network: np.ndarray
    policies: np.ndarray
    actions: np.ndarray
    states: np.ndarray
    record: bool


def available() -> bool:
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def _parts(priv, runs):
    from dpcheck.algorithms.online.stacking import StackedPrivatizer
    if isinstance(priv, StackedPrivatizer):
        return [(p, sl) for (p, _), sl in zip(priv.parts, priv.slices)]
    return [(priv, slice(0, runs))]


def plans(privatizer, runs) -> list | None:
    """Each part's :class:`~dpcheck.algorithms.privatizers.base.CompiledNoise` (the started privatizer's
    ``compiled_noise()``), or None if a part provides none."""
    out = []
    for p, _ in _parts(privatizer, runs):
        plan = getattr(p, "compiled_noise", lambda: None)()
        if plan is None:
            return None
        out.append(plan)
    return out


def ineligible(env, runs, *, privatizer, constants, variant: str | None, monitor: bool,
               release_hook) -> str | None:
    """Why the compiled engine cannot run this configuration, or None if it can.

    variant: None for the agents DPUCBVI and UCBVI themselves, else the name of the subclass (whose
    overridden seams the kernels would skip). ``privatizer`` is started.
    """
    from dpcheck.algorithms.envs.tabular import TabularMDP
    if not available():
        return "numba is not installed"
    if variant is not None:
        return f"{variant} is a variant (only DPUCBVI and UCBVI are compiled)"
    if constants.c_correction > 0:
        return "the bonus has term 4 (c_correction > 0, theory mode), which is not compiled"
    if monitor or release_hook is not None:
        return "monitors and release hooks read every release in Python"
    if type(env) is not TabularMDP:
        return f"the environment is a {type(env).__name__}, not a TabularMDP"
    if env.reward_noise not in ("deterministic", "bernoulli"):
        return f"reward model {env.reward_noise!r} is not compiled"
    for p, _ in _parts(privatizer, runs):
        if getattr(p, "rewards", None) is not True:
            return "privatizers without reward streams are not compiled"
        if getattr(p, "compiled_noise", lambda: None)() is None:
            return (f"privatizer {type(p).__name__} provides no compiled noise plan (compiled_noise() is None; "
                    f"docs/privatizers.md)")
    return None


def choose(engine: str, env, runs, *, privatizer, constants, variant: str | None, monitor: bool,
           release_hook) -> str:
    """The engine a run with ``engine=`` uses: "numpy" or "compiled" (see the module docstring)."""
    if engine not in ENGINES:
        raise InputError(f"engine must be one of {ENGINES}, got {engine!r}")
    if engine == "numpy":
        return "numpy"
    why = ineligible(env, runs, privatizer=privatizer, constants=constants, variant=variant,
                     monitor=monitor, release_hook=release_hook)
    if why is None:
        return "compiled"
    if engine == "compiled":
        raise InputError(f"engine='compiled' cannot run this configuration: {why}")
    return "numpy"


_KIND = {"exact": "NONE", "tree": "CENTRAL", "sum": "LOCAL"}


class _State:
    """The privatizers' exported state gathered into the kernel's per-run arrays (and handed back).

    Each part is read and written in the form its noise process prescribes (CompiledNoise); its noise
    comes from its own ``draw``: the engine never asks what class a privatizer is."""

    def __init__(self, priv, runs, H, S, A, K):
        from dpcheck.algorithms.online import _kernels
        from dpcheck.algorithms.privatizers.binary_mechanism import tree_levels
        self.parts = _parts(priv, runs)
        self.plans = plans(priv, runs)
        if self.plans is None:
            raise InputError("a privatizer provides no compiled noise plan (compiled.ineligible says which)")
        self.processes = [plan.process for plan in self.plans]
        HSA = H * S * A
        self.HSA, self.HSAS, self.C = HSA, HSA * S, HSA * (S + 2)
        self.runs, self.H, self.S, self.A = runs, H, S, A
        L = tree_levels(K)
        self.kind = np.empty(runs, dtype=np.int64)
        self.N = np.empty((runs, HSA))
        self.Ntr = np.empty((runs, HSA * S))
        self.R = np.empty((runs, HSA))
        has_tree, has_sum = "tree" in self.processes, "sum" in self.processes
        self.psum = np.zeros((runs, L, self.C) if has_tree else (runs, 1, 1))
        self.noisy = np.zeros((runs, L + 1, self.C) if has_tree else (runs, 1, 1))   # prefix releases
        self.sums = np.zeros((runs, self.C) if has_sum else (runs, 1))
        self.noisy_parts = has_tree or has_sum
        self.t0 = None
        self._noise = None
        self.exported = []
        for (p, sl), process in zip(self.parts, self.processes):
            n = sl.stop - sl.start
            state = p.export_state()
            self.exported.append(state)
            self.N[sl] = state["visits"].reshape(n, -1)
            self.Ntr[sl] = state["transitions"].reshape(n, -1)
            self.R[sl] = state["rewards"].reshape(n, -1)
            self.kind[sl] = getattr(_kernels, _KIND[process])
            if process == "tree":
                tree = state["tree"]
                self.psum[sl] = np.moveaxis(tree["partial_sums"], 0, 1)
                self.noisy[sl] = np.moveaxis(tree["prefix"], 0, 1)
                t = tree["t"]
            elif process == "sum":
                self.sums[sl] = np.concatenate([state["noisy_visits"].reshape(n, -1),
                                                state["noisy_transitions"].reshape(n, -1),
                                                state["noisy_rewards"].reshape(n, -1)], axis=1)
                t = state["episodes"]
            else:
                t = state["episodes"]
            if self.t0 is None:
                self.t0 = t
            elif t != self.t0:
                raise InputError("stacked privatizers have seen different numbers of episodes")

    def draw_noise(self, n, chunk):
        """(n, runs, C) noise of the next n episodes: each part draws its own slice from its own stream
        (CompiledNoise.draw). The array is kept across chunks (a fresh multi-MB array per chunk costs
        more in page faults and copies than the draws themselves)."""
        if not self.noisy_parts:
            return np.zeros((n, self.runs, 1))       # no noisy part: the kernel never reads it
        if self._noise is None:
            self._noise = np.empty((chunk, self.runs, self.C))
        noise = self._noise[:n]
        for (p, sl), plan in zip(self.parts, self.plans):
            if plan.draw is not None:
                plan.draw(noise[:, sl])
        return noise

    def scatter(self, episodes):
        """Hand the state back to the privatizers (as if the numpy engine had run ``episodes`` more)."""
        H, S, A, HSA, HSAS = self.H, self.S, self.A, self.HSA, self.HSAS
        for (p, sl), old, process in zip(self.parts, self.exported, self.processes):
            n = sl.stop - sl.start
            state = {"episodes": old["episodes"] + episodes,
                     "visits": self.N[sl].reshape(n, H, S, A),
                     "transitions": self.Ntr[sl].reshape(n, H, S, A, S),
                     "rewards": self.R[sl].reshape(n, H, S, A)}
            if process == "tree":
                tree = old["tree"]
                state["tree"] = {"t": tree["t"] + episodes, "node_draws": tree["node_draws"] + episodes,
                                 "partial_sums": np.moveaxis(self.psum[sl], 1, 0),
                                 "prefix": np.moveaxis(self.noisy[sl], 1, 0)}
            elif process == "sum":
                sums = self.sums[sl]
                state["noisy_visits"] = sums[:, :HSA].reshape(n, H, S, A)
                state["noisy_transitions"] = sums[:, HSA:HSA + HSAS].reshape(n, H, S, A, S)
                state["noisy_rewards"] = sums[:, HSA + HSAS:].reshape(n, H, S, A)
            p.import_state(state)


def run_compiled(loop: EpisodeLoop, privatizer, env, rng_env, rng_ties, Q, actions, states, evaluator,
                 progress: Callable[[str], None] | None) -> None:
    """The episode loop of DPUCBVI.run on the compiled kernels; updates Q, actions, states, evaluator
    and the privatizer's state."""
    from dpcheck.algorithms.online._kernels import run_episodes
    from dpcheck.algorithms.privatizers.projection import sorting_network
    H, S, A = env.H, env.S, env.A
    K, runs = loop.K, loop.runs
    st = _State(privatizer, runs, H, S, A, K)
    E_runs = np.broadcast_to(np.asarray(loop.width, dtype=float), (runs,)).copy()
    network = np.array(sorting_network(S), dtype=np.int64).reshape(-1, 2)   # empty: insertion sort
    bernoulli = env.reward_noise == "bernoulli"
    m = 2 if bernoulli else 1
    random_ties = loop.random_ties
    record = actions is not None
    acts = actions if record else np.zeros((1, 1, 1), dtype=np.int8)
    sts = states if record else np.zeros((1, 1, 1), dtype=np.int16)
    init_cdf, cdf = env.sampling_tables()
    init_cdf = np.ascontiguousarray(init_cdf, dtype=float)
    cdf = np.ascontiguousarray(cdf, dtype=float)
    rmean = np.ascontiguousarray(env.r, dtype=float)
    chunk = int(max(1, min(K, _CHUNK_ELEMENTS // max(1, runs * max(st.C, H * S * A)))))
    progress_every = max(1, K // 10)
    ties_buf = np.empty((chunk, runs, H, S, A)) if random_ties else np.zeros((1, 1, 1, 1, 1))
    env_buf = np.empty((chunk, 1 + H * m, runs))
    pol_buf = np.empty((chunk, runs, H, S), dtype=np.int8 if A < 128 else np.int32)
    kernel = KernelArgs(
        n=0, e0=0, H=H, S=S, A=A, kind=st.kind, E=E_runs, iota=float(loop.iota), c_var=float(loop.c_variance),
        c_rew=float(loop.c_reward), c_priv=float(loop.c_privacy), any_private=bool(np.any(E_runs > 0)),
        scale=float(loop.scale), Hf=float(H), Q=Q, N=st.N, Ntr=st.Ntr, R=st.R, psum=st.psum, noisy=st.noisy,
        t0=0, sums=st.sums, noise=None, ties=None, random_ties=random_ties, env_u=None, bernoulli=bernoulli,
        init_cdf=init_cdf, cdf=cdf, rmean=rmean, network=network, policies=None, actions=acts, states=sts,
        record=record)
    e0 = 0
    while e0 < K:
        n = min(chunk, K - e0)
        noise = st.draw_noise(n, chunk)
        ties = rng_ties.random(out=ties_buf[:n]) if random_ties else ties_buf
        env_u = rng_env.random(out=env_buf[:n])
        policies = pol_buf[:n]
        run_episodes(*kernel._replace(n=n, e0=e0, t0=int(st.t0 + e0), noise=noise, ties=ties, env_u=env_u,
                                      policies=policies))
        if evaluator is not None:
            for e in range(n):                      # copies: the buffer is refilled by the next chunk
                evaluator.add(e0 + e, policies[e].copy())
        if progress is not None:
            for k in range(e0, e0 + n):
                if (k + 1) % progress_every == 0:
                    progress(f"{loop.algorithm}: episode {k + 1}/{K}")
        e0 += n
    st.scatter(K)
