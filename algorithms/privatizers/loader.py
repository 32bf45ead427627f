"""load_privatizer: "central" | "local" | "none" | "path/to/file.py:ClassName" | "pkg.mod:ClassName".

A user's privatizer is checked against the interface (:data:`dpcheck.algorithms.privatizers.base.INTERFACE`)
and wrapped so that any exception it raises becomes a :class:`dpcheck.MechanismError` naming it,
while our own InputError (bad arguments) passes through unchanged.
"""
from __future__ import annotations

import functools

import numpy as np

from dpcheck.errors import DPCheckError, InputError, MechanismError

from dpcheck.algorithms.privatizers.base import INTERFACE, CountPrivatizer, PrivateCounts

BUILTIN = {"central": "CentralPrivatizer", "local": "LocalPrivatizer", "none": "NoPrivatizer"}


def _builtin(name):
    # from the defining modules, not the package (whose __init__ imports this module)
    from dpcheck.algorithms.privatizers.central import CentralPrivatizer
    from dpcheck.algorithms.privatizers.local import LocalPrivatizer
    from dpcheck.algorithms.privatizers.nonprivate import NoPrivatizer
    classes = {"CentralPrivatizer": CentralPrivatizer, "LocalPrivatizer": LocalPrivatizer,
               "NoPrivatizer": NoPrivatizer}
    return classes[BUILTIN[name]]


def _load_class(spec: str):
    from dpcheck.loading import load_object
    if not spec.rpartition(":")[0] or not spec.rpartition(":")[2]:
        raise InputError(f"privatizer {spec!r}: expected 'central', 'local', 'none', 'file.py:Class' "
                         f"or 'pkg.module:Class'")
    # the user's module ran and failed on import: their code, not bad input -> MechanismError
    return load_object(spec, "privatizer", import_error=MechanismError)


def check_interface(cls_or_obj, label: str) -> None:
    """InputError naming every member of INTERFACE the class (or an instance's class) lacks."""
    cls = cls_or_obj if isinstance(cls_or_obj, type) else type(cls_or_obj)
    missing = [m for m in INTERFACE if not hasattr(cls, m)]
    if missing:
        raise InputError(f"privatizer {label!r} does not implement the privatizer interface: missing "
                         f"{', '.join(missing)} (subclass dpcheck.algorithms.privatizers.CountPrivatizer; "
                         f"see docs/privatizers.md)")


class GuardedPrivatizer:
    """Delegates to a user's privatizer; its exceptions become MechanismError with its name, and
    ``release()`` is validated (shapes, NaN, sum identity is left to the assumption checks)."""

    def __init__(self, inner, label: str):
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "_label", label)

    def _call(self, what, fn, *a, **kw):
        try:
            return fn(*a, **kw)
        except DPCheckError:
            raise
        except Exception as e:
            raise MechanismError(f"privatizer {self._label!r} raised {type(e).__name__} in {what}: {e}") from e

    def __getattr__(self, item):
        if item.startswith("__") or item in ("_inner", "_label", "_sizes"):
            raise AttributeError(item)              # copy/pickle protocols; never recurse
        try:
            attr = getattr(type(self._inner), item)
        except AttributeError:
            attr = None
        if isinstance(attr, property):
            return self._call(item, getattr, self._inner, item)
        value = getattr(self._inner, item)
        if callable(value):
            return functools.partial(self._call, item, value)
        return value

    def __setattr__(self, key, value):
        setattr(self._inner, key, value)

    def __repr__(self):
        return f"Guarded({self._inner!r})"

    def start(self, runs, H, S, A, K, rng, rewards=True):
        self._call("start", self._inner.start, runs, H, S, A, K, rng, rewards=rewards)
        # release() is validated against the sizes WE asked for, not attributes the user's class may
        # or may not keep (a duck-typed class need not store runs/H/S/A)
        object.__setattr__(self, "_sizes", (int(runs), int(H), int(S), int(A)))
        return self

    def release(self) -> PrivateCounts:
        out = self._call("release", self._inner.release)
        if not isinstance(out, PrivateCounts):
            raise MechanismError(f"privatizer {self._label!r}: release() must return PrivateCounts, "
                                 f"got {type(out).__name__}")
        sizes = self.__dict__.get("_sizes")
        if sizes is None:
            raise InputError(f"privatizer {self._label!r}: call start(runs, H, S, A, K, rng) before release()")
        runs, H, S, A = sizes
        shape = (runs, H, S, A)
        for name, arr, shp in (("visits", out.visits, shape), ("transitions", out.transitions, shape + (S,))):
            arr = np.asarray(arr)
            if arr.shape != shp:
                raise MechanismError(f"privatizer {self._label!r}: release().{name} has shape {arr.shape}, expected {shp}")
            if not np.all(np.isfinite(arr)):
                raise MechanismError(f"privatizer {self._label!r}: release().{name} contains NaN or infinity")
        return out


def load_privatizer(spec, **kw):
    """Instantiate a privatizer from a name or a ``file.py:Class`` / ``pkg.mod:Class`` spec.

    Keyword arguments (epsilon, beta, calibration, width_mode) go to the constructor. Built-ins are
    returned as they are; user classes come back wrapped in :class:`GuardedPrivatizer`.
    """
    if isinstance(spec, CountPrivatizer):
        return spec
    if isinstance(spec, type):
        cls, label, user = spec, spec.__name__, not spec.__module__.startswith("dpcheck.algorithms.")
    elif isinstance(spec, str):
        key = spec.strip().lower()
        if key in BUILTIN:
            return _builtin(key)(**kw)
        if ":" not in spec:
            raise InputError(f"unknown privatizer {spec!r}; expected one of {', '.join(BUILTIN)} "
                             f"or 'path/to/file.py:ClassName' or 'pkg.module:ClassName'")
        cls, label = _load_class(spec), spec
        user = not getattr(cls, "__module__", "").startswith("dpcheck.algorithms.privatizers")
    else:
        raise InputError(f"privatizer must be a name or 'file.py:Class', got {spec!r}")
    if not isinstance(cls, type):
        raise InputError(f"privatizer {label!r} is not a class")
    check_interface(cls, label)
    try:
        obj = cls(**kw)
    except DPCheckError:
        raise
    except Exception as e:
        raise MechanismError(f"privatizer {label!r} raised {type(e).__name__} in its constructor: {e}") from e
    if not user:
        return obj
    from dpcheck.algorithms.privatizers.probe import check_rng_use
    try:
        key = hash((cls, tuple(sorted(kw.items(), key=str))))
    except TypeError:
        key = None
    check_rng_use(lambda: GuardedPrivatizer(cls(**kw), label), label, key=key)
    return GuardedPrivatizer(obj, label)
