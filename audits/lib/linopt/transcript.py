"""Privacy checks of Private-LinOpt-VI / -PO (Zhou 2022) on a replayed transcript: the stream sensitivity
(how many tree nodes one user's data enters and by how much, Lemma 6.1, Assumption 1,
docs/derivations.md#neighbouring-relation), the released statistics' black box with the optimal Gaussian
statistic (Theorem 6.4), and the tree's noise reuse (footnote 3).
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from dpcheck import accounting
from dpcheck.audit import ExecutionOptions
from dpcheck.blackbox import blind_pair_pass
from dpcheck.checks import FAIL, PASS, Check, invariant_check
from dpcheck.errors import InputError
from dpcheck.audits.lib.linopt.spec import LinOptSpec, REL_TOL, SOURCE, sizes_for
from dpcheck.audits.lib.linopt.privacy import tree_based, drawn_trees, jdp_users, not_tree_based
from dpcheck.audits.lib.privatizers.whitebox import implied_nodes


# ----------------------------------------------------------------------------- white box: replayed transcript
def _regularizer_base():
    from dpcheck.algorithms.linear import Regularizer
    return Regularizer


class ReplayRegularizer(_regularizer_base()):
    """A Regularizer that runs ``inner`` on the real rows but shows the algorithm a recorded release stream
    (``releases``; None: the inner's own). The inner state's exact statistics are logged at every release.

    Conditioned on a transcript, the Privatizer is a fixed set of Gaussian trees over the rows (the
    estimates, bonuses and value functions are post-processing of earlier releases), so replaying one
    transcript on two neighbouring user sequences isolates what the data does to each stream."""

    def __init__(self, inner, releases=None):
        if not isinstance(inner, _regularizer_base()):
            raise InputError(f"inner must be a Regularizer, got {type(inner).__name__}")
        self.inner, self.releases = inner, releases
        self.name = f"replay({inner.name})"
        self.states = []

    def constants(self, sizes, alpha):
        return self.inner.constants(sizes, alpha)

    def floors(self, sizes, alpha):
        return self.inner.floors(sizes, alpha)

    def shifts(self, sizes, alpha):
        return self.inner.shifts(sizes, alpha)

    def trees(self, sizes):
        return self.inner.trees(sizes)

    def start(self, runs, sizes, rng, alpha):
        state = _ReplayState(self.inner.start(runs, sizes, rng, alpha), self.releases)
        self.states.append(state)
        return state

    def __repr__(self):
        return f"ReplayRegularizer({self.inner!r})"


class _ReplayState:
    def __init__(self, inner, releases):
        self.inner, self.replay = inner, releases
        self.exact_log, self.seen, self.rows = [], [], []

    @property
    def shift_p(self):
        return self.inner.shift_p

    @property
    def shift_r(self):
        return self.inner.shift_r

    def observe(self, *rows):
        self.rows.append(tuple(np.array(x, copy=True) for x in rows))
        self.inner.observe(*rows)

    def release(self):
        own = self.inner.release()
        exact = self.inner.exact() if hasattr(self.inner, "exact") else own
        self.exact_log.append(tuple(np.array(x, copy=True) for x in exact))
        self.seen.append(tuple(np.array(x, copy=True) for x in own))
        if self.replay is None or len(self.exact_log) > len(self.replay):
            return own                       # no recorded release left (the run's final one is never planned with)
        return tuple(np.broadcast_to(x, o.shape).copy() for x, o in zip(self.replay[len(self.exact_log) - 1], own))

    def regularization(self):
        return self.inner.regularization()


def _upper(x: np.ndarray, matrix: bool) -> np.ndarray:
    """The coordinates the Gaussian mechanism acts on: the upper triangle (diagonal included) of a
    symmetric matrix counter (Section 6.1), the vector otherwise."""
    if not matrix:
        return x
    i, j = np.triu_indices(x.shape[-1])
    return x[..., i, j]


def stream_difference(spec: LinOptSpec, env, U, U2, *, seed: int = 0, transcript=None,
                      radius_scale: float = 1.0) -> dict:
    """Replay one transcript on U and on U' (same seeds): per counter kind, the node changes implied by the
    difference of the exact prefix sums, and whether the actions sent to the users other than the replaced
    one changed (the billboard premise, Theorem 6.4). ``q_changed``: the largest difference of Q_h^k, after
    and before the clip, and of the policies pi^k played, over every episode (0 when the planner reads nothing
    but the releases: Q^k, and for PO pi^{k+1}, are functions of releases 1..k alone). Comparing actions alone
    missed planners that read the data where Q is clipped at 0 or H - h + 1 (as on a random transcript) or
    where the nudge does not flip an argmax; comparing Q alone missed a PO step that updates pi from a Q of
    its own. ``radius_scale``: the planner's bonus scale (the algorithm's parameter; 0 plans without bonuses,
    so that a Q planned from the data is not clipped at H - h + 1 everywhere).

    transcript: releases to replay (None: those of the non-private ridge instantiation run on U; the search
    of :func:`stream_sensitivity_check` passes :func:`random_transcript`)."""
    from dpcheck.algorithms.linear import COUNTERS
    K = U.K
    if transcript is None:
        rec = []
        spec.nonprivate(record_estimates=False, record_figures=False).run(
            env, K, np.random.default_rng(seed), users=U,
            release_hook=lambda k, rel: rec.append(tuple(np.array(x, copy=True) for x in rel)))
        transcript = rec
    out = {}
    runs = []
    for users in (U, U2):
        reg = ReplayRegularizer(spec.privatizer(), transcript)
        res = spec.make(regularizer=reg, record_estimates=False, record_figures=False, record_q_values=True,
                        radius_scale=radius_scale).run(env, K, np.random.default_rng(seed + 1), users=users)
        runs.append((reg.states[0], res))
    (sa, ra), (sb, rb) = runs
    n = sizes_for(env, K).insertions + 1                   # releases B(0..K-1); the run's final one repeats B(K-1)
    for i, c in enumerate(COUNTERS):
        A = np.stack([e[i] for e in sa.exact_log[:n]])      # (K, runs=1, H, ...)
        B = np.stack([e[i] for e in sb.exact_log[:n]])
        nodes = _upper(implied_nodes(B - A), c.endswith("1"))[:, 0]     # (K-1, H, coords)
        per = np.sqrt((nodes.reshape(nodes.shape[0], nodes.shape[1], -1) ** 2).sum(-1))   # (K-1, H)
        out[c] = {"node_change": per, "total": float(np.sqrt((per ** 2).sum())),
                  "max_node": float(per.max()) if per.size else 0.0,
                  "nodes_touched": int((per > 1e-9 * max(1.0, float(np.abs(A).max()))).sum(axis=0).max())
                  if per.size else 0}
    out["actions_changed"] = (ra.actions != rb.actions).any(axis=2)[0]      # (K,) per episode
    out["q_changed"] = max(_max_difference(ra.q_values, rb.q_values), _max_difference(ra.q_unclipped, rb.q_unclipped),
                           _max_difference(ra.policies, rb.policies))
    return out


def _max_difference(a, b) -> float:
    """max |a - b| over entries that differ (inf vs finite counts as inf); 0 when identical, NaNs alike."""
    if np.array_equal(a, b, equal_nan=True):
        return 0.0
    differ = ~((a == b) | (np.isnan(a) & np.isnan(b)))
    return float(np.abs(a - b)[differ].max()) if np.isfinite(np.abs(a - b)[differ]).all() else math.inf


def random_transcript(env, K: int, seed: int = 0, runs: int = 1, scale: float = 1e6) -> list:
    """K releases (Lambda_p, u_p, Lambda_r, u_r) that make the value functions vary over [0, H] from episode to
    episode: Lambda = scale I (bonuses ~ beta / sqrt(scale), negligible) and u = scale theta with theta uniform on
    [-1, 2]^d, so theta_hat = theta and Q = clip(varphi^T theta_r + phi^T theta_p). The sensitivity claim holds
    for every transcript (V^k is a post-processing of earlier releases), and a varying V is the worst case
    for a stream that is recomputed after insertion."""
    rng = np.random.default_rng(seed)
    H, d1, d2 = env.H, env.d1, env.d2
    out = []
    for _ in range(K):
        Lp = np.broadcast_to(scale * np.eye(d1), (runs, H, d1, d1)).copy()
        Lr = np.broadcast_to(scale * np.eye(d2), (runs, H, d2, d2)).copy()
        out.append((Lp, scale * rng.uniform(-1, 2, (runs, H, d1)), Lr, scale * rng.uniform(-1, 2, (runs, H, d2))))
    return out


def stream_sensitivity_check(spec: LinOptSpec, env, *, K: int = 12, examples: int = 150, seed: int = 0) -> Check:
    """Lemma 6.1, Assumption 1, docs/derivations.md#neighbouring-relation: search (hypothesis, guided to large changes) over neighbouring user sequences -- the
    replaced user's position and her whole trajectory (states, rewards) -- for how one user moves the
    Privatizer's streams, with one transcript replayed on both sides. The tree accounting needs, per counter:
    the user's data in at most m nodes (Lemma 6.1(i)), and the l2 change of the node vector of the H counters
    of kind c at most the declared tree sensitivity sqrt(H m) Delta_c (replacement). A stream that is
    re-computed after insertion (rows re-featurised with the current value function) moves nodes that do
    not contain the user: FAIL. Also reported: the billboard premise (actions sent to the other users
    unchanged under a replayed transcript, Theorem 6.4) -- one counterexample fails."""
    from hypothesis import strategies as st, target as hyp_target
    from dpcheck.hypothesis_search import explore
    from dpcheck.algorithms.envs.users import FixedTrajectoryUsers
    from dpcheck.algorithms.linear import COUNTERS
    H, S, A = env.H, env.S, env.A
    sizes = sizes_for(env, K)
    priv = spec.privatizer()
    if not tree_based(spec, priv):
        st = "one user changes only her item of each stream: <= m nodes per counter (tree accounting)"
        return (not_tree_based("whitebox.sensitivity", spec, st),
                not_tree_based("privacy.dataflow", spec, "the actions depend only on the releases"))
    declared = {c: t.sensitivity for c, t in priv.trees(sizes, "replacement").items()}
    base_st = np.zeros((K, H + 1), dtype=np.int64)
    base_rw = np.zeros((K, H))
    U = FixedTrajectoryUsers(H, S, A, base_st, base_rw)
    transcript = random_transcript(env, K, seed)
    worst = {c: {"total": 0.0, "max_node": 0.0, "nodes_touched": 0} for c in COUNTERS}
    found = {"actions_changed": 0, "q_changed": 0, "either": 0, "max_q_difference": 0.0, "examples": 0,
             "witness": None}

    def score(d):
        return max(max(d[c]["total"] / declared[c] for c in COUNTERS),
                   max(d[c]["nodes_touched"] / sizes.m for c in COUNTERS))

    def evaluate(j, states, rewards, radius_scale=1.0):
        st2, rw2 = base_st.copy(), base_rw.copy()
        st2[j], rw2[j] = states, rewards
        d = stream_difference(spec, env, U, FixedTrajectoryUsers(H, S, A, st2, rw2), seed=seed,
                              transcript=transcript, radius_scale=radius_scale)
        found["examples"] += 1
        others = np.delete(d["actions_changed"], j)          # the replaced user's own actions may differ
        found["actions_changed"] += int(others.any())
        found["q_changed"] += int(d["q_changed"] > 0)
        found["either"] += int(others.any() or d["q_changed"] > 0)
        found["max_q_difference"] = max(found["max_q_difference"], d["q_changed"])
        s = score(d)
        if found["witness"] is None or s > found["witness"]["score"]:
            found["witness"] = {"position": j + 1, "states": list(states), "rewards": list(rewards), "score": s}
        for c in COUNTERS:
            w = worst[c]
            w["total"] = max(w["total"], d[c]["total"])
            w["max_node"] = max(w["max_node"], d[c]["max_node"])
            w["nodes_touched"] = max(w["nodes_touched"], d[c]["nodes_touched"])
        return s

    # the extreme replacements first, at every position (a user moved to the last state with reward 1
    # throughout), with the algorithm's bonus and without it (radius_scale 0: a Q planned from the data is
    # then not clipped at H - h + 1 everywhere, so a planner or PO step reading it shows); then the guided
    # search over whole trajectories
    for scale in (1.0, 0.0):
        for j in range(K - 1):
            evaluate(j, [0] + [S - 1] * H, [1.0] * H, scale)

    def search(j, states, rewards):
        hyp_target(float(evaluate(j, states, rewards)))

    searched = explore(search, st.integers(0, K - 2), st.lists(st.integers(0, S - 1), min_size=H + 1, max_size=H + 1),
                       st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=H, max_size=H), examples=examples, seed=seed)
    over = [c for c in COUNTERS if worst[c]["total"] > declared[c] * (1 + REL_TOL)]
    many = [c for c in COUNTERS if worst[c]["nodes_touched"] > sizes.m]
    mu = math.sqrt(sum((worst[c]["total"] / t.node_scale) ** 2 for c, t in priv.trees(sizes).items()
                       if t.node_scale > 0)) if not getattr(priv, "noise_off", False) else math.inf
    if many:
        c = many[0]
        verdict, reason = FAIL, (f"one user's data moves {worst[c]['nodes_touched']} nodes of a {c} counter, more "
                                 f"than the m = {sizes.m} nodes that contain her item: the stream is not fixed "
                                 f"once inserted, so the tree's accounting (m releases per user) does not apply")
    elif over:
        c = over[0]
        verdict, reason = FAIL, (f"counter {c}: one user moves the node vector by {worst[c]['total']:.4g} > declared "
                                 f"sensitivity {declared[c]:.4g}")
    else:
        verdict, reason = PASS, ("one user's data enters at most m = {} nodes per counter; largest node-vector "
                                 "change / declared: {}".format(sizes.m, ", ".join(
                                     f"{c} {worst[c]['total'] / declared[c]:.3g}" for c in COUNTERS)))
    check = Check(id="whitebox.sensitivity", kind="whitebox", verdict=verdict,
                  claim={"statement": "conditioned on the transcript, replacing one user changes only her item of "
                                      "each of the 4H streams: at most m nodes per counter, node-vector change <= "
                                      "sqrt(H m) Delta_c (replacement)",
                         "source": f"{SOURCE}, Lemma 6.1, proof of Thm 6.4"},
                  measured={"per_counter": worst, "declared_sensitivity": declared, "m": sizes.m,
                            "gdp_mu_realised": mu, "examples": found["examples"], "confidence": 1.0,
                            "epsilon_lower_bound": None, "samples": found["examples"]},
                  details={"agent": spec.describe(), "K": K, "witness": found["witness"], "hypothesis": searched,
                           "method": "hypothesis over the replaced user's position and trajectory; one random "
                                     "transcript (random_transcript: the value functions vary over [0, H]) replayed "
                                     "on both sides; node changes from the exact prefix sums"},
                  reason=reason)
    flow = invariant_check(
        id="privacy.dataflow", kind="whitebox",
        violations=int(found["either"]), total=int(found["examples"]),
        claim={"statement": "the actions sent to users depend only on the releases {Lambda^j, u^j} and their own "
                            "states (the billboard lemma's premise): Q^k is planned from release k alone",
               "source": f"{SOURCE}, proof of Thm 6.4 (billboard lemma)"},
        details={"agent": spec.describe(), "K": K, "actions_changed": int(found["actions_changed"]),
                 "q_changed": int(found["q_changed"]), "max_q_difference": found["max_q_difference"],
                 "method": "the same replayed transcript on U and U' (one user replaced), same seeds: the actions "
                           "of every episode, Q_h^k after and before the clip and the policies pi^k must coincide "
                           "(the scripted users ignore the actions); the extreme replacements also with the "
                           "planner's bonus off (radius_scale 0), where Q is not clipped at H - h + 1 throughout"},
        what="actions and Q unchanged under a replayed transcript when one user's data changes")
    return check, flow


def _node_vector(prefixes, counter: str) -> np.ndarray:
    """(runs, nodes * H * coords) implied node values of one counter kind from its prefix sums B(0..n)
    (n + 1, runs, H, ...), upper triangle for the matrix counters."""
    nodes = _upper(implied_nodes(np.asarray(prefixes)), counter.endswith("1"))        # (n, runs, H, coords)
    return np.moveaxis(nodes, 1, 0).reshape(nodes.shape[1], -1)


class ReleaseStatistic:
    """mechanism(which, rng, size) -> (size,) the Gaussian log-likelihood-ratio statistic of the Privatizer's
    released stream for the user sequence ``which`` (0: U, 1: U'), conditioned on one transcript: the recorded
    rows of that sequence are fed to ``size`` fresh copies of the Privatizer, the releases B(1..K-1) are turned
    into the implied tree nodes (post-processing), each counter kind scaled by its node std, and projected on
    the difference of the two sequences' exact node vectors (the Neyman-Pearson statistic for a correct
    tree)."""

    def __init__(self, spec: LinOptSpec, sizes, rows, mu, mu_p, scales):
        self.spec, self.sizes, self.rows, self.mu, self.mu_p, self.scales = spec, sizes, rows, mu, mu_p, scales

    def __call__(self, which, rng, size):
        from dpcheck.algorithms.linear import COUNTERS
        size = int(size)
        state = self.spec.privatizer().start(size, self.sizes, rng, self.spec.alpha)
        eye_p, eye_r = np.eye(self.sizes.d1), np.eye(self.sizes.d2)
        pre = {c: [] for c in COUNTERS}
        for t in range(self.sizes.insertions):
            state.observe(*(np.broadcast_to(x, (size,) + x.shape[1:]) for x in self.rows[which][t]))
            Lp, up, Lr, ur = state.release()
            pre["p1"].append(Lp - state.shift_p * eye_p)
            pre["p2"].append(up)
            pre["r1"].append(Lr - state.shift_r * eye_r)
            pre["r2"].append(ur)
        # B(0) = 0: no item inserted yet
        x = np.concatenate([_node_vector([np.zeros_like(pre[c][0])] + pre[c], c) / self.scales[c]
                            for c in COUNTERS], axis=1)
        from dpcheck.audits.lib.privatizers import gaussian_llr
        return gaussian_llr(x, self.mu, self.mu_p)


def release_blackbox_check(spec: LinOptSpec, env, exe: ExecutionOptions = ExecutionOptions(), *, K: int = 8,
                           samples: int = 200_000) -> Check:
    """C11, C11d: the Privatizer's released stream (what every planner reads; the billboard of Thm 6.4) is
    (eps', delta)-DP in one user, black box: user 1 replaced (:func:`jdp_users`), one random transcript
    replayed on both sides (the claim holds for every transcript), the optimal Gaussian statistic of the
    implied node vector. Unlike the action black box it sees the data at any eps, so a tree with far too little
    noise (1/30 of it) fails it. This pair carries only a fraction of the worst case's GDP mu: when even a tree
    2x over the claim would show no more than the claim on it, the PASS is uninformative
    (dpcheck.blackbox.blind_pair_pass)."""
    from dpcheck import AuditTarget
    from dpcheck.algorithms.linear import COUNTERS
    seed = exe.seed
    U, U2 = jdp_users(env, K)
    sizes = sizes_for(env, K)
    priv = spec.privatizer()
    claim = priv.claim(sizes)
    transcript = random_transcript(env, K, seed)
    rows, mus = [], []
    # the statistic's per-counter scaling (any scaling gives a valid event; the node std is the optimal one for
    # Gaussian trees); a plug-in without trees is projected unscaled
    scales = ({c: (t.node_scale if t.node_scale > 0 else 1.0) for c, t in priv.trees(sizes).items()}
              if tree_based(spec, priv) else dict.fromkeys(COUNTERS, 1.0))
    for users in (U, U2):
        reg = ReplayRegularizer(priv, transcript)
        spec.make(regularizer=reg, record_estimates=False, record_figures=False).run(
            env, K, np.random.default_rng(seed), users=users)
        st = reg.states[0]
        rows.append(st.rows)
        n = sizes.insertions + 1
        mus.append(np.concatenate([_node_vector([e[i] for e in st.exact_log[:n]], c)[0] / scales[c]
                                   for i, c in enumerate(COUNTERS)]))
    mech = ReleaseStatistic(spec, sizes, rows, mus[0], mus[1], scales)
    target = AuditTarget(name=f"{spec.label}.release", mechanism=mech, pairs=[(0, 1)], claim=claim,
                         output="continuous")
    res = exe.audit(target, samples)
    check = res.to_check(id="privacy.release.blackbox", claim_source=claim.source)
    mu = float(np.linalg.norm(mus[0] - mus[1]))
    det = dict(check.details)
    det.update(agent=spec.describe(), K=K, gdp_mu_of_this_pair=mu,
               adversary="the Privatizer's releases {Lambda^k, u^k} (tree nodes implied by them), user 1 replaced, "
                         "one random transcript replayed on both sides")
    check = replace(check, details=det, reason=check.reason + f" (this pair's GDP mu = {mu:.3g})")
    # the pair's own reach: its node vectors are a mu-GDP Gaussian release, a fraction phi of the declared worst
    # case's mu (Privatizer.gdp_mu; Dong, Roth & Su 2022, Cor. 3.3). A tree of the same shape whose worst case
    # is 2 x the claimed eps has mu* = 1 / gaussian_multiplier_for(2 eps, delta) there and phi mu* on this pair:
    # if that shows no more than the claim, the black box cannot see a 2x defect on this pair
    worst = _worst_case_mu(spec, priv, sizes)
    if not (worst and mu > 0 and claim.delta and claim.epsilon > 0):
        return check
    phi = mu / worst
    check = replace(check, details=dict(check.details, pair_fraction_of_worst_case_mu=phi))
    reachable = accounting.gaussian_epsilon(
        accounting.gaussian_multiplier_for(2 * claim.epsilon, claim.delta) / phi, claim.delta)
    return blind_pair_pass(check, reachable, f"under a tree whose worst case is 2x the claim (this pair carries "
                           f"{phi:.3g} of the worst case's GDP mu)")


def _worst_case_mu(spec: LinOptSpec, priv, sizes) -> float | None:
    """The GDP mu of the privatizer's worst case: its own ``gdp_mu`` (the paper's Privatizer), else, for a plug-in
    whose noise is drawn from Gaussian trees, the mu of those trees (sqrt of sum Delta_c^2 / sigma_c^2). A plug-in
    behind the loader's guard exposes no ``gdp_mu``, so its blind-pair PASS used to stay a plain PASS."""
    if not tree_based(spec, priv):
        return None
    if callable(getattr(priv, "gdp_mu", None)):
        return priv.gdp_mu(sizes)
    trees = drawn_trees(priv, sizes)
    if trees is None or not all(t.noise == "gaussian" and t.node_scale > 0 for t in trees.values()):
        return None
    return accounting.gaussian_mu((t.sensitivity, t.node_scale) for t in trees.values())


def release_noise(spec: LinOptSpec, *, K: int = 8, runs: int = 2_000, seed: int = 0, d1: int = 2, d2: int = 2,
                  H: int = 1) -> dict:
    """The Privatizer's releases with all items zero (so a release is its noise plus the shift): per counter
    kind the stacked noise of releases 1..K-1, (K-1, runs * H * coords), and the largest asymmetry of the
    matrix releases (footnote 3)."""
    from dpcheck.algorithms.linear import COUNTERS, LinearSizes
    sizes = LinearSizes(K, H, d1, d2)
    priv = spec.privatizer()
    state = priv.start(runs, sizes, np.random.default_rng(seed), spec.alpha)
    sp, sr = state.shift_p, state.shift_r
    zeros = (np.zeros((runs, H, d1)), np.zeros((runs, H)), np.zeros((runs, H, d2)), np.zeros((runs, H)))
    per = {c: [] for c in COUNTERS}
    asym = 0.0
    for _ in range(K - 1):
        state.observe(*zeros)
        Lp, up, Lr, ur = state.release()
        asym = max(asym, float(np.abs(Lp - np.swapaxes(Lp, -1, -2)).max()),
                   float(np.abs(Lr - np.swapaxes(Lr, -1, -2)).max()))
        per["p1"].append(_upper(Lp - sp * np.eye(d1), True).ravel())
        per["p2"].append(up.ravel())
        per["r1"].append(_upper(Lr - sr * np.eye(d2), True).ravel())
        per["r2"].append(ur.ravel())
    return {"noise": {c: np.stack(v) for c, v in per.items()}, "asymmetry": asym,
            "sigma": priv.noise_stds(sizes) if hasattr(priv, "noise_stds") else
            {c: float(t.node_scale) for c, t in priv.trees(sizes).items()}, "sizes": sizes}


def tree_reuse_check(spec: LinOptSpec, *, K: int = 8, runs: int = 2_000, seed: int = 0, alpha: float = 0.05) -> Check:
    """Footnote 3 and the fixed node noise: every counter's release noise, matrix counters included (each upper-triangle entry is
    one sample of the tree process), has the tree's covariance Cov(B(t), B(t')) = #shared nodes x sigma^2
    (noise drawn once per node and reused; fresh noise per release makes it diagonal), and every matrix
    release is exactly symmetric. Threshold: max |z| < 6 over all (t, t') (audits/lib/privatizers).

    The scale too: the node noise recovered from the releases
    (:func:`dpcheck.audits.lib.privatizers.node_variance_ratio`) must have the declared
    variance sigma^2, judged as the other noise-scale checks are (dpcheck.audits.lib.privatizers.variance_band,
    Bonferroni over the four counters): FAIL if the ratio's interval lies wholly below 1 (less noise than the
    declared trees, which whitebox.calibration and whitebox.dp_event account) or wholly above 1.1, PASS within
    [0.98, 1.1], else INCONCLUSIVE. The covariance z test alone passed 0.9x the declared node noise at 1,000 runs
    (|z| ~ 3 < 6): nothing else measures the drawn noise."""
    from dpcheck.audits.lib.privatizers import (NODE_VARIANCE_K, NODE_VARIANCE_RUNS, node_variance_ratio,
                                                tree_covariance_z, tree_verdict)
    if not tree_based(spec, spec.privatizer()):
        return not_tree_based("whitebox.tree_noise_reuse", spec, "tree node noise drawn once and reused")
    res = release_noise(spec, K=K, runs=runs, seed=seed)
    # the scale on its own, larger draw (noise only, cheap): >= 600,000 node draws per counter, the ratio to +-0.01
    big = release_noise(spec, K=NODE_VARIANCE_K, runs=NODE_VARIANCE_RUNS, seed=seed + 1)
    zs, rows = {}, {}
    for c, x in res["noise"].items():
        sigma = res["sigma"][c]
        # tree_covariance_z expects the Laplace variance 2 b^2 per node: b = sigma / sqrt(2) gives sigma^2
        r = tree_covariance_z(x, sigma / math.sqrt(2.0))
        v = node_variance_ratio(big["noise"][c], big["sigma"][c] ** 2, alpha=alpha / len(res["noise"]))
        zs[c] = r["max_z"]
        rows[c] = {"max_z": r["max_z"], "expected_cov": r["expected"], "empirical_cov": r["empirical"],
                   "node_variance": v}
    worst = max(zs, key=zs.get)
    asym = res["asymmetry"]
    verdict, reason = tree_verdict(zs, {c: r["node_variance"] for c, r in rows.items()}, declared="sigma^2",
                                   asymmetry=asym)
    return Check(id="whitebox.tree_noise_reuse", kind="whitebox", verdict=verdict,
                 claim={"statement": "tree node noise is drawn once, with the declared sigma, and reused by every release "
                                     "(Cov(B(t), B(t')) = #shared nodes x sigma^2 per entry); matrix noise symmetric "
                                     "(upper triangle mirrored), releases exactly symmetric",
                        "source": f"Chan, Shi & Song 2011; {SOURCE}, Section 6.1"},
                 measured={"max_z": zs[worst], "max_z_per_counter": zs, "asymmetry": asym, "K": K,
                           "node_variance_ratio": {c: rows[c]["node_variance"]["ratio"] for c in rows},
                           "samples": int(runs), "confidence": 1 - alpha, "epsilon_lower_bound": None},
                 details={"per_counter": rows, "agent": spec.describe(),
                          "threshold": "max |z| < 6 (z with a 3x kurtosis allowance) and symmetry exact; node variance "
                                       "by dpcheck.audits.lib.privatizers.variance_band"},
                 reason=reason)
