"""The chunk cache's file format: JSON and ``.npy`` arrays under a SHA-256, never a pickle.

A cache directory may be shared (a CI cache restored from elsewhere, a folder other users can write):
reading it must not run code, and a damaged file must be recognised, not read back with other figures.
So a chunk file is::

    b"DPCHECK-CHUNK/2 " + sha256(body) as 64 hex digits + b"\\n" + body
    body = header (one line of JSON) + b"\\n" + an .npz archive of the result's arrays

The header holds the record (key, index, label, meta, the files the computation read: see
:mod:`dpcheck.filereads`) and the result encoded as a JSON tree (:func:`encode`); every array in the
result is a reference ``{"$": "nd", "i": n}`` to the archive member ``a<n>``, read with
``np.load(allow_pickle=False)`` (an object array is refused, never unpickled). On read the digest is
checked before anything is parsed: one flipped byte anywhere, an edited value, a truncated file, a
pickle or anything else where a chunk is expected is "damaged" (:class:`Damaged`) and the chunk is
recomputed by the caller.

What the digest is not: a signature. Whoever can write the cache directory can still write a
consistent file with other figures (keep the cache as private as the reports it feeds); what they can
no longer do is run code in the next audit.

The codec (:func:`encode` / :func:`decode`) covers what the audits' cached computations return: None,
bool, int, float (NaN and infinities included, exactly), complex, str, bytes, lists, tuples, sets, dicts
(any encodable keys), numpy arrays (not of dtype object) and scalars, and instances of dpcheck's own
classes (packages ``dpcheck``, ``algorithms``, ``audits``: frozen dataclasses such as
:class:`dpcheck.checks.Check` or run records), restored field by field (``object.__new__`` and
``object.__setattr__``: no constructor, ``__setstate__`` or ``__reduce__`` runs). Anything else raises
:class:`NotStorable`: the caller then returns the result without storing it.
"""
from __future__ import annotations

import hashlib
import importlib
import io
import json
import os
import zipfile

import numpy as np

MAGIC = b"DPCHECK-CHUNK/2 "
# classes whose instances may be stored: dpcheck's own code (trusted like the program reading the cache)
TRUSTED_PACKAGES = ("dpcheck",)   # dpcheck.algorithms and dpcheck.audits included


class NotStorable(TypeError):
    """A result the safe codec cannot represent (it is then not cached)."""


class Damaged(ValueError):
    """A chunk file that is not a well-formed, intact dpcheck chunk."""


# ------------------------------------------------------------------ the codec
def encode(value) -> tuple[object, list[np.ndarray]]:
    """(JSON tree, arrays) representing ``value``; raises :class:`NotStorable`."""
    arrays: list[np.ndarray] = []
    return _enc(value, arrays, set()), arrays


def _enc(x, arrays, stack):
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, np.generic):
        if x.dtype.kind == "O":
            raise NotStorable("a numpy object scalar")
        arrays.append(np.asarray(x))
        return {"$": "np", "i": len(arrays) - 1}
    if type(x) is int:
        return x
    if type(x) is float:
        return {"$": "float", "v": repr(x)}          # repr round-trips exactly, NaN and inf included
    if type(x) is complex:
        return {"$": "complex", "re": repr(x.real), "im": repr(x.imag)}
    if type(x) is bytes:
        return {"$": "bytes", "hex": x.hex()}
    if type(x) is np.ndarray:
        if x.dtype.kind == "O" or x.dtype.hasobject:
            raise NotStorable("a numpy array of Python objects")
        arrays.append(x)
        if not x.flags.writeable:                  # immutable records (TabularMDP) stay immutable
            return {"$": "nd", "i": len(arrays) - 1, "ro": True}
        return {"$": "nd", "i": len(arrays) - 1}
    if id(x) in stack:
        raise NotStorable("a self-referencing structure")
    stack.add(id(x))
    try:
        t = type(x)
        if t is list:
            return [_enc(v, arrays, stack) for v in x]
        if t is tuple:
            return {"$": "tuple", "v": [_enc(v, arrays, stack) for v in x]}
        if t in (set, frozenset):
            return {"$": t.__name__, "v": [_enc(v, arrays, stack) for v in x]}
        if t is dict:
            if all(type(k) is str for k in x):
                return {"$": "dict", "v": {k: _enc(v, arrays, stack) for k, v in x.items()}}
            return {"$": "dictkv", "v": [[_enc(k, arrays, stack), _enc(v, arrays, stack)] for k, v in x.items()]}
        return _enc_object(x, arrays, stack)
    finally:
        stack.discard(id(x))


def _trusted(module: str) -> bool:
    return isinstance(module, str) and module.split(".")[0] in TRUSTED_PACKAGES


def _enc_object(x, arrays, stack):
    t = type(x)
    if not _trusted(getattr(t, "__module__", "")) or "<locals>" in t.__qualname__:
        raise NotStorable(f"a {getattr(t, '__module__', '?')}.{t.__qualname__} (only dpcheck's own classes, "
                          "containers, numbers, strings and numpy arrays are stored)")
    if t.__new__ is not object.__new__ or any(b not in (object,) and not _trusted(b.__module__)
                                               for b in t.__mro__[1:]):
        raise NotStorable(f"a {t.__module__}.{t.__qualname__} (built on a class the cache does not restore)")
    state = {}
    for c in t.__mro__:
        for s in vars(c).get("__slots__", ()) if not isinstance(vars(c).get("__slots__"), str) \
                else (vars(c)["__slots__"],):
            if s not in ("__dict__", "__weakref__") and hasattr(x, s):
                state[s] = getattr(x, s)
    state.update(getattr(x, "__dict__", {}))
    return {"$": "obj", "cls": f"{t.__module__}:{t.__qualname__}",
            "v": {k: _enc(v, arrays, stack) for k, v in state.items()}}


def decode(tree, arrays) -> object:
    """The value :func:`encode` represented; ``arrays[i]`` is array i. Raises :class:`Damaged`."""
    try:
        return _dec(tree, arrays)
    except Damaged:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
        raise Damaged(f"malformed result ({type(e).__name__}: {str(e)[:80]})") from None


def _dec(x, arrays):
    if x is None or isinstance(x, (bool, int, str)):
        return x
    if isinstance(x, list):
        return [_dec(v, arrays) for v in x]
    if not isinstance(x, dict):
        raise Damaged(f"malformed result (a JSON {type(x).__name__})")
    tag = x["$"]
    if tag == "nd":
        a = arrays(int(x["i"]))
        if x.get("ro") is True:
            a = a.view()
            a.setflags(write=False)
        return a
    if tag == "np":
        a = arrays(int(x["i"]))
        if a.ndim != 0:
            raise Damaged("malformed result (a numpy scalar stored with a shape)")
        return a[()]
    if tag == "float":
        return float(x["v"])
    if tag == "complex":
        return complex(float(x["re"]), float(x["im"]))
    if tag == "bytes":
        return bytes.fromhex(x["hex"])
    if tag == "tuple":
        return tuple(_dec(v, arrays) for v in x["v"])
    if tag in ("set", "frozenset"):
        return (set if tag == "set" else frozenset)(_dec(v, arrays) for v in x["v"])
    if tag == "dict":
        return {k: _dec(v, arrays) for k, v in x["v"].items()}
    if tag == "dictkv":
        return {_dec(k, arrays): _dec(v, arrays) for k, v in x["v"]}
    if tag == "obj":
        return _dec_object(x, arrays)
    raise Damaged(f"malformed result (unknown tag {str(tag)[:20]!r})")


def _dec_object(x, arrays):
    mod_name, _, qual = str(x["cls"]).partition(":")
    if not _trusted(mod_name) or not qual or "<" in qual:
        raise Damaged(f"names a class outside dpcheck's own packages ({str(x['cls'])[:80]})")
    try:
        mod = importlib.import_module(mod_name)    # only modules of dpcheck's own packages
    except ImportError:
        raise Damaged(f"names a class of a module that does not exist ({mod_name[:80]})") from None
    t = mod
    for part in qual.split("."):
        t = getattr(t, part)
    if not isinstance(t, type) or t.__module__ != mod_name or t.__new__ is not object.__new__:
        raise Damaged(f"names {str(x['cls'])[:80]}, which is not a class the cache restores")
    obj = object.__new__(t)
    for k, v in x["v"].items():
        object.__setattr__(obj, k, _dec(v, arrays))
    return obj


# ------------------------------------------------------------------ the file
def dumps(record: dict, result) -> bytes:
    """The bytes of a chunk file holding ``record`` (JSON-able) and ``result``; raises NotStorable."""
    tree, arrays = encode(result)
    # insertion order kept (no sort_keys): a dict read back iterates as the one stored
    header = json.dumps({**record, "result": tree, "arrays": len(arrays)},
                        separators=(",", ":")).encode()
    buf = io.BytesIO()
    np.savez(buf, **{f"a{i}": a for i, a in enumerate(arrays)})
    body = header + b"\n" + buf.getvalue()
    return MAGIC + hashlib.sha256(body).hexdigest().encode() + b"\n" + body


def loads(data: bytes) -> tuple[dict, object]:
    """(record, result) from the bytes of a chunk file; raises :class:`Damaged` (the digest is checked
    before anything is parsed)."""
    if not data.startswith(MAGIC):
        return _damaged("not a dpcheck chunk file")
    n = len(MAGIC)
    digest, body = data[n:n + 64], data[n + 65:]
    if len(data) < n + 65 or data[n + 64:n + 65] != b"\n":
        return _damaged("not a dpcheck chunk file (truncated header)")
    if hashlib.sha256(body).hexdigest().encode() != digest:
        return _damaged("content hash mismatch (the file was altered or damaged after it was written)")
    header, sep, npz = body.partition(b"\n")
    try:
        record = json.loads(header)
        count = int(record.pop("arrays"))
        tree = record.pop("result")
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        return _damaged(f"malformed header ({type(e).__name__})")
    try:
        archive = np.load(io.BytesIO(npz), allow_pickle=False)
        with archive:
            names = set(archive.files)
            if names != {f"a{i}" for i in range(count)}:
                return _damaged("its arrays do not match its header")
            cache = {}

            def array(i):
                if i not in cache:
                    cache[i] = archive[f"a{i}"]
                return cache[i]
            return record, decode(tree, array)
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as e:
        return _damaged(f"unreadable arrays ({type(e).__name__}: {str(e)[:80]})")


def _damaged(why):
    raise Damaged(why)


def write_atomic(path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (a temporary file in the same folder, then os.replace)."""
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
