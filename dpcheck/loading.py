"""Loading a user's object from ``path/to/file.py:NAME`` or ``pkg.module:NAME``.

One place for the rules, shared by the CLI (audit targets) and the privatizer
loader: a missing file, a file that is not Python source, a module that cannot
be imported, or a missing name is bad input (InputError); a user's module that
runs and raises is reported as ``import_error`` (InputError for targets,
MechanismError for privatizers) naming the file and the exception.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys

from dpcheck.errors import DPCheckError, InputError


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
        except Exception as e:
            sys.modules.pop(name, None)
            raise import_error(f"{what}: importing {mod} raised {type(e).__name__}: {e}") from e
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
