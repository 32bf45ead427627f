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
        """Draw ``size`` outputs for ``data``, validated: shape (size, ...), no NaN."""
        from dpcheck.errors import MechanismError
        try:
            if self.per_call:
                out = np.asarray([self.mechanism(data, rng) for _ in range(size)])
            else:
                out = np.asarray(self.mechanism(data, rng, size))
        except Exception as e:  # a user's code raising is bad input, not our crash
            raise MechanismError(f"mechanism of target {self.name!r} raised {type(e).__name__}: {e}") from e
        if out.ndim == 0 or out.shape[0] != size:
            raise MechanismError(f"mechanism of target {self.name!r} returned shape {out.shape}; "
                                 f"expected {size} outputs stacked on axis 0")
        if out.dtype.kind in "fc" and np.isnan(out).any():
            raise MechanismError(f"mechanism of target {self.name!r} returned NaN")
        if out.dtype.kind == "O":
            raise MechanismError(f"mechanism of target {self.name!r} returned non-numeric objects")
        return out
