"""DP-Nash-VI: private self-play in two-player zero-sum Markov games (Qiao & Wang 2024, Algorithm 1).

Qiao & Wang (2024), Algorithm 1. Per episode k, on the private counts N~ released by a
CountPrivatizer (games are handed to privatizers as joint actions j = a * B + b, rewards=False
because the reward is known, Section 2.1):

    P~_h(.|s,a,b) = N~_h(s,a,b,.) / N~_h(s,a,b)                                     [eq. 1]
    gamma = (C1/H) P~ (Vb - Vu)_{h+1}                                               (line 8)
    Gamma = C2 sqrt(Var_P~((Vb+Vu)/2) iota / N~) + C2 H S E iota / N~ + C2 H^2 S iota / N~   (line 9)
    Qb = min(r + P~ Vb_{h+1} + gamma + Gamma, H),  Qu = max(r + P~ Vu_{h+1} - gamma - Gamma, 0)
    pi_h(.,.|s) = CCE(Qb_h(s), Qu_h(s)),  Vb_h = <pi, Qb>,  Vu_h = <pi, Qu>          (lines 14-15)

then (a_h, b_h) ~ pi_h(.,.|s_h) JOINTLY, the privatizer ingests the trajectory, and the output
policy is the episode with the smallest certificate (Vb_1 - Vu_1)(s_1) (lines 20-24).

Choices the paper leaves to us (docs/derivations.md#constants, #readings) (documented here, reported in every output via ``config``):

* ``mode="theory"``: C1 = 2, C2 = 10 (docs/derivations.md#constants), E = max(E, 1) (docs/derivations.md#widths-e). With these constants the
  bonus exceeds H for every feasible K (docs/derivations.md#widths-e), so Qb = H, Qu = 0 and the D/P checks are
  vacuous; they still test the code paths. ``mode="practical"``: C1 = 0.1, C2 = 0.02 (DP-UCBVI's reproduction, reports/reproductions/dp_ucbvi_fig1/README.md
  caveat: the paper's constants make the regret linear; the practical constants are labelled, only the
  orders are expected to match). The width E comes from the privatizer in either mode; its
  width_mode (rigorous / calibrated / nominal) is reported. Privacy never depends on C1, C2 or E.
* Non-private Nash-VI (NoPrivatizer, E = 0): true counts; where N_h(s,a,b) = 0 the convention
  Qb = H, Qu = 0 (Section 6 budgets) replaces the undefined P^.
* Delta starts at +inf (docs/derivations.md#readings), so pi^out = pi^1 at least; the earliest minimiser wins (strict <).
* s_1: the games may have an initial distribution; the certificate uses E_{s~init}[(Vb_1 - Vu_1)(s)],
  which is (Vb_1 - Vu_1)(s_1) for the paper's fixed s_1.
* RNG streams: ``run(game, K, rng)`` spawns three independent children of ``rng``: environment,
  privacy noise (given to the privatizer) and policy sampling, so changing one never shifts another.
* Steps are 0-based in code (h = 0..H-1), 1-based in the paper.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from dpcheck.algorithms.games.cce import solve_cce
from dpcheck.errors import DPCheckError, InputError, MechanismError

ENGINES = ("auto", "numpy", "compiled")
__all__ = ["DPNashVI", "NashVIResult", "THEORY_CONSTANTS", "PRACTICAL_CONSTANTS", "confidence_log"]

THEORY_CONSTANTS = {"C1": 2.0, "C2": 10.0}       # docs/derivations.md#constants (derived minimal values)
PRACTICAL_CONSTANTS = {"C1": 0.1, "C2": 0.02}     # labelled practical mode (see module docstring)


def confidence_log(H: int, S: int, A: int, B: int, K: int, beta: float) -> float:
    """iota = log(30 H S A B K / beta) (Algorithm 1: K, not T)."""
    return math.log(30 * H * S * A * B * K / beta)


@dataclass
class NashVIResult:
    """What one batch of DP-Nash-VI runs did. Leading axis = runs, then episodes k = 0..K-1.

    mu_out (runs, H, S, A), nu_out (runs, H, S, B): marginals of pi^out (Algorithm 1 lines 20-24).
    delta (runs,): the final certificate Delta = min_k (Vb_1^k - Vu_1^k)(s_1).
    k_out (runs,): the (0-based) episode of pi^out.
    certificate (runs, K): (Vb_1^k - Vu_1^k)(s_1) per episode.
    mu (runs, K, H, S, A), nu (runs, K, H, S, B): episode marginals (the regret is their duality gap).
    pi, Qb, Qu (runs, K, H, S, A, B), Vb, Vu (runs, K, H+1, S): only if ``record_values``.
    states, actions_max, actions_min (runs, K, H+1 / H): the trajectories.
    vacuous (runs, K): True where Qb = H and Qu = 0 at every (h, s, a, b) (bonus saturated).
    width: E used (after the floor); iota; config: constants, mode, privatizer, calibration.
    cce_stats: how the stage games were solved (pure / simplex / HiGHS counts, max residual).
    """

    mu_out: np.ndarray
    nu_out: np.ndarray
    delta: np.ndarray
    k_out: np.ndarray
    certificate: np.ndarray
    mu: np.ndarray
    nu: np.ndarray
    states: np.ndarray
    actions_max: np.ndarray
    actions_min: np.ndarray
    vacuous: np.ndarray
    width: float
    iota: float
    config: dict
    cce_stats: dict
    pi: np.ndarray | None = None
    Qb: np.ndarray | None = None
    Qu: np.ndarray | None = None
    Vb: np.ndarray | None = None
    Vu: np.ndarray | None = None


@functools.lru_cache(maxsize=None)
def _load_plan_kernel():
    """algorithms/games/_plan_kernel.py, or None if numba is not installed. Imported once per process (an
    lru_cache, as cce._kernels: the chunk cache's fingerprint walks code, not a filled-in global); compiled once
    per machine (numba's on-disk cache)."""
    try:
        from dpcheck.algorithms.games import _plan_kernel
    except ImportError:
        return None
    return _plan_kernel


class DPNashVI:
    """DP-Nash-VI (Qiao & Wang 2024, Algorithm 1) with any CountPrivatizer.

    privatizer: a CountPrivatizer (Central -> JDP, Local -> LDP, NoPrivatizer -> non-private Nash-VI,
                or a user's class); the algorithm only ever reads its released N~ and width E.
    beta:       failure probability of the utility statements.
    mode:       "theory" (C1 = 2, C2 = 10) or "practical" (labelled scaled constants).
    C1, C2:     override the mode's constants.
    record_values: keep pi, Qb, Qu, Vb, Vu of every episode (for the UCB/LCB and CCE checks).
    engine:     how ``plan`` runs. "auto" (default): the numba kernel of algorithms/games/_plan_kernel.py where
                numba is installed and none of ``bonuses``, ``upper_q``, ``lower_q``, ``cce`` is overridden (a
                subclass that changes one of them runs its own code), else numpy; "numpy": always the numpy
                path (the reference); "compiled": the kernel or an InputError saying why not.
    """

    cce = staticmethod(solve_cce)

    def __init__(self, privatizer=None, *, beta: float = 0.1, mode: str = "theory", C1: float | None = None,
                 C2: float | None = None, record_values: bool = False, cce_method: str = "auto",
                 engine: str = "auto"):
        if engine not in ENGINES:
            raise InputError(f"engine must be one of {ENGINES}, got {engine!r}")
        if mode not in ("theory", "practical"):
            raise InputError(f"mode must be 'theory' or 'practical', got {mode!r}")
        if not (isinstance(beta, (int, float)) and 0 < beta < 1):
            raise InputError(f"beta must lie in (0, 1), got {beta!r}")
        consts = dict(THEORY_CONSTANTS if mode == "theory" else PRACTICAL_CONSTANTS)
        if C1 is not None:
            consts["C1"] = float(C1)
        if C2 is not None:
            consts["C2"] = float(C2)
        if not (consts["C1"] >= 0 and consts["C2"] >= 0 and math.isfinite(consts["C1"] + consts["C2"])):
            raise InputError(f"C1, C2 must be finite and >= 0, got {consts}")
        self.privatizer = privatizer
        self.beta = float(beta)
        self.mode = mode
        self.C1, self.C2 = consts["C1"], consts["C2"]
        self.record_values = bool(record_values)
        self.cce_method = cce_method
        self.engine = engine

    def __repr__(self):
        return (f"DPNashVI(privatizer={self.privatizer!r}, beta={self.beta:g}, mode={self.mode!r}, "
                f"C1={self.C1:g}, C2={self.C2:g})")

    # ------------------------------------------------------------------ planning (lines 3-15)
    def bonuses(self, P_tilde, G, Vm, N_bonus, H, S, E, iota, PG=None, PV=None, PV2=None):
        """gamma (line 8) and Gamma (line 9), each (runs, S, A, B).

        P_tilde (runs, S, A, B, S'); G, Vm (runs, S'); N_bonus (runs, S, A, B) = N~_h (the private
        visits; > 0 wherever used). ``plan`` passes the products P~G, P~Vm, P~Vm^2 it already has
        (one batched matmul per step, see ``plan``); called alone, they are computed here.
        """
        if PG is None:
            runs, S_, A, B, S2 = P_tilde.shape
            prod = np.matmul(P_tilde.reshape(runs, S_ * A * B, S2), np.stack([G, Vm, Vm * Vm], axis=-1))
            PG, PV, PV2 = (prod[..., i].reshape(runs, S_, A, B) for i in range(3))
        var = PV2 - PV * PV
        np.maximum(var, 0.0, out=var)                    # Var clipped at 0 before sqrt (docs/derivations.md#readings)
        inv_n = 1.0 / N_bonus                            # N_bonus > 0: plan() puts 1 where N = 0 (convention)
        gamma = (self.C1 / H) * PG
        Gamma = self.C2 * (np.sqrt(var * (iota * inv_n)) + (H * S * E * iota + H * H * S * iota) * inv_n)
        return gamma, Gamma

    def upper_q(self, r, PVb, gamma, Gamma, H):
        """UCB (line 10): clipped at H (not H - h + 1), no min with the previous episode."""
        return np.minimum(r + PVb + gamma + Gamma, H)

    def lower_q(self, r, PVu, gamma, Gamma, H):
        """LCB (line 11): clipped at 0."""
        return np.maximum(r + PVu - gamma - Gamma, 0.0)

    def plan(self, r, P_tilde, N_visits, E, iota, unvisited=None, hint=None, hint_basis=None, blocks=1):
        """One episode's backward pass for a batch of runs.

        r (H, S, A, B); P_tilde (runs, H, S, A, B, S); N_visits (runs, H, S, A, B) = N~;
        unvisited (runs, H, S, A, B) bool or None: where the non-private convention Qb = H, Qu = 0 applies.
        hint (runs, H, S, A, B) or None: last episode's policy, reused where it is still a CCE (cce.py).
        hint_basis (runs, H, S, A + B) or None: the simplex bases of earlier episodes (warm starts); the
        updated bases come back in ``stats["basis"]``.
        blocks: the runs are this many independent blocks (``run``'s common random numbers); the CCE solver
        treats each block as a call of its own (cce.solve_cce's groups).
        Returns pi (runs, H, S, A, B), Qb, Qu (runs, H, S, A, B), Vb, Vu (runs, H+1, S), cce stats.
        With the compiled engine (``engine``), each stage game is solved on its own: ``blocks`` needs no grouping.
        """
        runs, H, S, A, B, _ = P_tilde.shape
        Qb = np.empty((runs, H, S, A, B))
        Qu = np.empty((runs, H, S, A, B))
        Vb = np.zeros((runs, H + 1, S))
        Vu = np.zeros((runs, H + 1, S))
        pi = np.empty((runs, H, S, A, B))
        stats = {"pure": 0, "hint": 0, "simplex": 0, "highs": 0, "max_residual": -np.inf}
        slack = np.arange(A * B, A * B + A + B)                 # the simplex's cold-start basis
        basis = (np.broadcast_to(slack, (runs, H, S, A + B)).copy() if hint_basis is None
                 else np.array(hint_basis, dtype=np.int64, copy=True))
        stats["basis"] = basis
        kern = self._plan_kernel()
        if kern is not None:
            self._plan_compiled(kern, r, P_tilde, N_visits, E, iota, unvisited, hint, hint_basis is not None,
                                (pi, Qb, Qu, Vb, Vu, stats))
            return pi, Qb, Qu, Vb, Vu, stats
        groups = None if blocks == 1 else np.repeat(np.arange(blocks), (runs // blocks) * S).reshape(runs, S)
        for h in range(H - 1, -1, -1):
            P = P_tilde[:, h]
            vb, vu = Vb[:, h + 1], Vu[:, h + 1]
            G = vb - vu
            Vm = 0.5 * (vb + vu)
            # profiled (benchmarks/bench_nash_vi.py): per-step overhead dominates at these sizes, so one
            # batched product gives P~Vb, P~Vu, P~Vm^2; P~G and P~Vm follow by linearity
            prod = np.matmul(P.reshape(runs, S * A * B, S), np.stack([vb, vu, Vm * Vm], axis=-1))
            PVb = prod[..., 0].reshape(runs, S, A, B)
            PVu = prod[..., 1].reshape(runs, S, A, B)
            PV2 = prod[..., 2].reshape(runs, S, A, B)
            gamma, Gamma = self.bonuses(P, G, Vm, N_visits[:, h], H, S, E, iota,
                                        PG=PVb - PVu, PV=0.5 * (PVb + PVu), PV2=PV2)
            qb = self.upper_q(r[h], PVb, gamma, Gamma, H)
            qu = self.lower_q(r[h], PVu, gamma, Gamma, H)
            if unvisited is not None:
                qb = np.where(unvisited[:, h], float(H), qb)
                qu = np.where(unvisited[:, h], 0.0, qu)
            kw = {} if hint is None else {"hint": hint[:, h]}
            if groups is not None:
                kw["groups"] = groups
            if hint_basis is not None:
                kw["hint_basis"] = basis[:, h]
            sol = self.cce(qb, qu, H=H, method=self.cce_method, **kw)
            b = getattr(sol, "basis", None)
            if b is not None:
                basis[:, h] = np.where(b >= 0, b, basis[:, h])
            p = sol.pi
            Qb[:, h], Qu[:, h], pi[:, h] = qb, qu, p
            Vb[:, h] = np.einsum("rsab,rsab->rs", p, qb)
            Vu[:, h] = np.einsum("rsab,rsab->rs", p, qu)
            stats["pure"] += sol.n_pure
            stats["simplex"] += sol.n_simplex
            stats["highs"] += sol.n_highs
            stats["hint"] += getattr(sol, "n_hint", 0)
            stats["max_residual"] = max(stats["max_residual"], float(np.max(sol.residual)))
        return pi, Qb, Qu, Vb, Vu, stats

    def _plan_kernel(self):
        """The numba module of algorithms/games/_plan_kernel.py if ``plan`` may use it (see ``engine``), else None."""
        if self.engine == "numpy":
            return None
        cls = type(self)
        own = [n for n in ("bonuses", "upper_q", "lower_q", "cce") if n in vars(self)
               or getattr(cls, n) is not getattr(DPNashVI, n)]
        why = (f"{cls.__name__} overrides {', '.join(own)}" if own else
               f"cce_method={self.cce_method!r} (the kernel is the 'auto' solver)" if self.cce_method != "auto" else None)
        kern = None if why else _load_plan_kernel()
        if kern is None and why is None:
            why = "numba is not installed"
        if kern is None and self.engine == "compiled":
            raise InputError(f"engine='compiled' is not available: {why}")
        return kern

    def _plan_compiled(self, kern, r, P_tilde, N_visits, E, iota, unvisited, hint, warm, out):
        """``plan`` by the numba kernel, one call per step h, into ``out`` = plan's (pi, Qb, Qu, Vb, Vu, stats)
        (stats["basis"]: the bases, warm starts if ``warm``); stage games the kernel could not settle (simplex
        not converged or not verified) are solved by HiGHS here, as cce.solve_cce does."""
        from dpcheck.algorithms.games.cce import constraint_matrix, highs_cce

        pi, Qb, Qu, Vb, Vu, stats = out
        basis = stats["basis"]
        runs, H, S, A, B, _ = P_tilde.shape
        E_run = np.ascontiguousarray(np.broadcast_to(np.asarray(E, dtype=float).reshape(-1), (runs,)))
        unv = (np.zeros((runs, S, A, B), dtype=bool) if unvisited is None else None)
        r = np.asarray(r, dtype=float)
        tol = 1e-8 * H
        qb, qu, p = (np.empty((runs, S, A, B)) for _ in range(3))       # one step's outputs
        vb_h, vu_h, residual = np.empty((runs, S)), np.empty((runs, S)), np.empty((runs, S))
        status = np.empty((runs, S), dtype=np.int64)
        for h in range(H - 1, -1, -1):
            bas = np.ascontiguousarray(basis[:, h])
            hint_h = np.ascontiguousarray(hint[:, h], dtype=float) if hint is not None else p   # p: not read
            kern.plan_step(np.ascontiguousarray(r[h]), np.ascontiguousarray(P_tilde[:, h], dtype=float),
                           np.ascontiguousarray(N_visits[:, h], dtype=float), np.ascontiguousarray(Vb[:, h + 1]),
                           np.ascontiguousarray(Vu[:, h + 1]), E_run, float(iota), self.C1, self.C2, float(H),
                           unv if unvisited is None else np.ascontiguousarray(unvisited[:, h]),
                           hint_h, hint is not None, bas, warm, tol, qb, qu, p, vb_h, vu_h, status, residual)
            for i, s in zip(*np.nonzero(status == kern.NEEDS_FALLBACK)):
                Mi = constraint_matrix(qb[i, s], qu[i, s])
                x = highs_cce(Mi)
                p[i, s] = x.reshape(A, B)
                residual[i, s] = float(np.max(Mi @ x))
                vb_h[i, s], vu_h[i, s] = float(np.sum(p[i, s] * qb[i, s])), float(np.sum(p[i, s] * qu[i, s]))
            if (residual > tol).any():
                raise ArithmeticError(f"CCE verification failed: residual {residual.max():.3g} > tol {tol:.3g} "
                                      "even after the HiGHS fallback")
            Qb[:, h], Qu[:, h], pi[:, h], Vb[:, h], Vu[:, h], basis[:, h] = qb, qu, p, vb_h, vu_h, bas
            for key, code in (("pure", kern.PURE), ("hint", kern.HINT), ("simplex", kern.SIMPLEX),
                              ("highs", kern.NEEDS_FALLBACK)):
                stats[key] += int(np.count_nonzero(status == code))
            stats["max_residual"] = max(stats["max_residual"], float(residual.max()))

    # ------------------------------------------------------------------ the episode loop
    def run(self, game, K: int, rng: np.random.Generator, runs: int = 1, *, release_hook=None,
            blocks: int = 1) -> NashVIResult:
        """Play K episodes of self-play in ``game`` (a MarkovGame), ``runs`` independent copies at once.

        The algorithm does not check Assumption 3.1 itself (algorithms carry no checking
        logic); a checker gets every release and the true counts through ``release_hook``.
        release_hook: called as ``release_hook(counts, privatizer)`` after every release, before planning
                 (checkers, e.g. audits/lib/tabular.CountAssumptionMonitor, which reads
                 ``privatizer.true_counts()`` there; the algorithm ignores it).
        blocks:  common random numbers across blocks of runs (algorithms/privatizers/stacked.py): the runs are
                 ``blocks`` equal blocks and every environment and policy draw of one block is replayed for
                 each block; with a StackedPrivatizers of ``blocks`` members, block i is then draw for draw
                 the run of ``runs / blocks`` runs with member i alone and the same ``rng``.
        """
        if isinstance(K, bool) or not isinstance(K, (int, np.integer)) or K < 1:
            raise InputError(f"K must be a positive integer, got {K!r}")
        if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 1:
            raise InputError(f"runs must be a positive integer, got {runs!r}")
        if not isinstance(rng, np.random.Generator):
            raise InputError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        for attr in ("r", "init", "H", "S", "A", "B", "reset", "step"):
            if not hasattr(game, attr):
                raise InputError(f"game must be a MarkovGame (missing {attr!r}); got {type(game).__name__}")
        K, runs = int(K), int(runs)
        if isinstance(blocks, bool) or not isinstance(blocks, (int, np.integer)) or blocks < 1 or runs % blocks:
            raise InputError(f"blocks must be a positive integer dividing runs={runs}, got {blocks!r}")
        blocks = int(blocks)
        if blocks > 1 and getattr(self.privatizer, "blocks", None) != blocks:
            raise InputError(f"blocks={blocks} needs a StackedPrivatizers of {blocks} members")
        per_block = runs // blocks

        def shared(draw):
            # one block's draws, replayed for every block (common random numbers)
            return draw if blocks == 1 else np.tile(draw, blocks)
        H, S, A, B = game.H, game.S, game.A, game.B
        r = np.asarray(game.r, dtype=float)
        init = np.asarray(game.init, dtype=float)
        rng_env, rng_noise, rng_policy = rng.spawn(3)
        priv = self.privatizer
        if priv is None:
            from dpcheck.algorithms.privatizers import NoPrivatizer
            priv = NoPrivatizer()
        try:
            priv.start(runs, H, S, A * B, K, rng_noise, rewards=False)
            E_raw = float(priv.width) if blocks == 1 else np.asarray(priv.width, dtype=float)
        except DPCheckError:
            raise               # InputError stays bad input; MechanismError already names the privatizer
        except Exception as e:
            raise MechanismError(f"privatizer {priv!r} failed to start: {type(e).__name__}: {e}") from e
        exact = bool(np.all(E_raw == 0.0))
        # floor the width at 1 for private counts (keeps Lemma 5.8's hypothesis; docs/derivations.md#widths-e).
        # Stacked privatizers: one E per run, shaped to broadcast against (runs, S, A, B) in the bonus
        if blocks == 1:
            E = 0.0 if exact else max(E_raw, 1.0)
        else:
            E = (np.zeros(runs) if exact else np.maximum(E_raw, 1.0)).reshape(runs, 1, 1, 1)
        iota = confidence_log(H, S, A, B, K, self.beta)

        rec = self.record_values
        mu = np.empty((runs, K, H, S, A))
        nu = np.empty((runs, K, H, S, B))
        certificate = np.empty((runs, K))
        vacuous = np.empty((runs, K), dtype=bool)
        states = np.empty((runs, K, H + 1), dtype=np.int64)
        act_a = np.empty((runs, K, H), dtype=np.int64)
        act_b = np.empty((runs, K, H), dtype=np.int64)
        if rec:
            rec_pi = np.empty((runs, K, H, S, A, B))
            rec_Qb = np.empty((runs, K, H, S, A, B))
            rec_Qu = np.empty((runs, K, H, S, A, B))
            rec_Vb = np.empty((runs, K, H + 1, S))
            rec_Vu = np.empty((runs, K, H + 1, S))
        delta = np.full(runs, np.inf)                  # Delta starts at +inf (docs/derivations.md#readings)
        k_out = np.zeros(runs, dtype=np.int64)
        pi_out = np.empty((runs, H, S, A, B))
        stats = {"pure": 0, "hint": 0, "simplex": 0, "highs": 0, "max_residual": -np.inf}
        ar = np.arange(runs)
        pi_prev = None
        basis_prev = None
        # scripted users (privacy audits): a different user pair per episode, told the episode index
        per_episode = bool(getattr(game, "per_episode", False))
        # A MarkovGame's step validates its inputs on every call (a quarter of the loop at S=5, A=B=3
        # in the profile); our own indices are valid by construction, so sample from its kernel CDF
        # directly: the same draws from the same stream as game.step, hence identical trajectories.
        from dpcheck.algorithms.envs.games import MarkovGame
        from dpcheck.algorithms.envs._validate import sample_from_cdf
        fast_cdf = game.sampling_tables()[1] if (isinstance(game, MarkovGame) and not per_episode) else None
        if blocks > 1 and fast_cdf is None:
            raise InputError("blocks > 1 needs a MarkovGame without scripted users")

        for k in range(K):
            counts = self._release(priv)
            if release_hook is not None:
                release_hook(counts, priv)
            visits = np.asarray(counts.visits, dtype=float).reshape(runs, H, S, A, B)
            trans = np.asarray(counts.transitions, dtype=float).reshape(runs, H, S, A, B, S)
            unvisited = None
            if exact:
                unvisited = visits <= 0
                safe = np.where(unvisited, 1.0, visits)
                P_tilde = np.where(unvisited[..., None], 1.0 / S, trans / safe[..., None])
                N_bonus = safe
            else:
                if not (np.all(visits > 0) and np.all(trans > 0)):
                    raise MechanismError("privatizer released N~ with non-positive entries; "
                                         "Assumption 3.1 requires N~(s,a,b,s') > 0")
                P_tilde = trans / visits[..., None]
                N_bonus = visits
            pi, Qb, Qu, Vb, Vu, st = self.plan(r, P_tilde, N_bonus, E, iota, unvisited, hint=pi_prev,
                                               hint_basis=basis_prev, blocks=blocks)
            pi_prev = pi
            basis_prev = st.get("basis")
            for key in ("pure", "hint", "simplex", "highs"):
                stats[key] += st[key]
            stats["max_residual"] = max(stats["max_residual"], st["max_residual"])
            mu[:, k] = pi.sum(axis=-1)
            nu[:, k] = pi.sum(axis=-2)
            gap1 = (Vb[:, 0] - Vu[:, 0]) @ init
            certificate[:, k] = gap1
            vacuous[:, k] = np.all(Qb >= H, axis=(1, 2, 3, 4)) & np.all(Qu <= 0, axis=(1, 2, 3, 4))
            better = gap1 < delta                       # strict <: the earliest minimiser (Algorithm 1 lines 20-24)
            delta = np.where(better, gap1, delta)
            k_out = np.where(better, k, k_out)
            pi_out[better] = pi[better]
            if rec:
                rec_pi[:, k], rec_Qb[:, k], rec_Qu[:, k], rec_Vb[:, k], rec_Vu[:, k] = pi, Qb, Qu, Vb, Vu

            # deploy pi^k: (a, b) drawn JOINTLY from pi_h(.,.|s_h) with the policy stream (line 18)
            ep = {"episode": k} if per_episode else {}
            s = game.reset(rng_env, runs, **ep) if blocks == 1 else shared(game.reset(rng_env, per_block))
            states[:, k, 0] = s
            for h in range(H):
                cdf = np.cumsum(pi[ar, h, s].reshape(runs, A * B), axis=1)
                u = shared(rng_policy.random(per_block)) * cdf[:, -1]
                j = np.minimum((cdf <= u[:, None]).sum(axis=1), A * B - 1)
                a, b = np.divmod(j, B)
                if blocks > 1:
                    # sample_from_cdf's inverse CDF with one block's uniforms for every block
                    s = (fast_cdf[h, s, a, b] <= shared(rng_env.random(per_block))[:, None]).sum(axis=-1)
                elif fast_cdf is not None:
                    s = sample_from_cdf(fast_cdf[h, s, a, b], rng_env)
                else:
                    s, _ = game.step(h, s, a, b, rng_env, **ep)
                act_a[:, k, h], act_b[:, k, h] = a, b
                states[:, k, h + 1] = s
            try:
                priv.observe(states[:, k], act_a[:, k] * B + act_b[:, k], None)   # line 19
            except DPCheckError:
                raise           # InputError stays bad input; MechanismError already names the privatizer
            except Exception as e:
                raise MechanismError(f"privatizer {priv!r} failed in observe: {type(e).__name__}: {e}") from e

        config = {"algorithm": "DP-Nash-VI", "mode": self.mode, "C1": self.C1, "C2": self.C2,
                  "beta": self.beta, "K": K, "runs": runs, "width_E": E, "width_E_raw": E_raw, "iota": iota,
                  "privatizer": type(priv).__name__,
                  "calibration": getattr(priv, "calibration", None),
                  "width_mode": getattr(priv, "width_mode", None),
                  "cce_solver": "pure profiles, last episode's CCE if still one, warm-started simplex, HiGHS fallback",
                  "plan_engine": "numpy" if self._plan_kernel() is None else "compiled (algorithms/games/_plan_kernel.py)",
                  "delta_init": "inf (docs/derivations.md#readings)"}
        result = NashVIResult(
            mu_out=pi_out.sum(axis=-1), nu_out=pi_out.sum(axis=-2), delta=delta, k_out=k_out,
            certificate=certificate, mu=mu, nu=nu, states=states, actions_max=act_a, actions_min=act_b,
            vacuous=vacuous, width=E, iota=iota,
            config=config, cce_stats=stats)
        if rec:
            result.pi, result.Qb, result.Qu, result.Vb, result.Vu = rec_pi, rec_Qb, rec_Qu, rec_Vb, rec_Vu
        return result

    @staticmethod
    def _release(priv):
        try:
            return priv.release()
        except DPCheckError:
            raise               # InputError stays bad input; MechanismError already names the privatizer
        except Exception as e:
            raise MechanismError(f"privatizer {priv!r} failed in release: {type(e).__name__}: {e}") from e
