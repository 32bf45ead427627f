"""The instance, the function class and the learner a private_gfa / private_gfa_outcome audit runs on
(He & Zhou, arXiv 2605.07049, Algorithms 1 and 2): a user's class from an .npz file and its cost
(docs/private_gfa.md "Size limits"), the default instances (GF-3, Appendix D), the learner under audit.
"""
from __future__ import annotations


import numpy as np

from dpcheck.errors import InputError


SOURCE = "He & Zhou, Towards Differentially Private RL with General Function Approximation (arXiv 2605.07049)"
THEOREM = {1: "Theorem 3.1 (Algorithm 1)", 2: "Theorem 3.4 (Algorithm 2)"}
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
