"""whitebox.composition of the GFA learners (He & Zhou, arXiv 2605.07049, Section 3.3; Lemma E.2; Theorems
3.1 and 3.4): the M = ceil(K/B) updates as they really run -- traced through a recording mechanism, at the
declared temperature and at decisive ones -- and their exact composition.
"""
from __future__ import annotations

import copy
import math

import dp_accounting
import numpy as np

from dpcheck.checks import Check, FAIL, PASS
from dpcheck.errors import MechanismError
from dpcheck.audits.lib.gfa.instance import SOURCE, THEOREM, describe


def trace_updates(agent, mdp, K: int, seed: int = 0, *, runs: int = 1, label: str = "") -> dict:
    """One run of K episodes with the learner's ``mechanism`` wrapped in a :class:`RecordingMechanism`: what
    the M = ceil(K/B) updates of Section 3.3 really were.

    * ``draws``: the mechanism's calls, and at least the number of times the entry played changes (a draw that
      bypasses the mechanism still shows there: a learner that redraws inside a batch made K draws, showed M);
    * ``max_beta``: the largest temperature eps0 / (2 Delta_S) of the eps0 the mechanism is run at (nan if it
      is never called: backward messages);
    * ``problems``: the composition's premises the run breaks -- fewer mechanism calls than the declared
      updates (an update selected outside the mechanism, e.g. a greedy argmax: not eps0-DP), a selection
      played that is not what the mechanism returned, or two calls handed a generator in the same state
      (the same noise reused: the M selections are then not independent mechanisms and do not compose as
      M eps0-DP ones). Not checked for the backward-message sampler, which never calls ``mechanism``;
    * ``gap_median``: the median lead of the best score over the second best at the selections (nan if none);
    * ``selections``: the selections compared with what the mechanism returned (runs x updates, or 0).

    ``runs`` independent runs are traced together (every run's selections are compared); ``label`` is put in
    the problems' text after K (:func:`decisive_trace`: the temperature).
    """
    from dpcheck.algorithms.gfa.selection import RecordingMechanism
    a = copy.copy(agent)
    a.mechanism = rec = RecordingMechanism(agent.mechanism)
    res = a.run(mdp, int(K), np.random.default_rng(seed), runs=int(runs), record=False)
    betas = [eps / (2.0 * sens) for _, eps, sens in rec.calls]
    entries = np.asarray(res.output_policy.episode_entries)[0]
    changes = 1 + int(np.count_nonzero(entries[1:] != entries[:-1]))
    p = agent.privacy(int(K))
    problems = []
    compared = 0
    at = f" {label}" if label else ""
    if p.private and getattr(agent, "sampler", "enumerate") != "messages":
        calls = len(rec.calls)
        if calls < p.M:
            problems.append(f"K = {int(K)}{at}: the mechanism made {calls} selections for the {p.M} declared updates "
                            f"({p.M - calls} selected outside it)")
        elif calls == res.M:
            got = np.stack([np.asarray(r).reshape(-1) for r in rec.returns], axis=1)       # (runs, M)
            played = np.asarray(res.selected)
            compared = int(played.size)
            if not np.array_equal(got, played):
                run, bad = (int(x[0]) for x in np.nonzero(got != played))
                problems.append(f"K = {int(K)}{at}: update {bad} of run {run} played entry {int(played[run, bad])}, "
                                f"the mechanism returned {int(got[run, bad])} "
                                f"({int(np.count_nonzero(got != played))} of {compared} selections differ)")
        seen = {}
        for i, st in enumerate(rec.rng_states):
            # a repeated state is noise reused only if the earlier call drew from it (a call that draws nothing,
            # say a user's mechanism on a degenerate input, leaves the next call the same state legitimately)
            if st is not None and st in seen:
                problems.append(f"K = {int(K)}: updates {seen[st]} and {i} handed the mechanism a generator in the "
                                "same state (the same selection noise reused)")
                break
            if st is not None and rec.rng_drew[i]:
                seen.setdefault(st, i)
    leads = np.concatenate([_leads(sc) for sc, _, _ in rec.calls]) if rec.calls else np.zeros(0)
    gap_median = float(np.median(leads)) if leads.size else float("nan")
    return {"draws": max(len(rec.calls), changes), "max_beta": max(betas) if betas else float("nan"),
            "mechanism_calls": len(rec.calls), "declared_updates": p.M, "problems": problems,
            "gap_median": gap_median, "selections": compared}


def _leads(scores) -> np.ndarray:
    """Per row of ``scores`` (runs, N): how far the best score is ahead of the best score strictly below it
    (rows where every entry ties give none): the lead a score-dependent shortcut would look at."""
    sc = np.asarray(scores, dtype=np.float64)
    top = sc.max(axis=1, keepdims=True)
    below = np.where(sc < top, sc, -np.inf).max(axis=1)
    lead = top[:, 0] - below
    return lead[np.isfinite(lead)]


DECISIVE_DOUBLINGS = 7      # the forced temperatures of decisive_trace: 2^j / (median lead), j = 0..6


def decisive_trace(agent, mdp, *, seed: int = 0, runs: int = 64, updates: int = 64, batch: int = 4) -> dict:
    """The played-equals-returned premise of the composition (:func:`trace_updates`) at temperatures where the
    selection becomes decisive. A learner that overrides the mechanism only in some regime of the scores --
    keeping the leader "when it is clearly ahead", say -- plays another entry than the mechanism returned
    only when the override fires and the mechanism did not pick the leader; at the audited temperature that
    may never happen in a run (the leads stay far below the mechanism's utility radius).

    A pilot of ``runs`` / 8 runs at the declared temperature gives the median lead g of the best score over
    the next distinct one (:func:`_leads`; 1 if every selection ties). Then ``runs`` runs of ``updates``
    updates (B = min(B, ``batch``), so K = ``updates`` x B stays short) at each of beta = 2^j / g, j = 0..6:
    beta times a typical lead runs from 1 (the mechanism often picks another entry) to 64 (it almost never
    does), and every selection is compared with what the mechanism returned. Each temperature is reached
    through the learner's public ``sensitivity`` (Delta_S = eps0 / (2 beta): the learner as a user would
    configure it with that declared sensitivity), so the runs prove nothing about the declared temperature;
    the accounting of whitebox.composition uses the traces at the declared one. Not run for a non-private
    learner (eps0 infinite: the argmax of Remark 3.7, no mechanism) or the backward-message sampler.

    Returns {"lead", "betas", "K", "B", "runs", "selections", "problems", "stopped"} ("stopped": why the sweep
    ended early, or None).
    """
    a = copy.copy(agent)
    a.B = max(1, min(int(agent.B), int(batch)))
    K = int(updates) * a.B
    eps0 = float(a.privacy(K).eps0)
    pilot = trace_updates(a, mdp, K, seed, runs=max(1, int(runs) // 8))
    lead = pilot["gap_median"]
    if not (math.isfinite(lead) and lead > 0):
        lead = 1.0                      # every selection tied: any temperature exercises the tie rule
    betas = [2.0 ** j / lead for j in range(DECISIVE_DOUBLINGS)]
    problems, selections, stopped = list(pilot["problems"][:1]), pilot["selections"], None
    for j, b in enumerate(betas):
        hot = copy.copy(a)
        hot.sensitivity = eps0 / (2.0 * b)
        try:
            t = trace_updates(hot, mdp, K, seed + 1 + j, runs=runs, label=f"at beta = {b:.4g}")
        except MechanismError as e:
            # a user's mechanism that cannot run this hot (never asked to by the declaration) ends the sweep
            # without failing the audit; the reason says how far it got
            stopped = f"stopped at beta = {b:.4g}: {e}"
            betas = betas[:j]
            break
        selections += t["selections"]
        problems.extend(t["problems"][:1])
    return {"lead": lead, "betas": betas, "K": K, "B": a.B, "runs": int(runs), "selections": selections,
            "problems": problems, "stopped": stopped}


def observed_updates(agent, mdp, K: int, seed: int = 0) -> tuple[int, float]:
    """(number of selections, largest temperature passed to the mechanism) of :func:`trace_updates`."""
    t = trace_updates(agent, mdp, K, seed)
    return t["draws"], t["max_beta"]


def composition_check(agent, K_grid, *, claim=None, mdp=None) -> Check:
    """whitebox.composition (Section 3.3; Theorem 3.1; Theorem 3.4): for every K of ``K_grid``, the M = ceil(K/B) updates at the
    temperature the learner REALLY uses (eps0_used = 2 Delta_S beta_used: the pure-DP level of an
    exponential mechanism with that temperature on a score of sensitivity Delta_S), composed and accounted
    exactly -- dp_accounting PLD of M copies of the selection mechanism's declared DpEvent at eps0_used (for
    the exponential mechanism, and by default for a plug-in, binary randomized response at eps0_used, which
    has exactly the (eps0, 0)-DP privacy profile and dominates every eps0-DP mechanism: Kairouz, Oh &
    Viswanath 2015) -- must give eps <= the claimed eps at the claimed delta. The declared advanced-composition value
    (Lemma E.2) is reported next to it.

    With ``mdp``, one run of K episodes per grid point counts the draws the sampler really makes and reads
    the temperatures it is really given; the accounting uses the larger of declared and observed (a learner
    that updates more often, or hotter, than it declares fails). The same run (:func:`trace_updates`) fails the
    check when an update selects outside the mechanism, plays another entry than the mechanism returned, or
    reuses the selection noise of an earlier update, and :func:`decisive_trace` asks the same of 64 x 64
    selections at each of seven hotter temperatures, where an override of the mechanism that depends on the
    scores (the leader kept when clearly ahead) shows. It reads the eps0 the mechanism is given, not the law it
    applies with it: privacy.em_selection compares the draws with the law at the declared beta_EM."""
    from dpcheck.accounting import advanced_composition, pld_epsilon_replace_one
    claim = claim or agent.claim
    rows = []
    for K in K_grid:
        p = agent.privacy(int(K))
        beta_used = float(agent.temperature(int(K)))
        M = max(p.M, -(-int(K) // agent.B))
        seen = None
        if mdp is not None:
            seen = trace_updates(agent, mdp, int(K))
            n, b = seen["draws"], seen["max_beta"]
            M = max(M, n)
            if not math.isnan(b):
                beta_used = max(beta_used, b)
        eps0_used = 2.0 * p.sensitivity * beta_used
        # the mechanism's own declared event at eps0_used (the exponential mechanism's: binary randomized
        # response at eps0, exactly the (eps0, 0) profile)
        event = agent.mechanism.dp_event(eps0_used, p.sensitivity)
        if not isinstance(event, dp_accounting.DpEvent):
            raise MechanismError(f"selection mechanism {agent.mechanism!r}: dp_event() returned "
                                 f"{type(event).__name__}, not a dp_accounting DpEvent")
        eps_pld = pld_epsilon_replace_one(event, M, claim.delta)
        from dpcheck.algorithms.gfa import advanced_composition
        rows.append({"K": int(K), "B": agent.B, "M": M, "eps0_declared": p.eps0, "eps0_used": eps0_used,
                     "beta_declared": p.beta_em, "beta_used": beta_used,
                     "advanced_composition": advanced_composition(eps0_used, M, claim.delta),
                     "declared_composed_epsilon": p.composed_epsilon, "epsilon_pld": eps_pld, "observed": seen})
    worst = max(rows, key=lambda r: r["epsilon_pld"])
    slack = 2e-3
    ok = worst["epsilon_pld"] <= claim.epsilon * (1 + slack) + slack
    broken = [q for r in rows if r["observed"] for q in r["observed"]["problems"]]
    decisive = None
    if (mdp is not None and getattr(agent, "sampler", "enumerate") != "messages"
            and math.isfinite(agent.privacy(int(K_grid[0])).eps0)):
        decisive = decisive_trace(agent, mdp)
        broken += decisive["problems"]
    st = {"statement": f"M = ceil(K/B) exponential mechanisms, each eps0-DP with eps0 = 2 Delta_S beta_EM, "
                       f"compose to ({claim.epsilon:g}, {claim.delta:g})-DP (exact PLD accountant)",
          "source": f"{SOURCE}, Section 3.3, docs/derivations.md#noise-calibration, Lemma E.2, {THEOREM[agent.algorithm]} (Theorem 3.1; Theorem 3.4)"}
    measured = {"epsilon_pld": worst["epsilon_pld"], "at_delta": claim.delta, "claimed_epsilon": claim.epsilon,
                "worst": worst, "epsilon_lower_bound": worst["epsilon_pld"], "confidence": 1.0, "samples": 0,
                "premises_broken": broken}
    if broken:
        ok = False
        reason = ("the updates are not M independent eps0-DP selections, so their composition does not bound the "
                  "privacy loss: " + "; ".join(broken[:3]))
    elif ok:
        reason = (f"worst over K in {list(map(int, K_grid))}: {worst['M']} updates at eps0 = {worst['eps0_used']:.4g} "
                  f"give eps = {worst['epsilon_pld']:.4g} <= {claim.epsilon:g} at delta = {claim.delta:g} (PLD)")
        if decisive is not None and decisive["betas"]:
            reason += (f"; every one of {decisive['selections']} selections at beta = {decisive['betas'][0]:.3g} .. "
                       f"{decisive['betas'][-1]:.3g} played what the mechanism returned")
        if decisive is not None and decisive["stopped"]:
            reason += f" (the trace at decisive temperatures {decisive['stopped']})"
    else:
        reason = (f"K = {worst['K']}: {worst['M']} updates at eps0 = {worst['eps0_used']:.4g} give eps = "
                  f"{worst['epsilon_pld']:.4g} > claimed {claim.epsilon:g} at delta = {claim.delta:g} (PLD)")
    return Check(id="whitebox.composition", kind="whitebox", verdict=PASS if ok else FAIL, claim=st,
                 measured=measured, details={"agent": describe(agent), "grid": rows, "decisive_trace": decisive,
                                             "event": "Composed([mechanism.dp_event(eps0_used)] * M) (explicit copies: "
                                                      "dp_accounting 0.6.0 ignores the "
                                                      "count of a SelfComposed randomized response)"},
                 reason=reason)
