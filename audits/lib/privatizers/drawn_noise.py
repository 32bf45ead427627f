"""The noise an online count privatizer DRAWS, against the scale it declares (Qiao & Wang 2023, Lemmas 5.1 / 5.6).

``whitebox.dp_event`` and ``whitebox.sensitivity`` read the declaration (``declare()``: scale b, DpEvent); the
black boxes run at H = 1, A = 1, K = 2; ``whitebox.tree_noise_reuse`` at H = 1 and K <= 16. Noise drawn for
H = 1 at every horizon (H x the claimed eps), a tree whose levels beyond 16 episodes carry less or no noise,
one draw shared by the actions of a state or by two count families (a noise-free contrast of two released
coordinates), a release that sums the raw rewards instead of the messages: all passed them. This module
measures the noise of the releases themselves, through the privatizer interface only (``start`` / ``observe``
/ ``release`` / ``true_counts``), at a realistic shape (H = 2, S = 3, A = 2, rewards uniform on [0, 1]) and
over every tree level up to K = 2^11 episodes in the privatizer audits (``NOISE_LAW_K``; 32 x their own largest
K) and 2^14 in dp_ucbvi (``UCBVI_NOISE_LAW_K``: the largest K its regret sweep runs; --quick 2^12). The cost is
the privatizer's own observe() K times (~0.1 ms each, nearly flat in the runs): ~0.3-0.5 s CPU at 2^11, ~1.3-1.8 s
at 2^14.

The release noise e_t = N^(t) - N(t) (and R~ - R) is read after t episodes for t in :func:`release_times`
(t = m 2^j, m odd <= ``ODD_MAX`` = 127: a set closed under t -> t - lowbit(t)). Its independent pieces:

* central (binary mechanism, Chan, Shi & Song 2011): node_t = e_t - e_{t - lowbit(t)} is the noise of the node
  of level j = log2 lowbit(t) completed at t, declared Lap(b) with variance 2 b^2 (b = the node scale);
* local (Laplace randomiser): e_t - e_t' (t' the previous release time) is the sum of the t - t' messages'
  noise, declared variance (t - t') 2 b^2, grouped by the dyadic range [2^j, 2^(j+1)) of t.

Each piece is standardised by its declared sd; under the declaration every standardised coordinate has variance
1 and the coordinates of a piece are independent (the DpEvent composes one mechanism per coordinate).

* :func:`noise_scale_check` (``whitebox.noise_scale``): the ratio measured / declared variance per tree level
  (group), per count family and per coordinate (pooled over the groups), and of all pieces together. Each
  ratio is a mean of squares with a normal interval from the squares' own spread; FAIL when one interval at
  the audit's alpha, Bonferroni over all the ratios tested, lies wholly below 1 (less noise than declared:
  the claim fails) or above 1 + VARIANCE_TOLERANCE (a different calibration). PASS needs the pooled ratio
  certified within [1 - VARIANCE_RESOLUTION, 1 + VARIANCE_TOLERANCE] (:func:`variance_band`) and every group
  and coordinate ratio certified >= 1 - ``GROUP_RESOLUTION`` (a Laplace scale >= 0.87 b at every level and
  coordinate); else INCONCLUSIVE. ``measured["epsilon_ratio_upper"]`` turns the groups' bounds into the
  realised eps / claimed eps they allow (central: (1/L) sum_j 1/sqrt(r_j), the levels composing; local:
  max_j 1/sqrt(r_j), one message).
  The intervals treat the coordinates of a piece as independent, which whitebox.noise_independence tests: noise
  shared by two coordinates also narrows them (a noise_scale FAIL beside a noise_independence FAIL is that).
* :func:`noise_independence_check` (``whitebox.noise_independence``): every pair of coordinates of the pieces
  (:func:`correlation_screen`, Bonferroni over the pairs, tolerance 0.1).
"""
from __future__ import annotations

import copy

import numpy as np

from dpcheck.checks import FAIL, INCONCLUSIVE, PASS, Check

from dpcheck.audits.lib.privatizers.declared import declaration, is_plugin
from dpcheck.audits.lib.privatizers.targets import flat_release, flat_true
from dpcheck.audits.lib.privatizers.whitebox import (VARIANCE_RESOLUTION, VARIANCE_TOLERANCE, correlation_screen,
                                                     variance_band)

NOISE_LAW_K = 2 ** 11          # the privatizer audits: L = 12 levels (their own runs stop at K = 64), ~0.5 s
UCBVI_NOISE_LAW_K = (2 ** 14, 2 ** 12)   # dp_ucbvi (default, --quick): its regret sweep's largest K (regret_sweep)
NOISE_LAW_SHAPE = (2, 3, 2)    # H, S, A: H > 1 (a scale without H), A > 1 (noise shared by the actions), S > 2
NOISE_LAW_RUNS = (64, 64)      # default, --quick (the cost is K observe() calls, ~ flat in the runs): the top
                               # level holds runs x C >= 3,000 nodes (games: 64 x 48), ~29,000 rows to correlate
ODD_MAX = 127                  # releases at t = m 2^j, m odd <= 127: up to 64 nodes of each level
GROUP_RESOLUTION = 0.25        # every level / coordinate certified to variance >= 0.75 declared (scale >= 0.87 b)


def release_times(K: int, odd_max: int = ODD_MAX) -> np.ndarray:
    """Sorted t = m 2^j <= K with m odd <= ``odd_max``: closed under t -> t - lowbit(t) (m - 1 is even, so
    (m - 1) 2^j = m' 2^(j+a) with m' odd < m), so every node of the tree completed at such a t is implied by two
    releases of the set."""
    ts = {m << j for j in range(int(K).bit_length()) for m in range(1, odd_max + 1, 2) if (m << j) <= K}
    return np.array(sorted(ts), dtype=np.int64)


def declared_noise(template, *, kind: str, H: int, S: int, A: int, K: int, rewards: bool = True):
    """(b, variance per unit of b^2, where it was read) of the noise the privatizer declares for (H, S, A, K):
    ``declare().scale`` (b of every noisy coordinate: a central node, a local message), else, for a built-in's
    subclass that declares from a started copy, the scale its started copy reports (``node_scale()`` /
    ``noise_scale()``, as whitebox.sensitivity reads it). The law is the declared DpEvent's (Laplace: 2 b^2,
    Gaussian: b^2). (None, None, why) when nothing says."""
    d = declaration(template, H, S, A, K, rewards)
    law = _variance_per_scale(d.dp_event("replacement"))
    b, where = d.scale, "declare().scale"
    if b is None:
        p = copy.deepcopy(template)
        p.start(1, H, S, A, K, np.random.default_rng(0), rewards=rewards)
        read = getattr(p, "node_scale" if kind == "central" else "noise_scale", None)
        b, where = (float(read()), f"started copy's {read.__name__}()") if callable(read) else (None, None)
    if b is None or law is None:
        return None, None, ("the privatizer declares no noise scale" if b is None else
                            "the declared DpEvent is not made of Laplace or Gaussian mechanisms")
    return float(b), law, where


def _variance_per_scale(event):
    """2 for an event of Laplace mechanisms only (Var Lap(b) = 2 b^2), 1 for Gaussian ones only, else None."""
    from dp_accounting import dp_event as dpe
    kinds = set()

    def walk(e):
        if isinstance(e, dpe.ComposedDpEvent):
            for x in e.events:
                walk(x)
        elif isinstance(e, dpe.SelfComposedDpEvent):
            walk(e.event)
        else:
            kinds.add(type(e).__name__)
    walk(event)
    if kinds == {"LaplaceDpEvent"}:
        return 2.0
    if kinds == {"GaussianDpEvent"}:
        return 1.0
    return None


def noise_pieces(template, *, kind: str, b: float, law: float, H: int = 2, S: int = 3, A: int = 2,
                 K: int = NOISE_LAW_K, runs: int = 64, seed: int = 0, rewards: bool = True) -> dict:
    """The standardised independent pieces of the release noise (module docstring) of ``runs`` runs of K users
    with uniform random trajectories and rewards (the noise is data-independent, docs/derivations.md#widths-e).

    Returns {"Z": (pieces, runs, C) pieces / declared sd, "group": (pieces,) tree level (central) or dyadic
    range of t (local), "family": (C,) 0 visits / 1 transitions / 2 rewards, "labels": C names, "times",
    "null_var_sq": (pieces,) Var(Z^2) of each piece under the declared law}; None when the releases carry no N^
    (a user's class may leave noisy_* None: the noise is then not observable)."""
    p = copy.deepcopy(template)
    p.start(runs, H, S, A, K, np.random.default_rng(seed), rewards=rewards)
    data = np.random.default_rng([seed, 1])
    T = release_times(K)
    read_at = set(T.tolist())
    err = {}
    for t in range(1, K + 1):
        st = data.integers(0, S, (runs, H + 1))
        ac = data.integers(0, A, (runs, H))
        rw = data.random((runs, H)) if rewards else None
        p.observe(st, ac, rw)
        if t in read_at:
            pc = p.release()
            if getattr(pc, "noisy_visits", None) is None or getattr(pc, "noisy_transitions", None) is None:
                return None
            err[t] = flat_release(pc) - flat_true(p.true_counts())         # (runs, C)
    C = err[int(T[0])].shape[1]
    zero = np.zeros((runs, C))
    pieces, groups, counts = [], [], []
    prev = 0
    for t in T:
        t = int(t)
        if kind == "central":
            low = t & -t
            piece, count, group = err[t] - (err[t - low] if t - low else zero), 1, low.bit_length() - 1
        else:
            piece, count, group = err[t] - (err[prev] if prev else zero), t - prev, t.bit_length() - 1
        pieces.append(piece / np.sqrt(count * law * b * b))
        groups.append(group)
        counts.append(count)
        prev = t
    HSA = H * S * A
    family = np.repeat([0, 1, 2][:3 if rewards else 2], [HSA, HSA * S, HSA][:3 if rewards else 2])
    idx = np.indices((H, S, A)).reshape(3, -1).T
    labels = ([f"N^({h},{s},{a})" for h, s, a in idx] +
              [f"N^({h},{s},{a},{s2})" for h, s, a in idx for s2 in range(S)] +
              ([f"R~({h},{s},{a})" for h, s, a in idx] if rewards else []))
    return {"Z": np.stack(pieces), "group": np.array(groups), "family": family, "labels": labels,
            "times": T.tolist(), "null_var_sq": _null_var_sq(np.array(counts), law)}


def _null_var_sq(counts: np.ndarray, law: float) -> np.ndarray:
    """Var(Z^2) of a standardised piece under the declaration, per piece: a sum of ``count`` Laplace draws has
    excess kurtosis 3 / count, so Var(Z^2) = 2 + 3 / count (5 for one node); Gaussian: 2."""
    return 2.0 + 3.0 / counts if law == 2.0 else np.full(counts.shape, 2.0)


def variance_ratio(sq: np.ndarray, null_var: np.ndarray, z_fail: float, z_pass: float) -> dict:
    """Mean of squared standardised noise (the variance ratio) with normal intervals. The standard error is the
    larger of the squares' own spread and their spread under the declaration (``null_var``, shaped like
    ``sq``): a mean of right-skewed squares studentised by its own spread has a heavy lower tail (a sample short
    of large squares has a small mean AND a small sd; measured: 10x the nominal rate below -3.35 for Laplace
    messages), which the declared spread removes; a heavier-tailed law than declared still widens it."""
    sq = np.asarray(sq, dtype=float).ravel()
    n = sq.size
    r = float(sq.mean())
    se = max(float(sq.std() / np.sqrt(n)), float(np.sqrt(np.mean(null_var) / n)))
    return {"ratio": r, "samples": int(n), "se": se, "fail_ci": [r - z_fail * se, r + z_fail * se],
            "pass_ci": [r - z_pass * se, r + z_pass * se]}


FAMILIES = ("visits", "transitions", "rewards")


def ratio_text(name: str, v: dict) -> str:
    """``name: ratio [fail interval]`` of one :func:`variance_ratio`."""
    return f"{name}: {v['ratio']:.4f} [{v['fail_ci'][0]:.3f}, {v['fail_ci'][1]:.3f}]"


def ratio_rule(named: list, pooled: tuple, *, alpha: float, m: int, against: str = "declared",
               ratio: str = "variance / declared") -> tuple[str, str] | None:
    """The rule of whitebox.noise_scale (module docstring) over ``named`` = [(name, variance_ratio(...), needed for a
    PASS)] and ``pooled`` = (name, its ratio): FAIL when an interval (level alpha / m, two-sided) lies wholly below 1
    (less noise than declared) or above 1 + VARIANCE_TOLERANCE (another calibration); INCONCLUSIVE when the pooled
    ratio is not certified within the band or a needed one not >= 1 - GROUP_RESOLUTION; None when it PASSes (the
    caller says what passed). One rule for the tabular and the linear privatizers' noise."""
    everything = [(n, v) for n, v, _ in named] + [pooled]
    low = [(n, v) for n, v in everything if v["fail_ci"][1] < 1.0]
    high = [(n, v) for n, v in everything if v["fail_ci"][0] > 1.0 + VARIANCE_TOLERANCE]
    loose = [(n, v) for n, v, need in named if need and v["pass_ci"][0] < 1.0 - GROUP_RESOLUTION]
    band = variance_band(pooled[1]["fail_ci"], pooled[1]["pass_ci"])
    if low:
        worst = min(low, key=lambda x: x[1]["ratio"])
        return FAIL, (f"less noise drawn than {against} ({ratio}, at level {alpha:g} Bonferroni over {m}): "
                      f"{ratio_text(*worst)}" + (f"; {len(low)} ratios below 1" if len(low) > 1 else ""))
    if high:
        return FAIL, (f"more noise drawn than declared, beyond 1 + {VARIANCE_TOLERANCE:g} (not the declared "
                      f"scale): {ratio_text(*max(high, key=lambda x: x[1]['ratio']))}")
    if band is not None or loose:
        n, v = loose[0] if loose else pooled
        return INCONCLUSIVE, (f"no ratio differs from the declaration, but {n} is not certified "
                              f"(interval {[round(x, 4) for x in v['pass_ci']]}; more runs)")
    return None


def noise_scale_check(pieces: dict, *, kind: str, b: float, where: str, alpha: float, source: str,
                      shape: tuple) -> Check:
    """whitebox.noise_scale from :func:`noise_pieces` (module docstring: the ratios, the rule, the level)."""
    from scipy.stats import norm
    from dpcheck.stats import pass_alpha
    Z = pieces["Z"]
    sq = Z * Z                                                    # (pieces, runs, C)
    groups = sorted(set(pieces["group"].tolist()))
    fams = sorted(set(pieces["family"].tolist()))
    m = len(groups) + len(fams) + sq.shape[2] + 1                # every ratio judged: Bonferroni over them
    z_fail = float(norm.ppf(1 - alpha / (2 * m)))
    z_pass = float(norm.ppf(1 - pass_alpha(alpha) / (2 * m)))
    v0 = np.broadcast_to(pieces["null_var_sq"][:, None, None], sq.shape)
    in_group = {g: pieces["group"] == g for g in groups}
    grp = {g: variance_ratio(sq[m_], v0[m_], z_fail, z_pass) for g, m_ in in_group.items()}
    fam = {FAMILIES[f]: variance_ratio(sq[:, :, pieces["family"] == f], v0[:, :, pieces["family"] == f], z_fail, z_pass)
           for f in fams}
    coord = [variance_ratio(sq[:, :, c], v0[:, :, c], z_fail, z_pass) for c in range(sq.shape[2])]
    pooled = variance_ratio(sq, v0, z_fail, z_pass)
    name = "level" if kind == "central" else "t in [2^j, 2^(j+1))"
    named = ([(f"{name} {g}", v) for g, v in grp.items()] + [(f"family {f}", v) for f, v in fam.items()] +
             [(f"coordinate {pieces['labels'][c]}", v) for c, v in enumerate(coord)] + [("all pieces", pooled)])
    lows = np.array([max(v["pass_ci"][0], 1e-12) for v in grp.values()])
    eps_up = float(np.mean(lows ** -0.5) if kind == "central" else np.max(lows ** -0.5))
    H, S, A, K = shape
    ruled = ratio_rule([(n, v, True) for n, v in named[:-1]], ("all pieces", pooled), alpha=alpha, m=m)
    if ruled is not None:
        verdict, reason = ruled
    else:
        verdict, reason = PASS, (f"noise drawn at H={H}, S={S}, A={A} over {len(groups)} "
                                 f"{'tree levels' if kind == 'central' else 'dyadic ranges'} up to K={K} has the "
                                 f"declared variance: all pieces {pooled['ratio']:.4f}, every "
                                 f"{'level' if kind == 'central' else 'range'} / family / coordinate >= "
                                 f"{1 - GROUP_RESOLUTION:g}; realised eps <= {eps_up:.3f} x claimed")
    per = "2 b^2 per tree node" if kind == "central" else "t 2 b^2 after t messages"
    return Check(id="whitebox.noise_scale", kind="whitebox", verdict=verdict,
                 claim={"statement": f"the release noise drawn at H={H}, S={S}, A={A}, K={K} has the declared "
                                     f"variance ({per}, b = {b:.6g} from {where}) at every tree level, family and "
                                     "coordinate",
                        "source": source},
                 measured={"pooled_ratio": pooled["ratio"], "epsilon_ratio_upper": eps_up, "tests": m,
                           "confidence": 1 - alpha, "samples": pooled["samples"], "epsilon_lower_bound": None},
                 details={"per_group": {str(g): v for g, v in grp.items()}, "group": name, "per_family": fam,
                          "per_coordinate": {pieces["labels"][c]: v["ratio"] for c, v in enumerate(coord)},
                          "coordinate_worst": ratio_text(*min(named[len(grp) + len(fam):-1], key=lambda x: x[1]["ratio"])),
                          "pooled": pooled, "release_times": pieces["times"], "z_fail": z_fail, "z_pass": z_pass,
                          "rule": f"FAIL: an interval (alpha / {m} two-sided) below 1 or above 1 + "
                                  f"{VARIANCE_TOLERANCE:g}; PASS: pooled within [1 - {VARIANCE_RESOLUTION:g}, 1 + "
                                  f"{VARIANCE_TOLERANCE:g}], each group / coordinate >= 1 - {GROUP_RESOLUTION:g}"},
                 reason=reason)


def screen_verdict(scr: dict, shared: str = "noise") -> tuple[str, str]:
    """The verdict and reason of a :func:`correlation_screen` of released noise (``shared``: what two coordinates
    would share): one rule for the tabular and the linear privatizers' noise_independence."""
    w = scr["worst"][0] if scr["worst"] else None
    desc = f"{w['between'][0]} vs {w['between'][1]}: {w['correlation']:.3f} (se {w['se']:.3f})" if w else "none"
    verdict = {"fail": FAIL, "unsure": INCONCLUSIVE, "pass": PASS}[scr["verdict"]]
    return verdict, {FAIL: f"two released coordinates share {shared} (a noise-free contrast: unbounded privacy loss): "
                           f"{desc}",
                     INCONCLUSIVE: f"a correlation is not certified within +-{scr['tolerance']:g}: {desc} (more runs)",
                     PASS: f"all {scr['pairs']} pairs of coordinates uncorrelated within +-{scr['tolerance']:g} "
                           f"(largest {desc})"}[verdict]


def noise_independence_check(pieces: dict, *, alpha: float, source: str, shape: tuple) -> Check:
    """whitebox.noise_independence: :func:`correlation_screen` over the C coordinates of every piece."""
    Z = pieces["Z"]
    W = Z.reshape(-1, Z.shape[2])
    scr = correlation_screen(W, pieces["labels"], alpha=alpha)
    H, S, A, K = shape
    verdict, reason = screen_verdict(scr)
    return Check(id="whitebox.noise_independence", kind="whitebox", verdict=verdict,
                 claim={"statement": f"fresh, independent noise for every released coordinate (H={H}, S={S}, A={A}, "
                                     f"K={K}): no two coordinates (actions of a state, count families) share a draw",
                        "source": source},
                 measured={"pairs": scr["pairs"], "samples": int(W.shape[0]), "confidence": 1 - alpha,
                           "epsilon_lower_bound": None},
                 details={**scr, "rows": "independent noise pieces (tree nodes / sums of messages), standardised"},
                 reason=reason)


def noise_law_checks(template, *, kind: str, claim_source: str, alpha: float, runs: int = NOISE_LAW_RUNS[0],
                     seed: int = 0, rewards: bool = True, K: int = NOISE_LAW_K, shape=NOISE_LAW_SHAPE) -> list:
    """[whitebox.noise_scale, whitebox.noise_independence] of an online count privatizer (``kind`` "central": the
    binary tree; "local": the sum of messages) at ``shape`` = (H, S, A) and K. [] for a user's privatizer that
    declares no scale (nothing to hold its noise to; its black-box search is the evidence); INCONCLUSIVE for a
    built-in whose scale cannot be read."""
    H, S, A = shape
    src = f"{claim_source}; drawn noise vs declared scale (docs/privatizers.md)"
    b, law, where = declared_noise(template, kind=kind, H=H, S=S, A=A, K=K, rewards=rewards)
    if b is None:
        return [] if is_plugin(template) else _undecided(src, where)
    pieces = noise_pieces(template, kind=kind, b=b, law=law, H=H, S=S, A=A, K=K, runs=runs, seed=seed,
                          rewards=rewards)
    if pieces is None:
        return _undecided(src, "the releases carry no N^ (noisy_visits / noisy_transitions are None): the noise "
                               "drawn is not observable")
    return [noise_scale_check(pieces, kind=kind, b=b, where=where, alpha=alpha, source=src, shape=(H, S, A, K)),
            noise_independence_check(pieces, alpha=alpha, source=src, shape=(H, S, A, K))]


def _undecided(source: str, reason: str) -> list:
    """Both checks INCONCLUSIVE with ``reason`` (the noise cannot be held to a declaration)."""
    return [Check(id=i, kind="whitebox", verdict=INCONCLUSIVE, measured={"confidence": None}, details={},
                  claim={"statement": "the noise drawn has the declared scale", "source": source}, reason=reason)
            for i in ("whitebox.noise_scale", "whitebox.noise_independence")]
