"""Black-box privacy targets of DP-APVI (Qiao & Wang 2022, Theorem 3.4 / Lemma C.1).

:func:`counts_target` (the released noisy counts n' of scripted datasets that differ in ONE trajectory; the
replaced trajectory visits different cells at every step and in a step-dependent way, so noise shared across
steps h cancels from the likelihood ratio and is exposed) and :func:`policy_target` (the output policy).
"""
from __future__ import annotations

import math

import numpy as np

from dpcheck.checks import Check

from dpcheck.audits.lib import privatizers as pa

from dpcheck.audits.lib.offline.spec import APVISpec, _counts, _flat, _repeat


# ============================================================ privacy: black box
def step_swap_pair(H: int, S: int, A: int):
    """The replaced trajectory (x in D, y in D'): x visits state 0 at odd steps and 1 at even ones, y the
    opposite, both with action 0. Every step's pair and triple counts move by 2 in l1 (sqrt(2) in l2: the
    declared sqrt(2H) per family is attained, Lemma C.1's sensitivity), and the changes alternate in sign along h, so
    their sum over steps cancels (all but one step for odd H): noise shared across steps h (instead of
    fresh per h) drops out of the likelihood ratio and the two datasets become perfectly (odd H:
    far more) distinguishable than the claim allows."""
    xs = tuple(h % 2 for h in range(H + 1))
    ys = tuple(1 - v for v in xs)
    return (pa.Trajectory(xs, (0,) * H, (1.0,) * H), pa.Trajectory(ys, (0,) * H, (1.0,) * H))


def scripted_background(H: int, S: int, A: int, copies: int):
    """``copies`` of every constant and alternating trajectory over states {0, 1} and actions {0, A-1}: every
    cell the replaced trajectory touches holds >= ``copies`` counts, so the clip at 0 does not blunt the
    likelihood ratio (it is post-processing, so a blunted one would still be valid, only weaker)."""
    base = []
    for s0 in (0, 1):
        for a in sorted({0, A - 1}):
            base.append(pa.Trajectory((s0,) * (H + 1), (a,) * H, (0.0,) * H))
            base.append(pa.Trajectory(tuple((s0 + h) % 2 for h in range(H + 1)), (a,) * H, (0.0,) * H))
    return base * copies


def counts_target(spec: APVISpec, *, H: int = 2, S: int = 2, A: int = 1, data=None, max_batch: int = 1 << 22,
                  seed: int = 0):
    """dpcheck AuditTarget on the released statistics n' (noisy pair and triple counts, what DP-APVI
    releases; ntil, P~ and the policy are post-processing) of two datasets that differ in ONE trajectory.

    Datasets: ``data`` (an OfflineDataset of one run, the user's) with its first trajectory replaced by
    the step-swapping pair (:func:`step_swap_pair`), else scripted backgrounds (:func:`scripted_background`)
    plus the pair. Statistic: the likelihood ratio of the declared noise on the coordinates that differ
    (Gaussian: linear; Laplace: sum of |.| differences), the optimal test for correctly calibrated noise; for
    a plug-in privatizer (``spec.plugin``) nothing is assumed about its noise: the differing counts and
    statistics learned on a pilot sample (:func:`dpcheck.audits.lib.privatizers.offline_plugin_target`, pilot
    seeds from ``seed``, disjoint from the audit's). ``max_batch`` bounds the counts held at once (large user datasets are privatised in sub-batches).
    """
    from dpcheck import AuditTarget
    algo = spec.make()
    x, y = None, None
    if data is not None:
        H, S, A = data.H, data.S, data.A
        x, y = step_swap_pair(H, S, A)
        st, ac = data.states[0].copy(), data.actions[0].copy()
        D = (np.concatenate([np.asarray(x.states)[None], st[1:]]), np.concatenate([np.asarray(x.actions)[None], ac[1:]]))
        Dp = (np.concatenate([np.asarray(y.states)[None], st[1:]]), np.concatenate([np.asarray(y.actions)[None], ac[1:]]))
        where = f"your dataset (n={data.n}, H={H}, S={S}, A={A}), trajectory 0 replaced"
    else:
        x, y = step_swap_pair(H, S, A)
        copies = max(5, int(math.ceil(3 * spec.noise_sd(H))))
        bg = scripted_background(H, S, A, copies)
        D = tuple(np.stack([np.asarray(getattr(t, f)) for t in bg + [x]]) for f in ("states", "actions"))
        Dp = tuple(np.stack([np.asarray(getattr(t, f)) for t in bg + [y]]) for f in ("states", "actions"))
        where = f"{len(bg)} scripted trajectories + 1 replaced (H={H}, S={S}, A={A})"
    cD, cDp = _counts(*D, S, A), _counts(*Dp, S, A)
    mu, mu_p = _flat(cD.visits, cD.transitions)[0], _flat(cDp.visits, cDp.transitions)[0]
    diff = mu != mu_p
    m, m_p = mu[diff], mu_p[diff]
    per = max(1, max_batch // mu.size)
    keys = {"D": cD, "D'": cDp}

    def mechanism(which, rng, size):
        out = np.empty(size)
        for i in range(0, size, per):
            k = min(per, size - i)
            pc = algo.private_counts(_repeat(keys[which], k), rng)
            z = _flat(pc.noisy_visits, pc.noisy_transitions)[:, diff]
            out[i:i + k] = (pa.gaussian_llr(z, m, m_p) if spec.gaussian
                            else pa.laplace_llr(z, m, m_p))
        return out

    info = {}
    if spec.plugin is not None:
        # a plug-in's noise law is its own: no likelihood ratio is assumed; learned statistics instead
        # every count is watched (a plug-in may leak through counts the neighbours share) unless the dataset
        # is large (a user's): then the differing ones, so the samples held stay (size, differing)
        cols = np.arange(mu.size) if mu.size <= 4096 else np.flatnonzero(diff)

        def release(which, rng, size):
            # n' and the ntil the planner reads: a plug-in's post-processing that reads the exact counts leaks
            # through ntil alone (both are watched; ntil of a correct plug-in is a post-processing of n')
            out = np.empty((size, 2 * cols.size))
            for i in range(0, size, per):
                k = min(per, size - i)
                pc = algo.private_counts(_repeat(keys[which], k), rng)
                out[i:i + k, :cols.size] = _flat(pc.noisy_visits, pc.noisy_transitions)[:, cols]
                out[i:i + k, cols.size:] = _flat(pc.visits, pc.transitions)[:, cols]
            return out
        shift = (mu - mu_p)[cols]
        t, info = pa.offline_plugin_target(release, ("D", "D'"), np.concatenate([shift, shift]), spec.claim(),
                                           name=f"{type(algo).__name__}[{spec.plugin.label}]", seed=seed)
    else:
        t = AuditTarget(name=f"{type(algo).__name__}.released_counts", mechanism=mechanism, pairs=[("D", "D'")],
                        claim=spec.claim(), output="continuous")
    return t, {"datasets": where, **info, "differing_coordinates": int(diff.sum()),
               "statistic": "likelihood ratio of the declared noise on the differing coordinates",
               "replaced": {"x": list(x.states), "y": list(y.states)}}


def policy_datasets(H: int = 2, S: int = 2, A: int = 2, copies: int = 7):
    """Two datasets (states, actions) differing in one trajectory on which the output policy hinges.

    Background: ``copies`` of all S^(H+1) A^H trajectories (every cell equally counted, so every action
    ties under P~). x takes action 0 at every step and lands in state 1 after step 1, y takes action A-1
    and lands there too: in D action 0 has the larger count and the higher P~(1|.) (the better successor
    under :func:`policy_reward`), in D' action A-1 does, so the greedy choice flips with the one trajectory."""
    import itertools
    bg = [(s, a) for s in itertools.product(range(S), repeat=H + 1) for a in itertools.product(range(A), repeat=H)]
    bg = bg * copies
    xs = (0,) + (1,) * H
    x = (xs, (0,) * H)
    y = (xs, (A - 1,) * H)
    st = np.array([b[0] for b in bg])
    ac = np.array([b[1] for b in bg])
    D = (np.concatenate([st, [x[0]]]), np.concatenate([ac, [x[1]]]))
    Dp = (np.concatenate([st, [y[0]]]), np.concatenate([ac, [y[1]]]))
    return D, Dp


def policy_reward(H: int, S: int, A: int) -> np.ndarray:
    """Known reward of the policy target: 1 in state 1 at the last step, 1/2 elsewhere (so the action at
    step 1 is chosen by P~(1|s,a)); equal across actions (ties broken by the data)."""
    r = np.full((H, S, A), 0.5)
    r[H - 1] = 0.0
    r[H - 1, 1] = 1.0
    return r


def policy_target(spec: APVISpec, *, H: int = 2, S: int = 2, A: int = 2, mode: str = "practical"):
    """dpcheck AuditTarget on the OUTPUT POLICY (discrete: the greedy policy's code) of DP-APVI run on
    two datasets that differ in one trajectory (:func:`policy_datasets`). Practical constants by default:
    with the paper's the penalties exceed H on small data and the policy is constant (a true but empty pass).
    Returns (target, details)."""
    from dpcheck import AuditTarget
    algo = spec.make(mode=mode)
    E = algo.width(H, S, A)
    copies = max(4, int(math.ceil(2 * E / (S * A))))          # ntil(s,a) ~ copies S^H A^(H-1) S >> E
    D, Dp = policy_datasets(H, S, A, copies)
    keys = {"D": _counts(*D, S, A), "D'": _counts(*Dp, S, A)}
    r = policy_reward(H, S, A)
    weights = A ** np.arange(H * S).reshape(H, S)

    def mechanism(which, rng, size):
        res = algo.run(_repeat(keys[which], size), r, rng)
        return (res.policy * weights).sum(axis=(1, 2)).astype(np.int64)

    t = AuditTarget(name=f"{type(algo).__name__}.policy", mechanism=mechanism, pairs=[("D", "D'")],
                    claim=spec.claim(), output="discrete")
    return t, {"datasets": f"{len(D[0]) - 1} trajectories (every path x {copies}) + 1 replaced (H={H}, S={S}, A={A})",
               "mode": mode, "E": E}


def qualify_policy(check: Check) -> Check:
    """The policy black box's PASS under the one rule of every audit (dpcheck.blackbox.uninformative_pass:
    uninformative when its budget could not have seen a 2x excess)."""
    from dpcheck.blackbox import uninformative_pass
    return uninformative_pass(check)
