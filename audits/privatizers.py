"""Audits of the count privatizers (GitHub issue #3): what one replaced user can change, measured.

Registered audits (``dpcheck audit NAME``): ``central_privatizer`` (eps-JDP, dp_ucbvi.md §3.1, claim C1),
``local_privatizer`` (eps-LDP, §3.3, C2), ``offline_gaussian_privatizer`` (rho-zCDP, offline §2.2/§2.7,
T-1), ``offline_laplace_privatizer`` (eps-DP, offline §2.8(c)). ``--privatizer file.py:Class`` audits a
user's online privatizer with the same checks; ``--set calibration=paper`` audits the paper's
calibration (see "paper calibration" below); ``--set games=1`` uses DP-Nash-VI's two stream families.

Checks, each with its claim's source:
* ``privacy.blackbox`` -- black-box epsilon lower bound (dpcheck.blackbox.audit) on what the adversary
  sees when one user is replaced: Central: the whole released stream (N^ and R~ after each of the K
  episodes); Local: one user's message; offline: the released noisy counts n'. Neighbours are the
  spec's worst case (C2 / N2 / T-1): at every step the two trajectories visit different (s,a) and
  (s,a,s') and both earn reward 1, so every family moves by 2H in l1; all other users are fixed
  (scripted). The statistic is the Neyman-Pearson log-likelihood ratio of the declared noise on the
  coordinates that differ (for the tree: the nodes (j,1) = B(2^j) holding user 1), so the
  auditor's threshold events are the optimal ones. Instances are small (H = 1, S = 2) on purpose:
  with 6 shifted Laplace coordinates the likelihood ratio saturates with probability 1/64 per level,
  which is what makes a tight bound reachable from 10^6 samples.
* ``whitebox.dp_event`` -- the privacy profile computed exactly (dp_accounting PLD accountant) from the
  privatizer's declared DpEvent, compared with its Claim; the add/remove profile is reported too.
* ``whitebox.sensitivity`` -- a hypothesis search over neighbouring trajectories (plus the worst
  case built directly) never exceeds the declared per-family sensitivity; the realised
  ``eps = sum_f Delta_f / b`` is compared with the claim (C1(b), C2, N1, N2).
* ``whitebox.tree_noise_reuse`` (Central) -- the covariance of the released noise equals the tree's:
  ``Cov(B(t), B(t')) = (#shared nodes) 2 b^2``; fresh noise per release breaks it (§7.3).
* ``assumption.count_error``, ``assumption.sum_consistency``, ``assumption.no_underestimation``,
  ``assumption.valid_transition`` (online) over R repetitions (audits/_tabular_checks.py).

Paper calibration under replacement (dp_ucbvi.md §7.1 A5, dp_nash_vi.md B3): the paper calibrates to
the add/remove sensitivity H per family, so under the replacement relation of its own definitions the
mechanism is only 2 eps-DP. With ``--set calibration=paper`` the white-box checks report eps_realised =
2 eps and FAIL, and the black-box bound typically exceeds eps and FAILS too; this is the documented
finding, not a bug of the audit. The default calibration is "strict" (eps under replacement).
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np

from dpcheck.checks import FAIL, INCONCLUSIVE, PASS, Check, invariant_check
from dpcheck.errors import InputError
from dpcheck.registry import PARALLEL, SetOption, register
from algorithms.privatizers.noise import ZeroNoise

PLD_INTERVAL = 1e-4       # dp_accounting discretisation; eps overestimated by ~2e-4 per 3 compositions
PLD_DELTA = 1e-12         # "pure DP" read off the PLD at this delta
EPS_SLACK = 2e-3          # relative + absolute slack on PLD epsilons (discretisation, not privacy)
UCBVI_SOURCE = "Qiao & Wang 2023 (DP-UCBVI)"
NASH_SOURCE = "Qiao & Wang 2024 (DP-Nash-VI)"


# ============================================================ neighbouring users (the spec's worst case)
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
    """Two trajectories that differ in (s,a) and (s,a,s') at every step, both with reward 1 (C2 / N2):
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
    For the built-ins N~ is the §3.2 post-processing of N^, so "noisy" suffices; a user's privatizer only
    self-reports its noisy_* fields, so its planner view must be audited too (review of issue #3)."""
    if view not in VIEWS:
        raise ValueError(f"view must be one of {VIEWS}, got {view!r}")
    from algorithms.privatizers.base import flatten_counts
    v, t = (pc.noisy_visits, pc.noisy_transitions) if view == "noisy" else (pc.visits, pc.transitions)
    return flatten_counts(v, t, pc.rewards)


def _flat_true(tc) -> np.ndarray:
    from algorithms.privatizers.base import flatten_counts
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


def central_target(template, *, H=1, S=2, A=1, K=2, rewards=True, view="noisy"):
    """AuditTarget for a central (JDP) privatizer: the worst-case user at position 1 (she is in all L
    tree levels: nodes (j, 1), released alone as B(2^j)), the other K-1 users scripted.

    The statistic is a function of the released stream only (post-processing), so the bound is valid
    whatever the privatizer does; it is the optimal (Neyman-Pearson) one for a correct tree on N^.
    ``view="planner"`` audits N~ instead (see :func:`_flat_release`)."""
    from dpcheck import AuditTarget
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
                       pairs=[(x, y)], claim=template.claim, output="continuous",
                       description=f"H={H} S={S} A={A} K={K}: worst-case user 1, scripted others; "
                                   f"statistic = {'Laplace LLR' if view == 'noisy' else 'learned score'} of the releases B(2^j) "
                                   f"({'N^' if view == 'noisy' else 'N~, what the planner reads'})")


def local_target(template, *, H=1, S=2, A=1, rewards=True):
    """AuditTarget for a local (LDP) privatizer: exactly one user's message, worst-case pair."""
    from dpcheck import AuditTarget
    x, y = worst_case_pair(H, S, A)
    p0 = copy.deepcopy(template)
    p0.start(1, H, S, A, 1, np.random.default_rng(0), rewards=rewards)
    zero = _ZeroRng()

    def mean(user):
        st, ac, rw = user.arrays(1)
        return p0.message(st, ac, rw if rewards else None, zero).flat()[0]

    mu, mu_p = mean(x), mean(y)

    def mechanism(user, rng, size):
        p = copy.deepcopy(template)
        p.start(size, H, S, A, 1, np.random.default_rng(0), rewards=rewards)
        st, ac, rw = user.arrays(size)
        return laplace_llr(p.message(st, ac, rw if rewards else None, rng).flat(), mu, mu_p)

    return AuditTarget(name=f"{getattr(template, 'name', 'privatizer')}.message", mechanism=mechanism,
                       pairs=[(x, y)], claim=template.claim, output="continuous",
                       description=f"H={H} S={S} A={A}: one user's message, worst-case pair; statistic = Laplace LLR")


class _ZeroRng(ZeroNoise):
    """A stand-in Generator whose noise is 0: the mean of a message (Laplace/Gaussian are symmetric
    around their location; algorithms.privatizers.noise.laplace returns zeros for it)."""


# ============================================================ offline privatizers
def offline_worst_datasets(H: int, S: int = 2, A: int = 1, others: int = 20):
    """Neighbouring datasets: ``others`` scripted trajectories spread over states 0 and 1 (so no count is
    near the clip at 0), plus one trajectory replaced by the worst-case pair (T-1 (i))."""
    x, y = worst_case_pair(H, S, A)
    rest = [Trajectory(states=(i % 2,) * (H + 1), actions=(0,) * H, rewards=(0.0,) * H) for i in range(others)]
    return rest + [x], rest + [y]


def _dataset_arrays(dataset, runs):
    st = np.stack([np.asarray(t.states) for t in dataset])[None].repeat(runs, 0)
    ac = np.stack([np.asarray(t.actions) for t in dataset])[None].repeat(runs, 0)
    return st, ac


def offline_target(priv, *, H=1, S=2, A=1, gaussian=True):
    from dpcheck import AuditTarget
    from algorithms.privatizers.offline import dataset_counts
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
                       claim=priv.claim, output="continuous",
                       description=f"H={H} S={S} A={A}: {len(D)} trajectories, one replaced (worst case); "
                                   f"statistic = {'Gaussian' if gaussian else 'Laplace'} LLR of n'")


# ============================================================ white box: declared DpEvent vs claim
def _closed_form(event) -> dict:
    """Exact totals of a tree of Laplace / Gaussian / composed events: pure eps and zCDP rho."""
    import dp_accounting as dpa
    if isinstance(event, dpa.LaplaceDpEvent):
        return {"epsilon": 1.0 / event.noise_multiplier, "rho": math.inf}
    if isinstance(event, dpa.GaussianDpEvent):
        return {"epsilon": math.inf, "rho": 1.0 / (2 * event.noise_multiplier ** 2)}
    if isinstance(event, dpa.SelfComposedDpEvent):
        c = _closed_form(event.event)
        return {k: v * event.count for k, v in c.items()}
    if isinstance(event, dpa.ComposedDpEvent):
        tot = {"epsilon": 0.0, "rho": 0.0}
        for e in event.events:
            c = _closed_form(e)
            tot = {k: tot[k] + c[k] for k in tot}
        return tot
    if isinstance(event, dpa.NonPrivateDpEvent):
        return {"epsilon": math.inf, "rho": math.inf}
    return {"epsilon": math.nan, "rho": math.nan}


def pld_epsilon(event, delta: float = PLD_DELTA) -> float:
    from dp_accounting.pld import pld_privacy_accountant as pld
    acc = pld.PLDAccountant(value_discretization_interval=PLD_INTERVAL)
    acc.compose(event)
    return float(acc.get_epsilon(delta))


def pld_delta(event, eps: float) -> float:
    from dp_accounting.pld import pld_privacy_accountant as pld
    acc = pld.PLDAccountant(value_discretization_interval=PLD_INTERVAL)
    acc.compose(event)
    return float(acc.get_delta(eps))


def dp_event_check(event, claim, *, add_remove_event=None, label="privatizer") -> Check:
    """whitebox.dp_event: the PLD of the declared DpEvent against the claim.

    DP / JDP / LDP claims: eps_PLD at the claimed delta (1e-12 for pure claims) must not exceed the
    claimed eps (slack 2e-3 for the PLD discretisation). zCDP claims: the PLD delta(eps) must not exceed the
    claim's profile delta(eps) at a few eps.
    """
    closed = _closed_form(event)
    measured = {"closed_form": closed}
    details = {"event": repr(event)}
    src = claim.source
    if claim.notion == "zCDP":
        grid = [0.25, 0.5, 1.0, 2.0, 4.0]
        rows = [{"epsilon": e, "delta_pld": pld_delta(event, e), "delta_claimed": claim.delta_at(e)} for e in grid]
        bad = [r for r in rows if r["delta_pld"] > r["delta_claimed"] * (1 + 1e-6) + 1e-12]
        measured.update(profile=rows, epsilon_lower_bound=None, confidence=1.0, samples=0)
        verdict = FAIL if bad else PASS
        reason = (f"declared event's delta(eps) exceeds the claimed rho={claim.rho:g}-zCDP profile at eps="
                  f"{bad[0]['epsilon']:g}" if bad else
                  f"declared event (rho = {closed['rho']:.4g}) stays within the claimed rho={claim.rho:g}-zCDP profile")
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
    from algorithms.privatizers.base import episode_increments
    from algorithms.privatizers.binary_mechanism import BinaryMechanism, TreeCounter
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
    from algorithms.privatizers.base import episode_increments
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
    eps = sum_f Delta_f / b against the claim (C1(b), C2, N1, N2)."""
    p = copy.deepcopy(template)
    p.start(1, H, S, A, K, np.random.default_rng(0), rewards=rewards)
    from algorithms.privatizers.binary_mechanism import tree_levels
    L = tree_levels(K)
    if kind == "central":
        b = p.node_scale()
        declared = p.tree("replacement").sensitivity
    else:
        b = p.noise_scale()
        declared = 2.0 * H
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
    from algorithms.privatizers.binary_mechanism import release_nodes
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
    from algorithms.privatizers.binary_mechanism import TreeCounter
    mech = mech_cls(TreeCounter(K, node_scale=b), (counters,), np.random.default_rng(seed))
    rel = np.empty((K, counters))
    for t in range(K):
        mech.step(np.zeros(counters))
        rel[t] = mech.release()
    return tree_covariance_z(rel, b)


def release_error_structure(template, *, runs=2_000, K=8, seed=0, rewards=True) -> dict:
    """The same covariance test on a central privatizer's own releases: the errors N^ - N (and R~ - R)
    of every counter and run are samples of the tree's noise process (data-independent, §3.1)."""
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
                        "source": source or "Chan, Shi & Song 2011; dp_ucbvi.md §3.1, §7.3"},
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
    claimed for every user sequence; the error of N^ does not depend on the data, §3.4)."""
    from audits._tabular_checks import CountAssumptionMonitor
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


# ============================================================ the registered audits
# what the online privatizer audits read from the command line (run_online / _online_template)
ONLINE_USES = ("epsilon", "privatizer", "samples", "seed", "alpha", *PARALLEL, "quick", "cache_dir")
ONLINE_SET = (
    SetOption("calibration", str, choices=("paper", "strict"), default="strict",
              help="noise scale: strict = the replacement neighbouring relation, paper = add/remove"),
    SetOption("width_mode", str, choices=("rigorous", "calibrated", "nominal"),
              help="the privatizer's noise-width bound (default: the privatizer's own)"),
    SetOption("beta", float, bounds=(0, 1), help="failure probability of the noise bound (default: the "
                                                 "privatizer's own, 0.1 for the built-ins)"),
    SetOption("games", bool, default=False, help="the games setting: 2 stream families, no rewards"),
)
OFFLINE_USES = ("epsilon", "samples", "seed", "alpha", *PARALLEL, "quick", "cache_dir")


def _offline_gaussian_options(o) -> None:
    """--set rho and --epsilon both choose the privatizer's rho: one of them; --delta only with --epsilon."""
    if o.epsilon is not None and "rho" in o.extra:
        raise InputError("offline_gaussian_privatizer: give --set rho or --epsilon (with --delta), not both")
    if o.delta is not None and o.epsilon is None:
        raise InputError("offline_gaussian_privatizer: --delta is used only with --epsilon "
                         "(the (eps, delta) that selects rho)")


def _samples(o, default=10**6, quick=2 * 10**5):
    return int(o.samples) if o.samples is not None else (quick if o.quick else default)


def _online_template(ctx, default: str):
    from algorithms.privatizers import load_privatizer
    o = ctx.options
    eps = o.epsilon if o.epsilon is not None else 1.0
    calibration = o.extra.get("calibration", "strict")
    spec = o.privatizer or default
    kw = {"epsilon": eps, "calibration": calibration}
    if "width_mode" in o.extra:
        kw["width_mode"] = o.extra["width_mode"]
    if "beta" in o.extra:
        kw["beta"] = float(o.extra["beta"])
    p = load_privatizer(spec, **kw)
    games = o.extra.get("games", False)          # a bool once parsed (ONLINE_SET); text from library callers
    games = games if isinstance(games, bool) else str(games).lower() in ("1", "true", "yes")
    ctx.config.update(privatizer=spec, epsilon=eps, calibration=calibration, neighbouring="replacement",
                      stream_families=2 if games else 3,
                      width_mode=kw.get("width_mode", getattr(p, "width_mode", None)))
    return p, eps, not games


def _blackbox(ctx, target, source, id="privacy.blackbox"):
    from dpcheck.blackbox import audit
    o = ctx.options
    res = audit(target, samples=_samples(o), alpha=o.alpha, seed=int(ctx.seed_sequence("blackbox").generate_state(1)[0]),
                workers=o.workers, backend=o.backend, scheduler=o.scheduler, progress=ctx.progress,
                cache_dir=o.cache_dir)
    return res.to_check(id=id, kind="privacy", claim_source=source)


def privatizer_notion(p, own_claim=None) -> str:
    """"JDP" or "LDP" for a privatizer: its declared claim's notion first (privacy declared as data: a
    CountPrivatizer subclass inherits ``notion = "JDP"`` even when its claim says LDP), then its ``notion``
    attribute, then the Local hook ``message``; JDP otherwise (the non-private baseline included)."""
    if own_claim is not None and getattr(own_claim, "notion", None) in ("JDP", "LDP"):
        return own_claim.notion
    return "LDP" if (getattr(p, "notion", "JDP") == "LDP" or callable(getattr(p, "message", None))) else "JDP"


def claim_for_families(p, rewards):
    """The privatizer's claim once it knows whether it runs with 2 or 3 families."""
    q = copy.deepcopy(p)
    q.start(1, 1, 2, 1, 1, np.random.default_rng(0), rewards=rewards)
    return q.claim


def run_online(ctx, kind: str) -> None:
    from algorithms.privatizers.base import CountPrivatizer
    p, eps, rewards = _online_template(ctx, kind)
    o = ctx.options
    claim = claim_for_families(p, rewards)
    src = claim.source
    is_builtin = isinstance(p, CountPrivatizer)
    ctx.progress(f"{kind} privatizer: black-box audit of the worst-case neighbours")
    if kind == "central":
        ctx.add(_blackbox(ctx, central_target(ClaimedTemplate(p, claim, rewards), rewards=rewards), src))
    elif hasattr(p, "message"):
        ctx.add(_blackbox(ctx, local_target(ClaimedTemplate(p, claim, rewards), rewards=rewards), src))
    else:
        # a user's LDP class need not expose its message; the planner-view audit below still bounds it
        ctx.add(Check(id="privacy.blackbox", kind="privacy", verdict=INCONCLUSIVE,
                      claim=dict(claim.to_dict(), statement=claim.describe(), source=src),
                      measured={"epsilon_lower_bound": None, "confidence": None, "samples": 0},
                      details={}, reason="no message(states, actions, rewards, rng) method: one user's "
                                         "message cannot be audited; see privacy.blackbox.planner_view"))
    if not is_builtin:
        # a user's class self-reports noisy_*; audit the counts its planner reads as well. For LDP the
        # stream of sums depends on user 1 only through her message, so this is a valid (weaker) bound
        ctx.progress(f"{kind} privatizer: black-box audit of the counts the planner reads")
        ctx.add(_blackbox(ctx, central_target(ClaimedTemplate(p, claim, rewards), rewards=rewards, view="planner"),
                          src, id="privacy.blackbox.planner_view"))
    # white box: the declared DpEvent (computed on a started copy: it depends on H, K)
    q = copy.deepcopy(p)
    H, S, A, K = 2, 3, 2, 6
    q.start(1, H, S, A, K, np.random.default_rng(0), rewards=rewards)
    ctx.add(dp_event_check(q.dp_event("replacement"), claim, add_remove_event=q.dp_event("add_remove"),
                           label=f"{type(q).__name__}(H={H}, S={S}, A={A}, K={K})"))
    if is_builtin:
        ctx.add(sensitivity_check(p, kind=kind, claim=claim, H=H, S=S, A=A, K=K, rewards=rewards,
                                  examples=100 if o.quick else 300))
        if kind == "central":
            ctx.add(tree_reuse_check(p, runs=1_000 if o.quick else 4_000, seed=o.seed, rewards=rewards, source=src))
    ctx.progress(f"{kind} privatizer: Assumption 3.1 over repetitions")
    beta = getattr(p, "beta", 0.1)
    # 0 failures in R runs certify a rate <= beta/3 only when R >~ 3.7 / (beta/3): 150 / 400 runs for beta = 0.1
    runs = 150 if o.quick else 400
    asrc = f"{UCBVI_SOURCE if rewards else NASH_SOURCE}, Assumption 3.1 via Lemma 5.4 / {src.split(', ')[-1]}"
    for c in assumption_checks(p, runs=runs, rewards=rewards, rng=ctx.rng("assumption"), beta=beta,
                               alpha=o.alpha, source=asrc):
        ctx.add(c)


class ClaimedTemplate:
    """A privatizer template whose claim is fixed (the 2- or 3-family one) before it is started."""

    def __init__(self, p, claim, rewards):
        self._p, self.claim, self.name = p, claim, getattr(p, "name", type(p).__name__)

    def __deepcopy__(self, memo):
        return copy.deepcopy(self._p, memo)


@register("central_privatizer", algorithm="Central Privatizer (binary tree mechanism)", notion="JDP",
          claim="epsilon-JDP (DP-UCBVI Lemma 5.1; DP-Nash-VI Lemma 5.1)",
          description="black-box stream audit, PLD of the declared noise, sensitivity search, tree "
                      "noise reuse, Assumption 3.1", privatizers=("central",), default_epsilon=1.0,
          uses=ONLINE_USES, options=ONLINE_SET)
def run_central(ctx) -> None:
    run_online(ctx, "central")


@register("local_privatizer", algorithm="Local Privatizer (Laplace randomiser)", notion="LDP",
          claim="epsilon-LDP (DP-UCBVI Lemma 5.6; DP-Nash-VI Lemma 5.4)",
          description="black-box audit of one user's message, PLD, sensitivity search, Assumption 3.1",
          privatizers=("local",), default_epsilon=1.0, uses=ONLINE_USES, options=ONLINE_SET)
def run_local(ctx) -> None:
    run_online(ctx, "local")


def _offline_checks(ctx, priv, gaussian: bool) -> None:
    o = ctx.options
    H = 1
    ctx.add(_blackbox(ctx, offline_target(priv, H=H, gaussian=gaussian), priv.claim.source))
    ctx.add(dp_event_check(priv.dp_event(H), priv.claim, label=f"{type(priv).__name__}(H={H})"))
    # sensitivity by brute force over all pairs of trajectories of a tiny model (T-1 (i))
    import itertools
    from algorithms.privatizers.offline import dataset_counts
    Hs, S, A = 2, 2, 2
    trajs = [(s, a) for s in itertools.product(range(S), repeat=Hs + 1) for a in itertools.product(range(A), repeat=Hs)]
    st = np.array([t[0] for t in trajs])[:, None, :]
    ac = np.array([t[1] for t in trajs])[:, None, :]
    pair, triple = dataset_counts(st, ac, S, A)
    P, T = pair.reshape(len(trajs), -1), triple.reshape(len(trajs), -1)
    norm = 2 if gaussian else 1
    dp_ = np.linalg.norm(P[:, None] - P[None], ord=norm, axis=-1) if norm == 2 else np.abs(P[:, None] - P[None]).sum(-1)
    dt_ = np.linalg.norm(T[:, None] - T[None], ord=norm, axis=-1) if norm == 2 else np.abs(T[:, None] - T[None]).sum(-1)
    if gaussian:
        declared = priv.sensitivity(Hs)
        worst = float(max(dp_.max(), dt_.max()))
        ok = worst <= declared + 1e-9 and abs(worst - declared) < 1e-9
        rho_real = (dp_.max() ** 2 + dt_.max() ** 2) / (2 * priv.sigma(Hs) ** 2)
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
    ctx.add(Check(id="whitebox.sensitivity", kind="whitebox", verdict=PASS if ok else FAIL,
                  claim={"statement": "one replaced trajectory moves each family by <= sqrt(2H) in l2 (Gaussian) / "
                                      "both families by <= 4H in l1 (Laplace)", "source": priv.claim.source},
                  measured=measured, details={"trajectories": len(trajs), "H": Hs, "S": S, "A": A},
                  reason=reason))
    # uniform noise bound (T-2), over R repetitions
    from dpcheck.checks import probability_check
    R = 200 if o.quick else 1000
    rng = ctx.rng("offline-noise")
    Hn, Sn, An = 3, 3, 2
    pair = np.zeros((R, Hn, Sn, An)) + 5
    triple = np.zeros((R, Hn, Sn, An, Sn)) + 5
    out = priv.privatize(pair, triple, rng)
    E = out.width
    err = np.maximum(np.abs(out.noisy_visits - pair).reshape(R, -1).max(1),
                     np.abs(out.noisy_transitions - triple).reshape(R, -1).max(1))
    ctx.add(probability_check(id="assumption.noise_bound", failures=int((err > E / 2).sum()), runs=R,
                              beta=priv.beta, alpha=o.alpha, what="|n' - n| <= E/2 for all counts",
                              claim={"statement": "w.p. >= 1 - delta, |n' - n| <= E/2 uniformly (Lemma C.2 / §2.8c)",
                                     "source": priv.claim.source}))
    bad_sum = np.abs(out.visits - out.transitions.sum(-1)) > 1e-9 * np.maximum(1, out.visits)
    bad_sum |= np.any(out.transitions < 0, axis=-1)
    ctx.add(invariant_check(id="assumption.sum_consistency", violations=int(bad_sum.sum()), total=int(bad_sum.size),
                            claim={"statement": "ntil(s,a) = sum_s' ntil(s,a,s'), ntil >= 0 (eq. 3-4)",
                                   "source": priv.claim.source}, what="sum consistency"))
    P = out.kernel
    bad = int((~(np.all(P >= 0, -1) & (np.abs(P.sum(-1) - 1) < 1e-9))).sum())
    ctx.add(invariant_check(id="assumption.valid_transition", violations=bad, total=int(P[..., 0].size),
                            claim={"statement": "P~ is a distribution (eq. 5, Remark 3.3)", "source": priv.claim.source},
                            what="valid P~"))


@register("offline_gaussian_privatizer", algorithm="DP-APVI Gaussian count privatizer", notion="zCDP",
          claim="rho-zCDP (offline DP-APVI, Lemma C.1)", description="black-box, PLD, brute-force sensitivity, "
          "noise bound", default_epsilon=None, uses=("delta", *OFFLINE_USES),
          options=(SetOption("rho", float, bounds=(0, None),
                             help="the zCDP budget (default 1; or chosen by --epsilon with --delta, default 1e-5)"),),
          validate=_offline_gaussian_options)
def run_offline_gaussian(ctx) -> None:
    from algorithms.privatizers.offline import OfflineGaussianPrivatizer
    o = ctx.options
    rho = float(o.extra.get("rho", 1.0))
    if o.epsilon is not None:        # --epsilon (with --delta) selects rho through the zCDP conversion
        priv = OfflineGaussianPrivatizer.from_approx_dp(o.epsilon, o.delta or 1e-5)
    else:
        priv = OfflineGaussianPrivatizer(rho=rho)
    ctx.config.update(privatizer="offline_gaussian", rho=priv.rho)
    _offline_checks(ctx, priv, gaussian=True)


@register("offline_laplace_privatizer", algorithm="DP-APVI Laplace count privatizer", notion="DP",
          claim="epsilon-DP (offline §2.8(c))", description="black-box, PLD, brute-force sensitivity, noise bound",
          default_epsilon=1.0, uses=OFFLINE_USES)
def run_offline_laplace(ctx) -> None:
    from algorithms.privatizers.offline import OfflineLaplacePrivatizer
    o = ctx.options
    priv = OfflineLaplacePrivatizer(epsilon=o.epsilon if o.epsilon is not None else 1.0)
    ctx.config.update(privatizer="offline_laplace", epsilon=priv.epsilon)
    _offline_checks(ctx, priv, gaussian=False)
