"""The files a computation reads, so that a cached result is reused only while they are unchanged.

The chunk cache's key (:mod:`dpcheck.fingerprint`) covers the object graph of a computation: code, closure
values, globals, module constants. A mechanism that reads its noise scale from a file while it runs
(``json.load(open("cfg.json"))`` in its body, or a factory that does so on every call) depends on state
outside that graph: after the file changes, the same key would hand back chunks drawn with the old scale.
So while a chunk is computed (in this process, a loky worker or a dask worker) every file opened for
reading is recorded through a Python audit hook (PEP 578, ``sys.addaudithook``: the ``open`` event is raised
by ``open``, ``io.open``, ``io.open_code``, ``os.open`` and so by ``np.load``, ``json.load(open(...))``,
pandas' Python readers...), with the SHA-256 of its content. The cache stores the list with the chunk and
reuses the chunk only if every file still has that content (a file that was absent must still be absent);
otherwise the chunk is recomputed and the report names the file (:class:`dpcheck.parallel.ChunkCache`).

A relative path is recorded as it was opened and resolved against the working directory on reuse, so a
rerun from another folder (with its own ``cfg.json``) checks that folder's file.

Not recorded (documented, not silent): files of the standard library and site-packages (their content is
fixed by the library's version, which the key holds) and compiled bytecode (``__pycache__``, rewritten
without a change of source); ``/dev``, ``/proc`` and ``/sys``; files opened only for writing; reads by C
code that bypasses Python's ``open`` (``fopen`` in an extension module); environment variables and
network reads.
"""
from __future__ import annotations

import hashlib
import os
import sys
import threading

from dpcheck.fingerprint import _is_library_file



class _Recorders:
    """The recorders of the computations running in this process. Bookkeeping, not an input of any
    computation: declared so to dpcheck.fingerprint (hashed by its class only; a lock cannot be hashed,
    and the list's contents depend on what is running when a key is computed)."""

    __fingerprint_memo__ = True

    def __init__(self):
        self.active: list[list] = []
        self.lock = threading.Lock()
        self.installed = False


_STATE = _Recorders()
_SKIP_PREFIXES = ("/dev/", "/proc/", "/sys/")
_ACCMODE = getattr(os, "O_ACCMODE", 3)


def _hook(event, args):
    # called for every audit event of the process: keep the common path one comparison long
    if event != "open" or not _STATE.active:
        return
    path, mode, flags = (tuple(args) + (None, None, None))[:3]
    if isinstance(path, int):                      # a file descriptor: its opening was seen (or is not a file)
        return
    if isinstance(mode, str):
        if "r" not in mode and "+" not in mode:
            return
    elif isinstance(flags, int) and (flags & _ACCMODE) == os.O_WRONLY:
        return
    try:
        path = os.fsdecode(path)
    except (TypeError, ValueError):
        return
    with _STATE.lock:
        for rec in _STATE.active:
            rec.append(path)


def _install() -> None:
    if not _STATE.installed:
        sys.addaudithook(_hook)                    # cannot be removed: it does nothing while no recorder is active
        _STATE.installed = True


def _keep(path: str) -> bool:
    full = os.path.abspath(path)
    if full.startswith(_SKIP_PREFIXES) or f"{os.sep}__pycache__{os.sep}" in full or full.endswith((".pyc", ".pyo")):
        return False
    if os.path.isdir(full):
        return False
    return not _is_library_file(full)


def digest(path: str) -> str:
    """"sha256:<hex>" of the file's content, or "absent" / "unreadable" (the state a reuse must find again)."""
    full = os.path.abspath(path)
    try:
        h = hashlib.sha256()
        with _quiet_open(full) as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        return "sha256:" + h.hexdigest()
    except FileNotFoundError:
        return "absent"
    except IsADirectoryError:
        return "directory"
    except OSError:
        return "unreadable"


class _quiet_open:
    """open(path, "rb") that a recorder active in this thread does not record (the hashing itself)."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        with _STATE.lock:
            self.saved = list(_STATE.active)
            _STATE.active.clear()
        try:
            self.f = open(self.path, "rb")
        finally:
            with _STATE.lock:
                _STATE.active.extend(self.saved)
        return self.f

    def __exit__(self, *exc):
        self.f.close()


def files_state(paths) -> list[list[str]]:
    """[[path as opened, digest], ...] for the recorded paths worth keying, each once, in first-read order."""
    out, seen = [], set()
    for p in paths:
        key = os.path.abspath(p)
        if key in seen or not _keep(p):
            continue
        seen.add(key)
        out.append([p, digest(p)])
    return out


def changed(files) -> str | None:
    """Why a stored chunk that read ``files`` ([[path, digest], ...]) may no longer be reused, or None."""
    for path, was in files:
        now = digest(path)
        if now != was:
            return (f"the file {path} it read has changed since it was computed "
                    f"({_short(was)} -> {_short(now)})")
    return None


def _short(d: str) -> str:
    return d[:7 + 12] if d.startswith("sha256:") else d


def record(fn, *args, **kwargs):
    """(fn(*args, **kwargs), files_state of every file it opened for reading meanwhile)."""
    _install()
    seen: list = []
    with _STATE.lock:
        _STATE.active.append(seen)
    try:
        out = fn(*args, **kwargs)
    finally:
        with _STATE.lock:
            del _STATE.active[next(i for i, r in enumerate(_STATE.active) if r is seen)]
    return out, files_state(seen)


class Recording:
    """``fn`` wrapped to return ``(result, files read)`` (:func:`record`); picklable when ``fn`` is, so the
    reads of a chunk are recorded in the worker process that computes it."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args, **kwargs):
        return record(self.fn, *args, **kwargs)
