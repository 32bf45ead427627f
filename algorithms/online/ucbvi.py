"""DP-UCBVI (Qiao & Wang, AISTATS 2023, Algorithm 1) and the non-private UCBVI baseline.

Map (Qiao & Wang 2023): eq. 1 private estimates -> :func:`private_estimates`;
eq. 31 bonus (docs/derivations.md#constants) -> :mod:`dpcheck.algorithms.online.bonus`; Algorithm 1 value iteration with the
clip at H, the monotone min with Q~^{k-1} and tie-breaking -> :func:`backward_induction`
and :func:`greedy_policy`; the non-private baseline (docs/derivations.md#readings) -> :class:`UCBVI`.

Everything is batched over independent runs (leading axis); the backward induction
loops over h only. The agent reads nothing but the privatizer's release
(N~, R~ and the public width E) and the current user's state, so any
privatizer implementing the CountPrivatizer interface (Central -> eps-JDP,
Local -> eps-LDP, or a user's class) gives the privacy of that privatizer
(Billboard lemma, Section 5.1; Lemma 5.1's data flow, post-processing).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from dpcheck.algorithms.online.bonus import BonusConstants, bernstein_bonus, correction_g
from dpcheck.algorithms.privatizers.projection import _sum_last
from dpcheck.errors import InputError, MechanismError

TIE_BREAKING = ("random", "lowest")


# ----------------------------------------------------------------------------- pure batched pieces
def _max_last(x, out=None):
    """max over the last (action) axis. numpy's reduction over a short trailing axis costs ~10x an
    elementwise maximum (profiled: 11.8 vs 1.1 us at (64, 6, 2)), so for few actions fold it."""
    A = x.shape[-1]
    if A > 8:
        return x.max(axis=-1, out=out)
    if A == 1:
        if out is None:
            return x[..., 0].copy()
        out[...] = x[..., 0]
        return out
    out = np.maximum(x[..., 0], x[..., 1], out=out)
    for a in range(2, A):
        np.maximum(out, x[..., a], out=out)
    return out


def _argmax_last(x):
    """argmax over the last axis, first maximiser on ties (same as ndarray.argmax), folded for few actions."""
    A = x.shape[-1]
    if A > 8:
        return x.argmax(axis=-1)
    best = x[..., 0].copy()
    idx = np.zeros(best.shape, dtype=np.intp)
    for a in range(1, A):
        better = x[..., a] > best
        idx[better] = a
        np.maximum(best, x[..., a], out=best)
    return idx


def _fold_last(x, out):
    """out = x[..., 0] + x[..., 1] + ... + x[..., n-1], added left to right (a fixed order on every machine)."""
    n = x.shape[-1]
    if n == 1:
        out[...] = x[..., 0]
        return out
    np.add(x[..., 0], x[..., 1], out=out)
    for j in range(2, n):
        np.add(out, x[..., j], out=out)
    return out


def private_estimates(transitions_private, visits_private, rewards_private):
    """Eq. 1: P~ = N~(s,a,s') / N~(s,a), r~ = clip_[0,1](R~ / N~).

    Shapes: transitions (runs,H,S,A,S), visits (runs,H,S,A), rewards (runs,H,S,A) or None
    (None -> r~ = 0, used only when rewards are known elsewhere). Where N~(s,a) = 0
    (possible only with E = 0, the non-private baseline) P~ is uniform and r~ = 0; the
    bonus is +inf there, so these placeholder values never reach Q~.
    """
    S = transitions_private.shape[-1]
    visited = visits_private > 0
    inv = 1.0 / np.where(visited, visits_private, 1.0)
    # unvisited rows have N~(s,a,s') = 0 too under E = 0, so one multiply gives 0 there; the
    # uniform placeholder is written only where needed (one pass over the big array, not three)
    P = transitions_private * inv[..., None]
    if not visited.all():
        P[~visited] = 1.0 / S
    if rewards_private is None:
        r = np.zeros_like(visits_private, dtype=float)
    else:
        r = np.clip(np.where(visited, rewards_private * inv, 0.0), 0.0, 1.0)
    return P, r


def backward_induction(transition_private, reward_private, visits_private, Q_previous, *,
                       E: float, iota: float, constants: BonusConstants):
    """One episode of Algorithm 1's value iteration, batched over runs; loops over h only.

    Shapes: P~ (runs,H,S,A,S), r~ (runs,H,S,A), N~ (runs,H,S,A), Q~^{k-1} (runs,H,S,A); E a scalar
    or (runs,) (one width per run when the batch stacks several privatizers).
    Returns Q~^k (runs,H,S,A) and V~^k (runs,H+1,S) (V~_{H+1} = 0).

    Q~_h = min{Q~_h^{k-1}, H, r~ + P~ V~_{h+1} + b_h}: clipped at H for every h (not
    H - h + 1), and the min with the previous episode makes Q~ non-increasing in k.
    """
    runs, H, S, A, _ = transition_private.shape
    Hf = float(H)
    r = reward_private
    c = constants
    Q = np.empty((runs, H, S, A))
    V = np.zeros((runs, H + 1, S))
    # terms 2-4 of the bonus do not depend on V~: evaluate them for all h at once (bonus with
    # V = 0 and no variance term); only term 1 is computed inside the h-loop
    zero_V = np.zeros((runs * H, S))
    flat = (runs * H, S, A, S)
    E = np.asarray(E, dtype=float)  # scalar, or (runs,) for a stacked batch of privatizers
    E_rows = np.repeat(E, H) if E.ndim == 1 else E
    static = bernstein_bonus(transition_private.reshape(flat), visits_private.reshape(runs * H, S, A),
                             zero_V, None, H=H, E=E_rows, iota=iota, constants=c, last_step=True,
                             include_variance=False).reshape(runs, H, S, A)
    if c.c_correction > 0 and H > 1:
        state_next = _sum_last(visits_private)  # N~_h(s) (runs,H,S)
        g = np.minimum(correction_g(state_next[:, 1:], H=H, S=S, A=A,
                                    E=E.reshape(-1, 1, 1) if E.ndim == 1 else E, iota=iota,
                                    g_constant=c.g_constant), Hf ** 2)  # (runs,H-1,S)
        W = np.einsum("rhsat,rht->rhsa", transition_private[:, :-1], g)
        n = visits_private[:, :-1]
        with np.errstate(divide="ignore", invalid="ignore"):
            term4 = c.scale * c.c_correction * math.sqrt(iota) * np.sqrt(W / np.where(n > 0, n, 1.0))
        static[:, :-1] += np.where(n > 0, term4, np.inf)
    # coefficient of sqrt(Var) in term 1; 0 at unvisited pairs, whose static part is already +inf
    visited = visits_private > 0
    var_coef = np.where(visited, c.scale * c.c_variance * np.sqrt(iota / np.where(visited, visits_private, 1.0)), 0.0)
    base = r + static  # (runs,H,S,A)
    P_flat = transition_private.reshape(runs, H, S * A, S)
    Q_cap = np.minimum(Q_previous, Hf)
    # per-h buffers written with out=: the loop is numpy-call bound at audit batch sizes, so no
    # temporaries; the arithmetic and its order are those of
    # target = (r~ + s) + P~V + c sqrt(max(P~V^2 - (P~V)^2, 0)), Q = min(Q_cap, target).
    # The dot products P~V and P~(V^2) are summed left to right over s' (_fold_last), not by BLAS
    # matmul, whose summation order depends on the machine's kernel: the compiled engine
    # (algorithms/online/_kernels.py) sums in the same order and so gets bit-identical Q~.
    V2 = np.empty((runs, S))
    prod = np.empty((runs, S * A, S))
    mean = np.empty((runs, S, A))
    second = np.empty((runs, S, A))
    mean_flat = mean.reshape(runs, S * A)
    second_flat = second.reshape(runs, S * A)
    spread = np.empty((runs, S, A))
    target = np.empty((runs, S, A))
    for h in range(H - 1, -1, -1):
        Vn = V[:, h + 1]
        np.multiply(Vn, Vn, out=V2)
        np.multiply(P_flat[:, h], Vn[:, None, :], out=prod)
        _fold_last(prod, mean_flat)
        np.multiply(P_flat[:, h], V2[:, None, :], out=prod)
        _fold_last(prod, second_flat)
        np.multiply(mean, mean, out=spread)
        np.subtract(second, spread, out=spread)
        np.maximum(spread, 0.0, out=spread)
        np.sqrt(spread, out=spread)
        np.multiply(var_coef[:, h], spread, out=spread)
        np.add(base[:, h], mean, out=target)
        np.add(target, spread, out=target)
        np.minimum(Q_cap[:, h], target, out=Q[:, h])
        _max_last(Q[:, h], out=V[:, h])
    return Q, V


def greedy_policy(Q, rng: np.random.Generator | None, tie_breaking: str = "random"):
    """pi_h(s) = argmax_a Q~_h(s,a); Q (runs,H,S,A) -> (runs,H,S) int.

    "random": uniform among the exact maximisers, from the run's tie-breaking stream (the
    default; Algorithm 1 says "arbitrary"); "lowest": the lowest maximising index. Ties are
    exact equalities: they arise from the clip at H and the min with Q~^{k-1}, which
    produce bit-identical values.
    """
    if tie_breaking == "lowest":
        return _argmax_last(Q)
    best = _max_last(Q)[..., None]
    u = rng.random(Q.shape)
    return _argmax_last(np.where(Q == best, u, -1.0))


# ----------------------------------------------------------------------------- results
@dataclass(frozen=True)
class UCBVIRun:
    """The record of one batched run of (DP-)UCBVI.

    config:     the agent's configuration (algorithm, mode, calibration, constants, E, iota...).
    width:      E, or one E per run when the privatizer stacks several (dpcheck.algorithms.online.stacking).
    actions:    (runs, K, H) actions recommended to the users (what a JDP adversary sees
                for the users it colludes with); None if not recorded.
    states:     (runs, K, H+1) states reported by the users; None if not recorded.
    regret:     (runs, K) exact expected regret per episode E_{s~d1}[V*_1 - V^{pi_k}_1]
                (policy evaluation on the true model); None for environments without a model.
    monitors:   per-run diagnostics (numpy arrays of shape (runs,) unless noted), see
                :meth:`DPUCBVI.run`.
    """

    config: dict
    K: int
    runs: int
    H: int
    S: int
    A: int
    width: float | np.ndarray
    iota: float
    actions: np.ndarray | None
    states: np.ndarray | None
    regret: np.ndarray | None
    monitors: dict = field(default_factory=dict)
    duration_s: float = 0.0

    @property
    def cumulative_regret(self) -> np.ndarray:
        """(runs, K) Regret(k) = sum_{i<=k} regret_i."""
        if self.regret is None:
            raise InputError("this run has no regret (the environment exposes no true model)")
        return np.cumsum(self.regret, axis=1)

    @property
    def episodes_per_second(self) -> float:
        return self.K / self.duration_s if self.duration_s > 0 else float("inf")

    def summary(self) -> str:
        E = (f"{self.width:.4g}" if np.ndim(self.width) == 0
             else f"[{np.min(self.width):.4g}, {np.max(self.width):.4g}] per run")
        lines = [f"{self.config.get('algorithm')} mode={self.config.get('mode')} "
                 f"calibration={self.config.get('calibration')} E={E} iota={self.iota:.4g}",
                 f"K={self.K} runs={self.runs} H={self.H} S={self.S} A={self.A} "
                 f"({self.episodes_per_second:.0f} episodes/s)"]
        if self.regret is not None:
            cr = self.cumulative_regret[:, -1]
            lines.append(f"Regret(K) mean {cr.mean():.4g} (runs: {np.array2string(cr, precision=4)})")
        for k in ("optimism_violations", "vacuous_fraction"):
            if k in self.monitors:
                lines.append(f"{k}: {np.array2string(np.asarray(self.monitors[k]), precision=4)}")
        return "\n".join(lines)


# ----------------------------------------------------------------------------- the agent
def _as_generator(rng) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (np.random.SeedSequence, int, np.integer)):
        return np.random.default_rng(rng)
    raise InputError(f"rng must be a numpy Generator, SeedSequence or int seed, got {type(rng).__name__}")


def _check_int(name, v, lo):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
        raise InputError(f"{name} must be an integer >= {lo}, got {v!r}")
    return int(v)


class DPUCBVI:
    """DP-UCBVI (Algorithm 1) with any CountPrivatizer.

    The constructor stores and validates configuration; :meth:`run` does the work.

    privatizer:   a CountPrivatizer (CentralPrivatizer -> eps-JDP, LocalPrivatizer ->
                  eps-LDP, NoPrivatizer -> exact counts, E = 0, i.e. UCBVI) or a name
                  accepted by ``dpcheck.algorithms.privatizers.load_privatizer``.
    beta:         failure probability of the utility statements (iota, E).
    mode:         "theory" (paper constants) or "practical" (BonusConstants.practical, reports/reproductions/dp_ucbvi_fig1/README.md).
    constants:    explicit BonusConstants (overrides ``mode``'s defaults; its mode is reported).
    tie_breaking: "random" (seeded, default) or "lowest".
    """

    algorithm = "DP-UCBVI"

    def __init__(self, privatizer, *, beta: float = 0.1, mode: str = "theory",
                 constants: BonusConstants | None = None, tie_breaking: str = "random"):
        if isinstance(privatizer, str):
            from dpcheck.algorithms.privatizers import load_privatizer
            privatizer = load_privatizer(privatizer)
        for meth in ("start", "observe", "release"):
            if not callable(getattr(privatizer, meth, None)):
                raise InputError(f"privatizer {type(privatizer).__name__} has no {meth}() method; "
                                 f"it must implement the CountPrivatizer interface")
        if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not 0 < beta < 1:
            raise InputError(f"beta must lie in (0, 1), got {beta!r}")
        if tie_breaking not in TIE_BREAKING:
            raise InputError(f"tie_breaking must be one of {TIE_BREAKING}, got {tie_breaking!r}")
        self.privatizer = privatizer
        self.beta = float(beta)
        self.constants = constants if constants is not None else BonusConstants.for_mode(mode)
        if not isinstance(self.constants, BonusConstants):
            raise InputError("constants must be a BonusConstants")
        self.mode = self.constants.mode
        self.tie_breaking = tie_breaking

    def __repr__(self):
        return (f"{type(self).__name__}(privatizer={self.privatizer!r}, beta={self.beta:g}, "
                f"mode={self.mode!r}, tie_breaking={self.tie_breaking!r})")

    # -- configuration as data --------------------------------------------------------------
    def config(self) -> dict:
        p = self.privatizer
        return {"algorithm": self.algorithm, "privatizer": type(p).__name__, "mode": self.mode,
                "calibration": getattr(p, "calibration", None), "width_mode": getattr(p, "width_mode", None),
                "epsilon": getattr(p, "epsilon", None), "beta": self.beta, "tie_breaking": self.tie_breaking,
                "constants": self.constants.to_dict()}

    # -- the work -----------------------------------------------------------------------------
    def run(self, env, K: int, rng, runs: int = 1, *, record: bool = True, reference=None,
            monitor: bool = True, regret: bool = True, progress=None, release_hook=None,
            plan_hook=None, estimates_hook=None, engine: str = "auto") -> UCBVIRun:
        """Run K episodes on ``env`` for ``runs`` independent runs at once.

        env:       an environment with batched ``reset(runs, rng)`` / ``step``-style rollout
                   (dpcheck.algorithms.envs: TabularMDP or ScriptedUsers).
        rng:       Generator / SeedSequence / int; split into three independent streams
                   (environment, privatizer noise, tie-breaking) so that noise can be
                   switched off without changing the environment's randomness (docs/derivations.md#readings).
        record:    keep actions and states (runs, K, H[+1]) (int8/int16).
        reference: Q* (H,S,A) for the optimism monitor; default: computed from env's model.
        monitor:   compute Assumption 3.1 / optimism / vacuity diagnostics (uses the true
                   counts, for checking only; the agent never reads them).
        regret:    exact expected regret per episode from the true model.
        release_hook: called as ``release_hook(counts, privatizer)`` after every release (checkers,
                   e.g. audits/lib/tabular.CountAssumptionMonitor; the agent ignores it).
        plan_hook: called as ``plan_hook(k, Q, policy)`` after every planning step (k 0-based; Q~^k and the
                   greedy policy; checkers, e.g. the dataflow check of audits/lib/ucbvi/privacy.py, which compares
                   them under a replayed release stream; the agent ignores it).
        estimates_hook: called as ``estimates_hook(k, P, r, n)`` with the (P~, r~, N~) the planner is about to
                   use in episode k (eq. 1, after :meth:`_estimates`; checkers, e.g. the planner monitor of
                   audits/lib/ucbvi/planner.py, which judges the P~ and the bonus the planner actually used; the
                   agent ignores it).
        engine:    "auto" (default: the compiled engine of algorithms/online/compiled.py when it covers
                   the run, else numpy), "numpy" or "compiled" (an InputError if it does not cover
                   the run). Both draw the same random numbers in the same order; reported in config.

        monitors (each (runs,)): optimism_violations (#(k,h,s,a) with Q~ < Q* - 1e-9),
        optimism_min_margin (min Q~ - Q*), optimism_first_violation (first episode, -1 if none),
        vacuous_fraction (fraction of (k,h,s,a) with Q~ = H), vacuous_fraction_last (at k = K),
        monotonicity_violations (#Q~^k > Q~^{k-1}), above_H (#Q~ > H). Properties of the released counts
        (count error, sum identity, valid P~, no underestimation) are judged from ``release_hook`` by
        audits/lib/tabular.CountAssumptionMonitor, the one definition every audit uses.
        """
        K = _check_int("K", K, 1)
        runs = _check_int("runs", runs, 1)
        rng = _as_generator(rng)
        rng_env, rng_noise, rng_ties = rng.spawn(3)
        H, S, A = _env_shape(env)
        iota = self.constants.iota_value(H, S, A, K, self.beta)
        priv = self.privatizer
        try:
            priv.start(runs, H, S, A, K, rng_noise, rewards=True)
        except TypeError as e:
            raise MechanismError(f"privatizer {type(priv).__name__}.start() failed: {e}") from e
        try:
            E = np.asarray(priv.width, dtype=float)
        except (TypeError, ValueError):
            raise MechanismError(f"privatizer {type(priv).__name__} declared a non-numeric width E") from None
        if E.ndim == 0:
            E = float(E)
        elif E.shape != (runs,):
            raise MechanismError(f"privatizer {type(priv).__name__} declared widths of shape {E.shape}; "
                                 f"need a scalar E or one per run ({runs},)")
        if not (np.all(np.isfinite(E)) and np.all(np.asarray(E) >= 0)):
            raise MechanismError(f"privatizer {type(priv).__name__} declared width E={E!r}; need a finite E >= 0")

        model = _true_model(env)
        if reference is None and model is not None and monitor:
            from dpcheck.algorithms.envs.planning import optimal_values
            reference = _optimal_Q(model, optimal_values)
        from dpcheck.algorithms.online import compiled
        variant = None if type(self) in (DPUCBVI, UCBVI) else type(self).__name__
        engine_used = compiled.choose(engine, env, runs, privatizer=priv, constants=self.constants,
                                      variant=variant, monitor=monitor,
                                      release_hook=release_hook or plan_hook or estimates_hook)
        self._begin(runs, H, S, A)
        t0 = time.perf_counter()
        Q = np.full((runs, H, S, A), float(H))
        actions = np.empty((runs, K, H), dtype=np.int8 if A < 128 else np.int32) if record else None
        states = np.empty((runs, K, H + 1), dtype=np.int16 if S < 32000 else np.int32) if record else None
        mon = _Monitor(runs, H, S, A, reference) if monitor else None
        evaluator = _RegretEvaluator(model, runs, K) if (regret and model is not None) else None

        if engine_used == "compiled":
            c = self.constants
            loop = compiled.EpisodeLoop(
                algorithm=self.algorithm, K=K, runs=runs, width=E, iota=iota, c_variance=c.c_variance,
                c_reward=c.c_reward, c_privacy=c.c_privacy * (H * S if c.privacy_scales_with_HS else 1.0),
                scale=c.scale, random_ties=self.tie_breaking == "random")
            compiled.run_compiled(loop, priv, env, rng_env, rng_ties, Q, actions, states, evaluator, progress)
        for k in range(K if engine_used == "numpy" else 0):
            counts = priv.release()
            _validate_release(counts, runs, H, S, A, type(priv).__name__)
            if release_hook is not None:
                release_hook(counts, priv)
            P, r, n = self._estimates(counts)
            if estimates_hook is not None:
                estimates_hook(k, P, r, n)
            Q, V = backward_induction(P, r, n, Q, E=E, iota=iota, constants=self.constants)
            policy = greedy_policy(Q, rng_ties, self.tie_breaking)
            if plan_hook is not None:
                plan_hook(k, Q, policy)
            if mon is not None:
                mon.update(k, Q)
            if evaluator is not None:
                evaluator.add(k, policy)
            st, ac, rw = _rollout(env, policy, rng_env, k)
            if record:
                actions[:, k] = ac
                states[:, k] = st
            priv.observe(st, ac, rw)
            self._after_episode(st, ac, rw)
            if progress is not None and (k + 1) % max(1, K // 10) == 0:
                progress(f"{self.algorithm}: episode {k + 1}/{K}")
        duration = time.perf_counter() - t0
        cfg = self.config()
        cfg.update(width=E, iota=iota, engine=engine_used)
        return UCBVIRun(config=cfg, K=K, runs=runs, H=H, S=S, A=A, width=E, iota=iota,
                        actions=actions, states=states,
                        regret=evaluator.result() if evaluator is not None else None,
                        monitors=mon.result() if mon is not None else {}, duration_s=duration)

    # -- the seams a planted defect (tests/audits/test_dp_ucbvi_defects.py) or a variant overrides ------------
    def _begin(self, runs, H, S, A):
        """Called once before episode 1. DP-UCBVI keeps no state of its own besides Q~^{k-1}."""

    def _estimates(self, counts):
        """(P~, r~, N~) from the privatizer's release only (eq. 1); the bonus reads the same N~."""
        P, r = private_estimates(counts.transitions, counts.visits, counts.rewards)
        return P, r, counts.visits

    def _after_episode(self, states, actions, rewards):
        """Called with each episode's raw trajectories after the privatizer saw them. DP-UCBVI
        ignores them: the agent's view of the data is the privatizer's release (Billboard lemma)."""


class UCBVI(DPUCBVI):
    """Non-private UCBVI (docs/derivations.md#readings): DP-UCBVI's code on exact counts (N~ = N, R~ = R, E = 0).

    Unvisited (h,s,a) have bonus +inf, so Q~ = H there (Azar et al.'s convention). With the
    theory constants this is UCBVI with the paper's Bernstein bonus and iota.
    """

    algorithm = "UCBVI"

    def __init__(self, *, beta: float = 0.1, mode: str = "theory", constants: BonusConstants | None = None,
                 tie_breaking: str = "random"):
        from dpcheck.algorithms.privatizers import NoPrivatizer
        super().__init__(NoPrivatizer(), beta=beta, mode=mode, constants=constants, tie_breaking=tie_breaking)


# ----------------------------------------------------------------------------- environment glue
def _env_shape(env) -> tuple[int, int, int]:
    try:
        H, S, A = int(env.H), int(env.S), int(env.A)
    except (AttributeError, TypeError, ValueError):
        raise InputError(f"environment {type(env).__name__} must expose H, S and A "
                         f"(dpcheck.algorithms.envs.TabularMDP or ScriptedUsers)") from None
    if min(H, S, A) < 1:
        raise InputError(f"environment sizes must be >= 1, got H={H}, S={S}, A={A}")
    return H, S, A


def _true_model(env):
    """The TabularMDP behind ``env`` if there is one (regret and optimism need it)."""
    from dpcheck.algorithms.envs.tabular import TabularMDP
    if isinstance(env, TabularMDP):
        return env
    model = getattr(env, "mdp", None)
    return model if isinstance(model, TabularMDP) else None


def _optimal_Q(model, optimal_values):
    Q_star, _ = optimal_values(model)
    return Q_star


def _rollout(env, policy, rng, k):
    """One episode for every run: (states (runs,H+1), actions (runs,H), rewards (runs,H)).

    Environments with per-episode users (ScriptedUsers) take the episode index k.
    """
    if getattr(env, "per_episode", False):
        tr = env.rollout(policy, rng, episode=k)
    else:
        tr = env.rollout(policy, rng)
    return tr[0], tr[1], tr[2]


def _validate_release(counts, runs, H, S, A, who):
    """A user's privatizer that returns the wrong shapes is a MechanismError, not our crash."""
    try:
        shapes = (np.shape(counts.visits), np.shape(counts.transitions))
    except AttributeError:
        raise MechanismError(f"privatizer {who}.release() must return PrivateCounts "
                             f"(visits, transitions, rewards, ...), got {type(counts).__name__}") from None
    if shapes != ((runs, H, S, A), (runs, H, S, A, S)):
        raise MechanismError(f"privatizer {who}.release() returned visits {shapes[0]} and transitions "
                             f"{shapes[1]}; expected {(runs, H, S, A)} and {(runs, H, S, A, S)}")
    if counts.rewards is not None and np.shape(counts.rewards) != (runs, H, S, A):
        raise MechanismError(f"privatizer {who}.release() returned rewards {np.shape(counts.rewards)}; "
                             f"expected {(runs, H, S, A)}")


class _RegretEvaluator:
    """Exact expected regret per episode, E_{s~d1}[V*_1(s) - V^{pi_k}_1(s)] (Section 2.1; Theorem 4.1).

    Policies are buffered and evaluated in chunks with the batched exact planner, so the
    cost is one backward induction per chunk instead of per episode.
    """

    chunk = 256

    def __init__(self, model, runs, K):
        from dpcheck.algorithms.envs.planning import suboptimality
        self._subopt = suboptimality
        self.model = model
        self.regret = np.empty((runs, K))
        self.buffer = []
        self.start = 0

    def add(self, k, policy):
        self.buffer.append(policy)
        if len(self.buffer) == self.chunk:
            self._flush()

    def _flush(self):
        if not self.buffer:
            return
        pol = np.stack(self.buffer, axis=1)  # (runs, n, H, S)
        n = pol.shape[1]
        self.regret[:, self.start:self.start + n] = np.maximum(self._subopt(self.model, pol), 0.0)
        self.start += n
        self.buffer = []

    def result(self):
        self._flush()
        return self.regret


class _Monitor:
    """Diagnostics of Q~ for the checks: optimism (Lemmas C.9/C.11), monotonicity, the clip at H, vacuity.

    The released counts are not judged here: audits/lib/tabular.CountAssumptionMonitor does that from
    the releases it gets through ``release_hook`` (one definition, used by every audit).
    """

    def __init__(self, runs, H, S, A, Q_star):
        self.runs, self.H = runs, H
        self.Q_star = Q_star
        f = lambda v: np.full(runs, v, dtype=float)
        self.m = dict(optimism_violations=np.zeros(runs, dtype=np.int64), optimism_min_margin=f(np.inf),
                      optimism_first_violation=np.full(runs, -1, dtype=np.int64),
                      vacuous_fraction=f(0.0), vacuous_fraction_last=f(0.0),
                      monotonicity_violations=np.zeros(runs, dtype=np.int64), above_H=np.zeros(runs, dtype=np.int64))
        self.Q_prev = None
        self.k = 0

    def update(self, k, Q):
        m, ax = self.m, (1, 2, 3)
        H = self.H
        self.k = k + 1
        if self.Q_star is not None:
            gap = Q - self.Q_star
            bad = (gap < -1e-9).sum(axis=ax)
            first = (bad > 0) & (m["optimism_first_violation"] < 0)
            m["optimism_first_violation"][first] = k + 1
            m["optimism_violations"] += bad
            m["optimism_min_margin"] = np.minimum(m["optimism_min_margin"], gap.min(axis=ax))
        vac = (Q >= H).mean(axis=ax)
        m["vacuous_fraction"] += vac
        m["vacuous_fraction_last"] = vac
        if self.Q_prev is not None:
            m["monotonicity_violations"] += (Q > self.Q_prev + 1e-12).sum(axis=ax)
        m["above_H"] += (Q > H + 1e-12).sum(axis=ax)
        self.Q_prev = Q

    def result(self):
        m = dict(self.m)
        m["vacuous_fraction"] = m["vacuous_fraction"] / max(self.k, 1)
        if self.Q_star is None:
            for key in ("optimism_violations", "optimism_min_margin", "optimism_first_violation"):
                m.pop(key)
        return m
