"""Black-box DP auditor: an epsilon lower bound with valid confidence, for pure, approximate and zCDP claims.

Method (DP-Opt-style event search, Lu et al. 2022, with no pinned mass):

1. For every neighbouring pair (D, D') draw ``samples`` outputs from each input, in seeded
   chunks of fixed size (so the result does not depend on ``workers`` or ``backend``).
   The first ``selection_fraction`` of each side (at most SELECTION_CAP) is the selection
   sample, the rest the disjoint certification sample. The draw is streamed (section
   "sampling" below): memory does not grow with ``samples``.
2. For each pair, fit the event families of :mod:`dpcheck.events` on the selection sample in
   both directions (E likely under D, or under D') and choose the one (direction, family,
   threshold) that maximises the Clopper-Pearson bound the certification sample is expected
   to give. Only that event is certified (and, beside it, a rare one: "Rare events" below): everything
   chosen on the selection sample is free.
3. Certify on the certification sample: one-sided Clopper-Pearson bounds p_lo on
   P[M(D) in E] and q_hi on P[M(D') in E]; eps_lb = ln((p_lo - delta) / q_hi). Or, when the
   selection sample projects it higher (``event_bound="best"``, opt-in), the exact
   conditional odds-ratio test at the same total level (:func:`dpcheck.stats.odds_eps_bound`,
   docs/blackbox_bounds.md): one test of the contrast instead of one bound per side.
4. For approximate-DP and zCDP claims, test the claimed privacy profile delta(eps)
   (:meth:`dpcheck.Claim.delta_at`) at a few eps: for each, a separately chosen event
   (again direction, family and threshold chosen on the selection sample) certifies
   p_lo - e^eps q_hi, a lower bound on the hockey-stick divergence, which must not exceed
   delta(eps).

Rare events: each pair also chooses, with no pessimism about the selection estimates (RARE_Z), a
second eps-bound event; when it is another event and projects higher, both are certified, at
(1 - RARE_SHARE) and RARE_SHARE of the pair's level (docs/blackbox_bounds.md, "A second, rare event").
The split is decided on the selection sample, so the levels below still sum to alpha.

Confidence (weighted Bonferroni over everything certified): with P pairs, 2 sides and
1 + |G| certified events per pair (the eps_lb event and one per profile point in G), there
are 2 P (1 + |G|) one-sided bounds. Pure DP (G empty): each is at level alpha / (2 P).
Otherwise the 2 P bounds of the eps_lb events get alpha / 2 between them (alpha / (4 P)
each) and the 2 P |G| profile bounds the other alpha / 2 (alpha / (4 P |G|) each): the
levels sum to alpha. Directions, families and thresholds are chosen on data independent of
the certification sample (learned scores are fitted on one half of the selection sample and
thresholded on the other), so conditionally on the selection sample each certified event is
fixed, and with probability >= 1 - alpha every certified statement holds simultaneously;
in particular the reported epsilon_lower_bound (the maximum over pairs) is a valid lower
bound on the true epsilon and a "fail" is a false alarm with probability <= alpha.
(Certifying both directions would halve every level for nothing:
the direction is as much a selection-sample choice as the threshold.)
"""
from __future__ import annotations

import math
from numbers import Real
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import numpy as np

from dpcheck import events as ev
from dpcheck import stats
from dpcheck.checks import Check, FAIL, INCONCLUSIVE, PASS
from dpcheck.accounting import zcdp_epsilon
from dpcheck.claims import Claim
from dpcheck.errors import InputError, MechanismError
from dpcheck.target import AuditTarget, representation

from dpcheck.layout import CHUNK, SELECTION_CAP, SELECTION_FRACTION   # the draw's layout (one place)

CERT_BLOCK = 8                  # certification chunks per task (one worker call, one cache file)
ZCDP_DELTA = 1e-5               # the delta at which a zCDP claim's epsilon is reported
ZCDP_PROFILE_DELTAS = (1e-1, 1e-2, 1e-3)
APPROX_PROFILE_FRACTIONS = (0.0, 0.5)
INCONCLUSIVE_FACTOR = 2.0
LB_ALPHA_SHARE = 0.5            # share of alpha for the eps-bound events when profile points are tested
RARE_Z = 0.0                    # selection pessimism of a pair's second eps-bound event (module docstring, "Rare events")
RARE_SHARE = 0.1                # its share of the pair's eps-bound level, when it is certified
PLOT_SAMPLES = 100_000
F32_MAX = float(np.finfo(np.float32).max)
EVENT_BOUNDS = ("best", "cp")   # audit(event_bound=...): docs/blackbox_bounds.md
DIRECTIONS = ("D->D'", "D'->D")


# ------------------------------------------------------------------ the result record
@dataclass(frozen=True)
class AuditResult:
    """The outcome of :func:`audit`: a self-explaining, immutable record.

    verdict:             "fail" when a certified statement contradicts the claim (eps_lb >
                         epsilon_claimed, or a certified profile point above delta(eps));
                         "inconclusive" when it does not, but ``power`` shows the budget could
                         not have caught even a doubling of epsilon (power > 2 x epsilon_claimed;
                         > 0.1 when the claim is epsilon = 0); "pass" otherwise.
    epsilon_lower_bound: max over pairs and directions of ln((p_lo - delta) / q_hi), floored at 0;
                         valid with probability >= confidence.
    epsilon_claimed / delta: the (eps, delta) point the bound is compared with: the claim's own for
                         DP / JDP / LDP; for zCDP, delta = 1e-5 (or the claim's delta if set) and
                         eps the claimed profile's epsilon at that delta.
    samples:             outputs per input of each pair, selection + certification (--samples).
    event, pair, direction: the winning event (a dict with "text" and its parameters), the index of
                         its neighbouring pair and "D->D'" (E is likely under D) or "D'->D"
                         (the direction chosen on the selection sample).
    tightness:           epsilon_lower_bound / epsilon_claimed.
    power:               the smallest true epsilon that this sample budget would have caught about
                         half the time with an event of the best mass, see
                         :func:`dpcheck.stats.budget_detectable_epsilon`; power_ratio = power /
                         epsilon_claimed. It is a property of the budget, not of the event the
                         search chose: a mechanism with no leak at all gives uninformative events,
                         and that must not read as too few samples.
    event_power:         the same for the chosen events (:func:`dpcheck.stats.detectable_epsilon`,
                         minimum over pairs): how close the found event came to
                         being able to show a violation.
    pairs_table:         one row per pair (its chosen direction) with counts, bounds and power, of the better of
                         its one or two eps-bound events; ``alpha_levels`` the levels of both (a rare second event
                         takes 0.1 of the pair's alpha_per_bound), ``alpha_event`` the reported one's, ``events``
                         each one's bound.
    profile:             one row per (pair, tested eps) for approximate DP / zCDP, with the
                         direction chosen for that point.
    cache:               with ``cache_dir``: how the chunk cache was used ({"dir", "key", "chunks",
                         "hits", "computed", "recomputed": [{"file", "why"}]}, or {"disabled": why});
                         None without a cache. It says how the outputs were obtained, not what they
                         show, so :meth:`to_dict` leaves it out when None.
    rng_probe:           what :func:`dpcheck.probe.rng_finding` found when a built-in target's outputs do not
                         depend on its generator (its verdict and reason are then the result's); None otherwise,
                         and left out of :meth:`to_dict`.
    """

    verdict: str
    reason: str
    epsilon_lower_bound: float
    confidence: float
    samples: int
    selection_samples: int
    certification_samples: int
    event: dict
    pair: int
    direction: str
    tightness: float
    power: float
    power_ratio: float
    event_power: float
    claim: Claim
    epsilon_claimed: float
    delta: float
    pairs_table: tuple
    profile: tuple
    alpha: float
    alpha_per_bound: float
    alpha_per_profile_bound: float
    n_bounds: int
    seed: int
    output_kind: str
    target: str = ""
    plots: tuple = ()
    cache: dict | None = None
    search: dict | None = None
    rng_probe: dict | None = None

    def summary(self) -> str:
        return (f"{self.verdict.upper()}: eps_lb = {self.epsilon_lower_bound:.4g} vs claimed "
                f"{self.epsilon_claimed:.4g} (tightness {self.tightness:.3g}, power {self.power:.4g}) at "
                f"{self.confidence:.0%} on {self.samples} samples per side; event {self.event.get('text')} "
                f"(pair {self.pair}, {self.direction})")

    def to_dict(self) -> dict:
        from dpcheck.checks import _jsonable
        skip = ("claim", "plots") + tuple(k for k in ("cache", "search", "rng_probe") if getattr(self, k) is None)
        return _jsonable({k: getattr(self, k) for k in self.__dataclass_fields__ if k not in skip}
                         | {"claim": self.claim.to_dict()})

    @property
    def uninformative(self) -> bool:
        """A PASS whose budget could not reliably have seen a 2x excess (:func:`uninformative_pass`: the check
        of this result is then PASS (uninformative))."""
        return self.verdict == PASS and uninformative_power(self.power, self.epsilon_claimed)

    def to_check(self, id: str = "privacy.blackbox", kind: str = "privacy", claim_source: str | None = None) -> Check:
        claim = self.claim.to_dict()
        claim["statement"] = self.claim.describe()
        src = claim_source if claim_source is not None else self.claim.source
        if src:
            claim["source"] = src
        measured = {
            "epsilon_lower_bound": self.epsilon_lower_bound, "confidence": self.confidence,
            "samples": self.samples, "selection_samples": self.selection_samples,
            "certification_samples": self.certification_samples,
            "epsilon_claimed": self.epsilon_claimed, "delta": self.delta,
            "tightness": self.tightness, "power": self.power, "power_ratio": self.power_ratio,
            "event_power": self.event_power, "event": self.event.get("text"), "pair": self.pair, "direction": self.direction,
        }
        win = next((r for r in self.pairs_table if r["pair"] == self.pair and r["direction"] == self.direction), None)
        if win:
            measured.update({k: win[k] for k in ("count_d", "count_dprime", "p_lo", "q_hi")})
        details = {
            "method": "black box: events chosen on a selection sample, Clopper-Pearson bounds (or, where the "
                      "selection sample projects more, the exact odds-ratio test: docs/blackbox_bounds.md) on a "
                      "disjoint certification sample (direction, family, threshold and bound chosen on selection "
                      "data), Bonferroni over pairs, sides and profile points",
            "event": self.event, "pairs": list(self.pairs_table), "profile": list(self.profile),
            "alpha_per_bound": self.alpha_per_bound,
            "alpha_per_profile_bound": self.alpha_per_profile_bound, "n_bounds": self.n_bounds, "seed": self.seed,
            "output_kind": self.output_kind, "plots": list(self.plots),
        }
        if self.cache is not None:
            details["cache"] = self.cache
        if self.search is not None:
            details["search"] = self.search
        if self.rng_probe is not None:
            details["rng_probe"] = self.rng_probe
        check = Check(id=id, kind=kind, verdict=self.verdict, claim=claim, measured=measured,
                      details=details, reason=self.reason)
        return uninformative_pass(check)


UNINFORMATIVE_EXCESS = 2.0   # a black-box PASS must have been able to see this excess over the claim
# ... which a budget does reliably only when its power (its best event's, randomized response's) is within this
# multiple of the claim: choosing the event on a quarter of the samples and events weaker than randomized
# response's (Laplace's) take the rest. Measured: Laplace at 2x its claim FAILs in >= 85 % of seeds where power
# <= 1.45 x the claim, in 20-40 % where it is 1.6-1.9 x (docs/blackbox_bounds.md, "What power promises").
INFORMATIVE_POWER = 1.5


def uninformative_pass(check: Check) -> Check:
    """The one rule for black-box passes, in every audit: a PASS whose sample budget could not reliably have
    detected a 2x excess over the claimed epsilon (power = the smallest true epsilon its best event catches
    about half the time, :func:`dpcheck.stats.budget_detectable_epsilon`, above INFORMATIVE_POWER x the
    claim) is PASS (uninformative), with the power in the reason. Claims of epsilon = 0 have no relative excess and are
    left as they are. :func:`audit` itself already reports such a budget as INCONCLUSIVE
    (INCONCLUSIVE_FACTOR); this rule covers passes an audit reaches otherwise (a softened or combined
    black box). A lower bound of 0 with enough power is evidence (the claim would have been caught
    2x over), not an uninformative pass."""
    from dpcheck.checks import qualify
    m = check.measured
    power, claimed = m.get("power"), m.get("epsilon_claimed")
    if check.verdict != PASS or power is None or not claimed or not claimed > 0 or check.details.get("qualifier"):
        return check
    if uninformative_power(power, claimed):
        return qualify(check, "uninformative",
                       f"this budget detects only eps >= {power:.3g} with its best event, {power / claimed:.3g}x "
                       f"the claimed {claimed:g} (more than {INFORMATIVE_POWER:g}x): a {UNINFORMATIVE_EXCESS:g}x "
                       "excess could pass unseen (raise --samples)")
    return check


def uninformative_power(power: float, claimed: float) -> bool:
    """Whether a PASS at this power says little about a UNINFORMATIVE_EXCESS x excess (:data:`INFORMATIVE_POWER`);
    never for a claim of epsilon = 0 (no relative excess)."""
    return bool(claimed and claimed > 0 and not power <= INFORMATIVE_POWER * claimed)


def blind_pair_pass(check: Check, reachable: float | None, how: str) -> Check:
    """The pair's side of :func:`uninformative_pass`: a black-box PASS on a pair whose own privacy loss stays
    within the claim even under a mechanism spending about UNINFORMATIVE_EXCESS x its budget cannot have seen such
    an excess, whatever the samples. ``reachable``: the largest epsilon that pair can show under that mechanism
    (computed by the audit from the pair and the declared mechanism; None when it cannot be computed, and the
    check is left as it is); ``how`` says what was computed, for the reason. Such a PASS is PASS
    (uninformative), with the figure in the reason and in ``details["pair_reachable_epsilon"]``."""
    from dpcheck.checks import qualify
    claimed = check.measured.get("epsilon_claimed")
    if check.verdict != PASS or reachable is None or not claimed or not claimed > 0:
        return check
    check = replace(check, details=dict(check.details, pair_reachable_epsilon=float(reachable)))
    if reachable <= claimed and check.details.get("qualifier") is None:
        return qualify(check, "uninformative",
                       f"this pair's privacy loss is at most eps = {reachable:.3g} {how}, within the claimed "
                       f"{claimed:g}: more samples would not show such an excess on this pair")
    return check


# ------------------------------------------------------------------ sampling (streamed)
# The draw is cut into chunks of CHUNK outputs per input (chunk i: input i // len(sizes), chunk
# i % len(sizes), child seed i of the audit's seed; dpcheck.parallel). It is consumed in two passes,
# so that memory does not grow with ``samples``:
#   selection pass (one pair at a time): the chunks holding the first ``selection`` outputs of the
#     pair's two inputs, kept (at most SELECTION_CAP per side) while the events are chosen;
#     The last of those chunks usually holds certification outputs too (the selection ends inside
#     it): they are kept, and counted here as soon as the pair's events are chosen, instead of being
#     drawn a second time (at 10^5 per side, a third of the draw);
#   certification pass (all pairs, in the workers): every other chunk holding certification outputs
#     is drawn from its seed, reduced to the counts of the chosen events (plus the little a plot
#     needs) and dropped, CERT_BLOCK chunks of one input per task. The counts are sums over chunks, so
#     they equal counts over the whole sample, whatever the blocks.
def _draw_chunk(i: int, seed_seq, target: AuditTarget, inputs: list, sizes: list):
    """Chunk i: outputs of input i // len(sizes), chunk i % len(sizes) (top level: picklable)."""
    j, c = divmod(i, len(sizes))
    return target.sample(inputs[j], np.random.default_rng(seed_seq), sizes[c])


def _count_block(i: int, seed_seq, target: AuditTarget, inputs: list, sizes: list, n_sel: int, shape: tuple,
                 events: tuple, shown: tuple, reps: tuple):
    """Certification chunks i, i + 1, ... (at most CERT_BLOCK, all of one input) reduced to what
    certification needs (top level: picklable; runs in the workers). Chunk i + k is drawn from child
    seed i + k of the audit's seed, as if drawn alone, one chunk in memory at a time.

    events[p]: the (scorer, threshold) events chosen for pair p, its eps-bound event first; shown[p]: the
    indices of its eps-bound events (the first, and a rare one if any). Returns {"counts": #{score >= t}
    per event on the block's certification outputs, "plot": (len(shown[p]), m) the eps-bound events'
    scores of the certification outputs among the first PLOT_SAMPLES, "cells": for each shown cell
    event, its cell counts, concatenated (else empty)}."""
    j, c0 = divmod(i, len(sizes))
    tally = _Tally(events[j // 2], shown[j // 2])
    parent = seed_seq.spawn_key[:-1]
    for c in range(c0, min(c0 + CERT_BLOCK, len(sizes))):
        ss = np.random.SeedSequence(seed_seq.entropy, spawn_key=parent + (j * len(sizes) + c,),
                                    pool_size=seed_seq.pool_size)
        x = _draw_chunk(j * len(sizes) + c, ss, target, inputs, sizes)
        if x.shape[1:] != shape:
            raise MechanismError(f"mechanism of target {target.name!r} returned outputs of different shapes "
                                 f"for different inputs or chunks: {sorted(map(str, {x.shape[1:], shape}))}")
        _same_representation(target, {representation(x), reps[j // 2]})
        lo = max(n_sel - c * CHUNK, 0)        # the chunk's selection outputs are not certified
        tally.add(ev.flat(x)[lo:], c * CHUNK + lo - n_sel)
        del x
    return tally.record()


class _Tally:
    """What certification keeps of some certification outputs of one input (the record of
    :func:`_count_block`): the counts of its pair's events, the eps-bound events' scores among the
    first PLOT_SAMPLES of the certification sample, and their cell counts where they are cell events
    (``shown``: the indices of the eps-bound events in ``pair``). Used in the workers for drawn blocks,
    and in the main process for the certification outputs the selection pass already drew (the rest of
    the chunk the selection sample ends in)."""

    def __init__(self, pair: tuple, shown: tuple = (0,)):
        self.pair, self.shown = pair, [pair[k][0] for k in shown]
        self.counts = np.zeros(len(pair), dtype=np.int64)
        self.plots: list = []
        self.cells = [np.zeros(cell_size(sc), dtype=np.int64) for sc in self.shown]

    def add(self, x, pos: int) -> None:
        """Outputs ``x`` (flat), starting at position ``pos`` of the certification sample."""
        scores = {}
        for k, (scorer, t) in enumerate(self.pair):
            if id(scorer) not in scores:
                scores[id(scorer)] = scorer.score(x)
            self.counts[k] += int(np.count_nonzero(scores[id(scorer)] >= t))
        if pos < PLOT_SAMPLES:
            # float32: the plot is an illustrative histogram, and two events' scores then take the memory one took
            # (float64 kept for scores beyond float32's range, which would turn to inf and leave the histogram)
            got = np.stack([scores[id(sc)][:PLOT_SAMPLES - pos] for sc in self.shown]).astype(float)
            fin = np.abs(got[np.isfinite(got)])
            self.plots.append(got.astype(np.float32) if not fin.size or fin.max() <= F32_MAX else got)
        for sc, cells in zip(self.shown, self.cells):
            if cells.size:
                ix = sc.cell_index(x)
                cells += np.bincount(ix[ix >= 0], minlength=cells.size)

    def record(self) -> dict:
        plot = np.concatenate(self.plots, axis=1) if self.plots else np.zeros((len(self.shown), 0), np.float32)
        return {"counts": self.counts, "plot": plot, "cells": np.concatenate(self.cells)}


def cell_size(scorer) -> int:
    """How many cell counts certification keeps for an eps-bound event of this scorer (0: not a cell event)."""
    return scorer.cells.size if isinstance(scorer, ev.CellScorer) else 0


def _cache_label(target, samples, seed, part: str = "") -> str:
    """A readable label for the chunk cache. The key itself (dpcheck.parallel.ChunkCache) is a
    fingerprint of everything the chunks depend on: the target (mechanism code, the values it
    closes over and the globals it reads, pairs, claim, output kind), the inputs, the chunk
    layout (``sizes``: CHUNK and ``samples``), the seed, the dpcheck / numpy versions and, for
    the certification pass, the events chosen (so it is keyed by the selection sample too)."""
    return f"blackbox:{target.name}:samples={samples}:seed={seed}:chunk={CHUNK}" + (f":{part}" if part else "")


def _layout(target, samples):
    """(chunk sizes per input, the inputs in draw order, number of chunks) of a black-box draw."""
    sizes = [CHUNK] * (samples // CHUNK) + ([samples % CHUNK] if samples % CHUNK else [])
    inputs = [d for pair in target.pairs for d in pair]
    return sizes, inputs, len(inputs) * len(sizes)


def _selection_indices(p: int, n_sel: int, sizes: list) -> list:
    """The chunks holding the selection outputs of pair p's two inputs."""
    k = -(-n_sel // CHUNK)
    return [j * len(sizes) + c for j in (2 * p, 2 * p + 1) for c in range(k)]


def cached_first_chunk(target, samples, seed, cache_dir, n_sel: int | None = None):
    """Chunk 0 of the draw, if ``cache_dir`` holds a valid copy (from the selection pass of pair 0), else
    None (lets the memory estimate of :mod:`dpcheck.limits` avoid calling the mechanism on a resume)."""
    if cache_dir is None:
        return None
    from dpcheck.fingerprint import Unfingerprintable
    from dpcheck.parallel import ChunkCache, chunk_cache_key
    from dpcheck.target import output_problem
    sizes, inputs, n_chunks = _layout(target, samples)
    label = _cache_label(target, samples, seed, "selection pair 0")
    try:
        key = chunk_cache_key(label, _draw_chunk, (target, inputs, sizes), seed, n_chunks)
    except Unfingerprintable:
        return None
    ok, out = ChunkCache(cache_dir, key, n_chunks, label, lambda msg: None).read(
        0, lambda i, out: output_problem(out, sizes[0]))
    return out if ok else None


def _merge_cache_reports(reports: list) -> dict | None:
    """One ``cache`` record for the passes of an audit: counts summed, files listed, one key per pass."""
    if not reports:
        return None
    disabled = [r["disabled"] for r in reports if "disabled" in r]
    if disabled:
        return {"disabled": disabled[0]}
    out = {"dir": str(Path(reports[0]["dir"]).parent), "keys": [r["key"] for r in reports],
           "key": reports[0]["key"], "chunks": sum(r["chunks"] for r in reports),
           "hits": sum(r["hits"] for r in reports), "computed": sum(r["computed"] for r in reports),
           "recomputed": [x for r in reports for x in r["recomputed"]]}
    not_stored = [x for r in reports for x in r.get("not_stored", ())]
    files = sorted({f for r in reports for f in r.get("files_read", ())})
    if not_stored:
        out["not_stored"] = not_stored
    if files:
        out["files_read"] = files
    return out


def _run(target, samples, seed, exe: dict, fn, args, indices, label, say, reports, validate, on_result=None,
         unit=f"chunks of {CHUNK} outputs"):
    """One pass of chunks through dpcheck.parallel.run_chunks, its cache use appended to ``reports``."""
    from dpcheck.parallel import run_chunks
    _, _, n_chunks = _layout(target, samples)
    step = max(1, len(indices) // 10)

    def tick(done, total):
        if done == total or (total >= 20 and done % step == 0):
            say(f"{target.name}: {label}: sampled {done}/{total} {unit}")

    rep = {} if exe["cache_dir"] is not None else None
    try:
        return run_chunks(fn, n_chunks, seed, workers=exe["workers"], backend=exe["backend"],
                          scheduler=exe["scheduler"], args=args, progress=tick, cache_dir=exe["cache_dir"],
                          cache_key=_cache_label(target, samples, seed, label), say=say, validate=validate,
                          cache_report=rep, indices=indices, on_result=on_result)
    finally:
        if rep is not None:
            rep["chunks"] = len(indices)
            reports.append(rep)


def _draw_selection(target, samples, seed, p, n_sel, exe, say, reports):
    """The first n_sel outputs of each input of pair p (the selection pass), the rest of the chunks
    drawn for them (the first certification outputs of each input; empty when n_sel fills whole chunks),
    and the outputs' representation (:func:`dpcheck.target.representation`), which every chunk of both
    inputs must share: MechanismError otherwise."""
    from dpcheck.target import output_problem
    sizes, inputs, _ = _layout(target, samples)
    idx = _selection_indices(p, n_sel, sizes)
    parts = _run(target, samples, seed, exe, _draw_chunk, (target, inputs, sizes), idx, f"selection pair {p}",
                 say, reports, lambda i, out: output_problem(out, sizes[i % len(sizes)]))
    _same_representation(target, {representation(parts[i]) for i in idx})
    outs, rest = [], []
    for j in (2 * p, 2 * p + 1):
        try:
            drawn = np.concatenate([parts[i] for i in idx if i // len(sizes) == j])
        except ValueError as e:
            raise MechanismError(f"mechanism of target {target.name!r} returned outputs of varying shape: {e}") from e
        outs.append(drawn[:n_sel])
        rest.append(drawn[n_sel:])
    return outs, rest, representation(parts[idx[0]])


def _same_representation(target, got: set) -> None:
    if len(got) > 1:
        raise MechanismError(f"mechanism of target {target.name!r} returned outputs of different types "
                             f"({', '.join(sorted(got))}) for the two inputs of a pair or for different calls: "
                             "the type alone can tell the inputs apart; return one dtype for every input")


def _count_problem(events_p, shown_p, cert):
    """validate() of a cached certification chunk: the shape of what _count_block returns."""
    def check(i, r):
        if not (isinstance(r, dict) and set(r) == {"counts", "plot", "cells"}
                and all(isinstance(v, np.ndarray) for v in r.values())):
            return "not a certification record"
        c = r["counts"]
        if c.shape != (len(events_p(i)),) or c.dtype.kind not in "iu" or (c < 0).any() or (c > cert(i)).any():
            return f"event counts {c.tolist()} do not fit {len(events_p(i))} events of {cert(i)} outputs"
        cells = r["cells"]
        if cells.size and (cells.dtype.kind not in "iu" or (cells < 0).any()
                           or int(cells.sum()) > len(shown_p(i)) * cert(i)):
            return "cell counts do not fit the chunk"
        if r["plot"].ndim != 2 or r["plot"].shape[0] != len(shown_p(i)):
            return "plot scores do not fit the events"
        return None
    return check


def _certify_counts(target, samples, seed, n_sel, shape, events, shown, reps, exe, say, reports, rests: dict):
    """The certification pass: per input, the counts of its pair's events, the eps-bound events' first
    PLOT_SAMPLES certification scores ((len(shown[p]), m)) and, for cell events, their cell counts
    (concatenated; summed over chunks).
    ``rests[j]``: input j's record (:class:`_Tally`) of the certification outputs the selection pass
    drew; the pass draws the chunks after them."""
    sizes, inputs, _ = _layout(target, samples)
    first = -(-n_sel // CHUNK)              # the first chunk the selection pass did not draw
    idx = [j * len(sizes) + c for j in range(len(inputs)) for c in range(first, len(sizes), CERT_BLOCK)]
    counts = [np.zeros(len(events[j // 2]), dtype=np.int64) for j in range(len(inputs))]
    cells = [None] * len(inputs)
    plots: list = [{} for _ in inputs]

    def add(i, r):
        j = i // len(sizes)
        counts[j] += r["counts"]
        if r["plot"].shape[1]:
            plots[j][i] = r["plot"]
        if r["cells"].size:
            cells[j] = r["cells"] if cells[j] is None else cells[j] + r["cells"]

    def cert(i):
        # certification outputs in the block starting at chunk i
        c0 = i % len(sizes)
        return sum(sizes[c] - max(n_sel - c * CHUNK, 0) for c in range(c0, min(c0 + CERT_BLOCK, len(sizes))))

    for j, r in rests.items():              # ahead of every drawn chunk of input j (the plot's order)
        add(j * len(sizes) + first - 1, r)
    _run(target, samples, seed, exe, _count_block, (target, inputs, sizes, n_sel, shape, events, shown, reps), idx,
         "certification", say, reports,
         _count_problem(lambda i: events[i // len(sizes) // 2], lambda i: shown[i // len(sizes) // 2], cert), add,
         unit=f"blocks of up to {CERT_BLOCK} x {CHUNK} outputs")
    plot = [np.concatenate([pl[i] for i in sorted(pl)], axis=1) if pl else np.zeros((len(shown[j // 2]), 0))
            for j, pl in enumerate(plots)]
    return counts, plot, cells


# ------------------------------------------------------------------ what is tested


@dataclass(frozen=True)
class SamplePlan:
    """How :func:`audit` spends a sample and alpha (module docstring): per side, the first ``selection``
    outputs choose the events, the other ``certification`` certify them; each eps-bound event is
    certified at ``alpha_bound`` per one-sided bound, each profile point at ``alpha_profile``
    (weighted Bonferroni over 2 directions x pairs x (1 + |grid|) bounds). A search that projects what
    the audit will certify (audits/lib/privatizers/) imports this plan rather than re-deriving it."""

    samples: int
    selection: int
    certification: int
    epsilon: float
    delta: float
    grid: tuple
    alpha_bound: float
    alpha_profile: float


def sample_plan(claim: Claim, samples: int, alpha: float, pairs: int = 1,
                selection_fraction: float = SELECTION_FRACTION) -> SamplePlan:
    """The :class:`SamplePlan` of an audit of ``pairs`` input pairs against ``claim``."""
    n_sel = min(max(int(round(samples * selection_fraction)), 10), samples - 10, SELECTION_CAP)
    eps_claim, delta, grid = claim_plan(claim)
    # the epsilon-bound events get half of alpha when profile points share it (they carry the
    # headline figure); weighted Bonferroni: the weights over all bounds sum to alpha
    share = LB_ALPHA_SHARE if grid else 1.0
    return SamplePlan(samples=samples, selection=n_sel, certification=samples - n_sel, epsilon=eps_claim,
                      delta=delta, grid=tuple(grid), alpha_bound=alpha * share / (2 * pairs),
                      alpha_profile=alpha * (1 - share) / (2 * pairs * len(grid)) if grid else 0.0)


def claim_plan(claim: Claim) -> tuple[float, float, list[float]]:
    """(epsilon_claimed, delta, profile eps grid) for a claim.

    Pure DP: the bound at delta = 0 is the whole test. (eps, delta)-DP: the bound at the claimed
    delta, plus profile points at eps x (0, 1/2), where (eps, delta)-DP still promises
    delta(eps') from Kairouz et al.'s tight conversion (points above eps add nothing: the
    profile is flat there and e^eps' q grows). zCDP: the bound at delta = 1e-5 against the
    claimed profile's epsilon there, plus points where the profile is 1e-1, 1e-2, 1e-3.
    """
    if claim.notion == "zCDP":
        delta = claim.delta if claim.delta > 0 else ZCDP_DELTA
        if claim.rho == 0:
            return 0.0, delta, [0.0]
        grid = [zcdp_epsilon(claim.rho, d) for d in ZCDP_PROFILE_DELTAS]
        return zcdp_epsilon(claim.rho, delta), delta, grid
    if claim.delta > 0:
        return claim.epsilon, claim.delta, [claim.epsilon * f for f in APPROX_PROFILE_FRACTIONS]
    return claim.epsilon, 0.0, []


def underpowered(power: float, eps_claim: float) -> bool:
    """A no-violation result is INCONCLUSIVE, not PASS, when the budget could only detect a true eps above
    INCONCLUSIVE_FACTOR x the claim (0.1 for a claim of eps = 0): one rule for the batch and sequential tests."""
    return power > (INCONCLUSIVE_FACTOR * eps_claim if eps_claim > 0 else 0.1)


def verdict_of(refuted: str | None, power: float, eps_claim: float, *, found: str, passed: str) -> tuple[str, str]:
    """(verdict, reason) of a black-box test, one rule for the batch and the sequential test: FAIL with the
    ``refuted`` reason when the claim was refuted; else INCONCLUSIVE when the budget could not have detected a
    violation (:func:`underpowered`; ``found`` says what was found with which budget); else PASS (``passed``)."""
    if refuted is not None:
        return FAIL, refuted
    if underpowered(power, eps_claim):
        return INCONCLUSIVE, (f"{found} could only detect a true eps of about {power:.4g} vs the claimed "
                              f"{eps_claim:.4g}; use more samples")
    return PASS, passed


def reason_terms(alpha: float, delta: float) -> tuple[str, str]:
    """How a black-box reason states its confidence ("95%") and the delta its epsilon is at (" at delta=1e-05",
    or nothing for pure DP): the batch and the sequential test word their verdicts alike."""
    return f"{1 - alpha:.0%}", (f" at delta={delta:g}" if delta else "")


def tightness(eps_lb: float, eps_claim: float) -> float:
    """eps_lb / eps_claim, the share of the claim the test certified (a claim of eps = 0: inf when a violation
    was found, else 1)."""
    return eps_lb / eps_claim if eps_claim > 0 else (math.inf if eps_lb > 0 else 1.0)


def check_arguments(target, samples, seed, alpha, selection_fraction=SELECTION_FRACTION) -> int:
    """InputError unless the black box's arguments are valid (the batch and the sequential audit share it);
    returns ``samples`` as an int."""
    if not isinstance(target, AuditTarget):
        raise InputError(f"audit expects a dpcheck.AuditTarget, got {type(target).__name__}")
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 20:
        raise InputError(f"samples must be an integer >= 20, got {samples!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"seed must be an integer >= 0, got {seed!r}")
    if not (isinstance(alpha, Real) and 0 < alpha < 1):
        raise InputError(f"alpha must lie in (0, 1), got {alpha!r}")
    if not (isinstance(selection_fraction, Real) and 0 < selection_fraction < 1):
        raise InputError(f"selection_fraction must lie in (0, 1), got {selection_fraction!r}")
    return int(samples)


def _choose_all(target, samples, seed, n_pairs, n_sel, n_cert, alpha_b, alpha_prof, delta, grid, lb_objectives,
                exe, say, reports, pmap) -> tuple:
    """The selection pass and the event choice of every pair (module docstring, steps 1-2 and "Rare events"):
    (reps, shape, kinds, chosen, levels, methods, shown, rests), described where they are declared below.
    ``pmap`` runs the independent sorts, fits and threshold searches (the same events with any map)."""
    methods = []         # per pair: how its eps-bound events are certified ("cp" or "odds"), the first event's first
    levels = []          # per pair: the one-sided level of each eps-bound event (alpha_b, or alpha_b split in two)
    shown = []           # per pair: the indices of its eps-bound events among its certified events
    shape = None
    kinds, reps = [], []     # per pair: the output kind its events are fitted for, the outputs' representation
    chosen = []          # per pair: the certified events [(direction, scorer, t)], the eps-bound event first
    rests: dict = {}     # input -> record (_Tally) of the certification outputs the selection pass drew
    for p in range(n_pairs):
        (xd, xdp), rest, rep = _draw_selection(target, samples, seed, p, n_sel, exe, say, reports)
        reps.append(rep)
        shape = xd.shape[1:] if shape is None else shape
        kind = ev.pair_kind(xd, xdp, target.output)
        kinds.append(kind)
        got = {xd.shape[1:], xdp.shape[1:], shape}
        if len(got) > 1:
            raise MechanismError(f"mechanism of target {target.name!r} returned outputs of different shapes "
                                 f"for different inputs: {sorted(map(str, got))}")
        split = {"D": ev.flat(xd), "D'": ev.flat(xdp)}
        del xd, xdp
        sorts: dict = {}     # the sorted selection outputs, shared by both tails and directions
        say(f"{target.name}: pair {p}: choosing events (both directions)")
        cands: dict = {}     # the candidate thresholds of each sorted selection score (ev.threshold_candidates)
        fits = {}            # direction -> (scorers, sorted selection scores)
        for direction, fitted in zip(DIRECTIONS, ev.selection_scores_both(split["D"], split["D'"], kind, sorts,
                                                                          pmap)):
            fits[direction] = ([f[0] for f in fitted], [f[1:] for f in fitted])
        # every candidate threshold of every sorted score, at once (what best_threshold searches depends on the
        # scores only: ev.threshold_candidates)
        todo = [sel for _, sel_scores in fits.values() for sel in sel_scores]
        for (sx, sy), found in zip(todo, pmap(lambda sel: ev.threshold_candidates(*sel), todo)):
            cands[id(sx), id(sy)] = (sx, sy, found)

        def choose(objectives, a_b, ladder=ev.SELECTION_LADDER):
            # the direction, family, threshold and (for the eps bound) the bound's method are all chosen
            # on the selection sample: only the winner is certified (one event, 2 a_b of alpha)
            # (with less pessimism about the selection estimates when nothing looks certifiable:
            # events.SELECTION_LADDER); returns (direction, scorer, t, method, projected value, index)
            for z_sel in ladder:
                best = None
                for objective in objectives:
                    for direction, (scorers, sel_scores) in fits.items():
                        for i, (sx, sy) in enumerate(sel_scores):
                            t, v, _, _ = ev.best_threshold(sx, sy, n_cert, a_b, objective, z_sel, cands)
                            if best is None or v > best[3]:
                                best = (direction, i, t, v, objective.kind)
                if best[3] > 0:
                    break
            direction, i, t, v, how = best
            return direction, fits[direction][0][i], t, ("odds" if how == "odds" else "cp"), v, i

        first = choose(lb_objectives, alpha_b)
        # a second eps-bound event where a less pessimistic reading of the selection sample prefers
        # another one (a rare event the bulk outprojects at SELECTION_Z): module docstring, "Rare events"
        rare = choose(lb_objectives, alpha_b * RARE_SHARE, (RARE_Z,))
        two = rare[4] > first[4] and (rare[0], rare[5], rare[2]) != (first[0], first[5], first[2])
        levels.append((alpha_b * (1 - RARE_SHARE), alpha_b * RARE_SHARE) if two else (alpha_b,))
        methods.append((first[3], rare[3]) if two else (first[3],))
        chosen.append([first[:3]]
                      + [choose([ev.Objective("difference", eps=e)], alpha_prof)[:3] for e in grid]
                      + ([rare[:3]] if two else []))
        del split, sorts, fits, cands
        pair_events = tuple((sc, t) for _, sc, t in chosen[-1])
        shown.append((0, len(grid) + 1) if two else (0,))
        for j, x in zip((2 * p, 2 * p + 1), rest):
            if len(x):
                tally = _Tally(pair_events, shown[-1])
                tally.add(ev.flat(x), 0)
                rests[j] = tally.record()
        del rest
    return reps, shape, kinds, chosen, levels, methods, shown, rests


def _selection_threads(workers: int, backend: str):
    """A thread pool for the event choice (one thread per local worker, at most one per core), or None for one
    worker or a remote backend (whose workers are not this machine's cores)."""
    import os
    from concurrent.futures import ThreadPoolExecutor
    n = min(int(workers), os.cpu_count() or 1) if backend == "local" else 1
    return ThreadPoolExecutor(n, thread_name_prefix="dpcheck-selection") if n > 1 else None


# ------------------------------------------------------------------ the audit
def audit(target: AuditTarget, samples: int = 10**6, alpha: float = 0.05, seed: int = 0, workers: int = 1,
          backend: str = "local", scheduler: str | None = None, progress: Callable[[str], None] | None = None,
          selection_fraction: float = SELECTION_FRACTION, cache_dir=None, event_bound: str = "cp") -> AuditResult:
    """Audit ``target`` black-box; returns an :class:`AuditResult` (see the module docstring).

    samples:            outputs per input of each pair, selection and certification together.
    alpha:              1 - confidence, split over every certified bound (module docstring).
    seed:               fixes everything; the chunking depends only on ``samples``, so any
                        ``workers`` / ``backend`` gives identical results.
    selection_fraction: share of each side's sample used to choose events, at most SELECTION_CAP
                        (2^20) per side. A quarter is our choice: the threshold objective is flat
                        near its optimum, so a smaller selection sample loses little while
                        certification precision grows. The cap bounds the memory the selection
                        holds; events of mass below ~10 / SELECTION_CAP are then hard to find.
    cache_dir:          if given, every finished chunk of selection outputs and every finished
                        block of certification counts is written there and read back by a later
                        run of the same computation (resume a long audit after an interruption;
                        the counts' key includes the events chosen). The key fingerprints the
                        mechanism's code, the values it closes over and the globals it reads,
                        the pairs, claim, samples, chunk layout, seed and versions
                        (:mod:`dpcheck.fingerprint`), so a changed mechanism never reuses chunks.
                        Each chunk also stores the files the mechanism opened for reading, with
                        their content hashes (:mod:`dpcheck.filereads`). A cached chunk that is
                        damaged (content hash), from another key, of the wrong length / shape /
                        dtype / values, or whose mechanism read a file that has changed since, is
                        recomputed and named in progress and in ``cache["recomputed"]``. A mechanism that cannot be fingerprinted
                        runs without the cache (``cache["disabled"]`` says why).

    event_bound:        how an eps-bound event is certified: "cp" (the default) with two Clopper-Pearson
                        bounds at alpha_b each; "best" lets the selection sample choose, per pair, between
                        those and the exact odds-ratio test at 2 alpha_b (:func:`dpcheck.stats.odds_eps_bound`),
                        whichever it projects higher (a higher bound at small budgets; a correct mechanism
                        that is tight at its claim then FAILs in up to alpha of seeds instead of ~0.3 %:
                        docs/blackbox_bounds.md). Profile points always use "cp".

    The anytime-valid sequential test (``--sequential``) is :func:`dpcheck.sequential.audit`, which takes
    these arguments plus ``sequential`` and comes back here when it is False.
    """
    if isinstance(target, AuditTarget) and target.search is not None:
        raise InputError(f"target {target.name!r} carries a PairSearch: audit it with dpcheck.audit (or "
                         "dpcheck.sequential.audit), which finds its pairs first (dpcheck.search)")
    samples = check_arguments(target, samples, seed, alpha, selection_fraction)
    if event_bound not in EVENT_BOUNDS:
        raise InputError(f"event_bound must be one of {', '.join(EVENT_BOUNDS)}, got {event_bound!r}")
    claim = target.claim
    n_pairs = len(target.pairs)
    plan = sample_plan(claim, samples, alpha, n_pairs, selection_fraction)
    n_sel, n_cert = plan.selection, plan.certification
    eps_claim, delta, grid = plan.epsilon, plan.delta, list(plan.grid)
    alpha_b, alpha_prof = plan.alpha_bound, plan.alpha_profile
    say = progress or (lambda msg: None)

    from dpcheck.limits import check_sampling_memory
    # refuse a run whose resident outputs (one pair's selection sample, the chunks in flight) cannot fit
    check_sampling_memory(target, samples,
                          lambda: cached_first_chunk(target, samples, seed, cache_dir),
                          selection=n_sel, workers=workers)
    say(f"{target.name}: drawing {samples} outputs per side for {n_pairs} pair(s) "
        f"({n_sel} to choose the events, {n_cert} to certify them)")
    exe = {"workers": workers, "backend": backend, "scheduler": scheduler, "cache_dir": cache_dir}
    reports: list = []
    ratio = ev.Objective("ratio", delta=delta)
    lb_objectives = [ratio] + ([ev.Objective("odds", delta=delta)] if event_bound == "best" else [])
    # the event choice runs in the main process while the workers wait; with more than one worker, its independent
    # sorts, fits and threshold searches run in as many threads (numpy releases the GIL in them; every job computes
    # what it computes alone, so the events are the same with any number of threads)
    threads = _selection_threads(workers, backend)
    pmap = threads.map if threads is not None else map
    try:
        chosen_all = _choose_all(target, samples, seed, n_pairs, n_sel, n_cert, alpha_b, alpha_prof, delta, grid,
                                 lb_objectives, exe, say, reports, pmap)
    finally:
        if threads is not None:
            threads.shutdown()
    reps, shape, kinds, chosen, levels, methods, shown, rests = chosen_all

    say(f"{target.name}: certifying {sum(map(len, chosen))} event(s) on {n_cert} outputs per side")
    events = tuple(tuple((sc, t) for _, sc, t in ch) for ch in chosen)
    n_bounds = 2 * sum(map(len, chosen))
    alpha_power = min(lv[0] for lv in levels)     # the budget's power at the lowest level of a first event
    # the budget's power depends on n_cert and the first events' level only (fixed once the events are chosen):
    # with workers, the main process (idle while they certify) computes it meanwhile, in a thread (a pure
    # function: the same value either way)
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(1) as pool:
        power_f = (pool.submit(stats.budget_detectable_epsilon, n_cert, alpha_power, eps_claim, delta, event_bound)
                   if workers > 1 or backend != "local" else None)
        counts, plot_scores, cell_counts = _certify_counts(target, samples, seed, n_sel, shape, events, shown,
                                                           tuple(reps), exe, say, reports, rests)
        power = (power_f.result() if power_f is not None
                 else stats.budget_detectable_epsilon(n_cert, alpha_power, eps_claim, delta, event_bound))
    cache_use = _merge_cache_reports(reports) if cache_dir is not None else None

    rows, prof, keep = [], [], {}
    for p, ch in enumerate(chosen):
        def side(direction):
            # (index of the input the event is likely under, the other)
            return (2 * p, 2 * p + 1) if direction == DIRECTIONS[0] else (2 * p + 1, 2 * p)

        row, certified = None, []
        offsets = np.cumsum([0] + [cell_size(ch[k][1]) for k in shown[p]])
        for s_idx, (e_idx, method, level) in enumerate(zip(shown[p], methods[p], levels[p])):
            direction, scorer, t = ch[e_idx]
            jx, jy = side(direction)
            kx, ky = int(counts[jx][e_idx]), int(counts[jy][e_idx])
            p_lo = float(stats.cp_lower(kx, n_cert, level))
            q_hi = float(stats.cp_upper(ky, n_cert, level))
            if method == "odds":
                # the event's two levels (2 level) spent on one exact odds-ratio test (stats.odds_eps_bound);
                # p_lo and q_hi above are then descriptive
                eps_lb = stats.odds_eps_bound(kx, ky, n_cert, 2 * level, delta)
            else:
                eps_lb = float(stats.eps_bound(p_lo, q_hi, delta))
            event_power = (stats.odds_detectable_epsilon(ky / n_cert, n_cert, 2 * level, eps_claim, delta)
                           if method == "odds" else stats.detectable_epsilon(ky / n_cert, n_cert, level, eps_claim,
                                                                              delta))
            event = scorer.describe(t)
            cand = {"pair": p, "direction": direction, "event": event["text"], "count_d": kx,
                    "count_dprime": ky, "n": n_cert, "p_lo": p_lo, "q_hi": q_hi,
                    "epsilon_lower_bound": max(eps_lb, 0.0), "event_power": event_power,
                    "bound_method": method, "alpha_event": level, "alpha_levels": list(levels[p])}
            certified.append({"event": cand["event"], "epsilon_lower_bound": cand["epsilon_lower_bound"],
                              "alpha_event": level, "bound_method": method})
            if row is None or cand["epsilon_lower_bound"] > row["epsilon_lower_bound"]:
                cut = slice(offsets[s_idx], offsets[s_idx + 1])
                raw = (cell_counts[jx][cut], cell_counts[jy][cut], n_cert) if cut.stop > cut.start else None
                win_event = (event, scorer, t, (plot_scores[jx][s_idx], plot_scores[jy][s_idx]), raw)
                row = cand
        row["events"] = certified
        rows.append(row)
        if not keep or row["epsilon_lower_bound"] > keep["eps_lb"]:
            keep = {"eps_lb": row["epsilon_lower_bound"], "plot": win_event}     # only the winner's plot data
        for g, e in enumerate(grid, start=1):
            d2, _, _ = ch[g]
            jx, jy = side(d2)
            kx2, ky2 = int(counts[jx][g]), int(counts[jy][g])
            p2 = float(stats.cp_lower(kx2, n_cert, alpha_prof))
            q2 = float(stats.cp_upper(ky2, n_cert, alpha_prof))
            hs = p2 - float(stats.exp_times(e, q2))
            allowed = claim.delta_at(e)
            prof.append({"pair": p, "direction": d2, "epsilon": e, "count_d": kx2,
                         "count_dprime": ky2, "delta_lower_bound": hs, "delta_claimed": allowed,
                         "exceeded": bool(hs > allowed)})

    win = max(range(len(rows)), key=lambda j: rows[j]["epsilon_lower_bound"])
    w = rows[win]
    eps_lb = w["epsilon_lower_bound"]
    event_power = min(r["event_power"] for r in rows)
    event, scorer, thr, (cx, cy), raw = keep["plot"]
    event = dict(event, count_d=w["count_d"], count_dprime=w["count_dprime"], n=n_cert,
                 p_lo=w["p_lo"], q_hi=w["q_hi"], bound_method=w["bound_method"])
    tight = tightness(eps_lb, eps_claim)
    power_ratio = power / eps_claim if eps_claim > 0 else math.inf
    exceeded = [r for r in prof if r["exceeded"]]
    conf, dtxt = reason_terms(alpha, delta)
    refuted = None
    if eps_lb > eps_claim:
        refuted = (f"eps >= {eps_lb:.4g}{dtxt} with {conf} confidence, above the claimed {eps_claim:.4g} "
                   f"(event {event['text']}, pair {w['pair']} {w['direction']})")
    elif exceeded:
        r = max(exceeded, key=lambda r: r["delta_lower_bound"] - r["delta_claimed"])
        refuted = (f"delta({r['epsilon']:.4g}) >= {r['delta_lower_bound']:.4g} with {conf} confidence, above "
                   f"the claimed profile's {r['delta_claimed']:.4g} (pair {r['pair']} {r['direction']})")
    verdict, reason = verdict_of(
        refuted, power, eps_claim,
        found=f"no violation found (eps_lb = {eps_lb:.4g}{dtxt}), but {samples} samples per side",
        passed=(f"eps_lb = {eps_lb:.4g}{dtxt} <= claimed {eps_claim:.4g} at {conf} (tightness {tight:.3g}; "
                f"would detect eps >= {power:.4g})"))
    plots = [_distribution_plot(event, scorer, thr, cx, cy, raw, w)]
    if grid:
        plots.append(_profile_plot(claim, prof, grid))
    return AuditResult(
        verdict=verdict, reason=reason, epsilon_lower_bound=eps_lb, confidence=1 - alpha, samples=samples,
        selection_samples=n_sel, certification_samples=n_cert, event=event, pair=w["pair"],
        direction=w["direction"], tightness=tight, power=power, power_ratio=power_ratio,
        event_power=event_power, claim=claim,
        epsilon_claimed=eps_claim, delta=delta, pairs_table=tuple(rows), profile=tuple(prof), alpha=alpha,
        alpha_per_bound=alpha_b, alpha_per_profile_bound=alpha_prof, n_bounds=n_bounds, seed=seed,
        output_kind=kinds[w["pair"]], target=target.name,
        plots=tuple(plots), cache=cache_use)


# ------------------------------------------------------------------ plots (docs/interfaces.md "Plots")
def _distribution_plot(event, scorer, t, cx, cy, raw, row, bins: int = 80) -> dict:
    """The chosen event's statistic under D and D' (certification sample), a few hundred points.

    cx, cy: the event's scores of the first PLOT_SAMPLES certification outputs of each side; raw: for
    a cell event, (cell counts under the first side, under the second, certification sample size)."""
    first, second = ("D", "D'") if row["direction"] == "D->D'" else ("D'", "D")
    title = f"pair {row['pair']}: {event['text']}"
    if isinstance(scorer, ev.CellScorer):
        # cell probabilities of the (at most 40) most frequent cells, sorted by likelihood ratio
        ccx, ccy, n = raw
        px, py = ccx / n, ccy / n
        top = np.argsort(-(px + py), kind="stable")[:40]
        top = top[np.argsort(-scorer.log_ratio[top], kind="stable")]
        labels = [str(_short(ev._label(scorer.labels[i]))) for i in top]
        return {"title": title, "xlabel": "cell (sorted by estimated likelihood ratio)", "ylabel": "probability",
                "logx": False, "logy": False, "kind": "bar",
                "series": [{"label": first, "x": labels, "y": px[top]},
                           {"label": second, "x": labels, "y": py[top]}]}
    # a subsample fixes the plotting range (the plot is illustrative; keeps large audits cheap)
    cx, cy = cx[:PLOT_SAMPLES], cy[:PLOT_SAMPLES]
    fin = np.concatenate([cx[np.isfinite(cx)], cy[np.isfinite(cy)]])
    lo, hi = np.quantile(fin, [0.0005, 0.9995]) if fin.size else (0.0, 1.0)
    if np.isfinite(t):                     # an empty event ("statistic >= inf") has no threshold to show
        lo, hi = min(lo, t), max(hi, t)
    if hi <= lo:
        hi = lo + 1.0
    edges = np.linspace(lo, hi, bins + 1)
    centres = 0.5 * (edges[1:] + edges[:-1])
    sign = -1 if event.get("tail") == "lower" else 1
    hx = np.histogram(cx, edges)[0] / cx.shape[0]
    hy = np.histogram(cy, edges)[0] / cy.shape[0]
    x = sign * centres
    order = np.argsort(x)
    return {"title": title, "xlabel": event.get("statistic", "score"), "ylabel": "fraction of samples (log)",
            "logx": False, "logy": True, "kind": "hist",
            "series": [{"label": first, "x": x[order], "y": hx[order]},
                       {"label": second, "x": x[order], "y": hy[order]}],
            "threshold": event.get("threshold")}


def _short(v):
    return v if not isinstance(v, (list, tuple)) or len(v) <= 6 else list(v[:6]) + ["..."]


def _profile_plot(claim: Claim, prof: list, grid: list) -> dict:
    """Claimed delta(eps) against the certified lower bounds at the tested eps."""
    emax = max(max(grid) * 1.5, 0.1)
    xs = np.linspace(0, emax, 60)
    best = [max((r["delta_lower_bound"] for r in prof if r["epsilon"] == e), default=0.0) for e in grid]
    return {"title": "privacy profile: claimed delta(eps) vs certified lower bounds",
            "xlabel": "eps", "ylabel": "delta", "logx": False, "logy": True, "kind": "line",
            "series": [{"label": "claimed delta(eps)", "x": xs, "y": [claim.delta_at(float(e)) for e in xs]},
                       {"label": "certified lower bound", "x": list(grid), "y": [max(b, 1e-12) for b in best]}]}
