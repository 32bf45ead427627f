"""Why dp_ucbvi --quick keeps its regret instance and takes a second look instead of choosing a gapped one
(benchmarks/results/dp_ucbvi_escalation.md).

For each audit seed, the rate checks of ``dpcheck audit dp_ucbvi`` on the first random 2x2x2 MDP of the seed's
stream (``--rule first``, the audit's instance) or on the first draw whose optimal-action gaps are all >= 0.1
(``--rule gapped``), with the correct agent or the planted capped-count defect (N~ capped at 2E: the privacy
term of the bonus never falls below 1/2, so the agent never stops exploring where gaps are small).

    python benchmarks/ucbvi_regret_instance.py --rule first --sweep quick --seeds 60 --out runs.jsonl
    python benchmarks/ucbvi_regret_instance.py --rule gapped --agent capped --seeds 11 --out runs.jsonl

One JSON line per seed: the instance's smallest gap (algorithms/envs/planning.py semantics: at reachable (h, s))
and the three verdicts ("pass/uninformative" where qualified). Checks at the audit's levels: PASS at alpha 0.05,
FAIL at the audit's per-check share 0.05 / 23.
"""
from __future__ import annotations

import argparse
import json
from dataclasses import replace

import numpy as np

from dpcheck.algorithms.envs.generators import random_mdp
from dpcheck.algorithms.envs.planning import optimal_values
from dpcheck.algorithms.online.ucbvi import DPUCBVI
from dpcheck.audits.dp_ucbvi import regret_sweep
from dpcheck.audits.lib import ucbvi
from dpcheck.stats import pass_level


class CappedCountsDPUCBVI(DPUCBVI):
    """The planted defect of tests/project/test_false_alarm.py."""
    def _estimates(self, counts):
        P, r, n = super()._estimates(counts)
        return P, r, np.minimum(n, 2 * counts.width)


def smallest_gap(env) -> float:
    """min over step 0's initial state and every state of later steps of V* - (second best Q*)."""
    Q, _ = optimal_values(env)
    top = np.sort(Q, axis=-1)
    g = top[..., -1] - top[..., -2]
    return float(min(g[0, 0], g[1:].min()))


def instance(seed: int, rule: str, min_gap: float = 0.1):
    rng = np.random.default_rng(seed + 7)            # the audit's stream (audits/dp_ucbvi.py, regret)
    env = random_mdp(2, 2, 2, rng)
    while rule == "gapped" and smallest_gap(env) < min_gap:
        env = random_mdp(2, 2, 2, rng)
    return env


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rule", choices=("first", "gapped"), default="first")
    ap.add_argument("--agent", choices=("correct", "capped"), default="correct")
    ap.add_argument("--sweep", choices=("quick", "default"), default="quick")
    ap.add_argument("--seeds", type=int, default=60)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    spec = ucbvi.AgentSpec(privatizer="central", epsilon=1.0, beta=0.1, calibration="strict")
    practical = replace(spec, mode="practical", width_mode="nominal",
                        agent_class=CappedCountsDPUCBVI if a.agent == "capped" else None)
    K_grid, runs, eps_grid = regret_sweep(spec, "JDP", quick=a.sweep == "quick")
    with open(a.out, "a") as f:
        for seed in range(a.seeds):
            env = instance(seed, a.rule)
            with pass_level(0.05):
                cs = ucbvi.regret_checks(practical, env, K_grid=K_grid, runs=runs, seed=seed + 3, alpha=0.05 / 23,
                                         eps_grid=eps_grid)
            rec = {"rule": a.rule, "agent": a.agent, "sweep": a.sweep, "seed": seed, "gap": smallest_gap(env),
                   "verdicts": {c.id: c.verdict + (f"/{c.details['qualifier']}" if c.details.get("qualifier") else "")
                                for c in cs}}
            f.write(json.dumps(rec) + "\n")
            f.flush()
            print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
