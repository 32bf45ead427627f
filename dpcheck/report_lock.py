"""One run at a time per report: an OS lock on a report's files (README "Reports").

Two ``dpcheck audit`` runs writing the same report files (same ``--out`` and report stem,
or a ``--json`` copy landing on another run's file) would leave one run's JSON next to the
other's views, and the last writer's verdict standing for both. So every command that writes
a report (``dpcheck audit``, ``dpcheck report``) first takes an exclusive ``fcntl.flock`` on
``DIR/.STEM.dpcheck.lock`` -- one per report stem in each folder it writes to -- and holds it
until its last write. A second run finds it held and stops with exit 2 before writing
anything, naming the holder (pid, run id, start time, target). Runs of different targets
(different stems) may share a folder: they never write the same file.

The kernel drops a flock when its holder dies, SIGKILL included, so a killed run never leaves
a lock that blocks the next one; the file it leaves is only a record. A holder removes the
lock file before it lets go; whoever opened the old file meanwhile sees that the path no
longer names what it locked and opens it anew (the usual flock-and-unlink protocol).

A lock file holds one JSON line, ``{"pid", "run_id", "started", "target", "command"}``,
written after the lock is taken (a reader may briefly find it empty).

The key of a file is its name without the report suffix (``.junit.xml``, ``.json``, ``.html``,
``.md``), so ``--json D/x.json`` and ``--json D/x.md`` share the lock of report ``x`` in ``D``.
"""
from __future__ import annotations

import errno
import json
import os
from pathlib import Path

from dpcheck.errors import InputError

LOCK_SUFFIX = ".dpcheck.lock"
_REPORT_SUFFIXES = (".junit.xml", ".json", ".html", ".md")


class ReportBusy(InputError):
    """Another live run holds the lock of these report files."""


def key_of(name: str) -> str:
    """The report stem a file name belongs to (``x.junit.xml`` -> ``x``; a name without a report suffix: itself)."""
    for s in _REPORT_SUFFIXES:
        if name.endswith(s) and len(name) > len(s):
            return name[: -len(s)]
    return name


def lock_path(folder, key: str) -> Path:
    return Path(folder) / f".{key}{LOCK_SUFFIX}"


def _describe(text: str) -> str:
    """The holder, as one line, from the text of its lock file."""
    try:
        h = json.loads(text)
        if not isinstance(h, dict):
            raise ValueError
    except ValueError:
        return "another dpcheck run (it has not written its details yet)" if not text.strip() \
            else "another dpcheck run"
    what = f"dpcheck {h.get('command', 'audit')} {h.get('target', '?')}"
    return (f"{what} (pid {h.get('pid', '?')}, run {h.get('run_id', '?')}, started {h.get('started', '?')})")


class ReportLock:
    """Hold the locks of the report files ``paths`` (one per distinct folder and stem) or fail.

    ``holder`` is what a refused run is told: ``{"pid", "run_id", "started", "target", "command"}``
    (``pid`` is filled in). Use as a context manager, or ``acquire()`` / ``release()``.
    """

    def __init__(self, paths, holder: dict):
        keys = {}
        for p in paths:
            p = Path(p)
            folder = p.parent
            keys.setdefault((str(folder.resolve()), key_of(p.name)), lock_path(folder, key_of(p.name)))
        self.lock_files = [keys[k] for k in sorted(keys)]   # one order for every run
        self.holder = {"pid": os.getpid(), **holder}
        self._held: list[tuple[Path, int]] = []

    def acquire(self) -> "ReportLock":
        try:
            for lf in self.lock_files:
                self._held.append((lf, _lock_one(lf, json.dumps(self.holder) + "\n")))
        except BaseException:
            self.release()
            raise
        return self

    def release(self) -> None:
        while self._held:
            lf, fd = self._held.pop()
            try:
                # unlink while still holding: a waiter that opened this file sees it gone and reopens
                if _same_file(os.stat(lf), os.fstat(fd)):
                    os.unlink(lf)
            except OSError:
                pass
            os.close(fd)   # drops the flock

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()
        return False


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _lock_one(lf: Path, text: str) -> int:
    """Take the flock of ``lf`` (creating it); the fd holding it. ReportBusy if a live process holds it."""
    import fcntl
    for _ in range(100):   # each retry means a holder let go in between: progress, not a wait
        try:
            lf.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(lf, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as e:
            raise InputError(f"cannot write reports to {lf.parent}: {e}") from e
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            try:
                held_by = os.pread(fd, 4096, 0).decode("utf-8", "replace")
            except OSError:
                held_by = ""
            os.close(fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                stem = lf.name[1: -len(LOCK_SUFFIX)]
                raise ReportBusy(f"the report {lf.parent / stem}.* is being written by {_describe(held_by)}: "
                                 "wait for it to end, or use another --out") from None
            raise InputError(f"cannot lock the report files in {lf.parent} ({lf.name}): {e}") from e
        try:
            same = _same_file(os.stat(lf), os.fstat(fd))
        except FileNotFoundError:
            same = False
        if not same:          # the previous holder removed it after we opened it: lock the new one
            os.close(fd)
            continue
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, text.encode(), 0)
        except OSError as e:
            os.close(fd)
            raise InputError(f"cannot write reports to {lf.parent}: {e}") from e
        return fd
    raise InputError(f"cannot lock the report files in {lf.parent}: {lf.name} keeps being replaced")
