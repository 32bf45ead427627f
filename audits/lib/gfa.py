"""The checks of private RL with general function approximation (He & Zhou, arXiv 2605.07049;
He & Zhou 2026), one function per claim, for Algorithm 1 (``private_gfa``) and Algorithm 2
(``private_gfa_outcome``).

``audits/private_gfa.py`` is the registered audit (its claim table says which function checks which claim).
Every function takes the learner under audit as an OBJECT (a :class:`dpcheck.algorithms.gfa.PrivateGeneralMDP` /
:class:`dpcheck.algorithms.gfa.PrivateOutcomeRL` or a subclass -- a variant, a planted defect) and returns finished
:class:`dpcheck.checks.Check` objects:

* privacy: :func:`jdp_blackbox_check` (black box on the selected functions f^(k) and the actions sent to the
  other scripted users, Def 2.3), :func:`sensitivity_check` (hypothesis search of max_f |S_D(f) - S_D'(f)|
  over neighbouring datasets against the declared 8H / (H+1)^2, docs/derivations.md#noise-calibration), :func:`selection_check` (empirical
  selection frequencies of the mechanism against the closed form exp(beta S)/Z at the DECLARED temperature,
  chi-square), :func:`composition_check` (the M = ceil(K/B) updates at the temperature actually used,
  accounted exactly with dp_accounting's PLD, Section 3.3), :func:`score_dataset_check` (the scores the mechanism
  samples from are S_{D_[k]} on exactly the episodes before the batch start);
* assumptions: :func:`assumption_checks` (realizability, completeness, coverability computed exactly with
  its certificate, Appendix D's coverability facts, determinism for Algorithm 2);
* regret: :func:`regret_curves` + :func:`regret_checks` (increment exponents of the privacy term against
  K^(3/5) and of the non-private batched learner against sqrt(K), the eps scaling of the privacy cost,
  the output policy's sub-optimality = Regret / K, Theorems 3.1, 3.4).

User classes come as arrays: :func:`load_function_class` reads ``--set function_class=PATH.npz``.
"""
from __future__ import annotations

import copy
import math
from dataclasses import replace

import dp_accounting
import numpy as np

from dpcheck.accounting import pld_epsilon_replace_one
from dpcheck.audit import ExecutionOptions
from dpcheck.checks import Check, FAIL, INCONCLUSIVE, PASS, invariant_check, probability_check, qualify, soften
from dpcheck.errors import InputError
from dpcheck.parallel import cached_call

SOURCE = "He & Zhou, Towards Differentially Private RL with General Function Approximation (arXiv 2605.07049)"
THEOREM = {1: "Theorem 3.1 (Algorithm 1)", 2: "Theorem 3.4 (Algorithm 2)"}
# sub-chunk of independent runs inside one black-box chunk: keeps the (runs, N) score arrays and the
# (runs, H, S) greedy policies of the Appendix D class (S = 1025) in tens of MB
_RUN_CHUNK = 1024


# ----------------------------------------------------------------------------- user classes as data
NPZ_KEYS = ("values", "P", "r", "init")


def load_function_class(path: str, algorithm: int):
    """A user's class (and optionally its MDP) from an .npz file -> (FunctionClass, TabularMDP | None).

    ``values`` (N, H, S, A) in [0, 1]: the N entries f = (f_1..f_H) (duplicates allowed). Optional
    ``P`` (H, S, A, S), ``r`` (H, S, A), ``init`` (S,) (a point mass for Algorithm 1): the known MDP the
    assumptions and regret are computed on; without them the class must fit the default instance. Every
    problem is an InputError with one line (the CLI's exit 2).
    """
    import os
    import zipfile
    from dpcheck.algorithms.gfa import FunctionClass
    if not os.path.isfile(path):
        raise InputError(f"--set function_class={path}: no such file")
    try:
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise InputError(f"--set function_class={path}: not a readable .npz file ({type(e).__name__}: {e})") from None
    if "values" not in data:
        keys = ", ".join(sorted(data)) or "none"
        raise InputError(f"--set function_class={path}: the file needs an array 'values' of shape (N, H, S, A) "
                         f"(found: {keys})")
    unknown = sorted(set(data) - set(NPZ_KEYS))
    if unknown:
        raise InputError(f"--set function_class={path}: unknown arrays {unknown}; allowed: {list(NPZ_KEYS)}")
    values = data["values"]
    if values.dtype.kind not in "biuf":
        raise InputError(f"--set function_class={path}: 'values' must be numeric, got dtype {values.dtype}")
    try:
        fc = FunctionClass.from_values(values, name=os.path.basename(path))
    except InputError as e:
        raise InputError(f"--set function_class={path}: {e}") from None
    mdp = None
    given = [k for k in ("P", "r", "init") if k in data]
    if given:
        if len(given) != 3:
            raise InputError(f"--set function_class={path}: an MDP needs all of 'P', 'r' and 'init' "
                             f"(found only {given})")
        from dpcheck.algorithms.envs.tabular import TabularMDP
        try:
            mdp = TabularMDP(data["P"], data["r"], data["init"], name=os.path.basename(path))
            fc.check_shape(mdp.H, mdp.S, mdp.A, "the MDP in the file")
        except InputError as e:
            raise InputError(f"--set function_class={path}: {e}") from None
        if algorithm == 1 and np.count_nonzero(mdp.init) != 1:
            raise InputError(f"--set function_class={path}: Algorithm 1 needs a fixed initial state (init must be a "
                             "point mass, Section 2.1)")
    return fc, mdp


# Measured on the reference machine (random-valued classes on GF-3 and duplicated GF-3 entries, docs/private_gfa.md
# "Size limits"): one episode of the learner costs ~5e-5 s + 2.5e-9 s N^2 + 7e-9 s N L (N entries, L = distinct
# step functions summed over h: the exponential mechanism scores every entry at every update, and the batch
# statistics grow with the distinct layers); the class arrays are held ~8 times.
SEC_EPISODE, SEC_N2, SEC_NL, CLASS_COPIES = 5e-5, 2.5e-9, 7e-9, 8


def audit_episodes(z: dict, K: int) -> int:
    """Episodes one audit runs: the regret sweeps (private and non-private, every K of the grid), the eps sweep,
    the output-policy check and the audited configuration's own runs (z: the audit's sizes table)."""
    return (sum(z["K_grid"]) * (z["runs"] + z["runs_np"]) + len(z["eps_grid"]) * z["K_eps"] * z["runs"]
            + z["K_eps"] * z["runs"] + 8 * K)


def class_cost(sizes: dict, episodes: int) -> tuple[float, float]:
    N, L, H, S, A = (float(sizes[k]) for k in ("N", "L", "H", "S", "A"))
    mem = CLASS_COPIES * 8 * N * H * S * A
    sec = episodes * (SEC_EPISODE + SEC_N2 * N * N + SEC_NL * N * L)
    return mem, sec


def check_class_size(path: str, inst, z: dict, K: int) -> None:
    """Exit 2 (InputError) before any work when the audit of a user's class this large would not fit the memory or
    time limit (dpcheck.limits.check_input_cost), naming the largest number of entries N that fits."""
    from dpcheck.limits import check_input_cost
    fc, mdp = inst.fclass, inst.mdp
    ep = audit_episodes(z, K)
    sizes = {"N": fc.N, "L": int(sum(fc.sizes)), "H": mdp.H, "S": mdp.S, "A": mdp.A}
    check_input_cost(f"--set function_class={path}", sizes,
                     lambda s: class_cost({**s, "L": min(s["L"], s["N"] * s["H"])}, ep), vary=("N",),
                     unit=f"{ep} learner episodes, each scoring every entry")


def default_instance(algorithm: int):
    """GF-3 for Algorithm 1; the Appendix D "easy" environment for Algorithm 2."""
    from dpcheck.algorithms.gfa import appendix_d, gf3
    return gf3() if algorithm == 1 else appendix_d("easy")


def instance_with_class(algorithm: int, fc=None, mdp=None):
    """The GFAInstance audited: the default one, with the user's class (and MDP) if given."""
    from dpcheck.algorithms.gfa import GFAInstance
    inst = default_instance(algorithm)
    if fc is None:
        return inst
    if mdp is None:
        mdp = inst.mdp
        try:
            fc.check_shape(mdp.H, mdp.S, mdp.A, f"the default instance {inst.name} (pass P, r, init in the .npz "
                                                "for another MDP)")
        except InputError as e:
            raise InputError(f"--set function_class: {e}") from None
    s1 = int(np.flatnonzero(mdp.init)[0]) if algorithm == 1 else None
    return GFAInstance(mdp=mdp, fclass=fc, name=f"{mdp.name} / {fc.name}", target=-1, s1=s1)


def make_agent(algorithm: int, fc, *, epsilon: float, delta: float, B: int, eta: float = 1.0,
               sensitivity="paper", eps0_rule: str = "exact", s1=None, agent_class=None, mechanism=None):
    """The learner under audit (Algorithm 1 or 2; ``agent_class`` a subclass for variants / defects;
    ``mechanism`` its selection mechanism: None = the exponential mechanism, or a plug-in spec / object)."""
    from dpcheck.algorithms.gfa import PrivateGeneralMDP, PrivateOutcomeRL
    cls = agent_class or (PrivateGeneralMDP if algorithm == 1 else PrivateOutcomeRL)
    kw = dict(epsilon=epsilon, delta=delta, B=B, eta=eta, sensitivity=sensitivity, eps0_rule=eps0_rule)
    if mechanism is not None:
        kw["mechanism"] = mechanism
    if algorithm == 1:
        kw["s1"] = s1
    return cls(fc, **kw)


def public_init(agent, mdp):
    """s_1 (Algorithm 1) or rho (Algorithm 2) of a known MDP: what the score's optimism term uses."""
    if agent.algorithm == 1:
        return int(np.flatnonzero(mdp.init)[0])
    return np.asarray(mdp.init, dtype=np.float64)


def describe(agent) -> dict:
    cfg = dict(agent.config)
    cfg["class_name"] = type(agent).__name__
    return cfg


# ----------------------------------------------------------------------------- privacy: black box
class UsersWithInit:
    """Scripted users plus the public initial distribution rho Algorithm 2 needs (Section 2.1: rho is known).

    Delegates the per-episode protocol (``rollout(policy, rng, episode=k)``) to ``users``."""

    per_episode = True
    mdp = None

    def __init__(self, users, init):
        self.users = users
        self.init = np.asarray(init, dtype=np.float64)
        self.H, self.S, self.A, self.K = users.H, users.S, users.A, users.K

    def rollout(self, policy, rng, runs=None, *, episode=0):
        return self.users.rollout(policy, rng, runs, episode=episode)


def jdp_users(agent, mdp, K: int = 4):
    """Neighbouring scripted user sequences (U, U') that differ in user 1 only (Def 2.3, replacement).

    Every user reports the fixed trajectory that starts at the public s_1 (the first state in the support of
    rho for Algorithm 2) and stays there with reward 0; in U' user 1 instead reports reward 1 at the last step
    (outcome 1) after moving to the last state -- a change of her data that moves the Bellman error / outcome
    residual of every entry. Fixed trajectories make the learner the only source of randomness.
    """
    from dpcheck.algorithms.envs.users import FixedTrajectoryUsers
    H, S, A = mdp.H, mdp.S, mdp.A
    s0 = int(np.flatnonzero(mdp.init)[0])
    st = np.full((K, H + 1), s0, dtype=np.int64)
    rw = np.zeros((K, H))
    st2, rw2 = st.copy(), rw.copy()
    st2[0, 1:] = S - 1
    rw2[0, H - 1] = 1.0
    U, U2 = FixedTrajectoryUsers(H, S, A, st, rw), FixedTrajectoryUsers(H, S, A, st2, rw2)
    if agent.algorithm == 2:
        return UsersWithInit(U, mdp.init), UsersWithInit(U2, mdp.init)
    return U, U2


class SelectionsAndActions:
    """mechanism(users, rng, size): what the adversary sees in ``size`` independent runs -- the functions
    f^(k) drawn at every update after the first (the first sees no data) and the actions sent to users
    2..K (M_{-1}(U) of Def 2.3; the output policy Unif(pi_1..pi_K) is a function of the f^(k))."""

    def __init__(self, agent):
        self.agent = agent

    def __call__(self, users, rng, size):
        out = []
        for lo in range(0, int(size), _RUN_CHUNK):
            n = min(_RUN_CHUNK, int(size) - lo)
            res = self.agent.run(users, users.K, rng, runs=n, record=True)
            out.append(np.concatenate([res.selected[:, 1:], res.actions[:, 1:, :].reshape(n, -1)], axis=1))
        return np.concatenate(out).astype(np.int64)


def jdp_blackbox_check(agent, mdp, exe: ExecutionOptions = ExecutionOptions(), *, K: int = 4,
                       samples: int = 100_000) -> Check:
    """(eps, delta)-JDP of the selected functions and the actions to the other users, black box
    (Def 2.3; G5 / G6). The learner runs K scripted users; its batch size is its own (B = 1 exposes the
    most updates: the audit passes a B = 1 copy). ``exe``: the audit's execution options, whole."""
    from dpcheck import AuditTarget
    U, U2 = jdp_users(agent, mdp, K)
    claim = agent.claim
    target = AuditTarget(name=f"private_gfa.alg{agent.algorithm}.jdp", mechanism=SelectionsAndActions(agent),
                         pairs=[(U, U2)], claim=claim, output="discrete")
    res = exe.audit(target, samples)
    check = res.to_check(id="privacy.jdp.blackbox", claim_source=claim.source)
    p = agent.privacy(K)
    det = dict(check.details)
    det.update(agent=describe(agent), users={"K": K, "H": mdp.H, "S": mdp.S, "A": mdp.A,
                                             "pair": "user 1: stays at s_1 with reward 0 vs moves to the last state "
                                                     "with reward 1 at step H"},
               adversary=f"f^(k) of updates 2..M (M = {p.M}) and the actions sent to users 2..K (one sample = one "
                         "whole run)", declaration=p.to_dict())
    return replace(check, details=det)


# ----------------------------------------------------------------------------- privacy: white box
def _dataset_strategy(H: int, S: int, A: int, max_n: int):
    """Hypothesis strategy: (states (n, H+1), actions (n, H), rewards (n, H)) with sum_h r_h <= 1 (the reward
    normalisation every sensitivity bound needs): one reward in {0, 1/2, 1} at one step."""
    from hypothesis import strategies as st

    def traj():
        return st.tuples(st.lists(st.integers(0, S - 1), min_size=H + 1, max_size=H + 1),
                         st.lists(st.integers(0, A - 1), min_size=H, max_size=H),
                         st.integers(0, H - 1), st.sampled_from([0.0, 0.5, 1.0]))

    return st.lists(traj(), min_size=0, max_size=max_n), traj()


def _arrays(trajs, H):
    n = len(trajs)
    s = np.array([t[0] for t in trajs], dtype=np.int64).reshape(n, H + 1)
    a = np.array([t[1] for t in trajs], dtype=np.int64).reshape(n, H)
    r = np.zeros((n, H))
    for i, t in enumerate(trajs):
        r[i, t[2]] = t[3]
    return s, a, r


def extreme_class(H: int, N: int = 24, S: int = 2, A: int = 2, seed: int = 0):
    """A random class with values in {0, 1} (the extremes, Theorem 3.1), N entries on S x A."""
    from dpcheck.algorithms.gfa import FunctionClass
    rng = np.random.default_rng(seed)
    vals = rng.integers(0, 2, size=(N, H, S, A)).astype(float)
    return FunctionClass.from_values(vals, name=f"random {{0,1}} class (N={N}, H={H}, S={S}, A={A})")


def sensitivity_search(agent, init, *, examples: int = 200, max_n: int = 3, seed: int = 0) -> dict:
    """max over neighbouring datasets D ~ D' (one trajectory replaced; hypothesis, guided to large changes
    with ``target``) of max_f |S_D(f) - S_D'(f)|, through the learner's own scoring (``dataset_scores``)."""
    from hypothesis import HealthCheck, given, settings, strategies as st, target as hyp_target
    fc = agent.fclass
    H, S, A = fc.H, fc.S, fc.A
    data, traj = _dataset_strategy(H, S, A, max_n)
    best = {"d": 0.0, "pair": None}

    @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(data, traj, traj, st.integers(0, max_n))
    def search(rest, x, y, pos):
        pos = min(pos, len(rest))
        dx = rest[:pos] + [x] + rest[pos:]
        dy = rest[:pos] + [y] + rest[pos:]
        sx = agent.dataset_scores(*_arrays(dx, H), init)
        sy = agent.dataset_scores(*_arrays(dy, H), init)
        d = float(np.max(np.abs(sx - sy)))
        hyp_target(d)
        if d > best["d"]:
            best["d"], best["pair"] = d, {"D": dx, "D_prime": dy}

    search()
    return {"max_change": best["d"], "examples": examples, "worst_pair": best["pair"],
            "class": repr(fc), "H": H, "S": S, "A": A}


def sensitivity_check(agent, init, *, examples: int = 200, seed: int = 0) -> Check:
    """whitebox.sensitivity (Theorem 3.1; Theorem 3.4): the searched max_f |S_D(f) - S_D'(f)| on the audited class and on a
    random {0, 1} class with the same H must not exceed the declared Delta_S (8H / (H+1)^2); one
    counterexample fails. The realised maximum and its ratio to the declared value are reported."""
    declared = float(agent.sensitivity)
    res = [sensitivity_search(agent, init, examples=examples, seed=seed)]
    ext = copy.copy(agent)
    ext.fclass = extreme_class(agent.fclass.H, seed=seed)
    ext_init = 0 if agent.algorithm == 1 else np.full(ext.fclass.S, 1.0 / ext.fclass.S)
    res.append(sensitivity_search(ext, ext_init, examples=examples, seed=seed))
    worst = max(r["max_change"] for r in res)
    H = agent.fclass.H
    formula = "8H" if agent.algorithm == 1 else {"paper": "(H+1)^2", "telescoping": "H^2", "binary": "1"}.get(
        agent.sensitivity_kind, "given")
    claim = {"statement": f"|S_D(f) - S_D'(f)| <= Delta_S = {formula} = {declared:g} for neighbouring D, D' "
                          "(one trajectory replaced) and every f",
             "source": f"{SOURCE}, Section 3.3, docs/derivations.md#noise-calibration / {THEOREM[agent.algorithm]}"}
    measured = {"max_change": worst, "declared_sensitivity": declared, "ratio": worst / declared,
                "per_class": [{"class": r["class"], "max_change": r["max_change"]} for r in res],
                "examples": 2 * examples, "confidence": 1.0, "samples": 2 * examples}
    if worst > declared * (1 + 1e-9) + 1e-9:
        verdict = FAIL
        reason = (f"a neighbouring pair moves the score by {worst:.4g} > declared Delta_S = {declared:g} "
                  f"({formula}, H = {H})")
    else:
        verdict = PASS
        reason = (f"max score change {worst:.4g} over {2 * examples} searched neighbouring pairs <= declared "
                  f"Delta_S = {declared:g} ({formula}; {worst / declared:.0%} of it)")
    return Check(id="whitebox.sensitivity", kind="whitebox", verdict=verdict, claim=claim, measured=measured,
                 details={"agent": describe(agent), "searches": res,
                          "method": "hypothesis search (targeted at the change) over datasets of <= 4 trajectories "
                                    "with sum_h r_h <= 1, scored by the learner's own dataset_scores"},
                 reason=reason)


def _chisq_power(p0, p1, n, df, alpha):
    """Power of the chi-square goodness-of-fit test of p0 at level alpha against the alternative p1 with n
    draws (noncentral chi-square, lambda = n sum (p1 - p0)^2 / p0)."""
    from scipy.stats import chi2, ncx2
    lam = float(n * np.sum((p1 - p0) ** 2 / p0))
    return float(ncx2.sf(chi2.isf(alpha, df), df, lam))


def selection_check(agent, K: int, *, draws: int = 200_000, alpha: float = 0.05, seed: int = 0,
                    spread: float = 4.0, chunk: int = 8192) -> Check:
    """privacy.em_selection: the mechanism's empirical selection frequencies against the closed form
    Pr[f] = exp(beta S(f)) / sum_g exp(beta S(g)) at the DECLARED beta_EM = eps0 / (2 Delta_S) (Section 2.2).

    Scores are designed so that beta S spans [0, ``spread``] over the class (the declared law is far from
    uniform and from the argmax); ``draws`` selections go through the learner's own ``select`` (the
    temperature it really uses). Chi-square goodness of fit: FAIL iff p < alpha / 100 (a CI gate must not
    false-alarm in one run of twenty; at 200k draws a temperature off by a factor 2, or argmax sampling, still
    gives p far below that), INCONCLUSIVE for alpha / 100 <= p < alpha, else PASS. The power (at the FAIL
    level) against a temperature off by 25% and by a factor 2 is reported; a pass with power < 0.9 at 25% is
    marked uninformative. None when the learner's mechanism declares no closed form (a plug-in without
    ``log_probabilities``: privacy.selection.blackbox is its evidence)."""
    from scipy.stats import chi2
    N = agent.fclass.N
    p = agent.privacy(K)
    claim = {"statement": "f^(k) is drawn with Pr[f] = exp(beta_EM S(f)) / sum_g exp(beta_EM S(g)), "
                          "beta_EM = eps0 / (2 Delta_S)",
             "source": f"{SOURCE}, Algorithm {agent.algorithm} line 6, Section 2.2 (McSherry & Talwar 2007)"}
    if not p.private:
        return Check(id="privacy.em_selection", kind="privacy", verdict=INCONCLUSIVE, claim=claim,
                     measured={"confidence": 1 - alpha}, reason="non-private learner (argmax): no exponential "
                                                                "mechanism to test")
    if agent.declared_log_probabilities(np.zeros((1, N)), K) is None:
        return None            # the mechanism declares no closed form: privacy.selection.blackbox audits it
    beta = p.beta_em
    scores = np.linspace(0.0, spread / beta, N)
    rng = np.random.default_rng(seed)
    counts = np.zeros(N)
    done = 0
    while done < draws:
        n = min(chunk, draws - done)
        idx = agent.select(np.broadcast_to(scores, (n, N)), K, rng)
        counts += np.bincount(np.asarray(idx, dtype=np.int64), minlength=N)[:N]
        done += n
    p0 = np.exp(agent.declared_log_probabilities(scores[None, :], K)[0])
    expected = draws * p0
    stat = float(np.sum((counts - expected) ** 2 / expected))
    df = N - 1
    pval = float(chi2.sf(stat, df))
    fail_level = alpha / 100
    z = scores - scores.max()
    alt = {}
    for f in (1.25, 2.0):
        q = np.exp(f * beta * z)
        alt[f"beta_x{f:g}"] = _chisq_power(p0, q / q.sum(), draws, df, fail_level)
    power = alt["beta_x1.25"]
    emp = counts / draws
    measured = {"chi_square": stat, "df": df, "p_value": pval, "draws": draws,
                "confidence": 1 - fail_level if pval < fail_level else 1 - alpha, "fail_level": fail_level,
                "beta_em_declared": beta, "beta_em_used": agent.temperature(K),
                "max_abs_frequency_error": float(np.max(np.abs(emp - p0))),
                "power_against": alt, "samples": draws}
    if pval < fail_level:
        verdict = FAIL
        reason = (f"selection frequencies differ from exp(beta S)/Z at beta = {beta:.4g}: chi-square {stat:.4g} "
                  f"on {df} df, p = {pval:.3g} < alpha / 100 = {fail_level:g}")
    elif pval < alpha:
        verdict = INCONCLUSIVE
        reason = (f"selection frequencies somewhat off exp(beta S)/Z at beta = {beta:.4g}: chi-square {stat:.4g} on "
                  f"{df} df, p = {pval:.3g} (< alpha = {alpha:g} but not below alpha / 100 = {fail_level:g}): "
                  "rerun with more draws or another seed")
    else:
        verdict = PASS
        reason = (f"selection frequencies match exp(beta S)/Z at beta = {beta:.4g} (chi-square {stat:.4g} on {df} "
                  f"df, p = {pval:.3g}); power {power:.2f} against a temperature off by 25%")
    check = Check(id="privacy.em_selection", kind="privacy", verdict=verdict, claim=claim, measured=measured,
                  details={"agent": describe(agent), "K": K, "declaration": p.to_dict(),
                           "scores": f"linspace(0, {spread:g} / beta_EM, N = {N})",
                           "plots": [{"title": "selection frequency vs closed form", "xlabel": "entry (score rank)",
                                      "ylabel": "probability", "kind": "line",
                                      "series": [{"label": "declared", "x": list(range(N)), "y": p0.tolist()},
                                                 {"label": "empirical", "x": list(range(N)), "y": emp.tolist()}]}]},
                  reason=reason)
    if verdict == PASS and power < 0.9:
        check = qualify(check, "uninformative", f"power {power:.2f} < 0.9 against a 25% temperature error "
                                                f"with {draws} draws")
    return check


def observed_updates(agent, mdp, K: int, seed: int = 0) -> tuple[int, float]:
    """(number of exponential-mechanism draws, largest temperature passed to the sampler) in one run of K
    episodes, read where the scores enter the selection mechanism (the learner's ``mechanism``, wrapped in a
    :class:`RecordingMechanism`; the temperature is eps0 / (2 Delta_S) of the eps0 it is run at); (0, nan) if
    the sampler bypasses it (backward messages)."""
    from dpcheck.algorithms.gfa.selection import RecordingMechanism
    a = copy.copy(agent)
    a.mechanism = rec = RecordingMechanism(agent.mechanism)
    a.run(mdp, int(K), np.random.default_rng(seed), runs=1, record=False)
    betas = [eps / (2.0 * sens) for _, eps, sens in rec.calls]
    return len(rec.calls), (max(betas) if betas else float("nan"))


def composition_check(agent, K_grid, *, claim=None, mdp=None) -> Check:
    """whitebox.composition (Section 3.3; Theorem 3.1; Theorem 3.4): for every K of ``K_grid``, the M = ceil(K/B) updates at the
    temperature the learner REALLY uses (eps0_used = 2 Delta_S beta_used: the pure-DP level of an
    exponential mechanism with that temperature on a score of sensitivity Delta_S), composed and accounted
    exactly -- dp_accounting PLD of M copies of the selection mechanism's declared DpEvent at eps0_used (for
    the exponential mechanism, and by default for a plug-in, binary randomized response at eps0_used, which
    has exactly the (eps0, 0)-DP privacy profile and dominates every eps0-DP mechanism: Kairouz, Oh &
    Viswanath 2015) -- must give eps <= the claimed eps at the claimed delta. The declared advanced-composition value
    (Lemma E.2) is reported next to it.

    With ``mdp``, one run of K episodes per grid point counts the draws the sampler really makes and reads
    the temperatures it is really given; the accounting uses the larger of declared and observed (a learner
    that updates more often, or hotter, than it declares fails)."""
    from dpcheck.accounting import advanced_composition, pld_epsilon_replace_one, pure_dp_event
    claim = claim or agent.claim
    rows = []
    for K in K_grid:
        p = agent.privacy(int(K))
        beta_used = float(agent.temperature(int(K)))
        M = max(p.M, -(-int(K) // agent.B))
        seen = None
        if mdp is not None:
            n, b = observed_updates(agent, mdp, int(K))
            seen = {"draws": n, "max_beta": b}
            M = max(M, n)
            if not math.isnan(b):
                beta_used = max(beta_used, b)
        eps0_used = 2.0 * p.sensitivity * beta_used
        # the mechanism's own declared event at eps0_used (the exponential mechanism's: binary randomized
        # response at eps0, exactly the (eps0, 0) profile)
        event = agent.mechanism.dp_event(eps0_used, p.sensitivity)
        if not isinstance(event, dp_accounting.DpEvent):
            from dpcheck.errors import MechanismError
            raise MechanismError(f"selection mechanism {agent.mechanism!r}: dp_event() returned "
                                 f"{type(event).__name__}, not a dp_accounting DpEvent")
        eps_pld = pld_epsilon_replace_one(event, M, claim.delta)
        from dpcheck.algorithms.gfa import advanced_composition
        rows.append({"K": int(K), "B": agent.B, "M": M, "eps0_declared": p.eps0, "eps0_used": eps0_used,
                     "beta_declared": p.beta_em, "beta_used": beta_used,
                     "advanced_composition": advanced_composition(eps0_used, M, claim.delta),
                     "declared_composed_epsilon": p.composed_epsilon, "epsilon_pld": eps_pld, "observed": seen})
    worst = max(rows, key=lambda r: r["epsilon_pld"])
    slack = 2e-3
    ok = worst["epsilon_pld"] <= claim.epsilon * (1 + slack) + slack
    st = {"statement": f"M = ceil(K/B) exponential mechanisms, each eps0-DP with eps0 = 2 Delta_S beta_EM, "
                       f"compose to ({claim.epsilon:g}, {claim.delta:g})-DP (exact PLD accountant)",
          "source": f"{SOURCE}, Section 3.3, docs/derivations.md#noise-calibration, Lemma E.2, {THEOREM[agent.algorithm]} (Theorem 3.1; Theorem 3.4)"}
    measured = {"epsilon_pld": worst["epsilon_pld"], "at_delta": claim.delta, "claimed_epsilon": claim.epsilon,
                "worst": worst, "epsilon_lower_bound": worst["epsilon_pld"], "confidence": 1.0, "samples": 0}
    if ok:
        reason = (f"worst over K in {list(map(int, K_grid))}: {worst['M']} updates at eps0 = {worst['eps0_used']:.4g} "
                  f"give eps = {worst['epsilon_pld']:.4g} <= {claim.epsilon:g} at delta = {claim.delta:g} (PLD)")
    else:
        reason = (f"K = {worst['K']}: {worst['M']} updates at eps0 = {worst['eps0_used']:.4g} give eps = "
                  f"{worst['epsilon_pld']:.4g} > claimed {claim.epsilon:g} at delta = {claim.delta:g} (PLD)")
    return Check(id="whitebox.composition", kind="whitebox", verdict=PASS if ok else FAIL, claim=st,
                 measured=measured, details={"agent": describe(agent), "grid": rows,
                                             "event": "Composed([mechanism.dp_event(eps0_used)] * M) (explicit copies: "
                                                      "dp_accounting 0.6.0 ignores the "
                                                      "count of a SelfComposed randomized response)"},
                 reason=reason)


def _literal_scores(agent, states, actions, rewards, init):
    from dpcheck.algorithms.gfa import bellman_error_score, outcome_score
    fc = agent.fclass
    if agent.algorithm == 1:
        return bellman_error_score(fc, states, actions, rewards, eta=agent.eta, s1=int(init))
    return outcome_score(fc, states, actions, rewards.sum(axis=-1), eta=agent.eta, rho=init)


def score_dataset_check(agent, mdp, *, K: int = 24, runs: int = 4, seed: int = 0) -> Check:
    """whitebox.score_dataset (Algorithm 1; docs/derivations.md#noise-calibration; Algorithms 1-2): the scores the mechanism samples from at the update of episode
    k = iB + 1 equal S_{D_[k]}(f) recomputed literally (the reference loss functions, sums over
    trajectories) on exactly the episodes 1..iB the run recorded. The scores are captured where they
    enter the selection mechanism (the learner's ``mechanism``, wrapped in a :class:`RecordingMechanism`), so
    a learner that scores stale, partial or future data fails; one mismatch fails."""
    from dpcheck.algorithms.gfa.selection import RecordingMechanism
    a = copy.copy(agent)
    a.mechanism = rec = RecordingMechanism(agent.mechanism)
    init = public_init(agent, mdp)
    res = a.run(mdp, K, np.random.default_rng(seed), runs=runs, record=True)
    seen = [c[0] for c in rec.calls]
    claim = {"statement": "the score at the update of episode iB + 1 is S_{D_[k]} on the episodes 1..iB "
                          "(sums over trajectories)",
             "source": f"{SOURCE}, Algorithm {agent.algorithm} lines 4-6, Algorithms 1-2 (docs/derivations.md#noise-calibration)"}
    if len(seen) != res.M:
        return Check(id="whitebox.score_dataset", kind="whitebox", verdict=INCONCLUSIVE, claim=claim,
                     measured={"updates": res.M, "scores_seen": len(seen), "confidence": 1.0},
                     details={"agent": describe(agent)},
                     reason=f"the selection mechanism saw {len(seen)} score vectors for {res.M} updates (a sampler "
                            "that bypasses it, e.g. backward messages): the data flow cannot be read")
    worst, bad, total = 0.0, 0, 0
    first_bad = None
    for i, sc in enumerate(seen):
        k0 = i * res.B
        for r in range(runs):
            want = _literal_scores(agent, res.states[r, :k0], res.actions[r, :k0], res.rewards[r, :k0]
                                   if agent.algorithm == 1 else _outcome_rewards(res, r, k0), init)
            err = float(np.max(np.abs(sc[r] - want)))
            tol = 1e-8 * (1.0 + float(np.max(np.abs(want))))
            total += 1
            worst = max(worst, err)
            if err > tol:
                bad += 1
                first_bad = first_bad or {"update": i, "episode": k0 + 1, "run": r, "max_error": err}
    c = invariant_check(id="whitebox.score_dataset", kind="whitebox", violations=bad, total=total, claim=claim,
                        details={"agent": describe(agent), "K": K, "B": res.B, "runs": runs,
                                 "first_mismatch": first_bad,
                                 "max_abs_error": worst}, what="scores on D_[k] (episodes before the batch start)")
    return replace(c, measured={**c.measured, "max_abs_error": worst})


def _outcome_rewards(res, r, k0):
    """Algorithm 2 records outcomes (runs, K); the literal reference takes rewards (n, H): the outcome at the
    last step (only the sum enters)."""
    H = res.actions.shape[-1]
    out = np.zeros((k0, H))
    out[:, -1] = res.rewards[r, :k0]
    return out


# ----------------------------------------------------------------------------- assumptions
def assumption_checks(algorithm: int, inst, *, reference: dict | None = None) -> list[Check]:
    """Realizability (Q* in F), completeness (Algorithm 1, Assumption 2.1), coverability computed exactly
    (Definition 2.2) with its certificate, and for Algorithm 2 determinism (Def 3.3) and Appendix D's coverability facts.

    ``reference``: known figures of a built-in instance (Appendix D) the computed ones must match."""
    from dpcheck.algorithms.gfa import (completeness, coverability, next_state_table, per_start_coverability,
                                realizability)
    mdp, fc = inst.mdp, inst.fclass
    out = []
    base = {"instance": inst.name, "class": repr(fc)}
    rz = realizability(mdp, fc)
    out.append(invariant_check(
        id="assumption.realizability", violations=0 if rz.holds else 1, total=1,
        claim={"statement": "Q* in F (some entry equals Q* within 1e-9 in sup norm)",
               "source": f"{SOURCE}, Assumption 2.1 / {THEOREM[algorithm]}"},
        details={**base, "entries": list(rz.entries), "distance": rz.distance},
        what=f"realizability (min ||f - Q*||_inf = {rz.distance:.3g})"))
    if algorithm == 1:
        cp = completeness(mdp, fc)
        out.append(invariant_check(
            id="assumption.completeness", violations=len(cp.violations), total=sum(fc.sizes),
            claim={"statement": "T_h F_{h+1} subseteq F_h for every h (Bellman completeness)",
                   "source": f"{SOURCE}, Assumption 2.1 (Theorem 3.1)"},
            details={**base, "per_step": list(cp.per_step), "worst_distance": cp.worst,
                     "violations": [list(v) for v in cp.violations[:20]]},
            what=f"completeness (worst distance of a backup to F_h {cp.worst:.3g})"))
    cov = coverability(mdp, fc)
    # certificate: with the optimal mu_h (pointwise max, normalised) the ratio max_{h,pi,(s,a)} d/mu attains C_cov
    from dpcheck.algorithms.gfa import occupancies
    pols = fc.greedy_policies()
    uniq = np.unique(pols.reshape(pols.shape[0], -1), axis=0).reshape((-1,) + pols.shape[1:])
    d = occupancies(mdp, uniq)                                             # (P, H, S, A)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(d > 0, d / cov.mu[None], 0.0)
    attained = float(np.max(ratio))
    bad = int(abs(attained - cov.value) > 1e-9 * max(1.0, cov.value)) + int(np.any((d > 0) & (cov.mu[None] == 0)))
    ref = (reference or {}).get("C_cov")
    if ref is not None:
        bad += int(abs(cov.value - ref) > 1e-6 * max(1.0, ref))
    out_det = {**base, "C_cov": cov.value, "per_step": cov.per_step.tolist(), "certificate_ratio": attained,
               "distinct_greedy_policies": int(uniq.shape[0]), "reference_C_cov": ref}
    if algorithm == 2:
        pc = per_start_coverability(mdp, fc)
        Hh = mdp.H
        g14 = 0
        if pc.reachable is not None:
            N = pc.reachable.sum(axis=1)
            g14 += int(np.sum(N > Hh * pc.per_start + 1e-9))
            g14 += int(pc.mean_reachable > Hh * pc.value + 1e-9)
        g14 += int(cov.value > pc.value + 1e-9)
        bad += g14
        ref2 = (reference or {}).get("C_cov_prime")
        if ref2 is not None:
            bad += int(abs(pc.value - ref2) > 1e-6 * max(1.0, ref2))
        out_det.update(C_cov_prime=pc.value, mean_reachable=pc.mean_reachable, reference_C_cov_prime=ref2,
                       g14_violations=g14)
    stmt = ("C_cov = max_h sum_(s,a) max_{pi in Pi_F} d_h^pi(s,a), computed exactly; the optimal mu_h attains it "
            "(certificate)")
    if algorithm == 2:
        stmt += "; C_cov <= C'_cov, N(s_1) <= H C_cov(Pi_F; M_{s_1}), E N(s_1) <= H C'_cov (Appendix D)"
    if ref is not None:
        stmt += "; equals the reference value (enumeration of the class)"
    c = invariant_check(id="assumption.coverability", violations=bad, total=1 + (3 if algorithm == 2 else 0)
                        + (ref is not None), claim={"statement": stmt,
                                                    "source": f"{SOURCE}, Definition 2.2 (Appendix D)"},
                        details=out_det, what=f"coverability C_cov = {cov.value:.6g}"
                        + (f", C'_cov = {out_det['C_cov_prime']:.6g}" if algorithm == 2 else ""))
    out.append(replace(c, measured={**c.measured, "C_cov": cov.value,
                                    **({"C_cov_prime": out_det["C_cov_prime"]} if algorithm == 2 else {})}))
    if algorithm == 2:
        det = next_state_table(mdp) is not None
        out.append(invariant_check(
            id="assumption.deterministic", violations=0 if det else 1, total=1,
            claim={"statement": "every P_h(.|s,a) is a point mass (deterministic MDP with outcome rewards)",
                   "source": f"{SOURCE}, Definition 3.3 (Theorem 3.4)"},
            details=base, what="deterministic transitions"))
    return out


REFERENCE = {
    # GF-3 (algorithms/gfa/instances.py) and Appendix D (Appendix D class, tie rule "action 0")
    "GF-3": {"C_cov": 3.52},
    "appendix-D-easy": {"C_cov": 9.34375, "C_cov_prime": 9.34375},
    "appendix-D-hard": {"C_cov": 9.34375, "C_cov_prime": 9.34375},
}


# ----------------------------------------------------------------------------- regret
def tuned(algorithm: int, inst, K: int, epsilon: float, *, delta: float, tuning: str, C_cov: float,
          sensitivity="paper"):
    """(B, eta) of the private learner at (K, eps): "theory" = Appendix E (displayed eta, c_kappa = 1); "poc" = the
    docs/private_gfa.md PoC-default shape B = ceil(K^{3/5} / eps^{2/5}), eta = 1."""
    from dpcheck.algorithms.gfa import theory_parameters
    if tuning == "theory":
        kind = sensitivity if isinstance(sensitivity, str) else "paper"
        tp = theory_parameters(algorithm, K=K, H=inst.fclass.H, N=inst.fclass.N, C_cov=C_cov, epsilon=epsilon,
                               delta=delta, sensitivity_kind=kind)
        return tp.B, tp.eta, tp.eta_np
    B = min(K, math.ceil(K ** 0.6 / epsilon ** 0.4))
    return B, 1.0, 1.0


def _final_regret(agent, mdp, K, runs, seed):
    res = agent.run(mdp, int(K), np.random.default_rng(seed), runs=runs, record=False)
    return res.cumulative_regret[:, -1]


def regret_curves(algorithm: int, inst, *, K_grid, eps_list, runs: int, runs_np: int, delta: float,
                  tuning: str, C_cov: float, seed: int, sensitivity="paper", agent_class=None, progress=None,
                  K_of_eps: dict | None = None, name: str = "private_gfa", runs_of_eps: dict | None = None, mechanism=None):
    """Final cumulative regret of the private learner for every eps of ``eps_list`` at the episode counts
    ``K_of_eps[eps]`` (default: all of ``K_grid``) -> {eps: (runs_of_eps.get(eps, runs), len)}, and of the non-private batched
    learner (B = ceil(sqrt K), Remark 3.7) over ``K_grid`` (runs_np, G). One batch of runs per K (B depends
    on K). Common random numbers: run i of the private learner uses the same seed at every K and every eps,
    run i of the non-private learner the same seed at every K, so each run is one curve across the grid and
    the bootstrap over runs (dpcheck.regret.fit_increment_exponent: runs are the independent units) sees the
    increments of a curve, not differences of independent runs. On a gapped instance the batched learners
    make the same selections at every K (the regret is B(K) times a per-run constant), so the increments'
    spread shrinks from ~the regret's own spread to near zero (measured on Appendix D: per-run correlation
    across K ~1.0 non-private, 0.4-0.8 private; docs/private_gfa.md "Rate checks")."""
    from dpcheck.algorithms.gfa import NonPrivateGeneralMDP, NonPrivateOutcomeRL, remark_3_7_batch_size
    mdp, fc = inst.mdp, inst.fclass
    s1 = inst.s1
    priv = {}
    for eps in eps_list:
        rows = []
        for K in (K_of_eps or {}).get(eps, K_grid):
            B, eta, _ = tuned(algorithm, inst, int(K), eps, delta=delta, tuning=tuning, C_cov=C_cov,
                              sensitivity=sensitivity)
            ag = make_agent(algorithm, fc, epsilon=eps, delta=delta, B=B, eta=eta, sensitivity=sensitivity, s1=s1,
                            agent_class=agent_class, mechanism=mechanism)
            rows.append(cached_call("private_gfa.regret", _final_regret, ag, mdp, int(K),
                                    int((runs_of_eps or {}).get(eps, runs)), seed))
        priv[eps] = np.stack(rows, axis=1)
        if progress:
            progress(f"{name}: regret at eps = {eps:g} done")
    rows = []
    for K in K_grid:
        _, _, eta_np = tuned(algorithm, inst, int(K), max(eps_list), delta=delta, tuning=tuning, C_cov=C_cov,
                             sensitivity=sensitivity)
        NP = NonPrivateGeneralMDP if algorithm == 1 else NonPrivateOutcomeRL
        kw = {"s1": s1} if algorithm == 1 else {}
        ag = NP(fc, B=remark_3_7_batch_size(int(K)), eta=eta_np, **kw)
        rows.append(cached_call("private_gfa.regret", _final_regret, ag, mdp, int(K), runs_np,
                                seed + 7919))
    return priv, np.stack(rows, axis=1)


def appendix_bound(algorithm: int, *, K: int, H: int, N: int, C_cov: float, epsilon: float, delta: float,
                   sensitivity: float, alpha: float = 0.05) -> tuple[float, float]:
    """The appendix forms of Theorem 3.1 / 3.4 (Theorem 3.4) as (non-private term, privacy term).

    Algorithm 1: 2 sqrt(3 K H kappa C) and K^(3/5) C^(3/5) Delta_S^(2/5) L^(2/5) ln(1/delta)^(1/5) / eps^(2/5),
    kappa = ln(|F|/alpha) + ln(H/alpha), C = H C_cov ln(1 + C_cov K / kappa), L = ln(|F| K / alpha).
    Algorithm 2: 2 H^2 sqrt(2 C'_cov K L ln K) and H^(7/5) (C'_cov K ln K)^(3/5) L^(2/5) ln(1/delta)^(1/5) / eps^(2/5).
    Constants were dropped while balancing (order statements): used only to tell whether the theorem says
    anything beyond the trivial Regret <= K J* in a window (where it does not, linear growth contradicts nothing).
    """
    L = math.log(N * K / alpha)
    lnd = math.log(1.0 / delta)
    if algorithm == 1:
        kappa = math.log(N / alpha) + math.log(H / alpha)
        C = H * C_cov * math.log(1 + C_cov * K / kappa)
        return (2 * math.sqrt(3 * K * H * kappa * C),
                K ** 0.6 * C ** 0.6 * sensitivity ** 0.4 * L ** 0.4 * lnd ** 0.2 / epsilon ** 0.4)
    lnK = math.log(max(K, 2))
    return (2 * H ** 2 * math.sqrt(2 * C_cov * K * L * lnK),
            H ** 1.4 * (C_cov * K * lnK) ** 0.6 * L ** 0.4 * lnd ** 0.2 / epsilon ** 0.4)


def _bound_vacuity(algorithm, inst, K_grid, eps, delta, C_cov, sensitivity, term):
    """Whether the theorem's bound (``term``: "private" = both terms, "nonprivate" = the first) exceeds the trivial
    bound K J* at the top of the window (then a steeper-than-claimed exponent contradicts nothing)."""
    from dpcheck.algorithms.gfa import optimal_return
    fc = inst.fclass
    K = int(K_grid[-1])
    Jstar = optimal_return(inst.mdp, inst.s1 if algorithm == 1 else None)
    np_term, p_term = appendix_bound(algorithm, K=K, H=fc.H, N=fc.N, C_cov=C_cov, epsilon=eps, delta=delta,
                                     sensitivity=sensitivity)
    bound = np_term + (p_term if term == "private" else 0.0)
    return bound >= K * Jstar, {"K": K, "bound_appendix_form": bound, "trivial_bound_K_Jstar": K * Jstar}


def _soft_fail(check: Check, vacuous: bool, info: dict) -> Check:
    """A FAIL of an exponent check in a window where the theorem's bound exceeds K J* becomes INCONCLUSIVE:
    the growth is pre-asymptotic and contradicts no stated bound."""
    det = {**check.details, "bound_vacuity": {**info, "vacuous": vacuous}}
    why = (f"not a violation (the theorem's bound {info['bound_appendix_form']:.3g} exceeds K J* = "
           f"{info['trivial_bound_K_Jstar']:.3g} at K = {info['K']}, so the growth is pre-asymptotic)")
    return soften(replace(check, details=det), why if vacuous else None)   # the one rule: dpcheck.checks.soften


def _difference(Rp, Rn):
    """Privacy cost per private run: its regret minus the mean non-private regret at the same K."""
    return Rp - Rn.mean(axis=0, keepdims=True)


ONE_SIDED = ("one-sided claim (exponent <= bound): the two-sided intervals are at twice the levels, so the FAIL "
             "interval's lower end is a one-sided bound at the audit's share of alpha and the PASS interval's upper "
             "end a one-sided bound at the audit's alpha (audits/lib/gfa.py _upper_bound_fit)")


def _upper_bound_fit(fit_fn, *args, alpha: float, **kw):
    """The fit of a ONE-sided claim ("exponent <= bound": slope_check with fail_below=None), with one-sided
    intervals. A two-sided (1 - a) interval puts a/2 in each tail, and the side that cannot decide (below
    the bound nothing fails) wastes it: its upper end is a one-sided (1 - a/2) bound. So the fit is made at
    2 alpha (the FAIL interval's lower end is the one-sided (1 - alpha) lower bound: a FAIL errs at level
    alpha, the audit's share, dpcheck.audit.Audit) and PASS at twice the PASS level (the upper end of the
    two-sided (1 - 2 alpha_pass) interval is the one-sided (1 - alpha_pass) upper bound, with alpha_pass the
    audit's own alpha, dpcheck.stats.pass_alpha). With 24 runs (Student t, 23 df) the PASS margin shrinks
    by t_0.95 / t_0.975 = 0.83 at the same confidence of each one-sided statement."""
    from dpcheck.stats import pass_alpha, pass_level
    with pass_level(min(0.5, 2.0 * pass_alpha(alpha))):
        return fit_fn(*args, alpha=min(0.5, 2.0 * alpha), **kw)


def _one_sided_confidence(check: Check, alpha: float) -> Check:
    """measured.confidence of a one-sided check (:func:`_upper_bound_fit`): its FAIL errs at ``alpha`` (the
    lower end of the two-sided 1 - 2 alpha interval), so it states 1 - alpha, as the report's family-wise
    union bound (dpcheck.context.family_error) reads it; the interval's own level is kept beside it."""
    m = {**check.measured, "confidence": 1 - alpha, "interval_confidence": check.measured.get("confidence")}
    return replace(check, measured=m)


def regret_checks(algorithm: int, inst, *, K_grid, eps_K: float, eps_grid, K_eps: int, runs: int, runs_np: int,
                  delta: float, tuning: str, C_cov: float, seed: int, alpha: float, sensitivity="paper",
                  agent_class=None, progress=None, name: str = "private_gfa", runs_K: int | None = None, mechanism=None) -> list[Check]:
    """The rate checks: the privacy term's increment exponent in K (<= 3/5 + 0.1, at eps_K), the
    non-private batched learner's (<= 1/2 + 0.1), the privacy cost's slope in eps at K_eps (the bound's
    -2/5; [-1.1, 0] consistent, a CI wholly above 0 fails). A pass whose interval lies wholly
    below 0.25 (regret saturating in the window) is marked uninformative. ``runs_K``: runs of the private K
    sweep at eps_K (default ``runs``; the eps sweep keeps ``runs``)."""
    from dpcheck.regret import fit_increment_exponent, fit_scaling, slope_check
    K_grid = [int(k) for k in K_grid]
    thm = THEOREM[algorithm]
    eps_all = sorted(set([eps_K, *eps_grid]))
    # the K sweep at eps_K; the eps sweep at K_eps, which must be on the K grid (shared runs)
    if K_eps not in K_grid:
        raise InputError(f"K_eps = {K_eps} must be one of the K grid {K_grid}")
    K_of_eps = {e: ([k for k in K_grid] if e == eps_K else [K_eps]) for e in eps_all}
    priv, Rn = regret_curves(algorithm, inst, K_grid=K_grid, eps_list=eps_all, runs=runs, runs_np=runs_np,
                             delta=delta, tuning=tuning, C_cov=C_cov, seed=seed, sensitivity=sensitivity,
                             agent_class=agent_class, progress=progress, K_of_eps=K_of_eps, name=name,
                             runs_of_eps={eps_K: runs_K} if runs_K else None, mechanism=mechanism)
    base = {"instance": inst.name, "tuning": tuning, "delta": delta, "runs_private": runs, "runs_nonprivate": runs_np,
            "runs_private_K_sweep": runs_K or runs,
            "K_grid": K_grid, "mean_regret_nonprivate": Rn.mean(0).tolist(),
            "mean_regret_private": {f"{e:g}": {"K": K_of_eps[e], "regret": priv[e].mean(0).tolist()}
                                    for e in eps_all}}
    out = []
    # privacy term vs K
    D = _difference(priv[eps_K], Rn)
    incr = np.diff(D.mean(0))
    if np.any(incr <= 0):
        # a cost that stops growing somewhere on the grid is no evidence against "at most K^(3/5)" (a cost
        # growing like a power of K increases at every step), but it leaves no exponent to fit
        out.append(qualify(Check(id="regret.exponent.private", kind="regret", verdict=PASS,
                                 claim={"statement": "privacy term of the regret grows at most like K^(3/5)",
                                        "source": f"{SOURCE}, {thm}"},
                                 measured={"mean_increments": incr.tolist(), "confidence": 1 - alpha,
                                           "seeds": runs_K or runs},
                                 details={**base, "epsilon": eps_K},
                                 reason="the mean privacy cost does not increase everywhere on the K grid"),
                           "uninformative", "the mean privacy cost stops growing somewhere on the K grid (it has "
                           "flattened, or is within noise of a constant), so no exponent can be fitted; the cost "
                           "is not growing, its rate is not measured"))
    else:
        fit = _upper_bound_fit(fit_increment_exponent, K_grid, D, alpha=alpha, seed=seed, interval="t")
        c = slope_check(fit, bound=0.7, id="regret.exponent.private",
                        statement="privacy term Regret_private - Regret_nonprivate = O~(K^(3/5) eps^(-2/5)): "
                                  "exponent of its increments <= 3/5 + 0.1",
                        source=f"{SOURCE}, {thm}", xname="K",
                        details={**base, "epsilon": eps_K, "sides": ONE_SIDED}, ylabel="privacy cost increment")
        c = _one_sided_confidence(c, alpha)
        vac, info = _bound_vacuity(algorithm, inst, K_grid, eps_K, delta, C_cov, _declared_sensitivity(algorithm,
                                   inst, sensitivity), "private")
        out.append(_regime(_soft_fail(c, vac, info), fit, "K^(3/5)"))
    # non-private term vs K (Remark 3.7)
    incr = np.diff(Rn.mean(0))
    settled = settled_runs(K_grid, Rn)
    if np.any(incr <= 0):
        out.append(_settled_regime(Check(id="regret.exponent.nonprivate", kind="regret", verdict=INCONCLUSIVE,
                         claim={"statement": "non-private batched regret grows at most like sqrt(K)",
                                "source": f"{SOURCE}, Remark 3.7, {thm}"},
                         measured={"mean_increments": incr.tolist(), "confidence": 1 - alpha, "seeds": runs_np},
                         details=base, reason="the mean non-private regret does not increase over the K grid: "
                                              "no exponent can be fitted"), settled, Rn, 0.6))
    else:
        fit = _upper_bound_fit(fit_increment_exponent, K_grid, Rn, alpha=alpha, seed=seed, interval="t")
        c = slope_check(fit, bound=0.6, id="regret.exponent.nonprivate",
                        statement="non-private batched learner (B = ceil(sqrt K)): Regret = O~(sqrt(C_cov K)); "
                                  "exponent of the increments <= 1/2 + 0.1",
                        source=f"{SOURCE}, Remark 3.7, {thm}", xname="K",
                        details={**base, "sides": ONE_SIDED}, ylabel="regret increment")
        c = _one_sided_confidence(c, alpha)
        vac, info = _bound_vacuity(algorithm, inst, K_grid, eps_K, delta, C_cov, _declared_sensitivity(algorithm,
                                   inst, sensitivity), "nonprivate")
        c = _settled_regime(c, settled, Rn, 0.6)      # before _soft_fail: a FAIL is never changed
        out.append(_regime(_soft_fail(c, vac, info), fit, "sqrt(K)"))
    # privacy cost vs eps at K_eps
    j = K_grid.index(K_eps)
    eg = sorted(eps_grid)
    Y = np.stack([priv[e][:, K_of_eps[e].index(K_eps)] - Rn[:, j].mean() for e in eg], axis=1)
    fs = fit_scaling(np.asarray(eg, float), Y, alpha=alpha, seed=seed, interval="t")
    ym = Y.mean(0)
    c = slope_check(fs, bound=0.0, lower=-1.1, fail_above=0.0, fail_below=None, id="regret.privacy_cost.eps",
                    statement="privacy cost at fixed K scales like eps^(-2/5) (upper bound; slopes in [-1.1, 0] are "
                              "consistent on small instances): FAIL iff the cost grows with eps",
                    source=f"{SOURCE}, {thm} (Theorem 3.1)", xname="eps",
                    details={**base, "K": K_eps, "eps_grid": eg, "mean_cost": ym.tolist()},
                    ylabel="Regret_private - Regret_nonprivate")
    if np.any(ym <= 0) and c.verdict == PASS:
        c = qualify(c, "uninformative", "the mean privacy cost is <= 0 at some eps: the log-log slope is not defined")
    out.append(c)
    return out


SETTLED_SHARE = 0.75   # share of runs whose regret is B(K) times one constant across the grid


def settled_runs(K_grid, R) -> dict:
    """Which runs of the non-private batched learner (B = ceil(sqrt K), Remark 3.7) have regret B(K) x c
    with one constant c across the K grid (relative tolerance 1e-9): with common random numbers
    (:func:`regret_curves`) such a run makes the same selections at every K and settles on its final entry
    within the same batches, so its regret grows only through the batch size."""
    from dpcheck.algorithms.gfa import remark_3_7_batch_size
    B = np.array([remark_3_7_batch_size(int(k)) for k in K_grid], dtype=float)
    X = np.asarray(R, dtype=float) / B[None, :]
    same = np.all(np.isclose(X, X[:, -1:], rtol=1e-9, atol=1e-12), axis=1)
    return {"runs": int(same.sum()), "of": int(len(same)), "share": float(same.mean()), "mask": same,
            "batch_sizes": B.astype(int).tolist()}


def _settled_regime(check: Check, settled: dict, R, bound: float) -> Check:
    """An INCONCLUSIVE non-private exponent on a gapped instance is a PASS (uninformative) when at least
    SETTLED_SHARE of the runs settle within the same first batches at every K (:func:`settled_runs`): their
    regret is B(K) x a per-run constant, flat within each run once settled ("linear, then flat"), so its
    growth in K is the batch size ceil(sqrt K) itself and this window measures no learning rate; the few
    other runs only widen the interval. Required as well: the settled runs' own increment exponent is
    <= ``bound`` (it is ~1/2, the batch size's). A FAIL or a PASS is never changed (call before
    :func:`_soft_fail`); a learner whose regret grows faster than B(K) (one that stops learning: R ~ K) has
    no settled runs and stays as it is."""
    if check.verdict != INCONCLUSIVE or settled["share"] < SETTLED_SHARE:
        return check
    det = {**check.details, "settled_runs": {k: v for k, v in settled.items() if k != "mask"}}
    check = replace(check, details=det)
    if R is not None:
        Rs = np.asarray(R, dtype=float)[settled["mask"]]
        inc = np.diff(Rs.mean(0))
        if np.any(inc <= 0):
            b = float("nan")        # every settled run has zero regret: nothing grows
        else:
            b = _ols_slope(np.log(np.asarray(check.details["K_grid"][:-1], dtype=float)), np.log(inc))
            if b > bound:
                return check
        det["settled_runs"]["exponent"] = b
    why = (f"{settled['runs']} of {settled['of']} runs settle within the same first batches at every K (regret = "
           f"B(K) x one constant per run, B = ceil(sqrt K) = {settled['batch_sizes']}): once settled the regret is "
           "flat, so its growth in K is the batch size of Remark 3.7 itself and the other runs only widen the "
           "interval; this run measures no learning rate")
    return qualify(replace(check, verdict=PASS, details=det), "uninformative", why,
                   note=f" (uninformative: {settled['runs']} of {settled['of']} runs grow only through the batch "
                        "size B(K))")


def _ols_slope(x, y) -> float:
    x = np.asarray(x, float) - np.mean(x)
    return float((x * (np.asarray(y, float) - np.mean(y))).sum() / (x * x).sum())


def _declared_sensitivity(algorithm, inst, sensitivity):
    from dpcheck.algorithms.gfa import sensitivity as _sens
    if not isinstance(sensitivity, str):
        return float(sensitivity)
    return _sens(algorithm, inst.fclass.H, sensitivity)


def _regime(check: Check, fit, what: str, floor: float = 0.25, max_width: float = 1.0) -> Check:
    """A pass whose interval lies wholly below ``floor`` says the increments shrink (regret saturates on
    this finite class), and one whose interval is wider than ``max_width`` says nothing: both are marked
    uninformative about the claimed rate (never a plain PASS)."""
    if check.verdict != PASS:
        return check
    lo, hi = fit.ci
    if hi - lo > max_width:
        return qualify(check, "uninformative",
                       f"the exponent's interval [{lo:.2f}, {hi:.2f}] is wider than {max_width:g}: the runs are too "
                       f"noisy to say anything about {what}",
                       note=" (uninformative: interval too wide)")
    if hi < floor:
        return qualify(check, "uninformative",
                       f"exponent CI below {floor:g}: the increments shrink over the window (the learner has locked "
                       f"onto an optimal entry); the pass says little about {what}",
                       note=" (uninformative: the increments shrink in this window)")
    if lo >= floor:
        return replace(check, reason=check.reason + f"; growing regime (CI lower end {lo:.2f} >= {floor:g})")
    return check


def output_policy_check(agent, inst, *, K: int, runs: int, seed: int, n_mc: int = 20_000,
                        alpha: float = 0.05) -> Check:
    """regret.output_policy (Algorithms 1-2): J(pi*) - J(pi_hat) = Regret / K for pi_hat = Unif(pi_1..pi_K).

    (a) exactly: J(pi_hat) from the mixture's weights over the class entries and their exact returns, against
    the run's Regret / K (one mismatch beyond 1e-9 fails); (b) by simulation of the output policy as released
    (``MixturePolicy.sample``: one k per episode, pi_k for the whole episode): ``n_mc`` episodes of run 0 in
    the MDP, whose mean return must lie within the Hoeffding radius sqrt(ln(2/alpha) / (2 n_mc)) of J(pi_hat)
    (returns in [0, 1]); outside it fails (a false alarm with probability <= alpha)."""
    from dpcheck.algorithms.gfa import optimal_return, policy_returns
    mdp, fc = inst.mdp, inst.fclass
    init = public_init(agent, mdp)
    rng = np.random.default_rng(seed)
    res = agent.run(mdp, K, rng, runs=runs, record=False)
    J_entries = policy_returns(mdp, fc.greedy_policies(), init)
    J_hat = res.output_policy.expected_return(J_entries)
    J_star = optimal_return(mdp, init)
    gap = J_star - J_hat
    per_ep = res.cumulative_regret[:, -1] / K
    err = np.abs(gap - per_ep)
    bad = int(np.sum(err > 1e-9))
    from dpcheck.algorithms.gfa import MixturePolicy
    entries0 = res.output_policy.episode_entries[:1]
    total, done, chunk = 0.0, 0, 2048
    while done < n_mc:
        n = min(chunk, n_mc - done)
        # n independent episodes of run 0's pi_hat: one uniform k per episode, pi_k for the whole episode
        pols = MixturePolicy(fc, np.repeat(entries0, n, axis=0)).sample(rng)          # (n, H, S)
        total += float(mdp.rollout(pols, rng).rewards.sum())
        done += n
    mc = total / n_mc
    radius = math.sqrt(math.log(2.0 / alpha) / (2.0 * n_mc))
    mc_bad = int(abs(mc - J_hat[0]) > radius)
    c = invariant_check(id="regret.output_policy", kind="regret", violations=bad + mc_bad, total=runs + 1,
                        claim={"statement": "J(pi*) - J(pi_hat) = Regret / K for pi_hat = Unif(pi_1..pi_K) "
                                            "(trajectory-level mixture)",
                               "source": f"{SOURCE}, {THEOREM[agent.algorithm]} (PAC conversion)"},
                        details={"agent": describe(agent), "K": K, "runs": runs, "J_star": J_star,
                                 "suboptimality": gap.tolist(), "regret_over_K": per_ep.tolist(),
                                 "simulation": {"episodes": n_mc, "mean_return": mc, "J_hat": float(J_hat[0]),
                                                "hoeffding_radius": radius, "level": alpha}},
                        what="output-policy sub-optimality = Regret / K (exact per run; simulated pi_hat "
                             f"{mc:.4f} vs {float(J_hat[0]):.4f} +- {radius:.3f})")
    return replace(c, measured={**c.measured, "suboptimality_mean": float(gap.mean()),
                                "max_abs_error": float(err.max()), "confidence": 1 - alpha})


# ----------------------------------------------------------------------------- the selection mechanism alone
SELECTION_SOURCE = ("He & Zhou (arXiv 2605.07049), Section 3.3, Lemma E.2 (each update eps0-DP in a score of sensitivity "
                    "Delta_S)")


def selection_pairs(sensitivity: float, N: int = 64) -> list:
    """Neighbouring score vectors (u, u') with max_f |u(f) - u'(f)| = Delta: the all-zero vector against one
    entry raised by Delta and every other lowered by Delta, over 2 entries (tight for report-noisy-max with
    exponential noise, i.e. permute-and-flip: Pr[entry 2] goes from 1/2 to e^-eps / 2) and over N entries
    (tight for the exponential mechanism as N grows: Pr[entry 1] goes from 1/N to ~ e^eps / N)."""
    out = []
    for n in (2, int(N)):
        u = np.zeros(n)
        v = np.full(n, -float(sensitivity))
        v[0] = float(sensitivity)
        out.append((u, v))
    return out


class SelectionDraws:
    """mechanism(scores (N,), rng, size) -> (size,) selections of ``mech`` at (epsilon, sensitivity)
    (configuration only, picklable)."""

    def __init__(self, mech, epsilon: float, sensitivity: float):
        self.mech, self.epsilon, self.sensitivity = mech, float(epsilon), float(sensitivity)

    def __call__(self, scores, rng, size):
        s = np.broadcast_to(np.asarray(scores, dtype=np.float64), (int(size), len(scores)))
        return np.asarray(self.mech.select(s, self.epsilon, self.sensitivity, rng), dtype=np.int64)


def selection_blackbox_check(mech, epsilon: float, sensitivity: float, *, samples: int = 200_000,
                             alpha: float = 0.05, seed: int = 0, id: str = "privacy.blackbox", N: int = 64,
                             **parallel) -> Check:
    """The selection mechanism is eps-DP for scores of sensitivity Delta, black box: selections drawn on the
    neighbouring score vectors of :func:`selection_pairs`, histogram events (nothing about the mechanism's
    noise is assumed). A mechanism calibrated for sensitivity Delta / 2 (report-noisy-max without the factor
    2 for non-monotone scores) reaches 2 eps on the 2-entry pair."""
    from dpcheck import AuditTarget, Claim
    from dpcheck.blackbox import audit
    claim = Claim(epsilon=float(epsilon), delta=0.0, notion="DP", source=SELECTION_SOURCE)
    target = AuditTarget(name=f"selection.{getattr(mech, 'name', 'mechanism')}",
                         mechanism=SelectionDraws(mech, epsilon, sensitivity),
                         pairs=selection_pairs(sensitivity, N), claim=claim, output="discrete")
    res = audit(target, samples=samples, alpha=alpha, seed=seed, **parallel)
    check = res.to_check(id=id, claim_source=claim.source)
    det = dict(check.details)
    det.update(mechanism=repr(mech), epsilon=float(epsilon), sensitivity=float(sensitivity),
               pairs="u = 0 vs u' = (+Delta, -Delta, ..., -Delta) over 2 and over N = %d entries" % N)
    return replace(check, details=det)


def selection_utility_check(mech, epsilon: float, sensitivity: float, *, runs: int = 20_000, alpha: float = 0.05,
                            seed: int = 0, N: int = 64, t: float = math.log(10.0),
                            id: str = "assumption.selection_utility") -> Check:
    """The utility bound the regret analysis uses: Pr[S(f) < max S - c (Delta / eps)(ln N + t)] <= e^-t
    (Dwork & Roth 2014, Thm 3.11 for the exponential mechanism, c = 2; ``mech.utility_constant``). On one top
    entry and N - 1 entries a factor 2 further below than the bound at t (the exponential mechanism fails
    there with probability ~ e^-t / 2), over ``runs`` independent selections, exact binomial bounds
    (:func:`dpcheck.checks.probability_check`). A mechanism noisier than it declares fails."""
    c = float(getattr(mech, "utility_constant", 2.0))
    bound = c * float(sensitivity) / float(epsilon) * (math.log(N) + t)
    gap = c * float(sensitivity) / float(epsilon) * (math.log(N) + t + math.log(2.0))
    scores = np.full(N, -gap)
    scores[0] = 0.0
    rng = np.random.default_rng(seed)
    sel = SelectionDraws(mech, epsilon, sensitivity)(scores, rng, runs)
    failures = int(np.sum(scores[sel] < -bound))
    claim = {"statement": f"Pr[S(f) < max_g S(g) - {c:g} (Delta / eps)(ln N + t)] <= e^-t (utility of the "
                          f"selection; c = {c:g} as the mechanism declares)",
             "source": "Dwork & Roth 2014, Thm 3.11 (McSherry & Talwar 2007); He & Zhou (arXiv 2605.07049), "
                       "regret analysis of Theorems 3.1 / 3.4"}
    return probability_check(id=id, failures=failures, runs=int(runs), beta=math.exp(-t), alpha=alpha,
                             claim=claim, details={"mechanism": repr(mech), "epsilon": float(epsilon),
                                                   "sensitivity": float(sensitivity), "N": N, "t": t,
                                                   "bound": bound, "gap_of_the_others": gap},
                             what="a selection more than the utility bound below the best score")


def selection_dp_event_check(mech, epsilon: float, sensitivity: float) -> Check:
    """whitebox.dp_event: the mechanism's declared DpEvent for one selection, accounted by dp_accounting's PLD
    under replacement of one user (the neighbouring relation of Definition 2.3), is eps-DP: eps_PLD at
    delta = 1e-12 <= eps (slack 2e-3 for the discretisation, as in whitebox.composition)."""
    import dp_accounting
    label = f"{getattr(mech, 'name', 'mechanism')} at eps = {epsilon:g}, Delta = {sensitivity:g}"
    claim = {"statement": f"one selection is ({epsilon:g}, 0)-DP for scores of sensitivity {sensitivity:g} "
                          "(the declared DpEvent, exact PLD accountant)", "source": SELECTION_SOURCE}
    event = mech.dp_event(float(epsilon), float(sensitivity))
    if not isinstance(event, dp_accounting.DpEvent):
        return Check(id="whitebox.dp_event", kind="whitebox", verdict=FAIL, claim=claim,
                     measured={"confidence": 1.0, "samples": 0, "epsilon_lower_bound": None},
                     details={"event": repr(event)},
                     reason=f"{label}: dp_event() returned {type(event).__name__}, not a dp_accounting DpEvent")
    eps_pld = pld_epsilon_replace_one(event, 1, 1e-12)
    slack = 2e-3
    ok = eps_pld <= float(epsilon) * (1 + slack) + slack
    reason = (f"{label}: declared event gives eps = {eps_pld:.4g} at delta = 1e-12 (PLD, replace one) "
              + ("<= " if ok else "> ") + f"claimed {epsilon:g}")
    return Check(id="whitebox.dp_event", kind="whitebox", verdict=PASS if ok else FAIL, claim=claim,
                 measured={"epsilon_pld": eps_pld, "at_delta": 1e-12, "claimed_epsilon": float(epsilon),
                           "epsilon_lower_bound": eps_pld, "confidence": 1.0, "samples": 0},
                 details={"event": repr(event)}, reason=reason)
