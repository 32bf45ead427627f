"""Input search: find the neighbouring pair to audit instead of being given it (docs/input_search.md).

A black-box audit certifies a lower bound on epsilon for the pairs (D, D') it is given, so a leak that
shows only at inputs nobody thought of is never seen. An :class:`AuditTarget` may instead (or as well)
carry a :class:`PairSearch`: a *domain* of neighbouring pairs -- a function ``domain(rng) -> (D, D')``
or a hypothesis strategy of ``(D, D')`` tuples -- from which dpcheck draws candidates, estimates each
one's privacy loss on outputs of their own, and hands the most promising to the audit.

Validity. The search draws its outputs from a seed stream of its own (``SeedSequence([seed, SEARCH_TAG])``,
whose entropy differs from the audit's ``SeedSequence(seed)``), so the pairs it chooses are a function of
samples independent of every output the audit selects events on or certifies with. Conditional on the
chosen pairs, the audit is the fixed-pair audit, whose bound holds with probability >= 1 - alpha; so it
does unconditionally. The winner's curse of the search (the chosen pair looked worst by chance) costs
power, never validity. What the search needs from the user: every pair the domain yields is a pair of
neighbouring inputs under the claim's notion (dpcheck cannot check that).

The estimate a candidate is ranked by is the bound its best event would certify at the audit's own
certification size and per-bound alpha, computed on the candidate's search outputs with the black box's
own event families and pessimistic projection (:func:`dpcheck.events.best_threshold`): a pair whose leak
needs a rarer event than the audit can certify ranks below one whose leak it can.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from dpcheck import blackbox as bb
from dpcheck import events as ev
from dpcheck.errors import InputError, MechanismError
from dpcheck.target import PairSearch, _is_strategy, same_input  # noqa: F401  (PairSearch: dpcheck.search.PairSearch too)

SEARCH_TAG = 0x5EA2C4        # the search's seed stream: SeedSequence([seed, SEARCH_TAG])


def _short(x, limit: int = 80) -> str:
    text = np.array2string(x, threshold=20, separator=",") if isinstance(x, np.ndarray) else repr(x)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _as_pair(obj, where: str):
    if not (isinstance(obj, (tuple, list)) and len(obj) == 2):
        raise InputError(f"the search domain returned {type(obj).__name__} at {where}, not a (D, D') pair")
    return tuple(obj)


def estimate(target, pair, rng_d, rng_dp, samples: int, n_cert: int, alpha_bound: float, delta: float) -> tuple:
    """(projected certified bound, plug-in bound) of ``pair`` on ``samples`` fresh outputs per side: the
    bound its best event (every event family, both directions) would certify at ``n_cert`` and
    ``alpha_bound``, with the black box's pessimistic selection projection, and the same with none (z = 0,
    which ranks pairs whose projected bound is -inf for all)."""
    d, dp = pair
    xs = ev.flat(np.asarray(target.sample(d, rng_d, samples)))
    ys = ev.flat(np.asarray(target.sample(dp, rng_dp, samples)))
    kind = ev.pair_kind(xs, ys, target.output)          # from both sides, as the audit decides it
    ratio = ev.Objective("ratio", delta=delta)
    best = [-math.inf, -math.inf]
    cache: dict = {}
    cands: dict = {}
    for fitted in ev.selection_scores_both(xs, ys, kind, cache):
        for _, sa, sb in fitted:
            for i, z in enumerate((None, 0.0)):
                _, value, _, _ = ev.best_threshold(sa, sb, n_cert, alpha_bound, ratio, z, cands)
                best[i] = max(best[i], value)
    return best[0], best[1]


def search_pairs(target, samples: int, alpha: float, seed: int, selection_fraction: float, progress=None) -> tuple:
    """(pairs to audit: the target's own then the best found, the search record for the report)."""
    s: PairSearch = target.search
    say = progress or (lambda msg: None)
    n_final = len(target.pairs) + s.keep
    plan = bb.sample_plan(target.claim, samples, alpha, n_final, selection_fraction)
    root = np.random.SeedSequence([int(seed), SEARCH_TAG])
    draw_seq, *out_seqs = root.spawn(1 + 2 * s.candidates)
    found: list = []                 # (projected, plug-in, index, pair)
    identical = [0]                  # candidates with D == D' (nothing to see: skipped, counted in the record)

    def evaluate(pair):
        i = len(found)
        if i >= s.candidates:
            return None
        if same_input(*pair):
            identical[0] += 1
            return -math.inf, -math.inf
        proj, plug = estimate(target, pair, np.random.default_rng(out_seqs[2 * i]),
                              np.random.default_rng(out_seqs[2 * i + 1]), s.samples, plan.certification,
                              plan.alpha_bound, plan.delta)
        found.append((proj, plug, i, pair))
        if (i + 1) % max(1, s.candidates // 8) == 0 or i + 1 == s.candidates:
            say(f"{target.name}: input search: {i + 1}/{s.candidates} candidate pairs estimated")
        return proj, plug

    say(f"{target.name}: input search: {s.describe()}")
    engine = None
    if _is_strategy(s.domain):
        engine = _explore_strategy(s, evaluate, int(root.generate_state(1)[0]))
    else:
        rng = np.random.default_rng(draw_seq)
        for k in range(s.candidates):
            try:
                pair = s.domain(rng)
            except Exception as e:
                raise MechanismError(f"the search domain of target {target.name!r} raised "
                                     f"{type(e).__name__}: {e}") from e
            evaluate(_as_pair(pair, f"candidate {k}"))
    if not found:
        what = (f"only pairs with D == D' ({identical[0]})" if identical[0] else "no candidate pair")
        raise InputError(f"the search domain of target {target.name!r} yielded {what}")
    ranked = sorted(found, key=lambda r: (-r[0], -r[1], r[2]))
    chosen = ranked[:s.keep]
    record = {
        "method": "input search: candidates drawn from the target's domain, each estimated on outputs from "
                  "an independent seed stream (never used to choose or certify events), ranked by the "
                  "bound its best event would certify at the audit's certification size",
        "domain": s.describe(), "candidates": len(found), "samples_per_side": s.samples,
        "search_outputs": 2 * len(found) * s.samples, "seed_stream": f"SeedSequence([{int(seed)}, {SEARCH_TAG}])",
        "given_pairs": len(target.pairs), "identical_skipped": identical[0],
        "chosen": [{"audited_pair": len(target.pairs) + j, "candidate": r[2], "estimate": _finite(r[0]),
                    "plug_in_estimate": _finite(r[1]), "D": _short(r[3][0]), "D'": _short(r[3][1])}
                   for j, r in enumerate(chosen)],
        "top": [{"candidate": r[2], "estimate": _finite(r[0]), "plug_in_estimate": _finite(r[1])}
                for r in ranked[:10]],
    }
    if engine is not None:
        record["hypothesis"] = engine
    return list(target.pairs) + [r[3] for r in chosen], record


def _finite(x: float):
    return None if not math.isfinite(x) else round(float(x), 6)


def _explore_strategy(s: PairSearch, evaluate: Callable, seed: int) -> dict:
    """Candidates from a hypothesis strategy: hypothesis generates them (deterministically from ``seed``,
    :func:`dpcheck.hypothesis_search.explore`) and ``hypothesis.target`` steers it towards pairs with a
    larger estimated loss. Returns the search's provenance."""
    from hypothesis import Phase, target as steer
    from dpcheck.hypothesis_search import explore
    errors: list = []

    def run(pair):
        if errors:
            return
        try:
            out = evaluate(_as_pair(pair, "a hypothesis example"))
        except Exception as e:            # reported after hypothesis returns, not as a falsifying example
            errors.append(e)
            return
        if out is not None:
            proj, plug = out
            steer(float(np.clip(proj if math.isfinite(proj) else -1.0, -1.0, 1e6)), label="projected bound")
            steer(float(np.clip(plug if math.isfinite(plug) else -1.0, -1.0, 1e6)), label="plug-in bound")

    engine = explore(run, s.domain, examples=s.candidates, seed=seed, phases=(Phase.generate, Phase.target))
    if errors:
        e = errors[0]
        if isinstance(e, (InputError, MechanismError)):
            raise e
        raise MechanismError(f"the search over a hypothesis strategy raised {type(e).__name__}: {e}") from e
    return engine
