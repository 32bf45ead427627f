"""Algorithms 1 and 2 of He & Zhou (He & Zhou 2026, Algorithms 1-2, Section 3.3; docs/derivations.md#noise-calibration) and their non-private baselines.

Both algorithms share one loop (Algorithms 1-2): at episodes k = iB + 1 they score every class entry on D_[k] (the
episodes strictly before the batch start), draw f^(k) with the exponential mechanism (fresh randomness), and play the greedy pi_{f^(k)} (lowest action on ties) for the whole batch. They differ in the score:

    Algorithm 1 (PrivateGeneralMDP):  S(f) = eta f_1(s_1) - L^BE_D(f)   (Bellman error with the inf term)
    Algorithm 2 (PrivateOutcomeRL):   S(f) = eta fbar_1  - L^BR_D(f)   (outcome Bellman residual)

and in the sensitivity: 8H and (H+1)^2 (Section 3.3, docs/derivations.md#noise-calibration). The temperature is beta_EM = eps0 / (2 Delta_S) with
eps0 from the exact advanced-composition solve over M = ceil(K/B) updates (:mod:`dpcheck.algorithms.gfa.privacy`).
``epsilon = inf`` is the non-private argmax (Remark 3.7), with the tie rule ``tie_breaking``:
:class:`NonPrivateGeneralMDP` / :class:`NonPrivateOutcomeRL` are exactly that (B = 1: the unbatched
MEX / outcome-based learner; B = ceil(sqrt K): Remark 3.7's batched variant, :func:`remark_3_7_batch_size`).

Batched over independent runs (leading axis). ``run(env, K, rng, runs)`` spawns two child generators from
``rng``: environment / selection. ``env`` is a TabularMDP (exact per-episode regret) or a per-episode
user sequence (``dpcheck.algorithms.envs.users``; regret when it carries ``.mdp``).

The selection is a parameter: ``mechanism=`` any :class:`dpcheck.algorithms.gfa.SelectionMechanism` (default:
the paper's :class:`ExponentialMechanism`), run at eps0 = 2 Delta_S beta_EM on a score of sensitivity Delta_S
(a researcher's report-noisy-max or permute-and-flip plugs in here; docs/privatizers.md). Seams that
planted-defect variants override: ``_temperature(privacy)`` (e.g. dropping the factor 2),
``_select(scores, beta, rng)``.
"""
from __future__ import annotations

import math
import time

import numpy as np

from dpcheck.errors import InputError
from dpcheck.algorithms.envs._validate import check_rng, check_runs
from dpcheck.algorithms.envs.tabular import TabularMDP
from dpcheck.algorithms.gfa.function_class import FunctionClass
from dpcheck.algorithms.gfa.losses import BellmanErrorStatistics, OutcomeLossStatistics
from dpcheck.algorithms.gfa.mechanism import TIE_BREAKING, argmax_with_ties, chain_sample
from dpcheck.algorithms.gfa.privacy import EPS0_RULES, GFAPrivacy, _budget, _positive_int, sensitivity as _sensitivity
from dpcheck.algorithms.gfa.results import GFARun, MixturePolicy
from dpcheck.algorithms.gfa import evaluation

SAMPLERS = ("auto", "enumerate", "messages")
# "auto" switches to backward messages for product classes larger than this many entries.
_ENUMERATE_MAX = 1 << 16
# Trajectory reward sums may exceed 1 by float rounding only (the normalisation check of docs/derivations.md#noise-calibration).
_NORMALISATION_TOL = 1e-9


def remark_3_7_batch_size(K: int) -> int:
    """B = ceil(sqrt(K)) of the non-private batched variant (Remark 3.7)."""
    K = _positive_int("K", K)
    b = math.isqrt(K)
    return b if b * b == K else b + 1


class _BatchedExponentialMechanism:
    algorithm = 0
    name = ""

    def __init__(self, function_class: FunctionClass, *, epsilon: float = 1.0, delta: float = 1e-5, B: int = 1,
                 eta: float = 1.0, eps0_rule: str = "exact", sensitivity="paper", tie_breaking: str = "random",
                 mechanism=None):
        if not isinstance(function_class, FunctionClass):
            raise InputError(f"function_class must be a FunctionClass, got {type(function_class).__name__}")
        self.fclass = function_class
        self.epsilon = _budget("epsilon", epsilon, allow_inf=True)
        if math.isfinite(self.epsilon) and not (isinstance(delta, (int, float)) and 0 < delta < 1):
            raise InputError(f"delta must lie in (0, 1), got {delta!r}")
        self.delta = float(delta)
        self.B = _positive_int("batch size B", B)
        self.eta = _budget("eta", eta, allow_inf=False)
        if eps0_rule not in EPS0_RULES:
            raise InputError(f"eps0_rule must be one of {EPS0_RULES}, got {eps0_rule!r}")
        self.eps0_rule = eps0_rule
        if isinstance(sensitivity, str):
            self.sensitivity_kind = sensitivity
            self.sensitivity = _sensitivity(self.algorithm, function_class.H, sensitivity)
        else:
            self.sensitivity_kind = "given"
            self.sensitivity = _budget("sensitivity", sensitivity, allow_inf=False)
        if tie_breaking not in TIE_BREAKING:
            raise InputError(f"tie_breaking must be one of {TIE_BREAKING}, got {tie_breaking!r}")
        self.tie_breaking = tie_breaking
        from dpcheck.algorithms.gfa.selection import load_selection_mechanism
        self.mechanism = load_selection_mechanism(mechanism, tie_breaking=tie_breaking)

    # ------------------------------------------------------------------ configuration
    @property
    def config(self) -> dict:
        return {"name": self.name, "algorithm": self.algorithm, "epsilon": self.epsilon, "delta": self.delta,
                "B": self.B, "eta": self.eta, "eps0_rule": self.eps0_rule, "sensitivity": self.sensitivity,
                "sensitivity_kind": self.sensitivity_kind, "tie_breaking": self.tie_breaking,
                "class": repr(self.fclass), "N": self.fclass.N, "mechanism": repr(self.mechanism)}

    def __repr__(self) -> str:
        keys = ("epsilon", "delta", "B", "eta", "eps0_rule", "sensitivity", "tie_breaking")
        return f"{type(self).__name__}(" + ", ".join(f"{k}={self.config[k]!r}" for k in keys) + ")"

    def privacy(self, K: int) -> GFAPrivacy:
        """The privacy declaration for K episodes, from the parameters alone (Section 3.3, docs/derivations.md#noise-calibration)."""
        return GFAPrivacy.declare(self.algorithm, epsilon=self.epsilon, delta=self.delta, K=K, B=self.B,
                                  sensitivity=self.sensitivity, eps0_rule=self.eps0_rule)

    @property
    def claim(self):
        """The (epsilon, delta)-JDP Claim (None when non-private); independent of K."""
        return self.privacy(1).claim

    # ------------------------------------------------------------------ seams
    def _temperature(self, privacy: GFAPrivacy) -> float:
        """beta_EM actually used: eps0 / (2 Delta_S) (= the declaration's beta_em)."""
        return privacy.beta_em

    def temperature(self, K: int) -> float:
        return self._temperature(self.privacy(K))

    def _select(self, scores: np.ndarray, beta: float, rng: np.random.Generator) -> np.ndarray:
        """The selection mechanism at eps0 = 2 Delta_S beta on a score of sensitivity Delta_S; beta = inf is
        the non-private argmax of Remark 3.7 whatever the mechanism (tie rule ``tie_breaking``)."""
        if math.isinf(beta):
            return argmax_with_ties(scores, rng, self.tie_breaking)
        return self.mechanism.select(scores, 2.0 * self.sensitivity * float(beta), self.sensitivity, rng)

    def select(self, scores, K: int, rng: np.random.Generator) -> np.ndarray:
        """One selection per row of ``scores`` (runs, N) at this K's temperature, through the learner's
        mechanism (for audits comparing empirical selection frequencies with the declared law)."""
        check_rng(rng)
        return self._select(np.asarray(scores, float), self.temperature(K), rng)

    def declared_log_probabilities(self, scores, K: int) -> np.ndarray:
        """The closed form log Pr[f] (runs, N) the declaration promises: the mechanism's own law at the declared
        eps0 (log-softmax at privacy(K).beta_em for the exponential mechanism); None when the mechanism has no
        closed form. Independent of the ``_temperature`` seam, so an audit can compare it with :meth:`select`'s
        draws."""
        p = self.privacy(K)
        return self.mechanism.log_probabilities(np.asarray(scores, float), p.eps0, p.sensitivity)

    def dataset_scores(self, states, actions, rewards, init) -> np.ndarray:
        """S_D(f) (N,) of this learner (its eta, class and loss) on one dataset, through the same statistics
        as :meth:`run` (for sensitivity audits on neighbouring datasets, docs/derivations.md#noise-calibration).

        states (n, H+1), actions (n, H), rewards (n, H) (Algorithm 2 uses only their sum, the outcome);
        init: s_1 (Algorithm 1) or rho (Algorithm 2).
        """
        stats = self._statistics(1)
        r = np.asarray(rewards, dtype=np.float64)
        if len(r):
            self._add(stats, np.asarray(states)[None], np.asarray(actions)[None], r[None])
        return self.score(stats, self._optimism(init))[0]

    # ------------------------------------------------------------------ subclass hooks
    def _statistics(self, runs):
        raise NotImplementedError

    def _add(self, stats, states, actions, rewards):
        raise NotImplementedError

    def _optimism(self, mdp_init):
        raise NotImplementedError

    def score(self, stats, optimism) -> np.ndarray:
        raise NotImplementedError

    def _choose(self, stats, optimism, beta, rng):
        return self._select(self.score(stats, optimism), beta, rng)

    # ------------------------------------------------------------------ the loop
    def run(self, env, K: int, rng: np.random.Generator, runs: int = 1, *, record: bool = True,
            record_scores: bool = False) -> GFARun:
        """Run K episodes in ``runs`` independent copies (Algorithms 1-2)."""
        t0 = time.perf_counter()
        check_rng(rng)
        runs = check_runs(runs)
        K = _positive_int("K", K)
        fc = self.fclass
        H, S, A = env.H, env.S, env.A
        fc.check_shape(H, S, A, "the environment")
        mdp = env if isinstance(env, TabularMDP) else getattr(env, "mdp", None)
        init = self._public_init(env, mdp)
        if mdp is not None and evaluation.max_return(mdp) > 1 + _NORMALISATION_TOL:
            raise InputError("the MDP violates the reward normalisation sum_h r_h <= 1 on some trajectory; the "
                             "sensitivity bounds of Section 3.3, docs/derivations.md#noise-calibration (and so the privacy guarantee) need it")
        privacy = self.privacy(K)
        beta = self._temperature(privacy)
        env_rng, em_rng = rng.spawn(2)
        M, B = privacy.M, self.B
        optimism = self._optimism(init)
        stats = self._statistics(runs)

        selected = np.empty((runs, M), dtype=np.int64)
        scores_log = np.empty((runs, M, fc.N)) if record_scores else None
        states = np.empty((runs, K, H + 1), dtype=np.int64)
        actions = np.empty((runs, K, H), dtype=np.int64)
        rewards = np.empty((runs, K, H))
        J_sel = None
        if mdp is not None:
            J_star = evaluation.optimal_return(mdp, init)
            J_sel = np.empty((runs, M))
        for i in range(M):
            k0, k1 = i * B, min(K, (i + 1) * B)
            if record_scores:
                scores_log[:, i] = self.score(stats, optimism)
            idx = self._choose(stats, optimism, beta, em_rng)                      # (runs,)
            selected[:, i] = idx
            policy = fc.greedy_policies(idx)                                        # (runs, H, S)
            tr_s, tr_a, tr_r = self._rollouts(env, policy, env_rng, k0, k1, runs)   # (runs, n, ...)
            sums = tr_r.sum(axis=-1)
            if np.any(sums > 1 + _NORMALISATION_TOL) or np.any(tr_r < 0):
                raise InputError("an episode's rewards leave [0, 1] in total (sum_h r_h <= 1, r_h >= 0 are needed "
                                 "by the sensitivity bounds of Section 3.3, docs/derivations.md#noise-calibration)")
            states[:, k0:k1], actions[:, k0:k1], rewards[:, k0:k1] = tr_s, tr_a, tr_r
            self._add(stats, tr_s, tr_a, tr_r)                     # data of this batch used from the next update on
            if J_sel is not None:
                J_sel[:, i] = evaluation.policy_returns(mdp, policy, init)
        update_episodes = np.arange(M) * B
        episode_entries = np.repeat(selected, B, axis=1)[:, :K]
        regret = None
        if J_sel is not None:
            regret = J_star - np.repeat(J_sel, B, axis=1)[:, :K]
        out_rewards = rewards if self.algorithm == 1 else rewards.sum(axis=-1)
        return GFARun(config=self.config, privacy=privacy, K=K, B=B, M=M, runs=runs,
                      update_episodes=update_episodes, selected=selected, scores=scores_log,
                      states=states if record else None, actions=actions if record else None,
                      rewards=out_rewards if record else None, regret=regret,
                      optimal_return=None if J_sel is None else J_star, selected_returns=J_sel,
                      output_policy=MixturePolicy(fc, episode_entries),
                      duration_s=time.perf_counter() - t0, extra={"beta_em_used": beta})

    @staticmethod
    def _rollouts(env, policy, rng, k0, k1, runs):
        """Episodes k0..k1-1 of every run under the batch's policy: states (runs, n, H+1), actions, rewards."""
        n = k1 - k0
        if getattr(env, "per_episode", False):
            trs = [env.rollout(policy, rng, episode=k) for k in range(k0, k1)]
            return tuple(np.stack([t[j] for t in trs], axis=1) for j in range(3))
        tiled = np.repeat(policy, n, axis=0)                     # (runs * n, H, S), run-major
        tr = env.rollout(tiled, rng)
        return tuple(np.asarray(x).reshape((runs, n) + np.shape(x)[1:]) for x in tr[:3])


class PrivateGeneralMDP(_BatchedExponentialMechanism):
    """Algorithm 1: general stochastic MDPs, Bellman-error loss with the inf term, fixed public s_1.

    function_class  FunctionClass (Bellman completeness assumed, Assumption 2.1)
    epsilon, delta  (eps, delta)-JDP budget; epsilon = inf -> non-private argmax
    B               batch size (updates at k = iB + 1)
    eta             optimism weight
    eps0_rule       "exact" | "section_3_3" | "appendix_e" (docs/derivations.md#noise-calibration)
    sensitivity     "paper" (8H) or a number (a user's tighter derivation)
    tie_breaking    tie rule of the non-private argmax: "random" (seeded) | "lowest"
    s1              the fixed initial state; None = the point mass of the environment's init (needed only for
                    environments without a known init)
    inf_mode        "auto" | "product" | "literal" (min over the list for non-product classes)
    sampler         "auto" | "enumerate" | "messages" (backward messages, product classes only)
    mechanism       the selection mechanism (SelectionMechanism, a name or 'file.py:Class'; default the
                    exponential mechanism); "messages" is the exponential mechanism's sampler only
    """

    algorithm = 1
    name = "Algorithm 1 (private, Bellman error)"

    def __init__(self, function_class: FunctionClass, *, epsilon: float = 1.0, delta: float = 1e-5, B: int = 1,
                 eta: float = 1.0, eps0_rule: str = "exact", sensitivity="paper", tie_breaking: str = "random",
                 s1: int | None = None, inf_mode: str = "auto", sampler: str = "auto", mechanism=None):
        super().__init__(function_class, epsilon=epsilon, delta=delta, B=B, eta=eta, eps0_rule=eps0_rule,
                         sensitivity=sensitivity, tie_breaking=tie_breaking, mechanism=mechanism)
        if inf_mode not in ("auto", "product", "literal"):
            raise InputError(f"inf_mode must be 'auto', 'product' or 'literal', got {inf_mode!r}")
        if inf_mode == "product" and not function_class.is_product:
            raise InputError("inf_mode='product' needs a product class (Algorithm 1); use 'literal' or 'auto'")
        if sampler not in SAMPLERS:
            raise InputError(f"sampler must be one of {SAMPLERS}, got {sampler!r}")
        if sampler == "messages" and not function_class.is_product:
            raise InputError("sampler='messages' needs a product class (the score is a chain sum only then)")
        from dpcheck.algorithms.gfa.selection import ExponentialMechanism
        em = type(self.mechanism) is ExponentialMechanism
        if sampler == "messages" and not em:
            raise InputError("sampler='messages' samples the exponential mechanism by backward messages; "
                             f"the selection mechanism {self.mechanism!r} needs sampler='enumerate'")
        if sampler == "auto":
            sampler = ("messages" if em and function_class.is_product and function_class.N > _ENUMERATE_MAX
                       else "enumerate")
        if sampler == "messages" and math.isinf(self.epsilon) and tie_breaking != "lowest":
            raise InputError("the backward-message argmax (epsilon = inf) implements only tie_breaking='lowest'")
        self.s1 = None if s1 is None else int(s1)
        self.inf_mode = inf_mode
        self.sampler = sampler

    @property
    def config(self) -> dict:
        return {**super().config, "s1": self.s1, "inf_mode": self.inf_mode, "sampler": self.sampler}

    def _public_init(self, env, mdp):
        """s_1: the environment's point-mass initial state (s1=, if given, must agree with it), or ``s1`` for
        environments without a known init (per-episode users)."""
        init = getattr(env, "init", None) if mdp is None else mdp.init
        if init is not None:
            if np.count_nonzero(init) != 1:
                raise InputError("Algorithm 1 needs a fixed public initial state s_1 (Section 2.1); this environment's "
                                 "initial distribution is not a point mass")
            s = int(np.flatnonzero(init)[0])
            if self.s1 is not None and self.s1 != s:
                raise InputError(f"s1 = {self.s1} but the environment always starts in state {s}")
            return s
        if self.s1 is None:
            raise InputError("Algorithm 1 needs the fixed public initial state s_1 (Section 2.1): pass s1=")
        if not 0 <= self.s1 < env.S:
            raise InputError(f"s1 = {self.s1} is out of range for S = {env.S}")
        return self.s1

    def _statistics(self, runs):
        return BellmanErrorStatistics(self.fclass, runs)

    def _add(self, stats, states, actions, rewards):
        stats.add(states, actions, rewards)

    def _optimism(self, s1):
        return self.eta * self.fclass.initial_values(int(s1))

    def score(self, stats: BellmanErrorStatistics, optimism) -> np.ndarray:
        """S(f) = eta f_1(s_1) - L^BE_D(f) (runs, N) from the sufficient statistics."""
        return optimism[None, :] - stats.loss(self.inf_mode)

    def _choose(self, stats, optimism, beta, rng):
        if self.sampler != "messages":
            return super()._choose(stats, optimism, beta, rng)
        fc = self.fclass
        u1 = np.zeros(fc.sizes[0])
        u1[fc.index[:, 0]] = optimism                  # eta max_a g(s_1, a) of every g in F_1
        u = np.broadcast_to(u1, (stats.runs, fc.sizes[0]))
        steps = chain_sample(u, stats.chain_losses(), beta, rng)               # (runs, H) per-step indices
        return fc.entry_at_position[np.ravel_multi_index(steps.T, fc.sizes)]


class PrivateOutcomeRL(_BatchedExponentialMechanism):
    """Algorithm 2: deterministic MDPs with outcome rewards, outcome Bellman-residual loss, known rho.

    Parameters as :class:`PrivateGeneralMDP`, except ``sensitivity``: "paper" ((H+1)^2), "telescoping" (H^2),
    "binary" (1: classes whose R^(f) and the outcome are in {0, 1}, e.g. Appendix D) or a number (docs/derivations.md#noise-calibration).
    The learner sees only the states, actions and the outcome r(tau) = sum_h r_h of each episode. It runs on any
    MDP; Theorem 3.4 needs deterministic transitions (Def 3.3: ``evaluation.next_state_table(mdp) is not None``)
    and realizability (``evaluation.realizability``), which an assumption check reports.
    """

    algorithm = 2
    name = "Algorithm 2 (private, outcome reward)"

    def _public_init(self, env, mdp):
        init = getattr(env, "init", None) if mdp is None else mdp.init
        if init is None:
            raise InputError("Algorithm 2 needs the known initial distribution rho (Section 2.1): the environment has no init")
        return np.asarray(init, dtype=np.float64)

    def _statistics(self, runs):
        return OutcomeLossStatistics(self.fclass, runs)

    def _add(self, stats, states, actions, rewards):
        stats.add(states, actions, rewards.sum(axis=-1))          # only the outcome reaches the learner

    def _optimism(self, rho):
        return self.eta * self.fclass.initial_values(rho)

    def score(self, stats: OutcomeLossStatistics, optimism) -> np.ndarray:
        """S(f) = eta fbar_1 - L^BR_D(f) (runs, N)."""
        return optimism[None, :] - stats.loss()


class NonPrivateGeneralMDP(PrivateGeneralMDP):
    """Algorithm 1 with the exact argmax (epsilon = inf): B = 1 is the unbatched learner, B = ceil(sqrt K) the
    batched one of Remark 3.7."""

    name = "Algorithm 1 (non-private)"

    def __init__(self, function_class, *, B: int = 1, eta: float = 1.0, tie_breaking: str = "random",
                 s1=None, inf_mode="auto", sampler="auto"):
        super().__init__(function_class, epsilon=math.inf, B=B, eta=eta, tie_breaking=tie_breaking, s1=s1,
                         inf_mode=inf_mode, sampler=sampler)


class NonPrivateOutcomeRL(PrivateOutcomeRL):
    """Algorithm 2 with the exact argmax (epsilon = inf); B = 1 unbatched, B = ceil(sqrt K) batched (Remark 3.7)."""

    name = "Algorithm 2 (non-private)"

    def __init__(self, function_class, *, B: int = 1, eta: float = 1.0, tie_breaking: str = "random"):
        super().__init__(function_class, epsilon=math.inf, B=B, eta=eta, tie_breaking=tie_breaking)


Algorithm1 = PrivateGeneralMDP
Algorithm2 = PrivateOutcomeRL
