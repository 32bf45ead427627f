"""Assumption 3.1 of the online count privatizers over R repetitions (Qiao & Wang 2023, Section 3).

:func:`assumption_checks` runs the privatizer on R independent repetitions of random user sequences and checks
the assumption part by part with :class:`dpcheck.audits.lib.tabular.CountAssumptionMonitor`.
"""
from __future__ import annotations

import copy

import numpy as np


# ============================================================ Assumption 3.1 over R repetitions
def assumption_checks(template, *, runs=200, H=2, S=3, A=2, K=64, rewards=True, rng, beta=None, alpha=0.05,
                      source="") -> list:
    """Run the privatizer on R = ``runs`` independent repetitions (batched) of random user sequences
    and check Assumption 3.1 part by part. Users' trajectories are uniform random (the assumption is
    claimed for every user sequence; the error of N^ does not depend on the data, docs/derivations.md#widths-e)."""
    from dpcheck.audits.lib.tabular import CountAssumptionMonitor
    p = copy.deepcopy(template)
    p.start(runs, H, S, A, K, rng, rewards=rewards)
    beta = beta if beta is not None else getattr(p, "beta", 0.1)
    mon = CountAssumptionMonitor(runs, p.width, source=source, has_rewards=rewards)
    data = np.random.default_rng(rng.integers(2**63))
    mon.update(p.release(), p.true_counts())
    for _ in range(K - 1):
        st = data.integers(0, S, (runs, H + 1))
        ac = data.integers(0, A, (runs, H))
        rw = data.random((runs, H)) if rewards else None
        p.observe(st, ac, rw)
        mon.update(p.release(), p.true_counts())
    return mon.checks(beta=beta, alpha=alpha)
