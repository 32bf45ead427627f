"""LinOpt-VI-Reg and LinOpt-PO-Reg (Zhou 2022, Algorithms 1 and 2, Section 3), batched over runs.

    LinOptVI(regularizer)   Algorithm 1: optimistic value iteration (UCRL-VTR with changing regularisers)
    LinOptPO(regularizer)   Algorithm 2: optimistic policy optimisation (bandit-feedback OPPO)
    UCRLVTR(lam), OPPO(lam)                       the non-private instantiations Z = lam I, z = 0 (Section 3, Z = lambda I)
    PrivateLinOptVI(eps, delta), PrivateLinOptPO  with the Privatizer of Section 6.1 (Defs 6.2, 6.3)

Per episode k (0-based h in arrays; the paper's step h is index h - 1):
1. read the release (Lambda_p, u_p, Lambda_r, u_r) of the regulariser -- nothing else of the data;
2. theta_hat = Lambda^{-1} u (eqs. 1-2), with Lambda^{-1} from ``eigh``; a Lambda that is not positive
   definite (possible for the Privatizer outside the Assumption 2 event) has its eigenvalues floored at
   lambda_min (post-processing) and is flagged in the result;
3. backward in h: phi_h^k(s,a) = sum_s' psi(s,a,s') V_{h+1}^k(s'), bonuses
   Gamma_p = beta_p ||phi||_{Lambda_p^{-1}}, Gamma_r = beta_r ||varphi||_{Lambda_r^{-1}} (beta of Lemma 3.1 times
   ``radius_scale``, 1 by default: a public constant, so any value keeps the privacy guarantee; the dataflow
   audit plans at 0, where Q is not clipped at H - h + 1 everywhere and a planner reading the data shows), and
   Q_h^k = max{0, min{H - h + 1, varphi^T theta_hat_r + phi^T theta_hat_p + Gamma_p + Gamma_r}} (Algorithms 1-2);
   V_h^k = max_a Q_h^k (VI) or sum_a pi_h^k(a|s) Q_h^k(s,a) (PO);
4. roll out pi^k (VI: greedy, ties uniformly at random or to the lowest index; PO: sample);
5. feed the rows x_p = phi_h^k(s_h, a_h) (frozen), y_p = V_{h+1}^k(s_{h+1}), x_r = varphi(s_h, a_h), y_r = r_h;
6. PO only: log pi_h^{k+1} = log pi_h^k + eta Q_h^k - logsumexp, eta = sqrt(2 ln|A| / (H^2 K)).

Steps 1-4 depend on the data only through the releases (``plan``), which is what makes the billboard
lemma apply (Theorem 6.4). The result records, per run and episode, the exact pseudo-regret and the figures
a later audit needs (Lemma 3.1 containment, optimism Lemma 7.2 and eqs. 3, 7, Assumption 2 eigenvalue figures, Lemmas B.4-B.5).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from dpcheck.errors import InputError, MechanismError
from dpcheck.algorithms.envs._validate import axis_length, check_rng, check_runs, one_hot
from dpcheck.algorithms.envs.planning import evaluate
from dpcheck.algorithms.linear.bounds import regret_bound_po, regret_bound_vi
from dpcheck.algorithms.linear.mixture import LinearMixtureMDP
from dpcheck.algorithms.linear.privatizer import Privatizer
from dpcheck.algorithms.linear.stream_privatizer import StreamPrivatizer
from dpcheck.algorithms.linear.regularizers import (
    Assumption2, LinearSizes, Regularizer, RidgeRegularizer, confidence_radii,
)

TIE_BREAKING = ("random", "lowest")


def floored_inverse(L: np.ndarray, floor: float, min_eig: bool = True):
    """(L^{-1}, floored (...,) bool, smallest eigenvalue (...,) or NaN) for symmetric L (..., d, d).

    Where the smallest eigenvalue is <= 0 every eigenvalue below ``floor`` is raised to it (the
    bonus sqrt(phi^T L^{-1} phi) stays real; privacy-neutral post-processing). The usual case (every
    matrix of the batch positive definite, certified by a Cholesky factorisation) inverts directly;
    only a batch with a non-PD matrix goes through ``eigh`` (a full eigendecomposition costs several
    times an inverse at d = 64). ``min_eig=False`` skips the eigenvalue figure on the PD path (NaN)."""
    try:
        np.linalg.cholesky(L)
    except np.linalg.LinAlgError:
        pass
    else:
        low = np.linalg.eigvalsh(L)[..., 0] if min_eig else np.full(L.shape[:-2], np.nan)
        return np.linalg.inv(L), np.zeros(L.shape[:-2], dtype=bool), low
    w, U = np.linalg.eigh(L)
    low = w[..., 0]
    floored = low <= 0
    if floored.any():
        w = np.where(floored[..., None], np.maximum(w, floor), w)
    inv = (U / w[..., None, :]) @ np.swapaxes(U, -1, -2)
    return inv, floored, low


@dataclass(frozen=True)
class LinOptResult:
    """One call of ``run``: ``runs`` independent runs of K episodes (runs first; 0-based h).

    regret            V_1^*(s_1) - V_1^{pi^k}(s_1), exact                         (runs, K)
    values            V_1^{pi^k}(s_1), exact                                              (runs, K)
    optimal_value     V_1^*(s_1)
    theta_hat_p/_r    the estimates theta_hat_{h,p}^k, theta_hat_{h,r}^k  (runs, K, H, d1 / d2), or None
                      (record_estimates=False)
    policies          pi_h^k(a|s) played (one-hot for VI)  (runs, K, H, S, A), or None (record_estimates=False)
    states, actions   s_1..s_{H+1} (runs, K, H+1) and a_1..a_H (runs, K, H) of every episode: the actions are
                      the mechanism's output M(U_K) of Def 2.2 (a JDP audit reads those of users != k)
    containment_p/_r  ||theta_h - theta_hat_h^k||_{Lambda_h^k} / beta (Lemma 3.1 holds iff <= 1; Lambda as
                      used, i.e. floored where flagged)                                    (runs, K, H)
    beta_p, beta_r    the confidence radii beta_p(alpha), beta_r(alpha) (Lemma 3.1); the planner's bonus uses
                      them times ``radius_scale`` (config; 1 unless set)
    constants         the Assumption 2 constants the radii were computed from
    lambda_min_eig_p/_r   smallest eigenvalue of the released Lambda_h^k (before any floor) (runs, K, H);
                      NaN where not recorded (record_figures=False and Lambda PD)
    floored_p/_r      Lambda_h^k was not PD and was floored                           (runs, K, H) bool
    z_eig_min_p/_r, z_eig_max_p/_r   extreme eigenvalues of Z_h^k = Lambda_h^k - G_h^k (Assumption 2) (runs, K, H)
                      (these and the next two are None with record_figures=False)
    noise_norm_p/_r   ||N_h^k|| = ||Z_h^k - shift I|| (Lemmas B.4-B.5: <= Sigma w.h.p.)                  (runs, K, H)
    z_norm_p/_r       ||z_h^k||_{(Z_h^k)^{-1}} (inf where Z is not PD)                       (runs, K, H)
    shift_p, shift_r  the shift of the regulariser (2 Sigma (+ ridge) for the Privatizer, lam for ridge)
    optimism_gap      min_{h,s,a} (Q_h^k - Q_h^*)   (Lemma 7.2: >= 0 on the good event, Algorithm 1)  (runs, K)
    iota_min          min_{h,s,a} -iota_h^k, iota = r_h + P_h V_{h+1}^k - Q_h^k  (eqs. 3, 7: >= 0)  (runs, K)
    iota_excess       max_{h,s,a} (-iota_h^k - 2 (Gamma_p + Gamma_r))          (eqs. 3, 7: <= 0)  (runs, K)
    lower_clips       number of (h,s,a) where the max{0, .} clip binds (Lemma 7.2)             (runs, K) int
    upper_clip_fraction   fraction of (h,s,a) clipped at H - h + 1 (noise-dominated regime) (runs, K)
    ties              number of (h,s) with more than one greedy action (VI; 0 for PO)     (runs, K) int
    q_values, q_unclipped   Q_h^k after the clip of line 10 and before it (runs, K, H, S, A), or None
                      (record_q_values=False, the default): for dataflow checks, which compare them under a
                      replayed release stream (a function of the releases alone, Theorem 6.4's premise)
    Lambda_p, u_p, Lambda_r, u_r   the last release (episode K)
    config, claim, dp_event, privacy   the algorithm's configuration (with ``regret_bound``, the explicit bound
                      of Theorem 4.1 / Theorem 5.1 on R(K)); the Privatizer's Claim, DpEvent and
                      calibrated figures (None for non-private regularisers)
    seconds           wall time of the K episodes (all runs)
    """

    regret: np.ndarray
    values: np.ndarray
    optimal_value: float
    theta_hat_p: np.ndarray | None
    theta_hat_r: np.ndarray | None
    policies: np.ndarray | None
    states: np.ndarray
    actions: np.ndarray
    containment_p: np.ndarray
    containment_r: np.ndarray
    beta_p: float
    beta_r: float
    constants: Assumption2
    lambda_min_eig_p: np.ndarray
    lambda_min_eig_r: np.ndarray
    floored_p: np.ndarray
    floored_r: np.ndarray
    z_eig_min_p: np.ndarray | None
    z_eig_max_p: np.ndarray | None
    z_eig_min_r: np.ndarray | None
    z_eig_max_r: np.ndarray | None
    noise_norm_p: np.ndarray | None
    noise_norm_r: np.ndarray | None
    z_norm_p: np.ndarray | None
    z_norm_r: np.ndarray | None
    shift_p: float
    shift_r: float
    optimism_gap: np.ndarray
    iota_min: np.ndarray
    iota_excess: np.ndarray
    lower_clips: np.ndarray
    upper_clip_fraction: np.ndarray
    ties: np.ndarray
    Lambda_p: np.ndarray
    u_p: np.ndarray
    Lambda_r: np.ndarray
    u_r: np.ndarray
    config: dict = field(default_factory=dict)
    claim: object = None
    dp_event: object = None
    privacy: dict | None = None
    seconds: float = 0.0
    q_values: np.ndarray | None = None
    q_unclipped: np.ndarray | None = None

    runs = axis_length("regret", 0)
    K = axis_length("regret", 1)

    @property
    def cumulative_regret(self) -> np.ndarray:
        """R(k) = sum_{j <= k} regret_j, (runs, K)."""
        return np.cumsum(self.regret, axis=1)

    @property
    def good_event(self) -> np.ndarray:
        """Per run: both parameters stayed in their ellipsoids for every k, h (Lemma 3.1's event E(alpha))."""
        return np.all(self.containment_p <= 1.0, axis=(1, 2)) & np.all(self.containment_r <= 1.0, axis=(1, 2))

    @property
    def assumption2_held(self) -> np.ndarray | None:
        """Per run: the regulariser's Z, z met the Assumption 2 constants at every k, h (None if the
        figures were not recorded). Relative slack 1e-9 for rounding in Z = N + shift I."""
        if self.z_eig_min_p is None:
            return None
        c, tol = self.constants, 1e-9
        ok = ((self.z_eig_min_p >= c.lambda_min_p * (1 - tol)) & (self.z_eig_max_p <= c.lambda_max_p * (1 + tol))
              & (self.z_norm_p <= c.nu_p * (1 + tol) + tol)
              & (self.z_eig_min_r >= c.lambda_min_r * (1 - tol)) & (self.z_eig_max_r <= c.lambda_max_r * (1 + tol))
              & (self.z_norm_r <= c.nu_r * (1 + tol) + tol))
        return ok.all(axis=(1, 2))

    @property
    def episodes_per_second(self) -> float:
        return self.runs * self.K / self.seconds if self.seconds > 0 else math.inf

    def summary(self) -> str:
        R = self.cumulative_regret[:, -1]
        return (f"{self.config.get('name')}: runs={self.runs} K={self.K} mean R(K)={R.mean():.4g} "
                f"beta_p={self.beta_p:.4g} beta_r={self.beta_r:.4g} good event {self.good_event.mean():.0%} "
                f"floored {int(self.floored_p.sum() + self.floored_r.sum())} "
                f"min optimism gap {self.optimism_gap.min():.3g}")


def _check_int(name, v, lo):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
        raise InputError(f"{name} must be an integer >= {lo}, got {v!r}")
    return int(v)


class _LinOpt:
    """Shared body of Algorithms 1 and 2; subclasses set ``name`` and the policy rule."""

    name = "LinOpt"
    policy_optimisation = False

    def __init__(self, regularizer: Regularizer, *, alpha: float = 0.05, tie_breaking: str = "random",
                 record_estimates: bool = True, record_figures: bool = True, record_q_values: bool = False,
                 radius_scale: float = 1.0):
        if not isinstance(regularizer, Regularizer):
            raise InputError(f"regularizer must be a Regularizer (RidgeRegularizer, Privatizer), "
                             f"got {type(regularizer).__name__}")
        self.regularizer = regularizer
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating)) or not 0 < alpha <= 1:
            raise InputError(f"alpha must lie in (0, 1], got {alpha!r}")
        self.alpha = float(alpha)
        if tie_breaking not in TIE_BREAKING:
            raise InputError(f"tie_breaking must be one of {TIE_BREAKING}, got {tie_breaking!r}")
        self.tie_breaking = tie_breaking
        self.record_estimates = bool(record_estimates)
        self.record_figures = bool(record_figures)
        self.record_q_values = bool(record_q_values)
        if (isinstance(radius_scale, bool) or not isinstance(radius_scale, (int, float, np.floating))
                or not 0 <= radius_scale < math.inf):
            raise InputError(f"radius_scale must be a finite number >= 0, got {radius_scale!r}")
        self.radius_scale = float(radius_scale)

    @property
    def config(self) -> dict:
        return {"name": self.name, "regularizer": repr(self.regularizer), "alpha": self.alpha,
                "tie_breaking": self.tie_breaking, "radius_scale": self.radius_scale}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.regularizer!r}, alpha={self.alpha!r}, tie_breaking={self.tie_breaking!r})"

    # ------------------------------------------------------------------ public pieces
    def sizes(self, env: LinearMixtureMDP, K: int) -> LinearSizes:
        return LinearSizes(K, env.H, env.d1, env.d2, env.d)

    def regret_bound(self, sizes: LinearSizes, A: int) -> float:
        """The explicit bound of the proof of Thm 4.1 (VI) / Thm 5.1 (PO) on R(K) (Theorem 4.1; Theorem 5.1)."""
        c = self.regularizer.constants(sizes, self.alpha)
        beta_p, beta_r = confidence_radii(c, sizes, self.alpha)
        if self.policy_optimisation:
            return regret_bound_po(sizes, c, beta_p, beta_r, self.alpha, A)
        return regret_bound_vi(sizes, c, beta_p, beta_r, self.alpha)

    def radii(self, sizes: LinearSizes) -> tuple[float, float]:
        """(beta_p(alpha), beta_r(alpha)) from the regulariser's Assumption 2 constants (Lemma 3.1)."""
        return confidence_radii(self.regularizer.constants(sizes, self.alpha), sizes, self.alpha)

    def plan(self, env: LinearMixtureMDP, release, betas, floors, policy=None, min_eig: bool = True) -> dict:
        """Steps 2-3 for a batch of runs from a release (Lambda_p (runs,H,d1,d1), u_p, Lambda_r, u_r) and
        the public features, radii and floors only. ``policy`` (runs,H,S,A) is pi^k for PO (None: VI).
        Returns a dict: Q (runs,H,S,A), V (runs,H+1,S), raw (unclipped Q), bonus (Gamma_p + Gamma_r),
        phi (runs,H,S,A,d1), theta_p, theta_r, Lp_inv, Lr_inv (the inverses used, floored where flagged),
        floored_p/_r and low_p/_r (smallest eigenvalue; NaN when min_eig=False and PD) per side."""
        Lp, up, Lr, ur = release
        beta_p, beta_r = betas
        runs, H = up.shape[:2]
        S, A, d1, d2 = env.S, env.A, env.d1, env.d2
        Lp_inv, floored_p, low_p = floored_inverse(Lp, floors[0], min_eig)
        Lr_inv, floored_r, low_r = floored_inverse(Lr, floors[1], min_eig)
        theta_p = (Lp_inv @ up[..., None])[..., 0]                      # eq. 1 (runs, H, d1)
        theta_r = (Lr_inv @ ur[..., None])[..., 0]                      # eq. 2 (runs, H, d2)
        vf = env.varphi.reshape(S * A, d2)
        reward_hat = (theta_r @ vf.T).reshape(runs, H, S, A)
        quad_r = ((vf @ Lr_inv) * vf).sum(-1).reshape(runs, H, S, A)
        gamma_r = beta_r * np.sqrt(np.maximum(quad_r, 0.0))             # line 9
        psi_t = np.ascontiguousarray(np.moveaxis(env.psi, 2, 3)).reshape(S * A * d1, S)
        V = np.zeros((runs, H + 1, S))
        Q = np.empty((runs, H, S, A))
        raw = np.empty((runs, H, S, A))
        bonus = np.empty((runs, H, S, A))
        phi_all = np.empty((runs, H, S, A, d1))
        for h in range(H - 1, -1, -1):
            phi = (V[:, h + 1] @ psi_t.T).reshape(runs, S * A, d1)      # line 7: phi_h^k(s,a), current V_{h+1}^k
            phi_all[:, h] = phi.reshape(runs, S, A, d1)
            p_hat = (phi @ theta_p[:, h, :, None])[..., 0]
            quad_p = ((phi @ Lp_inv[:, h]) * phi).sum(-1)
            gamma_p = beta_p * np.sqrt(np.maximum(quad_p, 0.0))         # line 8
            b = gamma_p.reshape(runs, S, A) + gamma_r[:, h]
            bonus[:, h] = b
            raw[:, h] = reward_hat[:, h] + p_hat.reshape(runs, S, A) + b
            Q[:, h] = np.minimum(np.maximum(raw[:, h], 0.0), H - h)     # line 10, clip at H - h + 1 (Algorithms 1-2)
            if policy is None:
                V[:, h] = Q[:, h].max(axis=-1)                          # Algorithm 1 line 11
            else:
                V[:, h] = (policy[:, h] * Q[:, h]).sum(-1)              # Algorithm 2 line 12
        return {"Q": Q, "V": V, "raw": raw, "bonus": bonus, "phi": phi_all, "theta_p": theta_p,
                "theta_r": theta_r, "floored_p": floored_p, "floored_r": floored_r, "low_p": low_p,
                "low_r": low_r, "Lp_inv": Lp_inv, "Lr_inv": Lr_inv}

    # ------------------------------------------------------------------ the run
    def run(self, env: LinearMixtureMDP, K: int, rng, runs: int = 1, *, users=None,
            release_hook=None) -> LinOptResult:
        """K episodes of ``runs`` independent runs. ``rng.spawn(3)`` -> env / regulariser noise / policy
        (tie-breaking). ``release_hook(k, release)`` (k 1-based) sees every release (billboard checks).

        users: optional scripted users (dpcheck.algorithms.envs.users: ``per_episode``, ``rollout(policy, rng,
        episode=k)``, same H, S, A as ``env``, at least K users) who answer in place of ``env``'s
        simulation -- the fixed user sequences of a JDP audit (Section 2.2); ``env`` still supplies the known
        features and the model for the exact regret."""
        if not isinstance(env, LinearMixtureMDP):
            raise InputError(f"expected a LinearMixtureMDP, got {type(env).__name__}")
        K = _check_int("K", K, 1)
        if users is not None:
            if not getattr(users, "per_episode", False) or not hasattr(users, "rollout"):
                raise InputError(f"users must be scripted users with per-episode rollout, got {type(users).__name__}")
            if (users.H, users.S, users.A) != (env.H, env.S, env.A):
                raise InputError(f"users have (H, S, A) = {(users.H, users.S, users.A)} but the instance has "
                                 f"{(env.H, env.S, env.A)}")
            if users.K < K:
                raise InputError(f"{users.K} users cannot serve K = {K} episodes")
        runs = check_runs(runs)
        rng = check_rng(rng)
        reg = self.regularizer
        if isinstance(reg, Privatizer) and reg.nonnegative_items and not env.nonnegative:
            raise InputError("nonnegative_items=True needs entrywise non-negative psi and varphi (docs/derivations.md#neighbouring-relation)")
        sizes = self.sizes(env, K)
        constants = reg.constants(sizes, self.alpha)
        radii = confidence_radii(constants, sizes, self.alpha)               # Lemma 3.1 (checker figures)
        betas = tuple(self.radius_scale * b for b in radii)                  # the bonus the planner uses
        floors = reg.floors(sizes, self.alpha)
        env_rng, noise_rng, policy_rng = rng.spawn(3)
        state = reg.start(runs, sizes, noise_rng, self.alpha)
        H, S, A, d1, d2 = env.H, env.S, env.A, env.d1, env.d2
        P, r, init = env.P, env.r, env.tabular.init
        Q_star, V_star = env.optimal_values()
        v_star = float(V_star[0] @ init)
        ridx = np.arange(runs)[:, None]
        hidx = np.arange(H)[None, :]
        caps = (H - np.arange(H)).astype(float)[None, :, None, None]
        log_pi = np.full((runs, H, S, A), -math.log(A)) if self.policy_optimisation else None
        eta = self.step_size(sizes, A) if self.policy_optimisation else 0.0

        rec = _Recorder(runs, K, H, S, A, d1, d2, self.record_estimates, self.record_figures, self.record_q_values)
        # checker side: the exact sums of the rows fed so far, kept here (not asked of the regulariser), so that
        # Z^k = Lambda^k - G^k and z^k = u^k - g^k measure what was RELEASED, whatever the state reports
        sums = (np.zeros((runs, H, d1, d1)), np.zeros((runs, H, d1)), np.zeros((runs, H, d2, d2)),
                np.zeros((runs, H, d2))) if self.record_figures else None
        t0 = time.perf_counter()
        for k in range(K):
            release = state.release()
            if k == 0:
                _check_release(release, runs, H, d1, d2, reg)
            Zs = tuple(np.asarray(x, float) - g for x, g in zip(release, sums)) if sums is not None else None
            if release_hook is not None:
                release_hook(k + 1, release)
            pi = None if log_pi is None else np.exp(log_pi)
            plan = self.plan(env, release, betas, floors, pi, self.record_figures)
            Q, V = plan["Q"], plan["V"]
            if pi is None:
                actions_table = self._greedy(Q, policy_rng)
                pi_played = one_hot(actions_table, A)
                rec.ties[:, k] = self._ties(Q)
                played = actions_table
            else:
                pi_played = played = pi
            if users is None:
                traj = env.tabular.rollout(played, env_rng)
            else:
                traj = users.rollout(played, env_rng, runs=runs, episode=k)
            s, a = traj.states, traj.actions
            rec.states[:, k], rec.actions[:, k] = s, a
            x_p = plan["phi"][ridx, hidx, s[:, :H], a]                   # frozen rows (Section 3)
            y_p = V[ridx, hidx + 1, s[:, 1:]]
            x_r = env.varphi[s[:, :H], a]
            state.observe(x_p, y_p, x_r, traj.rewards)
            if sums is not None:
                sums[0][...] += x_p[..., :, None] * x_p[..., None, :]
                sums[1][...] += x_p * y_p[..., None]
                sums[2][...] += x_r[..., :, None] * x_r[..., None, :]
                sums[3][...] += x_r * np.asarray(traj.rewards, float)[..., None]
            if log_pi is not None:
                log_pi = self.policy_step(log_pi, Q, eta)
            # ---- checker side: exact regret and figures (never read by the algorithm)
            _, Vpi = evaluate(P, r, pi_played)
            value = Vpi[:, 0] @ init
            rec.values[:, k] = value
            rec.regret[:, k] = v_star - value
            if rec.policies is not None:
                rec.policies[:, k] = pi_played
            rec.episode(k, env, plan, release, radii, Q_star, P, r, caps, Zs, (state.shift_p, state.shift_r))
        seconds = time.perf_counter() - t0
        last = state.release()
        privacy = None
        claim = dp_event = None
        if isinstance(reg, StreamPrivatizer):
            privacy = reg.describe(sizes, self.alpha)
            if not reg.noise_off:
                claim = reg.claim(sizes)
            dp_event = reg.dp_event(sizes)
        cfg = dict(self.config, K=K, runs=runs, env=repr(env), eta=eta if self.policy_optimisation else None,
                   regret_bound=self.regret_bound(sizes, A))
        return rec.result(v_star, radii, constants, (state.shift_p, state.shift_r), last, cfg, claim,
                          dp_event, privacy, seconds)

    # ------------------------------------------------------------------ policy helpers
    def step_size(self, sizes: LinearSizes, A: int) -> float:
        return 0.0

    def _greedy(self, Q, rng):
        """argmax_a Q (runs, H, S): lowest index, or uniform among exact ties."""
        if self.tie_breaking == "lowest":
            return Q.argmax(axis=-1)
        top = Q.max(axis=-1, keepdims=True)
        keys = np.where(Q == top, rng.random(Q.shape), -1.0)
        return keys.argmax(axis=-1)

    @staticmethod
    def _ties(Q):
        top = Q.max(axis=-1, keepdims=True)
        return ((Q == top).sum(-1) > 1).sum(axis=(1, 2))


def _check_release(release, runs, H, d1, d2, reg):
    """A user's regulariser returning the wrong shapes is a MechanismError, not our crash."""
    want = ((runs, H, d1, d1), (runs, H, d1), (runs, H, d2, d2), (runs, H, d2))
    try:
        got = tuple(np.shape(x) for x in release)
    except TypeError:
        got = None
    if got != want:
        raise MechanismError(f"regularizer {type(reg).__name__}.start(...).release() must return "
                             f"(Lambda_p, u_p, Lambda_r, u_r) of shapes {want}, got {got}")


def _logsumexp(x):
    m = x.max(axis=-1)
    return m + np.log(np.exp(x - m[..., None]).sum(-1))


class _Recorder:
    """Per-episode figures of a batch of runs (checker side)."""

    def __init__(self, runs, K, H, S, A, d1, d2, estimates, figures, q_values=False):
        self.regret = np.empty((runs, K))
        self.q = np.empty((runs, K, H, S, A)) if q_values else None
        self.q_raw = np.empty((runs, K, H, S, A)) if q_values else None
        self.policies = np.empty((runs, K, H, S, A)) if estimates or q_values else None
        self.states = np.empty((runs, K, H + 1), dtype=np.int64)
        self.actions = np.empty((runs, K, H), dtype=np.int64)
        self.values = np.empty((runs, K))
        self.theta_p = np.empty((runs, K, H, d1)) if estimates else None
        self.theta_r = np.empty((runs, K, H, d2)) if estimates else None
        per = lambda dtype=float: np.empty((runs, K, H), dtype=dtype)   # noqa: E731
        self.cont_p, self.cont_r = per(), per()
        self.low_p, self.low_r = per(), per()
        self.floored_p, self.floored_r = per(bool), per(bool)
        self.figures = figures
        if figures:
            self.zmin_p, self.zmax_p, self.zmin_r, self.zmax_r = per(), per(), per(), per()
            self.nn_p, self.nn_r, self.zn_p, self.zn_r = per(), per(), per(), per()
        self.optimism = np.empty((runs, K))
        self.iota_min = np.empty((runs, K))
        self.iota_excess = np.empty((runs, K))
        self.lower = np.empty((runs, K), dtype=np.int64)
        self.upper = np.empty((runs, K))
        self.ties = np.zeros((runs, K), dtype=np.int64)

    def episode(self, k, env, plan, release, betas, Q_star, P, r, caps, Zs, shifts):
        Lp, up, Lr, ur = release
        if self.theta_p is not None:
            self.theta_p[:, k] = plan["theta_p"]
            self.theta_r[:, k] = plan["theta_r"]
        # Lemma 3.1: ||theta - theta_hat||_Lambda with the Lambda actually used (floored where flagged)
        self.cont_p[:, k] = _ellipsoid_norm(env.theta_p - plan["theta_p"], Lp, plan["floored_p"], plan["Lp_inv"]) / betas[0]
        self.cont_r[:, k] = _ellipsoid_norm(env.theta_r - plan["theta_r"], Lr, plan["floored_r"], plan["Lr_inv"]) / betas[1]
        self.low_p[:, k], self.low_r[:, k] = plan["low_p"], plan["low_r"]
        self.floored_p[:, k], self.floored_r[:, k] = plan["floored_p"], plan["floored_r"]
        Q, V, raw = plan["Q"], plan["V"], plan["raw"]
        if self.q is not None:
            self.q[:, k], self.q_raw[:, k] = Q, raw
        self.optimism[:, k] = (Q - Q_star).min(axis=(1, 2, 3))                           # Lemma 7.2
        target = r + np.einsum("hsat,nht->nhsa", P, V[:, 1:])                            # r_h + P_h V_{h+1}^k
        minus_iota = Q - target
        self.iota_min[:, k] = minus_iota.min(axis=(1, 2, 3))                             # eqs. 3, 7 lower
        self.iota_excess[:, k] = (minus_iota - 2.0 * plan["bonus"]).max(axis=(1, 2, 3))  # eqs. 3, 7 upper
        self.lower[:, k] = (raw < 0).sum(axis=(1, 2, 3))                                 # Lemma 7.2
        self.upper[:, k] = (raw >= caps).mean(axis=(1, 2, 3))
        if Zs is not None:
            Zp, zp, Zr, zr = Zs
            self.zmin_p[:, k], self.zmax_p[:, k], self.nn_p[:, k], self.zn_p[:, k] = _z_figures(Zp, zp, shifts[0])
            self.zmin_r[:, k], self.zmax_r[:, k], self.nn_r[:, k], self.zn_r[:, k] = _z_figures(Zr, zr, shifts[1])

    def result(self, v_star, betas, constants, shifts, last, cfg, claim, dp_event, privacy, seconds):
        f = self.figures
        return LinOptResult(
            regret=self.regret, values=self.values, optimal_value=v_star,
            theta_hat_p=self.theta_p, theta_hat_r=self.theta_r, policies=self.policies,
            states=self.states, actions=self.actions,
            containment_p=self.cont_p, containment_r=self.cont_r, beta_p=betas[0], beta_r=betas[1],
            constants=constants, lambda_min_eig_p=self.low_p, lambda_min_eig_r=self.low_r,
            floored_p=self.floored_p, floored_r=self.floored_r,
            z_eig_min_p=self.zmin_p if f else None, z_eig_max_p=self.zmax_p if f else None,
            z_eig_min_r=self.zmin_r if f else None, z_eig_max_r=self.zmax_r if f else None,
            noise_norm_p=self.nn_p if f else None, noise_norm_r=self.nn_r if f else None,
            z_norm_p=self.zn_p if f else None, z_norm_r=self.zn_r if f else None,
            shift_p=shifts[0], shift_r=shifts[1],
            optimism_gap=self.optimism, iota_min=self.iota_min, iota_excess=self.iota_excess,
            lower_clips=self.lower, upper_clip_fraction=self.upper, ties=self.ties,
            Lambda_p=last[0], u_p=last[1], Lambda_r=last[2], u_r=last[3],
            config=cfg, claim=claim, dp_event=dp_event, privacy=privacy, seconds=seconds,
            q_values=self.q, q_unclipped=self.q_raw)


def _ellipsoid_norm(e, L, floored, L_inv):
    """||e||_L per (run, h) for e (runs, H, d) (broadcast), L (runs, H, d, d); the floored matrix where flagged."""
    e = np.broadcast_to(e, L.shape[:-1])
    q = np.einsum("nhd,nhde,nhe->nh", e, L, e)
    if floored.any():
        q_f = np.einsum("nhd,nhde,nhe->nh", e, np.linalg.inv(L_inv), e)
        q = np.where(floored, q_f, q)
    return np.sqrt(np.maximum(q, 0.0))


def _z_figures(Z, z, shift):
    """(lambda_min(Z), lambda_max(Z), ||Z - shift I||, ||z||_{Z^{-1}} (inf if Z is not PD)) per (run, h).
    Eigenvalues only (no eigenvectors: ~2.5x cheaper at d = 64) and one batched solve."""
    w = np.linalg.eigvalsh(Z)
    lo, hi = w[..., 0], w[..., -1]
    pd = lo > 0
    zn = np.full(lo.shape, np.inf)
    if pd.any():
        sol = np.linalg.solve(Z[pd], z[pd][..., None])[..., 0]
        zn[pd] = np.sqrt(np.maximum((z[pd] * sol).sum(-1), 0.0))
    return lo, hi, np.maximum(np.abs(lo - shift), np.abs(hi - shift)), zn


class LinOptVI(_LinOpt):
    """LinOpt-VI-Reg (Algorithm 1) with any Regularizer."""

    name = "LinOpt-VI-Reg"


class LinOptPO(_LinOpt):
    """LinOpt-PO-Reg (Algorithm 2) with any Regularizer. ``eta`` defaults to the step size of the
    proof of Thm 5.1, sqrt(2 ln|A| / (H^2 K))."""

    name = "LinOpt-PO-Reg"
    policy_optimisation = True

    def __init__(self, regularizer: Regularizer, *, eta: float | None = None, **kw):
        super().__init__(regularizer, **kw)
        if eta is not None and (isinstance(eta, bool) or not isinstance(eta, (int, float, np.floating))
                                or not (math.isfinite(eta) and eta >= 0)):
            raise InputError(f"eta must be a finite number >= 0, got {eta!r}")
        self.eta = None if eta is None else float(eta)

    @property
    def config(self) -> dict:
        return dict(super().config, eta=self.eta)

    @staticmethod
    def policy_step(log_pi: np.ndarray, Q: np.ndarray, eta: float) -> np.ndarray:
        """Line 15 of Algorithm 2 in log space: log pi^{k+1} = log pi^k + eta Q^k - logsumexp (runs, H, S, A),
        with Q^k the one planned from release k (so pi^{k+1} is a post-processing of the releases)."""
        out = log_pi + eta * Q
        return out - _logsumexp(out)[..., None]

    def step_size(self, sizes: LinearSizes, A: int) -> float:
        if self.eta is not None:
            return self.eta
        return math.sqrt(2.0 * math.log(A) / (sizes.H ** 2 * sizes.K))


class UCRLVTR(LinOptVI):
    """UCRL-VTR: Algorithm 1 with Z = lam I, z = 0 (Section 3, Z = lambda I)."""

    name = "UCRL-VTR"

    def __init__(self, lam: float = 1.0, **kw):
        super().__init__(RidgeRegularizer(lam), **kw)


class OPPO(LinOptPO):
    """Bandit-feedback OPPO: Algorithm 2 with Z = lam I, z = 0 (Section 3, Z = lambda I)."""

    name = "OPPO"

    def __init__(self, lam: float = 1.0, **kw):
        super().__init__(RidgeRegularizer(lam), **kw)


_PRIVATIZER_KEYS = ("delta", "radius_dim", "sensitivity_mode", "nonnegative_items", "target", "ridge")


def _split(kw):
    return {k: kw.pop(k) for k in _PRIVATIZER_KEYS if k in kw}


class PrivateLinOptVI(LinOptVI):
    """Private-LinOpt-VI (Def 6.2): Algorithm 1 with the Privatizer of Section 6.1. Privatizer keywords
    (delta, radius_dim, sensitivity_mode, nonnegative_items, target, ridge) are passed through."""

    name = "Private-LinOpt-VI"

    def __init__(self, epsilon: float = 1.0, **kw):
        super().__init__(Privatizer(epsilon, **_split(kw)), **kw)


class PrivateLinOptPO(LinOptPO):
    """Private-LinOpt-PO (Def 6.3): Algorithm 2 with the Privatizer of Section 6.1."""

    name = "Private-LinOpt-PO"

    def __init__(self, epsilon: float = 1.0, **kw):
        super().__init__(Privatizer(epsilon, **_split(kw)), **kw)
