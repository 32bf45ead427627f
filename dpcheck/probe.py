"""Before a user's AuditTarget is audited: is its mechanism what the black box assumes it is?

The black box (dpcheck.blackbox) draws outputs in seeded batches of CHUNK and treats them as
independent releases of one call each. Two ways a mechanism can break that and make every bound
meaningless, caught here on a few hundred outputs drawn from a seed stream of their own (the audit's
draws are untouched):

- its outputs are not a function of the generator it is given (numpy's global state, its own
  generator, the clock, or a fixed seed of its own): the chunks are then neither reproducible nor,
  with a fixed seed, independent (the selection sample reappears in the certification sample);
- outputs drawn one per call have another law than outputs drawn in a batch (noise centred over the
  batch, one noise scale drawn per call): the audit would certify the batch, not the release. Each
  of up to MAX_COORDINATES coordinates of PROBE_SIZE single-call outputs is compared with a batch of
  PROBE_SIZE by a two-sample test (Kolmogorov-Smirnov for numbers, chi-square for labels),
  Bonferroni at PROBE_LEVEL over the coordinates: a correct mechanism is refused with probability
  at most PROBE_LEVEL; a batch-centred mechanism (exact at size 1) gives p ~ 1e-23.

The built-in audits' mechanisms are this repository's own code whose single calls can cost a whole RL run each: they
are not refused as bad input. Their generator use is still a finding about the implementation under audit (a
privatizer seeding its own noise, ``default_rng(0)``, releases the same noise on every call: the noise is public,
and the black box's chunks repeat each other). :func:`rng_finding` (dpcheck.audit.ExecutionOptions.audit passes
``probe="rng"``) draws RNG_ROWS outputs of the first pair's D from two independent generators of a stream of its
own. An honest mechanism draws its randomness from the generator, so the two draws are independent, and the second
repeats the first with probability the product of the first's rows' probabilities. At most one output has
probability above 1/2, and it is at most as frequent in the draw as its most common row; so if k rows differ from
the most common row, at least k rows have probability at most 1/2, and the chance is at most 2^-k. Identical draws
with k >= RNG_MIN_VARYING (chance <= 2^-20 ~ 1e-6) mean the outputs do not depend on the generator; then D' is drawn
from the same two generators. If its outputs differ from D's, the mechanism is, as far as its randomness (the
generator) goes, a deterministic function of the data that tells D from D': no epsilon holds, FAIL. If they are D's,
nothing distinguishes the pair, but the audit's samples are one sample repeated: INCONCLUSIVE. Nearly constant
outputs (k < RNG_MIN_VARYING) prove nothing either way; nor does an output that depends on the generator only in
part (an agent's tie-breaking beside a privatizer's fixed noise: the privatizer's own black box sees that one).
"""
from __future__ import annotations

import numpy as np

from dpcheck.errors import MechanismError
from dpcheck.loading import probe_rng_use

PROBE_TAG = 0x9B0BE           # the probe's seed stream: SeedSequence([seed, PROBE_TAG])
RNG_TAG = 0x9B0BF             # rng_finding's seed stream: SeedSequence([seed, RNG_TAG])
RNG_ROWS = 64                 # outputs per draw of rng_finding
RNG_MIN_VARYING = 20          # rows off the most common one for identical draws to count (chance <= 2^-20)
PROBE_SIZE = 200              # outputs per side of the batch-vs-single comparison
PROBE_LEVEL = 1e-6            # family-wise level of the comparison
MAX_COORDINATES = 16


def probe_target(target, seed: int = 0) -> None:
    """MechanismError when ``target``'s mechanism ignores its generator or draws batches with another law
    than single calls (module docstring), on the first input of its first pair; nothing to do without a
    pair (a search target is probed on the pair its search found)."""
    if not target.pairs:
        return
    d = target.pairs[0][0]
    same, other, batch, *singles = np.random.SeedSequence([int(seed), PROBE_TAG]).spawn(3 + PROBE_SIZE)
    who = f"mechanism of target {target.name!r}"
    probe_rng_use(lambda rng: target.sample(d, rng, 64), (same, other),
                  nondeterministic=f"{who} gave different outputs for the same rng seed: it draws from numpy's "
                                   "global state, a generator of its own or the clock; draw every random number "
                                   "from the rng argument, or the audit is neither reproducible nor valid",
                  ignores=f"{who} gave the same random outputs for different rng seeds (a fixed seed of its own?): "
                          "the audit's chunks would repeat each other; draw from the rng argument",
                  conclusive=_surely_random)
    if target.per_call:          # one call per output already
        return
    many = target.sample(d, np.random.default_rng(batch), PROBE_SIZE)
    one = np.concatenate([target.sample(d, np.random.default_rng(s), 1) for s in singles])
    p = batch_vs_single_p(many, one)
    if p < PROBE_LEVEL:
        raise MechanismError(f"{who}: outputs drawn one per call differ in law from outputs drawn in a batch "
                             f"(p = {p:.2g} over {PROBE_SIZE} of each): the audit draws batches, but a release "
                             "is one call; make each output independent of the batch size (e.g. no centring or "
                             "scale shared across the batch)")


def rng_finding(target, seed: int = 0) -> dict | None:
    """What a built-in target's generator use shows (module docstring): None when the outputs of its first pair's D
    depend on the generator (or are too nearly constant to tell); else ``{"verdict": "fail" | "inconclusive",
    "reason": ..., "rows": RNG_ROWS, "varying_rows": k, "chance": 2^-k}``."""
    if not target.pairs:
        return None
    d, dp = target.pairs[0][0], target.pairs[0][1]
    a, b = np.random.SeedSequence([int(seed), RNG_TAG]).spawn(2)

    def draw(x, ss):
        return target.sample(x, np.random.default_rng(ss), RNG_ROWS)
    first, second = draw(d, a), draw(d, b)
    k = varying_rows(first)
    if k < RNG_MIN_VARYING or not _same(first, second):
        return None
    found = {"rows": RNG_ROWS, "varying_rows": k, "chance": 2.0 ** -k,
             "what": f"{RNG_ROWS} outputs of D drawn from two independent generators"}
    why = (f"two independent generators gave the same {RNG_ROWS} outputs of D ({k} of them off the most common "
           f"output: chance <= 2^-{k} for a mechanism that draws from its generator): its randomness does not come "
           "from the generator (a fixed seed of its own, or stored noise), so its noise is fixed")
    other, other2 = draw(dp, a), draw(dp, b)
    if _same(other, first):
        return found | {"verdict": "inconclusive", "reason": why + "; D' gave the same outputs, so this pair shows "
                        "no leak, but the audit's samples repeat one draw and certify nothing"}
    fixed = _same(other, other2)
    return found | {"verdict": "fail", "d_prime_fixed": fixed,
                    "reason": why + "; D' gave other outputs" + (" (the same for both generators)" if fixed else "")
                    + ": given the data the release is determined, and it tells D from D' (no epsilon holds)"}


def varying_rows(out: np.ndarray) -> int:
    """Rows of ``out`` (one output per row) that differ from its most common row."""
    rows = np.asarray(out).reshape(len(out), -1)
    keys = [tuple(r.tolist()) for r in rows]
    from collections import Counter
    return len(keys) - max(Counter(keys).values()) if keys else 0


def _same(x: np.ndarray, y: np.ndarray) -> bool:
    x, y = np.asarray(x), np.asarray(y)
    return x.shape == y.shape and x.dtype == y.dtype and bool(np.array_equal(x, y))


def with_rng_finding(res, finding: dict | None):
    """``res`` (a black-box result) with :func:`rng_finding`'s verdict and reason when there is a finding (its own
    figures stay, and describe samples that repeat one draw) and the finding in ``rng_probe``."""
    if finding is None:
        return res
    from dataclasses import replace
    return replace(res, verdict=finding["verdict"], reason=finding["reason"], rng_probe=dict(finding))


def _surely_random(out: np.ndarray) -> bool:
    """Whether two independent draws of ``out`` could not plausibly coincide: their chance to, estimated by the
    plug-in collision probability c = sum_x p(x)^2 of the outputs, c^n, is below 1e-9 (a label released with
    probability 0.99 coincides in a quarter of 64-output draws, and proves nothing)."""
    rows = out.reshape(out.shape[0], -1)
    _, counts = np.unique(rows, axis=0, return_counts=True)
    c = float(np.sum((counts / rows.shape[0]) ** 2))
    return counts.size > 1 and rows.shape[0] * np.log(c) < np.log(1e-9)


def batch_vs_single_p(many: np.ndarray, one: np.ndarray) -> float:
    """Bonferroni p-value of "same law" over the first MAX_COORDINATES coordinates of two samples of outputs:
    two-sample Kolmogorov-Smirnov for numbers (conservative with ties), chi-square of the label counts for
    labels."""
    from scipy import stats as st
    a, b = many.reshape(many.shape[0], -1), one.reshape(one.shape[0], -1)
    k = min(a.shape[1], MAX_COORDINATES)
    ps = []
    for j in range(k):
        x, y = a[:, j], b[:, j]
        if x.dtype.kind in "US":
            labels, codes = np.unique(np.concatenate([x, y]), return_inverse=True)
            if labels.size < 2:
                ps.append(1.0)
                continue
            table = np.stack([np.bincount(codes[:x.size], minlength=labels.size),
                              np.bincount(codes[x.size:], minlength=labels.size)])
            ps.append(float(st.chi2_contingency(table)[1]))
        else:
            # the asymptotic law: the exact one warns (and gives up) on the ties of integer outputs
            ps.append(float(st.ks_2samp(x.astype(float), y.astype(float), method="asymp").pvalue))
    return min(1.0, k * min(ps))


__all__ = ["MAX_COORDINATES", "PROBE_LEVEL", "PROBE_SIZE", "PROBE_TAG", "RNG_MIN_VARYING", "RNG_ROWS", "RNG_TAG",
           "batch_vs_single_p", "probe_target", "rng_finding", "varying_rows", "with_rng_finding"]
