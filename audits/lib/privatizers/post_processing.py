"""whitebox.post_processing: the post-processing lemma of the online count privatizers, on adversarial inputs.

Qiao & Wang 2023, Lemma 5.4 (DP-UCBVI; Qiao & Wang 2024, Lemma 5.8, for DP-Nash-VI): if |N^ - N| <= E/4 for every
count, the release N~ derived from N^ by the Section 5.1.1 LP and the shifts E/(2S), E/2 satisfies

    N(s,a) <= N~(s,a) <= N(s,a) + E,    N~(s,a,s') > 0,    |N~(s,a,s') - N(s,a,s')| <= E        (proof, eq. 85)

for *every* such N^: a deterministic statement, which the statistical checks on random noise cannot establish (the
noise of a correct privatizer stays far inside E/4, whose E is a union bound, and the counts of a short run never
reach E/4, so assumption.no_underestimation is vacuous there: a shift of E/4 where the lemma needs E/2 passed them).
Here the privatizer's own post-processing (``post_processed(N^ visits, N^ transitions)``, what
dpcheck.algorithms.privatizers.base.CountPrivatizer.release applies to the N^ of its noise process) is fed true
counts from 0 to 3E and noise at the corners of the good event (every count -E/4, every count +E/4, the two mixed
signs, random signs, uniform in the box), and every conclusion is checked in every cell: one counterexample FAILs.
A privatizer with a ``release()`` of its own (or no ``post_processed``) cannot be fed so: vacuous, with the reason.
"""
from __future__ import annotations

import copy

import numpy as np

from dpcheck.checks import Check, invariant_check

PATTERNS = ("all -E/4", "all +E/4", "transitions -E/4, visits +E/4", "transitions +E/4, visits -E/4",
            "random signs", "uniform in [-E/4, E/4]")
RUNS_PER_PATTERN = 8        # half with counts in [0, 3E], half in [0, E/2] (the clip at 0 and the full-support shift)
TOLERANCE = 1e-7            # relative: the LP solution is exact up to its solver's rounding


def adversarial_inputs(runs: int, H: int, S: int, A: int, E: float, rng) -> tuple:
    """True counts (visits, transitions) and noise (visits, transitions) at the corners of |N^ - N| <= E/4, one
    pattern of :data:`PATTERNS` per block of runs."""
    shape = (runs, H, S, A, S)
    hi = np.where(np.arange(runs) % 2 == 0, 3.0 * E, 0.5 * E)[:, None, None, None, None]
    Nt = np.floor(rng.random(shape) * (hi + 1.0))
    Nv = Nt.sum(axis=-1)
    q = E / 4.0
    dt, dv = np.empty(shape), np.empty(Nv.shape)
    for r in range(runs):
        k = (r // 2) % len(PATTERNS)
        st, sv = {0: (-1, -1), 1: (1, 1), 2: (-1, 1), 3: (1, -1)}.get(k, (None, None))
        if st is not None:
            dt[r], dv[r] = st * q, sv * q
        elif k == 4:
            dt[r], dv[r] = q * rng.choice([-1.0, 1.0], shape[1:]), q * rng.choice([-1.0, 1.0], Nv.shape[1:])
        else:
            dt[r], dv[r] = rng.uniform(-q, q, shape[1:]), rng.uniform(-q, q, Nv.shape[1:])
    return Nv, Nt, dv, dt


def post_processing_check(template, *, H: int = 2, S: int = 3, A: int = 2, K: int = 16, seed: int = 0,
                          lemma: str = "Qiao & Wang 2023, Lemma 5.4", id: str = "whitebox.post_processing") -> Check:
    """Lemma 5.4's conclusions (module docstring) on ``template``'s own release, fed adversarial good-event inputs."""
    claim = {"statement": "on |N^ - N| <= E/4: N <= N~(s,a) <= N + E, N~(s,a,s') > 0 and |N~(s,a,s') - N| <= E, for "
                          "every such N^ (noise at the corners of the box)",
             "source": f"{lemma} (proof, eq. 85)"}
    runs = RUNS_PER_PATTERN * len(PATTERNS)
    p = copy.deepcopy(template)
    p.start(runs, H, S, A, K, np.random.default_rng(seed), rewards=True)
    E = float(p.width)
    from dpcheck.algorithms.privatizers.base import CountPrivatizer
    if not isinstance(p, CountPrivatizer) or type(p).release is not CountPrivatizer.release:
        return invariant_check(id=id, kind="whitebox", violations=0, total=0, claim=claim, what="post-processing",
                               vacuous=(f"{type(p).__name__} is not a CountPrivatizer"
                                        if not isinstance(p, CountPrivatizer)
                                        else f"{type(p).__name__} has a release() of its own")
                               + ": the post-processing it applies cannot be fed chosen N^ (post_processed is the base "
                                 "class's)")
    Nv, Nt, dv, dt = adversarial_inputs(runs, H, S, A, E, np.random.default_rng([int(seed), 0x5E4]))
    pc = p.post_processed(Nv + dv, Nt + dt)
    v, t = np.asarray(pc.visits, float), np.asarray(pc.transitions, float)
    tol_v = TOLERANCE * np.maximum(1.0, np.maximum(Nv, E))
    tol_t = TOLERANCE * np.maximum(1.0, np.maximum(Nt, E))
    bad = {"N~(s,a) < N(s,a)": v < Nv - tol_v,
           "N~(s,a) > N(s,a) + E": v > Nv + E + tol_v,
           "N~(s,a,s') <= 0": ~(t > 0),
           "|N~(s,a,s') - N(s,a,s')| > E": np.abs(t - Nt) > E + tol_t}
    cells = v.size + t.size
    violations = {k: int(m.sum()) for k, m in bad.items()}
    first = {}
    for k, m in bad.items():
        if m.any():
            idx = tuple(int(i) for i in np.argwhere(m)[0])
            r = idx[0]
            first[k] = {"index (run,h,s,a[,s'])": idx, "pattern": PATTERNS[(r // 2) % len(PATTERNS)],
                        "N(s,a)": float(Nv[idx[:4]]),
                        "N~(s,a)": float(v[idx[:4]]), "E": E}
    c = invariant_check(id=id, kind="whitebox", violations=sum(violations.values()), total=cells, claim=claim,
                        what="post-processing on adversarial good-event inputs",
                        details={"E": E, "shape (runs,H,S,A)": [runs, H, S, A], "patterns": list(PATTERNS),
                                 "violations_by_conclusion": violations, "first_violations": first,
                                 "true_counts": "0..3E (even runs), 0..E/2 (odd runs)"})
    return c


__all__ = ["PATTERNS", "RUNS_PER_PATTERN", "TOLERANCE", "adversarial_inputs", "post_processing_check"]
