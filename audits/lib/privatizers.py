"""Reusable checks of count privatizers: black-box targets, the plug-in search, white-box checks.

The privatizer audits (audits/privatizer_audits.py) and the DP-UCBVI / DP-Nash-VI audits build on these.

* Neighbours (:func:`worst_case_pair`, :func:`background`): the worst case of Qiao & Wang 2023 Lemma 5.6, Qiao & Wang 2024 Lemma 5.4 and Qiao & Wang 2022 Lemma C.1: at
  every step the two trajectories visit different (s,a) and (s,a,s') and both earn reward 1, so every
  family moves by 2H in l1; all other users are fixed (scripted).
* Black-box targets (dpcheck.AuditTarget): :func:`central_target` (the released stream N^ and R~ after
  each of the K episodes), :func:`local_target` (one user's message), :func:`offline_target` (the
  released noisy counts n'). The statistic is the Neyman-Pearson log-likelihood ratio of the declared
  noise on the coordinates that differ (for the tree: the nodes (j,1) = B(2^j) holding user 1), so the
  auditor's threshold events are the optimal ones. Instances are small (H = 1, S = 2) on purpose: with 6
  shifted Laplace coordinates the likelihood ratio saturates with probability 1/64 per level, which is
  what makes a tight bound reachable from 10^6 samples.
* A user's (plug-in) privatizer, :func:`is_plugin`, black box only, nothing assumed about its noise:
  :func:`plugin_stream_search` searches the stream length K (2 to 64, and 32767 at the default budget,
  for leaks that grow slowly with K), the replaced user's position and 16 statistics learned from samples of the real mechanism, over everything a release hands out (N~, R~ and
  the self-reported N^); :func:`plugin_message_search` one user's message, drawn by the user's own
  ``message(..., rng)`` with a real Generator; :func:`plugin_blackbox` runs either and certifies the
  chosen configuration. Configurations are chosen on pilot samples independent of the audit's, so the
  certified bound keeps its confidence (no Bonferroni factor).
* Declared privacy: :func:`declaration` (claim, DpEvent, width from the privatizer's parameters and the
  sizes, ``declare()``), :func:`claim_for_families`, :func:`dp_event_check` (``whitebox.dp_event``: the
  privacy profile computed exactly with the dp_accounting PLD accountant from the declared DpEvent,
  compared with the Claim; the add/remove profile is reported too; the accounting is dpcheck.accounting's).
* :func:`sensitivity_check` (``whitebox.sensitivity``): a hypothesis search over neighbouring
  trajectories (plus the worst case built directly) never exceeds the declared per-family sensitivity;
  the realised ``eps = sum_f Delta_f / b`` is compared with the claim (Qiao & Wang 2023 Lemmas 5.1 / 5.6, Qiao & Wang 2024 Lemmas 5.1 / 5.4);
  :func:`offline_sensitivity_check` by brute force for the offline privatizers (sensitivity).
* :func:`tree_reuse_check` (``whitebox.tree_noise_reuse``): the covariance of the released noise equals
  the tree's, ``Cov(B(t), B(t')) = (#shared nodes) 2 b^2``; fresh noise per release breaks it (docs/derivations.md#readings).
* :func:`assumption_checks` (Assumption 3.1 over R repetitions, audits/lib/tabular.py) and
  :func:`offline_noise_checks` (the offline noise bound Lemma C.2, sum identity, valid P~).
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np

from dpcheck.accounting import (PLD_DELTA, closed_form, epsilon_from_rho, gaussian_multiplier, gaussian_rho_squared,
                                pld_delta, pld_epsilon)
from dpcheck.checks import FAIL, PASS, Check, invariant_check

EPS_SLACK = 2e-3          # relative + absolute slack on PLD epsilons (discretisation, not privacy)
UCBVI_SOURCE = "Qiao & Wang 2023 (DP-UCBVI)"
NASH_SOURCE = "Qiao & Wang 2024 (DP-Nash-VI)"


# ============================================================ neighbouring users (the papers' worst cases)
@dataclass(frozen=True)
class Trajectory:
    """One user's episode: states (H+1,), actions (H,), rewards (H,) in [0, 1]."""

    states: tuple
    actions: tuple
    rewards: tuple

    def arrays(self, runs: int):
        st = np.broadcast_to(np.asarray(self.states, dtype=np.int64), (runs, len(self.states)))
        ac = np.broadcast_to(np.asarray(self.actions, dtype=np.int64), (runs, len(self.actions)))
        rw = np.broadcast_to(np.asarray(self.rewards, dtype=float), (runs, len(self.rewards)))
        return st, ac, rw


def worst_case_pair(H: int, S: int, A: int) -> tuple[Trajectory, Trajectory]:
    """Two trajectories that differ in (s,a) and (s,a,s') at every step, both with reward 1 (Lemma 5.6; Lemma 5.4):
    every family's per-trajectory vector moves by 2H in l1 (replacement sensitivity)."""
    if S < 2:
        raise ValueError("the worst-case pair needs S >= 2")
    x = Trajectory(states=(0,) * (H + 1), actions=(0,) * H, rewards=(1.0,) * H)
    y = Trajectory(states=(1,) * (H + 1), actions=(A - 1,) * H, rewards=(1.0,) * H)
    return x, y


def background(H: int) -> Trajectory:
    """A scripted other user (fixed responses): stays in state 0, action 0, reward 0."""
    return Trajectory(states=(0,) * (H + 1), actions=(0,) * H, rewards=(0.0,) * H)


# ============================================================ likelihood-ratio statistics
def laplace_llr(x: np.ndarray, mu: np.ndarray, mu_prime: np.ndarray) -> np.ndarray:
    """sum_i |x_i - mu'_i| - |x_i - mu_i| over the coordinates that differ: b x the log-likelihood
    ratio of Laplace noise of scale b (any b: the ordering, hence the events, does not depend on it).
    x (size, d); mu, mu' (d,)."""
    diff = mu != mu_prime
    llr = (np.abs(x[:, diff] - mu_prime[diff]) - np.abs(x[:, diff] - mu[diff])).sum(axis=1)
    # the ratio is constant on the saturated plateau (an event of positive probability); rounding
    # keeps float noise from splitting the plateau into spurious, unequal halves
    return np.round(llr, 9)


def gaussian_llr(x: np.ndarray, mu: np.ndarray, mu_prime: np.ndarray) -> np.ndarray:
    """sigma^2 x the Gaussian log-likelihood ratio: (x - (mu + mu')/2) . (mu - mu')."""
    d = mu - mu_prime
    return (x - 0.5 * (mu + mu_prime)) @ d


# ============================================================ online privatizers: streams and messages
VIEWS = ("noisy", "planner")


def _flat_release(pc, view: str = "noisy") -> np.ndarray:
    """One release as a vector per run. ``view="noisy"``: N^ (and R~) -- the tree's output, where the
    Laplace LLR is the optimal statistic; ``"planner"``: N~ (and R~) -- what the planner actually reads.
    For the built-ins N~ is the Section 5.1.1 post-processing of N^, so "noisy" suffices; a user's privatizer only
    self-reports its noisy_* fields, so its planner view must be audited too."""
    if view not in VIEWS:
        raise ValueError(f"view must be one of {VIEWS}, got {view!r}")
    from dpcheck.algorithms.privatizers.base import flatten_counts
    v, t = (pc.noisy_visits, pc.noisy_transitions) if view == "noisy" else (pc.visits, pc.transitions)
    return flatten_counts(v, t, pc.rewards)


def _flat_true(tc) -> np.ndarray:
    from dpcheck.algorithms.privatizers.base import flatten_counts
    return flatten_counts(tc.visits, tc.transitions, tc.rewards)


def released_stream(template, first: Trajectory, others: Trajectory, *, H, S, A, K, rewards, rng, size,
                    view: str = "noisy"):
    """What the adversary sees from a central privatizer: N^ (or N~, ``view="planner"``) and R~ after
    each of the K episodes.

    User 1 plays ``first``, users 2..K play ``others``. Returns (size, K, C) noisy releases and the
    (K, C) true counts. ``template`` is an un-started privatizer; it is copied, never mutated.
    """
    p = copy.deepcopy(template)
    p.start(size, H, S, A, K, rng, rewards=rewards)
    out, true = [], []
    for k in range(K):
        st, ac, rw = (first if k == 0 else others).arrays(size)
        p.observe(st, ac, rw if rewards else None)
        out.append(_flat_release(p.release(), view))
        true.append(_flat_true(p.true_counts())[0])
    return np.stack(out, axis=1), np.stack(true)


def central_target(template, *, H=1, S=2, A=1, K=2, rewards=True, view="noisy", search=None):
    """AuditTarget for a central (JDP) privatizer: the worst-case user at position 1 (she is in all L
    tree levels: nodes (j, 1), released alone as B(2^j)), the other K-1 users scripted.

    The statistic is a function of the released stream only (post-processing), so the bound is valid
    whatever the privatizer does; it is the optimal (Neyman-Pearson) one for a correct tree on N^.
    ``view="planner"`` audits N~ instead (see :func:`_flat_release`). A user's privatizer
    (:func:`is_plugin`; ``search=True/False`` forces the choice) gets :func:`plugin_stream_search`
    instead: its noise is not known, so its statistic is learned and K / position are searched."""
    from dpcheck import AuditTarget
    if (is_plugin(template) if search is None else search) and view == "noisy":
        return plugin_stream_search(template, H=H, S=S, A=A, rewards=rewards)[0]
    x, y = worst_case_pair(H, S, A)
    o = background(H)
    _, mu = released_stream(template, x, o, H=H, S=S, A=A, K=K, rewards=rewards, rng=np.random.default_rng(0),
                            size=1, view=view)
    _, mu_p = released_stream(template, y, o, H=H, S=S, A=A, K=K, rewards=rewards, rng=np.random.default_rng(0),
                              size=1, view=view)
    dyadic = [(1 << j) - 1 for j in range(K.bit_length()) if (1 << j) <= K]      # releases B(2^j)
    mu_d, mu_pd = mu[dyadic].ravel(), mu_p[dyadic].ravel()

    def mechanism(user, rng, size):
        stream, _ = released_stream(template, user, o, H=H, S=S, A=A, K=K, rewards=rewards, rng=rng, size=size,
                                    view=view)
        out = stream[:, dyadic, :].reshape(size, -1)
        if view == "noisy":
            return laplace_llr(out, mu_d, mu_pd)
        # N~ carries the public shifts E/(2S), E/2 and the projection, and a user's noise is unknown:
        # hand the auditor the coordinates the neighbours' true counts differ in, as a vector, and let
        # it choose the event (per-coordinate thresholds, learned scores) on its selection sample
        return out[:, diff]

    diff = mu_d != mu_pd

    suffix = "stream" if view == "noisy" else "planner_view"
    return AuditTarget(name=f"{getattr(template, 'name', 'privatizer')}.{suffix}", mechanism=mechanism,
                       pairs=[(x, y)], claim=template.claim, output="continuous")


def local_target(template, *, H=1, S=2, A=1, rewards=True, search=None):
    """AuditTarget for a local (LDP) privatizer: exactly one user's message, worst-case pair.

    Built-ins: the statistic is the Laplace LLR centred at the message's mean, which for the Laplace
    randomiser is the user's own one-hot increments (computed here from the data). A user's privatizer
    (:func:`is_plugin`; ``search=True/False`` forces the choice) gets :func:`plugin_message_search`
    instead: nothing about its noise is assumed."""
    from dpcheck import AuditTarget
    if is_plugin(template) if search is None else search:
        return plugin_message_search(template, H=H, S=S, A=A, rewards=rewards)[0]
    x, y = worst_case_pair(H, S, A)
    mu = _increment_vector(x, S, A, rewards, noisy_part=False)
    mu_p = _increment_vector(y, S, A, rewards, noisy_part=False)

    def mechanism(user, rng, size):
        p = copy.deepcopy(template)
        p.start(size, H, S, A, 1, np.random.default_rng(0), rewards=rewards)
        st, ac, rw = user.arrays(size)
        return laplace_llr(p.message(st, ac, rw if rewards else None, rng).flat(), mu, mu_p)

    return AuditTarget(name=f"{getattr(template, 'name', 'privatizer')}.message", mechanism=mechanism,
                       pairs=[(x, y)], claim=template.claim, output="continuous")


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


def is_plugin(template) -> bool:
    """True for a user's (plug-in) privatizer: loaded from a file / module (GuardedPrivatizer) or any
    class not defined in ``dpcheck.algorithms.privatizers`` (a subclass of a built-in written elsewhere too)."""
    from dpcheck.algorithms.privatizers.loader import GuardedPrivatizer
    p = template._p if isinstance(template, ClaimedTemplate) else template
    if isinstance(p, GuardedPrivatizer):
        return True
    return not type(p).__module__.startswith("dpcheck.algorithms.privatizers")


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

    def _run(self, user, rng, size, consume):
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

        self._run(user, rng, size, consume)
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

        self._run(user, rng, int(size), consume)
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


# ============================================================ offline privatizers
def offline_worst_datasets(H: int, S: int = 2, A: int = 1, others: int = 20):
    """Neighbouring datasets: ``others`` scripted trajectories spread over states 0 and 1 (so no count is
    near the clip at 0), plus one trajectory replaced by the worst-case pair (sensitivity)."""
    x, y = worst_case_pair(H, S, A)
    rest = [Trajectory(states=(i % 2,) * (H + 1), actions=(0,) * H, rewards=(0.0,) * H) for i in range(others)]
    return rest + [x], rest + [y]


def _dataset_arrays(dataset, runs):
    st = np.stack([np.asarray(t.states) for t in dataset])[None].repeat(runs, 0)
    ac = np.stack([np.asarray(t.actions) for t in dataset])[None].repeat(runs, 0)
    return st, ac


def offline_target(priv, *, H=1, S=2, A=1, gaussian=True):
    from dpcheck import AuditTarget
    from dpcheck.algorithms.privatizers.offline import dataset_counts
    D, Dp = offline_worst_datasets(H, S, A)

    def counts(dataset, runs):
        pair, triple = dataset_counts(*_dataset_arrays(dataset, runs), S, A)
        return pair, triple

    def flat(pair, triple):
        return np.concatenate([pair.reshape(pair.shape[0], -1), triple.reshape(triple.shape[0], -1)], axis=1)

    mu, mu_p = flat(*counts(D, 1))[0], flat(*counts(Dp, 1))[0]
    llr = gaussian_llr if gaussian else laplace_llr

    def mechanism(dataset, rng, size):
        pair, triple = counts(dataset, 1)
        out = priv.privatize(np.repeat(pair, size, 0), np.repeat(triple, size, 0), rng)
        return llr(flat(out.noisy_visits, out.noisy_transitions), mu, mu_p)

    return AuditTarget(name=f"{priv.name}.counts", mechanism=mechanism, pairs=[(tuple(D), tuple(Dp))],
                       claim=priv.claim, output="continuous")


class OfflineReleaseStatistics:
    """mechanism(dataset, rng, size) of an offline plug-in's release: ``release(dataset, rng, size)`` -> the
    flat noisy counts (size, J), drawn by the plug-in with the sampler's own Generator (whatever noise family
    it draws); returned are the coordinates the replaced trajectory changes (or that the pilot found shifted)
    and the 4 learned statistics of
    :class:`StatisticParams` (fitted on a pilot sample, never on the audit's)."""

    def __init__(self, release, params: StatisticParams):
        self.release, self.params = release, params

    def __call__(self, dataset, rng, size):
        x = np.asarray(self.release(dataset, rng, int(size)), float)
        raw = (self.params.d != 0) | self.params.keep       # known to differ, or learned to differ on the pilot
        return np.concatenate([x[:, raw], self.params.scores(x)], axis=1)


def offline_plugin_target(release, pair, d, claim, *, name: str, seed: int = 0, pilot: int = PILOT_SAMPLES):
    """Black-box AuditTarget on an offline plug-in privatizer's release, nothing assumed about its noise:
    the statistics' centres, scales and mean shift are learned from ``pilot`` samples per side drawn with
    seeds disjoint from the audit's (SeedSequence([seed, SEARCH_SALT, 900])), so the choice is independent
    of the certification sample; the auditor then picks its event among the raw differing coordinates and
    the 4 statistics on its selection sample (dpcheck.blackbox). ``pair`` = (D, D'), ``d`` = the count
    difference D - D' (flat, J). Returns (target, details)."""
    from dpcheck import AuditTarget
    x, y = pair
    ss = np.random.SeedSequence([int(seed), SEARCH_SALT, 900]).spawn(2)
    mom_x = _moments(np.asarray(release(x, np.random.default_rng(ss[0]), pilot), float), None)
    mom_y = _moments(np.asarray(release(y, np.random.default_rng(ss[1]), pilot), float), None)
    params = StatisticParams.from_moments(tuple(mom_x), tuple(mom_y), np.asarray(d, float))
    target = AuditTarget(name=f"{name}.released_counts", mechanism=OfflineReleaseStatistics(release, params),
                         pairs=[(x, y)], claim=claim, output="continuous")
    return target, {"statistic": f"plug-in: the {int((np.asarray(d) != 0).sum())} differing counts and 4 learned "
                                 f"statistics (Laplace / Gaussian forms, known and estimated shift; "
                                 f"{pilot} pilot samples per side)", "pilot_samples_per_side": pilot}


def offline_privatizer_plugin_target(priv, *, H=1, S=2, A=1, seed=0, pilot=PILOT_SAMPLES):
    """:func:`offline_target` for a plug-in offline count privatizer: the same neighbouring datasets
    (:func:`offline_worst_datasets`), its ``privatize`` called with the sampler's Generator, and no noise law
    assumed (:func:`offline_plugin_target`: differing counts + learned statistics). Returns (target, details)."""
    from dpcheck.algorithms.privatizers.offline import dataset_counts
    D, Dp = offline_worst_datasets(H, S, A)

    def flat(pair, triple):
        return np.concatenate([pair.reshape(pair.shape[0], -1), triple.reshape(triple.shape[0], -1)], axis=1)

    base = {tuple(D): dataset_counts(*_dataset_arrays(D, 1), S, A), tuple(Dp): dataset_counts(*_dataset_arrays(Dp, 1), S, A)}

    def release(dataset, rng, size):
        pair, triple = base[dataset]
        out = priv.privatize(np.repeat(pair, size, 0), np.repeat(triple, size, 0), rng)
        return flat(out.noisy_visits, out.noisy_transitions)

    d = flat(*base[tuple(D)])[0] - flat(*base[tuple(Dp)])[0]
    return offline_plugin_target(release, (tuple(D), tuple(Dp)), d, priv.claim, name=getattr(priv, "name", "plugin"),
                                 seed=seed, pilot=pilot)


def offline_sensitivity_check(priv, *, gaussian: bool, H: int = 2, S: int = 2, A: int = 2) -> Check:
    """whitebox.sensitivity of an offline privatizer, by brute force over every pair of trajectories of
    a tiny (H, S, A) model (sensitivity): the largest change of the pair / triple counts when one trajectory
    is replaced, against the declared sensitivity -- l2 per family and the realised rho (Gaussian), l1 of
    both families together and the realised eps (Laplace)."""
    import itertools
    from dpcheck.algorithms.privatizers.offline import dataset_counts
    Hs = H
    trajs = [(s, a) for s in itertools.product(range(S), repeat=Hs + 1) for a in itertools.product(range(A), repeat=Hs)]
    st = np.array([t[0] for t in trajs])[:, None, :]
    ac = np.array([t[1] for t in trajs])[:, None, :]
    pair, triple = dataset_counts(st, ac, S, A)
    P, T = pair.reshape(len(trajs), -1), triple.reshape(len(trajs), -1)
    norm = 2 if gaussian else 1
    dp_ = np.linalg.norm(P[:, None] - P[None], ord=norm, axis=-1) if norm == 2 else np.abs(P[:, None] - P[None]).sum(-1)
    dt_ = np.linalg.norm(T[:, None] - T[None], ord=norm, axis=-1) if norm == 2 else np.abs(T[:, None] - T[None]).sum(-1)
    if not (hasattr(priv, "sigma") or hasattr(priv, "scale")):
        # a plug-in (OfflineCountPrivatizer): its noise law is its own, so the brute force is held against the
        # sensitivity it declares (or the paper's sqrt(2H) / 4H); its budget is whitebox.dp_event's to account
        sens = getattr(priv, "sensitivity", None)
        declared = float(sens(Hs)) if callable(sens) else (math.sqrt(2.0 * Hs) if gaussian else 4.0 * Hs)
        worst = float(max(dp_.max(), dt_.max())) if gaussian else float((dp_ + dt_).max())
        ok = worst <= declared * (1 + 1e-9)
        measured = {"max_change": worst, "norm": "l2 per family" if gaussian else "l1 of both families",
                    "declared": declared, "epsilon_lower_bound": None, "confidence": 1.0, "samples": len(trajs) ** 2}
        reason = (f"max {'l2' if gaussian else 'l1'} change {worst:.4g} {'<=' if ok else '>'} the sensitivity the "
                  f"plug-in is calibrated for, {declared:.4g}")
    elif gaussian:
        declared = priv.sensitivity(Hs)
        worst = float(max(dp_.max(), dt_.max()))
        ok = worst <= declared + 1e-9 and abs(worst - declared) < 1e-9
        rho_real = gaussian_rho_squared(dp_.max() ** 2 + dt_.max() ** 2, priv.sigma(Hs))
        measured = {"max_l2_pair": float(dp_.max()), "max_l2_triple": float(dt_.max()), "declared": declared,
                    "rho_realised": float(rho_real), "epsilon_lower_bound": None, "confidence": 1.0,
                    "samples": len(trajs) ** 2}
        reason = (f"max l2 change {worst:.4g} {'=' if ok else '!='} declared sqrt(2H) = {declared:.4g}; "
                  f"realised rho = {rho_real:.4g} (claimed {priv.rho:g})")
        ok = ok and rho_real <= priv.rho * (1 + 1e-9)
    else:
        declared = priv.sensitivity(Hs)
        worst = float((dp_ + dt_).max())
        eps_real = worst / priv.scale(Hs)
        ok = worst <= declared + 1e-9 and eps_real <= priv.epsilon * (1 + 1e-9)
        measured = {"max_l1_both_families": worst, "declared": declared, "epsilon_realised": eps_real,
                    "epsilon_lower_bound": eps_real, "confidence": 1.0, "samples": len(trajs) ** 2}
        reason = f"max l1 change {worst:g} vs declared 4H = {declared:g}; realised eps = {eps_real:.4g}"
    return Check(id="whitebox.sensitivity", kind="whitebox", verdict=PASS if ok else FAIL,
                 claim={"statement": "one replaced trajectory moves each family by <= sqrt(2H) in l2 (Gaussian) / "
                                     "both families by <= 4H in l1 (Laplace)", "source": priv.claim.source},
                 measured=measured, details={"trajectories": len(trajs), "H": Hs, "S": S, "A": A},
                 reason=reason)


def offline_noise_checks(priv, *, runs: int, rng, alpha: float, H: int = 3, S: int = 3, A: int = 2) -> list:
    """The offline privatizer on R = ``runs`` repetitions of constant counts (5 everywhere): the uniform
    noise bound |n' - n| <= E/2 (Lemma C.2; probability check at failure rate beta), the sum identity and
    non-negativity of ntil (eq. 3-4) and a valid P~ (eq. 5). Returns the three checks."""
    from dpcheck.checks import probability_check
    R, Hn, Sn, An = runs, H, S, A
    pair = np.zeros((R, Hn, Sn, An)) + 5
    triple = np.zeros((R, Hn, Sn, An, Sn)) + 5
    out = priv.privatize(pair, triple, rng)
    E = out.width
    err = np.maximum(np.abs(out.noisy_visits - pair).reshape(R, -1).max(1),
                     np.abs(out.noisy_transitions - triple).reshape(R, -1).max(1))
    checks = [probability_check(id="assumption.noise_bound", failures=int((err > E / 2).sum()), runs=R,
                                beta=priv.beta, alpha=alpha, what="|n' - n| <= E/2 for all counts",
                                claim={"statement": "w.p. >= 1 - delta, |n' - n| <= E/2 uniformly (Lemma C.2; docs/derivations.md#widths-e)",
                                       "source": priv.claim.source})]
    bad_sum = np.abs(out.visits - out.transitions.sum(-1)) > 1e-9 * np.maximum(1, out.visits)
    bad_sum |= np.any(out.transitions < 0, axis=-1)
    checks.append(invariant_check(id="assumption.sum_consistency", violations=int(bad_sum.sum()),
                                  total=int(bad_sum.size),
                                  claim={"statement": "ntil(s,a) = sum_s' ntil(s,a,s'), ntil >= 0 (eq. 3-4)",
                                         "source": priv.claim.source}, what="sum consistency"))
    P = out.kernel
    bad = int((~(np.all(P >= 0, -1) & (np.abs(P.sum(-1) - 1) < 1e-9))).sum())
    checks.append(invariant_check(id="assumption.valid_transition", violations=bad, total=int(P[..., 0].size),
                                  claim={"statement": "P~ is a distribution (eq. 5, Remark 3.3)",
                                         "source": priv.claim.source}, what="valid P~"))
    return checks


# ============================================================ white box: declared DpEvent vs claim
def dp_event_check(event, claim, *, add_remove_event=None, label="privatizer") -> Check:
    """whitebox.dp_event: the PLD of the declared DpEvent against the claim.

    DP / JDP / LDP claims: eps_PLD at the claimed delta (1e-12 for pure claims) must not exceed the
    claimed eps (slack 2e-3 for the PLD discretisation). zCDP claims: the PLD delta(eps) must not exceed the
    claim's profile delta(eps) at a few eps.
    """
    closed = closed_form(event)
    measured = {"closed_form": closed}
    details = {"event": repr(event)}
    src = claim.source
    if claim.notion == "zCDP":
        # a fixed grid and the eps where the claimed profile is at 1e-2 ... 1e-10 (the conversion
        # rho + 2 sqrt(rho ln 1/delta)): at large rho every eps of the fixed grid has delta ~ 1 on both sides
        rho = claim.rho
        grid = sorted({0.25, 0.5, 1.0, 2.0, 4.0,
                       *(epsilon_from_rho(rho, d) for d in (1e-2, 1e-5, 1e-10))})
        rows = [{"epsilon": e, "delta_pld": pld_delta(event, e), "delta_claimed": claim.delta_at(e)} for e in grid]
        bad = [r for r in rows if r["delta_pld"] > r["delta_claimed"] * (1 + 1e-6) + 1e-12]
        measured.update(profile=rows, epsilon_lower_bound=None, confidence=1.0, samples=0)
        m = gaussian_multiplier(event)
        over = m is not None and closed["rho"] > rho * (1 + 1e-9)    # a Gaussian is exactly 1/(2 m^2)-zCDP
        verdict = FAIL if bad or over else PASS
        reason = (f"declared event's delta(eps) exceeds the claimed rho={rho:g}-zCDP profile at eps="
                  f"{bad[0]['epsilon']:g}" if bad else
                  f"declared Gaussian event is exactly rho = {closed['rho']:.6g}-zCDP > claimed {rho:g}" if over else
                  f"declared event (rho = {closed['rho']:.4g}) stays within the claimed rho={rho:g}-zCDP profile")
    else:
        at = claim.delta if claim.delta > 0 else PLD_DELTA
        eps = pld_epsilon(event, at)
        measured.update(epsilon_pld=eps, at_delta=at, epsilon_lower_bound=eps, confidence=1.0, samples=0,
                        delta_at_claimed_epsilon=pld_delta(event, claim.epsilon))
        if add_remove_event is not None:
            measured["epsilon_pld_add_remove"] = pld_epsilon(add_remove_event, at)
        ok = eps <= claim.epsilon * (1 + EPS_SLACK) + EPS_SLACK
        verdict = PASS if ok else FAIL
        dtxt = f" at delta={claim.delta:g}" if claim.delta > 0 else ""
        reason = (f"declared noise gives eps = {eps:.4g}{dtxt} under {claim.neighbouring} "
                  f"({'<=' if ok else '>'} claimed {claim.epsilon:g})")
        if add_remove_event is not None:
            reason += f"; add/remove: {measured['epsilon_pld_add_remove']:.4g}"
    return Check(id="whitebox.dp_event", kind="whitebox", verdict=verdict,
                 claim=dict(claim.to_dict(), statement=claim.describe(), source=src), measured=measured,
                 details=details, reason=f"{label}: {reason}")


# ============================================================ white box: sensitivity search
def family_vectors_central(template, users, *, H, S, A, K, rewards):
    """True node p-sums of every family for a sequence of K users (one per episode), noise off:
    (families, nodes * counters). Uses the privatizer's own increments and a zero-noise tree."""
    from dpcheck.algorithms.privatizers.base import episode_increments
    from dpcheck.algorithms.privatizers.binary_mechanism import BinaryMechanism, TreeCounter
    fams = []
    incs = [episode_increments(*u.arrays(1), S, A, rewards) for u in users]
    for f in range(3 if rewards else 2):
        items = [inc[f].reshape(-1) for inc in incs]
        mech = BinaryMechanism(TreeCounter(K, 0.0), (items[0].size,), np.random.default_rng(0))
        nodes = []
        for z in items:
            mech.step(z)
            nodes.append(mech.completed_node()[1])
        fams.append(np.concatenate(nodes))
    return fams


def family_vectors_local(users, *, H, S, A, rewards):
    from dpcheck.algorithms.privatizers.base import episode_increments
    u = users[0]
    return [x.reshape(-1) for x in episode_increments(*u.arrays(1), S, A, rewards) if x is not None]


def sensitivity_search(template, *, kind: str, H=2, S=3, A=2, K=6, rewards=True, examples=300,
                       position=1, seed=0) -> dict:
    """Search neighbouring trajectories (hypothesis, guided towards large distances with ``target``)
    for the largest per-family l1 distance of the true node vectors (central) or message means (local).

    Returns {"max_distance": [per family], "worst_pair_distance": [...], "examples": n}.
    """
    from hypothesis import HealthCheck, given, settings, strategies as st, target as hyp_target

    def traj():
        return st.tuples(st.lists(st.integers(0, S - 1), min_size=H + 1, max_size=H + 1),
                         st.lists(st.integers(0, A - 1), min_size=H, max_size=H),
                         st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=H, max_size=H)).map(
            lambda t: Trajectory(tuple(t[0]), tuple(t[1]), tuple(t[2])))

    others = background(H)

    def dist(x, y):
        if kind == "central":
            ux = [others] * (position - 1) + [x] + [others] * (K - position)
            uy = [others] * (position - 1) + [y] + [others] * (K - position)
            fx = family_vectors_central(template, ux, H=H, S=S, A=A, K=K, rewards=rewards)
            fy = family_vectors_central(template, uy, H=H, S=S, A=A, K=K, rewards=rewards)
        else:
            fx = family_vectors_local([x], H=H, S=S, A=A, rewards=rewards)
            fy = family_vectors_local([y], H=H, S=S, A=A, rewards=rewards)
        return [float(np.abs(a - b).sum()) for a, b in zip(fx, fy)]

    best = {"d": None}

    @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(traj(), traj())
    def search(x, y):
        d = dist(x, y)
        hyp_target(sum(d))
        best["d"] = d if best["d"] is None else [max(a, b) for a, b in zip(best["d"], d)]

    search()
    wx, wy = worst_case_pair(H, S, A)
    return {"max_distance": best["d"], "worst_pair_distance": dist(wx, wy), "examples": examples,
            "instance": {"H": H, "S": S, "A": A, "K": K, "position": position}}


def sensitivity_check(template, *, kind: str, claim, H=2, S=3, A=2, K=6, rewards=True, examples=300) -> Check:
    """whitebox.sensitivity: searched distances <= declared sensitivity per family, and the realised
    eps = sum_f Delta_f / b against the claim (Qiao & Wang 2023 Lemmas 5.1 / 5.6, Qiao & Wang 2024 Lemmas 5.1 / 5.4)."""
    from dpcheck.algorithms.privatizers.binary_mechanism import tree_levels
    L = tree_levels(K)
    d = declaration(template, H, S, A, K, rewards)
    b, declared = d.scale, d.sensitivity
    if b is None or declared is None:
        # a subclass of a built-in that changes its scale declares from a started copy, which carries
        # no scale: read the one its noise is drawn with off that copy
        p = copy.deepcopy(template)
        p.start(1, H, S, A, K, np.random.default_rng(0), rewards=rewards)
        b = p.node_scale() if kind == "central" else p.noise_scale()
        declared = p.tree("replacement").sensitivity if kind == "central" else 2.0 * H
    res = sensitivity_search(template, kind=kind, H=H, S=S, A=A, K=K, rewards=rewards, examples=examples)
    dmax = [max(a, b_) for a, b_ in zip(res["max_distance"], res["worst_pair_distance"])]
    eps_real = sum(dmax) / b
    over = [d for d in dmax if d > declared + 1e-9]
    add_remove = sum(H * (L if kind == "central" else 1) for _ in dmax) / b
    if over:
        verdict, reason = FAIL, f"a neighbouring pair moves a family by {max(over):g} > declared {declared:g}"
    elif eps_real > claim.epsilon * (1 + 1e-9):
        verdict, reason = FAIL, (f"realised eps = sum_f Delta_f / b = {eps_real:.4g} > claimed {claim.epsilon:g} "
                                 f"under replacement (calibration={getattr(template, 'calibration', '?')}; "
                                 f"add/remove gives {add_remove:.4g})")
    else:
        verdict, reason = PASS, (f"max per-family distance {max(dmax):g} <= declared {declared:g}; realised "
                                 f"eps = {eps_real:.4g} <= claimed {claim.epsilon:g}")
    return Check(id="whitebox.sensitivity", kind="whitebox", verdict=verdict,
                 claim=dict(claim.to_dict(), statement=f"per-family l1 sensitivity <= {declared:g} "
                            f"({'2 H L' if kind == 'central' else '2 H'} under replacement); {claim.describe()}"),
                 measured={"max_distance_per_family": dmax, "declared_sensitivity": declared, "noise_scale": b,
                           "epsilon_realised": eps_real, "epsilon_realised_add_remove": add_remove,
                           "epsilon_lower_bound": eps_real, "confidence": 1.0, "samples": examples},
                 details=res, reason=reason)


# ============================================================ white box: tree noise structure
def tree_covariance_z(releases: np.ndarray, b: float) -> dict:
    """Empirical covariance of release noise B(1..K) against the tree's, ``Cov(B(t), B(t')) = (#nodes
    shared by the two releases) x 2 b^2``. releases (K, samples). Returns max |z| over (t, t')."""
    from dpcheck.algorithms.privatizers.binary_mechanism import release_nodes
    K = releases.shape[0]
    emp = np.cov(releases)
    nodes = [set(release_nodes(t)) for t in range(1, K + 1)]
    want = np.array([[len(x & y) for y in nodes] for x in nodes]) * 2 * b * b
    var = np.diag(want)
    # standard error of a sample covariance of (near-)Gaussian-like variables, with a 4th-moment
    # factor 3 for Laplace tails (kurtosis 6): generous, the defect gives z in the hundreds
    se = np.sqrt(3 * (np.outer(var, var) + want ** 2) / releases.shape[1])
    return {"max_z": float((np.abs(emp - want) / se).max()), "empirical": emp, "expected": want,
            "samples": releases.shape[1]}


def tree_noise_structure(mech_cls, *, K: int, b: float, counters: int, seed: int) -> dict:
    """The tree-covariance test on a bare mechanism class (zero data)."""
    from dpcheck.algorithms.privatizers.binary_mechanism import TreeCounter
    mech = mech_cls(TreeCounter(K, node_scale=b), (counters,), np.random.default_rng(seed))
    rel = np.empty((K, counters))
    for t in range(K):
        mech.step(np.zeros(counters))
        rel[t] = mech.release()
    return tree_covariance_z(rel, b)


def release_error_structure(template, *, runs=2_000, K=8, seed=0, rewards=True) -> dict:
    """The same covariance test on a central privatizer's own releases: the errors N^ - N (and R~ - R)
    of every counter and run are samples of the tree's noise process (data-independent, Section 5.1)."""
    H, S, A = 1, 2, 1
    p = copy.deepcopy(template)
    p.start(runs, H, S, A, K, np.random.default_rng(seed), rewards=rewards)
    o = background(H)
    errs = []
    for _ in range(K):
        st, ac, rw = o.arrays(runs)
        p.observe(st, ac, rw if rewards else None)
        errs.append((_flat_release(p.release()) - _flat_true(p.true_counts())).ravel())
    return tree_covariance_z(np.stack(errs), p.node_scale())     # (K, runs * counters)


def tree_reuse_check(template, *, runs=2_000, K=8, seed=0, rewards=True, source="") -> Check:
    """whitebox.tree_noise_reuse: the release errors of the privatizer have the tree's covariance."""
    res = release_error_structure(template, runs=runs, K=K, seed=seed, rewards=rewards)
    ok = res["max_z"] < 6.0
    return Check(id="whitebox.tree_noise_reuse", kind="whitebox", verdict=PASS if ok else FAIL,
                 claim={"statement": "node noise drawn once and reused: Cov(B(t),B(t')) = #shared nodes x 2b^2",
                        "source": source or "Chan, Shi & Song 2011; Qiao & Wang 2023, Section 5.1, docs/derivations.md#readings"},
                 measured={"max_z": res["max_z"], "samples": res["samples"], "K": K, "confidence": 1.0,
                           "epsilon_lower_bound": None},
                 details={"expected_cov": res["expected"], "empirical_cov": res["empirical"],
                          "threshold": "max |z| < 6 (z with a 3x kurtosis allowance for Laplace tails)"},
                 reason=(f"release covariance matches the tree (max |z| = {res['max_z']:.2f})" if ok else
                         f"release covariance differs from the tree's (max |z| = {res['max_z']:.1f}): "
                         f"node noise is not drawn once and reused"))


# ============================================================ Assumption 3.1 over R repetitions
def assumption_checks(template, *, runs=200, H=2, S=3, A=2, K=64, rewards=True, rng, beta=None, alpha=0.05,
                      source="") -> list:
    """Run the privatizer on R = ``runs`` independent repetitions (batched) of random user sequences
    and check Assumption 3.1 part by part. Users' trajectories are uniform random (the assumption is
    claimed for every user sequence; the error of N^ does not depend on the data, docs/derivations.md#widths-e)."""
    from dpcheck.audits.lib.tabular import CountAssumptionMonitor
    p = copy.deepcopy(template)
    p.start(runs, H, S, A, K, rng, rewards=rewards)
    beta = beta if beta is not None else getattr(p, "beta", 0.1)
    mon = CountAssumptionMonitor(runs, p.width, source=source, has_rewards=rewards)
    data = np.random.default_rng(rng.integers(2**63))
    mon.update(p.release(), p.true_counts())
    for _ in range(K - 1):
        st = data.integers(0, S, (runs, H + 1))
        ac = data.integers(0, A, (runs, H))
        rw = data.random((runs, H)) if rewards else None
        p.observe(st, ac, rw)
        mon.update(p.release(), p.true_counts())
    return mon.checks(beta=beta, alpha=alpha)


# ============================================================ helpers of the privatizer audits
# (default, --quick) samples per side of a privatizer's black-box audit: the privatizer audits' default
# (audits/privatizer_audits.py), and the budget dp_ucbvi and dp_nash_vi give a plug-in's searched audit
PRIVATIZER_SAMPLES = (10**6, 2 * 10**5)




def privatizer_notion(p, own_claim=None) -> str:
    """"JDP" or "LDP" for a privatizer: its declared claim's notion first (privacy declared as data: a
    CountPrivatizer subclass inherits ``notion = "JDP"`` even when its claim says LDP), then its ``notion``
    attribute, then the Local hook ``message``; JDP otherwise (the non-private baseline included)."""
    if own_claim is not None and getattr(own_claim, "notion", None) in ("JDP", "LDP"):
        return own_claim.notion
    return "LDP" if (getattr(p, "notion", "JDP") == "LDP" or callable(getattr(p, "message", None))) else "JDP"


def declaration(p, H: int, S: int, A: int, K: int, rewards: bool = True):
    """What privatizer ``p`` declares for K users of an (H, S, A) model: claim, DpEvent per neighbouring
    relation, width E (:class:`dpcheck.algorithms.privatizers.base.Declaration`), from its parameters and the
    sizes, nothing run: ``p.declare(...)``. A plug-in without ``declare`` gets the plug-in fallback,
    read off a started copy (:func:`dpcheck.algorithms.privatizers.base.declare_by_starting`)."""
    from dpcheck.algorithms.privatizers.base import declare_by_starting
    declare = getattr(p, "declare", None)
    if callable(declare):
        d = declare(H, S, A, K, rewards=rewards)
        if d.width is not None:
            return d
        # width_mode="calibrated": E is a Monte-Carlo quantile drawn when the privatizer starts
    return declare_by_starting(p, H, S, A, K, rewards=rewards)


def width_eps_slope(make, eps_grid, *, H: int, S: int, A: int, K: int, rewards: bool = True) -> float:
    """The log-log slope in eps of the width E(eps) privatizer ``make(eps)`` declares (:func:`declaration`)
    for K users of an (H, S, A) model, over ``eps_grid``. The regret theorems bound the privacy cost through
    Assumption 3.1, linearly in E, and E = O~(1/eps) is a property of the papers' Laplace privatizers, not of
    every privatizer (a Gaussian one has E ~ eps^-1/2 at large eps): a plug-in's privacy cost at fixed K is
    claimed to scale with this slope (DP-UCBVI: Qiao & Wang 2023, Thms 5.2 / 5.7; DP-Nash-VI: Qiao & Wang
    2024, Thms 5.2 / 5.5 through Theorem 4.1). Used by dp_ucbvi and dp_nash_vi."""
    Es = [float(declaration(make(float(e)), H, S, A, K, rewards).width) for e in eps_grid]
    return float(np.polyfit(np.log(np.asarray(eps_grid, float)), np.log(Es), 1)[0])


def claim_for_families(p, rewards):
    """The privatizer's claim once it knows whether it runs with 2 or 3 families (rewards or not)."""
    return declaration(p, 1, 2, 1, 1, rewards).claim


def privatizer_class(p) -> type:
    """The class a user wrote (unwrapping the loader's GuardedPrivatizer), for labels."""
    return type(p.__dict__.get("_inner", p))


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
    chosen = ", ".join(f"{k}={v}" for k, v in info["chosen"].items() if k != "projected_epsilon_lower_bound")
    details = dict(check.details, search=info["search"], chosen=info["chosen"],
                   pilot_samples_per_side=info["pilot_samples_per_side"], instance=info["instance"],
                   method=("plug-in privatizer, black box: " + info["description"] + "; " + check.details["method"]))
    if "long_configurations_skipped" in info:
        details["long_configurations_skipped"] = info["long_configurations_skipped"]
    return replace(check, details=details, reason=f"{check.reason} [searched {search}: {chosen}]")



class ClaimedTemplate:
    """A privatizer template whose claim is fixed (the 2- or 3-family one) before it is started."""

    def __init__(self, p, claim, rewards):
        self._p, self.claim, self.name = p, claim, getattr(p, "name", type(p).__name__)

    def __deepcopy__(self, memo):
        return copy.deepcopy(self._p, memo)

