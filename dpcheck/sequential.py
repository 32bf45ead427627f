"""Sequential (anytime-valid) black-box auditing: betting e-processes with optional stopping.

The batch auditor (:mod:`dpcheck.blackbox`) spends a fixed budget. This mode draws outputs in
growing batches and stops as soon as a violation is certified (González, Dulce Rubio, Ramdas,
Ribero, NeurIPS 2025, "Sequentially Auditing Differential Privacy": e-values under optional
stopping). Validity argument in full: docs/sequential.md.

The test. An (eps, delta) claim promises, for every event E and neighbouring pair (D, D'),
p - e^eps q <= delta with p = P[M(D) in E], q = P[M(D') in E]. Draw x_i ~ M(D), y_i ~ M(D') and
let Z_i = 1[x_i in E_i] - e^eps 1[y_i in E_i] - delta, in [-e^eps - delta, 1 - delta]. If the
event E_i is chosen from the outputs drawn before step i (predictable), then under the claim
E[Z_i | past] <= 0, and for a predictable lambda_i in [0, 1 / (e^eps + delta)) the wealth
W_t = prod_{i <= t} (1 + lambda_i Z_i) is a nonnegative supermartingale with W_0 = 1
(Waudby-Smith & Ramdas 2024, JRSS-B, "Estimating means of bounded random variables by
betting", Sec. 4). A weighted average of such wealths (one per pair, direction and tested
point of the privacy profile, weights summing to 1) is again one, and Ville's inequality gives
P[sup_t W_t >= 1 / alpha] <= alpha under the claim: a FAIL at any data-dependent time is a
false alarm with probability <= alpha.

Events. A first batch per side only chooses; before every later batch the event of each (pair,
direction) is re-chosen from *all* outputs drawn so far (:func:`dpcheck.events.selection_scores`
and :func:`dpcheck.events.best_threshold` with the hockey-stick objective at the claimed eps),
so no output is wasted and the choice stays predictable. Bets: aGRAPA (the approximate
growth-rate-adaptive plug-in of Waudby-Smith & Ramdas 2024, Sec. 5.4), lambda_i =
mean(Z) / mean(Z^2) over the current batch's earlier steps and a few pseudo-observations from
the selection estimate, clipped to [0, LAMBDA_CAP / (e^eps + delta)].

The lower bound. For each eps' on a grid the same events define an e-process for
H0(eps'): p - e^eps' q <= delta. eps_lb is the largest grid point g such that the average
e-process of every grid point <= g has crossed 1 / alpha by the stopping time. If eps_lb >
true eps, the grid point just above the true eps (whose H0 holds) crossed: probability <= alpha
by Ville, with no union over the grid (docs/sequential.md).

Stopping. FAIL when the average e-process at the claim crosses 1 / alpha. PASS only when the
budget (``samples`` per side) is exhausted without a crossing; there is no early "confirmed"
stop. A PASS whose budget could not have detected a 2x excess (:func:`sequential_power`) is
INCONCLUSIVE, as in the batch auditor.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from dpcheck import blackbox as bb
from dpcheck import events as ev
from dpcheck.blackbox import (DIRECTIONS, LB_ALPHA_SHARE, AuditResult, claim_plan, reason_terms, tightness,
                              verdict_of)
from dpcheck.errors import InputError
from dpcheck.target import AuditTarget, representation

FIRST_BATCH = 100      # outputs per side that only choose the first events
GROWTH = 2             # each test batch is GROWTH x the previous one (100, 200, 400, ...)
LAMBDA_CAP = 0.5       # bets at most half the largest safe stake: a factor 1 + lambda Z stays >= 1/2
PRIOR_N = 10.0         # pseudo-observations of the selection estimate in the first bets of a batch
LB_GRID_RATIOS = np.r_[np.linspace(0.05, 1.0, 20), np.geomspace(1.0, 200.0, 61)[1:]]
LB_GRID_MAX = 40.0     # grid points above this eps are dropped (e^40 q is never below 1 for q >= 1e-17)


# ------------------------------------------------------------------ the e-process (vectorised)
def bets(z: np.ndarray, cap: float, prior_mean=0.0, prior_m2=1.0, prior_n: float = PRIOR_N) -> np.ndarray:
    """aGRAPA bets lambda_i = mean(Z_<i) / mean(Z_<i^2), clipped to [0, cap]; predictable.

    z: (..., n) centred increments Z_i (mean <= 0 under the null). prior_mean / prior_m2: (...,)
    or scalars, the first and second moment of Z guessed from earlier data, worth prior_n
    observations. Returns (..., n): lambda_i uses z[..., :i] only.
    """
    z = np.asarray(z, dtype=float)
    n = z.shape[-1]
    s1 = _before(z)                                      # sum of z over steps < i (exactly: no z_i in it)
    s2 = _before(z * z)
    cnt = np.arange(n, dtype=float) + prior_n
    pm = np.asarray(prior_mean, dtype=float)[..., None] * prior_n
    p2 = np.asarray(prior_m2, dtype=float)[..., None] * prior_n
    mean = (s1 + pm) / cnt
    m2 = np.maximum((s2 + p2) / cnt, 1e-12)
    return np.clip(mean / m2, 0.0, cap)


def _before(a: np.ndarray) -> np.ndarray:
    """Exclusive running sum along the last axis: out[..., i] = sum(a[..., :i])."""
    out = np.zeros_like(a)
    np.cumsum(a[..., :-1], axis=-1, out=out[..., 1:])
    return out


def log_wealth(z: np.ndarray, cap: float, prior_mean=0.0, prior_m2=1.0, prior_n: float = PRIOR_N) -> np.ndarray:
    """Running log W_t = sum_{i <= t} log(1 + lambda_i Z_i) with aGRAPA bets; (..., n) like ``z``."""
    lam = bets(z, cap, prior_mean, prior_m2, prior_n)
    return np.cumsum(np.log1p(lam * z), axis=-1)


def increments(hx: np.ndarray, hy: np.ndarray, eps, delta) -> np.ndarray:
    """Z = 1[x in E] - e^eps 1[y in E] - delta; eps may be an array (broadcast on a new leading axis)."""
    eps = np.asarray(eps, dtype=float)
    return hx.astype(float) - np.exp(eps)[..., None] * hy.astype(float) - np.asarray(delta, dtype=float)[..., None]


def moments(p: float, q: float, eps, delta):
    """E[Z] and E[Z^2] for independent 1[x in E] ~ Bern(p), 1[y in E] ~ Bern(q) (vectorised over eps)."""
    c = np.exp(np.asarray(eps, dtype=float))
    d = np.asarray(delta, dtype=float)
    mean = p - c * q - d
    # values (1 - c) pq, 1 p(1-q), -c (1-p)q, 0 (1-p)(1-q), each minus delta
    m2 = (p * q * (1 - c - d) ** 2 + p * (1 - q) * (1 - d) ** 2 + (1 - p) * q * (c + d) ** 2
          + (1 - p) * (1 - q) * d ** 2)
    return mean, m2


def lambda_cap(eps, delta) -> np.ndarray:
    """The largest bet used: LAMBDA_CAP / (e^eps + delta), so every factor 1 + lambda Z >= 1 - LAMBDA_CAP."""
    return LAMBDA_CAP / (np.exp(np.asarray(eps, dtype=float)) + np.asarray(delta, dtype=float))


# ------------------------------------------------------------------ power of a budget
def growth_rate(p, q, eps: float, delta: float):
    """max over lambda in [0, cap] of E log(1 + lambda Z): the oracle bettor's wealth growth per step
    (vectorised over p, q; lambda on a grid of 257 points)."""
    p, q = np.broadcast_arrays(np.asarray(p, dtype=float), np.asarray(q, dtype=float))
    if eps >= 709.0:                 # e^eps overflows: no bet is possible (the largest is LAMBDA_CAP / e^eps)
        return np.zeros(p.shape)
    c = math.exp(eps)
    vals = np.array([1 - c - delta, 1 - delta, -c - delta, -delta])
    probs = np.stack([p * q, p * (1 - q), (1 - p) * q, (1 - p) * (1 - q)], axis=-1)       # (..., 4)
    lam = np.linspace(0.0, float(lambda_cap(eps, delta)), 257)
    g = probs @ np.log1p(lam[:, None] * vals[None, :]).T                                   # (..., 257)
    return np.maximum(g.max(axis=-1), 0.0)


def sequential_power(n: int, alpha: float, eps_claim: float, delta: float = 0.0) -> float:
    """The smallest true eps that ``n`` test samples per side would detect about half the time.

    Analogue of :func:`dpcheck.stats.budget_detectable_epsilon` for the e-process: with the best event an
    (eps', delta)-DP mechanism can have -- mass q under D' on a log grid 1/n .. 1/2 and
    p = :func:`dpcheck.stats.dp_max_p` (q, eps', delta), bounded by the event and by its complement (the
    reverse direction) -- the oracle bettor's median log-wealth is about n g(p, q) (:func:`growth_rate`); the
    plug-in bettor pays a regret of about ln(n) / 2 + 1 nats (Waudby-Smith & Ramdas 2024, Sec. 5). eps' is
    detectable when n g - ln(n) / 2 - 1 >= ln(1 / alpha). ``alpha`` is the level the slot's own e-process
    must reach: the audit's alpha times the slot's weight in the average (:func:`audit_sequential`). inf if
    no eps' is.
    """
    from dpcheck.stats import dp_max_p
    if eps_claim >= 700.0:           # e^eps_claim overflows: no bet is possible (growth_rate is 0)
        return math.inf
    need = math.log(1.0 / alpha) + 0.5 * math.log(max(n, 1)) + 1.0
    q = np.geomspace(1.0 / n, 0.5, 24)
    # dp_max_p reaches 1 only as eps' -> inf (the complement bound): at eps_claim + 40 it is 1 - e^-40 (1 - q)
    top = np.full(q.shape, float(eps_claim) + 40.0)

    def ok(e):
        return n * growth_rate(dp_max_p(q, e, delta), q, eps_claim, delta) >= need

    feasible = ok(top)
    if not feasible.any():
        return math.inf
    lo, hi = np.full(q.shape, float(eps_claim)), top.copy()
    for _ in range(40):                     # bisection, all q at once (dp_max_p and the growth rise with eps')
        mid = 0.5 * (lo + hi)
        good = ok(mid)
        hi, lo = np.where(good, mid, hi), np.where(good, lo, mid)
    return float(np.min(hi[feasible]))


# ------------------------------------------------------------------ the result record
@dataclass(frozen=True)
class SequentialAuditResult(AuditResult):
    """An :class:`dpcheck.blackbox.AuditResult` of the sequential test, with what it spent.

    samples:       the budget per side (--samples); samples_used: outputs per side of each pair the
                   test consumed (first batch + tested outputs up to the stop); samples_drawn: what the
                   mechanism produced (the last batch is drawn whole).
    stopped:       "violation" (the e-process crossed 1 / alpha) or "budget" (budget exhausted).
    e_value:       the average e-process at the claim at the stop (>= 1 / alpha for a FAIL).
    batches:       one row per batch: outputs per side, e-value after it.
    """

    samples_used: int = 0
    samples_drawn: int = 0
    stopped: str = "budget"
    e_value: float = 1.0
    batches: tuple = ()

    def summary(self) -> str:
        return (f"{self.verdict.upper()}: eps_lb = {self.epsilon_lower_bound:.4g} vs claimed "
                f"{self.epsilon_claimed:.4g} at {self.confidence:.0%} (sequential, stopped on {self.stopped} after "
                f"{self.samples_used} of {self.samples} samples per side; e-value {self.e_value:.3g})")

    def to_check(self, id: str = "privacy.blackbox", kind: str = "privacy", claim_source: str | None = None):
        check = super().to_check(id=id, kind=kind, claim_source=claim_source)
        measured = dict(check.measured, samples_used=self.samples_used, samples_drawn=self.samples_drawn,
                        e_value=self.e_value, stopped=self.stopped)
        details = dict(check.details, sequential=True, batches=list(self.batches), samples_used=self.samples_used,
                       method="sequential black box: betting e-processes (aGRAPA bets) on 1[x in E] - e^eps "
                              "1[y in E] - delta, events re-chosen before every batch from earlier outputs, "
                              "weighted average over pairs, directions and profile points, FAIL when it "
                              "crosses 1/alpha (Ville); docs/sequential.md")
        return replace(check, measured=measured, details=details)


# ------------------------------------------------------------------ the audit
def _schedule(samples: int) -> list[int]:
    """Batch sizes per side: FIRST_BATCH (choice only), then FIRST_BATCH x GROWTH^k, the last one cut to
    the budget."""
    first = min(FIRST_BATCH, samples // 2)
    out, left, b = [first], samples - first, first
    while left > 0:
        b = min(b if len(out) == 1 else b * GROWTH, left)
        out.append(b)
        left -= b
    return out


def _points(claim, eps_claim: float, delta: float, grid: list) -> list[tuple[float, float, float]]:
    """(eps, delta, weight) of each tested point of the claim; weights sum to 1 (as blackbox.sample_plan)."""
    if not grid:
        return [(eps_claim, delta, 1.0)]
    share = LB_ALPHA_SHARE
    return [(eps_claim, delta, share)] + [(e, float(claim.delta_at(e)), (1 - share) / len(grid)) for e in grid]


def _choose(past_x, past_y, kind: str, n_next: int, eps: float, delta: float, alpha: float):
    """The event (scorer, threshold) maximising the projected hockey-stick bound, from outputs so far."""
    fitted = ev.selection_scores(past_x, past_y, kind, {})
    objective = ev.Objective("difference", eps=eps)
    best = None
    cands: dict = {}
    for z_sel in ev.SELECTION_LADDER:
        for sc, sx, sy in fitted:
            t, v, _, _ = ev.best_threshold(sx, sy, n_next, alpha, objective, z_sel, cands)
            if best is None or v > best[2]:
                best = (sc, t, v)
        if best[2] > 0 or best[2] == -math.inf:
            break       # -inf: no event is informative even at the plug-in estimate; less pessimism cannot help
    return best[0], best[1]


def audit_sequential(target: AuditTarget, samples: int = 10**6, alpha: float = 0.05, seed: int = 0,
                     progress=None, output_kind: str | None = None) -> SequentialAuditResult:
    """Sequential black-box audit of ``target`` (module docstring; docs/sequential.md).

    samples: the budget, outputs per input of each pair at most; alpha: the test's level (FAIL is a false
    alarm with probability <= alpha under any stopping rule); seed: fixes every draw.
    """
    from dpcheck.limits import check_sampling_memory
    # every output drawn is kept for re-choosing events: the whole budget is resident, not a capped selection
    check_sampling_memory(target, samples, selection=samples)
    say = progress or (lambda msg: None)
    claim = target.claim
    eps_claim, delta, grid = claim_plan(claim)
    points = _points(claim, eps_claim, delta, grid)
    n_pairs = len(target.pairs)
    slots = [(p, d, j) for p in range(n_pairs) for d in range(2) for j in range(len(points))]
    weights = np.array([points[j][2] / (2 * n_pairs) for (_, _, j) in slots])
    lb_grid = _lb_grid(eps_claim)
    lb_eps = np.r_[lb_grid, eps_claim]          # the claim itself is the last row (its e-process is the test)
    sched = _schedule(samples)
    seqs = np.random.SeedSequence(seed).spawn(len(sched) * 2 * n_pairs)

    hist = [([], []) for _ in range(n_pairs)]       # outputs so far per pair: (list of D arrays, list of D')
    log_w = np.zeros(len(slots))                     # log wealth of each slot at its tested point
    # log wealth per slot of the main point, per eps' of the lower-bound grid: (main slots, G)
    main = [s for s, (_, _, j) in enumerate(slots) if j == 0]
    lb_logw = np.zeros((len(main), lb_eps.size))
    lb_crossed = np.zeros(lb_eps.size, dtype=bool)
    thr = math.log(1.0 / alpha)
    kinds, reps = {}, {}        # per pair: its output kind (from both sides), its outputs' representation
    used = drawn = 0
    stopped, batches, events, counts = "budget", [], {}, {}
    last = (np.zeros(len(slots), dtype=int), np.zeros(len(slots), dtype=int), 0)
    for b, size in enumerate(sched):
        fresh = []
        for p, (d, dp) in enumerate(target.pairs):
            xs = target.sample(d, np.random.default_rng(seqs[(b * n_pairs + p) * 2]), size)
            ys = target.sample(dp, np.random.default_rng(seqs[(b * n_pairs + p) * 2 + 1]), size)
            reps.setdefault(p, representation(xs))
            bb._same_representation(target, {reps[p], representation(xs), representation(ys)})
            xs, ys = ev.flat(np.asarray(xs)), ev.flat(np.asarray(ys))
            if p not in kinds:
                kinds[p] = output_kind or ev.pair_kind(xs, ys, target.output)
            fresh.append((xs, ys))
        drawn += size
        if b == 0:
            for p, (xs, ys) in enumerate(fresh):
                hist[p][0].append(xs)
                hist[p][1].append(ys)
            used += size
            batches.append({"batch": 0, "outputs": size, "role": "first choice of events", "e_value": 1.0})
            continue
        # 1. events for this batch, from all earlier outputs only (predictable)
        hx = np.zeros((len(slots), size), dtype=bool)
        hy = np.zeros((len(slots), size), dtype=bool)
        prior = np.zeros((2, len(slots)))
        for p in range(n_pairs):
            px, py = _cat(hist[p][0]), _cat(hist[p][1])
            xs, ys = fresh[p]
            for d in range(2):
                a, c = (px, py) if d == 0 else (py, px)
                fa, fc = (xs, ys) if d == 0 else (ys, xs)
                for j, (e, dl, _) in enumerate(points):
                    s = slots.index((p, d, j))
                    sc, t = _choose(a, c, kinds[p], size, e, dl, alpha)
                    hx[s], hy[s] = sc.score(fa) >= t, sc.score(fc) >= t
                    pp, qq = float(np.mean(sc.score(a) >= t)), float(np.mean(sc.score(c) >= t))
                    prior[:, s] = moments(pp, qq, e, dl)
                    events[s] = (sc, t)
                    counts[s] = (pp, qq)
        # 2. the e-processes of the batch, in chunks of steps (memory stays bounded at any budget)
        eps_s = np.array([points[j][0] for (_, _, j) in slots])
        del_s = np.array([points[j][1] for (_, _, j) in slots])
        log_w, _, hit, mix_end = _advance(
            lambda lo, hi: hx[:, lo:hi] - np.exp(eps_s)[:, None] * hy[:, lo:hi] - del_s[:, None], size,
            lambda_cap(eps_s, del_s), prior[0], prior[1], log_w, np.log(weights), thr, stop_at_crossing=True)
        stop = hit + 1 if hit is not None else size
        # lower-bound family on the main slots, (main, G) e-processes over the same steps
        pm, p2 = moments(np.array([counts[s][0] for s in main])[:, None],
                         np.array([counts[s][1] for s in main])[:, None], lb_eps[None, :], delta)
        wmain = np.log(weights[main] / weights[main].sum())[:, None]
        lb_logw, crossed, _, _ = _advance(
            lambda lo, hi: increments(hx[main][:, None, lo:hi], hy[main][:, None, lo:hi], lb_eps[None, :],
                                      np.full((1, lb_eps.size), delta)), stop,
            lambda_cap(lb_eps, delta), pm, p2, lb_logw, wmain, thr)
        lb_crossed |= crossed
        last = (hx[:, :stop].sum(axis=1), hy[:, :stop].sum(axis=1), stop)
        used += stop
        for p in range(n_pairs):
            hist[p][0].append(fresh[p][0][:stop])
            hist[p][1].append(fresh[p][1][:stop])
        e_now = float(np.exp(min(mix_end, 700.0)))
        batches.append({"batch": b, "outputs": stop, "role": "test", "e_value": e_now})
        say(f"{target.name}: sequential batch {b}: {used} outputs per side, e-value {e_now:.3g} "
            f"(FAIL at {1 / alpha:.3g})")
        if hit is not None:
            stopped = "violation"
            break

    # the lower bound: largest grid point whose every smaller grid point also crossed (docs/sequential.md)
    order = np.argsort(lb_eps)
    eps_lb = 0.0
    for i in order:
        if not lb_crossed[i]:
            break
        eps_lb = float(lb_eps[i])
    e_value = float(np.exp(min(_logsumexp(log_w + np.log(weights)), 700.0)))
    tested = used - sched[0]
    # a main-point slot alone must carry the average to 1 / alpha: its own e-process must reach 1 / (alpha w_s)
    power = sequential_power(tested, alpha * float(weights[main].min()), eps_claim, delta) if tested > 0 else math.inf
    rows, prof = [], []
    for s, (p, d, j) in enumerate(slots):
        sc, t = events.get(s, (None, math.inf))
        text = sc.describe(t)["text"] if sc is not None else "(none chosen)"
        row = {"pair": p, "direction": DIRECTIONS[d], "epsilon": points[j][0], "delta": points[j][1],
               "event": text, "log_e_value": float(log_w[s]), "weight": float(weights[s]),
               # counts of the event in the last batch's tested outputs (n of them); sequential mode certifies
               # with e-values, not Clopper-Pearson bounds, so p_lo / q_hi are not computed
               "count_d": int(last[0][s]), "count_dprime": int(last[1][s]), "n": int(last[2]),
               "p_lo": None, "q_hi": None}
        (rows if j == 0 else prof).append(row)
    w = max(rows, key=lambda r: r["log_e_value"])
    sc, t = events.get(slots.index((w["pair"], DIRECTIONS.index(w["direction"]), 0)), (None, math.inf))
    event = dict(sc.describe(t)) if sc is not None else {"text": "(none chosen)"}
    tight = tightness(eps_lb, eps_claim)
    conf, dtxt = reason_terms(alpha, delta)
    refuted = None
    if stopped == "violation":
        refuted = (f"sequential test rejected the claim (e-value {e_value:.3g} >= 1/alpha = {1 / alpha:.3g}) after "
                   f"{used} of {samples} samples per side; eps > {eps_lb:.4g}{dtxt} with {conf} confidence "
                   f"(claimed {eps_claim:.4g}; event {event['text']}, pair {w['pair']} {w['direction']})")
    verdict, reason = verdict_of(
        refuted, power, eps_claim,
        found=f"no violation found in {used} samples per side (e-value {e_value:.3g}), but that budget",
        passed=(f"no violation in {used} samples per side (sequential, e-value {e_value:.3g} < {1 / alpha:.3g}); "
                f"eps_lb = {eps_lb:.4g}{dtxt} <= claimed {eps_claim:.4g} at {conf}; would detect eps >= {power:.4g}"))
    return SequentialAuditResult(
        verdict=verdict, reason=reason, epsilon_lower_bound=eps_lb, confidence=1 - alpha, samples=samples,
        selection_samples=sched[0], certification_samples=tested, event=event, pair=w["pair"],
        direction=w["direction"], tightness=tight, power=power,
        power_ratio=power / eps_claim if eps_claim > 0 else math.inf, event_power=power, claim=claim,
        epsilon_claimed=eps_claim, delta=delta, pairs_table=tuple(rows), profile=tuple(prof), alpha=alpha,
        alpha_per_bound=alpha, alpha_per_profile_bound=alpha if grid else 0.0, n_bounds=len(slots), seed=seed,
        output_kind=kinds.get(w["pair"], "continuous"), target=target.name, plots=(), cache=None,
        samples_used=used, samples_drawn=drawn, stopped=stopped, e_value=e_value, batches=tuple(batches))


STEP_CHUNK_ELEMENTS = 2_000_000   # e-process values computed at once (processes x steps)


def _advance(z_of, n: int, cap, prior_mean, prior_m2, log_w0, log_weights, thr: float,
             stop_at_crossing: bool = False):
    """Run e-processes (leading shape L) over the n steps of one batch, in chunks of steps.

    z_of(lo, hi): increments of steps lo..hi-1, shape L + (hi - lo,). cap, prior_mean, prior_m2: shape
    (broadcastable to) L; log_w0: log wealth before the batch, L; log_weights: mixture weights over
    axis 0 (broadcastable to L). The running sums of a chunk's bets continue the earlier chunks' exactly
    (they enter as a prior worth PRIOR_N + steps so far), so chunking never changes a bet.
    Returns (log wealth at the end, L; whether each mixture (L[1:]) crossed thr; the first crossing step
    of a scalar mixture or None; the log mixture at the end). With ``stop_at_crossing`` the run ends at
    the first crossing and the wealth returned is the wealth there.
    """
    lw = np.array(log_w0, dtype=float)
    size = max(1, int(np.prod(lw.shape)))
    chunk = max(256, STEP_CHUNK_ELEMENTS // size)
    s1, s2 = np.zeros(lw.shape), np.zeros(lw.shape)
    crossed = np.zeros(lw.shape[1:], dtype=bool)
    mix_end = _logsumexp(lw + log_weights, axis=0)
    cap = np.asarray(cap, dtype=float)[..., None]
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        z = np.asarray(z_of(lo, hi), dtype=float)
        n0 = PRIOR_N + lo
        path = lw[..., None] + log_wealth(z, cap, (prior_mean * PRIOR_N + s1) / n0, (prior_m2 * PRIOR_N + s2) / n0, n0)
        mix = _logsumexp(path + np.asarray(log_weights)[..., None], axis=0)       # L[1:] + (hi - lo,)
        over = mix >= thr
        if stop_at_crossing and over.any():
            j = int(np.argmax(over.reshape(-1, over.shape[-1]).any(axis=0)))
            crossed |= over[..., :j + 1].any(axis=-1)
            return path[..., j], crossed, lo + j, float(np.max(mix[..., j]))
        crossed |= over.any(axis=-1)
        s1 += z.sum(axis=-1)
        s2 += (z * z).sum(axis=-1)
        lw = path[..., -1]
        mix_end = mix[..., -1]
    return lw, crossed, None, (float(mix_end) if np.ndim(mix_end) == 0 else mix_end)


def _lb_grid(eps_claim: float) -> np.ndarray:
    base = eps_claim if eps_claim > 0 else 0.1
    g = base * LB_GRID_RATIOS
    return np.unique(g[g <= LB_GRID_MAX])


def _cat(parts):
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _logsumexp(a: np.ndarray, axis=None):
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    out = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    return np.squeeze(out, axis=axis) if axis is not None else float(out.reshape(()))


def check_options(cache_dir=None, workers: int = 1, backend: str = "local", scheduler=None) -> None:
    """Options the sequential mode cannot honour are errors, never silently ignored (it draws in-process,
    batch by batch: no chunk cache, no parallel workers)."""
    if cache_dir is not None:
        raise InputError("--cache is not available with --sequential (batches are drawn in-process)")
    if workers != 1 or backend != "local" or scheduler is not None:
        raise InputError("--workers / --backend / --scheduler are not available with --sequential "
                         "(batches are drawn in-process, one after another)")


__all__ = ["SequentialAuditResult", "audit_sequential", "bets", "log_wealth", "increments", "moments",
           "lambda_cap", "growth_rate", "sequential_power", "check_options"]


def audit(target: AuditTarget, samples: int = 10**6, alpha: float = 0.05, seed: int = 0, workers: int = 1,
          backend: str = "local", scheduler: str | None = None, progress=None,
          selection_fraction: float | None = None, cache_dir=None, sequential: bool = False,
          event_bound: str = "cp", probe: bool = True):
    """The black box a ``--sequential`` option chooses: :func:`dpcheck.blackbox.audit` (same arguments) when
    ``sequential`` is False, else :func:`audit_sequential` after the same argument checks (options it cannot
    honour -- a cache, workers, a backend -- are an InputError; ``event_bound`` is the batch black box's).
    ``probe``: first check that the mechanism draws from its rng and gives single calls the law of a batch
    (:func:`dpcheck.probe.probe_target`: a MechanismError otherwise); ``"rng"`` (the built-in audits, whose mechanisms
    are the implementations under audit): only whether its outputs depend on its generator, a finding that sets the
    result's verdict (:func:`dpcheck.probe.rng_finding`)."""
    from dataclasses import replace
    from dpcheck import blackbox as bb
    frac = bb.SELECTION_FRACTION if selection_fraction is None else selection_fraction
    samples = bb.check_arguments(target, samples, seed, alpha, frac)
    if sequential:
        check_options(cache_dir, workers, backend, scheduler)
        if event_bound != "cp":
            raise InputError(f"event_bound={event_bound!r} is the batch black box's: the sequential test "
                             "certifies with e-processes (drop it, or sequential=False)")
    found = None
    if target.search is not None:     # the pairs to audit, found on outputs of their own (dpcheck.search)
        from dpcheck.search import search_pairs
        pairs, found = search_pairs(target, samples, alpha, seed, frac, progress)
        target = replace(target, pairs=pairs, search=None)
    finding = None
    if probe == "rng":
        from dpcheck.probe import rng_finding
        finding = rng_finding(target, seed)
    elif probe:
        from dpcheck.probe import probe_target
        probe_target(target, seed)
    if not sequential:
        res = bb.audit(target, samples=samples, alpha=alpha, seed=seed, workers=workers, backend=backend,
                       scheduler=scheduler, progress=progress, selection_fraction=frac, cache_dir=cache_dir,
                       event_bound=event_bound)
    else:
        res = audit_sequential(target, samples=samples, alpha=alpha, seed=seed, progress=progress)
    from dpcheck.probe import with_rng_finding
    res = with_rng_finding(res, finding)
    return res if found is None else replace(res, search=found)
