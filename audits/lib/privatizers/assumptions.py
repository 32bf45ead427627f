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
    # the good event |N^ - N| <= E/4 (Lemmas 5.1 / 5.6: w.p. >= 1 - beta/3) is the hypothesis no_underestimation
    # is judged on: without its own check, an E too small by 3x (the good event failing in most runs) passed, the
    # no-underestimation check silently restricted to the few good-event runs (dp_ucbvi judges it the same way)
    good = mon.good_event_check(
        id="assumption.good_event", beta=beta / 3, alpha=alpha,
        claim={"statement": "|N^ - N| <= E/4 for all (h,s,a,s',k) w.p. >= 1 - beta/3 (the good event of Lemmas "
                            "5.1 / 5.6; the hypothesis of Lemma 5.4)", "beta": beta / 3,
               "source": f"{source}; Lemmas 5.1 / 5.6" if source else "Lemmas 5.1 / 5.6"},
        details={"width_E": p.width, "runs": runs, "K": K, "H": H, "S": S, "A": A,
                 "max_noisy_error_over_quarter_E": mon.noise_ratio.tolist()},
        what="the good event")
    return [*mon.checks(beta=beta, alpha=alpha), good]
