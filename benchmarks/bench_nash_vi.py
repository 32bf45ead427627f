"""DP-Nash-VI speed (issue #5, item 4). Not part of the test suite; prints its numbers.

    python benchmarks/bench_nash_vi.py [--K 10000] [--quick]

1. Episodes per second of one run on T3 (S=3, A=B=2, H=3) and on a larger game (S=5, A=B=3, H=5),
   non-private and with the Central privatizer (practical mode, so the CCEs are not all trivial).
   Goal: K = 10^4 episodes of the larger game in under 10 s on one core. Baseline timed in the same
   run: the same algorithm through the validated ``game.step`` (a wrapper that hides the MarkovGame
   kernel) -- the stepping of the loop before the issue #5 profile;
   the ratio baseline/ours is what to compare across machines (the machine is shared and loaded).
   Since the issue #5 profile: one batched matmul per step (P~Vb, P~Vu, P~Vm^2), an all-pure CCE fast
   path, direct kernel sampling, simplex warm starts from last episode's bases (cce.py), no errstate in
   hot loops. The baseline shares all but the step change, so its ratio understates the gain:
   the 12.7 s of the issue was measured before; see the commit messages for the same-machine numbers.
2. CCE time per stage game (h, s): our batched solver (pure profiles + numpy simplex) against one
   scipy.optimize.linprog(method="highs") call per stage game, on the stage games DP-Nash-VI actually
   produced (recorded from a run), measured in the same process: the ratio is what matters.
"""
from __future__ import annotations

import argparse
import time

import numpy as np


class _Validated:
    """The game seen only through its public protocol (validated reset/step): the baseline path."""

    def __init__(self, game):
        self._g = game
        self.H, self.S, self.A, self.B, self.r, self.init = game.H, game.S, game.A, game.B, game.r, game.init

    def reset(self, rng, runs):
        return self._g.reset(rng, runs)

    def step(self, h, s, a, b, rng):
        return self._g.step(h, s, a, b, rng)


def episodes_per_second(S, A, H, K, privatizer, seed=0, baseline=False):
    from dpcheck.algorithms.envs.generators import random_game
    from dpcheck.algorithms.games.dp_nash_vi import DPNashVI

    game = random_game(S, A, A, H, np.random.default_rng(seed))
    algo = DPNashVI(privatizer, mode="practical")
    t = time.perf_counter()
    if baseline:
        res = algo.run(_Validated(game), K, np.random.default_rng(seed + 1))
    else:
        res = algo.run(game, K, np.random.default_rng(seed + 1))
    dt = time.perf_counter() - t
    return K / dt, dt, res.cce_stats


def recorded_stage_games(S, A, H, K, seed=0):
    from dpcheck.algorithms.envs.generators import random_game
    from dpcheck.algorithms.games.dp_nash_vi import DPNashVI
    from dpcheck.algorithms.privatizers import NoPrivatizer

    game = random_game(S, A, A, H, np.random.default_rng(seed))
    res = DPNashVI(NoPrivatizer(), mode="practical", record_values=True).run(game, K, np.random.default_rng(seed + 1))
    return res.Qb.reshape(-1, A, A), res.Qu.reshape(-1, A, A), float(H)


def cce_ratio(Qb, Qu, H, n_scipy=300, per_step=None):
    """Seconds per stage game: ours (batched per step of per_step games, as in the algorithm) vs scipy."""
    from dpcheck.algorithms.games.cce import constraint_matrix, highs_cce, solve_cce

    n = Qb.shape[0]
    per_step = per_step or n
    t = time.perf_counter()
    for i in range(0, n, per_step):
        solve_cce(Qb[i:i + per_step], Qu[i:i + per_step], H=H)
    ours = (time.perf_counter() - t) / n
    idx = np.random.default_rng(0).choice(n, size=min(n_scipy, n), replace=False)
    M = constraint_matrix(Qb[idx], Qu[idx])
    t = time.perf_counter()
    for Mi in M:
        highs_cce(Mi)
    scipy_t = (time.perf_counter() - t) / len(idx)
    return ours, scipy_t


def main(argv=None):
    from dpcheck.algorithms.privatizers import CentralPrivatizer, NoPrivatizer

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--K", type=int, default=10_000)
    ap.add_argument("--quick", action="store_true", help="K = 1000")
    args = ap.parse_args(argv)
    K = 1000 if args.quick else args.K
    print(f"DP-Nash-VI episodes per second (one run, practical mode, K={K})")
    for label, (S, A, H) in [("T3 S=3 A=B=2 H=3", (3, 2, 3)), ("larger S=5 A=B=3 H=5", (5, 3, 5))]:
        for pname, priv in [("non-private", NoPrivatizer()), ("central eps=1", CentralPrivatizer(epsilon=1.0))]:
            import copy
            base_s, base_dt, _ = episodes_per_second(S, A, H, K, copy.deepcopy(priv), baseline=True)
            eps_s, dt, st = episodes_per_second(S, A, H, K, priv)
            goal = f"  (10^4 episodes would take {1e4 / eps_s:.1f} s; goal < 10 s)" if S == 5 else ""
            print(f"  {label:22s} {pname:14s} {eps_s:8.0f} episodes/s  ({dt:.2f} s; baseline {base_dt:.2f} s, "
                  f"ratio {base_dt / dt:.2f}x){goal}  CCE: {st['pure']} pure, {st['hint']} reused, "
                  f"{st['simplex']} simplex, {st['highs']} HiGHS")
    print("CCE time per stage game (h, s): batched solver vs one scipy linprog(HiGHS) call per stage game")
    for label, (S, A, H) in [("T3", (3, 2, 3)), ("larger", (5, 3, 5))]:
        Qb, Qu, Hf = recorded_stage_games(S, A, H, min(K, 2000))
        ours, sp = cce_ratio(Qb, Qu, Hf, per_step=S)
        mixed = ~_pure_mask(Qb, Qu)
        ours_m, sp_m = cce_ratio(Qb[mixed], Qu[mixed], Hf, per_step=S) if mixed.sum() > S else (np.nan, np.nan)
        print(f"  {label:7s} all stage games ({Qb.shape[0]}): ours {ours * 1e6:7.1f} us, scipy {sp * 1e6:7.1f} us, "
              f"ratio scipy/ours = {sp / ours:6.1f}")
        print(f"  {label:7s} mixed only       ({int(mixed.sum())}): ours {ours_m * 1e6:7.1f} us, scipy {sp_m * 1e6:7.1f} us, "
              f"ratio scipy/ours = {sp_m / ours_m:6.1f}")


def _pure_mask(Qb, Qu):
    from dpcheck.algorithms.games.cce import pure_cce
    return pure_cce(Qb, Qu)[0]


if __name__ == "__main__":
    main()
