"""Learner mutants of Algorithms 1 / 2 (He & Zhou) for the GFA audit tests: a per-episode copy of the batched
loop with hooks for when a run updates, and a data-dependent batch schedule built on it."""
import time

import numpy as np

from dpcheck.algorithms.envs.tabular import TabularMDP
from dpcheck.algorithms.gfa import PrivateGeneralMDP, PrivateOutcomeRL, evaluation
from dpcheck.algorithms.gfa.mechanism import exponential_mechanism
from dpcheck.algorithms.gfa.results import GFARun, MixturePolicy


class _EpisodeLoopMixin:
    """A per-episode copy of the batched loop with two hooks: which runs update at episode k (``_need``) and
    which entry an episode inside a batch plays (``_within``). The base hooks reproduce Algorithms 1-2."""

    def _need(self, k, start, used, zeros, M, B):
        return (k - start >= B) & (used < M) if k else np.ones_like(used, bool)

    def _within(self, k, cur, batch_scores, beta, rng):
        return cur

    def run(self, env, K, rng, runs=1, *, record=True, record_scores=False):
        t0 = time.perf_counter()
        fc = self.fclass
        H = env.H
        mdp = env if isinstance(env, TabularMDP) else getattr(env, "mdp", None)
        init = self._public_init(env, mdp)
        privacy = self.privacy(K)
        beta = self._temperature(privacy)
        env_rng, em_rng = rng.spawn(2)
        M, B = privacy.M, self.B
        optimism = self._optimism(init)
        stats = self._statistics(runs)
        selected = np.zeros((runs, M), dtype=np.int64)
        ep_entry = np.empty((runs, K), dtype=np.int64)
        states = np.empty((runs, K, H + 1), dtype=np.int64)
        actions = np.empty((runs, K, H), dtype=np.int64)
        rewards = np.empty((runs, K, H))
        cur = np.zeros(runs, dtype=np.int64)
        used = np.zeros(runs, dtype=np.int64)
        start = np.zeros(runs, dtype=np.int64)
        zeros = np.zeros(runs, dtype=np.int64)
        batch_scores = None
        r_all = np.arange(runs)
        for k in range(K):
            need = self._need(k, start, used, zeros, M, B)
            if need.any():
                sc = self.score(stats, optimism)
                if need.all():
                    new = self._choose(stats, optimism, beta, em_rng)
                else:
                    new = self._select(sc[need], beta, em_rng)
                cur = cur.copy()
                cur[need] = new
                selected[r_all[need], used[need]] = new
                used = used + need
                start = np.where(need, k, start)
                zeros = np.where(need, 0, zeros)
                batch_scores = sc if batch_scores is None else np.where(need[:, None], sc, batch_scores)
                play = cur
            else:
                play = self._within(k, cur, batch_scores, beta, em_rng)
            ep_entry[:, k] = play
            policy = fc.greedy_policies(play)
            if getattr(env, "per_episode", False):
                s_, a_, r_ = env.rollout(policy, env_rng, episode=k)[:3]
            else:
                s_, a_, r_ = env.rollout(policy, env_rng)[:3]
            s_, a_, r_ = (np.asarray(x).reshape((runs,) + np.shape(x)[1:]) for x in (s_, a_, r_))
            states[:, k], actions[:, k], rewards[:, k] = s_, a_, r_
            self._add(stats, s_[:, None], a_[:, None], r_[:, None])
            zeros = zeros + (r_.sum(axis=-1) == 0)
        regret = J_sel = J_star = None
        if mdp is not None:
            J_star = evaluation.optimal_return(mdp, init)
            J_entries = evaluation.policy_returns(mdp, fc.greedy_policies(), init)
            regret = J_star - J_entries[ep_entry]
            J_sel = J_entries[selected]
        out_rewards = rewards if self.algorithm == 1 else rewards.sum(axis=-1)
        return GFARun(config=self.config, privacy=privacy, K=K, B=B, M=M, runs=runs,
                      update_episodes=np.arange(M) * B, selected=selected, scores=None,
                      states=states if record else None, actions=actions if record else None,
                      rewards=out_rewards if record else None, regret=regret, optimal_return=J_star,
                      selected_returns=J_sel, output_policy=MixturePolicy(fc, ep_entry),
                      duration_s=time.perf_counter() - t0, extra={"beta_em_used": beta})


class CorrectLoopMixin(_EpisodeLoopMixin):
    """Correct twin of the per-episode loop (the update schedule of Algorithms 1-2)."""


class AdaptiveBatchEndMixin(_EpisodeLoopMixin):
    """A batch also ends early, spending the next of the M updates, once 5 of its episodes returned 0 ('the current
    policy is clearly bad: switch now'): a batch schedule decided on the users' raw returns."""

    def _need(self, k, start, used, zeros, M, B):
        if k == 0:
            return np.ones_like(used, bool)
        return ((k - start >= B) | (zeros >= 5)) & (used < M)


class EveryEpisodeResampleMixin(_EpisodeLoopMixin):
    """Every episode inside a batch plays a fresh draw of the exponential mechanism on the batch-start scores
    ('sampling from the private distribution is post-processing'), called directly, not through the learner's
    mechanism: K selections on the data instead of M = ceil(K / B)."""

    def _within(self, k, cur, batch_scores, beta, rng):
        return exponential_mechanism(batch_scores, beta, rng)


def make(mixin, alg):
    base = PrivateGeneralMDP if alg == 1 else PrivateOutcomeRL
    return type(f"{mixin.__name__.replace('Mixin', '')}Alg{alg}", (mixin, base), {})
