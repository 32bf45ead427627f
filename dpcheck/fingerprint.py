"""A deterministic fingerprint of everything that determines a computation's outputs.

The chunk cache (:mod:`dpcheck.parallel`) may only hand back a stored chunk when it would be
recomputed identically, so its key must change whenever the function, or anything it reads,
changes: a noise scale in a closure, a module-level constant, a default argument, a method of
an object it calls, the code itself. :func:`fingerprint` walks the object graph and hashes

* functions: their code (bytecode, constants, names; not file names or line numbers),
  closure cells, default arguments, and every global they name (recursively), including names
  imported inside the function body; a function calling ``globals``, ``eval`` or ``exec``, or naming
  ``__name__`` (``sys.modules[__name__]``), may read any global by a computed name: all of its module's count;
* code of *user* modules (anything outside the standard library and site-packages): a module
  reached from a function contributes the attributes the function's code names (``mod.SCALE``);
  a library module or a function / class defined in one contributes its qualified name and the
  version of its top-level package (its code is taken to be fixed by that version);
* the files a user's module (a ``path.py`` loaded by :mod:`dpcheck.loading`) read while it was imported,
  with their content hashes, for every function defined in it;
* classes: qualified name, bases and their attributes (methods walked as functions);
* values: numbers, strings, bytes, containers, numpy arrays (dtype, shape, bytes) and any other
  object through its pickle reduction (``__reduce_ex__(4)``: class and state), less the values its
  ``functools.cached_property`` attributes have stored (derived from the rest by hashed code: the key
  must not depend on whether they were computed yet). An object with ``__wrapped__`` (a decorator class
  using ``functools.update_wrapper``) is such an instance, plus what it wraps; only a ``functools.lru_cache``
  wrapper and a numba dispatcher (its ``py_func`` and options) are hashed by what they wrap alone;
* ufuncs: numpy's and scipy.special's by name and version; any other (``np.frompyfunc``, whose Python code
  cannot be reached from it) raises :class:`Unfingerprintable`; an ``np.vectorize`` is walked through its ``pyfunc``.

Nothing depends on ``id()``, string hashing or memory addresses, so the fingerprint is the same
in every process and run for an unchanged computation; nor on which submodules of a package were imported
before (a package's submodule attributes are walked whether or not they were bound yet). What cannot be walked (an object with
no pickle reduction, a C extension instance without state) raises :class:`Unfingerprintable`:
the caller then runs without the cache rather than key on something weaker (a name).

A memo table declared as such (:class:`WeakMemo`, :class:`Memo`, or any object whose class sets
``__fingerprint_memo__ = True``) is hashed by its class alone: it holds values derived from its keys by
code that is hashed where it is called (e.g. ``dpcheck.algorithms.gfa.evaluation.next_state_table``), so whether it
was filled yet must not change the key (and a ``weakref.WeakKeyDictionary`` has no deterministic reduction).
The same declaration fits an object that computes nothing, such as a lock that only orders work
(``dpcheck.hypothesis_search._PoolGuard``); a bare lock stays unfingerprintable, since it may guard state
that does change what is computed.

A class may list in ``__fingerprint_transient__`` the instance attributes that are scratch state of
one call sequence, written before they are read by every use (``UserPairs._episode``: the episode in
flight, set by ``reset`` before ``step`` reads it); they are left out of the key. The caches a library class
fills on first use are listed in ``_LIBRARY_TRANSIENT`` (a hypothesis strategy's, an ``np.vectorize``'s ufuncs)
and left out the same way.

Limits (documented, not silent): other lazily filled caches inside an object (a dict it memoises
into) change its key once filled, so a rerun may recompute rather than read back (never the
reverse); state outside the object graph (files the function reads while it runs: the chunk cache
records those itself, see :mod:`dpcheck.filereads`; environment variables, another module reached only through a
name computed as the function runs, ``importlib.import_module(name)``) is not seen; a library upgrade is seen only through its ``__version__``.
"""
from __future__ import annotations

import dis
import contextvars
import functools
import re
import hashlib
import importlib.util
import os
import site
import struct
import sys
import sysconfig
import types
import weakref

import numpy as np

_SKIP_CLASS_ATTRS = frozenset({"__dict__", "__weakref__", "__doc__", "__module__", "__qualname__",
                               "__annotations__", "__dataclass_fields__", "__dataclass_params__",
                               "__match_args__", "__slots__", "__orig_bases__", "__parameters__",
                               "__abstractmethods__", "_abc_impl", "__firstlineno__", "__static_attributes__",
                               "__slotnames__"})   # copyreg caches __slotnames__ on first pickling


class Unfingerprintable(TypeError):
    """An object in the graph cannot be fingerprinted deterministically."""


class WeakMemo(weakref.WeakKeyDictionary):
    """A memo keyed by (immutable) objects, of values computed from them by the code that reads it.

    Declares itself a memo to :func:`fingerprint`, which hashes it by its class only: its contents are
    a function of its keys, so they must not enter a cache key (see the module docstring)."""

    __fingerprint_memo__ = True


class Memo(dict):
    """A memo with keys of any kind: of values derived from its keys by the code that reads it, or of what has
    been done once in this process (a plug-in class loaded from its spec, a configuration probed).

    Declared like :class:`WeakMemo`: hashed by its class only, so a key does not depend on what the process
    did before (which plug-ins an earlier in-process audit loaded). What the computation then uses (the
    privatizer object, its class) enters the key where it is passed, not through the memo."""

    __fingerprint_memo__ = True


@functools.lru_cache(maxsize=1)
def _library_roots() -> tuple[str, ...]:
    roots = {os.path.dirname(os.__file__), sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"],
             sysconfig.get_paths()["platlib"]}
    try:
        roots.update(site.getsitepackages())
    except AttributeError:          # some virtualenvs' site module has no getsitepackages
        pass
    return tuple(sorted(os.path.realpath(r) + os.sep for r in roots if r))


def _is_library_module(mod) -> bool:
    name = getattr(mod, "__name__", "")
    if name == "__main__":
        return False
    f = getattr(mod, "__file__", None)
    if not f:                        # built-in / frozen modules are library; a module made at run time is not
        origin = getattr(getattr(mod, "__spec__", None), "origin", None)
        return name in sys.builtin_module_names or origin in ("built-in", "frozen")
    return _is_library_file(f)


@functools.lru_cache(maxsize=4096)
def _is_library_file(f: str) -> bool:
    f = os.path.realpath(f)
    return any(f.startswith(r) for r in _library_roots())


def _module_of(obj):
    name = getattr(obj, "__module__", None)
    return sys.modules.get(name) if isinstance(name, str) else None


def _stable_module_name(name) -> str:
    """A module's name as it is in every run: a user file loaded by dpcheck.loading gets a per-process
    name (``_dpcheck_user_<hash(path)>``, string hashing is salted), so it is named by its path."""
    if isinstance(name, str) and name.startswith("_dpcheck_user_"):
        f = getattr(sys.modules.get(name), "__file__", None)
        if f:
            return "file:" + os.path.realpath(f)
    return str(name)


@functools.lru_cache(maxsize=4096)
def _find_submodule(package: str, name: str) -> bool:
    try:
        return importlib.util.find_spec(f"{package}.{name}") is not None
    except (ImportError, ValueError):
        return False


def _submodule(mod, name: str):
    """The submodule ``name`` of the package ``mod`` if it has one (imported now if it was not yet), else None.

    A package gains an attribute for each submodule when that submodule is imported, by anyone: without
    this, a function naming ``search`` (say ``re.search``) and the package ``dpcheck`` would fingerprint
    differently before and after something imported ``dpcheck.search`` in the same process, and a second
    audit run in one process would miss its cache."""
    if not hasattr(mod, "__path__") or not _find_submodule(mod.__name__, name):
        return None
    try:
        import importlib
        return importlib.import_module(f"{mod.__name__}.{name}")
    except Exception:  # noqa: BLE001 - a submodule that cannot be imported cannot be reached either
        return None


def _library_version(mod) -> str:
    top = (getattr(mod, "__name__", "") or "").split(".")[0]
    v = getattr(sys.modules.get(top), "__version__", "")
    return v if isinstance(v, str) else repr(v)


class _Hasher:
    def __init__(self):
        self.h = hashlib.sha256()
        self.seen: dict[int, int] = {}
        self.keep: list = []          # keeps walked objects alive so their ids are not reused
        self.where: list[str] = []    # functions / classes being walked, for the error message

    def w(self, *parts) -> None:
        for p in parts:
            b = p if isinstance(p, bytes) else str(p).encode()
            self.h.update(struct.pack("<Q", len(b)))
            self.h.update(b)

    # ------------------------------------------------------------------ the walk
    def obj(self, x, names=()) -> None:
        if x is None or isinstance(x, (bool, int, float, complex, str, bytes)):
            self.w(type(x).__name__, repr(x))
            return
        if isinstance(x, (np.generic,)):
            self.w("np.generic", x.dtype.str, x.tobytes())
            return
        if x is Ellipsis or x is NotImplemented:
            self.w("builtin-singleton", repr(x))
            return
        if getattr(type(x), "__fingerprint_memo__", False) is True:
            self.w("memo", self._qual(type(x)))    # a declared memo table: contents derived from its keys
            return
        if isinstance(x, contextvars.ContextVar):  # e.g. dpcheck.stats' PASS level: its value now is what counts
            self.w("contextvar", x.name)
            self.obj(x.get(None))
            return
        if isinstance(x, types.ModuleType):       # not memoised: each reference names other attributes
            self.module(x, names)
            return
        k = id(x)
        if k in self.seen:
            self.w("ref", self.seen[k])
            return
        self.seen[k] = len(self.seen)
        self.keep.append(x)
        if isinstance(x, np.ndarray):
            if x.dtype.kind == "O":
                self.w("ndarray-O", x.shape)
                for v in x.reshape(-1):
                    self.obj(v)
            else:
                self.w("ndarray", x.dtype.str, x.shape, np.ascontiguousarray(x).tobytes())
        elif isinstance(x, re.Pattern):       # a compiled regex is its pattern and flags
            self.w("re.Pattern", x.pattern, x.flags)
        elif isinstance(x, (list, tuple)):
            self.w(type(x).__name__ if type(x) in (list, tuple) else self._qual(type(x)), len(x))
            if type(x) not in (list, tuple):
                self.cls(type(x))
            for v in x:
                self.obj(v)
        elif isinstance(x, dict) and type(x) is dict:
            self.w("dict", len(x))
            for a, b in x.items():
                self.obj(a)
                self.obj(b)
        elif isinstance(x, (set, frozenset)):
            subs = sorted(fingerprint(v) for v in x)
            self.w(type(x).__name__, *subs)
        elif isinstance(x, types.CodeType):
            self.code(x)
        elif isinstance(x, types.FunctionType):
            self.function(x)
        elif isinstance(x, types.MethodType):
            self.w("method")
            self.obj(x.__func__)
            self.obj(x.__self__)
        elif isinstance(x, functools.partial):
            self.w("partial")
            self.obj(x.func)
            self.obj(x.args)
            self.obj(x.keywords)
        elif isinstance(x, (staticmethod, classmethod)):
            self.w(type(x).__name__)
            self.obj(x.__func__)
        elif isinstance(x, functools.cached_property):     # its RLock (3.11) is not part of what it computes
            self.w("cached_property", x.attrname)
            self.obj(x.func)
        elif isinstance(x, property):
            self.w("property")
            for f in (x.fget, x.fset, x.fdel):
                self.obj(f)
        elif isinstance(x, type):
            self.cls(x)
        elif isinstance(x, (types.BuiltinFunctionType, types.WrapperDescriptorType, types.MethodDescriptorType,
                            types.MethodWrapperType, types.ClassMethodDescriptorType, types.GetSetDescriptorType,
                            types.MemberDescriptorType)):
            owner = getattr(x, "__self__", None)
            if owner is not None and not isinstance(owner, types.ModuleType) and not isinstance(owner, type):
                self.w("bound-builtin", getattr(x, "__qualname__", getattr(x, "__name__", "?")))
                self.obj(owner)       # e.g. rng.laplace: the generator's state matters
            else:
                self.w("builtin", getattr(x, "__module__", "") or "",
                       getattr(x, "__qualname__", getattr(x, "__name__", repr(type(x)))))
        elif isinstance(x, np.ufunc):
            self.ufunc(x)
        elif isinstance(x, functools._lru_cache_wrapper):
            # functools.lru_cache / cache: the callable it wraps (its memo is derived from it) and how it memoises
            self.w("lru_cache")
            self.obj(x.cache_parameters())
            self.obj(x.__wrapped__)
        elif _is_numba_dispatcher(x):
            self.w("jit", self._qual(type(x)))          # numba.jit / njit: the Python source it compiles
            self.obj(x.targetoptions)
            self.function(x.py_func)
        else:
            self.instance(x)

    def _qual(self, t) -> str:
        name = getattr(t, "__qualname__", getattr(t, "__name__", "?"))
        return f"{_stable_module_name(getattr(t, '__module__', '?'))}.{name}"

    def _via(self) -> str:
        return f", reached from {' > '.join(self.where[-3:])}" if self.where else ""

    def ufunc(self, u: np.ufunc) -> None:
        """A numpy / scipy.special ufunc is library code, named with its version; any other ufunc (one made
        by np.frompyfunc) runs Python code that cannot be reached from it, so it cannot be fingerprinted."""
        home = _ufunc_home(u)
        if home is None:
            raise Unfingerprintable(f"the ufunc {u.__name__!r} is not numpy's or scipy.special's: the Python "
                                    f"code a np.frompyfunc ufunc runs cannot be read from it (np.vectorize's can)"
                                    f"{self._via()}")
        self.w("ufunc", home, u.__name__, _library_version(sys.modules[home]))

    def instance(self, x) -> None:
        """Class and pickle reduction; and what ``x.__wrapped__`` names, since a wrapper (a decorator class
        using functools.update_wrapper) calls it whether or not its reduction holds it."""
        t = type(x)
        self.w("instance", self._qual(t))
        self.cls(t)
        try:
            red = x.__reduce_ex__(4)
        except Exception as e:
            raise Unfingerprintable(f"a {self._qual(t)} cannot be reduced for hashing "
                                    f"({type(e).__name__}: {e}){self._via()}") from None
        if isinstance(red, str):        # a global singleton, pickled by reference
            self.w("global", red)
            return
        red = tuple(red) + (None,) * (5 - len(red))
        fn, args, state, items, kv = red[:5]
        self.obj(fn)
        self.obj(args)
        self.obj(_hashed_state(t, state))
        if items is not None:
            self.obj(list(items))
        if kv is not None:
            self.obj(list(kv))
        wrapped = getattr(x, "__wrapped__", None)
        if wrapped is not None:
            self.w("wrapped")
            self.obj(wrapped)

    def cls(self, t: type) -> None:
        mod = _module_of(t)
        self.w("class", self._qual(t))
        if mod is not None and _is_library_module(mod):
            self.w("lib", _library_version(mod))
            return
        if ("cls", id(t)) in self.seen:
            return
        self.seen[("cls", id(t))] = len(self.seen)
        self.where.append(t.__qualname__)
        for b in t.__bases__:
            self.obj(b)
        for name in sorted(vars(t)):
            if name in _SKIP_CLASS_ATTRS:
                continue
            self.w("attr", name)
            self.obj(vars(t)[name])
        self.where.pop()

    def module(self, mod, names=()) -> None:
        self.w("module", _stable_module_name(mod.__name__))
        if _is_library_module(mod):
            self.w("lib", _library_version(mod))
            return
        for n in sorted(set(names)):
            v = vars(mod)[n] if n in vars(mod) else _submodule(mod, n)
            if v is not None or n in vars(mod):
                self.w("modattr", n)
                self.obj(v, names=names)

    def code(self, co: types.CodeType) -> None:
        self.w("code", co.co_name, co.co_argcount, co.co_posonlyargcount, co.co_kwonlyargcount, co.co_flags,
               co.co_code, co.co_names, co.co_varnames, co.co_freevars, co.co_cellvars)
        for c in co.co_consts:
            self.obj(c)

    def function(self, f: types.FunctionType) -> None:
        mod = _module_of(f)
        self.w("function", f.__qualname__, _stable_module_name(getattr(f, "__module__", "") or ""))
        if mod is not None and _is_library_module(mod):
            self.w("lib", _library_version(mod))
            return
        self.where.append(f.__qualname__)
        self._function_body(f)
        self.where.pop()

    def _function_body(self, f: types.FunctionType) -> None:
        self.code(f.__code__)
        self.obj(f.__defaults__)
        self.obj(f.__kwdefaults__)
        self.w("closure")
        for cell in f.__closure__ or ():
            try:
                v = cell.cell_contents
            except ValueError:          # an empty cell (a name not yet bound)
                self.w("empty-cell")
                continue
            self.obj(v, names=_all_names(f.__code__))
        g = f.__globals__
        names = _all_names(f.__code__)
        if g.get("__dpcheck_reads__"):
            # a user file loaded by dpcheck.loading: the files it read at import, with their content hashes
            self.w("module-reads")
            self.obj(g["__dpcheck_reads__"])
        reads = _global_names(f.__code__)
        for n in sorted(reads):
            if n in g:
                self.w("global", n)
                self.obj(_stable_module_name(g[n]) if n == "__name__" else g[n], names=names)
            else:
                self.w("builtin-name", n)
        if "__name__" in reads or (reads & _NAMESPACE_READERS) - g.keys():
            # globals()["SCALE"], eval("SCALE"), sys.modules[__name__].SCALE: any global of the module may be
            # read, under a name computed as the function runs
            self.w("namespace")
            for n in sorted(n for n in g if not (n.startswith("__") and n.endswith("__"))):
                self.w("global", n)
                self.obj(g[n], names=names)
        for modname, attrs in _local_imports(f.__code__, g.get("__package__")):
            # imported here if the function has not run yet: the key must not depend on whether it has
            m = _import(modname)
            self.w("import", modname)
            if m is None:
                self.w("import-missing")
                continue
            if not _is_library_module(m):
                for a in attrs:                        # "from pkg import submodule"
                    if a not in vars(m):
                        _import(f"{modname}.{a}")
            self.module(m, attrs | names)


# Library classes whose instances fill caches on first use: the instance-dict keys left out of the key
# (by the qualified name of a class in the instance's MRO). A hypothesis strategy records that it was
# validated in a dict keyed by id() and memoises its label, repr, emptiness and (a lazy strategy) the
# strategy its definition builds: all derived from the definition, which stays in the key.
_LIBRARY_TRANSIENT = {
    "hypothesis.strategies.SearchStrategy": (
        "validate_called", "cached_is_empty", "cached_is_cacheable", "cached_has_reusable_values",
        "_cached_repr", "_SearchStrategy__label", "_LazyStrategy__wrapped_strategy",
        "_LazyStrategy__representation"),
    "numpy.vectorize": ("_ufunc",),     # np.frompyfunc ufuncs of pyfunc, made on the first call with otypes
}


# Builtins through which a function reads its module's globals by a name that need not be in its code (so
# does a function naming ``__name__``: ``sys.modules[__name__]``).
_NAMESPACE_READERS = frozenset({"globals", "eval", "exec"})

# The library modules whose ufuncs are fingerprinted by name (and the module's version).
_UFUNC_HOMES = ("numpy", "scipy.special")


def _ufunc_home(u) -> str | None:
    """The module of :data:`_UFUNC_HOMES` that exports the ufunc ``u`` under its name, or None (np.frompyfunc
    names its ufunc "f (vectorized)", which no module exports)."""
    for home in _UFUNC_HOMES:
        if getattr(sys.modules.get(home), u.__name__, None) is u:
            return home
    return None


def _is_numba_dispatcher(x) -> bool:
    """Whether ``x`` is a numba dispatcher, whose behaviour is its ``py_func`` and compile options. Any other
    object with a ``py_func`` attribute is an instance like any other: its class and its whole state count."""
    return any(f"{c.__module__}.{c.__qualname__}" == "numba.core.dispatcher.Dispatcher" for c in type(x).__mro__)


def _hashed_state(t: type, state):
    """The part of an instance's reduced ``state`` that enters the key.

    A functools.cached_property's stored value is derived from the rest of the object by the property's
    code (hashed with the class): whether it was computed yet must not change the key; a declared
    transient attribute is scratch state every use overwrites before it reads it. A ``__module__`` copied
    by functools.update_wrapper is named as :func:`_stable_module_name` names it (a user file's module has
    a per-process name)."""
    if not isinstance(state, dict):
        return state
    lazy = _cached_property_names(t)
    out = {k: v for k, v in state.items() if k not in lazy}
    if isinstance(out.get("__module__"), str):
        out["__module__"] = _stable_module_name(out["__module__"])
    return out


def _cached_property_names(t: type) -> frozenset:
    """Instance-dict keys the key leaves out: where ``t``'s functools.cached_property attributes store
    their values, the scratch attributes its classes declare in ``__fingerprint_transient__``, and a
    library class's caches (:data:`_LIBRARY_TRANSIENT`)."""
    out = set()
    for c in getattr(t, "__mro__", (t,)):
        out.update(vars(c).get("__fingerprint_transient__", ()))
        out.update(_LIBRARY_TRANSIENT.get(f"{getattr(c, '__module__', '')}.{getattr(c, '__qualname__', '')}", ()))
        for name, v in vars(c).items():
            if isinstance(v, functools.cached_property):
                out.add(v.attrname or name)
    return frozenset(out)


def _import(name: str):
    try:
        return importlib.import_module(name)
    except Exception:              # the function would fail at this import too; nothing more to hash
        return None


def _all_codes(co):
    yield co
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            yield from _all_codes(c)


@functools.lru_cache(maxsize=4096)     # a pure function of the (immutable) code object
def _global_names(co) -> frozenset[str]:
    """Names a code object (and its nested code) may load as globals."""
    out = set()
    for c in _all_codes(co):
        for ins in dis.get_instructions(c):
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL"):
                out.add(ins.argval)
    return frozenset(out)


@functools.lru_cache(maxsize=4096)     # a pure function of the (immutable) code object
def _all_names(co) -> frozenset[str]:
    """Attribute names the code may read from a module: its names, and identifier-like string
    constants (``getattr(config, "SCALE")``)."""
    out = set()
    for c in _all_codes(co):
        out.update(c.co_names)
        out.update(k for k in c.co_consts if isinstance(k, str) and k.isidentifier())
    return frozenset(out)


@functools.lru_cache(maxsize=4096)     # a pure function of the (immutable) code object
def _local_imports(co, package):
    """(module name, names imported from it) for every import statement inside a function body."""
    out = []
    for c in _all_codes(co):
        consts = []
        current = None
        parents: list = []
        for ins in dis.get_instructions(c):
            if ins.opname == "LOAD_CONST":
                consts.append(ins.argval)
            elif ins.opname == "IMPORT_NAME":
                level = consts[-2] if len(consts) >= 2 and isinstance(consts[-2], int) else 0
                name = ins.argval
                if level:
                    try:
                        name = importlib.util.resolve_name("." * level + name, package or "")
                    except (ImportError, ValueError):
                        pass
                current = (name, set())
                out.append(current)
                # "import a.b" binds a; its attributes are reached by name
                parts = name.split(".")
                parents = [(".".join(parts[:i]), {parts[i]}) for i in range(1, len(parts))]
                out.extend(parents)
            elif ins.opname == "IMPORT_FROM" and current is not None:
                current[1].add(ins.argval)
                # "from a.b import c" (and "import a.b as c") bind no name for the packages above a.b: the code
                # cannot reach their other attributes, so they are not walked (walking the package dpcheck for
                # every name of such a function reached dpcheck.run, the whole API and every registered audit)
                if parents and out[-len(parents):] == parents:     # appended by this statement's IMPORT_NAME
                    del out[-len(parents):]
                parents = []
    return tuple((m, frozenset(a)) for m, a in out)


def fingerprint(*objs) -> str:
    """sha256 hex digest of ``objs`` (see the module docstring); raises :class:`Unfingerprintable`."""
    h = _Hasher()
    try:
        for o in objs:
            h.obj(o)
    except RecursionError:
        raise Unfingerprintable("the object graph is too deep to fingerprint") from None
    return h.h.hexdigest()
