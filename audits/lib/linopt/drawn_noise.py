"""The noise the LinOpt Privatizer DRAWS, against the trees it declares (Zhou 2022, Section 6.1, proof of Thm 6.4).

``whitebox.dp_event`` and ``whitebox.calibration`` read the declared trees (``trees(sizes)``: node std sigma_c);
``whitebox.tree_noise_reuse`` measures the drawn noise at H = 1, d1 = d2 = 2 and K <= 16, each counter kind on
its own; the release black box carries a fraction of the worst case (uninformative even on correct code). Noise
drawn for step h = 1 only (the Gram matrices and vectors of steps 2..H released exactly), one draw shared by
the H step counters, tree levels >= 4 left without noise, or the vector node's noise a rescaled column of the
Gram node's draw: all passed them. This module measures the noise of the releases themselves through the
regulariser interface (``start`` / ``observe`` / ``release``, ``shift_p`` / ``shift_r``) at the instance's
H, d1, d2 and over every tree level up to the largest K the audit runs.

All items are zero (the noise is data-independent, Section 6.1), so a release minus its shift is its noise
e_t = B~(t) - B(t). It is read after t insertions for t in
:func:`dpcheck.audits.lib.privatizers.drawn_noise.release_times` (closed under t -> t - lowbit(t)); the node
of level j = log2 lowbit(t) completed at t is node_t = e_t - e_{t - lowbit(t)}, declared N(0, sigma_c^2) per
entry (matrix counters: every upper-triangle entry, diagonal included, one draw; footnote 3). Standardised by
sigma_c, every coordinate (counter kind c, step h, entry) of every node has variance 1 and the coordinates
are independent (the DpEvent composes one Gaussian mechanism per entry, Thm 6.4).

* ``whitebox.noise_scale``: the ratio measured / declared variance per (counter kind, tree level), per
  (counter kind, step h), per tree level, per counter kind, per coordinate and of all nodes together, each a
  mean of squares with a normal interval (:func:`dpcheck.audits.lib.privatizers.drawn_noise.variance_ratio`: the
  larger of the squares' own spread and their declared spread). FAIL when one interval at the audit's alpha,
  Bonferroni over every ratio tested, lies wholly below 1 (less noise than declared) or above
  1 + VARIANCE_TOLERANCE; PASS needs the pooled ratio certified within [1 - VARIANCE_RESOLUTION,
  1 + VARIANCE_TOLERANCE] and every level, (kind, step) and coordinate ratio certified >= 1 - GROUP_RESOLUTION
  (the (kind, level) ratios of the top levels hold a few hundred squares: they can FAIL, not block a PASS).
* ``whitebox.noise_independence``: every pair of the coordinates (Gram upper triangles and vectors of the four
  kinds at every step) by :func:`dpcheck.audits.lib.privatizers.correlation_screen` (Bonferroni over the
  pairs, tolerance 0.1): a draw shared across steps or across kinds is a noise-free contrast of two released
  coordinates. A coordinate with no noise at all is listed as flat there and FAILs noise_scale.
"""
from __future__ import annotations

import numpy as np

from dpcheck.checks import INCONCLUSIVE, PASS, Check
from dpcheck.audits.lib.linopt.spec import SOURCE, LinOptSpec, sizes_for
from dpcheck.audits.lib.linopt.privacy import tree_based, drawn_trees, not_tree_based

LINOPT_NOISE_RUNS = 64          # the cost is K observe() calls (~60 us each at H = 3, d = 2), nearly flat in the runs


def noise_nodes(spec: LinOptSpec, sizes, *, runs: int = LINOPT_NOISE_RUNS, seed: int = 0) -> dict | None:
    """The standardised node noise of ``runs`` runs of the Privatizer over ``sizes.insertions`` zero items.

    Returns {"Z": (nodes, runs, C), "level": (nodes,), "kind": (C,) index into COUNTERS, "step": (C,) h,
    "labels": C names, "times", "sigma": {c: sigma_c}, "law": 1 (Gaussian) or 2 (Laplace b)}; None when the
    privatizer draws from no declared trees."""
    from dpcheck.algorithms.linear import COUNTERS
    from dpcheck.audits.lib.privatizers.drawn_noise import release_times
    priv = spec.privatizer()
    # the paper's Privatizer and its variants (privatizer_class: one that overrides start is what this measures)
    # declare their trees; a plug-in only when it draws from them
    trees = priv.trees(sizes) if spec.plugin is None else drawn_trees(priv, sizes)
    if trees is None:
        return None
    if any(t.node_scale <= 0 for t in trees.values()):
        return None
    laws = {t.noise for t in trees.values()}
    law = 1.0 if laws == {"gaussian"} else 2.0 if laws == {"laplace"} else None
    if law is None:
        return None
    H, d1, d2 = sizes.H, sizes.d1, sizes.d2
    state = priv.start(runs, sizes, np.random.default_rng([seed, 7]), spec.alpha)
    zeros = (np.zeros((runs, H, d1)), np.zeros((runs, H)), np.zeros((runs, H, d2)), np.zeros((runs, H)))
    iu = {"p1": np.triu_indices(d1), "r1": np.triu_indices(d2)}
    T = release_times(sizes.insertions)
    read_at = set(T.tolist())
    err = {}
    for t in range(1, sizes.insertions + 1):
        state.observe(*zeros)
        if t in read_at:
            Lp, up, Lr, ur = state.release()
            parts = {"p1": Lp - state.shift_p * np.eye(d1), "p2": up, "r1": Lr - state.shift_r * np.eye(d2),
                     "r2": ur}
            err[t] = np.concatenate([(parts[c][..., iu[c][0], iu[c][1]] if c in iu else parts[c]).reshape(runs, -1)
                                     / np.sqrt(law * trees[c].node_scale ** 2) for c in COUNTERS], axis=1)
    nodes, levels = [], []
    for t in T.tolist():
        low = t & -t
        nodes.append(err[t] - err[t - low] if t - low else err[t])
        levels.append(low.bit_length() - 1)
    kind, step, labels = [], [], []
    for k, c in enumerate(COUNTERS):
        entries = ([f"({p},{q})" for p, q in zip(*iu[c])] if c in iu else
                   [f"({p})" for p in range(d1 if c == "p2" else d2)])
        for h in range(H):
            kind += [k] * len(entries)
            step += [h] * len(entries)
            labels += [f"{c}[h={h + 1}]{e}" for e in entries]
    return {"Z": np.stack(nodes), "level": np.array(levels), "kind": np.array(kind), "step": np.array(step),
            "labels": labels, "times": T.tolist(), "law": law,
            "sigma": {c: float(t.node_scale) for c, t in trees.items()}}


def noise_law_checks(spec: LinOptSpec, env, K: int, *, runs: int = LINOPT_NOISE_RUNS, seed: int = 0,
                     alpha: float = 0.05) -> list:
    """[whitebox.noise_scale, whitebox.noise_independence] at the instance's H, d1, d2 over the tree of K - 1
    insertions (module docstring)."""
    sizes = sizes_for(env, K)
    src = f"{SOURCE}, Section 6.1, proof of Thm 6.4; drawn noise vs declared trees (docs/private_linopt.md)"
    if not tree_based(spec, spec.privatizer()):
        return [not_tree_based(i, spec, "the noise drawn has the declared trees' scale and is independent")
                for i in ("whitebox.noise_scale", "whitebox.noise_independence")]
    nodes = noise_nodes(spec, sizes, runs=runs, seed=seed)
    if nodes is None:
        return [Check(id=i, kind="whitebox", verdict=INCONCLUSIVE, measured={"confidence": None}, details={},
                      claim={"statement": "the noise drawn has the declared trees' scale", "source": src},
                      reason="the privatizer declares no noisy Gaussian / Laplace trees for these sizes (noise off "
                             "or no trees): nothing to hold the drawn noise to")
                for i in ("whitebox.noise_scale", "whitebox.noise_independence")]
    shape = f"H={sizes.H}, d1={sizes.d1}, d2={sizes.d2}, K={sizes.K}"
    return [_scale_check(nodes, alpha=alpha, source=src, shape=shape),
            _independence_check(nodes, alpha=alpha, source=src, shape=shape)]


def _scale_check(nodes: dict, *, alpha: float, source: str, shape: str) -> Check:
    from scipy.stats import norm
    from dpcheck.algorithms.linear import COUNTERS
    from dpcheck.stats import pass_alpha
    from dpcheck.audits.lib.privatizers.drawn_noise import GROUP_RESOLUTION, ratio_rule, variance_ratio
    from dpcheck.audits.lib.privatizers.whitebox import VARIANCE_RESOLUTION, VARIANCE_TOLERANCE
    Z = nodes["Z"]
    sq = Z * Z                                                            # (nodes, runs, C)
    null = np.full(sq.shape, 5.0 if nodes["law"] == 2.0 else 2.0)       # Var(Z^2): Gaussian 2, Laplace node 5
    lv, kd, st = nodes["level"], nodes["kind"], nodes["step"]
    levels, kinds, steps = sorted(set(lv.tolist())), sorted(set(kd.tolist())), sorted(set(st.tolist()))
    # (name, node mask, coordinate mask, needed for a PASS)
    groups = ([(f"{COUNTERS[k]} level {j}", lv == j, kd == k, False) for k in kinds for j in levels] +
              [(f"{COUNTERS[k]} step h={h + 1}", lv >= 0, (kd == k) & (st == h), True) for k in kinds for h in steps] +
              [(f"level {j}", lv == j, kd >= 0, True) for j in levels] +
              [(f"counter {COUNTERS[k]}", lv >= 0, kd == k, True) for k in kinds] +
              [(f"coordinate {lab}", lv >= 0, np.arange(len(kd)) == i, True) for i, lab in enumerate(nodes["labels"])])
    m = len(groups) + 1
    z_fail = float(norm.ppf(1 - alpha / (2 * m)))
    z_pass = float(norm.ppf(1 - pass_alpha(alpha) / (2 * m)))
    rat = [(n, variance_ratio(sq[a][:, :, b], null[a][:, :, b], z_fail, z_pass), need) for n, a, b, need in groups]
    pooled = variance_ratio(sq, null, z_fail, z_pass)
    ruled = ratio_rule(rat, ("all nodes", pooled), alpha=alpha, m=m, against="the declared trees",
                       ratio="variance / sigma_c^2")
    if ruled is not None:
        verdict, reason = ruled
    else:
        verdict, reason = PASS, (f"node noise drawn at {shape} over {len(levels)} tree levels has the declared "
                                 f"variance: all nodes {pooled['ratio']:.4f}, every level / (kind, step) / coordinate "
                                 f">= {1 - GROUP_RESOLUTION:g}")
    return Check(id="whitebox.noise_scale", kind="whitebox", verdict=verdict,
                 claim={"statement": f"the tree node noise drawn at {shape} has the declared variance sigma_c^2 "
                                     "per entry at every tree level, step h, counter kind and coordinate",
                        "source": source},
                 measured={"pooled_ratio": pooled["ratio"], "tests": m, "levels": len(levels),
                           "confidence": 1 - alpha, "samples": pooled["samples"], "epsilon_lower_bound": None},
                 details={"ratios": {n: v["ratio"] for n, v, _ in rat}, "pooled": pooled, "sigma": nodes["sigma"],
                          "release_times": nodes["times"], "z_fail": z_fail, "z_pass": z_pass,
                          "rule": f"FAIL: an interval (alpha / {m} two-sided) below 1 or above 1 + "
                                  f"{VARIANCE_TOLERANCE:g}; PASS: pooled within [1 - {VARIANCE_RESOLUTION:g}, 1 + "
                                  f"{VARIANCE_TOLERANCE:g}], each level / (kind, step) / coordinate >= "
                                  f"1 - {GROUP_RESOLUTION:g}"},
                 reason=reason)


def _independence_check(nodes: dict, *, alpha: float, source: str, shape: str) -> Check:
    from dpcheck.audits.lib.privatizers.drawn_noise import screen_verdict
    from dpcheck.audits.lib.privatizers.whitebox import correlation_screen
    Z = nodes["Z"]
    W = Z.reshape(-1, Z.shape[2])
    scr = correlation_screen(W, nodes["labels"], alpha=alpha)
    verdict, reason = screen_verdict(scr, shared="node noise")
    if scr["flat"] and verdict == PASS:
        reason += f"; {len(scr['flat'])} coordinates carry no noise (whitebox.noise_scale judges them)"
    return Check(id="whitebox.noise_independence", kind="whitebox", verdict=verdict,
                 claim={"statement": f"independent node noise for every released coordinate ({shape}): no two "
                                     "steps h, counter kinds (Gram entries vs vector entries) or entries share a draw",
                        "source": source},
                 measured={"pairs": scr["pairs"], "samples": int(W.shape[0]), "confidence": 1 - alpha,
                           "epsilon_lower_bound": None},
                 details={**scr, "rows": "tree nodes (differences of releases), standardised by sigma_c"},
                 reason=reason)
