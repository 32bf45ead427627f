"""Privacy checks of Private-LinOpt-VI / -PO (Zhou 2022) that need no replayed transcript: the JDP black box
on the actions sent to the other scripted users (Def 2.2), and the white-box accounting -- the declared Gaussian
trees by exact PLD and the noise actually drawn against the sensitivities Assumption 1 implies (Theorem 6.4).
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from dpcheck import accounting
from dpcheck.audit import ExecutionOptions
from dpcheck.checks import FAIL, INCONCLUSIVE, PASS, Check, vacuous
from dpcheck.audits.lib.linopt.spec import LinOptSpec, REL_TOL, SOURCE, SPEC, sizes_for


# ----------------------------------------------------------------------------- scripted users
def jdp_users(env, K: int = 4):
    """(U, U'): K scripted users who differ only in user 1 (Def 2.2, replacement). Every user of U stays in
    state 0 with reward 0 whatever she is sent; user 1 of U' is in state S-1 after her first step and
    earns reward 1 at every step. Fixed trajectories leave the algorithm as the only randomness."""
    from dpcheck.algorithms.envs.users import FixedTrajectoryUsers
    H, S, A = env.H, env.S, env.A
    st = np.zeros((K, H + 1), dtype=np.int64)
    rw = np.zeros((K, H))
    st2, rw2 = st.copy(), rw.copy()
    st2[0, 1:] = S - 1
    rw2[0] = 1.0
    return FixedTrajectoryUsers(H, S, A, st, rw), FixedTrajectoryUsers(H, S, A, st2, rw2)


class OtherUsersActions:
    """mechanism(users, rng, size) -> (size,) labels of the actions sent to users 2..K, one whole run per
    sample (vectorised over runs). Configuration only, so chunks can run in worker processes."""

    def __init__(self, spec: LinOptSpec, env):
        self.spec, self.env = spec, env

    def __call__(self, users, rng, size):
        algo = self.spec.make(record_estimates=False, record_figures=False)
        res = algo.run(self.env, users.K, rng, runs=int(size), users=users)
        flat = res.actions[:, 1:, :].reshape(int(size), -1).astype(np.int64)
        return flat @ (self.env.A ** np.arange(flat.shape[1], dtype=np.int64))


def jdp_blackbox_check(spec: LinOptSpec, env, exe: ExecutionOptions = ExecutionOptions(), *, K: int = 4,
                       samples: int = 200_000) -> Check:
    """C11 / C12: (eps, delta)-JDP of the actions sent to users 2..K (Def 2.2), black box, on two scripted
    user sequences that differ in user 1. Marked vacuous when the bonuses saturate the clip everywhere
    (the actions are then tie-breaking noise and carry no data: the white-box checks carry the evidence)."""
    from dpcheck import AuditTarget
    seed = exe.seed
    U, U2 = jdp_users(env, K)
    priv = spec.privatizer()
    claim = priv.claim(sizes_for(env, K))
    target = AuditTarget(name=f"{spec.label}.jdp", mechanism=OtherUsersActions(spec, env), pairs=[(U, U2)],
                         claim=claim, output="discrete")
    res = exe.audit(target, samples)
    check = res.to_check(id="privacy.jdp.blackbox", claim_source=claim.source)
    probe = spec.make(record_estimates=False, record_figures=False).run(env, K, np.random.default_rng(seed),
                                                                        runs=64, users=U2)
    sat = float(probe.upper_clip_fraction.mean())
    det = dict(check.details)
    det.update(agent=spec.describe(), users={"K": K, "H": env.H, "S": env.S, "A": env.A,
                                             "pair": "user 1: state 0, reward 0 vs state S-1, reward 1 at every step"},
               adversary="actions sent to users 2..K (one sample = one whole run); the final policy is not "
                         "part of the output in this paper (Definition 2.2)",
               saturated_fraction=sat)
    check = replace(check, details=det)
    if sat > 0.99:
        check = vacuous(check, f"{sat:.1%} of the Q values are clipped at H-h+1 in this run, so the "
                        "actions are tie-breaking noise and the black box sees no data dependence; the white-box "
                        "checks carry the evidence")
    return check


# ----------------------------------------------------------------------------- white box: accounting
def required_sensitivities(sizes, neighbouring: str, nonnegative: bool = False) -> dict:
    """The per-item l2 sensitivities Assumption 1 implies (proofs of Theorems 6.4-6.5, docs/derivations.md#noise-calibration), computed here independently of the
    Privatizer: Delta_{p,1} = d1 H^2, Delta_{p,2} = sqrt(d1) H^2, Delta_{r,1} = Delta_{r,2} = 1; under
    replacement x sqrt(2) (matrices) and x 2 (vectors; sqrt(2) with entrywise non-negative items) (docs/derivations.md#neighbouring-relation)."""
    H2 = float(sizes.H) ** 2
    base = {"p1": sizes.d1 * H2, "p2": math.sqrt(sizes.d1) * H2, "r1": 1.0, "r2": 1.0}
    if neighbouring == "add_remove":
        return base
    v = math.sqrt(2.0) if nonnegative else 2.0
    return {"p1": base["p1"] * math.sqrt(2.0), "p2": base["p2"] * v, "r1": base["r1"] * math.sqrt(2.0),
            "r2": base["r2"] * v}


def dp_event_check(spec: LinOptSpec, env, K: int) -> Check:
    """Theorem 6.4: the four Gaussian trees the Privatizer declares (``dp_event``), accounted exactly by PLD
    under replacement neighbours, against its claim (eps + eps^2/(16 H ln(4H/delta)), delta)-JDP. The
    measured epsilon is what the calibration really achieves (the paper's accounting has large slack)."""
    from dpcheck.audits.lib import privatizers as pa
    sizes = sizes_for(env, K)
    priv = spec.privatizer()
    claim = priv.claim(sizes)
    check = pa.dp_event_check(priv.dp_event(sizes, "replacement"), claim,
                              add_remove_event=priv.dp_event(sizes, "add_remove"),
                              label=f"{type(priv).__name__}(eps={spec.epsilon:g}, delta={spec.delta:g}; K={K}, "
                                    f"H={env.H}, d1={env.d1}, d2={env.d2}, d={env.d})")
    m = dict(check.measured)
    m.update(epsilon_achieved=m.get("epsilon_pld"), epsilon_claimed=claim.epsilon,
             epsilon_at_delta_1e6=accounting.pld_epsilon(priv.dp_event(sizes, "replacement"), 1e-6),
             slack=(claim.epsilon / m["epsilon_pld"]) if (m.get("epsilon_pld") or 0.0) > 0 else math.inf)
    mu = ""
    if hasattr(priv, "gdp_mu"):          # the paper's Privatizer: the GDP mu of its Gaussian trees
        m.update(gdp_mu=priv.gdp_mu(sizes, "replacement"), gdp_mu_add_remove=priv.gdp_mu(sizes, "add_remove"))
        mu = f", GDP mu = {m['gdp_mu']:.4g}"
    reason = check.reason + (f"; the calibration achieves eps = {m['epsilon_pld']:.4g} at delta = {spec.delta:g} "
                             f"(claimed {claim.epsilon:.4g}{mu}; "
                             f"eps = {m['epsilon_at_delta_1e6']:.4g} at delta = 1e-6)")
    out = replace(check, measured=m, reason=reason,
                  details=dict(check.details, agent=spec.describe(), privatizer=priv.describe(sizes, spec.alpha)))
    drawn = _drawn_trees_event(priv, sizes)
    if drawn is not None and out.verdict == PASS:
        # the declaration is the privatizer's word; the trees are what its noise is drawn from. A plug-in that
        # calibrates each of the four trees to the whole budget and declares one Gaussian passed on its word
        # (eps 3.3 drawn against 1 claimed)
        tc = pa.dp_event_check(drawn, claim, label=f"the trees drawn ({pa.privatizer_class(priv).__name__}.trees())")
        m.update(epsilon_pld_of_trees=tc.measured.get("epsilon_pld"))
        if tc.verdict != PASS:
            out = replace(out, verdict=tc.verdict, measured=m,
                          reason=(f"the declared DpEvent is within the claim, but the four trees the noise is drawn "
                                  f"from compose beyond it: {tc.reason} (the declaration does not describe the noise)"))
    return out


def drawn_trees(priv, sizes) -> dict | None:
    """``priv.trees(sizes)`` ({counter: TreeCounter}) when its noise is drawn from them (the built-in Privatizer
    and tree-based plug-ins), else None (no trees, noise off, or trees a plug-in cannot give for these sizes)."""
    from dpcheck.algorithms.privatizers import TreeCounter
    if not getattr(priv, "tree_based", True) or getattr(priv, "noise_off", False) or not callable(getattr(priv, "trees", None)):
        return None
    try:
        trees = priv.trees(sizes, "replacement")
    except Exception:                       # noqa: BLE001 - a plug-in without trees for these sizes: nothing to add
        return None
    if not isinstance(trees, dict) or not trees or not all(isinstance(t, TreeCounter) for t in trees.values()):
        return None
    return trees


def _drawn_trees_event(priv, sizes):
    """The composition of the events of :func:`drawn_trees`, or None."""
    import dp_accounting
    trees = drawn_trees(priv, sizes)
    return None if trees is None else dp_accounting.ComposedDpEvent([t.dp_event() for t in trees.values()])


def tree_depth(K: int) -> int:
    """m = max(1, ceil(log2 K)) of the proofs of Theorems 6.4-6.5 (docs/derivations.md#noise-calibration): the
    levels of a binary tree over the K - 1 insertions (episode K is never inserted), computed here from K alone in
    integers ((K - 1).bit_length() = ceil(log2 K) for K >= 2), not read from the LinearSizes being audited (whose
    ``m`` the Privatizer's sigmas are computed with: a depth of ceil(ln K) agreed with itself there)."""
    return max(1, (int(K) - 1).bit_length())


def _depth_mismatch(sizes) -> str | None:
    """The reason a LinearSizes' tree depth differs from :func:`tree_depth`, else None."""
    m = tree_depth(sizes.K)
    if int(sizes.m) == m:
        return None
    return (f"the tree depth the noise is calibrated with, m = {sizes.m}, differs from ceil(log2 K) = {m} at K = "
            f"{sizes.K} (every item lies in up to {m} nodes, Lemma 6.1)")


def calibration_check(spec: LinOptSpec, env, K: int) -> Check:
    """proof of Theorem 6.4: each counter kind c (H counters, every item in <= m nodes) releases with the noise its tree is
    actually drawn with (``trees(sizes)[c].node_scale``) a rho_c = H m Delta_c^2 / (2 sigma_c^2)-zCDP
    transcript, where Delta_c is recomputed here from Assumption 1 for the instance's d1 (not read from the
    Privatizer); the paper's accounting needs rho_c <= eps_c^2 / (64 H ln(4H/delta)) (eps_c the calibration
    epsilon) for the 4H counters to compose to eps^2/(16 H ln(4H/delta)) (proof of Theorem 6.4). A Privatizer that
    calibrates with the wrong dimension (sqrt(d) or d of a smaller space where d1 is needed) draws too little
    noise for the items Assumption 1 allows: FAIL."""
    sizes = sizes_for(env, K)
    priv = spec.privatizer()
    if spec.plugin is not None:
        return plugin_calibration_check(spec, priv, sizes)
    neighbouring = "replacement" if spec.sensitivity_mode == "replacement" else "add_remove"
    need = required_sensitivities(sizes, neighbouring, getattr(priv, "nonnegative_items", False))
    trees = priv.trees(sizes, neighbouring)
    eps_c = priv.calibration_epsilon(sizes)
    budget = eps_c ** 2 / (64.0 * sizes.H * math.log(4.0 * sizes.H / spec.delta))
    m = tree_depth(sizes.K)              # not sizes.m: the depth is recomputed here
    rows, bad = {}, []
    for c, tree in trees.items():
        sigma = float(tree.node_scale)
        rho = math.inf if sigma == 0 else accounting.gaussian_rho_squared(sizes.H * m * need[c] ** 2, sigma)
        rows[c] = {"sigma": sigma, "Delta_required": need[c], "rho": rho, "rho_budget": budget,
                   "sigma_required": sizes.H * need[c] / eps_c
                   * math.sqrt(32.0 * m * math.log(4.0 * sizes.H / spec.delta))}
        if rho > budget * (1 + REL_TOL):
            bad.append(c)
    total = sum(r["rho"] for r in rows.values())
    claim = {"statement": "every counter kind is (eps^2/(64 H ln(4H/delta)))-zCDP with the noise it draws and the "
                          "sensitivity Assumption 1 implies (Delta_p1 = d1 H^2, Delta_p2 = sqrt(d1) H^2, "
                          "Delta_r = 1); total rho = eps^2/(16 H ln(4H/delta))",
             "source": f"{SOURCE}, proof of Thm 6.4"}
    measured = {"per_counter": rows, "rho_total": total, "rho_budget_total": 4 * budget, "m": m,
                "m_of_sizes": sizes.m, "confidence": 1.0, "epsilon_lower_bound": None, "samples": 0}
    depth = _depth_mismatch(sizes)
    if depth:
        verdict, reason = FAIL, depth + (f"; counter {bad[0]}: rho = {rows[bad[0]]['rho']:.4g} > {budget:.4g}"
                                         if bad else "")
    elif bad:
        c = bad[0]
        reason = (f"counter {c}: noise std {rows[c]['sigma']:.4g} < required {rows[c]['sigma_required']:.4g} for "
                  f"Delta = {need[c]:.4g} (d1 = {sizes.d1}, H = {sizes.H}): rho = {rows[c]['rho']:.4g} > "
                  f"{budget:.4g}")
        verdict = FAIL
    else:
        verdict, reason = PASS, (f"every counter's noise meets the paper's calibration for d1 = {sizes.d1} "
                                 f"(total rho {total:.4g} <= {4 * budget:.4g})")
    return Check(id="whitebox.calibration", kind="whitebox", verdict=verdict, claim=claim, measured=measured,
                 details={"agent": spec.describe(), "neighbouring": neighbouring}, reason=reason)


def tree_based(spec: LinOptSpec, priv) -> bool:
    """The tree checks apply: the paper's Privatizer and its variants (``privatizer_class``: a variant that
    redraws its noise is what they exist to catch), or a plug-in that declares trees."""
    return spec.plugin is None or bool(getattr(priv, "tree_based", False))


def not_tree_based(id: str, spec: LinOptSpec, what: str) -> Check:
    """INCONCLUSIVE for a plug-in that declares no trees (it overrides ``start``): ``what`` reads the tree
    structure; whitebox.dp_event (its own declaration) and privacy.release.blackbox are the evidence."""
    return Check(id=id, kind="whitebox", verdict=INCONCLUSIVE,
                 claim={"statement": what, "source": f"{SOURCE}, Section 6.1; {SPEC}"},
                 measured={"confidence": 1.0, "epsilon_lower_bound": None, "samples": 0},
                 details={"agent": spec.describe()},
                 reason="the stream privatizer declares no trees (it overrides start): this check reads the tree "
                        "structure; whitebox.dp_event (its own DpEvent) and privacy.release.blackbox carry the evidence")


def plugin_calibration_check(spec: LinOptSpec, priv, sizes) -> Check:
    """whitebox.calibration of a researcher's tree-based stream privatizer: the l2 sensitivity each declared
    tree's DpEvent is computed with covers what Assumption 1 implies for the instance -- sqrt(H m) Delta_c with
    Delta_c recomputed here (``required_sensitivities``, replacement neighbours, Def 2.2) -- so that
    whitebox.dp_event's accounting of the plug-in's own declaration is an accounting of the noise it needs.
    A plug-in that forgets the m tree levels (or the replacement factor) declares, and draws for, too small
    a sensitivity: FAIL. A plug-in without trees: INCONCLUSIVE (:func:`not_tree_based`)."""
    statement = ("every declared tree's l2 sensitivity >= sqrt(H m) Delta_c, Delta_c the per-item norm Assumption 1 "
                 "implies under replacement (Delta_p1 = sqrt(2) d1 H^2, Delta_p2 = 2 sqrt(d1) H^2, Delta_r1 = sqrt(2), "
                 "Delta_r2 = 2)")
    if not priv.tree_based:
        return not_tree_based("whitebox.calibration", spec, statement)
    need = required_sensitivities(sizes, "replacement")
    trees = priv.trees(sizes, "replacement")
    m = tree_depth(sizes.K)              # not sizes.m: the depth is recomputed here
    root = math.sqrt(sizes.H * m)
    rows, bad = {}, []
    for c in COUNTERS_:
        t = trees[c]
        want = root * need[c]
        rows[c] = {"declared_sensitivity": float(t.sensitivity), "required": want, "node_std": float(t.node_scale),
                   "noise": getattr(t, "noise", None)}
        if t.node_scale > 0 and float(t.sensitivity) < want * (1 - REL_TOL):
            bad.append(c)
    claim = {"statement": statement,
             "source": (f"{SOURCE}, Lemma 6.1, proof of Thm 6.4 (per-counter sensitivities and zCDP); "
                        "docs/derivations.md#neighbouring-relation (replacement vs add/remove)")}
    measured = {"per_counter": rows, "m": m, "m_of_sizes": sizes.m, "confidence": 1.0, "epsilon_lower_bound": None,
                "samples": 0}
    depth = _depth_mismatch(sizes)
    if depth:
        verdict, reason = FAIL, depth
    elif bad:
        c = bad[0]
        verdict, reason = FAIL, (f"counter {c}: the declared tree sensitivity {rows[c]['declared_sensitivity']:.4g} < "
                                 f"sqrt(H m) Delta = {rows[c]['required']:.4g} (H = {sizes.H}, m = {m}, d1 = "
                                 f"{sizes.d1}): the declared DpEvent accounts too small a change")
    else:
        verdict, reason = PASS, ("every declared tree sensitivity covers Assumption 1 under replacement "
                                 f"(m = {m}, d1 = {sizes.d1})")
    return Check(id="whitebox.calibration", kind="whitebox", verdict=verdict, claim=claim, measured=measured,
                 details={"agent": spec.describe(), "neighbouring": "replacement"}, reason=reason)


COUNTERS_ = ("p1", "p2", "r1", "r2")
