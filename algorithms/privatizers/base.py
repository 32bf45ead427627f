"""The count-privatizer interface of DP-UCBVI and DP-Nash-VI (Qiao & Wang 2023, Section 5, Qiao & Wang 2024, Section 5).

A privatizer turns the trajectories of K users (one episode each, ``runs`` independent Monte-Carlo
runs side by side) into private counts that the planner may read: ``N~_h^k(s,a)``, ``N~_h^k(s,a,s')``
and ``R~_h^k(s,a)``. It declares its privacy as data (``claim``, ``dp_event()``) and its accuracy as
the public width ``E`` of Assumption 3.1.

What a researcher implements (see docs/privatizers.md for a complete example). Subclass
:class:`CountPrivatizer` and provide

* ``name`` (class attribute) and ``notion`` ("JDP" or "LDP");
* ``_start_noise(rng)``: set up the noise state once the sizes are known (``self.runs, H, S, A, K,
  families, scale`` are set; ``rng`` is the only source of randomness allowed);
* ``_ingest(visits, transitions, rewards)``: one episode per run as one-hot increments
  ``(runs,H,S,A)``, ``(runs,H,S,A,S)`` and reward increments ``(runs,H,S,A)`` (or None);
* ``_noisy_counts()`` -> ``(N^ visits (runs,H,S,A), N^ transitions (runs,H,S,A,S), R~ or None)``;
* ``_compute_width()`` -> E (data-independent; called in ``start`` before any data);
* ``dp_event(neighbouring="replacement")`` -> a dp_accounting DpEvent describing the noise actually
  drawn (noise family, scale, sensitivity, number of compositions);
* ``claim`` -> the :class:`dpcheck.Claim` the privatizer promises (with its source).

The base class does the rest: argument validation, the true counts (kept for checkers only), the
post-processing LP (``release``), and the ``PrivateCounts`` record. A class that overrides the public
methods ``start/observe/release`` directly is accepted too, as long as it has every member listed in
:data:`INTERFACE`.

Calibrations (docs/derivations.md#neighbouring-relation): ``"paper"`` uses the paper's sensitivity
``H`` per family (add/remove one user), so under the replacement relation of the papers' definitions
it certifies only ``2 eps``; ``"strict"`` (our default, so that the default claim holds) doubles the
noise scales and certifies ``eps`` under replacement.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Callable

import numpy as np

from dpcheck.errors import InputError

CALIBRATIONS = ("paper", "strict")
INTERFACE = ("start", "observe", "release", "width", "claim", "dp_event", "true_counts")


@dataclass(frozen=True)
class PrivateCounts:
    """What the planner may read after episode k (the N~, R~ of Qiao & Wang 2023 / 2024), batched over runs.

    visits:            N~_h(s,a)        (runs, H, S, A)
    transitions:       N~_h(s,a,s')     (runs, H, S, A, S);  visits = transitions.sum(-1)
    rewards:           R~_h(s,a)        (runs, H, S, A) or None (games: known rewards)
    noisy_visits:      N^_h(s,a) before post-processing
    noisy_transitions: N^_h(s,a,s') before post-processing
    width:             E (public)
    """

    visits: np.ndarray
    transitions: np.ndarray
    rewards: np.ndarray | None
    noisy_visits: np.ndarray
    noisy_transitions: np.ndarray
    width: float

    @property
    def kernel(self) -> np.ndarray:
        """P~_h(s'|s,a) = N~(s,a,s') / N~(s,a)   (runs, H, S, A, S) (eq. 1)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.transitions / self.visits[..., None]


@dataclass(frozen=True)
class TrueCounts:
    """The raw counts N, N(s,a,s'), R (runs, H, S, A[, S]); for checkers only, never for planning."""

    visits: np.ndarray
    transitions: np.ndarray
    rewards: np.ndarray | None


def flatten_counts(visits, transitions, rewards=None) -> np.ndarray:
    """The three count families as one vector per run: (runs, H S A + H S^2 A [+ H S A]).

    The layout of a Local message and of a release as an auditor sees it."""
    visits = np.asarray(visits)
    runs = visits.shape[0]
    parts = [visits.reshape(runs, -1), np.asarray(transitions).reshape(runs, -1)]
    if rewards is not None:
        parts.append(np.asarray(rewards).reshape(runs, -1))
    return np.concatenate(parts, axis=1)


NEIGHBOURINGS = ("replacement", "add_remove")

NOISE_PROCESSES = ("exact", "tree", "sum")


@dataclass(frozen=True)
class CompiledNoise:
    """How an engine that runs the episodes itself (the compiled DP-UCBVI engine,
    algorithms/online/compiled.py) reproduces a privatizer bit for bit: which noise process its
    release follows, and its noise (docs/privatizers.md "The compiled engine's seam").

    Per run, the counters are laid out ``[visits (HSA) | transitions (HSA S) | rewards (HSA)]``
    (C = H S A (S + 2) entries); ``z_t`` is episode t's one-hot increment in that layout and ``w_t``
    the noise vector the privatizer draws for it. ``process`` says what ``N^`` is after t episodes:

    * ``"exact"``: ``N^ = z_1 + ... + z_t``, released as it is (no LP); no noise (``draw`` is None);
    * ``"tree"``:  the binary mechanism (Chan, Shi & Song 2011, Algorithm 2, in the lazy form of
      :class:`BinaryMechanism`): episode t completes one node, whose noise is ``w_t``; ``N^ = B(t)``;
      the state travels as ``export_state()["tree"]``;
    * ``"sum"``:   ``N^ = (z_1 + w_1) + ... + (z_t + w_t)``: every episode's message carries fresh
      noise (the local randomiser); the state travels as ``noisy_visits / noisy_transitions /
      noisy_rewards`` of ``export_state()``;

    and the planner reads :meth:`CountPrivatizer.release` of it (the consistency LP (docs/derivations.md#readings) at the width E).

    draw: ``draw(out)`` fills ``out`` (n, runs, C) (possibly a strided view) with ``w`` of the next n
          episodes, from the privatizer's own noise stream, consuming it exactly as n calls of
          ``observe`` would (so the two engines see the same numbers).
    """

    process: str
    draw: Callable[[np.ndarray], None] | None = None

    def __post_init__(self):
        if self.process not in NOISE_PROCESSES:
            raise InputError(f"CompiledNoise.process must be one of {NOISE_PROCESSES}, got {self.process!r}")
        if (self.draw is None) != (self.process == "exact"):
            raise InputError("CompiledNoise: a noisy process needs draw(out); 'exact' draws nothing")


class ScratchBuffer:
    """One reusable float64 buffer: ``get(shape)`` is a C-contiguous array of that shape on memory kept
    across calls (a fresh multi-MB array per chunk of episodes costs more in page faults than the draws)."""

    def __init__(self):
        self._flat = np.empty(0)

    def get(self, shape) -> np.ndarray:
        size = int(np.prod(shape, dtype=np.int64))
        if self._flat.size < size:
            self._flat = np.empty(size)
        return self._flat[:size].reshape(shape)


@dataclass(frozen=True)
class Declaration:
    """What a privatizer promises for K users of an (H, S, A) model, from its parameters and the sizes
    alone (privacy as data, as dp_accounting describes noise; :meth:`CountPrivatizer.declare`).

    claim:       the :class:`dpcheck.Claim` (None for the non-private baseline).
    width:       E of Assumption 3.1 (public, data-independent); None when it is a Monte-Carlo quantile
                 (``width_mode="calibrated"``) and no rng was given.
    event:       ``event(neighbouring)`` -> the dp_accounting DpEvent of the noise drawn, under
                 "replacement" or "add_remove" (:meth:`dp_event`).
    scale:       the noise scale every noisy coordinate is drawn with (Laplace b, Gaussian sigma), if one.
    sensitivity: l1 (l2 for Gaussian noise) change of one family's noisy vector when one user is
                 replaced, the sensitivity ``scale`` is calibrated against, if one.
    """

    claim: object
    width: float | None
    event: Callable[[str], object]
    scale: float | None = None
    sensitivity: float | None = None

    def dp_event(self, neighbouring: str = "replacement"):
        return self.event(neighbouring)


def declare_by_starting(p, H: int, S: int, A: int, K: int, rewards: bool = True, rng=None) -> Declaration:
    """The plug-in fallback of ``declare``: start a copy of ``p`` (one run, nothing observed) and read
    its claim, ``dp_event(neighbouring)`` and width. For a privatizer that cannot declare without
    running (a user's class that does not implement ``declare``); ``p`` itself is never touched."""
    q = copy.deepcopy(p)
    q.start(1, H, S, A, K, rng if rng is not None else np.random.default_rng(0), rewards=rewards)
    return Declaration(claim=q.claim, width=q.width, event=q.dp_event)


def _positive_int(name, v) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or int(v) < 1:
        raise InputError(f"{name} must be a positive integer, got {v!r}")
    return int(v)


def _episode_index(states, actions, rewards, S: int, A: int, with_rewards: bool = True):
    """Validated flat indices of one episode per run (the sparse form of :func:`episode_increments`).

    Returns (runs, H, sa, s2, rw): ``sa`` (runs*H,) flat index into (runs,H,S,A) of every (run, h)
    visit, in (run, h) order, ``s2`` (runs*H,) the next states, ``rw`` (runs*H,) float rewards or None.
    Within a run every h gives a distinct index, so ``x.reshape(-1)[sa] += 1`` adds each visit once.
    """
    st = np.asarray(states)
    ac = np.asarray(actions)
    if st.ndim != 2 or ac.ndim != 2 or st.shape[0] != ac.shape[0] or st.shape[1] != ac.shape[1] + 1:
        raise InputError(f"states must be (runs, H+1) and actions (runs, H); got {st.shape} and {ac.shape}")
    if st.dtype.kind not in "iu" or ac.dtype.kind not in "iu":
        if not (np.all(np.mod(st, 1) == 0) and np.all(np.mod(ac, 1) == 0)):
            raise InputError("states and actions must be integer indices")
        st, ac = st.astype(np.int64), ac.astype(np.int64)
    if st.size and (st.min() < 0 or st.max() >= S):
        raise InputError(f"states must lie in [0, {S}), got values in [{st.min()}, {st.max()}]")
    if ac.size and (ac.min() < 0 or ac.max() >= A):
        raise InputError(f"actions must lie in [0, {A}), got values in [{ac.min()}, {ac.max()}]")
    runs, H = ac.shape
    rh = np.arange(runs * H, dtype=np.int64).reshape(runs, H)   # run * H + h
    sa = ((rh * S + st[:, :H]) * A + ac).ravel()
    s2 = st[:, 1:].ravel().astype(np.int64, copy=False)
    rw = None
    if with_rewards:
        if rewards is None:
            raise InputError("this privatizer was started with rewards=True; observe() needs rewards")
        rw = np.asarray(rewards, dtype=float)
        if rw.shape != ac.shape:
            raise InputError(f"rewards must have shape {ac.shape} (runs, H), got {rw.shape}")
        if not np.all((rw >= 0) & (rw <= 1)):
            raise InputError("rewards must lie in [0, 1] (the privatizers' sensitivity assumes it)")
        rw = rw.ravel()
    return runs, H, sa, s2, rw


def _dense_increments(runs, H, S, A, sa, s2, rw):
    visits = np.zeros((runs, H, S, A))
    visits.reshape(-1)[sa] = 1.0
    trans = np.zeros((runs, H, S, A, S))
    trans.reshape(-1)[sa * S + s2] = 1.0
    rew = None
    if rw is not None:
        rew = np.zeros((runs, H, S, A))
        rew.reshape(-1)[sa] = rw
    return visits, trans, rew


def episode_increments(states, actions, rewards, S: int, A: int, with_rewards: bool = True):
    """One-hot increments of one episode per run.

    states (runs, H+1) ints in [0,S); actions (runs, H) ints in [0,A); rewards (runs, H) in [0,1] or None.
    Returns visits (runs,H,S,A), transitions (runs,H,S,A,S), rewards (runs,H,S,A) or None.
    """
    runs, H, sa, s2, rw = _episode_index(states, actions, rewards, S, A, with_rewards)
    return _dense_increments(runs, H, S, A, sa, s2, rw)


class PaperSources:
    """``source`` / ``source_for(rewards)`` of a built-in privatizer that two papers use: DP-UCBVI (Qiao & Wang
    2023, rewards privatised) and DP-Nash-VI (Qiao & Wang 2024, no rewards). ``SOURCES = {rewards: source}``."""

    SOURCES: dict = {}

    @property
    def source(self) -> str:
        return self.source_for(getattr(self, "rewards", True))

    @classmethod
    def source_for(cls, rewards: bool) -> str:
        return cls.SOURCES[bool(rewards)]


class CountPrivatizer:
    """Base class of count privatizers: stores configuration; ``start`` sizes it; ``observe`` /
    ``release`` do the work (scikit-learn style: the constructor does no computation).

    epsilon:     privacy budget, > 0 and finite.
    beta:        failure probability of the utility statements, in (0, 1); E makes Assumption 3.1
                 hold with probability >= 1 - beta/3.
    calibration: "paper" (sensitivity H per family: eps under add/remove, 2 eps under replacement)
                 or "strict" (sensitivity 2H: eps under replacement). Default "strict".
    width_mode:  "rigorous" (default), "calibrated" or "nominal" (width.py).
    """

    name = "custom"
    notion = "JDP"
    source = ""

    def __init__(self, epsilon: float = 1.0, beta: float = 0.1, calibration: str = "strict",
                 width_mode: str = "rigorous"):
        from dpcheck.algorithms.privatizers.width import WIDTH_MODES
        from dpcheck.options import parse_epsilon
        eps = parse_epsilon(epsilon, "epsilon")
        try:
            b = float(beta)
        except (TypeError, ValueError):
            raise InputError(f"beta must be a number, got {beta!r}") from None
        if not 0 < b < 1:
            raise InputError(f"beta must lie in (0, 1), got {beta!r}")
        if calibration not in CALIBRATIONS:
            raise InputError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}")
        if width_mode not in WIDTH_MODES:
            raise InputError(f"width_mode must be one of {WIDTH_MODES}, got {width_mode!r}")
        self.epsilon = eps
        self.beta = b
        self.calibration = calibration
        self.width_mode = width_mode
        self._started = False

    # -- configuration -------------------------------------------------------------------
    def get_params(self) -> dict:
        return {"epsilon": self.epsilon, "beta": self.beta, "calibration": self.calibration,
                "width_mode": self.width_mode}

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    @property
    def sensitivity_factor(self) -> int:
        """Per-family l1 sensitivity in units of H the noise is calibrated to: 1 (paper) or 2 (strict)."""
        return 2 if self.calibration == "strict" else 1

    # -- lifecycle -----------------------------------------------------------------------
    def start(self, runs: int, H: int, S: int, A: int, K: int, rng: np.random.Generator,
              rewards: bool = True) -> "CountPrivatizer":
        """Size the privatizer for ``runs`` independent runs of K episodes of an (H, S, A) model.

        ``A`` is the number of (joint) actions: games pass ``A * B`` and ``rewards=False`` (two
        stream families, so each family gets eps/2 instead of eps/3). Computes E before any data.
        """
        self.runs = _positive_int("runs", runs)
        self.H = _positive_int("H", H)
        self.S = _positive_int("S", S)
        self.A = _positive_int("A", A)
        self.K = _positive_int("K", K)
        if not isinstance(rng, np.random.Generator):
            raise InputError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        self.rewards = bool(rewards)
        self.families = 3 if self.rewards else 2
        self.rng = rng
        self.episodes = 0
        shape = (self.runs, self.H, self.S, self.A)
        self._N = np.zeros(shape)
        self._Ntr = np.zeros(shape + (self.S,))
        self._R = np.zeros(shape) if self.rewards else None
        self._started = True
        self._start_noise(rng)
        self._width = float(self._compute_width())
        return self

    def _require_started(self):
        if not self._started:
            raise InputError(f"{type(self).__name__}: call start(runs, H, S, A, K, rng) first")

    @property
    def width(self) -> float:
        """E: public, data-independent confidence width (docs/derivations.md#widths-e), floored at 1 for private ones."""
        self._require_started()
        return self._width

    def observe(self, states, actions, rewards=None) -> None:
        """Ingest one episode per run: states (runs, H+1), actions (runs, H), rewards (runs, H) or None."""
        self._require_started()
        if self.episodes >= self.K:
            raise InputError(f"{type(self).__name__}: observed more than K={self.K} episodes")
        st = np.asarray(states)
        if st.ndim != 2 or st.shape != (self.runs, self.H + 1):
            raise InputError(f"states must have shape (runs, H+1) = ({self.runs}, {self.H + 1}), got {st.shape}")
        runs, H, sa, s2, rw = _episode_index(states, actions, rewards, self.S, self.A, self.rewards)
        # indexed adds, not dense one-hot arrays: x + 0 is x exactly, so the counts are the same
        sas = sa * self.S + s2
        self._N.reshape(-1)[sa] += 1.0
        self._Ntr.reshape(-1)[sas] += 1.0
        if self.rewards:
            self._R.reshape(-1)[sa] += rw
        self.episodes += 1
        if not self._ingest_sparse(sa, sas, rw):
            self._ingest(*_dense_increments(runs, H, self.S, self.A, sa, s2, rw))

    def release(self) -> PrivateCounts:
        """Private counts for the next episode: N^ from the noise process, then the Section 5.1.1 LP
        (:meth:`post_processed`)."""
        self._require_started()
        nv, nt, rw = self._noisy_counts()
        return self.post_processed(nv, nt, rw)

    def post_processed(self, noisy_visits, noisy_transitions, rewards=None) -> PrivateCounts:
        """The release of given N^ (visits (runs,H,S,A), transitions (runs,H,S,A,S)) and R~: the Section 5.1.1
        LP with band E/4, then the shifts E/(2S) and E/2 at this privatizer's width E. What :meth:`release`
        returns for the N^ of the noise process; a checker feeds it N^ of its choosing (Lemma 5.4's adversarial
        inputs: audits/lib/privatizers/post_processing.py)."""
        from dpcheck.algorithms.privatizers.projection import _post_process
        self._require_started()
        pp = _post_process(noisy_transitions, noisy_visits, self.width, with_value=False)  # t* is not released
        return PrivateCounts(visits=pp.visits, transitions=pp.transitions, rewards=rewards,
                             noisy_visits=noisy_visits, noisy_transitions=noisy_transitions, width=self.width)

    def true_counts(self) -> TrueCounts:
        """The raw counts so far (checkers only; the planner must never read them)."""
        self._require_started()
        return TrueCounts(visits=self._N.copy(), transitions=self._Ntr.copy(),
                          rewards=None if self._R is None else self._R.copy())

    # -- state export / import (the compiled engine, algorithms/online/compiled.py) -------------------
    def export_state(self) -> dict:
        """A copy of everything accumulated so far, as plain arrays: ``episodes``, the true counts
        ``visits`` (runs,H,S,A), ``transitions`` (runs,H,S,A,S), ``rewards`` (runs,H,S,A) or None,
        plus the noise state of the subclass (:meth:`_export_noise`). An engine that runs the episodes
        elsewhere (the compiled one) starts from this and hands the result back with :meth:`import_state`.
        """
        self._require_started()
        state = {"episodes": self.episodes, "visits": self._N.copy(), "transitions": self._Ntr.copy(),
                 "rewards": None if self._R is None else self._R.copy()}
        state.update(self._export_noise())
        return state

    def import_state(self, state: dict) -> None:
        """Continue from ``state`` (the form :meth:`export_state` gives, same shapes): afterwards the
        privatizer is where it would be had it observed the episodes that produced ``state`` itself.
        The noise stream (``self.rng``) is not part of the state: the engine draws from it directly."""
        self._require_started()
        episodes = int(state["episodes"])
        if not 0 <= episodes <= self.K:
            raise InputError(f"{type(self).__name__}.import_state: episodes={episodes} outside 0..K={self.K}")
        self._N[...] = state["visits"]
        self._Ntr[...] = state["transitions"]
        if self._R is not None:
            self._R[...] = state["rewards"]
        self.episodes = episodes
        self._import_noise(state)

    def _export_noise(self) -> dict:
        """The noise state as extra entries of :meth:`export_state` (none: a privatizer without any)."""
        return {}

    def _import_noise(self, state: dict) -> None:
        """Restore what :meth:`_export_noise` exported."""

    def compiled_noise(self) -> CompiledNoise | None:
        """The started privatizer's noise in the form an engine that runs the episodes itself consumes
        (:class:`CompiledNoise`), or None: the engine then runs the Python path (``observe`` /
        ``release`` every episode). None here; the built-ins return theirs while their class
        overrides nothing the plan stands for (:meth:`_runs_as`)."""
        return None

    def _runs_as(self, owner: type, names=()) -> bool:
        """Does this object still behave as ``owner`` on the Python path? True unless its class overrides
        one of ``owner``'s own members, the base's lifecycle (start / observe / release / state
        export), or ``names``: then a compiled plan of ``owner``'s would not be its behaviour."""
        cls = type(self)
        if cls is owner:
            return True
        members = [k for k in vars(owner) if not k.startswith("__") and k != "compiled_noise"]
        members += ["start", "observe", "release", "width", "export_state", "import_state", "_ingest",
                    "_ingest_sparse", "_noisy_counts", "_export_noise", "_import_noise", *names]
        return all(getattr(cls, k, None) is getattr(owner, k, None) for k in members)

    # -- declared privacy ----------------------------------------------------------------
    def declare(self, H: int, S: int, A: int, K: int, rewards: bool = True, *, rng=None) -> Declaration:
        """Claim, DpEvent and width E for K users of an (H, S, A) model, from the parameters and the sizes,
        without running: what ``start`` would give (``rng`` is only for ``width_mode="calibrated"``,
        whose E is a Monte-Carlo quantile). The built-ins compute it (and ``start`` reads its width
        from the same computation); here, for a subclass that does not, it is the plug-in fallback
        :func:`declare_by_starting` (a started copy)."""
        return declare_by_starting(self, H, S, A, K, rewards, rng)

    def _declares_itself(self, owner: type) -> bool:
        """Is ``owner.declare`` (a built-in's) valid for this object? Only if its class overrides none of
        what the declaration is computed from (``owner``'s own members, the claim, dp_event, width);
        a subclass that does falls back to :func:`declare_by_starting`, so the two cannot disagree."""
        cls = type(self)
        if cls is owner:
            return True
        names = [k for k in vars(owner) if not k.startswith("__")]
        names += ["claim", "dp_event", "sensitivity_factor", "start", "_compute_width", "width"]
        return all(getattr(cls, k, None) is getattr(owner, k, None) for k in names)

    @property
    def claim(self):
        raise NotImplementedError(self._missing("claim", "a property returning the dpcheck.Claim promised"))

    def dp_event(self, neighbouring: str = "replacement"):
        raise NotImplementedError(self._missing("dp_event(neighbouring)", "the dp_accounting DpEvent of the noise drawn"))

    # -- hooks ---------------------------------------------------------------------------
    def _start_noise(self, rng):
        raise NotImplementedError(self._missing("_start_noise(rng)", "set up the noise state"))

    def _ingest_sparse(self, sa, sas, rewards) -> bool:
        """Optional fast form of ``_ingest``: flat indices ``sa`` into (runs,H,S,A) and ``sas`` into
        (runs,H,S,A,S) of this episode's visits (each +1), rewards (runs*H,) at ``sa`` or None.
        Return True if consumed; False (the default) makes ``observe`` call ``_ingest`` with the
        dense one-hot arrays. Must give exactly what ``_ingest`` would."""
        return False

    def _ingest(self, visits, transitions, rewards):
        raise NotImplementedError(self._missing("_ingest(visits, transitions, rewards)", "consume one episode"))

    def _noisy_counts(self):
        raise NotImplementedError(self._missing("_noisy_counts()", "return N^ visits, N^ transitions, R~"))

    def _compute_width(self) -> float:
        raise NotImplementedError(self._missing("_compute_width()", "return the public width E"))

    def _missing(self, hook: str, what: str) -> str:
        # a user's subclass that forgets a hook should hear which one (the loader names the class)
        return (f"{type(self).__name__} does not implement {hook} ({what}); "
                f"see docs/privatizers.md")


def _check_neighbouring(neighbouring: str) -> int:
    """Multiplier of the per-family sensitivity H: 2 under replacement, 1 under add/remove."""
    if neighbouring not in ("replacement", "add_remove"):
        raise InputError("neighbouring must be 'replacement' or 'add_remove'")
    return 2 if neighbouring == "replacement" else 1
