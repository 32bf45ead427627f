"""Substrate speed: batched policy evaluation and rollouts against per-item loops timed in the same run.

    python benchmarks/bench_envs.py
"""
import numpy as np

from dpcheck.algorithms.envs import (greedy, nash_values, optimal_values, random_game, random_mdp, riverswim,
                             suboptimality, users_from_model)
from timing import best_of


def main():
    rng = np.random.default_rng(0)
    mdp = riverswim()
    policies = rng.integers(0, 2, size=(768, 20, 6))
    batched = best_of(lambda: suboptimality(mdp, policies))
    loop = best_of(lambda: [suboptimality(mdp, p) for p in policies[:64]]) * 12
    print(f"policy evaluation, RiverSwim, 768 policies: batched {batched * 1e3:.1f} ms, "
          f"one at a time {loop * 1e3:.1f} ms, ratio {loop / batched:.1f}x")

    big = random_mdp(20, 5, 10, rng)
    policies = rng.integers(0, 5, size=(768, 10, 20))
    print(f"policy evaluation, S=20 A=5 H=10, 768 policies: {best_of(lambda: suboptimality(big, policies)) * 1e3:.1f} ms")

    pi = greedy(optimal_values(mdp)[0])
    rollout = best_of(lambda: mdp.rollout(pi, np.random.default_rng(1), runs=100_000), 3)

    def naive_1000_runs():  # baseline: per-run Python loop with rng.choice
        g = np.random.default_rng(1)
        for _ in range(1000):
            s = 0
            for h in range(20):
                s = g.choice(6, p=mdp.P[h, s, pi[h, s]])

    naive = best_of(naive_1000_runs, 1) * 100
    print(f"rollout, RiverSwim, 1e5 runs: batched {rollout * 1e3:.1f} ms, per-run loop (scaled from 1e3 runs) "
          f"{naive * 1e3:.0f} ms, ratio {naive / rollout:.0f}x")

    game = random_game(3, 2, 2, 3, rng)
    print(f"nash_values, T3: {best_of(lambda: nash_values(game)) * 1e3:.1f} ms")
    game = random_game(10, 4, 4, 10, rng)
    print(f"nash_values, S=10 A=B=4 H=10: {best_of(lambda: nash_values(game), 2) * 1e3:.1f} ms")
    users = users_from_model(mdp, 1000, rng)
    t = best_of(lambda: users.rollout(pi, np.random.default_rng(1), runs=100_000, episode=3), 3)
    print(f"model users rollout, 1e5 runs: {t * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
