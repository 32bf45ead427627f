"""load_privatizer: "central" | "local" | "none" | "path/to/file.py:ClassName" | "pkg.mod:ClassName".

A user's privatizer is checked against the interface (:data:`dpcheck.algorithms.privatizers.base.INTERFACE`)
and wrapped so that any exception it raises becomes a :class:`dpcheck.MechanismError` naming it,
while our own InputError (bad arguments) passes through unchanged.
"""
from __future__ import annotations

import functools

import numpy as np

from dpcheck.errors import InputError, MechanismError
from dpcheck.loading import call_plugin, probe_rng_use as probe_rng

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


def load_class(spec: str) -> type:
    """The class a ``file.py:Class`` / ``pkg.module:Class`` spec names (the user's module runs): InputError for a
    malformed spec, MechanismError when the user's module fails on import. The audits' plug-in loaders build a
    user's privatizer class at several budgets from it."""
    return _load_class(spec)


def unwrap(p):
    """The user's privatizer behind a guard of this module (:class:`GuardedPrivatizer` and its offline /
    regression variants); any other privatizer is returned as it is. For labels and class checks: calls go
    through the guard."""
    return p.__dict__.get("_inner", p)


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
        return call_plugin(f"privatizer {self._label!r}", what, fn, *a, **kw)

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
    obj = call_plugin(f"privatizer {label!r}", "its constructor", cls, **kw)
    if not user:
        return obj
    from dpcheck.algorithms.privatizers.probe import check_rng_use
    # the key holds the class itself (not its hash: a class's hash is its address, which a later class may
    # reuse once this one is collected, and would then skip its own probe); unhashable keywords: no memo
    key = (cls, tuple(sorted(kw.items(), key=str)))
    try:
        hash(key)
    except TypeError:
        key = None
    check_rng_use(lambda: GuardedPrivatizer(cls(**kw), label), label, key=key)
    return GuardedPrivatizer(obj, label)



def _user_class(spec, what: str, expected: str, label=None):
    """(class, label) of a user's ``what`` given as ``file.py:Class`` / ``pkg.mod:Class`` or as a class
    (``label``: the name its errors carry, default the class's); InputError for anything else, naming the
    built-in names ``expected``."""
    if isinstance(spec, str):
        if ":" not in spec:
            raise InputError(f"unknown {what} {spec!r}; expected {expected}, 'path/to/file.py:ClassName' or "
                             f"'pkg.module:ClassName'")
        return _load_class(spec), spec
    if isinstance(spec, type):
        return spec, label or spec.__name__
    raise InputError(f"{what} must be a name, 'file.py:Class' or a class, got {spec!r}")


def _instantiate(cls, label: str, interface, what: str, base: str, kw: dict):
    """``cls(**kw)`` for a plug-in of one family: InputError unless ``cls`` is a class with every member of
    ``interface``; its constructor's exceptions become a MechanismError naming it and the arguments."""
    if not isinstance(cls, type):
        raise InputError(f"privatizer {label!r} is not a class")
    missing = [m for m in interface if not hasattr(cls, m)]
    if missing:
        raise InputError(f"privatizer {label!r} does not implement the {what} interface: missing "
                         f"{', '.join(missing)} (subclass {base}; see docs/privatizers.md)")
    return call_plugin(f"privatizer {label!r}", f"its constructor {cls.__name__}"
                       f"({', '.join(f'{k}={v!r}' for k, v in kw.items())})", cls, **kw)

# ============================================================ offline (DP-APVI): one release from a dataset
OFFLINE_BUILTIN = {"gaussian": "OfflineGaussianPrivatizer", "laplace": "OfflineLaplacePrivatizer"}


class GuardedOfflinePrivatizer(GuardedPrivatizer):
    """:class:`GuardedPrivatizer` for an offline count privatizer (docs/privatizers.md, "Offline tabular"):
    the same delegation and naming of exceptions, and ``privatize`` / ``width`` validated (the record type,
    shapes equal to the counts given, no NaN or infinity, a finite E >= 0)."""

    def privatize(self, pair, triple, rng):
        from dpcheck.algorithms.privatizers.offline import OfflineCounts
        out = self._call("privatize", self._inner.privatize, pair, triple, rng)
        if not isinstance(out, OfflineCounts):
            raise MechanismError(f"privatizer {self._label!r}: privatize() must return OfflineCounts, "
                                 f"got {type(out).__name__}")
        shape = np.shape(pair)
        for name, shp in (("noisy_visits", shape), ("visits", shape), ("noisy_transitions", np.shape(triple)),
                          ("transitions", np.shape(triple))):
            arr = np.asarray(getattr(out, name))
            if arr.shape != tuple(shp):
                raise MechanismError(f"privatizer {self._label!r}: privatize().{name} has shape {arr.shape}, "
                                     f"expected {tuple(shp)}")
            if not np.all(np.isfinite(arr)):
                raise MechanismError(f"privatizer {self._label!r}: privatize().{name} contains NaN or infinity")
        return out

    def width(self, H, S, A):
        E = self._call("width", self._inner.width, H, S, A)
        try:
            ok = float(E) >= 0 and np.isfinite(float(E))
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise MechanismError(f"privatizer {self._label!r}: width({H}, {S}, {A}) returned {E!r}, expected a "
                                 f"finite number >= 0")
        return float(E)


def probe_rng_use(priv, label: str) -> None:
    """MechanismError unless ``priv.privatize`` is a function of its counts and its ``rng`` alone: the same
    seed twice must give the same release (else it draws from global or hidden state, and no audit can
    reproduce or certify it), two seeds must give different ones (else it ignores the rng). Run on a
    tiny dataset (H = 2, S = 2, A = 1, every count 5) with the auditor's own generators."""
    pair, triple = np.full((1, 2, 2, 1), 10.0), np.full((1, 2, 2, 1, 2), 5.0)

    def release(rng):
        o = priv.privatize(pair, triple, rng)
        return np.concatenate([np.ravel(o.noisy_visits), np.ravel(o.noisy_transitions)])

    probe_rng(release, (20240917, 7),
              nondeterministic=f"privatizer {label!r}: privatize() gave different releases for the same rng seed "
              f"(it draws from global or hidden state; all randomness must come from rng)",
              ignores=f"privatizer {label!r}: privatize() gave the same release for different rng seeds "
              f"(it ignores the rng it is given)")


def load_offline_privatizer(spec, *, _label=None, _probe=True, **kw):
    """An offline count privatizer from ``"gaussian"`` / ``"laplace"`` (the built-ins, ``rho`` / ``epsilon``
    and ``beta`` by keyword), a ``file.py:Class`` / ``pkg.mod:Class`` spec, a class, or an instance.

    A user's class is checked against :data:`dpcheck.algorithms.privatizers.offline.OFFLINE_INTERFACE`,
    constructed with ``kw`` (its exceptions: MechanismError naming it), wrapped in
    :class:`GuardedOfflinePrivatizer` and probed (:func:`probe_rng_use`) before any audit work (``_probe=False``:
    the same class rebuilt at another budget, already probed; ``_label``: the name its errors carry)."""
    from dpcheck.algorithms.privatizers import offline as off
    if isinstance(spec, off.OfflineCountPrivatizer) and type(spec).__module__ == off.__name__:
        return spec
    if isinstance(spec, type) and spec.__module__ == off.__name__:
        return spec(**kw)                       # a built-in class
    if isinstance(spec, (off.OfflineCountPrivatizer, GuardedOfflinePrivatizer)):
        obj, label = spec, type(spec).__name__
    elif isinstance(spec, str) and spec.strip().lower() in OFFLINE_BUILTIN:
        return getattr(off, OFFLINE_BUILTIN[spec.strip().lower()])(**kw)
    else:
        cls, label = _user_class(spec, "offline privatizer", ", ".join(OFFLINE_BUILTIN), _label)
        obj = _instantiate(cls, label, off.OFFLINE_INTERFACE, "offline privatizer",
                           "dpcheck.algorithms.privatizers.OfflineCountPrivatizer", kw)
    guarded = obj if isinstance(obj, GuardedOfflinePrivatizer) else GuardedOfflinePrivatizer(obj, label)
    if _probe and not isinstance(obj, GuardedOfflinePrivatizer):
        probe_rng_use(guarded, label)
    return guarded


# ============================================================ offline linear (DP-VAPVI): the regression statistics
class GuardedRegressionPrivatizer(GuardedPrivatizer):
    """:class:`GuardedPrivatizer` for DP-VAPVI's regression-statistics privatizer (docs/privatizers.md,
    "Offline linear"): ``draw`` must return a VAPVINoise of the sizes asked for, finite, with symmetric matrix
    noises; ``widths`` two finite numbers >= 0."""

    def draw(self, rng, runs, H, d, sensitivities):
        from dpcheck.algorithms.offline.vapvi import VAPVINoise
        out = self._call("draw", self._inner.draw, rng, runs, H, d, sensitivities)
        if not isinstance(out, VAPVINoise):
            raise MechanismError(f"privatizer {self._label!r}: draw() must return VAPVINoise, got {type(out).__name__}")
        for name in ("g1", "g2", "g3", "N1", "N2"):
            arr = np.asarray(getattr(out, name))
            shp = (runs, H, d) if name.startswith("g") else (runs, H, d, d)
            if arr.shape != shp:
                raise MechanismError(f"privatizer {self._label!r}: draw().{name} has shape {arr.shape}, expected {shp}")
            if not np.all(np.isfinite(arr)):
                raise MechanismError(f"privatizer {self._label!r}: draw().{name} contains NaN or infinity")
            if name.startswith("N") and not np.allclose(arr, np.swapaxes(arr, -1, -2)):
                raise MechanismError(f"privatizer {self._label!r}: draw().{name} is not symmetric (a released "
                                     f"Gram matrix must stay symmetric)")
        return out

    def widths(self, H, d, sensitivities, delta):
        out = self._call("widths", self._inner.widths, H, d, sensitivities, delta)
        try:
            E, L = (float(v) for v in out)
            ok = E >= 0 and L >= 0 and np.isfinite(E) and np.isfinite(L)
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise MechanismError(f"privatizer {self._label!r}: widths({H}, {d}, ...) returned {out!r}, expected "
                                 f"(E, L), two finite numbers >= 0")
        return E, L


def probe_regression_rng_use(priv, label: str) -> None:
    """:func:`probe_rng_use` for ``draw`` (H = 2, d = 2, unit sensitivities)."""
    sens = {k: 1.0 for k in ("sigma_matrix", "beta_vector", "theta_vector", "lambda_matrix", "w_vector")}

    def release(rng):
        o = priv.draw(rng, 1, 2, 2, sens)
        return np.concatenate([np.ravel(getattr(o, k)) for k in ("g1", "g2", "g3", "N1", "N2")])

    probe_rng(release, (20240917, 7),
              nondeterministic=f"privatizer {label!r}: draw() gave different noise for the same rng seed (it draws "
              f"from global or hidden state; all randomness must come from rng)",
              ignores=f"privatizer {label!r}: draw() gave the same noise for different rng seeds (it "
              f"ignores the rng it is given)")
    priv.widths(2, 2, sens, 0.1)


def load_regression_privatizer(spec, *, _label=None, _probe=True, **kw):
    """DP-VAPVI's privatizer of the released statistics from ``"gaussian"`` (the paper's, ``rho=``), a
    ``file.py:Class`` / ``pkg.mod:Class`` spec or a class: checked against
    :data:`dpcheck.algorithms.offline.vapvi.REGRESSION_INTERFACE`, constructed with ``kw``, wrapped in
    :class:`GuardedRegressionPrivatizer` and probed (:func:`probe_regression_rng_use`) before any work."""
    from dpcheck.algorithms.offline import vapvi
    if isinstance(spec, str) and spec.strip().lower() == "gaussian":
        return vapvi.GaussianRegressionPrivatizer(**kw)
    if isinstance(spec, type) and spec.__module__ == vapvi.__name__:
        return spec(**kw)
    cls, label = _user_class(spec, "regression privatizer", "gaussian", _label)
    obj = _instantiate(cls, label, vapvi.REGRESSION_INTERFACE, "regression privatizer",
                       "dpcheck.algorithms.offline.RegressionPrivatizer", kw)
    guarded = GuardedRegressionPrivatizer(obj, label)
    if _probe:
        probe_regression_rng_use(guarded, label)
    return guarded
