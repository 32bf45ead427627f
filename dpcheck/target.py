"""AuditTarget: a user's mechanism with the neighbouring inputs to test (the contract of ``dpcheck audit path.py:NAME``)."""
from __future__ import annotations

import math
import signal
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from dpcheck.claims import Claim
from dpcheck.errors import InputError, MechanismError


class MechanismTimeout(MechanismError):
    """A call of a user's mechanism did not return within ``AuditTarget.timeout`` seconds."""


class _Deadline(BaseException):
    """Raised inside the mechanism by the alarm. A BaseException, so that a mechanism's own
    ``except Exception`` does not swallow it (and the alarm repeats every second until it gets out)."""


def call_with_deadline(fn: Callable[[], Any], seconds: float | None, what: str) -> Any:
    """``fn()``, stopped after ``seconds`` with MechanismTimeout (None or inf: no limit).

    In the main thread of a process (the CLI with --workers 1, and every joblib/loky worker, which
    runs its tasks in its main thread) a SIGALRM timer interrupts the call: pure-Python and
    interruptible waits (sleep, locks, I/O) stop; a single C call that never returns to the
    interpreter (one huge numpy operation) stops when it returns. Elsewhere (a dask worker
    thread, Windows) the call runs in a helper thread that is abandoned at the deadline.
    """
    if seconds is None or seconds == math.inf:
        return fn()
    msg = (f"{what} did not return within the timeout of {seconds:g} s; "
           "raise it with --timeout SECONDS (or --timeout off), or make the mechanism faster")
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
        state = {"armed": True}

        def on_alarm(signum, frame):
            if state["armed"]:
                raise _Deadline()

        prev_timer = signal.getitimer(signal.ITIMER_REAL)
        prev_handler = signal.signal(signal.SIGALRM, on_alarm)
        t0 = time.monotonic()
        timed_out = False
        try:
            signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)
            try:
                out = fn()
            finally:
                state["armed"] = False          # an alarm after this line is ignored
        except _Deadline:
            timed_out = True
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, prev_handler)
            if prev_timer[0] > 0:               # give back a timer someone else had set (pytest-timeout, say)
                signal.setitimer(signal.ITIMER_REAL, max(prev_timer[0] - (time.monotonic() - t0), 1e-3),
                                 prev_timer[1])
        if timed_out:
            raise MechanismTimeout(msg)
        return out
    box: dict = {}

    def work():
        try:
            box["out"] = fn()
        except BaseException as e:  # handed to the caller below
            box["err"] = e

    th = threading.Thread(target=work, daemon=True, name="dpcheck-mechanism")
    th.start()
    th.join(seconds)
    if th.is_alive():
        raise MechanismTimeout(msg + " (the call was abandoned in a background thread)")
    if "err" in box:
        raise box["err"]
    return box["out"]


@dataclass(frozen=True)
class PairSearch:
    """Where and how hard to look for the worst neighbouring pair.

    domain:     ``domain(rng) -> (D, D')`` drawing one candidate pair from a numpy Generator, or a
                hypothesis strategy of (D, D') tuples (explored by hypothesis with its ``target()``
                guidance towards a larger estimated loss, from a seed derived from the audit's).
    candidates: how many candidate pairs to estimate (default 64).
    samples:    outputs per input of each candidate (default 2,000): the search's budget is
                ``2 x candidates x samples`` outputs, on top of the audit's ``--samples``.
    keep:       how many of the best candidates join the audited pairs (default 1; every extra pair
                splits alpha further).
    """

    domain: Any
    candidates: int = 64
    samples: int = 2000
    keep: int = 1

    def __post_init__(self):
        if not (callable(self.domain) or _is_strategy(self.domain)):
            raise InputError("PairSearch.domain must be a function domain(rng) -> (D, D') or a hypothesis "
                             f"strategy of (D, D') pairs, got {type(self.domain).__name__}")
        for name, lo in (("candidates", 1), ("samples", 20), ("keep", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
                raise InputError(f"PairSearch.{name} must be an integer >= {lo}, got {v!r}")
        if self.keep > self.candidates:
            raise InputError(f"PairSearch.keep ({self.keep}) exceeds candidates ({self.candidates})")

    def describe(self) -> str:
        kind = "hypothesis strategy" if _is_strategy(self.domain) else getattr(self.domain, "__name__", "function")
        return (f"{self.candidates} candidate pairs from {kind}, {self.samples} outputs per side each, "
                f"best {self.keep} kept")


def _is_strategy(x) -> bool:
    try:
        from hypothesis.strategies import SearchStrategy
    except ImportError:                  # pragma: no cover - hypothesis is a dependency
        return False
    return isinstance(x, SearchStrategy)



@dataclass(frozen=True)
class AuditTarget:
    """A mechanism to audit.

    mechanism(data, rng, size) returns ``size`` independent outputs stacked on
    axis 0 (numbers, vectors or discrete labels), drawing all randomness from
    ``rng``. A mechanism that produces one output per call (diffprivlib's
    ``randomise``, say) can be given with ``per_call=True`` or wrapped with
    :meth:`from_single`; dpcheck then loops for you.
    pairs: neighbouring inputs (D, D'); both directions are tested.
    claim: the promised guarantee.
    output: "auto", "continuous" (real scalars / vectors) or "discrete" (labels).
    timeout: seconds one call of ``sample`` (one chunk of outputs) may take before it is stopped
             with MechanismTimeout; None (the default for a target built in code) means no limit.
             ``dpcheck audit path.py:NAME`` sets it from --timeout (default 600 s).
    search:  a :class:`dpcheck.PairSearch` (a domain of neighbouring pairs): the audit also certifies
             the pair(s) it finds with the largest estimated privacy loss (docs/input_search.md);
             ``pairs`` may then be empty.
    """

    name: str
    mechanism: Callable[..., Any]
    pairs: Sequence[tuple[Any, Any]]
    claim: Claim
    output: str = "auto"
    per_call: bool = False
    timeout: float | None = None
    search: Any = None

    def __post_init__(self):
        if not isinstance(self.claim, Claim):
            raise InputError(f"target {self.name!r}: claim must be a dpcheck.Claim, got {type(self.claim).__name__}")
        if not callable(self.mechanism):
            raise InputError(f"target {self.name!r}: mechanism is not callable")
        pairs = list(self.pairs)
        if self.search is not None and not isinstance(self.search, PairSearch):
            raise InputError(f"target {self.name!r}: search must be a dpcheck.PairSearch, got {type(self.search).__name__}")
        if not pairs and self.search is None:
            raise InputError(f"target {self.name!r}: needs at least one neighbouring pair (or a PairSearch)")
        for i, p in enumerate(pairs):
            if not (isinstance(p, (tuple, list)) and len(p) == 2):
                raise InputError(f"target {self.name!r}: pair {i} is not a (D, D') pair")
            if same_input(*p):
                raise InputError(f"target {self.name!r}: pair {i} has D == D' (equal, of the same type): no output "
                                 "can tell them apart, so an audit of it shows nothing; give neighbouring inputs "
                                 "that differ")
        object.__setattr__(self, "pairs", [tuple(p) for p in pairs])
        if self.output not in ("auto", "continuous", "discrete"):
            raise InputError("output must be 'auto', 'continuous' or 'discrete'")
        if self.timeout is not None and not (isinstance(self.timeout, (int, float)) and self.timeout > 0):
            raise InputError(f"target {self.name!r}: timeout must be a number of seconds > 0, got {self.timeout!r}")

    @classmethod
    def from_single(cls, name, single: Callable[[Any, np.random.Generator], Any], pairs, claim, **kw):
        """Build a target from a one-output-per-call mechanism ``single(data, rng)``."""
        return cls(name=name, mechanism=single, pairs=pairs, claim=claim, per_call=True, **kw)

    def sample(self, data, rng: np.random.Generator, size: int) -> np.ndarray:
        """Draw ``size`` outputs for ``data``, validated by :func:`output_problem`."""
        from dpcheck.errors import MechanismError
        def call():
            if self.per_call:
                return [self.mechanism(data, rng) for _ in range(size)]
            return self.mechanism(data, rng, size)
        try:
            raw = call_with_deadline(call, self.timeout, f"mechanism of target {self.name!r} ({size} outputs)")
            out = np.asarray(raw)
        except MechanismTimeout:
            raise
        except (Exception, SystemExit) as e:  # a user's code raising (or calling sys.exit) is bad input, not our crash
            from dpcheck.loading import raised_text
            raise MechanismError(f"mechanism of target {self.name!r} raised {raised_text(e)}") from e
        problem = output_problem(out, size) or _numbers_among_labels(raw, out)
        if problem is not None:
            raise MechanismError(f"mechanism of target {self.name!r} returned {problem}")
        return out


def same_input(d, dp) -> bool:
    """True when D and D' are certainly the same input: the same object, or of the same type and equal, floats
    by value and sign (0.0 and -0.0, 1 and True, 1 and 1.0 are inputs a mechanism can tell apart); False when they
    differ or cannot be compared (an object without a meaningful ``==`` is taken to differ)."""
    if d is dp:
        return True
    if type(d) is not type(dp):
        return False
    try:
        a, b = np.asarray(d), np.asarray(dp)
        if a.dtype.kind == "O" or b.dtype.kind == "O":
            same = d == dp
            return same if isinstance(same, bool) else False
        if a.dtype != b.dtype or a.shape != b.shape or not np.array_equal(a, b):
            return False
        return a.dtype.kind not in "fc" or bool(np.array_equal(np.signbit(a.real), np.signbit(b.real)))
    except Exception:       # incomparable inputs: never refuse a pair on a guess
        return False


def representation(out: np.ndarray) -> str:
    """How a batch of outputs is represented: its dtype for numbers (float32 and float64 are told apart), the
    kind alone for labels (a string array's width follows its longest label). Two inputs whose outputs differ
    in it are distinguished by the representation alone, whatever the values."""
    return out.dtype.kind if out.dtype.kind in "US" else out.dtype.str


NUMERIC_LABELS_DISTINCT = 0.5   # a label coordinate of numbers, more than this share distinct, is numbers


def _numbers_among_labels(raw, out: np.ndarray) -> str | None:
    """Why a batch of string labels is not usable: some of the mechanism's outputs were numbers that became
    strings (np.asarray of a list mixing them with labels, or np.column_stack of labels and values), every
    continuous value a label of its own, so a leak in them is invisible to the label events. A coordinate whose
    labels all read as numbers and are mostly distinct (NUMERIC_LABELS_DISTINCT) is such numbers; a few
    categories spelled as digits ("1", "2") are labels."""
    if out.dtype.kind not in "US":
        return None
    why = ("numbers mixed with string labels (numpy turned the numbers into strings, which hides any leak in "
           "them): release the numeric coordinates as numbers and encode each label as a number")
    if not isinstance(raw, np.ndarray):
        items = np.asarray(raw, dtype=object).ravel()
        if any(isinstance(v, (int, float, np.number, np.bool_)) for v in items):
            return why
    cols = out.reshape(out.shape[0], -1)
    if cols.shape[0] < 64:       # too few to tell numbers from categories spelled as digits (a probe's draw)
        return None
    for j in range(min(cols.shape[1], 16)):
        try:
            cols[:, j].astype(float)
        except ValueError:
            continue
        if np.unique(cols[:, j]).size > NUMERIC_LABELS_DISTINCT * cols.shape[0]:
            return why + f" (coordinate {j} holds numbers written as strings)"
    return None


def output_problem(out, size: int) -> str | None:
    """Why ``out`` is not a usable batch of ``size`` outputs, or None if it is.

    Accepted: a numpy array of shape (size, ...) with at least one value per output, of booleans,
    integers, finite floats, or string labels. Refused, because the event families and the
    Clopper-Pearson certification of :mod:`dpcheck.blackbox` would silently mis-handle them:
    complex numbers (ordering and thresholds use only the real part, so a leak in the imaginary
    part, or in the real part once cast, would be missed: the user must release the two real
    coordinates explicitly), Python objects, other dtypes (dates, structured records), NaN, and
    +-inf anywhere (a partly infinite output breaks the learned scorers and every mean).
    """
    if not isinstance(out, np.ndarray):
        return f"a {type(out).__name__}, not an array of outputs"
    if out.ndim == 0:
        return (f"a single value ({out.item()!r}) when asked for size={size} outputs: mechanism(data, rng, size) "
                "returns size outputs stacked on axis 0; for one output per call use AuditTarget.from_single "
                "(per_call=True)")
    if out.shape[0] != size:
        return f"shape {out.shape}; expected {size} outputs stacked on axis 0"
    if out.size == 0:
        return f"empty outputs (shape {out.shape})"
    k = out.dtype.kind
    if k == "c":
        return (f"complex numbers (dtype {out.dtype}); dpcheck audits real outputs: return the released "
                "real coordinates, e.g. np.stack([z.real, z.imag], axis=-1)")
    if k == "O":
        return "non-numeric objects (dtype object); return numbers, vectors or string labels"
    if k not in "biufUS":
        return f"outputs of dtype {out.dtype}, neither numbers nor labels"
    if k == "f":
        nan = np.isnan(out)
        inf = np.isinf(out)
        if nan.any() or inf.any():
            bad = nan | inf
            first = int(np.argmax(bad.reshape(out.shape[0], -1).any(axis=1)))
            what = " and ".join(f"{int(m.sum())} {w}" for m, w in ((nan, "NaN"), (inf, "infinite"))
                                if m.any())
            return (f"{what} value(s) among {out.size} (first in output {first}); outputs must be finite: "
                    "map a sentinel to a finite value or a label")
    return None
