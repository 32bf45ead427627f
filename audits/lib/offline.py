"""Reusable checks of DP-APVI (Qiao & Wang 2022, Algorithm 1, Theorem 3.4, Lemmas C.1-C.10, Lemma E.15): the tabular offline audit.

Everything here runs the ALGORITHM's own code paths -- ``DPAPVI.private_counts`` (privatizer, clip,
Section 3.3 consistency), ``DPAPVI.run`` (P~, penalty, backward induction) and ``OfflineDataset.counts`` -- so a
defect planted in a subclass of :class:`dpcheck.algorithms.offline.DPAPVI` is seen by the check that should see
it. The count privatizer's own checks (brute-force sensitivity, PLD of the declared DpEvent) are reused
from :mod:`dpcheck.audits.lib.privatizers`.

* :class:`APVISpec` -- the algorithm under audit (class, mechanism, budget, utility delta, constants by
  mode); ``make(budget)`` builds it at any budget (the calibration checks sweep budgets, so that a scale
  that is only right at rho = 1 is caught).
* Privacy: :func:`counts_target` (black box on the released noisy counts n' of scripted datasets that
  differ in ONE trajectory; the replaced trajectory visits different cells at every step and in a
  step-dependent way, so noise shared across steps h cancels from the likelihood ratio and is exposed),
  :func:`policy_target` (black box on the output policy), :func:`dp_event_check`,
  :func:`zcdp_conversion_check` (Lemma E.15), :func:`sensitivity_checks` (brute force + hypothesis search over
  neighbouring datasets through the algorithm's counting), :func:`noise_calibration_checks` (noise variance:
  the injected noise has the variance the CLAIM implies, at three budgets; fresh noise per step h).
* Assumptions: :func:`count_checks` (Lemma C.2 noise bound, eqs. 3-4 consistency, Lemma C.3 accuracy, eq. 5 valid P~),
  :func:`pessimism_checks` (Lemma C.6 penalty validity, Lemma C.10 pessimism, exact values from the true model),
  :func:`coverage_check` (d_m, Assumption 2.1, Theorem 3.4's sample-size condition).
* Rates: :func:`rate_checks` (data-dependent bound and privacy cost vs n and vs the budget, eq. 31/eq. 7;
  the bound eq. 31 per run), :func:`suboptimality_rate_check` (realised gap vs n).

Steps are 0-based in arrays (the paper's h is index h - 1).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from dpcheck.accounting import epsilon_from_rho, pld_epsilon
from dpcheck.checks import (FAIL, INCONCLUSIVE, PASS, Check, invariant_check, probability_check, qualify,
                            vacuous)
from dpcheck.claims import Claim
from dpcheck.errors import InputError

from dpcheck.audits.lib import privatizers as pa

SOURCE = "Qiao & Wang, Offline RL with Differential Privacy"
MECHANISMS = ("gaussian", "laplace")
MODES = ("theory", "practical")
# Algorithm 1's constants (theory) and scaled ones (practical: no guarantee; the paper's penalties exceed H
# for every n below ~1e5 on the smallest instance). The practical C2 keeps the privacy term's form.
THEORY = {"C1": math.sqrt(2.0), "C2": 16.0, "C": 2.0}
PRACTICAL = {"C1": 0.1, "C2": 0.01, "C": 2.0}
TOL = 1e-9


# ============================================================ the algorithm under audit
@dataclass(frozen=True)
class OfflinePlugin:
    """A user's offline count privatizer (:class:`dpcheck.algorithms.privatizers.OfflineCountPrivatizer`) as the
    audit builds it at any budget: ``klass(**{budget_name: b}, beta=..., **kwargs)``, guarded and probed by
    :func:`dpcheck.algorithms.privatizers.load_offline_privatizer`. ``budget_name`` is its claim's
    (``rho`` for zCDP, else ``epsilon``), ``budget`` the budget it was built with."""

    klass: type
    label: str
    budget_name: str
    budget: float
    kwargs: dict = field(default_factory=dict)
    family: str = "counts"        # "counts" (DP-APVI's OfflineCountPrivatizer) | "regression" (DP-VAPVI's)

    @staticmethod
    def _loader(family: str):
        from dpcheck.algorithms.privatizers import loader
        return loader.load_offline_privatizer if family == "counts" else loader.load_regression_privatizer

    @classmethod
    def load(cls, spec, family: str = "counts", **kw) -> "OfflinePlugin":
        """From ``file.py:Class`` (or a class) and the constructor keywords the user chose (``epsilon`` /
        ``rho``, ``beta``): built once (errors before any work), its claim read for the budget."""
        from dpcheck.algorithms.privatizers.loader import _load_class
        klass = _load_class(spec) if isinstance(spec, str) else spec
        label = spec if isinstance(spec, str) else getattr(spec, "__name__", repr(spec))
        priv = cls._loader(family)(klass, _label=label, **kw)
        claim = priv.claim
        name = "rho" if claim.rho is not None and claim.epsilon is None else "epsilon"
        budget = float(claim.rho if name == "rho" else claim.epsilon)
        rest = {k: v for k, v in kw.items() if k not in ("rho", "epsilon", "beta")}
        return cls(klass=klass, label=label, budget_name=name, budget=budget, kwargs=rest, family=family)

    def make(self, budget: float, beta: float | None = None):
        kw = {self.budget_name: float(budget), **self.kwargs}
        if beta is not None:
            kw["beta"] = float(beta)
        return self._loader(self.family)(self.klass, _label=self.label, _probe=False, **kw)


@dataclass(frozen=True)
class APVISpec:
    """DP-APVI as the audit runs it.

    mechanism: "gaussian" (rho-zCDP, eq. 2) or "laplace" (eps-DP, docs/derivations.md#noise-calibration); budget: rho or eps;
    delta: the paper's utility failure probability (in E and iota), NOT the delta of (eps, delta)-DP;
    algorithm: the class (DPAPVI or a subclass, e.g. a planted defect); mode: which constants.
    """

    mechanism: str = "gaussian"
    budget: float = 1.0
    delta: float = 0.1
    penalty: str = "bernstein"
    mode: str = "theory"
    algorithm: type | None = None
    extra: dict = field(default_factory=dict)
    noise_off: bool = False      # --privatizer none: the algorithm runs without noise, the claim stays (a sanity check)
    plugin: OfflinePlugin | None = None   # --privatizer file.py:Class: a user's count privatizer inside DP-APVI

    @property
    def gaussian(self) -> bool:
        """A zCDP claim (the built-in Gaussian, or a plug-in claiming rho-zCDP)."""
        if self.plugin is not None:
            return self.plugin.budget_name == "rho"
        return self.mechanism == "gaussian"

    @property
    def budget_name(self) -> str:
        return "rho" if self.gaussian else "epsilon"

    def privatizer(self, budget: float | None = None):
        """The plug-in built at ``budget`` (None for the built-ins)."""
        if self.plugin is None:
            return None
        return self.plugin.make(self.budget if budget is None else budget, self.delta)

    def make(self, budget: float | None = None, mode: str | None = None, **kw):
        from dpcheck.algorithms.offline import DPAPVI
        cls = self.algorithm or DPAPVI
        b = self.budget if budget is None else float(budget)
        if self.noise_off:
            b = math.inf
        consts = THEORY if (mode or self.mode) == "theory" else PRACTICAL
        args = dict(delta=self.delta, penalty=self.penalty, **consts, **self.extra)
        args.update(kw)
        if self.plugin is not None:
            return cls(privatizer=self.privatizer(b), **args)
        return cls(**{self.budget_name: b}, **args)

    def claim(self, budget: float | None = None) -> Claim:
        b = self.budget if budget is None else float(budget)
        if self.plugin is not None:
            return self.privatizer(b).claim
        if self.gaussian:
            return Claim(rho=b, notion="zCDP", source=f"{SOURCE}, Theorem 3.4 / Lemma C.1")
        return Claim(epsilon=b, notion="DP", source=f"{SOURCE}, docs/derivations.md#noise-calibration pure-DP variant")

    def declared_variance(self, H: int, budget: float | None = None) -> float | None:
        """The per-count noise variance the CLAIM implies: 2H/rho (eq. 2) or 2 (4H/eps)^2 (docs/derivations.md#noise-calibration); a plug-in's
        own ``noise_variance(H)`` (None when it declares none: its noise law is its own)."""
        b = self.budget if budget is None else float(budget)
        if self.plugin is not None:
            v = getattr(self.privatizer(b), "noise_variance", None)
            v = v(H) if callable(v) else None
            return None if v is None else float(v)
        return 2.0 * H / b if self.gaussian else 2.0 * (4.0 * H / b) ** 2

    def noise_sd(self, H: int, budget: float | None = None) -> float:
        v = self.declared_variance(H, budget)
        if v is None:      # a plug-in without a declared variance: its width E/2 bounds the noise w.h.p.
            return self.make(budget=budget).width(H, 2, 1) / 2.0
        return math.sqrt(v)

    def width_exponent(self, H: int, S: int, A: int, budgets) -> float:
        """The exponent k of E ~ budget^k over ``budgets``: -1/2 (Gaussian, E_rho), -1 (Laplace, E_eps); a plug-in's
        own, fitted (least squares in log-log) on its declared width E at those budgets (Theorem 3.4's privacy
        term is linear in E, so the privacy cost scales like the privatizer's E, whatever its noise law)."""
        if self.plugin is None:
            return -0.5 if self.gaussian else -1.0
        b = np.log(np.asarray(budgets, float))
        E = np.log([max(self.make(budget=x).width(H, S, A), 1e-300) for x in budgets])
        return float(np.polyfit(b, E, 1)[0])


def _claim_dict(spec: APVISpec, statement: str, source: str | None = None) -> dict:
    return {"statement": statement, "source": source or spec.claim().source}


def _counts(states, actions, S, A, runs=1):
    """TabularCounts of one dataset (lists of trajectories), repeated ``runs`` times, via the algorithm's
    own counting (OfflineDataset.counts)."""
    from dpcheck.algorithms.offline import OfflineDataset, TabularCounts
    c = OfflineDataset.from_arrays(np.asarray(states)[None], np.asarray(actions)[None], S=S, A=A).counts(
        engine="numpy", rewards=False)
    if runs == 1:
        return c
    return TabularCounts(visits=np.repeat(c.visits, runs, 0), transitions=np.repeat(c.transitions, runs, 0),
                         reward_sums=None, n=c.n)


def _repeat(counts, runs):
    from dpcheck.algorithms.offline import TabularCounts
    return TabularCounts(visits=np.repeat(counts.visits[:1], runs, 0),
                         transitions=np.repeat(counts.transitions[:1], runs, 0), reward_sums=None, n=counts.n)


def _flat(visits, transitions):
    R = visits.shape[0]
    return np.concatenate([visits.reshape(R, -1), transitions.reshape(R, -1)], axis=1)


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
            out = np.empty((size, cols.size))
            for i in range(0, size, per):
                k = min(per, size - i)
                pc = algo.private_counts(_repeat(keys[which], k), rng)
                out[i:i + k] = _flat(pc.noisy_visits, pc.noisy_transitions)[:, cols]
            return out
        t, info = pa.offline_plugin_target(release, ("D", "D'"), (mu - mu_p)[cols], spec.claim(),
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


# ============================================================ privacy: white box
def dp_event_check(spec: APVISpec, H: int, S: int, A: int) -> Check:
    """whitebox.dp_event: the algorithm's declared DpEvent (``DPAPVI.dp_event``) accounted exactly with the
    dp_accounting PLD against the claim (dpcheck.audits.lib.privatizers.dp_event_check)."""
    algo = spec.make()
    if algo.privatizer is None:
        return _no_noise_check("whitebox.dp_event", spec, algo)
    return pa.dp_event_check(algo.dp_event(H), spec.claim(), label=f"{type(algo).__name__}(H={H}, S={S}, A={A})")


def _no_noise_check(id: str, spec: APVISpec, algo) -> Check:
    """An algorithm that declares no noise (NonPrivateDpEvent) cannot meet a finite claim."""
    return Check(id=id, kind="whitebox", verdict=FAIL,
                 claim=dict(spec.claim().to_dict(), statement=spec.claim().describe(), source=spec.claim().source),
                 measured={"epsilon_lower_bound": math.inf, "confidence": 1.0, "samples": 0},
                 details={"event": repr(algo.dp_event(1))},
                 reason=f"{type(algo).__name__} declares no noise (NonPrivateDpEvent): no finite budget, "
                        f"claimed {spec.claim().describe()}")


def zcdp_conversion_check(spec: APVISpec, H: int, *, approx: tuple | None = None,
                          deltas=(1e-3, 1e-5, 1e-8)) -> Check:
    """whitebox.zcdp_conversion (Lemma E.15): rho-zCDP implies (rho + 2 sqrt(rho log(1/delta_dp)),
    delta_dp)-DP; the PLD epsilon of the declared event at each delta_dp must not exceed it. With
    ``approx = (eps, delta_dp)`` (rho chosen by --epsilon / --delta, docs/derivations.md#noise-calibration) the round trip must give eps
    back exactly and the PLD must certify (eps, delta_dp)."""
    algo = spec.make()
    if algo.privatizer is None:
        return _no_noise_check("whitebox.zcdp_conversion", spec, algo)
    rho = spec.budget
    ev = algo.dp_event(H)
    rows, bad = [], []
    pts = list(deltas) + ([approx[1]] if approx else [])
    for d in pts:
        conv = epsilon_from_rho(rho, d)
        e = pld_epsilon(ev, d)
        rows.append({"delta_dp": d, "epsilon_pld": e, "epsilon_conversion": conv})
        if e > conv * (1 + pa.EPS_SLACK) + pa.EPS_SLACK:
            bad.append(d)
    measured = {"rows": rows, "epsilon_lower_bound": None, "confidence": 1.0, "samples": 0}
    reason = (f"PLD epsilon of the declared event exceeds rho + 2 sqrt(rho log(1/delta_dp)) at delta_dp={bad[0]:g}"
              if bad else f"PLD epsilon <= the zCDP conversion at delta_dp in {pts}")
    if approx:
        eps, d = approx
        back = epsilon_from_rho(rho, d)
        measured["round_trip"] = {"epsilon": eps, "delta_dp": d, "rho": rho, "epsilon_back": back}
        if abs(back - eps) > 1e-9 * max(1, eps):
            bad.append("round trip")
            reason = f"rho = {rho:g} does not convert back to epsilon = {eps:g} (got {back:g})"
        else:
            reason += f"; rho = {rho:.6g} converts back to ({eps:g}, {d:g})-DP exactly"
    return Check(id="whitebox.zcdp_conversion", kind="whitebox", verdict=FAIL if bad else PASS,
                 claim=_claim_dict(spec, "rho-zCDP => (rho + 2 sqrt(rho log(1/delta_dp)), delta_dp)-DP",
                                   f"{SOURCE}, Lemma E.15, docs/derivations.md#noise-calibration"),
                 measured=measured, details={"event": repr(ev)}, reason=reason)


def _family_distance(c1, c2, gaussian: bool):
    """Per-family l2 (Gaussian) or both-families l1 (Laplace) distance of two TabularCounts."""
    dp = (c1.visits - c2.visits).ravel()
    dt = (c1.transitions - c2.transitions).ravel()
    if gaussian:
        return [float(np.linalg.norm(dp)), float(np.linalg.norm(dt))]
    return [float(np.abs(dp).sum() + np.abs(dt).sum())]


def sensitivity_search_check(spec: APVISpec, *, examples: int = 200, seed: int = 0) -> Check:
    """whitebox.sensitivity.search: hypothesis searches neighbouring DATASETS (random n <= 6, H <= 3, S <= 3,
    A <= 2; one trajectory replaced by an arbitrary other) through the algorithm's own counting
    (OfflineDataset.counts), steering towards large changes; the largest change must not exceed the
    declared sensitivity sqrt(2H) per family in l2 (Gaussian) / 4H for both families in l1 (Laplace). The
    step-swapping pair is added to show the bound is attained."""
    from hypothesis import HealthCheck, given, settings, strategies as st, target as hyp_target
    from dpcheck.algorithms.offline import OfflineDataset
    priv = spec.make().privatizer
    declared_of = (lambda H: math.sqrt(2.0 * H)) if spec.gaussian else (lambda H: 4.0 * H)
    if priv is not None and hasattr(priv, "sensitivity"):
        declared_of = priv.sensitivity
    worst = {"ratio": 0.0, "case": None}

    @st.composite
    def neighbours(draw):
        H = draw(st.integers(1, 3))
        S = draw(st.integers(2, 3))
        A = draw(st.integers(1, 2))
        n = draw(st.integers(1, 6))
        traj = st.tuples(st.lists(st.integers(0, S - 1), min_size=H + 1, max_size=H + 1),
                         st.lists(st.integers(0, A - 1), min_size=H, max_size=H))
        data = draw(st.lists(traj, min_size=n, max_size=n))
        new = draw(traj)
        pos = draw(st.integers(0, n - 1))
        return H, S, A, data, new, pos

    def counts_of(data, S, A):
        st_ = np.array([d[0] for d in data])[None]
        ac = np.array([d[1] for d in data])[None]
        return OfflineDataset.from_arrays(st_, ac, S=S, A=A).counts(engine="numpy", rewards=False)

    @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(neighbours())
    def search(case):
        H, S, A, data, new, pos = case
        other = list(data)
        other[pos] = new
        d = _family_distance(counts_of(data, S, A), counts_of(other, S, A), spec.gaussian)
        ratio = max(d) / declared_of(H)
        hyp_target(ratio)
        if ratio > worst["ratio"]:
            worst.update(ratio=ratio, case={"H": H, "S": S, "A": A, "n": len(data), "distance": d,
                                            "declared": declared_of(H)})

    search()
    H = 3
    x, y = step_swap_pair(H, 2, 2)
    pair = _family_distance(counts_of([(x.states, x.actions)], 2, 2), counts_of([(y.states, y.actions)], 2, 2),
                            spec.gaussian)
    attained = max(pair) / declared_of(H)
    ok = worst["ratio"] <= 1 + TOL and attained <= 1 + TOL
    return Check(id="whitebox.sensitivity.search", kind="whitebox", verdict=PASS if ok else FAIL,
                 claim=_claim_dict(spec, "replacing one trajectory changes each count family by <= sqrt(2H) in l2 "
                                         "(Gaussian) / both families by <= 4H in l1 (Laplace)",
                                   f"{SOURCE}, Lemma C.1 / docs/derivations.md#noise-calibration (sensitivity; Laplace variant)"),
                 measured={"max_ratio_to_declared": worst["ratio"], "worst_case": worst["case"],
                           "step_swap_ratio": attained, "examples": examples,
                           "epsilon_lower_bound": None, "confidence": 1.0, "samples": examples},
                 details={"search": "hypothesis (derandomized, target = distance / declared) over datasets of "
                                    "n <= 6 trajectories, H <= 3, S <= 3, A <= 2; counts by OfflineDataset.counts"},
                 reason=(f"largest change / declared sensitivity = {worst['ratio']:.4g} over {examples} searched "
                         f"neighbours; the step-swapping pair attains {attained:.4g}"))


def sensitivity_checks(spec: APVISpec, *, examples: int = 200) -> list[Check]:
    """whitebox.sensitivity (the privatizer's brute force, dpcheck.audits.lib.privatizers) and the search above."""
    out = []
    priv = spec.make().privatizer
    if priv is not None:
        out.append(pa.offline_sensitivity_check(priv, gaussian=spec.gaussian))
    out.append(sensitivity_search_check(spec, examples=examples))
    return out


def _noise_draws(algo, H, S, A, level, runs, rng):
    """n' - n on constant counts ``level`` (far above the clip at 0): (pair (R,H,S,A), triple (R,H,S,A,S))."""
    from dpcheck.algorithms.offline import TabularCounts
    v = np.full((runs, H, S, A), float(level * S))
    t = np.full((runs, H, S, A, S), float(level))
    pc = algo.private_counts(TabularCounts(visits=v, transitions=t, reward_sums=None, n=int(level * S * S * A)), rng)
    return pc.noisy_visits - v, pc.noisy_transitions - t


def noise_calibration_checks(spec: APVISpec, *, runs: int, rng, alpha: float, H: int = 3, S: int = 2, A: int = 2,
                             factors=(0.25, 1.0, 4.0), tolerance: float = 0.1) -> list[Check]:
    """whitebox.noise_scale (noise variance) and whitebox.noise_independence (fresh noise for every count and
    every step h, eq. 2).

    At budgets ``budget x factors`` (a scale that is right only at budget 1 -- e.g. rho used where an
    epsilon belongs -- is caught off 1) the algorithm privatises constant counts far above 0 in ``runs``
    repetitions. The mean of (n' - n)^2 over all counts divided by the variance the CLAIM implies
    (2H/rho, or 2 (4H/eps)^2) has a (1 - alpha) interval (normal, Bonferroni over budgets, families and the
    two moments): PASS if it lies within 1 +- ``tolerance``, FAIL if it lies wholly outside, else
    INCONCLUSIVE; the same for the standardised mean noise around 0. The tolerance (10%) absorbs nothing
    a defect could hide in: the rho-as-epsilon scale is off by a factor 1/b (16x at b = 1/4, 1/4 at b = 4).
    Independence: the correlation of the noise of one count at steps h and h' (averaged over counts and
    runs), interval as above: FAIL if it lies wholly beyond +-``tolerance`` (one draw reused across h
    gives 1), PASS if within, else INCONCLUSIVE."""
    from scipy.stats import norm
    rows, bad, unsure, unknown = [], [], [], []
    from dpcheck.stats import pass_alpha
    m = len(factors) * 2 * 2
    zq = float(norm.ppf(1 - alpha / (2 * m)))                   # FAIL: the audit's share of alpha
    zq_pass = float(norm.ppf(1 - pass_alpha(alpha) / (2 * m)))  # PASS: its alpha (dpcheck.stats.pass_alpha)
    corr_rows, corr_bad, corr_unsure = [], [], []
    for f in factors:
        b = spec.budget * f
        algo = spec.make(budget=b)
        var = spec.declared_variance(H, b)
        undeclared = var is None
        level = (10 * math.sqrt(var) if not undeclared else algo.width(H, S, A)) + 10
        npair, ntrip = _noise_draws(algo, H, S, A, level, runs, rng)
        if undeclared:        # a plug-in that declares no variance: independence is judged on the measured one
            var = float(np.var(np.concatenate([npair.ravel(), ntrip.ravel()]))) or 1.0
            unknown.append(b)
            if f != 1.0:
                continue
        for fam, z in (("pair", npair), ("triple", ntrip)):
            if undeclared:
                break
            x = z.reshape(-1)
            q = x * x / var
            ratio, se = float(q.mean()), float(q.std(ddof=1) / math.sqrt(q.size))
            mean, mse = float(x.mean() / math.sqrt(var)), float(x.std(ddof=1) / math.sqrt(var) / math.sqrt(x.size))
            ci = (ratio - zq * se, ratio + zq * se)
            mci = (mean - zq * mse, mean + zq * mse)
            row = {"budget": b, "family": fam, "variance_ratio": ratio, "ci": list(ci), "declared_variance": var,
                   "standardised_mean": mean, "mean_ci": list(mci), "draws": int(x.size)}
            rows.append(row)
            pci = (ratio - zq_pass * se, ratio + zq_pass * se)
            pmci = (mean - zq_pass * mse, mean + zq_pass * mse)
            if ci[0] > 1 + tolerance or ci[1] < 1 - tolerance or mci[0] > tolerance or mci[1] < -tolerance:
                bad.append(row)
            elif pci[0] < 1 - tolerance or pci[1] > 1 + tolerance or pmci[0] < -tolerance or pmci[1] > tolerance:
                unsure.append(row)
        if f == 1.0:
            for fam, z in (("pair", npair), ("triple", ntrip)):
                w = z.reshape(runs, H, -1) / math.sqrt(var)
                for h1 in range(H):
                    for h2 in range(h1 + 1, H):
                        prod = (w[:, h1] * w[:, h2]).reshape(-1)
                        c, se = float(prod.mean()), float(prod.std(ddof=1) / math.sqrt(prod.size))
                        corr_rows.append({"family": fam, "steps": [h1 + 1, h2 + 1], "correlation": c, "se": se})
    npairs = max(1, len(corr_rows))
    zc = float(norm.ppf(1 - alpha / (2 * npairs)))
    zc_pass = float(norm.ppf(1 - pass_alpha(alpha) / (2 * npairs)))
    for r in corr_rows:
        lo_, hi_ = r["correlation"] - zc * r["se"], r["correlation"] + zc * r["se"]
        if lo_ > tolerance or hi_ < -tolerance:
            corr_bad.append(r)
        elif r["correlation"] - zc_pass * r["se"] < -tolerance or r["correlation"] + zc_pass * r["se"] > tolerance:
            corr_unsure.append(r)
    top = max(corr_rows, key=lambda r: abs(r["correlation"])) if corr_rows else None
    indep = Check(
        id="whitebox.noise_independence", kind="whitebox",
        verdict=FAIL if corr_bad else INCONCLUSIVE if corr_unsure else PASS,
        claim=_claim_dict(spec, "independent noise for every count and every step h (never one draw reused "
                                "across h)", f"{SOURCE}, eq. 2, Lemma C.1"),
        measured={"rows": corr_rows, "max_abs_correlation": abs(top["correlation"]) if top else 0.0,
                  "confidence": 1 - alpha, "epsilon_lower_bound": None, "samples": runs},
        details={"test": f"interval mean product +- z_(1 - alpha/(2 x {npairs})) se vs +-{tolerance:g}"},
        reason=(f"noise at steps {corr_bad[0]['steps']} ({corr_bad[0]['family']}) is correlated: "
                f"{corr_bad[0]['correlation']:.3f}" if corr_bad else
                f"no correlation across steps (max |corr| {abs(top['correlation']) if top else 0:.3g})"))
    if unknown:
        return [Check(id="whitebox.noise_scale", kind="whitebox", verdict=INCONCLUSIVE,
                      claim=_claim_dict(spec, "the injected noise has the variance the privatizer declares"),
                      measured={"confidence": None, "epsilon_lower_bound": None, "samples": runs},
                      reason=f"the plug-in {spec.plugin.label} declares no noise_variance(H): there is no variance "
                             f"to compare with (its privacy rests on the black box and its DpEvent)"), indep]
    worst = max(rows, key=lambda r: abs(r["variance_ratio"] - 1))
    what = ("the variance the plug-in declares (noise_variance(H)), at every budget" if spec.plugin is not None else
            "variance 2H/rho (Gaussian) / 2 (4H/eps)^2 (Laplace), the variance the claimed budget implies")
    scale = Check(
        id="whitebox.noise_scale", kind="whitebox", verdict=FAIL if bad else INCONCLUSIVE if unsure else PASS,
        claim=_claim_dict(spec, "the injected noise has " + what, f"{SOURCE}, eq. 2 / docs/derivations.md#noise-calibration"),
        measured={"rows": rows, "worst_variance_ratio": worst["variance_ratio"], "confidence": 1 - alpha,
                  "epsilon_lower_bound": None, "samples": runs},
        details={"budgets": [spec.budget * f for f in factors], "H": H, "S": S, "A": A,
                 "interval": f"normal interval of the mean of (n'-n)^2 / declared, Bonferroni over {m}",
                 "tolerance": tolerance},
        reason=(f"variance / declared = {bad[0]['variance_ratio']:.4g} (mean {bad[0]['standardised_mean']:.3g} sd) at "
                f"{spec.budget_name} = {bad[0]['budget']:g} ({bad[0]['family']} counts), interval "
                f"{[round(v, 4) for v in bad[0]['ci']]} outside 1 +- {tolerance:g}"
                if bad else (f"variance / declared: interval {[round(v, 4) for v in unsure[0]['ci']]} at "
                             f"{spec.budget_name} = {unsure[0]['budget']:g} is not within 1 +- {tolerance:g} (more runs)"
                             if unsure else f"variance / declared within 1 +- {tolerance:g} at {spec.budget_name} in "
                                            f"{[spec.budget * f for f in factors]} (worst {worst['variance_ratio']:.4f})")))
    return [scale, indep]


# ============================================================ assumptions: counts and P~
def count_checks(spec: APVISpec, counts, *, rng, alpha: float, what: str = "", suffix: str = "") -> list[Check]:
    """Lemma C.2's events over the runs of ``counts`` (TabularCounts; e.g. an instance's sampled counts, or a user's
    dataset repeated), through the algorithm's ``private_counts``:

    * assumption.noise_bound (Lemma C.2): w.p. >= 1 - delta, |n' - n| <= E/2 for every count;
    * assumption.consistency (eqs. 3-4, eq. 3-4, always): ntil >= 0, ntil(s,a) = sum_s' ntil(s,a,s') and
      |ntil(s,a) - n'(s,a)| <= E/2 (the LP's band; skipping the LP breaks it, Remark 3.1);
    * assumption.count_accuracy (Lemma C.3, on the Lemma C.2 event): |ntil - n| <= E for pair and triple
      counts and max_s' |ntil - n'| <= max_s' |n - n'|;
    * assumption.valid_transition (eq. 5, eq. 5): P~ rows are distributions, uniform exactly where
      ntil(s,a) <= E and ntil(s,a,.)/ntil(s,a) elsewhere.
    """
    algo = spec.make()
    pc = algo.private_counts(counts, rng)
    E = float(pc.width)
    R = counts.runs
    n_p, n_t = counts.visits, counts.transitions
    err = np.maximum(np.abs(pc.noisy_visits - n_p).reshape(R, -1).max(1),
                     np.abs(pc.noisy_transitions - n_t).reshape(R, -1).max(1))
    event = err <= E / 2 + TOL
    src = spec.claim().source.split(",")[0]
    det = {"runs": R, "E": E, "H_S_A": list(counts.shape), "n": counts.n, "data": what}
    out = [probability_check(id="assumption.noise_bound" + suffix, failures=int((~event).sum()), runs=R, beta=spec.delta,
                             alpha=alpha, what="|n' - n| <= E/2 for all counts", details=dict(det),
                             claim=_claim_dict(spec, "w.p. >= 1 - delta, |n' - n| <= E/2 for every pair and triple count",
                                               f"{src}, Lemma C.2 / docs/derivations.md#noise-calibration"))]
    sums = pc.transitions.sum(-1)
    cons = ((np.abs(pc.visits - sums) > TOL * np.maximum(1, pc.visits))
            | np.any(pc.transitions < -TOL, axis=-1)
            | (np.abs(pc.visits - pc.noisy_visits) > E / 2 + TOL * np.maximum(1, pc.visits)))
    band = float(np.abs(pc.visits - pc.noisy_visits).max())
    out.append(invariant_check(id="assumption.consistency" + suffix, violations=int(cons.sum()), total=int(cons.size),
                               what="ntil >= 0, ntil(s,a) = sum_s' ntil(s,a,s'), |ntil(s,a) - n'(s,a)| <= E/2",
                               details=dict(det, max_band_deviation=band, half_width=E / 2),
                               claim=_claim_dict(spec, "the post-processed counts are consistent: ntil >= 0, "
                                                       "ntil(s,a) = sum_s' ntil(s,a,s'), |ntil(s,a) - n'(s,a)| <= E/2",
                                                 f"{src}, eq. 3-4 / Remark 3.2")))
    acc = ((np.abs(pc.visits - n_p) > E + TOL)
           | np.any(np.abs(pc.transitions - n_t) > E + TOL, axis=-1)
           | (np.abs(pc.transitions - pc.noisy_transitions).max(-1)
              > np.abs(n_t - pc.noisy_transitions).max(-1) + TOL * np.maximum(1, n_p)))
    acc_ev = acc[event]
    out.append(invariant_check(id="assumption.count_accuracy" + suffix, violations=int(acc_ev.sum()), total=int(acc_ev.size),
                               what="on the Lemma C.2 event: |ntil - n| <= E and the LP moves n' no more than n does",
                               details=dict(det, runs_on_event=int(event.sum())),
                               vacuous=None if event.any() else "the Lemma C.2 event held in no run",
                               claim=_claim_dict(spec, "on the Lemma C.2 event, |ntil - n| <= E for pair and triple counts",
                                                 f"{src}, Lemma C.3")))
    P = pc.kernel
    fallback = pc.visits <= E
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = pc.transitions / pc.visits[..., None]
    rows_ok = np.all(P >= -TOL, -1) & (np.abs(P.sum(-1) - 1) < 1e-9)
    form = np.where(fallback, np.all(np.abs(P - 1.0 / P.shape[-1]) < 1e-12, -1),
                    np.all(np.abs(P - np.where(np.isfinite(ratio), ratio, 0)) < 1e-9, -1))
    badP = ~(rows_ok & form)
    out.append(invariant_check(id="assumption.valid_transition" + suffix, violations=int(badP.sum()), total=int(badP.size),
                               what="P~ rows are distributions, uniform exactly where ntil(s,a) <= E",
                               details=dict(det, fallback_fraction=float(fallback.mean())),
                               claim=_claim_dict(spec, "P~_h(.|s,a) is a distribution: ntil(s,a,.)/ntil(s,a) if "
                                                       "ntil(s,a) > E, else uniform 1/S", f"{src}, eq. 5 / Remark 3.3")))
    return out


# ============================================================ assumptions: pessimism (exact values)
def pessimism_checks(spec: APVISpec, instance, *, n: int, runs: int, rng, alpha: float, budget: float | None = None,
                     suffix: str = "", regime: str = "") -> list[Check]:
    """assumption.penalty_validity (Lemma C.6) and assumption.pessimism (Lemma C.10) on ``runs`` datasets of
    ``n`` trajectories from ``instance``, values exact from the true model.

    * validity: for every (h,s,a) with ntil_h(s,a) >= 3E (the lemma's range),
      |(P~_h - P_h) Vtil_{h+1}(s,a)| <= Gamma_h(s,a); a run fails if any pair violates it; the claim is
      "w.p. >= 1 - 2 delta" (Lemma C.2's event and Lemma C.6's);
    * pessimism: Qbar_h <= Q^{pi_hat}_h and Vtil_h <= V^{pi_hat}_h everywhere; "w.p. >= 1 - 4 delta" (the
      proof spends four events of size delta, Theorem 3.4's proof).
    Both are marked VACUOUS when they hold trivially: validity when every checked Gamma_h is at least the
    largest possible error H - h, pessimism when Qbar = 0 everywhere (penalties >= H).
    """
    from dpcheck.algorithms.envs.planning import policy_values
    algo = spec.make(budget=budget)
    mdp = instance.mdp
    counts = instance.sample_counts(n, rng, runs)
    res = algo.run(counts, mdp, rng)
    H = mdp.H
    Qpi, Vpi = policy_values(mdp, res.policy)
    E = res.width
    PV = np.einsum("rhsat,rht->rhsa", res.kernel, res.values[:, 1:])
    TV = np.einsum("hsat,rht->rhsa", mdp.P, res.values[:, 1:])
    dev = np.abs(PV - TV)
    elig = (res.counts.visits >= 3 * E) & (res.counts.visits > 0)
    viol = elig & (dev > res.penalties + TOL)
    fail_v = viol.reshape(runs, -1).any(1)
    cap = (H - 1 - np.arange(H)).astype(float)[None, :, None, None]     # max |(P~ - P) V_{h+1}| = H - h (paper's h)
    trivial_v = np.all(~elig | (res.penalties >= cap), axis=(1, 2, 3))
    b = spec.budget if budget is None else budget
    det = {"instance": instance.name, "n": n, "runs": runs, spec.budget_name: b, "E": E, "mode": spec.mode,
           "regime": regime, "gap_pairs_fraction": float(((res.counts.visits > E) & (res.counts.visits < 3 * E)).mean())}
    src = SOURCE
    vac_v = "every checked Gamma_h >= H - h (the penalty covers any error): holds trivially" if trivial_v.all() else None
    if not elig.any():
        vac_v = "no (h,s,a) with ntil >= 3E: nothing to check"
    beta_v = min(1.0, 2 * spec.delta)
    cv = probability_check(id="assumption.penalty_validity" + suffix, failures=int(fail_v.sum()), runs=runs, beta=beta_v,
                           alpha=alpha, what="|(P~ - P) Vtil_{h+1}| <= Gamma on pairs with ntil >= 3E",
                           details=dict(det, max_excess=float(np.max(np.where(elig, dev - res.penalties, -np.inf))),
                                        nontrivial_runs=int((~trivial_v).sum())),
                           claim=_claim_dict(spec, "w.p. >= 1 - 2 delta, |(P~_h - P_h) Vtil_{h+1}| <= Gamma_h wherever "
                                                   "ntil_h(s,a) >= 3 E", f"{src}, Lemma C.6 (Algorithm 1)"))
    ok = (np.all(res.q_values <= Qpi + TOL, axis=(1, 2, 3)) & np.all(res.values[:, :H] <= Vpi[:, :H] + TOL, axis=(1, 2)))
    trivial_p = np.all(res.q_values == 0, axis=(1, 2, 3))
    beta_p = min(1.0, 4 * spec.delta)
    cp = probability_check(id="assumption.pessimism" + suffix, failures=int((~ok).sum()), runs=runs, beta=beta_p,
                           alpha=alpha, what="Vtil_h <= V^{pi_hat}_h and Qbar_h <= Q^{pi_hat}_h",
                           details=dict(det, nontrivial_runs=int((~trivial_p).sum()),
                                        max_excess=float(np.max(res.values[:, :H] - Vpi[:, :H]))),
                           claim=_claim_dict(spec, "w.p. >= 1 - 4 delta, the learned value never exceeds the true value "
                                                   "of the learned policy: Vtil_h <= V^{pi_hat}_h, Qbar_h <= Q^{pi_hat}_h",
                                             f"{src}, Lemma C.10 + eq. 34 (Theorem 3.4)"))
    vac_p = "Qbar = 0 everywhere in every run (the penalties exceed H): holds trivially" if trivial_p.all() else None
    return [vacuous(cv, vac_v), vacuous(cp, vac_p)]


def coverage_check(instance=None, *, counts=None, spec: APVISpec | None = None, id: str = "assumption.coverage",
                   behaviour=None, model=None, alpha: float = 0.05) -> Check:
    """assumption.coverage: Assumption 2.1 (d^{pi*}_h(s,a) > 0 => d^mu_h(s,a) > 0) and the coverage dbar_m.

    Instance (true model): d^mu, dbar_m, Assumption 2.1 exactly -- PASS or FAIL.

    A user's dataset (``counts``), with what the user supplied (docs/dp_apvi.md, "Your dataset"):

    * ``model`` (an OfflineInstance: the true MDP and the behaviour policy): exact, as for an instance;
    * else Assumption 2.1 is ESTABLISHED when every (h,s,a) occurs in the data (then d^mu_h(s,a) > 0 everywhere)
      or when the ``behaviour`` policy (H, S, A) has full support (then, by induction on h, d^pi_h(s) > 0 =>
      d^mu_h(s) > 0 for every pi, so d^mu covers every policy's occupancy whatever the MDP);
    * otherwise it concerns the optimal policy of an MDP the data do not determine: INCONCLUSIVE, naming a cell
      never seen (or where mu = 0) and what would settle it (the behaviour policy, or P, r, init with it).

    Once Assumption 2.1 holds, Theorem 3.4's sample-size condition n > max(H^2, E) iota / dbar_m (c1 = 1) is
    checked with dbar_m exact (model), or with a lower confidence bound (every cell seen: Clopper-Pearson per
    cell at level alpha / (H S A), n_h(s,a) ~ Bin(n, d^mu_h(s,a))): PASS if it holds, INCONCLUSIVE if not (the
    utility theorem then does not apply to these data; privacy does not need it)."""
    claim_21 = {"statement": "d^{pi*}_h(s,a) > 0 => d^mu_h(s,a) > 0 (Assumption 2.1); dbar_m reported",
                "source": f"{SOURCE}, Assumption 2.1, Theorem 3.4"}
    if instance is not None:
        cov = instance.coverage()
        measured = {"dbar_m": cov.dbar_m, "covered_fraction": float(cov.covered.mean()),
                    "assumption_2_1": cov.assumption_2_1, "confidence": 1.0}
        verdict = PASS if cov.assumption_2_1 and cov.dbar_m > 0 else FAIL
        reason = (f"{instance.name}: dbar_m = {cov.dbar_m:.4g}, {cov.covered.mean():.0%} of (h,s,a) covered; "
                  f"Assumption 2.1 {'holds' if cov.assumption_2_1 else 'FAILS'} (exact, from the true model)")
        return Check(id=id, kind="assumption", verdict=verdict, claim=claim_21,
                     measured=measured, details={"instance": instance.name}, reason=reason)
    from scipy import stats
    H, S, A = counts.shape
    n = counts.n
    visits = counts.visits[0]
    dm = float(counts.empirical_coverage()[0])
    E = spec.make().width(H, S, A)
    iota = math.log(H * S * A / spec.delta)
    seen = visits > 0
    cells = float(seen.mean())
    claim = {"statement": "Assumption 2.1 (d^{pi*} > 0 => d^mu > 0) and Theorem 3.4's n > c1 max(H^2, E) iota / "
                          "dbar_m (c1 = 1)", "source": f"{SOURCE}, Assumption 2.1, Theorem 3.4"}
    meas = {"dbar_m_empirical": dm, "n": n, "visited_fraction": cells, "E": E}
    det = {"supplied": [k for k, v in (("behaviour", behaviour), ("model", model)) if v is not None] or ["data only"]}

    def cell(mask):
        h, s, a = (int(i) for i in np.argwhere(mask)[0])
        return f"(h={h + 1}, s={s}, a={a})"

    if model is not None:
        cov = model.coverage()
        holds = bool(cov.assumption_2_1)
        dbar, how = cov.dbar_m, "exact, from the supplied MDP and behaviour policy"
        meas.update(dbar_m=dbar, assumption_2_1=holds)
        if not holds:
            bad = (cov.d_opt > 0) & ~cov.covered
            return Check(id=id, kind="assumption", verdict=FAIL, claim=claim, measured={**meas, "confidence": 1.0},
                         details=det, reason=f"Assumption 2.1 FAILS (exact, from the supplied MDP): the optimal policy "
                                             f"reaches {cell(bad)} where d^mu = 0 ({int(bad.sum())} such cells)")
        why = "Assumption 2.1 holds (exact, from the supplied MDP and behaviour policy)"
    elif seen.all():
        k = int(visits.min())
        lo = float(stats.beta.ppf(alpha / visits.size, k, n - k + 1)) if k < n else float(alpha / visits.size) ** (1 / n)
        dbar, how = lo, f"lower {1 - alpha:.0%} confidence bound, every (h,s,a) seen"
        meas.update(dbar_m_lower=lo, assumption_2_1=True)
        why = "Assumption 2.1 holds: every (h,s,a) occurs in the data, so d^mu > 0 everywhere"
    elif behaviour is not None and np.all(behaviour > 0):
        meas.update(assumption_2_1=True)
        why = ("Assumption 2.1 holds: the supplied behaviour policy has full support, so d^mu covers every "
               "policy's occupancy")
        dbar, how = None, None
    else:
        meas.update(assumption_2_1=None, confidence=None)
        if behaviour is not None:
            gap = f"mu = 0 at {cell(behaviour <= 0)} ({int((behaviour <= 0).sum())} cells)"
            need = "the MDP (P, r, init in the .npz) would settle it exactly"
        else:
            gap = f"{int((~seen).sum())} of {visits.size} (h,s,a) never occur in the data, e.g. {cell(~seen)}"
            need = ("supply the behaviour policy 'behaviour' (H, S, A) in the .npz (full support establishes it), "
                    "or it with the MDP ('P', 'r', 'init') for an exact verdict")
        return Check(id=id, kind="assumption", verdict=INCONCLUSIVE, claim=claim, measured=meas, details=det,
                     reason=f"cannot establish Assumption 2.1 from the data: {gap}; whether the optimal policy of the "
                            f"true MDP takes them needs that MDP -- {need} (empirical dbar_m = {dm:.4g})")
    if dbar is None:
        return Check(id=id, kind="assumption", verdict=INCONCLUSIVE, claim=claim, measured={**meas, "confidence": None},
                     details=det, reason=f"{why}; dbar_m (Theorem 3.4's sample-size condition) is not determined: some "
                                         "(h,s,a) never occur and their d^mu may be arbitrarily small (supply P, r, init)")
    need = max(H * H, E) * iota / dbar if dbar > 0 else math.inf
    ok = n > need
    meas.update(n_needed=need, confidence=1.0 if model is not None else 1 - alpha)
    return Check(id=id, kind="assumption", verdict=PASS if ok else INCONCLUSIVE, claim=claim, measured=meas,
                 details={**det, "dbar_m": how},
                 reason=(f"{why}; dbar_m >= {dbar:.4g} ({how}); n = {n} {'>' if ok else '<='} max(H^2, E) iota / "
                         f"dbar_m = {need:.4g}" + ("" if ok else ": the utility theorem does not apply to these data")))


# ============================================================ user data: what it may carry, what it may cost
# Measured on the reference machine (audits/lib/offline.py, docs/dp_apvi.md "Size limits"): privatising one
# count entry (noise, clip, the eqs. 3-4 LP) costs ~350 ns in the black box and ~550 ns in the count checks, and the
# count checks hold ~100 bytes per entry and repetition; an entry is one of the H S A (S + 1) pair and triple
# counts. Counting a step of a trajectory costs < 50 ns; the trajectories are held ~6 times (the neighbours).
NS_BLACKBOX, NS_COUNT_CHECKS, BYTES_PER_ENTRY, NS_STEP = 400e-9, 600e-9, 100, 50e-9
BLACKBOX_BATCH = 1 << 22            # entries privatised at once by counts_target (its max_batch)


def data_cost(sizes: dict, *, samples: int, reps: int) -> tuple[float, float]:
    """(bytes, seconds) of the checks that run on a user's dataset of sizes H, S, A, n (dp_apvi --set data):
    the data black box (2 x samples privatisations), the count checks (``reps`` repetitions), the counting."""
    H, S, A, n = (float(sizes[k]) for k in ("H", "S", "A", "n"))
    entries = H * S * A * (S + 1)
    mem = BYTES_PER_ENTRY * entries * (reps + 2) + BYTES_PER_ENTRY * max(BLACKBOX_BATCH, entries) \
        + 6 * 8 * n * (2 * H + 1)
    sec = entries * (2 * samples * NS_BLACKBOX + reps * NS_COUNT_CHECKS) + n * H * NS_STEP
    return mem, sec


def check_data_size(path: str, H: int, S: int, A: int, n: int, *, samples: int, reps: int) -> None:
    """Exit 2 (InputError) before any work when the data checks of a dataset this large would not fit the memory
    or time limit (dpcheck.limits.check_input_cost), naming the largest S, A, H or n that fits."""
    from dpcheck.limits import check_input_cost
    check_input_cost(f"--set data={path}", {"H": H, "S": S, "A": A, "n": n},
                     lambda z: data_cost(z, samples=samples, reps=reps),
                     unit=f"H S A (S+1) counts privatised {2 * samples + reps} times")


def user_model(arrays: dict, data, path: str):
    """What a user's .npz may carry besides the data (docs/dp_apvi.md): ``behaviour`` (H, S, A), the behaviour
    policy mu; with it ``P`` (H, S, A, S), ``r`` (H, S, A), ``init`` (S,), the true MDP -> (behaviour or None,
    OfflineInstance or None). The data must be possible under what is supplied (an action taken where mu = 0,
    a transition where P = 0: InputError)."""
    from dpcheck.algorithms.envs._validate import as_policy
    H, S, A = data.H, data.S, data.A
    mu = arrays.get("behaviour")
    given = [k for k in ("P", "r", "init") if k in arrays]
    if mu is None:
        if given:
            raise InputError(f"{path}: 'P', 'r', 'init' need the behaviour policy 'behaviour' (H, S, A) too")
        return None, None
    mu = np.asarray(mu)
    if mu.dtype.kind in "iu":
        mu = mu.astype(float)
    pol, _ = as_policy(mu, H, S, A, name=f"{path}: behaviour")
    mu = np.asarray(pol, float)
    st, ac = data.states[0], data.actions[0]
    h = np.broadcast_to(np.arange(H), ac.shape)
    taken = mu[h, st[:, :H], ac] <= 0
    if taken.any():
        t, j = (int(i) for i in np.argwhere(taken)[0])
        raise InputError(f"{path}: trajectory {t} takes action {int(ac[t, j])} at step {j + 1} in state "
                         f"{int(st[t, j])}, where the supplied behaviour policy has probability 0")
    if not given:
        return mu, None
    if len(given) != 3:
        raise InputError(f"{path}: an MDP needs all of 'P', 'r' and 'init' (found only {given})")
    from dpcheck.algorithms.envs.tabular import TabularMDP
    from dpcheck.algorithms.offline.instances import OfflineInstance
    try:
        mdp = TabularMDP(arrays["P"], arrays["r"], arrays["init"], name=path)
    except InputError as e:
        raise InputError(f"{path}: {e}") from None
    if (mdp.H, mdp.S, mdp.A) != (H, S, A):
        raise InputError(f"{path}: the MDP has (H, S, A) = {(mdp.H, mdp.S, mdp.A)}, the data {(H, S, A)}")
    if np.any(mdp.init[st[:, 0]] <= 0) or np.any(mdp.P[h, st[:, :H], ac, st[:, 1:]] <= 0):
        raise InputError(f"{path}: the data contain a start or transition that has probability 0 under the "
                         "supplied MDP")
    return mu, OfflineInstance(mdp=mdp, behaviour=mu, name=f"your MDP {path}")


# ============================================================ rates
def data_bound(res, d_opt) -> np.ndarray:
    """2 sum_h sum_{s,a} d^{pi*}_h(s,a) Gamma_h(s,a) per run (eq. 31's right side) -> (runs,)."""
    return 2 * np.einsum("hsa,rhsa->r", d_opt, res.penalties)


def bounds_on_grid(spec: APVISpec, instance, *, n_grid, budgets, runs: int, seed: int):
    """B_DP, B_APVI (same counts) and the realised gap per (run, grid point): for every n in ``n_grid``
    at the audit's budget, and for every budget in ``budgets`` at n_grid[len // 2] (theory constants)."""
    from dpcheck.algorithms.offline import APVI
    from dpcheck.algorithms.envs.planning import suboptimality
    cov = instance.coverage()
    # the non-private baseline with the same mode's constants (theory: the empirical Bernstein)
    base = (APVI(delta=spec.delta, penalty=spec.penalty) if spec.mode == "theory" else
            APVI(delta=spec.delta, penalty=spec.penalty, C1=PRACTICAL["C1"], C2=PRACTICAL["C2"]))
    out = {"n": {"B_dp": [], "B_apvi": [], "gap": [], "saturated": []}, "budget": {"B_dp": [], "B_apvi": []}}
    H = instance.mdp.H
    cap = (H - np.arange(H)).astype(float)[None, :, None, None]          # H - h + 1 (paper's h)
    ss = np.random.SeedSequence(seed)
    kids = ss.spawn(len(n_grid) + len(budgets))
    for i, n in enumerate(n_grid):
        rng = np.random.default_rng(kids[i])
        counts = instance.sample_counts(int(n), rng, runs)
        res = spec.make().run(counts, instance.mdp, rng)
        ref = base.run(counts, instance.mdp, rng)
        out["n"]["B_dp"].append(data_bound(res, cov.d_opt))
        out["n"]["B_apvi"].append(data_bound(ref, cov.d_opt))
        out["n"]["gap"].append(suboptimality(instance.mdp, res.policy))
        out["n"]["saturated"].append((res.penalties >= cap).mean(axis=(1, 2, 3)))
    n_mid = int(n_grid[len(n_grid) // 2])
    for j, b in enumerate(budgets):
        rng = np.random.default_rng(kids[len(n_grid) + j])
        counts = instance.sample_counts(n_mid, rng, runs)
        res = spec.make(budget=b).run(counts, instance.mdp, rng)
        ref = base.run(counts, instance.mdp, rng)
        out["budget"]["B_dp"].append(data_bound(res, cov.d_opt))
        out["budget"]["B_apvi"].append(data_bound(ref, cov.d_opt))
    out["n_mid"] = n_mid
    return {k: ({kk: np.stack(vv, axis=1) for kk, vv in v.items()} if isinstance(v, dict) else v)
            for k, v in out.items()}


def _width(spec: APVISpec, budget: float, mdp) -> float:
    """E of the CLAIMED mechanism at ``budget`` (also when the noise is switched off)."""
    return replace(spec, noise_off=False).make(budget=budget).width(mdp.H, mdp.S, mdp.A)


def rate_checks(spec: APVISpec, instance, *, n_grid, budget_factors, runs: int, seed: int, alpha: float,
                tolerance: float = 0.15) -> list[Check]:
    """Rates in theory mode (the paper's constants), from the data-dependent bound B = 2 sum d^{pi*} Gamma
    (eq. 31, Lemma C.10) of DP-APVI and of APVI on the same data (eq. 7):

    * regret.bound.n: B_DP falls at least like n^{-1/2} (Theorem 3.4's main term; the privacy term falls
      like 1/n): slope <= -0.5 + 0.1; points where B_DP >= H (the bound says nothing) are reported as vacuous;
    * regret.privacy_cost.n: B_DP - B_APVI ~ n^{-1} (the extra S H^2 E / (n dbar_m) term): slope -1 +- tol;
    * regret.privacy_cost.budget: B_DP - B_APVI ~ rho^{-1/2} (Gaussian, E_rho) / eps^{-1} (Laplace, E_eps):
      slope -0.5 / -1 +- tol;
    * regret.suboptimality_bound: v* - v^{pi_hat} <= B_DP in every run and grid point (eq. 31, Lemma C.10), w.p. >= 1 - 4 delta.
    Intervals: studentised bootstrap over runs (dpcheck.regret.fit_scaling, interval="t")."""
    from dpcheck.regret import fit_scaling, slope_check
    budgets = [spec.budget * f for f in budget_factors]
    g = bounds_on_grid(spec, instance, n_grid=n_grid, budgets=budgets, runs=runs, seed=seed)
    H = instance.mdp.H
    src = SOURCE
    common = {"instance": instance.name, "runs": runs, "mode": "theory (C1 = sqrt(2), C2 = 16)", "delta": spec.delta}
    Bn, An, gap = g["n"]["B_dp"], g["n"]["B_apvi"], g["n"]["gap"]
    vac_pts = [int(n) for n, b in zip(n_grid, Bn.mean(0)) if b >= H]
    fit = fit_scaling(n_grid, Bn, alpha=alpha, seed=seed, interval="t")
    c1 = slope_check(fit, bound=-0.5 + 0.1, id="regret.bound.n", xname="n",
                     statement="sub-optimality bound O~(n^{-1/2}) + O~(1/n) (Theorem 3.4): the data-dependent bound "
                               "2 sum d^{pi*} Gamma falls at least like n^{-1/2}",
                     source=f"{src}, Theorem 3.4, eq. 31 (eq. 31, Lemma C.10)", ylabel="2 sum d^{pi*} Gamma (DP-APVI)",
                     details=dict(common, n_grid=list(map(int, n_grid)), bound_mean=list(Bn.mean(0)),
                                  vacuous_points=vac_pts, H=H,
                                  penalty_exceeds_H_fraction=list(g["n"]["saturated"].mean(0))))
    if len(vac_pts) == len(n_grid):
        c1 = vacuous(c1, f"the bound exceeds H = {H} at every n: it says nothing there")
    elif vac_pts:
        c1 = replace(c1, reason=c1.reason + f"; VACUOUS (bound >= H) at n = {vac_pts}")
    sat = g["n"]["saturated"].mean(0)
    if sat.max() > 0:
        c1 = replace(c1, reason=c1.reason + f"; Gamma >= H - h + 1 (Qbar = 0) at {sat[0]:.0%} of (h,s,a) at n = "
                                             f"{int(n_grid[0])}, {sat[-1]:.0%} at n = {int(n_grid[-1])}")
    dn = Bn - An
    fit2 = fit_scaling(n_grid, np.maximum(dn, 1e-300), alpha=alpha, seed=seed + 1, interval="t")
    c2 = slope_check(fit2, bound=-1 + tolerance, lower=-1 - tolerance, id="regret.privacy_cost.n", xname="n",
                     statement="the cost of privacy in the bound is the lower-order term O~(S H^2 E / (n dbar_m)): "
                               "B_DP - B_APVI ~ n^{-1}",
                     source=f"{src}, Theorem 3.4 vs eq. 7", ylabel="B_DP - B_APVI",
                     details=dict(common, n_grid=list(map(int, n_grid)), cost_mean=list(dn.mean(0)),
                                  negative_fraction=float((dn <= 0).mean())))
    mdp = instance.mdp
    theory = spec.mode == "theory"
    se = [mdp.S * _width(spec, b, mdp) for b in [spec.budget] * len(n_grid)]
    c2 = _positive_cost(c2, dn, n_grid, "n", [theory and v >= 1 for v in se])
    Bb, Ab = g["budget"]["B_dp"], g["budget"]["B_apvi"]
    db = Bb - Ab
    expected = spec.width_exponent(mdp.H, mdp.S, mdp.A, budgets)
    like = ("the plug-in's own width E (its exponent fitted on its declared E at these budgets)"
            if spec.plugin is not None else "rho^{-1/2} (Gaussian, E_rho) or eps^{-1} (Laplace, E_eps)")
    fit3 = fit_scaling(budgets, np.maximum(db, 1e-300), alpha=alpha, seed=seed + 2, interval="t")
    c3 = slope_check(fit3, bound=expected + tolerance, lower=expected - tolerance, id="regret.privacy_cost.budget",
                     xname=spec.budget_name,
                     statement=f"the cost of privacy scales like E: {like}; expected slope {expected:.3g}",
                     source=f"{src}, Theorem 3.4 / docs/derivations.md#noise-calibration", ylabel="B_DP - B_APVI",
                     details=dict(common, n=g["n_mid"], budgets=budgets, cost_mean=list(db.mean(0))))
    c3 = _positive_cost(c3, db, budgets, spec.budget_name,
                        [theory and mdp.S * _width(spec, b, mdp) >= 1 for b in budgets])
    fails = int(np.any(gap > Bn + TOL, axis=1).sum())
    c4 = probability_check(id="regret.suboptimality_bound", kind="regret", failures=fails, runs=runs,
                           beta=min(1.0, 4 * spec.delta), alpha=alpha,
                           what="v* - v^{pi_hat} <= 2 sum d^{pi*} Gamma at every n of the grid",
                           details=dict(common, n_grid=list(map(int, n_grid)), gap_mean=list(gap.mean(0)),
                                        bound_mean=list(Bn.mean(0))),
                           claim=_claim_dict(spec, "w.p. >= 1 - 4 delta, v* - v^{pi_hat} <= 2 sum_h sum d^{pi*}_h Gamma_h",
                                             f"{src}, eq. 31 + Lemma C.10 (Theorem 3.4)"))
    if len(vac_pts) == len(n_grid):
        c4 = vacuous(c4, f"the bound exceeds H = {H} at every n")
    return [c1, c2, c3, c4]


def _positive_cost(check: Check, cost: np.ndarray, grid, xname: str, strict) -> Check:
    """A privacy cost whose mean is <= 0 somewhere has no slope to fit. Where ``strict`` (theory constants
    and S E >= 1, the precondition of Lemma C.6) DP-APVI's penalty must exceed APVI's -- its extra
    term 16 S H E iota / ntil outweighs APVI's (7/3) H iota / n -- so a cost <= 0 there means the penalty
    pays nothing for privacy: FAIL. Elsewhere (practical constants, or a budget so large that S E < 1):
    INCONCLUSIVE, and said why."""
    m = cost.mean(0)
    if np.all(m > 0):
        return check
    bad = [(float(x), bool(st)) for x, v, st in zip(grid, m, strict) if v <= 0]
    where = [x for x, _ in bad]
    if any(st for _, st in bad):
        return replace(check, verdict=FAIL,
                       reason=f"B_DP - B_APVI <= 0 at {xname} = {where} although S E >= 1 with the paper's constants: "
                              f"the DP penalty pays nothing for privacy (eq. 7)")
    return replace(check, verdict=INCONCLUSIVE,
                   reason=f"B_DP - B_APVI <= 0 at {xname} = {where}: no privacy cost to fit there (practical constants, "
                          f"or S E < 1:); " + check.reason)


def suboptimality_rate_check(spec: APVISpec, instance, *, n_grid, runs: int, seed: int, alpha: float,
                             mode: str = "practical", tolerance: float = 0.1) -> Check:
    """regret.suboptimality.n: the realised gap v* - v^{pi_hat} (exact) falls at least like n^{-1/2}
    (Theorem 3.4's main term): slope of the mean gap <= -0.5 + tolerance. Practical constants by default.

    Grid points that cannot inform the fit are left out and named: those where Qbar = 0 everywhere in
    every run (the penalties exceed H -- with the paper's constants for every n below ~1e5 -- so the
    policy is the tie-break and the theorem's sample-size condition is not met: VACUOUS points), and those
    where the mean gap is 0 (pi_hat = pi* in every run: nothing left to measure). With fewer than 3 points
    left the check is INCONCLUSIVE, never a pass."""
    from dpcheck.algorithms.envs.planning import suboptimality
    from dpcheck.regret import fit_scaling, slope_check
    ss = np.random.SeedSequence(seed).spawn(len(n_grid))
    gaps, blind = [], []
    for i, n in enumerate(n_grid):
        rng = np.random.default_rng(ss[i])
        counts = instance.sample_counts(int(n), rng, runs)
        res = spec.make(mode=mode).run(counts, instance.mdp, rng)
        gaps.append(suboptimality(instance.mdp, res.policy))
        blind.append(bool(np.all(res.q_values == 0)))
    G = np.stack(gaps, axis=1)
    blind = np.asarray(blind)
    pos = (G.mean(0) > 1e-12) & ~blind
    det = {"instance": instance.name, "mode": mode, "runs": runs, "n_grid": list(map(int, n_grid)),
           "gap_mean": list(G.mean(0)), spec.budget_name: spec.budget,
           "constants": PRACTICAL if mode == "practical" else THEORY,
           "vacuous_points": [int(n) for n, b in zip(n_grid, blind) if b],
           "solved_points": [int(n) for n, g, b in zip(n_grid, G.mean(0), blind) if g <= 1e-12 and not b]}
    stmt = "sub-optimality O~(n^{-1/2}) (Theorem 3.4's main term): the realised gap falls at least like n^{-1/2}"
    src = f"{SOURCE}, Theorem 3.4"
    if pos.sum() < 3:
        why = []
        if det["vacuous_points"]:
            why.append(f"VACUOUS at n = {det['vacuous_points']} (Qbar = 0 everywhere: the penalties exceed H)")
        if det["solved_points"]:
            why.append(f"gap 0 at n = {det['solved_points']}")
        return Check(id="regret.suboptimality.n", kind="regret", verdict=INCONCLUSIVE,
                     claim={"statement": stmt, "source": src}, measured={"informative_points": int(pos.sum())},
                     details=det, reason="fewer than 3 grid points to fit a rate: " + "; ".join(why))
    xs = np.asarray(n_grid, float)[pos]
    fit = fit_scaling(xs, G[:, pos], alpha=alpha, seed=seed, interval="t")
    c = slope_check(fit, bound=-0.5 + tolerance, id="regret.suboptimality.n", xname="n", statement=stmt, source=src,
                    ylabel="v* - v^{pi_hat}", details=det)
    left_out = det["vacuous_points"] + det["solved_points"]
    if left_out:
        c = replace(c, reason=c.reason + f"; left out n = {sorted(left_out)} (vacuous or solved)")
    return c


def suboptimality_budget_check(spec: APVISpec, instance, *, n: int, budget_factors, runs: int, seed: int,
                               alpha: float, mode: str = "practical", tolerance: float = 0.1) -> Check:
    """regret.suboptimality.budget: at fixed n, the realised gap (exact) does not grow with the budget --
    its privacy part O~(S H^2 E / (n dbar_m)) falls like E, i.e. rho^{-1/2} (eps^{-1}): the slope of the mean
    gap in the budget must not exceed 0 + ``tolerance`` (FAIL only if its interval lies wholly above). The
    non-private part of the gap does not depend on the budget, so only an upper bound is claimed. Grid
    points with gap 0 in every run, or with Qbar = 0 everywhere (VACUOUS: penalties >= H), are left out;
    fewer than 3 left: INCONCLUSIVE."""
    from dpcheck.algorithms.envs.planning import suboptimality
    from dpcheck.regret import fit_scaling, slope_check
    budgets = [spec.budget * f for f in budget_factors]
    ss = np.random.SeedSequence(seed).spawn(len(budgets))
    gaps, blind = [], []
    for i, b in enumerate(budgets):
        rng = np.random.default_rng(ss[i])
        counts = instance.sample_counts(int(n), rng, runs)
        res = spec.make(budget=b, mode=mode).run(counts, instance.mdp, rng)
        gaps.append(suboptimality(instance.mdp, res.policy))
        blind.append(bool(np.all(res.q_values == 0)))
    G = np.stack(gaps, axis=1)
    blind = np.asarray(blind)
    pos = (G.mean(0) > 1e-12) & ~blind
    det = {"instance": instance.name, "mode": mode, "runs": runs, "n": int(n), "budgets": budgets,
           "gap_mean": list(G.mean(0)), "vacuous_budgets": [b for b, v in zip(budgets, blind) if v]}
    stmt = (f"the privacy part of the sub-optimality, O~(S H^2 E / (n dbar_m)), falls as the budget grows: the "
            f"realised gap does not grow with {spec.budget_name}")
    src = f"{SOURCE}, Theorem 3.4 / docs/derivations.md#noise-calibration (eq. 7)"
    if pos.sum() < 3:
        return Check(id="regret.suboptimality.budget", kind="regret", verdict=INCONCLUSIVE,
                     claim={"statement": stmt, "source": src}, measured={"informative_points": int(pos.sum())},
                     details=det, reason=f"the mean gap is 0 or vacuous (Qbar = 0) at {int((~pos).sum())} of "
                                         f"{len(budgets)} budgets: too few to fit a slope")
    fit = fit_scaling(np.asarray(budgets)[pos], G[:, pos], alpha=alpha, seed=seed, interval="t")
    return slope_check(fit, bound=tolerance, id="regret.suboptimality.budget", xname=spec.budget_name, statement=stmt,
                       source=src, ylabel="v* - v^{pi_hat}", details=det)


class _FixedRelease:
    """Stands in for the algorithm's privatizer: returns one fixed release whatever counts it is given
    (every other attribute is the real privatizer's)."""

    def __init__(self, real, release):
        self._real, self._release = real, release

    def privatize(self, pair, triple, rng):
        return self._release

    def __getattr__(self, name):
        return getattr(self._real, name)


def dataflow_check(spec: APVISpec, instance, *, n: int, runs: int, seed: int) -> Check:
    """privacy.dataflow (post-processing): everything after the release n' is post-processing. The algorithm's
    privatizer is made to hand out ONE fixed release (computed by the real privatizer from dataset A);
    the algorithm is then run on A and on an independent dataset B of the same size. Policy, values, Q
    and penalties must be identical: any difference means the code after the release reads the raw data
    (e.g. a fallback or penalty from raw counts), which the privacy argument does not cover. With the
    noise off there is no release: the algorithm reads the raw data (FAIL)."""
    algo = spec.make()
    src = f"{SOURCE}, Algorithm 1 / Lemma C.1 (post-processing: the output is a post-processing of n')"
    claim = _claim_dict(spec, "the output depends on the data only through the released noisy counts n'", src)
    if algo.privatizer is None:
        return Check(id="privacy.dataflow", kind="whitebox", verdict=FAIL, claim=claim,
                     measured={"confidence": 1.0}, details={},
                     reason=f"{type(algo).__name__} has no privatizer: it computes its output from the raw counts")
    rng = np.random.default_rng(seed)
    cA = instance.sample_counts(n, rng, runs)
    cB = instance.sample_counts(n, rng, runs)
    release = algo.privatizer.privatize(cA.visits, cA.transitions, np.random.default_rng(seed + 1))
    algo.privatizer = _FixedRelease(algo.privatizer, release)
    a = algo.run(cA, instance.mdp, np.random.default_rng(seed + 2))
    b = algo.run(cB, instance.mdp, np.random.default_rng(seed + 2))
    fields = ("policy", "values", "q_values", "penalties", "kernel")
    diff = {f: float(np.max(np.abs(np.asarray(getattr(a, f), float) - np.asarray(getattr(b, f), float))))
            for f in fields}
    raw_differ = float(np.abs(cA.visits - cB.visits).max())
    bad = [f for f, v in diff.items() if v > 0]
    return Check(id="privacy.dataflow", kind="whitebox", verdict=FAIL if bad else PASS, claim=claim,
                 measured={"max_difference": diff, "raw_counts_max_difference": raw_differ, "confidence": 1.0,
                           "runs": runs},
                 details={"instance": instance.name, "n": n},
                 reason=(f"with the same release, datasets A and B give different {bad} (the output reads raw data)"
                         if bad else f"same release, different data (raw counts differ by up to {raw_differ:g}): "
                                     f"identical policy, values, Q, penalties and P~ in {runs} runs"))
