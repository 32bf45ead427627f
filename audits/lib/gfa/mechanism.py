"""The selection mechanism of He & Zhou's Algorithms 1 and 2 audited alone (``gfa_selection_mechanism``):
each selection eps-DP for scores of sensitivity Delta_S (Section 3.3, Lemma E.2), its utility tail, its
declared DpEvent.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from dpcheck.accounting import pld_epsilon_replace_one
from dpcheck.checks import Check, FAIL, PASS, probability_check


# ----------------------------------------------------------------------------- the selection mechanism alone
SELECTION_SOURCE = ("He & Zhou (arXiv 2605.07049), Section 3.3, Lemma E.2 (each update eps0-DP in a score of sensitivity "
                    "Delta_S)")


def selection_pairs(sensitivity: float, N: int = 64) -> list:
    """Neighbouring score vectors (u, u') with max_f |u(f) - u'(f)| = Delta: the all-zero vector against one
    entry raised by Delta and every other lowered by Delta, over 2 entries (tight for report-noisy-max with
    exponential noise, i.e. permute-and-flip: Pr[entry 2] goes from 1/2 to e^-eps / 2) and over N entries
    (tight for the exponential mechanism as N grows: Pr[entry 1] goes from 1/N to ~ e^eps / N) with the FIRST
    and with the LAST entry raised, and a fixed uneven vector (scores spread over [0, 4 Delta], seed 0) with a
    middle entry raised. A mechanism that depends on the entries' order or on ties (keep the top k by a stable
    sort, then select) can be exact on the first entry and leak on the last: the top-8 exponential mechanism
    never picks entry 63 of the zero vector and picks it 19% of the time once it is raised (eps infinite),
    which the first-entry pairs alone passed. Then 4N entries with the last raised, and scores far apart (the
    comments below)."""
    d = float(sensitivity)
    out = []
    for n, j in ((2, 0), (int(N), 0), (int(N), int(N) - 1)):
        u = np.zeros(n)
        v = np.full(n, -d)
        v[j] = d
        out.append((u, v))
    u = np.random.default_rng(0).uniform(0.0, 4.0 * d, int(N))
    v = u - d
    v[int(N) // 2] = u[int(N) // 2] + d
    out.append((u, v))
    # more entries than a truncation keeps: 4N zeros against the last one raised (a top-N exponential mechanism
    # never picks it on the zeros)
    u = np.zeros(4 * int(N))
    v = np.full(4 * int(N), -d)
    v[-1] = d
    out.append((u, v))
    # scores far apart. A mechanism that switches on the gaps (the exact argmax once the leader is far enough
    # ahead, candidates cut at some distance from the max, noise only near the top) is the exponential mechanism
    # on close scores and passed every pair above. A staircase 0, -Delta/2, ..., -12 Delta against the same with
    # every entry but the leader raised by Delta moves some gap across every multiple of Delta/2 up to 12 Delta;
    # a leader 2.5 Delta and 4.5 Delta ahead of a flat field, the field raised by Delta, moves the runner-up's gap
    # across 2 Delta and 4 Delta.
    stairs = -0.5 * d * np.arange(25)
    raised = stairs + d
    raised[0] = 0.0
    out.append((stairs, raised))
    for g in (2.5, 4.5):
        u = np.full(8, -g * d)
        u[0] = 0.0
        v = u + d
        v[0] = 0.0
        out.append((u, v))
    return out


def reference_law(mech, scores, epsilon: float, sensitivity: float):
    """(Pr[f] (N,), its name, the declared law's largest log-ratio on :func:`selection_pairs` or None): the law
    the selection frequencies are compared with. The built-in exponential mechanism: the softmax at
    beta = eps / (2 Delta) (Algorithm 1 line 6) computed here, from eps and Delta alone -- the mechanism's own
    ``log_probabilities`` shares its temperature code with ``select``, so a wrong temperature would match it.
    A plug-in: its declared law (None if it declares none), whose privacy is then checked exactly -- the
    largest |log Pr_u[f] - log Pr_u'[f]| over the pairs and entries must not exceed eps (inf when an entry is
    possible on one side only): a match with a law that is not eps-DP is worthless."""
    from scipy.special import logsumexp
    from dpcheck.algorithms.gfa.selection import ExponentialMechanism
    s = np.asarray(scores, dtype=np.float64)
    if type(mech) is ExponentialMechanism:
        z = float(epsilon) / (2.0 * float(sensitivity)) * (s - s.max())
        return np.exp(z - logsumexp(z)), "exp(eps S / (2 Delta)) / Z, computed by the check", None
    logp = mech.log_probabilities(s[None, :], epsilon, sensitivity)
    if logp is None:
        return None, None, None
    gap = 0.0
    for u, v in selection_pairs(sensitivity):
        lu = np.asarray(mech.log_probabilities(np.asarray(u, float)[None], epsilon, sensitivity))[0]
        lv = np.asarray(mech.log_probabilities(np.asarray(v, float)[None], epsilon, sensitivity))[0]
        fu, fv = np.isfinite(lu), np.isfinite(lv)
        if np.any(fu != fv):
            gap = math.inf
        elif fu.any():
            gap = max(gap, float(np.max(np.abs(lu[fu] - lv[fu]))))
    return np.exp(np.asarray(logp)[0]), "the mechanism's declared log_probabilities", gap


class SelectionDraws:
    """mechanism(scores (N,), rng, size) -> (size,) selections of ``mech`` at (epsilon, sensitivity)
    (configuration only, picklable)."""

    def __init__(self, mech, epsilon: float, sensitivity: float):
        self.mech, self.epsilon, self.sensitivity = mech, float(epsilon), float(sensitivity)

    def __call__(self, scores, rng, size):
        s = np.broadcast_to(np.asarray(scores, dtype=np.float64), (int(size), len(scores)))
        return np.asarray(self.mech.select(s, self.epsilon, self.sensitivity, rng), dtype=np.int64)


def selection_blackbox_check(mech, epsilon: float, sensitivity: float, *, samples: int = 200_000,
                             alpha: float = 0.05, seed: int = 0, id: str = "privacy.blackbox", N: int = 64,
                             **parallel) -> Check:
    """The selection mechanism is eps-DP for scores of sensitivity Delta, black box: selections drawn on the
    neighbouring score vectors of :func:`selection_pairs`, histogram events (nothing about the mechanism's
    noise is assumed). A mechanism calibrated for sensitivity Delta / 2 (report-noisy-max without the factor
    2 for non-monotone scores) reaches 2 eps on the 2-entry pair."""
    from dpcheck import AuditTarget, Claim
    from dpcheck.blackbox import audit
    claim = Claim(epsilon=float(epsilon), delta=0.0, notion="DP", source=SELECTION_SOURCE)
    target = AuditTarget(name=f"selection.{getattr(mech, 'name', 'mechanism')}",
                         mechanism=SelectionDraws(mech, epsilon, sensitivity),
                         pairs=selection_pairs(sensitivity, N), claim=claim, output="discrete")
    res = audit(target, samples=samples, alpha=alpha, seed=seed, **parallel)
    check = res.to_check(id=id, claim_source=claim.source)
    det = dict(check.details)
    det.update(mechanism=repr(mech), epsilon=float(epsilon), sensitivity=float(sensitivity),
               pairs="u = 0 vs u' = (+Delta, -Delta, ..., -Delta) over 2 and over N = %d entries" % N)
    return replace(check, details=det)


def selection_utility_check(mech, epsilon: float, sensitivity: float, *, runs: int = 20_000, alpha: float = 0.05,
                            seed: int = 0, N: int = 64, t: float = math.log(10.0),
                            id: str = "assumption.selection_utility") -> Check:
    """The utility bound the regret analysis uses: Pr[S(f) < max S - c (Delta / eps)(ln N + t)] <= e^-t
    (Dwork & Roth 2014, Thm 3.11 for the exponential mechanism, c = 2; ``mech.utility_constant``). On one top
    entry and N - 1 entries a factor 2 further below than the bound at t (the exponential mechanism fails
    there with probability ~ e^-t / 2), over ``runs`` independent selections, exact binomial bounds
    (:func:`dpcheck.checks.probability_check`). A mechanism noisier than it declares fails."""
    c = float(getattr(mech, "utility_constant", 2.0))
    bound = c * float(sensitivity) / float(epsilon) * (math.log(N) + t)
    gap = c * float(sensitivity) / float(epsilon) * (math.log(N) + t + math.log(2.0))
    scores = np.full(N, -gap)
    scores[0] = 0.0
    rng = np.random.default_rng(seed)
    sel = SelectionDraws(mech, epsilon, sensitivity)(scores, rng, runs)
    failures = int(np.sum(scores[sel] < -bound))
    claim = {"statement": f"Pr[S(f) < max_g S(g) - {c:g} (Delta / eps)(ln N + t)] <= e^-t (utility of the "
                          f"selection; c = {c:g} as the mechanism declares)",
             "source": "Dwork & Roth 2014, Thm 3.11 (McSherry & Talwar 2007); He & Zhou (arXiv 2605.07049), "
                       "regret analysis of Theorems 3.1 / 3.4"}
    return probability_check(id=id, failures=failures, runs=int(runs), beta=math.exp(-t), alpha=alpha,
                             claim=claim, details={"mechanism": repr(mech), "epsilon": float(epsilon),
                                                   "sensitivity": float(sensitivity), "N": N, "t": t,
                                                   "bound": bound, "gap_of_the_others": gap},
                             what="a selection more than the utility bound below the best score")


def selection_dp_event_check(mech, epsilon: float, sensitivity: float) -> Check:
    """whitebox.dp_event: the mechanism's declared DpEvent for one selection, accounted by dp_accounting's PLD
    under replacement of one user (the neighbouring relation of Definition 2.3), is eps-DP: eps_PLD at
    delta = 1e-12 <= eps (slack 2e-3 for the discretisation, as in whitebox.composition)."""
    import dp_accounting
    label = f"{getattr(mech, 'name', 'mechanism')} at eps = {epsilon:g}, Delta = {sensitivity:g}"
    claim = {"statement": f"one selection is ({epsilon:g}, 0)-DP for scores of sensitivity {sensitivity:g} "
                          "(the declared DpEvent, exact PLD accountant)", "source": SELECTION_SOURCE}
    event = mech.dp_event(float(epsilon), float(sensitivity))
    if not isinstance(event, dp_accounting.DpEvent):
        return Check(id="whitebox.dp_event", kind="whitebox", verdict=FAIL, claim=claim,
                     measured={"confidence": 1.0, "samples": 0, "epsilon_lower_bound": None},
                     details={"event": repr(event)},
                     reason=f"{label}: dp_event() returned {type(event).__name__}, not a dp_accounting DpEvent")
    eps_pld = pld_epsilon_replace_one(event, 1, 1e-12)
    slack = 2e-3
    ok = eps_pld <= float(epsilon) * (1 + slack) + slack
    reason = (f"{label}: declared event gives eps = {eps_pld:.4g} at delta = 1e-12 (PLD, replace one) "
              + ("<= " if ok else "> ") + f"claimed {epsilon:g}")
    return Check(id="whitebox.dp_event", kind="whitebox", verdict=PASS if ok else FAIL, claim=claim,
                 measured={"epsilon_pld": eps_pld, "at_delta": 1e-12, "claimed_epsilon": float(epsilon),
                           "epsilon_lower_bound": eps_pld, "confidence": 1.0, "samples": 0},
                 details={"event": repr(event)}, reason=reason)
