"""Assumption checks of the GFA learners (He & Zhou, arXiv 2605.07049): realizability, completeness
(Assumption 2.1), coverability computed exactly with its certificate (Definition 2.2, Appendix D) and
determinism for Algorithm 2 (Definition 3.3).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from dpcheck.checks import Check, invariant_check
from dpcheck.audits.lib.gfa.instance import SOURCE, THEOREM


# ----------------------------------------------------------------------------- assumptions
def assumption_checks(algorithm: int, inst, *, reference: dict | None = None) -> list[Check]:
    """Realizability (Q* in F), completeness (Algorithm 1, Assumption 2.1), coverability computed exactly
    (Definition 2.2) with its certificate, and for Algorithm 2 determinism (Def 3.3) and Appendix D's coverability facts.

    ``reference``: known figures of a built-in instance (Appendix D) the computed ones must match."""
    from dpcheck.algorithms.gfa import (completeness, coverability, next_state_table, per_start_coverability,
                                realizability)
    mdp, fc = inst.mdp, inst.fclass
    out = []
    base = {"instance": inst.name, "class": repr(fc)}
    rz = realizability(mdp, fc)
    out.append(invariant_check(
        id="assumption.realizability", violations=0 if rz.holds else 1, total=1,
        claim={"statement": "Q* in F (some entry equals Q* within 1e-9 in sup norm)",
               "source": f"{SOURCE}, Assumption 2.1 / {THEOREM[algorithm]}"},
        details={**base, "entries": list(rz.entries), "distance": rz.distance},
        what=f"realizability (min ||f - Q*||_inf = {rz.distance:.3g})"))
    if algorithm == 1:
        cp = completeness(mdp, fc)
        out.append(invariant_check(
            id="assumption.completeness", violations=len(cp.violations), total=sum(fc.sizes),
            claim={"statement": "T_h F_{h+1} subseteq F_h for every h (Bellman completeness)",
                   "source": f"{SOURCE}, Assumption 2.1 (Theorem 3.1)"},
            details={**base, "per_step": list(cp.per_step), "worst_distance": cp.worst,
                     "violations": [list(v) for v in cp.violations[:20]]},
            what=f"completeness (worst distance of a backup to F_h {cp.worst:.3g})"))
    cov = coverability(mdp, fc)
    # certificate: with the optimal mu_h (pointwise max, normalised) the ratio max_{h,pi,(s,a)} d/mu attains C_cov
    from dpcheck.algorithms.gfa import occupancies
    pols = fc.greedy_policies()
    uniq = np.unique(pols.reshape(pols.shape[0], -1), axis=0).reshape((-1,) + pols.shape[1:])
    d = occupancies(mdp, uniq)                                             # (P, H, S, A)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(d > 0, d / cov.mu[None], 0.0)
    attained = float(np.max(ratio))
    bad = int(abs(attained - cov.value) > 1e-9 * max(1.0, cov.value)) + int(np.any((d > 0) & (cov.mu[None] == 0)))
    ref = (reference or {}).get("C_cov")
    if ref is not None:
        bad += int(abs(cov.value - ref) > 1e-6 * max(1.0, ref))
    out_det = {**base, "C_cov": cov.value, "per_step": cov.per_step.tolist(), "certificate_ratio": attained,
               "distinct_greedy_policies": int(uniq.shape[0]), "reference_C_cov": ref}
    if algorithm == 2:
        pc = per_start_coverability(mdp, fc)
        Hh = mdp.H
        g14 = 0
        if pc.reachable is not None:
            N = pc.reachable.sum(axis=1)
            g14 += int(np.sum(N > Hh * pc.per_start + 1e-9))
            g14 += int(pc.mean_reachable > Hh * pc.value + 1e-9)
        g14 += int(cov.value > pc.value + 1e-9)
        bad += g14
        ref2 = (reference or {}).get("C_cov_prime")
        if ref2 is not None:
            bad += int(abs(pc.value - ref2) > 1e-6 * max(1.0, ref2))
        out_det.update(C_cov_prime=pc.value, mean_reachable=pc.mean_reachable, reference_C_cov_prime=ref2,
                       g14_violations=g14)
    stmt = ("C_cov = max_h sum_(s,a) max_{pi in Pi_F} d_h^pi(s,a), computed exactly; the optimal mu_h attains it "
            "(certificate)")
    if algorithm == 2:
        stmt += "; C_cov <= C'_cov, N(s_1) <= H C_cov(Pi_F; M_{s_1}), E N(s_1) <= H C'_cov (Appendix D)"
    if ref is not None:
        stmt += "; equals the reference value (enumeration of the class)"
    c = invariant_check(id="assumption.coverability", violations=bad, total=1 + (3 if algorithm == 2 else 0)
                        + (ref is not None), claim={"statement": stmt,
                                                    "source": f"{SOURCE}, Definition 2.2 (Appendix D)"},
                        details=out_det, what=f"coverability C_cov = {cov.value:.6g}"
                        + (f", C'_cov = {out_det['C_cov_prime']:.6g}" if algorithm == 2 else ""))
    out.append(replace(c, measured={**c.measured, "C_cov": cov.value,
                                    **({"C_cov_prime": out_det["C_cov_prime"]} if algorithm == 2 else {})}))
    if algorithm == 2:
        det = next_state_table(mdp) is not None
        out.append(invariant_check(
            id="assumption.deterministic", violations=0 if det else 1, total=1,
            claim={"statement": "every P_h(.|s,a) is a point mass (deterministic MDP with outcome rewards)",
                   "source": f"{SOURCE}, Definition 3.3 (Theorem 3.4)"},
            details=base, what="deterministic transitions"))
    return out


REFERENCE = {
    # GF-3 (algorithms/gfa/instances.py) and Appendix D (Appendix D class, tie rule "action 0")
    "GF-3": {"C_cov": 3.52},
    "appendix-D-easy": {"C_cov": 9.34375, "C_cov_prime": 9.34375},
    "appendix-D-hard": {"C_cov": 9.34375, "C_cov_prime": 9.34375},
}
