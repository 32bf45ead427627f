"""Black-box privacy targets of DP-VAPVI (Qiao & Wang 2022, Theorem 4.1).

:func:`statistics_target` (the Neyman-Pearson log-likelihood ratio of the whole released transcript, 5H
statistics, for a pair of datasets differing in ONE trajectory) and :func:`policy_target` (the output policy as
a discrete label).
"""
from __future__ import annotations

import numpy as np

from dpcheck.audits.lib.offline_linear.setup import SOURCE, STATS, Setup
from dpcheck.audits.lib.offline_linear.statistics import claimed_stds, replicate, residuals


# ============================================================================ black box
def neighbour_datasets(setup: Setup, H: int, K: int = 6, seed: int = 0):
    """Two datasets of K trajectories differing in ONE trajectory (Section 2). Instances: K - 1 scripted
    trajectories spread over the pairs, the replaced one visits, at every step, the pair whose feature is
    farthest from the other's and earns reward 1 vs 0. User data: the user's dataset, its first trajectory
    replaced the same way. -> (states, actions, rewards) x 2 as (n, H+1), (n, H), (n, H)."""
    phi = setup.features
    S, A = phi.shape[:2]
    F = phi.reshape(S * A, -1)
    dist = np.sqrt(((F[:, None] - F[None]) ** 2).sum(-1))
    i, j = np.unravel_index(int(np.argmax(dist + 1e-9 * np.sqrt((F ** 2).sum(-1))[:, None])), dist.shape)
    (sx, ax), (sy, ay) = divmod(int(i), A), divmod(int(j), A)
    if setup.data is not None:
        st, ac, rw = (np.array(x[0]) for x in (setup.data.states, setup.data.actions, setup.data.rewards))
    else:
        rng = np.random.default_rng(seed)
        st = rng.integers(0, S, size=(K, H + 1))
        ac = rng.integers(0, A, size=(K, H))
        rw = np.round(rng.random((K, H)), 1)
        if setup.instance is not None:
            rw = setup.instance.mdp.r[np.arange(H)[None], st[:, :H], ac]
    x = (st.copy(), ac.copy(), rw.copy())
    y = (st.copy(), ac.copy(), rw.copy())
    x[0][0], x[1][0], x[2][0] = sx, ax, 1.0
    y[0][0], y[1][0], y[2][0] = sy, ay, 0.0
    return x, y


def _counts(ds, S, A):
    from dpcheck.algorithms.offline import OfflineDataset
    return OfflineDataset.from_arrays(ds[0], ds[1], ds[2], S=S, A=A).counts(engine="numpy")


def transcript_llr(result, cx, cy, phi, lam, stds) -> np.ndarray:
    """log p(transcript | D) / p(transcript | D') under independent Gaussian noise of the given per-release
    stds (the claim's): a function of the released statistics only (Vtil, sigtil are post-processing)."""
    rx = residuals(result, cx, cx, phi, lam)
    ry = residuals(result, cy, cy, phi, lam)
    out = np.zeros(result.values.shape[0])
    for k in STATS:
        a = (ry[k] ** 2 - rx[k] ** 2).reshape(out.size, -1).sum(-1)
        out += a / (2 * stds[k] ** 2)
    return out


def statistics_target(make_algo, setup: Setup, *, rho_claim: float, H: int, matrix_neighbour: str = "replace",
                      seed: int = 0, pilot: int = 20_000):
    """AuditTarget: DP-VAPVI (no split: one trajectory enters all 5H releases) on two datasets differing in
    one trajectory; the output is the Neyman-Pearson statistic of the whole released transcript (the
    optimal test for correctly calibrated independent noise), audited against the rho-zCDP profile."""
    from dpcheck import AuditTarget, Claim
    S, A = setup.features.shape[:2]
    X, Y = neighbour_datasets(setup, H)
    cx1, cy1 = _counts(X, S, A), _counts(Y, S, A)
    algo = make_algo()
    plugin = getattr(algo, "plugin", None)
    if plugin is not None:
        # a plug-in's noise law is its own: no Gaussian likelihood ratio; the residuals of the transcript
        # against D's noiseless statistics (a function of the released transcript only: Vtil, sigtil are
        # post-processing) and statistics learned on a pilot sample (audits/lib/privatizers/offline_counts.py, offline_plugin_target)
        from dpcheck.audits.lib.privatizers import offline_plugin_target

        sens = algo.sensitivities(H)

        def release(which, rng, size):
            c = replicate(cx1 if which == "D" else cy1, size)
            res = algo.run((c, c), setup.features, rng)
            rx = residuals(res, replicate(cx1, size), replicate(cx1, size), setup.features, algo.lam)
            ry = residuals(res, replicate(cy1, size), replicate(cy1, size), setup.features, algo.lam)
            # the shift stat(D') - stat(D) = rx - ry given the run's own Vtil, sigtil (post-processing, so known
            # to the adversary): the projection of rx on it, each release weighted by 1/sensitivity^2 (an
            # algorithm fact, not a noise law); ~0 under D, ~sum |shift|^2 / sens^2 under D'
            proj = sum(((rx[k] * (rx[k] - ry[k])).reshape(size, -1).sum(1)) / sens[k] ** 2 for k in STATS)
            return np.concatenate([rx[k].reshape(size, -1) for k in STATS] + [proj[:, None]], axis=1)

        J = release("D", np.random.default_rng(0), 1).shape[1]
        t, _ = offline_plugin_target(release, ("D", "D'"), np.zeros(J), plugin.claim,
                                     name=f"dp_vapvi[{getattr(plugin, 'name', 'plug-in')}]", seed=seed,
                                     pilot=pilot)
        return t
    stds = claimed_stds(rho_claim, H, algo.feature_bound, matrix_neighbour)

    def mechanism(which, rng, size):
        c = replicate(cx1 if which == "D" else cy1, size)
        res = algo.run((c, c), setup.features, rng)
        return transcript_llr(res, replicate(cx1, size), replicate(cy1, size), setup.features, algo.lam, stds)

    return AuditTarget(name="dp_vapvi.statistics", mechanism=mechanism, pairs=[("D", "D'")],
                       claim=Claim(rho=rho_claim, notion="zCDP", source=f"{SOURCE}, Theorem 4.1 (Theorem 4.1 / Lemma D.1)"),
                       output="continuous")


def policy_target(make_algo, setup: Setup, *, rho_claim: float, H: int):
    """AuditTarget: the output policy pi_hat of DP-VAPVI (a discrete label) on two neighbouring datasets,
    run with C = Dpen = 0 (see below)."""
    from dpcheck import AuditTarget, Claim
    S, A = setup.features.shape[:2]
    X, Y = neighbour_datasets(setup, H)
    cx1, cy1 = _counts(X, S, A), _counts(Y, S, A)
    a = make_algo()
    # privacy does not depend on C or Dpen (everything after the releases is post-processing): C = Dpen = 0
    # makes the greedy policy follow the released Bellman estimate, the most data-revealing choice
    algo = type(a)(rho=a.rho, delta=a.delta, C=0.0, lam=a.lam, Dpen=0.0, c1=a.c1, c2=a.c2,
                   matrix_neighbour=a.matrix_neighbour, feature_bound=a.feature_bound, split=False,
                   **({} if getattr(a, "plugin", None) is None else {"privatizer": a.plugin}))
    base = A ** np.arange(H * S)

    def mechanism(which, rng, size):
        c = replicate(cx1 if which == "D" else cy1, size)
        res = algo.run((c, c), setup.features, rng)
        return (res.policy.reshape(size, -1) * base).sum(-1) % (2 ** 62)

    return AuditTarget(name="dp_vapvi.policy", mechanism=mechanism, pairs=[("D", "D'")],
                       claim=(Claim(rho=rho_claim, notion="zCDP", source=f"{SOURCE}, Theorem 4.1 (post-processing)")
                              if getattr(a, "plugin", None) is None else a.plugin.claim),
                       output="discrete")
