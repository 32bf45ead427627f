"""The private Bernstein-type bonus of DP-UCBVI (Qiao & Wang 2023, eq. 31, docs/derivations.md#constants, Algorithm 1 line 7).

The bonus line of the paper is garbled; it is reconstructed exactly (docs/derivations.md#constants) from
eqs. 32, 66, 70-71 and 81-83:

    b_h^k(s,a) = 2 sqrt(Var_{P~}(V~_{h+1}) iota / N~)           term 1 (Bernstein)
               + sqrt(2 iota / N~)                                term 2 (reward Hoeffding)
               + 20 H S E iota / N~                               term 3 (privacy noise)
               + 4 sqrt(iota) sqrt(W_h(s,a) / N~)                 term 4 (Var_{P~}V~ vs Var V*)
    W_h(s,a)   = sum_s' P~(s'|s,a) min{g(N~_{h+1}(s')), H^2}      (W_H = 0)
    g(n)       = 1000^2 (H^3 S A iota^2 / n + H^4 S^4 A^2 E^2 iota^4 / n^2 + H^6 S^4 A^2 iota^4 / n^2)

The constants live in :class:`BonusConstants` so that the two modes the audit
reports are data, not code paths: ``theory`` (the paper's constants, the only
mode in which Theorem 4.1 applies) and ``practical`` (scaled constants, reports/reproductions/dp_ucbvi_fig1/README.md:
with the paper's constants the bonus exceeds H for every (h,s,a) over any
feasible K, so Q~ = H everywhere and regret is linear).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from dpcheck.errors import InputError


def iota(H: int, S: int, A: int, K: int, beta: float) -> float:
    """iota = log(30 H S A T / beta), T = H K (Algorithm 1 line 2)."""
    return math.log(30.0 * H * S * A * (H * K) / beta)


@dataclass(frozen=True)
class BonusConstants:
    """Coefficients of the four bonus terms and of g (eq. 31, docs/derivations.md#constants).

    mode:        "theory" or "practical" (reported in every output).
    iota:        None = the paper's log(30 HSAT/beta); a number overrides it (practical mode).
    c_variance:  coefficient of term 1 (paper: 2).
    c_reward:    coefficient of sqrt(iota / N~) in term 2 (paper: sqrt 2).
    c_privacy:   coefficient of E iota / N~ in term 3 (paper: 20 H S, passed as a number
                 after multiplying; ``privacy_scales_with_HS`` keeps the H S factor).
    c_correction: coefficient of term 4 (paper: 4); 0 switches term 4 off.
    g_constant:  the 1000^2 of g (eq. 83; eq. 32's 10000^2 is a misprint, docs/derivations.md#constants).
    scale:       a global multiplier on the whole bonus (1 in theory mode).
    """

    mode: str = "theory"
    iota: float | None = None
    c_variance: float = 2.0
    c_reward: float = math.sqrt(2.0)
    c_privacy: float = 20.0
    privacy_scales_with_HS: bool = True
    c_correction: float = 4.0
    g_constant: float = 1000.0 ** 2
    scale: float = 1.0

    def __post_init__(self):
        if self.mode not in ("theory", "practical"):
            raise InputError(f"mode must be 'theory' or 'practical', got {self.mode!r}")
        for name in ("c_variance", "c_reward", "c_privacy", "c_correction", "g_constant", "scale"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise InputError(f"bonus constant {name} must be a finite number >= 0, got {v!r}")
        if self.iota is not None and not (math.isfinite(self.iota) and self.iota > 0):
            raise InputError(f"iota must be a finite number > 0, got {self.iota!r}")

    @classmethod
    def theory(cls) -> "BonusConstants":
        """The paper's constants (eq. 31, docs/derivations.md#constants)."""
        return cls()

    @classmethod
    def practical(cls) -> "BonusConstants":
        """Scaled constants for experiments (reports/reproductions/dp_ucbvi_fig1/README.md; our choice, documented here).

        * iota = 1: the log(30 HSAT/beta) union-bound factor (~25 on RiverSwim) is a
          proof artefact; every empirical UCBVI implementation drops it.
        * term 1 coefficient 1 and term 2 sqrt(1/N~): Bernstein + Hoeffding at "one sigma".
        * term 3 = E / N~ (coefficient 1, no H S iota): the count error itself, which is
          what Lemma B.1/B.2 need before the proof's absorptions (the 20 H S iota is the
          union of absorbed conversions P^ -> P~).
        * term 4 off (c_correction = 0): it compensates Var_{P~}V~ - Var V* with the
          1000^2-constant induction hypothesis f, which alone exceeds H^2 for N < 10^9.
        The structure (Bernstein variance term, privacy term ~ E/N~, min with Q~^{k-1}
        and H) is unchanged; optimism is not guaranteed and is measured instead.
        """
        return cls(mode="practical", iota=1.0, c_variance=1.0, c_reward=1.0, c_privacy=1.0,
                   privacy_scales_with_HS=False, c_correction=0.0, g_constant=1000.0 ** 2, scale=1.0)

    @classmethod
    def for_mode(cls, mode: str) -> "BonusConstants":
        if mode == "theory":
            return cls.theory()
        if mode == "practical":
            return cls.practical()
        raise InputError(f"mode must be 'theory' or 'practical', got {mode!r}")

    def iota_value(self, H: int, S: int, A: int, K: int, beta: float) -> float:
        return iota(H, S, A, K, beta) if self.iota is None else float(self.iota)

    def to_dict(self) -> dict:
        return asdict(self)


def correction_g(n, *, H: int, S: int, A: int, E: float, iota: float, g_constant: float = 1000.0 ** 2):
    """g(n) of eq. 31, docs/derivations.md#constants (= a^2 + b^2 + c^2 of the induction hypothesis f, eq. 83).

    n: private state counts N~_{h+1}(s') (any shape). n = 0 gives +inf (no data).
    E: a scalar or an array broadcastable against n (per-run widths of a stacked batch).
    """
    E = np.asarray(E, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = np.where(n > 0, 1.0 / np.where(n > 0, n, 1.0), np.inf)
        g = g_constant * (H ** 3 * S * A * iota ** 2 * inv
                          + (H ** 4 * S ** 4 * A ** 2 * E ** 2 * iota ** 4 + H ** 6 * S ** 4 * A ** 2 * iota ** 4) * inv ** 2)
    return g


def bernstein_bonus(transition_private, visits_private, value_next, state_counts_next, *,
                    H: int, E: float, iota: float, constants: BonusConstants, last_step: bool,
                    include_variance: bool = True):
    """b_h^k(s,a) for one step h, batched over runs (eq. 31, docs/derivations.md#constants).

    Shapes: transition_private P~_h (runs, S, A, S); visits_private N~_h(s,a) (runs, S, A);
    E a scalar or (runs,);
    value_next V~_{h+1} (runs, S); state_counts_next N~_{h+1}(s') = sum_a' N~_{h+1}(s',a')
    (runs, S) or None when ``last_step`` (W_H = 0). Returns (runs, S, A).

    Where N~_h(s,a) = 0 (only possible with E = 0, i.e. the non-private baseline) the
    bonus is +inf, so Q~ = H there (docs/derivations.md#readings, the UCBVI convention "unvisited -> H").
    """
    S = transition_private.shape[-1]
    n = visits_private
    # E: scalar, or one width per run (a stacked batch of privatizers, dpcheck.algorithms.online.stacking)
    E = np.asarray(E, dtype=float)
    E_sa = E.reshape(-1, 1, 1) if E.ndim == 1 else E
    with np.errstate(divide="ignore", invalid="ignore"):
        inv_n = np.where(n > 0, 1.0 / np.where(n > 0, n, 1.0), np.inf)
    c = constants
    with np.errstate(invalid="ignore"):
        bonus = c.c_reward * np.sqrt(iota * inv_n)
        if include_variance:
            mean = np.einsum("rsat,rt->rsa", transition_private, value_next)
            second = np.einsum("rsat,rt->rsa", transition_private, value_next * value_next)
            # population variance; rounding can make it slightly negative (docs/derivations.md#readings)
            variance = np.maximum(second - mean * mean, 0.0)
            bonus = bonus + c.c_variance * np.sqrt(variance * iota * inv_n)
        privacy = c.c_privacy * (H * S if c.privacy_scales_with_HS else 1.0) * E_sa * iota * inv_n
        if np.any(E > 0):
            bonus = bonus + privacy
        if c.c_correction > 0 and not last_step:
            A = transition_private.shape[2]
            g = np.minimum(correction_g(state_counts_next, H=H, S=S, A=A,
                                        E=E.reshape(-1, 1) if E.ndim == 1 else E, iota=iota,
                                        g_constant=c.g_constant), float(H) ** 2)
            W = np.einsum("rsat,rt->rsa", transition_private, g)
            bonus = bonus + c.c_correction * math.sqrt(iota) * np.sqrt(W * inv_n)
    bonus = c.scale * bonus
    # inf * 0 (scale or coefficient 0 at an unvisited pair) must stay "no information"
    return np.where(np.isfinite(inv_n), bonus, np.inf)
