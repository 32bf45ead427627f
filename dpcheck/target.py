"""AuditTarget: a user's mechanism with the neighbouring inputs to test (DESIGN.md contract)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from dpcheck.claims import Claim
from dpcheck.errors import InputError


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
    """

    name: str
    mechanism: Callable[..., Any]
    pairs: Sequence[tuple[Any, Any]]
    claim: Claim
    output: str = "auto"
    per_call: bool = False
    description: str = ""

    def __post_init__(self):
        if not isinstance(self.claim, Claim):
            raise InputError(f"target {self.name!r}: claim must be a dpcheck.Claim, got {type(self.claim).__name__}")
        if not callable(self.mechanism):
            raise InputError(f"target {self.name!r}: mechanism is not callable")
        pairs = list(self.pairs)
        if not pairs:
            raise InputError(f"target {self.name!r}: needs at least one neighbouring pair")
        for i, p in enumerate(pairs):
            if not (isinstance(p, (tuple, list)) and len(p) == 2):
                raise InputError(f"target {self.name!r}: pair {i} is not a (D, D') pair")
        object.__setattr__(self, "pairs", [tuple(p) for p in pairs])
        if self.output not in ("auto", "continuous", "discrete"):
            raise InputError("output must be 'auto', 'continuous' or 'discrete'")

    @classmethod
    def from_single(cls, name, single: Callable[[Any, np.random.Generator], Any], pairs, claim, **kw):
        """Build a target from a one-output-per-call mechanism ``single(data, rng)``."""
        return cls(name=name, mechanism=single, pairs=pairs, claim=claim, per_call=True, **kw)

    def sample(self, data, rng: np.random.Generator, size: int) -> np.ndarray:
        """Draw ``size`` outputs for ``data``, validated by :func:`output_problem`."""
        from dpcheck.errors import MechanismError
        try:
            if self.per_call:
                out = np.asarray([self.mechanism(data, rng) for _ in range(size)])
            else:
                out = np.asarray(self.mechanism(data, rng, size))
        except Exception as e:  # a user's code raising is bad input, not our crash
            raise MechanismError(f"mechanism of target {self.name!r} raised {type(e).__name__}: {e}") from e
        problem = output_problem(out, size)
        if problem is not None:
            raise MechanismError(f"mechanism of target {self.name!r} returned {problem}")
        return out


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
    if out.ndim == 0 or out.shape[0] != size:
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
