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

The built-in audits' mechanisms are this repository's own, tested code whose single calls can cost a
whole RL run each; they are not probed (dpcheck.audit.ExecutionOptions.audit passes probe=False).
"""
from __future__ import annotations

import numpy as np

from dpcheck.errors import MechanismError
from dpcheck.loading import probe_rng_use

PROBE_TAG = 0x9B0BE           # the probe's seed stream: SeedSequence([seed, PROBE_TAG])
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


__all__ = ["MAX_COORDINATES", "PROBE_LEVEL", "PROBE_SIZE", "PROBE_TAG", "batch_vs_single_p", "probe_target"]
