"""Black-box audit of a user's (plug-in) count privatizer: nothing assumed about its noise.

:func:`plugin_stream_search` searches the stream length K (2 to 64, and 32767 at the default budget, for leaks
that grow slowly with K), the replaced user's position and 16 statistics learned from samples of the real
mechanism, over everything a release hands out (N~, R~ and the self-reported N^); :func:`plugin_message_search`
one user's message, drawn by the user's own ``message(..., rng)`` with a real Generator; :func:`plugin_blackbox`
runs either and certifies the chosen configuration. Configurations are chosen on pilot samples independent of
the audit's, so the certified bound keeps its confidence (no Bonferroni factor): the argument is in
:func:`plugin_stream_search`'s docstring.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np

from dpcheck.checks import FAIL, INCONCLUSIVE, Check

from dpcheck.audits.lib.privatizers.degeneracy import (DEGENERACY_K, DEGENERACY_RUNS, judge_null_combination,
                                                       null_combination)
from dpcheck.audits.lib.privatizers.neighbours import Trajectory, background, worst_case_pair


# ============================================================ plug-in privatizers: black-box search
# A user's privatizer is audited without any assumption on its noise (family, scale, structure) and
# without a private probe generator: every statistic below is learned from samples of the real
# mechanism, drawn with real numpy Generators. See :func:`plugin_stream_search` for the argument.
STREAM_CONFIGS = ((2, 1), (2, 2), (4, 1), (4, 4), (16, 1), (16, 16), (64, 1), (64, 64))   # (K, position)
MESSAGE_HORIZONS = (2, 16, 256)          # K passed to start() before one user's message is drawn
PILOT_SAMPLES = 20_000                   # per side, per phase (estimate / choose), per configuration
Z_KEEP = 3.0                             # |estimated mean difference| / its standard error to enter an
                                         # "estimated" statistic
FORMS = ("sign_known", "linear_known", "sign_estimated", "linear_estimated")
SUBSETS = ("all", "geometric")
VIEWS_SEARCHED = ("planner", "noisy")    # N~ and R~ (what the planner reads) / the self-reported N^
STATISTICS = tuple(f"{v}/{s}/{f}" for v in VIEWS_SEARCHED for s in SUBSETS for f in FORMS)
STREAM_STEPS = 16                        # a configuration of horizon K is audited on min(samples,
                                         # samples * STREAM_STEPS / K) streams: the cost of a long
                                         # stream stays that of a K = 16 one (10^6 -> 250k at K = 64)
SEARCH_SALT = 0x5EA4C4                   # pilot seeds: SeedSequence([seed, SALT, config]) (never the audit's)
LONG_STREAM_CONFIGS = ((32767, 1),)      # (K, position): a leak that grows slowly with K in the bulk of
                                         # the loss (see plugin_stream_search); K = 2^15 - 1 is a full tree
LONG_STREAM_STEPS = 24                   # streams audited at a long K: min(samples, samples * 24 / K)
                                         # (10^6 -> 732 at K = 32767; --quick 2 x 10^5 -> 146)
LONG_PILOT = 64                          # pilot streams per side and per phase at a long K
LONG_MIN_STREAMS = 500                   # a long configuration is searched only if its audit gets at least
                                         # this many streams (samples >= 682,625 at K = 32767): below it the
                                         # bulk leak it is there for cannot be certified (--quick: 146
                                         # streams, ~20% power), and its pilot (~1 min) would be wasted


def _release_vector(pc, rewards: bool) -> np.ndarray:
    """Everything one release hands out, as one vector per run: what the planner reads (N~, R~), then
    the self-reported N^ (noisy_*) with R~ again (the tree's own output, the view in which its noise
    is simplest). Both are released; a leak in either is a leak."""
    from dpcheck.algorithms.privatizers.base import flatten_counts
    from dpcheck.errors import MechanismError
    if rewards and pc.rewards is None:
        raise MechanismError("privatizer started with rewards=True released rewards=None")
    r = pc.rewards if rewards else None
    planner = flatten_counts(pc.visits, pc.transitions, r)
    noisy = flatten_counts(pc.noisy_visits, pc.noisy_transitions, r)
    return np.concatenate([planner, noisy], axis=1).astype(float, copy=False)


def _increment_vector(traj: Trajectory, S: int, A: int, rewards: bool, noisy_part: bool = True) -> np.ndarray:
    """The auditor's own count increments of one trajectory, in the layout of :func:`_release_vector`
    (or of a Local message with ``noisy_part=False``). Computed from the data, never from the
    privatizer's ``true_counts()``."""
    from dpcheck.algorithms.privatizers.base import episode_increments, flatten_counts
    v, t, r = episode_increments(*traj.arrays(1), S, A, rewards)
    parts = [flatten_counts(v, t, r)[0]]
    if noisy_part:
        parts.append(flatten_counts(v, t, r)[0])
    return np.concatenate(parts)


@dataclass
class StatisticParams:
    """Per-coordinate parameters of the learned statistics (shape (K, J) or (J,)): midpoint c of the
    two estimated means, pooled standard deviation s, known difference d (auditor's counts, D - D'),
    estimated difference e (mean under D - mean under D') and which coordinates enter the
    "estimated" statistics (|e| > Z_KEEP standard errors)."""

    c: np.ndarray
    s: np.ndarray
    d: np.ndarray
    e: np.ndarray
    keep: np.ndarray

    @classmethod
    def from_moments(cls, mom_x, mom_y, d):
        (n, rx, s1x, s2x), (ny, ry, s1y, s2y) = mom_x, mom_y     # each side about its own reference
        mx, my = rx + s1x / n, ry + s1y / ny
        var = 0.5 * (np.maximum(s2x / n - (s1x / n) ** 2, 0) + np.maximum(s2y / ny - (s1y / ny) ** 2, 0))
        n = min(n, ny)
        s = np.sqrt(var)
        # a deterministic coordinate (s = 0) keeps a tiny positive scale, so scores stay finite
        s = np.maximum(s, 1e-9 * np.maximum(1.0, np.abs(mx) + np.abs(my)))
        e = mx - my
        keep = np.abs(e) > Z_KEEP * s * math.sqrt(2.0 / n)
        return cls(c=0.5 * (mx + my), s=s, d=d, e=e, keep=keep)

    def scores(self, x: np.ndarray, i=slice(None), cols=slice(None)) -> np.ndarray:
        """The four statistics of outputs x (size, J) at index i (a release t), over the columns
        ``cols`` (a view): (size, 4). Larger means "more like D". The "sign" forms are the Laplace log-likelihood ratio with the learned
        centres and scale (saturating, optimal for Laplace noise); the "linear" forms are Fisher's
        discriminant with a diagonal covariance (optimal for Gaussian noise); "known" uses the
        auditor's count difference d as the shift, "estimated" the learned one e."""
        c, s, d, e, keep = (a[i][cols] for a in (self.c, self.s, self.d, self.e, self.keep))
        z = x[:, cols] - c
        out = np.zeros((x.shape[0], 4))
        m = d != 0
        if m.any():
            out[:, 0] = ((np.abs(z[:, m] + d[m] / 2) - np.abs(z[:, m] - d[m] / 2)) / s[m]).sum(1)
            out[:, 1] = z[:, m] @ (d[m] / s[m] ** 2)
        if keep.any():
            out[:, 2] = ((np.abs(z[:, keep] + e[keep] / 2) - np.abs(z[:, keep] - e[keep] / 2)) / s[keep]).sum(1)
            out[:, 3] = z[:, keep] @ (e[keep] / s[keep] ** 2)
        # the sign forms are constant on their saturated plateau (an event of positive probability,
        # the one that certifies a tight bound); rounding keeps float error from splitting it
        out[:, [0, 2]] = np.round(out[:, [0, 2]], 9)
        return out


def _moments(x: np.ndarray, acc):
    """Running (n, reference, sum, sum of squares) of x (size, ...) about a fixed reference."""
    if acc is None:
        ref = x[0].copy()
        return [x.shape[0], ref, (x - ref).sum(0), ((x - ref) ** 2).sum(0)]
    acc[0] += x.shape[0]
    acc[2] += (x - acc[1]).sum(0)
    acc[3] += ((x - acc[1]) ** 2).sum(0)
    return acc


class StreamStatistics:
    """mechanism(user, rng, size) for one stream configuration: the privatizer is started with
    ``size`` independent runs of a K-episode stream in which ``user`` is episode ``position`` and
    every other episode is the scripted background user; after each episode the whole release
    (:func:`_release_vector`) is read. Without parameters it returns per-(t, coordinate) moments
    (the estimation phase); with them, the 16 learned statistics (:data:`VIEWS_SEARCHED` x
    :data:`SUBSETS` x :data:`FORMS`), each accumulated over the releases of its subset: "all"
    t >= position, "geometric" t - position + 1 a power of two (for a tree and position 1 these are
    the releases B(2^j) that hold a node of the user alone). The two views are scored separately
    (N~ is usually a post-processing of N^; summing both would count the same noise twice)."""

    def __init__(self, template, K, position, *, H, S, A, rewards, params: StatisticParams | None = None):
        self.template, self.K, self.position = template, int(K), int(position)
        self.H, self.S, self.A, self.rewards, self.params = H, S, A, rewards, params

    def subsets(self, t: int) -> list[int]:
        out = []
        if t >= self.position:
            out.append(0)
            j = t - self.position + 1
            if j & (j - 1) == 0:
                out.append(1)
        return out

    def stream(self, user, rng, size, consume):
        """Run ``size`` streams with ``user`` at ``position``; ``consume(t, release vector)`` after each episode."""
        p = copy.deepcopy(self.template)
        p.start(size, self.H, self.S, self.A, self.K, rng, rewards=self.rewards)
        o = background(self.H)
        for t in range(1, self.K + 1):
            st, ac, rw = (user if t == self.position else o).arrays(size)
            p.observe(st, ac, rw if self.rewards else None)
            consume(t, _release_vector(p.release(), self.rewards))

    def moments(self, user, rng, size):
        acc = [None] * self.K

        def consume(t, x):
            acc[t - 1] = _moments(x, acc[t - 1])

        self.stream(user, rng, size, consume)
        return (acc[0][0], np.stack([a[1] for a in acc]), np.stack([a[2] for a in acc]),
                np.stack([a[3] for a in acc]))

    def views(self):
        """Column slices of the planner view and the noisy view in :func:`_release_vector`."""
        jp = _increment_vector(background(self.H), self.S, self.A, self.rewards, noisy_part=False).size
        return slice(0, jp), slice(jp, None)

    def __call__(self, user, rng, size):
        out = np.zeros((int(size), len(VIEWS_SEARCHED), len(SUBSETS), len(FORMS)))
        views = self.views()

        def consume(t, x):
            sub = self.subsets(t)
            if sub:
                for v, cols in enumerate(views):
                    sc = self.params.scores(x, t - 1, cols)
                    for k in sub:
                        out[:, v, k] += sc

        self.stream(user, rng, int(size), consume)
        return out.reshape(int(size), -1)


class MessageStatistics:
    """mechanism(user, rng, size) for a Local privatizer's message: the privatizer is started (horizon
    K) and ``message(states, actions, rewards, rng)`` is called with the sampler's own Generator --
    whatever noise family the user draws. Returns the raw message and the 4 learned statistics."""

    def __init__(self, template, K, *, H, S, A, rewards, params: StatisticParams | None = None):
        self.template, self.K = template, int(K)
        self.H, self.S, self.A, self.rewards, self.params = H, S, A, rewards, params

    def _message(self, user, rng, size):
        from dpcheck.errors import MechanismError
        p = copy.deepcopy(self.template)
        p.start(size, self.H, self.S, self.A, self.K, rng, rewards=self.rewards)
        st, ac, rw = user.arrays(size)
        msg = p.message(st, ac, rw if self.rewards else None, rng)
        x = np.asarray(msg.flat() if hasattr(msg, "flat") else msg, dtype=float).reshape(size, -1)
        if x.shape[1] != self.params_size():
            raise MechanismError(f"message() returned {x.shape[1]} values per user, expected "
                                 f"{self.params_size()} (visits, transitions[, rewards])")
        return x

    def params_size(self):
        return _increment_vector(background(self.H), self.S, self.A, self.rewards, noisy_part=False).size

    def moments(self, user, rng, size):
        acc = _moments(self._message(user, rng, size), None)
        return acc[0], acc[1], acc[2], acc[3]

    def __call__(self, user, rng, size):
        x = self._message(user, rng, int(size))
        return np.concatenate([x, self.params.scores(x)], axis=1)


def _best_column(sx, sy, n_cert, alpha_b, objective):
    """The statistic (column of the pilot scores ``sx``, ``sy``: (n, statistics)) and the direction whose
    best threshold projects the largest certified value: (value, (column, direction))."""
    from dpcheck import events as ev
    best, which = -math.inf, None
    for j in range(sx.shape[1]):
        a, b = np.sort(sx[:, j]), np.sort(sy[:, j])
        for direction, (u, v) in (("D->D'", (a, b)), ("D'->D", (-b[::-1], -a[::-1]))):
            _, val, _, _ = ev.best_threshold(u, v, n_cert, alpha_b, objective)
            if val > best:
                best, which = val, (j, direction)
    return best, which


def _pilot(make, x, y, d, *, pilot, seed, config_index, n_cert, alpha_b, objective):
    """Estimate the statistics' parameters on one pilot sample and score the configuration on a
    second, independent one: the best projected certified bound over the statistics and both
    directions (the same threshold search the auditor runs on its selection sample)."""
    ss = np.random.SeedSequence([int(seed), SEARCH_SALT, int(config_index)]).spawn(4)
    mech = make(None)
    mom_x = mech.moments(x, np.random.default_rng(ss[0]), pilot)
    mom_y = mech.moments(y, np.random.default_rng(ss[1]), pilot)
    params = StatisticParams.from_moments(mom_x, mom_y, d)
    mech = make(params)
    sx = mech(x, np.random.default_rng(ss[2]), pilot)
    sy = mech(y, np.random.default_rng(ss[3]), pilot)
    best, which = _best_column(sx, sy, n_cert, alpha_b, objective)
    return params, float(best), which


def stream_samples(samples: int, K: int, long: bool = False) -> int:
    """Streams per side for a configuration of horizon K: ``min(samples, samples * STREAM_STEPS // K)``
    (at least 1000); a long configuration (:data:`LONG_STREAM_CONFIGS`) ``samples * LONG_STREAM_STEPS
    // K`` (at least 100)."""
    if long:
        return int(min(samples, max(100, samples * LONG_STREAM_STEPS // K)))
    return int(min(samples, max(1000, samples * STREAM_STEPS // K)))


def _gaussian_projection(sx, sy, n_cert, alpha_b, objective):
    """Projected certified bound of each column of (sx, sy) under a Gaussian model of the statistic:
    (best value, (column, direction)). The shift in standard deviations is estimated from the pilot and
    taken one standard error low; the bound is the best threshold's Clopper-Pearson ratio at n_cert
    outputs. Used only to *choose* a long configuration, whose pilot is too small (:data:`LONG_PILOT`)
    for the empirical tail counts of :func:`dpcheck.events.best_threshold` to see a bulk leak; the
    choice does not touch the certification sample, so the model's accuracy affects power only."""
    from scipy.stats import norm
    from dpcheck import stats
    n = min(sx.shape[0], sy.shape[0])
    c = np.linspace(-1.0, 6.0, 141)
    q = norm.sf(c)
    best, which = -math.inf, None
    for j in range(sx.shape[1]):
        sd = math.sqrt(0.5 * (sx[:, j].var() + sy[:, j].var()))
        if not sd > 0:
            continue
        m = (sx[:, j].mean() - sy[:, j].mean()) / sd
        for direction, mu in (("D->D'", m), ("D'->D", -m)):
            mu = mu - math.sqrt(2.0 / n)
            if mu <= 0:
                continue
            p = norm.sf(c - mu)
            val = objective(stats.cp_lower(np.floor(p * n_cert), n_cert, alpha_b),
                            stats.cp_upper(np.ceil(q * n_cert), n_cert, alpha_b))
            val = float(np.max(val))
            if val > best:
                best, which = val, (j, direction)
    return best, which


def _pilot_lockstep(template, K, position, x, y, d, *, H, S, A, rewards, pilot, seed, config_index, n_cert,
                    alpha_b, objective):
    """The pilot of a long configuration in ONE run of the privatizer (a stream of K releases costs
    K calls whatever the number of runs): 4 x ``pilot`` runs -- D and D' for estimation, D and D' for
    scoring, the replaced user's trajectory differing between runs. At each release t the parameters of
    t are estimated on the estimation runs and the scoring runs are scored with them (release t's
    parameters depend on release t only, so this is the two-phase pilot of :func:`_pilot` in one pass).
    The configuration's value is the larger of the empirical and the Gaussian-model projection
    (:func:`_gaussian_projection`). The parameters handed to the audit are re-estimated on all
    2 x ``pilot`` runs per side (still independent of the audit's samples)."""
    n = int(pilot)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), SEARCH_SALT, int(config_index)]))
    mech = StreamStatistics(template, K, position, H=H, S=S, A=A, rewards=rewards)
    views = mech.views()
    p = copy.deepcopy(template)
    p.start(4 * n, H, S, A, K, rng, rewards=rewards)
    groups = [slice(0, n), slice(n, 2 * n), slice(2 * n, 3 * n), slice(3 * n, 4 * n)]   # x, y, x, y
    o = background(H)
    sx = np.zeros((n, len(VIEWS_SEARCHED), len(SUBSETS), len(FORMS)))
    sy = np.zeros_like(sx)
    full = None
    for t in range(1, K + 1):
        if t == position:
            arrs = [np.concatenate(a) for a in zip(*(u.arrays(n) for u in (x, y, x, y)))]
        else:
            arrs = list(o.arrays(4 * n))
        st, ac, rw = arrs
        p.observe(st, ac, rw if rewards else None)
        X = _release_vector(p.release(), rewards)
        sub = mech.subsets(t)
        if sub:
            par = StatisticParams.from_moments(_moments(X[groups[0]], None), _moments(X[groups[1]], None), d[t - 1])
            for v, cols in enumerate(views):
                sc = par.scores(X[2 * n:], slice(None), cols)          # the scoring runs: x then y
                for k in sub:
                    sx[:, v, k] += sc[:n]
                    sy[:, v, k] += sc[n:]
        allx = StatisticParams.from_moments(_moments(np.concatenate([X[groups[0]], X[groups[2]]]), None),
                                    _moments(np.concatenate([X[groups[1]], X[groups[3]]]), None), d[t - 1])
        if full is None:
            full = {k: np.zeros((K,) + getattr(allx, k).shape, dtype=getattr(allx, k).dtype)
                    for k in ("c", "s", "d", "e", "keep")}
        for k in full:
            full[k][t - 1] = getattr(allx, k)
    params = StatisticParams(**full)
    sx, sy = sx.reshape(n, -1), sy.reshape(n, -1)
    best, which = _best_column(sx, sy, n_cert, alpha_b, objective)
    g_val, g_which = _gaussian_projection(sx, sy, n_cert, alpha_b, objective)
    if g_val > best:
        best, which = g_val, g_which
    return params, float(best), which


def _search_plan(claim, samples, alpha):
    """(n_cert, alpha per bound, objective) the audit of the chosen configuration will use: one pair of
    :func:`dpcheck.blackbox.sample_plan`, imported, never re-derived."""
    from dpcheck import events as ev
    from dpcheck.blackbox import sample_plan
    plan = sample_plan(claim, samples, alpha, pairs=1)
    return plan.certification, plan.alpha_bound, ev.Objective("ratio", delta=plan.delta)


def plugin_stream_search(template, *, H=1, S=2, A=1, rewards=True, samples=10**6, alpha=0.05, seed=0,
                         configs=STREAM_CONFIGS, pilot=PILOT_SAMPLES, progress=None,
                         long_configs=LONG_STREAM_CONFIGS, long_pilot=LONG_PILOT):
    """Black-box audit target for a plug-in privatizer's released stream, searched.

    The adversary sees every release (N~, R~ and the self-reported N^) after each of K episodes;
    neighbours replace one user by the worst-case pair (Qiao & Wang 2023 Lemma 5.6, Qiao & Wang 2024 Lemma 5.4), all other users scripted.
    Nothing about the noise is assumed. Searched: the stream length K and the replaced user's
    position (:data:`STREAM_CONFIGS`: a leak that grows with the number of releases, or that sits at
    the end of the stream, shows at long K / late positions), and the statistic -- 16 learned scores
    (:class:`StreamStatistics`: Laplace-LLR and linear-discriminant forms, shift known from the data
    or estimated, over all releases / the geometric releases, of N~ and R~ / of N^), whose centres and
    scales are estimated from samples of the real mechanism.

    Validity (why the certified bound stays valid at the stated confidence). For each configuration
    the parameters are estimated on pilot sample 1 and the configuration is scored on pilot sample 2
    (the projected certified bound of its best statistic); the configuration with the highest score
    is chosen. Pilot samples come from seeds derived from ``(seed, SEARCH_SALT, config)``, disjoint
    from the auditor's, so they are independent of the audit's samples. Conditionally on them, the
    returned target (configuration + parameters) is a fixed post-processing of the released stream;
    :func:`dpcheck.blackbox.audit` then chooses the statistic, direction and threshold on its own
    selection sample and certifies one event on its disjoint certification sample. Every choice is
    made on data independent of the certification sample, so no Bonferroni factor is owed for the
    search (only the certified events are counted, as in dpcheck.blackbox), and with probability
    >= 1 - alpha the reported eps lower bound is below the true epsilon of the released stream --
    hence below the privatizer's (post-processing cannot increase privacy loss).

    Long streams (:data:`LONG_STREAM_CONFIGS`, K = 32767, user first, so every release carries her
    change). Some leaks hide in the bulk of the privacy loss and grow only slowly with K: a tree whose
    node noise is redrawn at every release at the tree's own node scale b = 2 F H L / eps has pure
    epsilon (K / L) eps, but each release is nearly uninformative (release t is the count plus
    popcount(t) fresh Lap(b) draws per coordinate). The releases are independent, so the diagonal
    linear discriminant over all of them (the "linear_known" statistic, weights d / s^2 per release and
    coordinate) is near-optimal (Fisher information of a sum of k Laplaces is within 2% of the
    Gaussian's for k >= 8); for the worst-case pair at H = 1, S = 2, A = 1 (6 coordinates move by 1)
    its mean shift is mu = 0.40 sd at K = 1024, 0.61 at 4096, 1.04 at 16383, 1.33 at 32767 (against
    ~0.1 for a correct tree). A Gaussian-like statistic has an unbounded likelihood ratio in its tail,
    so eps = 1 is certifiably violated once mu and the number of streams are both large enough:
    simulated with the auditor's own threshold search, 732 streams at K = 32767 certify eps_lb > 1 in
    60/60 trials (mean 1.50), 146 (--quick) in ~20%. K = 2^15 - 1 (a full tree, L = 15) is the
    cheapest length that gets there at ~2.4 x 10^7 stream steps per side: power grows with K at a
    fixed number of stream steps, but every pass costs K privatizer calls whatever the number of runs.
    Its pilot is :func:`_pilot_lockstep` (one run of the privatizer, 2 x :data:`LONG_PILOT` streams
    per side) and its value for the choice a Gaussian-model projection (:func:`_gaussian_projection`),
    since tail counts from 64 streams cannot show a bulk leak. It is searched only when its audit
    would get :data:`LONG_MIN_STREAMS` streams (the default 10^6 samples: yes; --quick: no).
    Validity is unchanged: its pilot seeds are disjoint from the audit's as well, and neither the
    model nor the lockstep pilot touch the certification sample.

    Cost: the audit of the chosen configuration draws up to ``samples`` streams of K episodes per side;
    a long stream is audited on fewer of them (:func:`stream_samples`: ``samples * 16 / K`` for the
    short configurations, ``samples * 24 / K`` for the long one; the pilot projects each
    configuration's bound at its own sample size, so the choice weighs power against length).
    Returns (target, details); ``details["chosen"]["samples"]`` is the sample size to audit with.
    """
    from dpcheck import AuditTarget
    from dpcheck.errors import MechanismError
    claim = template.claim
    x, y = worst_case_pair(H, S, A)
    dx = _increment_vector(x, S, A, rewards) - _increment_vector(y, S, A, rewards)
    rows, best = [], None
    skipped = [{"K": K, "position": pos, "samples": stream_samples(samples, K, True)} for K, pos in long_configs
               if stream_samples(samples, K, True) < LONG_MIN_STREAMS]
    all_configs = [(K, pos, False) for K, pos in configs] + [
        (K, pos, True) for K, pos in long_configs if stream_samples(samples, K, True) >= LONG_MIN_STREAMS]
    for i, (K, pos, long) in enumerate(all_configs):
        if progress:
            progress(f"plug-in search: stream K={K}, replaced user at position {pos}")
        d = np.stack([dx if t >= pos else np.zeros_like(dx) for t in range(1, K + 1)])
        n_k = stream_samples(samples, K, long)
        n_cert, alpha_b, objective = _search_plan(claim, n_k, alpha)

        def make(params, K=K, pos=pos):
            return StreamStatistics(template, K, pos, H=H, S=S, A=A, rewards=rewards, params=params)

        if long:
            try:
                params, value, which = _pilot_lockstep(template, K, pos, x, y, d, H=H, S=S, A=A,
                                                       rewards=rewards, pilot=long_pilot, seed=seed,
                                                       config_index=i, n_cert=n_cert, alpha_b=alpha_b,
                                                       objective=objective)
            except (MemoryError, MechanismError) as e:
                if not (isinstance(e, MemoryError) or isinstance(e.__cause__, MemoryError)):
                    raise
                # a privatizer that keeps per-episode state for every run cannot hold K = 32767 episodes;
                # the short configurations still audit it (reported, not silently dropped)
                skipped.append({"K": K, "position": pos, "samples": n_k, "reason": "MemoryError"})
                continue
        else:
            params, value, which = _pilot(make, x, y, d, pilot=pilot, seed=seed, config_index=i,
                                          n_cert=n_cert, alpha_b=alpha_b, objective=objective)
        stat = None if which is None else f"{STATISTICS[which[0]]} {which[1]}"
        rows.append({"K": K, "position": pos, "samples": n_k, "projected_epsilon_lower_bound": value,
                     "statistic": stat})
        if best is None or value > best[0] + 1e-9:
            best = (value, K, pos, params, n_k)
    value, K, pos, params, n_k = best
    mech = StreamStatistics(template, K, pos, H=H, S=S, A=A, rewards=rewards, params=params)
    details = {"search": rows, "chosen": {"K": K, "position": pos, "samples": n_k,
                                          "projected_epsilon_lower_bound": value},
               "pilot_samples_per_side": pilot, "long_pilot_samples_per_side": 2 * long_pilot,
               "long_configurations_skipped": skipped, "statistics": list(STATISTICS), "instance": {"H": H, "S": S, "A": A, "rewards": rewards}}
    target = AuditTarget(name=f"{getattr(template, 'name', 'privatizer')}.stream_search", mechanism=mech,
                         pairs=[(x, y)], claim=claim, output="continuous")
    details["description"] = (f"K={K}, replaced user at position {pos} (chosen on pilot samples over "
                              f"{len(all_configs)} configurations); 16 learned statistics of every release "
                              f"(N~, R~ and N^)")
    return target, details


def plugin_message_search(template, *, H=1, S=2, A=1, rewards=True, samples=10**6, alpha=0.05, seed=0,
                          horizons=MESSAGE_HORIZONS, pilot=PILOT_SAMPLES, progress=None):
    """Black-box audit target for a plug-in Local privatizer's message (what one user sends), searched
    over the horizon K given to ``start`` (:data:`MESSAGE_HORIZONS`) and over the statistic (the raw
    message coordinates and 4 learned statistics, :class:`MessageStatistics`). No noise family is
    assumed: the message is drawn by the user's own ``message(..., rng)`` with a real Generator.
    Validity as in :func:`plugin_stream_search`. Returns (target, details)."""
    from dpcheck import AuditTarget
    claim = template.claim
    x, y = worst_case_pair(H, S, A)
    n_cert, alpha_b, objective = _search_plan(claim, samples, alpha)
    d = _increment_vector(x, S, A, rewards, False) - _increment_vector(y, S, A, rewards, False)
    rows, best = [], None
    for i, K in enumerate(horizons):
        if progress:
            progress(f"plug-in search: one user's message, horizon K={K}")

        def make(params, K=K):
            return MessageStatistics(template, K, H=H, S=S, A=A, rewards=rewards, params=params)

        params, value, which = _pilot(make, x, y, d, pilot=pilot, seed=seed, config_index=100 + i,
                                      n_cert=n_cert, alpha_b=alpha_b, objective=objective)
        rows.append({"K": K, "projected_epsilon_lower_bound": value})
        if best is None or value > best[0] + 1e-9:
            best = (value, K, params)
    value, K, params = best
    mech = MessageStatistics(template, K, H=H, S=S, A=A, rewards=rewards, params=params)
    details = {"search": rows, "chosen": {"K": K, "samples": samples, "projected_epsilon_lower_bound": value},
               "pilot_samples_per_side": pilot, "instance": {"H": H, "S": S, "A": A, "rewards": rewards}}
    target = AuditTarget(name=f"{getattr(template, 'name', 'privatizer')}.message_search", mechanism=mech,
                         pairs=[(x, y)], claim=claim, output="continuous")
    details["description"] = (f"one user's message (start horizon K={K}, chosen on pilot samples); raw "
                              f"coordinates + 4 learned statistics")
    return target, details


# ============================================================ the plug-in black-box check and its budget
# (default, --quick) samples per side of a privatizer's black-box audit: the privatizer audits' default
# (audits/privatizer_audits.py), and the budget dp_ucbvi and dp_nash_vi give a plug-in's searched audit
PRIVATIZER_SAMPLES = (10**6, 2 * 10**5)


def stream_degeneracy(template, *, H=1, S=2, A=1, rewards=True, seed=0, K: int = DEGENERACY_K,
                      runs: int = DEGENERACY_RUNS) -> dict | None:
    """:func:`dpcheck.audits.lib.privatizers.degeneracy.null_combination` on a plug-in's released stream: K
    releases, the worst-case pair's user first (in every tree level she appears in)."""
    stats = StreamStatistics(template, K, 1, H=H, S=S, A=A, rewards=rewards)
    return null_combination(stats, worst_case_pair(H, S, A), seed=seed, K=K, runs=runs)


def plugin_blackbox(template, exe=None, *, search: str = "stream", H=1, S=2, A=1, rewards=True, samples=None,
                    seed=None, source=None, id="privacy.blackbox", pilot=PILOT_SAMPLES) -> Check:
    """The black-box check of a plug-in privatizer: :func:`plugin_stream_search` (``search="stream"``)
    or :func:`plugin_message_search` (``"message"``), then :func:`dpcheck.blackbox.audit` of the chosen
    configuration; the search table is in ``details["search"]``.

    ``exe``: the audit's :class:`dpcheck.audit.ExecutionOptions`, whole (alpha, seed, parallelism, progress;
    its cache_dir: the certified draw streams its chunks there and resumes, the pilot search is not
    cached). ``samples``: the budget, default ``exe.budget(PRIVATIZER_SAMPLES)``; ``seed``: default exe.seed."""
    from dataclasses import replace
    from dpcheck.audit import ExecutionOptions
    exe = exe if exe is not None else ExecutionOptions()
    samples = exe.budget(PRIVATIZER_SAMPLES) if samples is None else int(samples)
    seed = exe.seed if seed is None else int(seed)
    fn = plugin_stream_search if search == "stream" else plugin_message_search
    target, info = fn(template, H=H, S=S, A=A, rewards=rewards, samples=samples, alpha=exe.alpha, seed=seed,
                      pilot=pilot, progress=exe.progress)
    res = exe.audit(target, info["chosen"]["samples"], seed)
    check = res.to_check(id=id, kind="privacy", claim_source=source)
    # the probe can only lower a verdict: skipped where the learned statistics already refuted the claim
    deg = (stream_degeneracy(template, H=H, S=S, A=A, rewards=rewards, seed=seed)
           if search == "stream" and check.verdict != FAIL else None)
    if deg is not None:
        judged = judge_null_combination(check, deg, template.claim, exe.alpha)
        return replace(judged, details=dict(judged.details, search=info["search"]))
    chosen = ", ".join(f"{k}={v}" for k, v in info["chosen"].items() if k != "projected_epsilon_lower_bound")
    details = dict(check.details, search=info["search"], chosen=info["chosen"],
                   pilot_samples_per_side=info["pilot_samples_per_side"], instance=info["instance"],
                   method=("plug-in privatizer, black box: " + info["description"] + "; " + check.details["method"]))
    if "long_configurations_skipped" in info:
        details["long_configurations_skipped"] = info["long_configurations_skipped"]
    return replace(check, details=details, reason=f"{check.reason} [searched {search}: {chosen}]")


def plugin_message_blackbox(template, exe=None, *, stream_id: str, id="privacy.blackbox", **kw) -> Check:
    """The eps-LDP check of a plug-in privatizer: what the adversary sees under LDP is one user's message, so the
    claim is audited on ``message(states, actions, rewards, rng)`` (:func:`plugin_blackbox`, ``search="message"``,
    ``kw`` passed on). A class without a callable ``message`` gets an INCONCLUSIVE check instead: the released
    stream (``stream_id``, a post-processing of the messages) bounds eps from below but cannot establish eps-LDP,
    and leaving the row out would let the report PASS without it. ``template``: a :class:`ClaimedTemplate`."""
    p = getattr(template, "privatizer", template)
    if callable(getattr(p, "message", None)):
        return plugin_blackbox(template, exe, search="message", id=id, **kw)
    claim = template.claim
    source = kw.get("source") or claim.source
    return Check(id=id, kind="privacy", verdict=INCONCLUSIVE,
                 claim=dict(claim.to_dict(), statement=claim.describe(), source=source),
                 measured={"epsilon_lower_bound": None, "confidence": None, "samples": 0},
                 details={}, reason=f"no message(states, actions, rewards, rng) method: one user's message cannot be "
                                    f"audited, so eps-LDP is not established; see {stream_id}")
