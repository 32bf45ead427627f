"""Command-line options: one parser per value, the audit-specific ``--set`` table, and the check
that every option given is one the audit uses (a CI gate must never say PASS because an
option it was given was silently ignored).

Every value is parsed here once, at the boundary; an audit reads the parsed values from
:class:`dpcheck.context.AuditOptions` (``o.epsilon`` a float, ``o.extra["beta"]`` a float, ...).

The declaration an audit makes when it registers (:func:`dpcheck.registry.register`)::

    @register("my_audit", ..., uses=("delta", *SAMPLING),
              options=(SetOption("calibration", str, choices=("paper", "strict"), default="strict",
                                 help="noise calibration"),
                       SetOption("beta", float, bounds=(0, 1), help="failure probability")))

``uses`` names the common options (fields of AuditOptions, see :data:`COMMON`) the audit honours;
giving any other one on the command line is an error (exit 2) that names the option and the audit.
``options`` is the table of ``--set KEY=VALUE`` keys; an unknown key, a value of the wrong type or
outside ``choices`` / ``bounds`` is an error that lists what is allowed. The table is meant to
become the fields of a per-audit options dataclass: each SetOption carries exactly what a
``dataclasses.field`` would (name, type, default, metadata: choices, bounds, help).
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from typing import Any

from dpcheck.errors import InputError

# AuditOptions field -> the command-line flag that sets it (the options an audit may declare in ``uses``)
COMMON = {
    "epsilon": "--epsilon", "delta": "--delta", "privatizer": "--privatizer", "samples": "--samples",
    "seed": "--seed", "alpha": "--alpha", "workers": "--workers", "backend": "--backend",
    "scheduler": "--scheduler", "quick": "--quick", "cache_dir": "--cache", "timeout": "--timeout",
    "sequential": "--sequential",
}
PARALLEL = ("workers", "backend", "scheduler")     # every audit whose work goes through dpcheck.parallel
DEFAULT_USES = ("seed", "alpha")                    # an audit that declares nothing: only these
# every audit that samples a mechanism through dpcheck.blackbox (its budget, workers, --quick and cache)
SAMPLING = ("epsilon", "samples", "seed", "alpha", *PARALLEL, "quick", "cache_dir")

MIN_SAMPLES = 20
MAX_SAMPLES = 10**12        # outputs per side; the memory check (dpcheck.limits) bounds what actually runs
MAX_SEED = 2**32 - 1
DEFAULT_USER_TIMEOUT = 600.0   # seconds per call of a user's mechanism (one chunk of outputs)


# ------------------------------------------------------------------ one parser per value
def as_float(name: str, value, what: str = "a number") -> float:
    """``float(value)``, nan and inf included, for a value given as a number or text; a bool or anything
    float() refuses is an InputError "NAME must be WHAT, got VALUE". Every numeric parameter of the
    core and of the algorithms' constructors starts here, then checks its own range."""
    if isinstance(value, bool):
        raise InputError(f"{name} must be {what}, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be {what}, got {value!r}") from None


def _number(flag: str, value) -> float:
    x = as_float(flag, value)
    if not math.isfinite(x):
        raise InputError(f"{flag} must be a finite number, got {value!r}")
    return x


def parse_int(flag: str, value) -> int:
    """An integer, also written ``1e6`` or ``200_000``; ``2.5``, ``1.5e0``, ``inf`` and text are errors."""
    if isinstance(value, bool):
        raise InputError(f"{flag} must be an integer, got {value!r}")
    if isinstance(value, int):
        return int(value)
    if hasattr(value, "__index__"):          # numpy integers
        return int(value.__index__())
    s = str(value).strip()
    try:
        return int(s)
    except ValueError:
        pass
    try:
        x = float(s)
    except ValueError:
        raise InputError(f"{flag} must be an integer, got {value!r}") from None
    if not math.isfinite(x) or x != int(x):
        raise InputError(f"{flag} must be an integer, got {value!r}")
    return int(x)


def parse_epsilon(value, name: str = "--epsilon") -> float:
    """A privacy budget epsilon: a finite number > 0 -- the one check of an epsilon, whether it comes from
    --epsilon, an audit's Defaults (dpcheck.audit) or a privatizer's constructor (``name="epsilon"``)."""
    e = _number(name, value)
    if not e > 0:
        raise InputError(f"{name} must be a finite number > 0, got {value!r}")
    return e


def parse_delta(value) -> float:
    d = _number("--delta", value)
    if not 0 <= d < 1:
        raise InputError(f"--delta must lie in [0, 1), got {value!r}")
    return d


def parse_alpha(value) -> float:
    a = _number("--alpha", value)
    if not 0 < a < 1:
        raise InputError(f"--alpha must lie in (0, 1), got {value!r}")
    return a


def parse_samples(value) -> int:
    n = parse_int("--samples", value)
    if not MIN_SAMPLES <= n <= MAX_SAMPLES:
        raise InputError(f"--samples must be an integer in [{MIN_SAMPLES}, {MAX_SAMPLES:.0e}], got {value!r}")
    return n


def parse_seed(value) -> int:
    s = parse_int("--seed", value)
    if not 0 <= s <= MAX_SEED:
        raise InputError(f"--seed must be an integer in [0, 2^32 - 1], got {value!r}")
    return s


WORKERS_ENV = "DPCHECK_WORKERS"     # the command line's default --workers (else 'auto')


def parse_workers(value, name: str = "--workers") -> int:
    """An integer >= 1, or 'auto': every CPU this process may use (:func:`cpu_limit`)."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return cpu_limit()
    w = parse_int(name, value)
    if w < 1:
        raise InputError(f"{name} must be an integer >= 1 or 'auto', got {value!r}")
    return w


def default_workers() -> int:
    """The command line's --workers when none is given: $DPCHECK_WORKERS, else 'auto' (every usable CPU; the
    results are identical for any number of workers, so only the time changes)."""
    value = os.environ.get(WORKERS_ENV, "").strip()
    return parse_workers(value, f"${WORKERS_ENV}") if value else cpu_limit()


def parse_timeout(value) -> float:
    """Seconds (> 0) per call of a user's mechanism; ``off`` (or math.inf) for no limit."""
    if isinstance(value, str) and value.strip().lower() in ("off", "none"):
        return math.inf
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == math.inf:
        return math.inf
    t = _number("--timeout", value)
    if not t > 0:
        raise InputError(f"--timeout must be a number of seconds > 0 (or 'off'), got {value!r}")
    return t


_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([kmgt]?)i?b?\s*$", re.I)


def parse_size(value, flag: str = "--memory-limit") -> float:
    """A memory size: bytes, or with a suffix K, M, G, T (powers of 1024); ``off`` is no limit (inf)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value > 0:
            return float(value)
        raise InputError(f"{flag} must be > 0, got {value!r}")
    s = str(value).strip().lower()
    if s in ("off", "none"):
        return math.inf
    m = _SIZE.match(s)
    if not m or float(m.group(1)) <= 0:
        raise InputError(f"{flag} must be a size such as 500M, 8G or 1073741824 (bytes), or 'off'; got {value!r}")
    return float(m.group(1)) * 1024 ** " kmgt".index(m.group(2) or " ")


def cpu_limit() -> int:
    """CPUs this process may run on (its affinity mask, which containers restrict; else os.cpu_count())."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


# ------------------------------------------------------------------ --set KEY=VALUE
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


@dataclass(frozen=True)
class SetOption:
    """One audit-specific ``--set KEY=VALUE`` option.

    type:    str, int, float or bool (bool accepts 1/0, true/false, yes/no, on/off).
    choices: the allowed values (after conversion), or () for any.
    bounds:  (low, high), an open interval for int / float values; None for an unbounded side.
    default: the value the audit gets when the key is not given; None means "not set" (the key is
             absent from ``o.extra`` and the audit decides, as ``help`` says).
    """

    name: str
    type: type = str
    choices: tuple = ()
    default: Any = None
    help: str = ""
    bounds: tuple | None = None

    def __post_init__(self):
        if self.type not in (str, int, float, bool):
            raise TypeError(f"SetOption {self.name!r}: type must be str, int, float or bool")
        object.__setattr__(self, "choices", tuple(self.choices))

    def parse(self, raw, audit: str = ""):
        """The value of ``--set name=raw`` (raw may already be typed, from a library caller)."""
        where = f"--set {self.name}" + (f" (audit {audit!r})" if audit else "")
        if self.type is bool:
            if isinstance(raw, bool):
                v = raw
            elif str(raw).strip().lower() in _TRUE:
                v = True
            elif str(raw).strip().lower() in _FALSE:
                v = False
            else:
                raise InputError(f"{where} must be true or false (1/0, yes/no), got {raw!r}")
        elif self.type is int:
            v = parse_int(where, raw)
        elif self.type is float:
            v = _number(where, raw)
        else:
            v = str(raw).strip()
        if self.choices and v not in self.choices:
            raise InputError(f"{where} must be one of {'|'.join(map(str, self.choices))}, got {raw!r}")
        if self.bounds is not None:
            lo, hi = self.bounds
            if (lo is not None and not v > lo) or (hi is not None and not v < hi):
                span = f"({'-inf' if lo is None else f'{lo:g}'}, {'inf' if hi is None else f'{hi:g}'})"
                raise InputError(f"{where} must lie in {span}, got {raw!r}")
        return v

    def describe(self) -> str:
        """One line for ``dpcheck list --options NAME``."""
        kind = "|".join(map(str, self.choices)) if self.choices else self.type.__name__
        if self.bounds is not None:
            lo, hi = self.bounds
            kind += f" in ({'-inf' if lo is None else f'{lo:g}'}, {'inf' if hi is None else f'{hi:g}'})"
        dflt = f"default {self.default}" if self.default is not None else "default: see text"
        return f"{self.name}={kind}  ({dflt}) {self.help}".rstrip()


def options_dataclass(name: str, table) -> type:
    """The ``--set`` table as a frozen dataclass, one field per SetOption (its default; choices, bounds
    and help in the field metadata): the per-audit options type a later design can declare directly.
    ``options_dataclass("X", table)(**parse_set(table, raw, audit))`` gives the parsed values as fields."""
    import dataclasses
    fields = [(o.name, o.type if o.default is not None else (o.type | None),
               dataclasses.field(default=o.default, metadata={"choices": o.choices, "bounds": o.bounds,
                                                              "help": o.help}))
              for o in table]
    return dataclasses.make_dataclass(name, fields, frozen=True)


def split_set(items) -> dict:
    """``["k=v", ...]`` -> {"k": "v"} with the syntax checked (KEY=VALUE, a name, each key once)."""
    out: dict = {}
    for it in items or ():
        if "=" not in it:
            raise InputError(f"--set expects KEY=VALUE, got {it!r}")
        k, v = it.split("=", 1)
        k = k.strip()
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
            raise InputError(f"--set expects KEY=VALUE with KEY a name, got {it!r}")
        if k in out:
            raise InputError(f"--set {k} given twice ({k}={out[k]} and {k}={v})")
        out[k] = v.strip()
    return out


def parse_set(table, raw: dict, audit: str) -> dict:
    """Validate ``raw`` (key -> text or value) against an audit's SetOption table; fill the defaults."""
    by_name = {o.name: o for o in table}
    for k in raw:
        if k not in by_name:
            if by_name:
                keys = ", ".join(o.name for o in table)
                raise InputError(f"--set {k}: audit {audit!r} has no option {k!r}; its --set keys: {keys} "
                                 f"(dpcheck list --options {audit})")
            raise InputError(f"--set {k}: audit {audit!r} takes no --set options")
    out = {}
    for o in table:
        if o.name in raw:
            out[o.name] = o.parse(raw[o.name], audit)
        elif o.default is not None:
            out[o.name] = o.default
    return out


def check_uses(uses, given, audit: str, claim: str = "") -> None:
    """Every option in ``given`` (AuditOptions field names set on the command line) must be in ``uses``."""
    for name in COMMON:                     # in the order of the help text
        if name in given and name not in uses:
            why = f" (its claim: {claim})" if name == "delta" and claim else ""
            honoured = ", ".join(COMMON[u] for u in COMMON if u in uses) or "none"
            raise InputError(f"{COMMON[name]} is not used by audit {audit!r}{why}; the options it uses: {honoured}")
