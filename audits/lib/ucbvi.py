"""The checks of DP-UCBVI (Qiao & Wang, AISTATS 2023; Qiao & Wang 2023), one function per claim.

``audits/dp_ucbvi.py`` is the registered audit (its claim table says which function checks which
claim); the functions here take an :class:`AgentSpec` -- a picklable description of the agent, so any
agent class (a variant, a planted defect) can be audited from a test -- and return finished
:class:`dpcheck.checks.Check` objects:

* privacy: :func:`jdp_blackbox_check` (eps-JDP of the actions sent to the other users, black box),
  :func:`ldp_message_check` (eps-LDP of one user's message), :func:`dataflow_check` (the agent reads only
  the release: the Billboard lemma's premise), :func:`whitebox_check` (the declared DpEvent, PLD);
* Assumption 3.1 and the lemmas built on it: :func:`monitored_run` + :func:`assumption_checks`,
  :func:`count_error_order_check`, :func:`optimism_check`;
* regret: :func:`explicit_bound_check` (eq. 75), :func:`regret_checks` / :func:`rate_checks` (the exponent
  and the privacy-cost scaling in K and eps, practical mode, reports/reproductions/dp_ucbvi_fig1/README.md).

Expensive batches go through :func:`dpcheck.parallel.cached_call`, so ``--cache DIR`` stores them and a
rerun resumes from them.
"""
from __future__ import annotations

import copy
import functools
import math
from dataclasses import dataclass, replace

import numpy as np

from dpcheck.audit import ExecutionOptions
from dpcheck.checks import Check, FAIL, INCONCLUSIVE, PASS, invariant_check, probability_check, vacuous
from dpcheck.parallel import cached_call
from dpcheck.regret import slope_check

SOURCE = "Qiao & Wang 2023, Near-Optimal Differentially Private Reinforcement Learning (AISTATS)"
VACUOUS = ("Q~ = H at every (k,h,s,a) (theory constants, reports/reproductions/dp_ucbvi_fig1/README.md): optimism is trivial and regret linear; "
           "this run is no evidence for the claim")


# ----------------------------------------------------------------------------- configuration
@dataclass(frozen=True)
class AgentSpec:
    """How to build the agent under audit: configuration only, picklable (chunks run in workers).

    privatizer: "central" | "local" | "none" | "file.py:Class" | a CountPrivatizer subclass (anything
    ``load_privatizer`` accepts). agent_class: DPUCBVI (default) or a subclass (variants, planted
    defects); constants: explicit BonusConstants overriding ``mode``'s.
    """

    privatizer: str = "central"
    epsilon: float = 1.0
    beta: float = 0.1
    calibration: str = "strict"
    width_mode: str = "rigorous"
    mode: str = "practical"
    agent_class: type | None = None
    constants: object | None = None
    tie_breaking: str = "random"

    @functools.cached_property
    def template(self):
        """The privatizer of this configuration, loaded and validated once per spec and never started:
        the claim, notion and declaration are read off it, and every run works on a copy of it
        (:meth:`make_privatizer`; the convention of audits/lib/privatizers.py's templates). Not pickled
        (a worker rebuilds it from the configuration) and not part of the AgentSpec's fingerprint."""
        from dpcheck.algorithms.privatizers import load_privatizer
        return load_privatizer(self.privatizer, epsilon=self.epsilon, beta=self.beta,
                               calibration=self.calibration, width_mode=self.width_mode)

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "template"}

    def make_privatizer(self):
        """A fresh, un-started copy of :attr:`template` for one run."""
        return copy.deepcopy(self.template)

    def make(self):
        from dpcheck.algorithms.online.ucbvi import DPUCBVI
        cls = self.agent_class or DPUCBVI
        return cls(self.make_privatizer(), beta=self.beta, mode=self.mode, constants=self.constants,
                   tie_breaking=self.tie_breaking)

    def notion(self) -> str:
        from dpcheck.audits.lib import privatizers as pa
        p = self.template
        if getattr(p, "notion", None) == "none":   # the non-private baseline: audited as JDP, no privatizer checks
            return "none"
        return pa.privatizer_notion(p, pa.claim_for_families(p, True))

    def describe(self) -> dict:
        return {"agent": (self.agent_class.__name__ if self.agent_class else "DPUCBVI"),
                "privatizer": self.privatizer, "epsilon": self.epsilon, "beta": self.beta,
                "calibration": self.calibration, "width_mode": self.width_mode, "mode": self.mode,
                "tie_breaking": self.tie_breaking}


def claim_for(spec: AgentSpec):
    """The privacy claim the agent is audited against: its privatizer's declared claim; the non-private
    baseline (which claims nothing) is held to DP-UCBVI's eps-JDP claim (Theorem 5.2)."""
    from dpcheck import Claim
    c = getattr(spec.template, "claim", None)
    if c is None:  # the non-private baseline claims nothing; audit it against the DP-UCBVI claim
        return Claim(epsilon=spec.epsilon, notion="JDP", source=f"{SOURCE}, Theorem 5.2 (claimed for DP-UCBVI)")
    return c


# ----------------------------------------------------------------------------- privacy
def jdp_users(K: int = 4, H: int = 2, S: int = 2):
    """Neighbouring scripted user sequences for the JDP audit (Def. 2.2): U and U' differ in user 1.

    Every user reports the fixed trajectory "stay in state 0, reward 0"; in U' user 1 instead
    reports state 1 and reward 1 at every step. The first user is the one whose data the
    later users' actions could reveal most directly (Section 2.2: the adversary sees the actions
    of all other users). Fixed trajectories make the algorithm the only source of randomness.
    """
    from dpcheck.algorithms.envs.users import FixedTrajectoryUsers
    A = 2
    st = np.zeros((K, H + 1), dtype=np.int64)
    rw = np.zeros((K, H))
    st2, rw2 = st.copy(), rw.copy()
    st2[0, 1:] = 1
    rw2[0] = 1.0
    return FixedTrajectoryUsers(H, S, A, st, rw), FixedTrajectoryUsers(H, S, A, st2, rw2)


class OtherUsersActions:
    """mechanism(users, rng, size): the actions sent to users 2..K in ``size`` independent runs.

    One sample = one whole run of the algorithm (vectorised: runs = size). Module-level and
    configuration-only so that chunks can run in other processes.
    """

    def __init__(self, spec: AgentSpec):
        self.spec = spec

    def __call__(self, users, rng, size):
        res = self.spec.make().run(users, users.K, rng, runs=int(size), monitor=False, regret=False)
        return res.actions[:, 1:, :].reshape(int(size), -1).astype(np.int64)


def jdp_blackbox_check(spec: AgentSpec, exe: ExecutionOptions = ExecutionOptions(), *, samples: int = 200_000,
                       K: int = 4, H: int = 2) -> Check:
    """C1: eps-JDP of the recommended actions, black box: the actions sent to users 2..K on two user
    sequences that differ in user 1 (:func:`jdp_users`; Qiao & Wang 2023, Definition 2.2). ``exe``: the
    audit's execution options (alpha, seed, parallelism, cache), whole."""
    from dpcheck import AuditTarget
    seed = exe.seed
    U, U2 = jdp_users(K, H)
    claim = claim_for(spec)
    target = AuditTarget(name="dp_ucbvi.jdp", mechanism=OtherUsersActions(spec), pairs=[(U, U2)],
                         claim=claim, output="discrete")
    res = exe.audit(target, samples)
    check = res.to_check(id="privacy.jdp.blackbox", claim_source=claim.source)
    # how much the actions depend on the data at all: fraction of Q~ saturated at H
    probe = spec.make().run(U2, K, np.random.default_rng(seed), runs=64, regret=False)
    sat = float(np.mean(probe.monitors["vacuous_fraction"]))
    det = dict(check.details)
    det.update(agent=spec.describe(), users={"K": K, "H": H, "S": 2, "A": 2,
                                             "pair": "user 1: (state 0, reward 0) vs (state 1, reward 1) at every step"},
               adversary="actions sent to users 2..K (one sample = one whole run)",
               saturated_fraction=sat)
    why = ("Q~ = H at every (k,h,s,a) in this short run (E >> K), so the actions are tie-breaking noise: the "
           "black box sees no data dependence; the dataflow and privatizer checks carry the evidence")
    return vacuous(replace(check, details=det), why if sat > 0.99 else None,
                   note=" (Q~ saturated at H: the actions carry no data here)")


class ReplayPrivatizer:
    """Releases a recorded stream whatever data it is shown (for the dataflow check)."""

    def __init__(self, releases, width):
        self.releases, self._width = releases, width

    def start(self, runs, H, S, A, K, rng, rewards=True):
        self.i = 0
        self.width = self._width

    def observe(self, states, actions, rewards=None):
        pass

    def release(self):
        out = self.releases[self.i]
        self.i += 1
        return out


class Recorder:
    """Wraps a privatizer and keeps every release."""

    def __init__(self, inner):
        self.inner, self.releases = inner, []

    def start(self, *a, **k):
        self.inner.start(*a, **k)
        self.width = self.inner.width

    def observe(self, *a, **k):
        self.inner.observe(*a, **k)

    def release(self):
        out = self.inner.release()
        self.releases.append(out)
        return out


def dataflow_check(spec: AgentSpec, *, seed: int = 0, runs: int = 64, K: int = 12, H: int = 3) -> Check:
    """Lemma 5.1's data flow, post-processing: the actions sent to user k depend only on the release and user k's own states.

    Record the release stream of an exact-count privatizer (E = 0: the planner is then as
    data-sensitive as it can be) on users U; replay that same stream while the agent
    interacts with U' (user 1 replaced). Same seed, same tie-breaking stream. An agent that
    reads only the release sends users 2..K exactly the same actions; any difference means
    it read the raw data somewhere (the Billboard lemma's premise fails). One counterexample
    fails the check.
    """
    from dpcheck.algorithms.privatizers import NoPrivatizer
    U, U2 = jdp_users(K, H, S=2)
    agent_cls = spec.agent_class
    from dpcheck.algorithms.online.ucbvi import DPUCBVI
    cls = agent_cls or DPUCBVI

    def agent(priv):
        return cls(priv, beta=spec.beta, mode=spec.mode, constants=spec.constants, tie_breaking=spec.tie_breaking)

    rec = Recorder(NoPrivatizer())
    a = agent(rec).run(U, K, np.random.default_rng(seed), runs=runs, monitor=False, regret=False)
    b = agent(ReplayPrivatizer(rec.releases, 0.0)).run(U2, K, np.random.default_rng(seed), runs=runs,
                                                            monitor=False, regret=False)
    c = agent(ReplayPrivatizer(rec.releases, 0.0)).run(U, K, np.random.default_rng(seed), runs=runs,
                                                           monitor=False, regret=False)
    if not np.array_equal(a.actions, c.actions):
        # replaying on the same data must reproduce the run: otherwise the agent is not a
        # function of (release, own states, seed) at all and the check cannot speak
        return Check(id="privacy.dataflow", kind="whitebox", verdict=INCONCLUSIVE,
                     claim={"statement": "actions depend only on the released counts and the user's own states",
                            "source": f"{SOURCE}, Lemma 5.1 (Billboard lemma, Hsu et al. 2014)"},
                     measured={"violations": None, "cases": int(a.actions[:, 1:].size), "confidence": 1.0},
                     details={"agent": spec.describe()},
                     reason="the agent is not reproducible under a replayed release stream (hidden randomness?)")
    diff = int((a.actions[:, 1:] != b.actions[:, 1:]).sum())
    return invariant_check(
        id="privacy.dataflow", kind="whitebox", violations=diff, total=int(a.actions[:, 1:].size),
        claim={"statement": "actions sent to users 2..K depend only on the released counts (and E) and their own states",
               "source": f"{SOURCE}, Lemma 5.1 / Lemma 5.1(d), post-processing (Billboard lemma, Hsu et al. 2014)"},
        details={"agent": spec.describe(), "runs": runs, "K": K, "H": H,
                 "method": "record the release stream on U, replay it on U' (user 1 replaced), same seeds; "
                           "compare the actions sent to every other user"},
        what="actions of users 2..K unchanged when only user 1's raw data changes")


class LocalMessage:
    """mechanism(trajectory, rng, size): one user's LDP message (the full noisy vector, docs/derivations.md#noise-calibration)."""

    def __init__(self, spec: AgentSpec, H, S, A):
        self.spec, self.H, self.S, self.A = spec, H, S, A

    def __call__(self, traj, rng, size):
        p = self.spec.make_privatizer()
        p.start(int(size), self.H, self.S, self.A, 2, np.random.default_rng(0))
        states, actions, rewards = traj
        n = int(size)
        msg = p.message(np.tile(states, (n, 1)), np.tile(actions, (n, 1)), np.tile(rewards, (n, 1)), rng)
        return msg.flat()


def ldp_message_check(spec: AgentSpec, exe: ExecutionOptions = ExecutionOptions(), *,
                      samples: int = 200_000) -> Check:
    """C2: eps-LDP of one user's message, black box, on the worst pair of C2.

    H = 1, S = 2, A = 2: trajectory X visits (0, 0) -> 0 with reward 1, X' visits (1, 1) -> 1
    with reward 1; they differ in 2 coordinates of each family (l1 distance 2H per family).
    """
    from dpcheck import AuditTarget
    H, S, A = 1, 2, 2
    X = (np.array([0, 0]), np.array([0]), np.array([1.0]))
    X2 = (np.array([1, 1]), np.array([1]), np.array([1.0]))
    claim = claim_for(spec)
    target = AuditTarget(name="dp_ucbvi.ldp", mechanism=LocalMessage(spec, H, S, A), pairs=[(X, X2)],
                         claim=claim, output="continuous")
    res = exe.audit(target, samples)
    check = res.to_check(id="privacy.ldp.blackbox", claim_source=claim.source)
    det = dict(check.details)
    det.update(agent=spec.describe(), pair="X: (s,a,s') = (0,0,0), r = 1; X': (1,1,1), r = 1 (H = 1, S = A = 2)",
               adversary="exactly one user's message (all coordinates, docs/derivations.md#noise-calibration)")
    return replace(check, details=det)


def whitebox_check(spec: AgentSpec, *, H: int = 2, S: int = 3, A: int = 2, K: int = 6) -> Check:
    """whitebox.dp_event: the privatizer's declared DpEvent accounted exactly (dp_accounting PLD) under
    replacement neighbours, against its claim (audits/privatizers.dp_event_check). With calibration
    "paper" this gives 2 eps (docs/derivations.md#neighbouring-relation): a violation of the eps claim under replacement."""
    from dpcheck.audits.lib import privatizers as pa
    p = spec.template
    claim = claim_for(spec)
    d = pa.declaration(p, H, S, A, K)    # declared from the parameters and the sizes, nothing run
    check = pa.dp_event_check(d.dp_event("replacement"), claim, add_remove_event=d.dp_event("add_remove"),
                              label=f"{type(p).__name__}(H={H}, S={S}, A={A}, K={K})")
    if d.claim is None:  # non-private baseline: audited against DP-UCBVI's claim
        check = replace(check, verdict=FAIL, reason=check.reason + " (the privatizer claims no privacy)")
    return check


# ----------------------------------------------------------------------------- assumptions
def monitored_run(spec: AgentSpec, env, *, K: int, runs: int, seed: int):
    """One batch of runs of the agent with Assumption 3.1's monitor on every release it planned with.

    Returns (the agent's run, the CountAssumptionMonitor). The Assumption 3.1 checks and the optimism
    check (whose details say per run whether the good event held) read the same batch. With --cache
    the finished batch is stored and read back on a rerun (dpcheck.parallel.cached_call)."""
    return cached_call("dp_ucbvi.monitored_run", _monitored_run, spec, env, K=K, runs=runs, seed=seed)


def _monitored_run(spec: AgentSpec, env, *, K: int, runs: int, seed: int):
    from dpcheck.audits.lib import tabular
    box = {}

    def hook(counts, priv):
        if "mon" not in box:
            box["mon"] = tabular.CountAssumptionMonitor(runs, counts.width,
                                                        has_rewards=counts.rewards is not None,
                                                        source=f"{SOURCE}, Assumption 3.1 / Lemma 5.4")
        box["mon"].update(counts, priv.true_counts())

    res = spec.make().run(env, K, np.random.default_rng(seed), runs=runs, regret=False, release_hook=hook)
    return res, box["mon"]


def assumption_checks(spec: AgentSpec, env, *, K: int, runs: int, seed: int, alpha: float,
                      run=None) -> list[Check]:
    """Assumption 3.1 (Lemma 5.4, full-support P~ via audits/lib/tabular.py; the good event of Lemmas 5.1/5.6) and monotonicity, from the releases the agent
    actually planned with during one batch of runs (``run``: a finished :func:`monitored_run`)."""
    res, mon = run if run is not None else monitored_run(spec, env, K=K, runs=runs, seed=seed)
    m, E = res.monitors, res.width
    base = {"agent": spec.describe(), "env": repr(env), "K": K, "runs": runs, "E": E}
    checks = [replace(c, details={**c.details, **base}) for c in mon.checks(beta=spec.beta, alpha=alpha)]
    # the good event of Lemmas 5.1/5.6 from the same monitor that checks Lemma 5.4/full-support P~ (one definition of the good event: |N^ - N| <= E/4 at every
    # release, Lemma 5.4's hypothesis). Releases without N^ leave it unobservable: every run counts as good.
    good = mon.good_event
    beta = spec.beta
    extra = {} if mon.noise_seen else {"good_event": "unobservable (the releases carry no N^)"}
    checks.append(probability_check(
        id="assumption.good_event", failures=int((~good).sum()), runs=runs, beta=beta / 3, alpha=alpha,
        claim={"statement": "|N^ - N| <= E/4 for all (h,s,a,s',k) w.p. >= 1 - beta/3 (the good event of Lemmas 5.1/5.6; Lemma 5.4's hypothesis)",
               "beta": beta / 3, "source": f"{SOURCE}, Lemmas 5.1 / 5.6"},
        details={**base, **extra, "max_noisy_error_over_quarter_E": mon.noise_ratio.tolist(),
                 "max_reward_error_over_E": mon.reward_ratio.tolist()},
        what="the good event"))
    mono = int(m["monotonicity_violations"].sum() + m["above_H"].sum())
    checks.append(invariant_check(
        id="assumption.monotone", violations=mono, total=runs * K * res.H * res.S * res.A,
        claim={"statement": "Q~_h^k <= Q~_h^{k-1} and Q~ <= H for every (k,h,s,a)",
               "source": f"{SOURCE}, Algorithm 1 line 8; proof of Corollary C.10"},
        details=base, what="monotone min and clip at H"))
    return checks


def count_error_order_check(spec: AgentSpec, *, K_grid=(256, 1024, 4096), eps_grid=(0.5, 1.0, 2.0, 4.0),
                            runs: int = 20, seed: int = 0, alpha: float = 0.05) -> list[Check]:
    """the count-error order: order of max |N^ - N|: Central (H/eps) polylog(K) (slope -1 in eps, < 0.25 in K); Local
    (H/eps) sqrt(K) (slope -1 in eps, 0.5 in K). The noise does not depend on the data (docs/derivations.md#widths-e), so
    the privatizer alone is run on fixed trajectories (H = 1, S = 2, A = 1). Each check FAILs only if the
    two-sided (1 - alpha) percentile bootstrap interval over the runs lies wholly outside its range (level
    alpha/2 per side when the interval is valid). The eps slope is -1 exactly whenever the noise is scale
    x Lap(1/eps) (the same draws at every eps: common random numbers). False-alarm rates over audit seeds
    (--quick, default; central and local): benchmarks/false_alarm.py."""
    from dpcheck.regret import fit_scaling
    notion = spec.notion()
    H, S, A = 1, 2, 1

    def max_error(eps, K):
        p = replace(spec, epsilon=float(eps)).make_privatizer()
        p.start(runs, H, S, A, K, np.random.default_rng(seed))
        st = np.zeros((runs, H + 1), dtype=np.int64)
        ac = np.zeros((runs, H), dtype=np.int64)
        rw = np.zeros((runs, H))
        worst = np.zeros(runs)
        for _ in range(K - 1):
            p.observe(st, ac, rw)
            c, t = p.release(), p.true_counts()
            worst = np.maximum(worst, np.abs(np.asarray(c.noisy_transitions) - t.transitions).reshape(runs, -1).max(1))
        return worst

    err = lambda e, k: cached_call("dp_ucbvi.count_error", max_error, e, k)   # one cached batch per (eps, K)
    by_eps = np.stack([err(e, int(K_grid[1])) for e in eps_grid], axis=1)
    by_K = np.stack([err(eps_grid[1], int(k)) for k in K_grid], axis=1)
    fe = fit_scaling(np.asarray(eps_grid, float), by_eps, alpha=alpha, seed=seed)
    src = f"{SOURCE}, Lemma {'5.1' if notion == 'JDP' else '5.6'} (Lemmas 5.1/5.6)"
    det = {"agent": spec.describe(), "runs": runs, "H": H, "S": S, "A": A}
    ylabel = "max |N^ - N|"
    out = [slope_check(fe, bound=-1 + 0.15, lower=-1 - 0.15, id="assumption.count_error_order_eps",
                       statement="max |N^ - N| scales like 1/eps", source=src, xname="eps",
                       details={**det, "K": int(K_grid[1])}, kind="assumption", ylabel=ylabel)]
    if notion == "JDP":
        # over a short K range a polylog has a sizeable log-log slope (0.3 on [128, 2048]); the
        # typical size b_c sqrt(L) sqrt(2 log m), b_c ~ L, predicts the K-dependence
        # exactly, so check that the error normalised by L^1.5 sqrt(log m) is flat in K
        from dpcheck.algorithms.privatizers import tree_levels
        C = H * S * A * (S + 2)
        norm = np.array([tree_levels(int(k)) ** 1.5 * math.sqrt(math.log(C * (int(k) - 1))) for k in K_grid])
        fk = fit_scaling(np.asarray(K_grid, float), by_K / norm[None, :], alpha=alpha, seed=seed)
        out.append(slope_check(fk, bound=0.15, lower=-0.15, id="assumption.count_error_order_K",
                               statement="central max |N^ - N| / (L^1.5 sqrt(log m)) is flat in K: the error "
                                         "is (H/eps) log2(K)^1.5 sqrt(log HSAK), polylogarithmic",
                               source=src, xname="K", details={**det, "raw_max_error": by_K.mean(0).tolist()},
                               kind="assumption", ylabel=ylabel + " / (L^1.5 sqrt(log m))"))
    else:
        fk = fit_scaling(np.asarray(K_grid, float), by_K, alpha=alpha, seed=seed)
        out.append(slope_check(fk, bound=0.5 + 0.15, lower=0.5 - 0.15, id="assumption.count_error_order_K",
                               statement="local max |N^ - N| grows like sqrt(K)", source=src, xname="K",
                               details=det, kind="assumption", ylabel=ylabel))
    return out


def optimism_check(spec: AgentSpec, env, *, K: int, runs: int, seed: int, alpha: float, run=None) -> Check:
    """optimism (Lemma C.11): Q~ >= Q* for all (k,h,s,a) w.p. >= 1 - beta, exact Q* from the true model. The details say per
    run whether the good event |N^ - N| <= E/4 held (CountAssumptionMonitor, as in assumption_checks): optimism (Lemma C.11) is
    proved on it, so a violation outside it is expected at rate <= beta/3."""
    res, mon = run if run is not None else monitored_run(spec, env, K=K, runs=runs, seed=seed)
    m = res.monitors
    fails = int((m["optimism_violations"] > 0).sum())
    sat = float(np.mean(m["vacuous_fraction"]))
    det = {"agent": spec.describe(), "env": repr(env), "K": K, "runs": runs, "mode": spec.mode,
           "violations_per_run": m["optimism_violations"].tolist(),
           "min_margin_per_run": m["optimism_min_margin"].tolist(),
           "first_violation_episode": m["optimism_first_violation"].tolist(),
           "saturated_fraction": sat, "good_event": mon.good_event.tolist()}
    check = probability_check(
        id="assumption.optimism", failures=fails, runs=runs, beta=spec.beta, alpha=alpha,
        claim={"statement": "Q~_h^k(s,a) >= Q*_h(s,a) for all (k,h,s,a) w.p. >= 1 - beta (Lemmas C.9/C.11)",
               "beta": spec.beta, "mode": spec.mode, "source": f"{SOURCE}, Lemma C.11 + Lemma C.9"},
        details=det, what="optimism")
    return vacuous(check, VACUOUS if sat > 0.99 else None)


def explicit_bound(H, S, A, K_arr, E, iota):
    """Theorem 4.1 / eq. 75: 1000 (sqrt(H^2 S A T_k iota^2) + H^2 S^2 A E iota^2 + H^3 S^2 A iota^2)."""
    T = H * np.asarray(K_arr, dtype=float)
    return 1000 * (np.sqrt(H ** 2 * S * A * T * iota ** 2) + H ** 2 * S ** 2 * A * E * iota ** 2
                   + H ** 3 * S ** 2 * A * iota ** 2)


def explicit_bound_check(spec: AgentSpec, env, *, K: int, runs: int, seed: int, alpha: float) -> Check:
    """Theorem 4.1: exact expected Regret(k) <= the explicit bound for all k, per run (w.p. >= 1 - beta)."""
    res = cached_call("dp_ucbvi.explicit_bound_runs", _agent_run, spec, env, K, runs, seed, monitor=True)
    R = res.cumulative_regret
    k = np.arange(1, K + 1)
    B = explicit_bound(res.H, res.S, res.A, k, res.width, res.iota)
    fails = int((R > B[None, :]).any(axis=1).sum())
    sat = float(np.mean(res.monitors["vacuous_fraction"]))
    det = {"agent": spec.describe(), "env": repr(env), "K": K, "runs": runs, "E": res.width, "iota": res.iota,
           "regret_K": R[:, -1].tolist(), "bound_K": float(B[-1]), "max_ratio": float((R / B[None, :]).max()),
           "saturated_fraction": sat,
           "per_episode_regret_last": res.regret[:, -1].tolist()}
    check = probability_check(
        id="regret.explicit_bound", failures=fails, runs=runs, beta=spec.beta, alpha=alpha,
        claim={"statement": "Regret(k) <= 1000 (sqrt(H^2 S A T_k iota^2) + H^2 S^2 A E iota^2 + H^3 S^2 A iota^2) "
                            "for all k, w.p. >= 1 - beta (Theorem 4.1, eq. 75)", "beta": spec.beta, "mode": spec.mode,
               "source": f"{SOURCE}, Theorem 4.1 / Lemma C.9"},
        details=det, what="explicit regret bound")
    return vacuous(replace(check, kind="regret"), VACUOUS if sat > 0.99 else None,
                   note=" (vacuously: the bound's constant is huge and regret is linear)")


# ----------------------------------------------------------------------------- regret
def regret_curves(spec: AgentSpec, env, K: int, runs: int, seed: int) -> np.ndarray:
    """Cumulative exact expected regret (runs, K); with --cache stored and read back on a rerun."""
    return cached_call("dp_ucbvi.regret_curves", _regret_curves, spec, env, K, runs, seed)


def _regret_curves(spec: AgentSpec, env, K: int, runs: int, seed: int) -> np.ndarray:
    return _agent_run(spec, env, K, runs, seed, monitor=False).cumulative_regret


def _agent_run(spec: AgentSpec, env, K: int, runs: int, seed: int, **run_kw):
    """One vectorised batch of ``runs`` runs of the agent, seeded by ``seed`` (the unit that is cached)."""
    return spec.make().run(env, K, np.random.default_rng(seed), runs=runs, **run_kw)


def practical_noise(spec: AgentSpec, H: int, K: int, eps: float) -> AgentSpec:
    """The practical noise calibration of reports/reproductions/dp_ucbvi_fig1/README.md (Chowdhury & Zhou's code): Lap(1/eps) per tree
    node (central) or per message coordinate (local), i.e. the privatizer run at
    eps_eff = eps * F H L (central) / eps * F H (local), F = 3 families, calibration "paper".
    Labelled everywhere: this is eps_eff-JDP/LDP, not eps. Width E stays rigorous (docs/derivations.md#widths-e), so
    the bonus covers the noise and the monotone min cannot lock in noise (docs/derivations.md#readings).
    """
    from dpcheck.algorithms.privatizers import tree_levels
    factor = 3 * H * (tree_levels(K) if spec.notion() == "JDP" else 1)
    return replace(spec, mode="practical", calibration="paper", width_mode="rigorous", epsilon=float(eps) * factor)


def regret_checks(spec: AgentSpec, env, *, K_grid, runs: int, seed: int, alpha: float, eps_grid,
                  progress=None) -> list[Check]:
    """Theorems 5.2 / 5.7 in practical mode: exponent of the increments, privacy cost in K and in eps.

    ``eps_grid``: the (nominal, practical-calibration) eps of the sweep; the exponent and the
    cost in K use eps_grid[1]. Runs the sweep (every curve from the same seed: common random
    numbers) and hands the curves to :func:`rate_checks`, which holds the statistics.
    """
    say = progress or (lambda m: None)
    K_grid = np.asarray(K_grid, dtype=int)
    K = int(K_grid[-1])
    H = env.H
    eps_main = float(eps_grid[1])
    main = practical_noise(spec, H, K, eps_main)
    base = replace(spec, privatizer="none", agent_class=None, mode="practical")
    say(f"dp_ucbvi: regret curves, K = {K}, {runs} runs, {spec.privatizer} eps={eps_main:g} (practical noise)")
    at = K_grid - 1
    R_np = regret_curves(base, env, K, runs, seed)[:, at]
    curves = {float(e): regret_curves(practical_noise(spec, H, K, e), env, K, runs, seed)[:, at] for e in eps_grid}
    slope, statement = -1.0, None
    from dpcheck.audits.lib import privatizers as pa
    if pa.is_plugin(spec.template):
        # a user's privatizer: the claimed cost follows its own width E(eps), not the papers' 1/eps
        slope, statement = width_slope(spec, env, K, eps_grid)
    return rate_checks(K_grid, R_np, curves, eps_main=eps_main, notion=spec.notion(), alpha=alpha, seed=seed,
                       label=f"DP-UCBVI {spec.privatizer}", agent=main.describe(), env=repr(env), runs=runs,
                       cost_eps_slope=slope, cost_eps_statement=statement)


# Thresholds of the rate checks (slopes in log-log; each compared with a two-sided (1 - alpha) "t" bootstrap
# interval over the runs, dpcheck/regret.py "Intervals": a FAIL on one side errs at level alpha/2).
EXPONENT_BOUND = 0.5 + 0.1            # regret.exponent: Theorems 5.2 / 5.7, sqrt(T) + polylog tolerance
COST_K_PASS = {"JDP": 0.35, "LDP": 0.65}   # the shape of the privacy term: flat (JDP) / sqrt(K) (LDP)
COST_K_FAIL = {"JDP": 0.6, "LDP": 0.65}    # what contradicts the theorem's whole bound O~(sqrt(T) + cost term)
COST_EPS = (-1.35, -0.65)             # privacy cost ~ 1/eps; only the steep side contradicts O(1/eps)


def rate_checks(K_grid, R_np, curves: dict, *, eps_main: float, notion: str, alpha: float, seed: int,
                label: str = "DP-UCBVI", agent: dict | None = None, env: str = "", runs: int | None = None,
                cost_eps_slope: float = -1.0, cost_eps_statement: str | None = None) -> list[Check]:
    """The three rate checks from finished curves: ``R_np`` (runs, G) non-private and ``curves[eps]``
    (runs, G) private cumulative regret at K_grid, every run paired by seed (common random numbers).

    (ids carry the notion, ``tag`` = jdp | ldp: regret.exponent.<tag>, regret.privacy_cost.<tag>_K / _eps.)
    regret.exponent (Theorem 5.2; Theorem 5.7): exponent of the increments R(2K) - R(K) of the private regret at eps_main over
      the window [K_grid[-4], K_grid[-2]] (the last three doublings): PASS if the interval's upper end <= 0.6,
      FAIL if its lower end > 0.6 (the theorems' sqrt(T) + polylog tolerance 0.1).
    regret.privacy_cost.<tag>_K: the exponent of the increments of the paired privacy cost
      C(K) = R_DP(K) - R_UCBVI(K), same window. Not the cumulative log-log slope of C: the private bonus
      E/N~ saturates at H until N~ ~ E/H, so C grows linearly first and then bends flat, and a cumulative
      slope reads the end of that burn-in as growth while the cost is already flattening. The increments
      remove the accumulated constant (as for regret.exponent) and see the bend. JDP: PASS if the upper end
      <= 0.35 (the additive S^2 A H^3/eps term, flat up to polylog); FAIL only if the lower end > 0.6:
      C <= R_DP = O~(sqrt(T) + S^2 A H^3 / eps), so only cost increments growing faster than sqrt(K) polylog
      contradict Theorem 5.2 (an exponent in (0.35, 0.6] -- a tail of the burn-in, or a sqrt(K) cost -- is
      consistent with it and inconclusive). LDP: S^2 A sqrt(H^5 T)/eps, PASS / FAIL at 0.65.
    regret.privacy_cost.<tag>_eps: slope of C(K) at the largest K in eps: PASS if the interval lies in
      [-1.35, -0.65]; FAIL only if its upper end < -1.35 (the cost grows faster than 1/eps as eps decreases:
      contradicts the O(1/eps) term). A shallower slope is inconclusive: the theorem bounds the cost from
      above, and at small eps the cost is capped by the linear regret of the burn-in (saturation).
    Measured false-alarm rates of all three on the reference implementation: benchmarks/false_alarm.py.
    ``cost_eps_slope`` (default -1): the claimed slope in eps; a user's privatizer claims the slope of its
      own width E(eps) (:func:`width_slope`), the band and FAIL side move with it.
    """
    tag = notion.lower()    # check ids: regret.exponent.jdp, regret.privacy_cost.jdp_K, ... (as in dp_nash_vi)
    from dpcheck.regret import fit_increment_exponent, fit_scaling, regret_exponent_check
    K_grid = np.asarray(K_grid, dtype=int)
    R_np = np.asarray(R_np, dtype=float)
    curves = {float(e): np.asarray(v, dtype=float) for e, v in curves.items()}
    eps_grid = sorted(curves)
    R_priv = curves[float(eps_main)]
    K = int(K_grid[-1])
    window = (float(K_grid[-4]), float(K_grid[-2]))
    fit = fit_increment_exponent(K_grid, R_priv, window=window, alpha=alpha, seed=seed, interval="t")
    name = lambda e: f"{label}, eps={e:g} (practical noise)"
    agent = agent or {}
    det = {"agent": agent, "env": env, "mode": "practical", "runs": runs if runs is not None else R_np.shape[0],
           "noise": "practical calibration (reports/reproductions/dp_ucbvi_fig1/README.md): Lap(1/eps) per node / coordinate = privatizer at eps_eff",
           "epsilon_effective": agent.get("epsilon"),
           "K_grid": K_grid.tolist(), "regret_private": R_priv.mean(0).tolist(),
           "regret_nonprivate": R_np.mean(0).tolist(),
           "interval": "two-sided (1 - alpha) t bootstrap interval over runs (dpcheck/regret.py, Intervals)"}
    my_plots = [{"title": "Cumulative regret (exact expected, mean +- 1 sd over runs)", "xlabel": "K",
                 "ylabel": "Regret(K)", "logx": True, "logy": True, "kind": "line",
                 "series": [_band(name(e), K_grid, curves[e]) for e in eps_grid]
                 + [_band("UCBVI (non-private)", K_grid, R_np)]}]
    exp_check = regret_exponent_check(fit, claimed=0.5, tolerance=EXPONENT_BOUND - 0.5, id=f"regret.exponent.{tag}",
                                      source=f"{SOURCE}, Theorem {'5.2' if notion == 'JDP' else '5.7'} "
                                             f"(practical mode, reports/reproductions/dp_ucbvi_fig1/README.md)", details=det)
    exp_check = replace(exp_check, details={**exp_check.details,
                                            "plots": my_plots + list(exp_check.details.get("plots", []))})
    from dpcheck.regret import exponent_regime
    exp_check = exponent_regime(exp_check, fit)        # a saturated window passes, but says so
    checks = [exp_check]
    cost = R_priv - R_np
    ck = fit_increment_exponent(K_grid, cost, window=window, alpha=alpha, seed=seed, interval="t")
    jdp = notion == "JDP"
    key = "JDP" if jdp else "LDP"
    checks.append(exponent_regime(slope_check(      # a cost that has flattened in the window: uninformative pass
        ck, bound=COST_K_PASS[key], fail_above=COST_K_FAIL[key], id=f"regret.privacy_cost.{tag}_K",
        statement=("exponent of the increments of the privacy cost Regret_DP(K) - Regret_UCBVI(K) "
                   + ("<= 0.35: an additive S^2 A H^3/eps term, flat in K up to polylog (Thm 5.2); FAIL only "
                      "above 0.6, where the cost outgrows the theorem's whole bound O~(sqrt(T) + S^2 A H^3/eps)"
                      if jdp else "<= 0.65: grows like S^2 A sqrt(H^5 T)/eps (Thm 5.7)")),
        source=SOURCE, xname="K", ylabel="increment of Regret_DP - Regret_UCBVI",
        details={"agent": agent, "mode": "practical", "window": [window[0], window[1]],
                 "statistic": "exponent of the increments C(K_{j+1}) - C(K_j) of the paired cost C "
                              "(dpcheck.regret.fit_increment_exponent), K_j in the window",
                 "cost_mean": cost.mean(0).tolist(), "K_grid": K_grid.tolist()}), ck))
    costs = np.stack([np.maximum(curves[e][:, -1] - R_np[:, -1], 1e-9) for e in eps_grid], axis=1)
    se = fit_scaling(np.asarray(eps_grid, dtype=float), costs, alpha=alpha, seed=seed, interval="t")
    lo_eps, hi_eps = cost_eps_slope + (COST_EPS[0] + 1.0), cost_eps_slope + (COST_EPS[1] + 1.0)
    statement = cost_eps_statement or "privacy cost at fixed K scales like 1/eps (slope -1 +- 0.35), Thms 5.2 / 5.7"
    checks.append(slope_check(
        se, bound=hi_eps, lower=lo_eps, fail_above=None, id=f"regret.privacy_cost.{tag}_eps",
        statement=statement + f"; FAIL only if it grows faster than that as eps decreases (slope < {lo_eps:.3g})",
        source=SOURCE,
        xname="eps", details={"agent": agent, "mode": "practical", "K": K, "eps_grid": list(map(float, eps_grid))}))
    return checks


def width_slope(spec: AgentSpec, env, K: int, eps_grid) -> tuple[float, str]:
    """A plug-in privatizer's claimed privacy-cost scaling in eps: Thms 5.2 / 5.7 bound the privacy cost
    through Assumption 3.1, linearly in the width E, and E = O~(1/eps) is a property of the papers'
    Laplace privatizers, not of every privatizer (a Gaussian one has E ~ eps^-1/2 at large eps). So the
    claimed slope is the log-log slope of the plug-in's own E over the (practical-noise) eps grid."""
    from dpcheck.audits.lib import privatizers as pa
    slope = pa.width_eps_slope(lambda e: practical_noise(spec, env.H, K, e).make_privatizer(), eps_grid,
                               H=env.H, S=env.S, A=env.A, K=K)
    return slope, (f"privacy cost at fixed K scales like the privatizer's width E(eps) (slope {slope:.3g} in eps; "
                   f"Thms 5.2 / 5.7 through Assumption 3.1, E ~ 1/eps for the papers' privatizers)")


def _band(label, x, Y):
    m = Y.mean(0)
    s = Y.std(0)
    return {"label": label, "x": np.asarray(x).tolist(), "y": m.tolist(), "lo": (m - s).tolist(), "hi": (m + s).tolist()}
