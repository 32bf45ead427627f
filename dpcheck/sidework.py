"""Side work of a run given more than one worker: one spare process for what no check waits on.

An audit run with ``--workers W > 1`` spends stretches in its main process alone (choosing events,
white-box checks, fitting rates) while the W workers idle, and ends with one more: rendering the HTML
report's plots (matplotlib: ~0.7 s to import, ~0.1 s a plot; 2-3 s of a 20-40 s audit). A
:class:`SideProcess` renders each plot as soon as its check is streamed (:class:`PlotPrefetch`), on the
core the run was given but the main process is not using, so the final write only collects the PNGs.

Nothing here changes what a report says: a PNG rendered in the side process is the one the main process
would render (same code, same matplotlib; tests/core/test_sidework.py compares the HTML byte for byte),
and whatever the side process cannot deliver (it failed to start, died, raised) is rendered in the main
process at the end, as without it. The process is started lazily, with ``spawn`` (never a fork of a
process that holds loky's threads), dies with its parent (dpcheck.parallel._worker_init), ignores
Ctrl-C (the parent handles it) and is shut down when the run's reports are written.
"""
from __future__ import annotations

import json
import os
from concurrent.futures import Future
from typing import Any, Callable


class SideProcess:
    """One lazily started worker process; :meth:`submit` returns None when it cannot take work."""

    def __init__(self):
        self._executor = None
        self._broken = False

    def submit(self, fn: Callable[..., Any], *args) -> Future | None:
        if self._broken:
            return None
        try:
            if self._executor is None:
                import multiprocessing
                from concurrent.futures import ProcessPoolExecutor
                self._executor = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                                                     initializer=_side_init, initargs=(os.getpid(),))
            return self._executor.submit(fn, *args)
        except Exception:          # cannot start or is broken: the caller does the work itself
            self._broken = True
            return None

    def close(self) -> None:
        """Stop the process; work not started is dropped (its caller renders it inline)."""
        ex, self._executor = self._executor, None
        if ex is not None:
            ex.shutdown(wait=False, cancel_futures=True)


def _side_init(parent_pid: int) -> None:
    """The side process dies with its parent (dpcheck.parallel._worker_init) and leaves Ctrl-C to it: the
    parent writes the interrupted report and shuts this process down (no KeyboardInterrupt traceback from
    a process the user never started)."""
    import signal
    from dpcheck.parallel import _worker_init
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _worker_init(parent_pid)


def plot_specs(rep: dict, start: int = 0):
    """Every plot spec of a report dict (of its checks from index ``start`` on), in the order the HTML shows them."""
    for c in (rep.get("checks") or [])[start:]:
        for spec in (c.get("details") or {}).get("plots", []) or []:
            if isinstance(spec, dict):
                yield spec


def _key(spec: dict) -> str:
    return json.dumps(spec, sort_keys=True, default=repr)


class PlotPrefetch:
    """The PNGs of a report's plots, rendered by a :class:`SideProcess` as the checks arrive.

    ``prefetch(rep)`` after each streamed report submits the plots not seen yet; ``png(spec)`` is the
    renderer :func:`dpcheck.report.to_html` uses: the side process's PNG when it delivered one, else
    the plot rendered here (the same function)."""

    #: how long the final write waits, in all, for PNGs the side process has not delivered yet (seconds);
    #: past it, the rest are rendered here (a side process that hangs must not hold the report back)
    WAIT = 120.0

    def __init__(self, side: SideProcess | None = None):
        self.side = side if side is not None else SideProcess()
        self.futures: dict[str, Future | None] = {}
        self._deadline = None
        self._seen = 0          # checks already prefetched (a streamed report only ever appends checks)

    def prefetch(self, rep: dict) -> None:
        from dpcheck.report import _plot_png
        for spec in plot_specs(rep, self._seen):
            key = _key(spec)
            if key not in self.futures:
                self.futures[key] = self.side.submit(_plot_png, spec)
        self._seen = len(rep.get("checks") or [])

    def png(self, spec: dict) -> str | None:
        from dpcheck.report import _plot_png
        import time
        fut = self.futures.get(_key(spec))
        if fut is not None:
            if self._deadline is None:
                self._deadline = time.monotonic() + self.WAIT
            try:
                return fut.result(timeout=max(0.0, self._deadline - time.monotonic()))
            except Exception:      # the side process died, raised or is too slow: render it here
                pass
        return _plot_png(spec)

    def close(self) -> None:
        self.side.close()
