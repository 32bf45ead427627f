"""The agent and the instance a Private-LinOpt-VI / -PO audit runs on (Zhou 2022): :class:`LinOptSpec`
(the agent as picklable configuration), the Privatizer's sizes, :func:`load_instance` (LM-2, tabular-as-linear
or a user's .npz) and the cost of auditing a user's instance.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpcheck.errors import InputError


SOURCE = "Zhou, Differentially Private Reinforcement Learning with Linear Function Approximation"
SPEC = "Zhou 2022"
REL_TOL = 1e-9
INSTANCE_KEYS = ("psi", "varphi", "theta_p", "theta_r")


# ----------------------------------------------------------------------------- configuration
@dataclass(frozen=True)
class LinOptSpec:
    """The agent under audit, as configuration (picklable).

    algorithm:        "vi" (Algorithm 1, Private-LinOpt-VI) or "po" (Algorithm 2, Private-LinOpt-PO).
    epsilon, delta:   the JDP budget the Privatizer is calibrated to (Thm 6.4).
    alpha:            the failure probability of the utility statements (Assumption 2, Lemma 3.1).
    radius_dim, sensitivity_mode, target: the Privatizer's flags (Lemma B.4; docs/derivations.md#neighbouring-relation; Theorem 6.4).
    algo_class:       a subclass of LinOptVI / LinOptPO (variants, planted defects); None: the paper's.
    privatizer_class: a subclass of Privatizer (variants, planted defects); None: the paper's.
    plugin:           a researcher's stream privatizer, ``file.py:Class`` / ``pkg.module:Class`` (or the class),
                      built as ``Class(epsilon=, delta=)`` and guarded (dpcheck.algorithms.linear.
                      load_stream_privatizer); None: the paper's Privatizer (``privatizer_class``, the flags).
    """

    algorithm: str = "vi"
    epsilon: float = 1.0
    delta: float = 0.1
    alpha: float = 0.05
    radius_dim: str = "d"
    sensitivity_mode: str = "paper"
    target: str = "paper"
    algo_class: type | None = None
    privatizer_class: type | None = None
    tie_breaking: str = "random"
    plugin: object = None

    def __post_init__(self):
        if self.algorithm not in ("vi", "po"):
            raise InputError(f"algorithm must be 'vi' or 'po', got {self.algorithm!r}")

    def privatizer(self, epsilon: float | None = None):
        from dpcheck.algorithms.linear import Privatizer, load_stream_privatizer
        if self.plugin is not None:
            return load_stream_privatizer(self.plugin, epsilon=self.epsilon if epsilon is None else epsilon,
                                          delta=self.delta)
        cls = self.privatizer_class or Privatizer
        return cls(self.epsilon if epsilon is None else epsilon, delta=self.delta, radius_dim=self.radius_dim,
                   sensitivity_mode=self.sensitivity_mode, target=self.target)

    def make(self, epsilon: float | None = None, regularizer=None, **kw):
        """The algorithm with the Privatizer at ``epsilon`` (or with ``regularizer``)."""
        from dpcheck.algorithms.linear import LinOptPO, LinOptVI
        cls = self.algo_class or (LinOptVI if self.algorithm == "vi" else LinOptPO)
        reg = regularizer if regularizer is not None else self.privatizer(epsilon)
        return cls(reg, alpha=self.alpha, tie_breaking=self.tie_breaking, **kw)

    def nonprivate(self, **kw):
        """The non-private instantiation Z = I, z = 0 (Section 3, Z = lambda I: UCRL-VTR / bandit OPPO)."""
        from dpcheck.algorithms.linear import RidgeRegularizer
        return self.make(regularizer=RidgeRegularizer(1.0), **kw)

    @property
    def label(self) -> str:
        return "Private-LinOpt-VI" if self.algorithm == "vi" else "Private-LinOpt-PO"

    def describe(self) -> dict:
        return {"algorithm": self.label, "epsilon": self.epsilon, "delta": self.delta, "alpha": self.alpha,
                "radius_dim": self.radius_dim, "sensitivity_mode": self.sensitivity_mode, "target": self.target,
                "algo_class": self.algo_class.__name__ if self.algo_class else None,
                "privatizer_class": self.privatizer_class.__name__ if self.privatizer_class else None,
                "plugin": self.plugin if self.plugin is None or isinstance(self.plugin, str) else
                getattr(self.plugin, "__name__", repr(self.plugin))}


def sizes_for(env, K: int):
    from dpcheck.algorithms.linear import LinearSizes
    return LinearSizes(int(K), env.H, env.d1, env.d2, env.d)


def load_instance(value: str | None):
    """The audited linear mixture MDP: "lm2" (default), "tabular" ( a seeded random tabular MDP
    with |S| = |A| = 2, H = 3, as a linear mixture), or PATH.npz with arrays psi (S, A, S, d1),
    varphi (S, A, d2), theta_p (H, d1), theta_r (H, d2) and optionally d (declared dimension), init
    (start state), reward_noise ("bernoulli" / "deterministic"). Everything Assumption 1 states is validated
    (dpcheck.algorithms.linear.LinearMixtureMDP); any defect is an InputError naming the file."""
    from dpcheck.algorithms.linear import LinearMixtureMDP, lm2, tabular_as_linear
    if value is None or value == "lm2":
        return lm2()
    if value == "tabular":
        from dpcheck.algorithms.envs import random_mdp
        return tabular_as_linear(random_mdp(2, 2, 3, np.random.default_rng(0), reward_noise="bernoulli"))
    path = str(value)
    if not path.endswith(".npz"):
        raise InputError(f"--set instance={path}: expected lm2, tabular or a .npz file "
                         f"with arrays {', '.join(INSTANCE_KEYS)}")
    try:
        with np.load(path, allow_pickle=False) as f:
            data = {k: f[k] for k in f.files}
    except FileNotFoundError:
        raise InputError(f"--set instance={path}: no such file") from None
    except Exception as e:                                  # a corrupt archive, a pickled array, ...
        raise InputError(f"--set instance={path}: cannot read it as .npz ({type(e).__name__}: {e})") from None
    missing = [k for k in INSTANCE_KEYS if k not in data]
    if missing:
        raise InputError(f"--set instance={path}: missing array(s) {', '.join(missing)} "
                         f"(need {', '.join(INSTANCE_KEYS)}; optional d, init, reward_noise)")
    kw = {}
    for key in ("d", "init"):
        if key in data:
            v = data[key]
            if v.ndim == 0:
                if not np.issubdtype(v.dtype, np.integer):
                    raise InputError(f"--set instance={path}: {key} must be an integer, got {v!r}")
                kw[key] = int(v)
            else:
                kw[key] = v
    if "reward_noise" in data:
        kw["reward_noise"] = str(data["reward_noise"])
    try:
        return LinearMixtureMDP(data["psi"], data["varphi"], data["theta_p"], data["theta_r"],
                                name=path.rsplit("/", 1)[-1], **kw)
    except InputError as e:
        raise InputError(f"--set instance={path}: {e}") from None


# Measured on the reference machine (LM-2's parameters repeated over H, d = 2; docs/private_linopt.md "Size
# limits"): one step (k, h) of one run of the learner costs ~35 us and holds ~300 bytes of recorded figures;
# both scale with the d x d statistics, taken here as (max(d1, d2, d) / 2)^2.
SEC_STEP, BYTES_STEP = 35e-6, 300


def audit_episodes(quick: bool, samples: int) -> tuple[int, int]:
    """(episodes the audit runs in all, episodes of its largest batch): Assumption 2 / Lemma 3.1 at two eps,
    the regret grid (5 eps + the non-private reduction), the two black boxes (2 sides, K = 8 and 4)."""
    pick = (lambda d, q: q if quick else d)
    runs = pick(300, 100)
    assumptions = runs * (pick(256, 64) + pick(1024, 256))
    regret = pick(16384, 8192) * pick(6, 4) * 6
    blackbox = samples * 2 * (8 + 4)
    return assumptions + regret + blackbox, max(runs * pick(1024, 256), samples * 8)


def check_instance_size(path: str, env, *, quick: bool, samples: int) -> None:
    """Exit 2 (InputError) before any work when the audit of a user's instance this large (H, d) would not fit the
    memory or time limit (dpcheck.limits.check_input_cost), naming the largest H or d that fits."""
    from dpcheck.limits import check_input_cost
    total, batch = audit_episodes(quick, samples)

    def cost(z):
        scale = (max(z["d"], 2) / 2.0) ** 2
        return batch * z["H"] * BYTES_STEP * scale, total * z["H"] * SEC_STEP * scale

    check_input_cost(f"--set instance={path}", {"H": env.H, "d": max(env.d1, env.d2, env.d)}, cost,
                     unit=f"{total} episodes of H steps, d x d statistics")
