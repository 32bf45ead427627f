"""Loading a user's object from ``path/to/file.py:NAME`` or ``pkg.module:NAME``.

One place for the rules, shared by the CLI (audit targets) and the privatizer
loader: a missing file, a file that is not Python source, a module that cannot
be imported, or a missing name is bad input (InputError); a user's module that
runs and raises is reported as ``import_error`` (InputError for targets,
MechanismError for privatizers) naming the file and the exception.

A loaded plug-in that draws noise must draw all of it from the generator it is handed: every verdict,
``--cache`` and identical results across ``--workers`` rest on that. :func:`probe_rng_use` is the one
check of it, for every kind of plug-in (count privatizers, offline and regression privatizers, stream
privatizers, selection mechanisms), each passing its own release function and messages.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from typing import Any, Callable

import numpy as np

from dpcheck.errors import DPCheckError, InputError, MechanismError


def split_spec(spec: str, what: str) -> tuple[str, str]:
    mod, _, name = spec.rpartition(":")
    if not mod or not name:
        raise InputError(f"{what} {spec!r}: expected path/to/file.py:NAME or pkg.module:NAME")
    return mod, name


def is_path(mod: str) -> bool:
    return mod.endswith(".py") or "/" in mod or os.sep in mod


def load_module(mod: str, what: str, import_error=InputError):
    """Import ``mod`` (a .py path or a dotted module name)."""
    if is_path(mod):
        path = os.path.abspath(mod)
        if not os.path.isfile(path):
            raise InputError(f"{what}: no such file {mod!r}")
        if not path.endswith(".py"):
            raise InputError(f"{what}: {mod!r} is not a Python file (.py)")
        name = f"_dpcheck_user_{abs(hash(path))}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise InputError(f"{what}: cannot load {mod!r} as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        sys.path.insert(0, os.path.dirname(path))
        try:
            # the files the module reads while it runs (a noise scale from cfg.json at import): the fingerprint
            # of its functions includes them (dpcheck.fingerprint), so a changed file changes the cache key
            from dpcheck.filereads import record
            _, reads = record(spec.loader.exec_module, module)
            module.__dict__["__dpcheck_reads__"] = [f for f in reads if os.path.abspath(f[0]) != path]
        except DPCheckError:
            raise
        except (Exception, SystemExit) as e:      # sys.exit at import (an argparse main) is not our exit
            sys.modules.pop(name, None)
            raise import_error(f"{what}: importing {mod} raised {raised_text(e)}") from e
        finally:
            sys.path.remove(os.path.dirname(path))
        _pickle_by_value(module)
        return module
    try:
        return importlib.import_module(mod)
    except ImportError as e:
        raise InputError(f"{what}: cannot import module {mod!r} ({e})") from None
    except DPCheckError:
        raise
    except Exception as e:
        raise import_error(f"{what}: importing {mod} raised {type(e).__name__}: {e}") from e


def load_object(spec: str, what: str = "target", import_error=InputError):
    """The object NAME of ``path/to/file.py:NAME`` or ``pkg.module:NAME``."""
    mod, name = split_spec(spec, what)
    module = load_module(mod, f"{what} {spec!r}", import_error)
    if not hasattr(module, name):
        raise InputError(f"{what} {spec!r}: {mod} has no attribute {name!r}")
    return getattr(module, name)


def _pickle_by_value(module) -> None:
    """Worker processes (loky, dask) cannot import a file module by its made-up name: have
    cloudpickle (joblib's copy and dask's) send its functions and classes by value."""
    for name in ("joblib.externals.cloudpickle", "cloudpickle"):
        try:
            importlib.import_module(name).register_pickle_by_value(module)
        except (ImportError, AttributeError, ValueError):
            pass


def check_plugin_spec(spec: str, what: str, builtin: str, baseline: str) -> None:
    """InputError unless the string ``spec`` can name a user's plug-in of kind ``what`` (``"stream privatizer"``):
    ``none`` is the audit's own non-private ``baseline``, not a plug-in; a name without ``:`` is neither the
    built-in ``builtin`` nor ``file.py:Class`` / ``pkg.module:Class``."""
    if spec.strip().lower() == "none":
        raise InputError(f"{what} 'none': the non-private {baseline} is the audit's own baseline "
                         f"(regret.exponent.nonprivate), not a {what.split()[-1]} to audit; use '{builtin}' or "
                         f"file.py:Class")
    if ":" not in spec:
        raise InputError(f"unknown {what} {spec!r}; expected '{builtin}', 'path/to/file.py:Class' or "
                         f"'pkg.module:Class'")


def call_plugin(who: str, what: str, fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, a call into a user's plug-in ``who`` (``"privatizer 'file.py:C'"``): a
    DPCheckError passes through, any other exception becomes a MechanismError "WHO raised TYPE in WHAT: ..."
    (the CLI's one line, exit 2), chained to the original."""
    try:
        return fn(*args, **kwargs)
    except DPCheckError:
        raise
    except SystemExit as e:
        raise MechanismError(f"{who} called sys.exit({e.code!r}) in {what}") from e
    except Exception as e:
        raise MechanismError(f"{who} raised {type(e).__name__} in {what}: {e}") from e


def raised_text(e: BaseException) -> str:
    """How a user's exception reads in a one-line error: ``TYPE: message``; a SystemExit as the sys.exit call it
    was (caught where user code runs: dpcheck would otherwise exit with the user's code, 0 included, and leave its
    reports unfinished)."""
    if isinstance(e, SystemExit):
        return f"SystemExit (sys.exit({e.code!r}) was called)"
    return f"{type(e).__name__}: {e}"


def _equal_arrays(a, b) -> bool:
    return bool(np.array_equal(a, b))


def probe_rng_use(release: Callable[[np.random.Generator], Any], seeds: tuple[int, int], *,
                  nondeterministic: str, ignores: str | None,
                  same: Callable[[Any, Any], bool] = _equal_arrays,
                  conclusive: Callable[[Any], bool] = lambda out: True) -> None:
    """MechanismError unless ``release(rng)`` is a function of the generator it is given: two generators of
    seed ``seeds[0]`` must give the same release (else MechanismError(``nondeterministic``): it draws from
    numpy's global state, its own generator or the clock), and a generator of seed ``seeds[1]`` a different
    one whenever ``conclusive(release)`` (else MechanismError(``ignores``): it ignores the generator, e.g. a
    fixed seed of its own; ``ignores=None`` skips this half). ``same(a, b)``: equality of two releases
    (default: numpy arrays, exactly). Every release is drawn before any comparison."""
    a, b = release(np.random.default_rng(seeds[0])), release(np.random.default_rng(seeds[0]))
    c = None if ignores is None else release(np.random.default_rng(seeds[1]))
    if not same(a, b):
        raise MechanismError(nondeterministic)
    if ignores is not None and same(a, c) and conclusive(a):
        raise MechanismError(ignores)
