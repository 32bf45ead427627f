"""The private selection mechanism of Algorithms 1 and 2 (He & Zhou, Algorithms 1-2; docs/privatizers.md): the plug-in interface.

At every update the learner scores each entry f of its finite class on the data so far, S_D(f), and hands
the score vector to a *selection mechanism*, which returns one entry per run. The privacy analysis of
He & Zhou (Section 3.3, Lemma E.2) needs only this of the mechanism: for score vectors u, u' with
max_f |u(f) - u'(f)| <= Delta_S (the score sensitivity, 8H for Algorithm 1, (H+1)^2 for Algorithm 2),
the selection is eps0-DP; M = ceil(K/B) such updates then compose to (eps, delta)-JDP. The paper uses the
exponential mechanism (McSherry & Talwar 2007) at beta_EM = eps0 / (2 Delta_S); report-noisy-max with
Laplace noise of scale 2 Delta / eps0 (Dwork & Roth 2014, Claim 3.9), or with exponential noise of the same
scale, which is permute-and-flip (McKenna & Sheldon 2020; Ding et al. 2021), are eps0-DP too. The regret
analysis uses the exponential mechanism's utility bound
Pr[S(f) < max_g S(g) - (2 Delta / eps0)(ln N + t)] <= e^-t (Dwork & Roth 2014, Thm 3.11), which
permute-and-flip meets as well.

A researcher's mechanism subclasses :class:`SelectionMechanism` and implements ``select``; the learners take
it as ``mechanism=`` (:class:`dpcheck.algorithms.gfa.PrivateGeneralMDP`, :class:`PrivateOutcomeRL`) and the
audits treat the built-in :class:`ExponentialMechanism` and a plug-in alike (docs/privatizers.md).
"""
from __future__ import annotations

import abc
import math

import numpy as np

from dpcheck.errors import InputError

SOURCE = "He & Zhou (arXiv 2605.07049), Section 3.3, Lemma E.2: each update eps0-DP in a score of sensitivity Delta_S"


class SelectionMechanism(abc.ABC):
    """One private selection per run from a score vector; ``select`` is the only method to implement.

    * ``name`` (class attribute): a short name for reports.
    * ``select(scores, epsilon, sensitivity, rng) -> (runs,) int``: one index in [0, N) per row of
      ``scores`` (runs, N), eps-DP (``epsilon`` finite > 0) when every score moves by at most
      ``sensitivity`` between neighbouring datasets. Fresh randomness at every call, and **all of it from
      ``rng``** (a ``numpy.random.Generator``), vectorised over runs.
    * ``log_probabilities(scores, epsilon, sensitivity) -> (runs, N)`` (optional): the closed-form law of
      ``select``, if there is one; the audits then compare the selection frequencies with it. ``None``
      (the default): no closed form; the black-box audit of the selection is the evidence.
    * ``dp_event(epsilon, sensitivity)``: the dp_accounting DpEvent of one selection; by default pure
      binary randomized response at ``epsilon`` (exactly the (eps, 0) profile; override for a mechanism
      with a tighter one).
    * ``utility_constant``: the c of the utility bound Pr[gap > c (Delta / eps) (ln N + t)] <= e^-t the
      mechanism promises (2 for the exponential mechanism and permute-and-flip; 4 for report-noisy-max
      with Laplace noise); the audits check it over repetitions.

    The constructor takes no required arguments (``--privatizer file.py:Class`` instantiates ``Class()``).
    """

    name = "selection"
    utility_constant = 2.0

    @abc.abstractmethod
    def select(self, scores: np.ndarray, epsilon: float, sensitivity: float,
               rng: np.random.Generator) -> np.ndarray:
        """(runs,) int: one eps-DP selection per row of ``scores`` (runs, N)."""

    def log_probabilities(self, scores: np.ndarray, epsilon: float, sensitivity: float):
        return None

    def dp_event(self, epsilon: float, sensitivity: float):
        """Binary randomized response at eps: exactly the (eps, 0)-DP privacy profile, which dominates every
        eps-DP mechanism (Kairouz, Oh & Viswanath 2015)."""
        from dpcheck.accounting import pure_dp_event
        return pure_dp_event(float(epsilon))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class ExponentialMechanism(SelectionMechanism):
    """The paper's mechanism: Pr[f] propto exp(beta S(f)), beta = eps / (2 Delta) (Algorithm 1 line 6; Gumbel-max draw,
    :func:`dpcheck.algorithms.gfa.exponential_mechanism`). ``tie_breaking`` is the argmax's tie rule at
    beta = inf."""

    name = "exponential"

    def __init__(self, tie_breaking: str = "random"):
        from dpcheck.algorithms.gfa.mechanism import TIE_BREAKING
        if tie_breaking not in TIE_BREAKING:
            raise InputError(f"tie_breaking must be one of {TIE_BREAKING}, got {tie_breaking!r}")
        self.tie_breaking = tie_breaking

    @staticmethod
    def temperature(epsilon: float, sensitivity: float) -> float:
        return math.inf if math.isinf(epsilon) else float(epsilon) / (2.0 * float(sensitivity))

    def select(self, scores, epsilon, sensitivity, rng):
        from dpcheck.algorithms.gfa.mechanism import exponential_mechanism
        return exponential_mechanism(scores, self.temperature(epsilon, sensitivity), rng, self.tie_breaking)

    def log_probabilities(self, scores, epsilon, sensitivity):
        from dpcheck.algorithms.gfa.mechanism import selection_log_probabilities
        return selection_log_probabilities(scores, self.temperature(epsilon, sensitivity))

    def __repr__(self) -> str:
        return f"ExponentialMechanism(tie_breaking={self.tie_breaking!r})"


class RecordingMechanism(SelectionMechanism):
    """Delegates to ``inner`` and records every call's scores and epsilon (``calls``), the state of the
    generator it was handed (``rng_states``: composition over the M updates needs fresh randomness at each,
    Section 3.3) and what it returned (``returns``) (checker side: the audits read what really enters and
    leaves the selection, :mod:`dpcheck.audits.lib.gfa`)."""

    def __init__(self, inner: SelectionMechanism):
        self.inner = inner
        self.name = getattr(inner, "name", "selection")
        self.utility_constant = getattr(inner, "utility_constant", 2.0)
        self.calls: list = []
        self.rng_states: list = []
        self.rng_drew: list = []       # whether the call consumed randomness (its generator moved)
        self.returns: list = []

    def select(self, scores, epsilon, sensitivity, rng):
        self.calls.append((np.array(scores, dtype=np.float64, copy=True), float(epsilon), float(sensitivity)))
        bg = getattr(rng, "bit_generator", None)
        before = None if bg is None else repr(bg.state)
        self.rng_states.append(before)
        out = self.inner.select(scores, epsilon, sensitivity, rng)
        self.rng_drew.append(before is not None and repr(bg.state) != before)
        self.returns.append(np.array(out, copy=True))
        return out

    def log_probabilities(self, scores, epsilon, sensitivity):
        return self.inner.log_probabilities(scores, epsilon, sensitivity)

    def dp_event(self, epsilon, sensitivity):
        return self.inner.dp_event(epsilon, sensitivity)


# --------------------------------------------------------------------------------------------- plug-ins
BUILTIN = {"exponential": ExponentialMechanism}


class GuardedSelection(SelectionMechanism):
    """Delegates to a user's mechanism: its exceptions become :class:`dpcheck.MechanismError` naming it, and
    every ``select`` is validated (shape (runs,), integer indices in [0, N)); ``log_probabilities`` too
    (shape (runs, N), a distribution per row)."""

    def __init__(self, inner: SelectionMechanism, label: str):
        self.inner, self.label = inner, label
        self.name = str(getattr(inner, "name", type(inner).__name__))
        self.utility_constant = float(getattr(inner, "utility_constant", 2.0))

    def _call(self, what, fn, *a):
        from dpcheck.loading import call_plugin
        return call_plugin(f"selection mechanism {self.label!r}", what, fn, *a)

    def _bad(self, msg):
        from dpcheck.errors import MechanismError
        return MechanismError(f"selection mechanism {self.label!r}: {msg}")

    def select(self, scores, epsilon, sensitivity, rng):
        scores = np.asarray(scores, dtype=np.float64)
        out = self._call("select", self.inner.select, scores, float(epsilon), float(sensitivity), rng)
        out = np.asarray(out)
        runs, N = scores.shape
        if out.shape != (runs,):
            raise self._bad(f"select() returned shape {out.shape}, expected ({runs},) (one index per run)")
        if out.dtype.kind == "f":
            if not np.all(np.isfinite(out)):
                raise self._bad("select() returned NaN or infinity")
            if not np.all(out == np.round(out)):
                raise self._bad("select() returned non-integer indices")
        elif out.dtype.kind not in "iu":
            raise self._bad(f"select() returned {out.dtype} values, expected integer indices")
        out = out.astype(np.int64)
        if runs and (out.min() < 0 or out.max() >= N):
            raise self._bad(f"select() returned index {int(out.min() if out.min() < 0 else out.max())} "
                            f"outside [0, {N})")
        return out

    def log_probabilities(self, scores, epsilon, sensitivity):
        scores = np.asarray(scores, dtype=np.float64)
        out = self._call("log_probabilities", self.inner.log_probabilities, scores, float(epsilon),
                         float(sensitivity))
        if out is None:
            return None
        out = np.asarray(out, dtype=np.float64)
        if out.shape != scores.shape:
            raise self._bad(f"log_probabilities() returned shape {out.shape}, expected {scores.shape}")
        if np.any(np.isnan(out)) or np.any(np.abs(np.exp(out).sum(axis=1) - 1) > 1e-6):
            raise self._bad("log_probabilities() is not a log-distribution per row (NaN, or rows not summing to 1)")
        return out

    def dp_event(self, epsilon, sensitivity):
        return self._call("dp_event", self.inner.dp_event, float(epsilon), float(sensitivity))

    def __repr__(self):
        return f"Guarded({self.label})"


def probe(mech: SelectionMechanism, label: str) -> None:
    """Refuse, with one line, a mechanism that is not a function of (scores, rng): two generators with the
    same seed must give the same selections (else it draws from a source other than ``rng``), and
    generators with different seeds must not always agree on a flat score vector (else it ignores ``rng``:
    a deterministic selection cannot be eps-DP for finite eps)."""
    from dpcheck.loading import probe_rng_use
    flat = np.zeros((256, 4))
    spread = np.broadcast_to(np.linspace(0.0, 1.0, 4), (256, 4))
    nondeterministic = (f"selection mechanism {label!r}: select() is not deterministic given the rng "
                        "(two generators with the same seed gave different selections): all randomness "
                        "must come from the rng passed in")
    # equal selections for two seeds condemn only a constant selection (one entry in every run on equal scores)
    probe_rng_use(lambda rng: mech.select(flat, 1.0, 1.0, rng), (12345, 54321), nondeterministic=nondeterministic,
                  conclusive=lambda sel: np.unique(sel).size == 1,
                  ignores=f"selection mechanism {label!r}: select() ignores the rng (the same selection for "
                  "every generator and every run on equal scores): a deterministic selection is not "
                  "differentially private")
    probe_rng_use(lambda rng: mech.select(spread, 1.0, 1.0, rng), (12345, 54321), nondeterministic=nondeterministic,
                  ignores=None)


def load_selection_mechanism(spec=None, *, tie_breaking: str = "random") -> SelectionMechanism:
    """The mechanism for a name ("exponential", the default), a ``file.py:Class`` / ``pkg.module:Class`` spec,
    a class, or an instance. User classes are checked (a subclass of :class:`SelectionMechanism`, or at
    least a ``select``), instantiated with no arguments, probed (:func:`probe`) and wrapped in
    :class:`GuardedSelection`."""
    from dpcheck.errors import MechanismError
    if spec is None or (isinstance(spec, str) and spec.strip().lower() in BUILTIN):
        return ExponentialMechanism(tie_breaking)
    if isinstance(spec, SelectionMechanism) and type(spec).__module__.startswith("dpcheck.algorithms."):
        return spec
    if isinstance(spec, GuardedSelection):
        return spec
    if isinstance(spec, str):
        from dpcheck.loading import check_plugin_spec, load_object
        check_plugin_spec(spec, "selection mechanism", "exponential", "learner (argmax, Remark 3.7)")
        cls, label = load_object(spec, "selection mechanism", import_error=MechanismError), spec
    elif isinstance(spec, type):
        cls, label = spec, spec.__name__
    else:
        cls, label = None, type(spec).__name__
    if cls is not None:
        if not isinstance(cls, type):
            raise InputError(f"selection mechanism {label!r} is not a class")
        if not callable(getattr(cls, "select", None)):
            raise InputError(f"selection mechanism {label!r} does not implement select(scores, epsilon, "
                             f"sensitivity, rng) (subclass dpcheck.algorithms.gfa.SelectionMechanism; see "
                             f"docs/privatizers.md)")
        if getattr(getattr(cls, "select", None), "__isabstractmethod__", False):
            raise InputError(f"selection mechanism {label!r} does not implement select(scores, epsilon, "
                             f"sensitivity, rng)")
        from dpcheck.loading import call_plugin
        obj = call_plugin(f"selection mechanism {label!r}", "its constructor", cls)
    else:
        obj = spec
    guarded = GuardedSelection(obj, label)
    probe(guarded, label)
    return guarded
