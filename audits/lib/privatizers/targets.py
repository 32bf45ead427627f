"""Black-box targets (dpcheck.AuditTarget) of the built-in online count privatizers.

:func:`central_target` (the released stream N^ and R~ after each of the K episodes) and :func:`local_target`
(one user's message). The statistic is the Neyman-Pearson log-likelihood ratio of the declared noise on the
coordinates that differ (for the tree: the nodes (j,1) = B(2^j) holding user 1), so the auditor's threshold
events are the optimal ones. Instances are small (H = 1, S = 2) on purpose: with 6 shifted Laplace coordinates
the likelihood ratio saturates with probability 1/64 per level, which is what makes a tight bound reachable
from 10^6 samples. A user's privatizer (:func:`dpcheck.audits.lib.privatizers.declared.is_plugin`) is handed
to the searched black box of :mod:`dpcheck.audits.lib.privatizers.plugin_search` instead.
"""
from __future__ import annotations

import copy

import numpy as np

from dpcheck.audits.lib.privatizers.neighbours import Trajectory, background, laplace_llr, worst_case_pair
from dpcheck.audits.lib.privatizers.declared import is_plugin
from dpcheck.audits.lib.privatizers.plugin_search import _increment_vector, plugin_message_search, plugin_stream_search


# ============================================================ online privatizers: streams and messages
VIEWS = ("noisy", "planner")


def flat_release(pc, view: str = "noisy") -> np.ndarray:
    """One release as a vector per run. ``view="noisy"``: N^ (and R~) -- the tree's output, where the
    Laplace LLR is the optimal statistic; ``"planner"``: N~ (and R~) -- what the planner actually reads.
    For the built-ins N~ is the Section 5.1.1 post-processing of N^, so "noisy" suffices; a user's privatizer only
    self-reports its noisy_* fields, so its planner view must be audited too."""
    if view not in VIEWS:
        raise ValueError(f"view must be one of {VIEWS}, got {view!r}")
    from dpcheck.algorithms.privatizers.base import flatten_counts
    v, t = (pc.noisy_visits, pc.noisy_transitions) if view == "noisy" else (pc.visits, pc.transitions)
    return flatten_counts(v, t, pc.rewards)


def flat_true(tc) -> np.ndarray:
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
        out.append(flat_release(p.release(), view))
        true.append(flat_true(p.true_counts())[0])
    return np.stack(out, axis=1), np.stack(true)


#: samples per side of a built-in privatizer's planner-view black box (at most: the audit's own budget if smaller).
#: N~ carries the LP's shifts, so its event is learned and far from tight (eps_lb 0.15-0.4 for a correct privatizer
#: at eps = 1); a raw count fed to the LP where N^ < 0 shows eps_lb > 7 at 40,000. Each sample costs the LP of every
#: release, and the learned scorers' fit ~1 s of CPU whatever the samples (~1.5 s in all).
PLANNER_VIEW_SAMPLES = 40_000


def central_target(template, *, H=1, S=2, A=1, K=2, rewards=True, view="noisy", search=None):
    """AuditTarget for a central (JDP) privatizer: the worst-case user at position 1 (she is in all L
    tree levels: nodes (j, 1), released alone as B(2^j)), the other K-1 users scripted.

    The statistic is a function of the released stream only (post-processing), so the bound is valid
    whatever the privatizer does; it is the optimal (Neyman-Pearson) one for a correct tree on N^.
    ``view="planner"`` audits N~ instead (see :func:`flat_release`). A user's privatizer
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
