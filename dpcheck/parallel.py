"""Seeded, chunked Monte Carlo on joblib (local) or dask.distributed.

Work is cut into chunks whose number and seeds depend only on the seed and the
amount of work, never on the number of workers: chunk i gets the i-th child of
``np.random.SeedSequence(seed).spawn(n_chunks)``. So ``--workers 1`` and
``--workers 2``, local or dask, give identical results.

Finished chunks can be streamed to a cache directory and are read back on the
next run of the same computation (resume after an interruption). The key is a
fingerprint of everything the chunks depend on (:class:`ChunkCache`), never just a name.
A single expensive computation that is not cut into chunks (one vectorised batch of runs) is
cached the same way, as a computation of one chunk: :func:`cached_call` / :class:`ResultCache`.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import os
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from dpcheck.errors import InputError

BACKENDS = ("local", "dask")


def child_seeds(seed, n: int) -> list[np.random.SeedSequence]:
    """The n child seeds of ``seed`` (an int, a SeedSequence, or a tuple of ints)."""
    if isinstance(seed, np.random.SeedSequence):
        root = seed
    elif isinstance(seed, (tuple, list)):
        root = np.random.SeedSequence([int(s) for s in seed])
    else:
        root = np.random.SeedSequence(int(seed))
    return root.spawn(n)


CHUNK_FORMAT = "dpcheck.chunk/2"


class ChunkCache:
    """One run's chunk files: ``<cache_dir>/<key[:16]>/chunk-NNNNNN.dpchunk``.

    The key is a sha256 over the caller's label, the fingerprint of ``fn`` and ``args``
    (:func:`dpcheck.fingerprint.fingerprint`: code, closure values, referenced globals), the
    root seed, the number of chunks, and the dpcheck / numpy / Python versions. Each file
    (:mod:`dpcheck.cachefile`: JSON and .npy arrays under a SHA-256 of the content, never a pickle: reading
    a cache runs no code) holds ``{"format", "key", "index", "n_chunks", "label", "meta", "files"}`` and the
    result, with ``meta`` the result's type, shape and dtype and ``files`` the files the computation opened
    for reading with their content hashes (:mod:`dpcheck.filereads`). Policy on read (resume, never reuse
    wrongly): a file whose content hash does not match (one flipped byte, an edited value), that is not
    a chunk file at all (a pickle, garbage, truncated), holds another key, index or chunk count, whose
    result does not match its recorded shape / dtype or fails the caller's ``validate``, or whose
    computation read a file that has changed since, is *recomputed* and overwritten; each such file is
    named in a progress line and listed in :meth:`report` ("recomputed"). Nothing is refused:
    recomputation is always possible, and a refused chunk would only stop a run that can repair itself.
    A result the safe format cannot hold (:class:`dpcheck.cachefile.NotStorable`) is returned but not
    stored ("not_stored"). A cache directory that cannot be written is an InputError.
    """

    def __init__(self, cache_dir, key: str, n_chunks: int, label: str, say: Callable[[str], None]):
        self.dir = Path(cache_dir) / key[:16]
        self.key, self.n_chunks, self.label, self.say = key, n_chunks, label, say
        self.hits = 0
        self.written = 0
        self.recomputed: list[dict] = []
        self.not_stored: list[dict] = []
        self.files_read: set[str] = set()

    def path(self, i: int) -> Path:
        return self.dir / f"chunk-{i:06d}.dpchunk"

    def read(self, i: int, validate) -> tuple[bool, Any]:
        from dpcheck import cachefile, filereads
        p = self.path(i)
        if not p.exists():
            return False, None
        why = None
        try:
            rec, result = cachefile.loads(p.read_bytes())
        except cachefile.Damaged as e:
            why = str(e)
        except OSError as e:
            why = f"unreadable ({e.strerror or e})"
        else:
            if rec.get("format") != CHUNK_FORMAT:
                why = "not a dpcheck chunk file of this version"
            elif rec.get("key") != self.key:
                why = "written by a different computation (key mismatch)"
            elif rec.get("index") != i or rec.get("n_chunks") != self.n_chunks:
                why = f"holds chunk {rec.get('index')} of {rec.get('n_chunks')}, expected {i} of {self.n_chunks}"
            elif rec.get("meta") != _meta(result):
                why = f"result does not match its recorded shape/dtype {rec.get('meta')}"
            elif not _files_ok(rec.get("files")):
                why = "malformed record of the files it read"
            else:
                why = filereads.changed(rec["files"])
                if why is None and validate is not None:
                    why = validate(i, result)
        if why is None:
            self.hits += 1
            self.files_read.update(f[0] for f in rec["files"])
            return True, result
        self.recomputed.append({"file": str(p), "why": why})
        self.say(f"cache: {p}: {why}; recomputing this chunk")
        return False, None

    def write(self, i: int, result, files=()) -> bool:
        """Store chunk i (``files``: [[path, digest], ...] it read); False if the result cannot be stored."""
        from dpcheck import cachefile
        p = self.path(i)
        rec = {"format": CHUNK_FORMAT, "key": self.key, "label": self.label, "index": i,
               "n_chunks": self.n_chunks, "meta": _meta(result), "files": [list(f) for f in files]}
        self.written += 1                      # computed (reported as such whether or not it can be stored)
        try:
            data = cachefile.dumps(rec, result)
        except cachefile.NotStorable as e:
            why = f"not stored: the result holds {e}"
            self.not_stored.append({"index": i, "why": why})
            self.say(f"cache: chunk {i} of {self.label}: {why}")
            return False
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            cachefile.write_atomic(p, data)
        except OSError as e:
            raise InputError(f"cannot write the cache chunk {p}: {e.strerror or e}") from None
        self.files_read.update(f[0] for f in files)
        return True

    def report(self) -> dict:
        out = {"dir": str(self.dir), "key": self.key, "chunks": self.n_chunks, "hits": self.hits,
               "computed": self.written, "recomputed": list(self.recomputed)}
        if self.not_stored:
            out["not_stored"] = list(self.not_stored)
        if self.files_read:
            out["files_read"] = sorted(self.files_read)
        return out


def _files_ok(files) -> bool:
    return isinstance(files, list) and all(isinstance(f, list) and len(f) == 2 and all(isinstance(x, str) for x in f)
                                           for f in files)


def _meta(result) -> dict:
    """What a chunk file records about its result, checked again on read."""
    if isinstance(result, np.ndarray):
        return {"type": "ndarray", "shape": list(result.shape), "dtype": result.dtype.str}
    if isinstance(result, (list, tuple, dict)):
        return {"type": type(result).__name__, "len": len(result)}
    return {"type": type(result).__name__}


def chunk_cache_key(label: str, fn, args, seed, n_chunks: int) -> str:
    """The chunk-cache key of a run (see :class:`ChunkCache`); raises Unfingerprintable."""
    from dpcheck._version import __version__
    from dpcheck.fingerprint import fingerprint
    root = seed if isinstance(seed, np.random.SeedSequence) else None
    seed_id = (("ss", repr(root.entropy), tuple(root.spawn_key), root.pool_size, root.n_children_spawned)
               if root is not None else ("seed", repr(seed)))
    versions = (__version__, np.__version__, sys.version_info[:3])
    return fingerprint(CHUNK_FORMAT, label, versions, seed_id, int(n_chunks), fn, tuple(args))


def run_chunks(fn: Callable[..., Any], n_chunks: int, seed, *, workers: int = 1, backend: str = "local",
               scheduler: str | None = None, args: Sequence = (), cache_dir=None, cache_key: str | None = None,
               progress: Callable[[int, int], None] | None = None, say: Callable[[str], None] | None = None,
               validate: Callable[[int, Any], str | None] | None = None,
               cache_report: dict | None = None, indices: Sequence[int] | None = None,
               on_result: Callable[[int, Any], None] | None = None) -> list:
    """Call ``fn(i, seed_sequence_i, *args)`` for i in range(n_chunks); results in chunk order.

    workers:      local processes (joblib's loky backend); 1 runs in this process.
    backend:      "local" (joblib) or "dask" (dask.distributed; ``scheduler`` is the
                  address of a running scheduler, or None for a LocalCluster on loopback).
    cache_dir:    if given, every finished chunk is written there and chunks of the same
                  computation already present are read back instead of recomputed. The key is
                  derived from ``fn``, ``args``, ``seed`` and ``n_chunks`` themselves (see
                  :class:`ChunkCache`); ``cache_key`` is only a label mixed into it (say, the
                  audit and check), so two different computations never share chunks. If ``fn``
                  or ``args`` cannot be fingerprinted, the run goes on without the cache and
                  ``say`` explains why.
    say:          progress messages (cache use, recomputed chunks).
    validate:     ``validate(i, result) -> None | reason``: a cached result it rejects is recomputed.
    cache_report: a dict that receives :meth:`ChunkCache.report` (or ``{"disabled": reason}``).
    indices:      run only these chunks (each still gets child seed i of ``n_chunks``, so a chunk is the
                  same whichever subset it is run in); the others stay None. ``progress`` then counts
                  over ``indices``.
    on_result:    ``on_result(i, result)`` receives every result (cached or computed; with dask in
                  completion order) and the results are not kept (the returned list holds None): a
                  streamed reduction holds one chunk at a time, whatever ``n_chunks``.
    """
    if backend not in BACKENDS:
        raise InputError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if int(workers) < 1:
        raise InputError(f"workers must be >= 1, got {workers!r}")
    say = say or (lambda msg: None)
    results: list = [None] * n_chunks
    todo = list(range(n_chunks)) if indices is None else [int(i) for i in indices]
    total = len(todo)
    n_done = [0]

    def keep(i, r):
        n_done[0] += 1
        if on_result is not None:
            on_result(i, r)
        else:
            results[i] = r
    cache = None
    if cache_dir is not None:
        from dpcheck.fingerprint import Unfingerprintable
        label = cache_key or f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', '')}"
        try:
            key = chunk_cache_key(label, fn, args, seed, n_chunks)
        except Unfingerprintable as e:
            reason = f"cache not used for {label}: its inputs cannot be fingerprinted ({e})"
            say(reason)
            if cache_report is not None:
                cache_report.update({"disabled": reason})
        else:
            # the key (computed before spawning: it records the seed's state as handed to us)
            cache = ChunkCache(cache_dir, key, n_chunks, label, say)
            remaining = []
            for i in todo:
                ok, r = cache.read(i, validate)
                if ok:
                    keep(i, r)
                    del r
                else:
                    remaining.append(i)
            todo = remaining
            if cache.hits:
                # "k of n", not "k/n": the command line throttles counters, and this line must show
                say(f"cache: read back {cache.hits} of {total} chunks of {label} from {cache.dir}")

    seeds = child_seeds(seed, n_chunks)
    if cache is not None:
        # the files each chunk opens for reading are stored with it (and checked on reuse): dpcheck.filereads
        from dpcheck.filereads import Recording
        fn = Recording(fn)

    def store(i, r):
        if cache is not None:
            r, files = r
            cache.write(i, r, files)
        keep(i, r)
        if progress is not None:
            progress(n_done[0], total)

    try:
        if not todo:
            return results
        if backend == "dask":
            _run_dask(fn, todo, seeds, args, scheduler, workers, store)
        elif workers == 1 or len(todo) == 1:
            for i in todo:
                store(i, fn(i, seeds[i], *args))
        else:
            from joblib import delayed
            drain_prestart()
            par = _pool(workers)
            wfn = _InCallerContext.of(fn)
            for i, r in zip(todo, par(delayed(wfn)(i, seeds[i], *args) for i in todo)):
                store(i, r)
        return results
    finally:
        if cache is not None and cache_report is not None:
            cache_report.update(cache.report())


class _InCallerContext:
    """``fn`` as a worker process runs it: inside the caller's PASS level (:func:`dpcheck.stats.pass_level`,
    the audit's own alpha). A context variable does not cross into another process, and a chunk that
    decides a check (a probability_check, a regret fit) must decide it as it would in the caller:
    otherwise ``--workers 2`` could turn the PASS of ``--workers 1`` into INCONCLUSIVE."""

    def __init__(self, fn, pass_alpha):
        self.fn, self.pass_alpha = fn, pass_alpha

    @classmethod
    def of(cls, fn):
        from dpcheck.stats import _PASS_ALPHA
        level = _PASS_ALPHA.get()
        return fn if level is None else cls(fn, level)

    def __call__(self, *args):
        from dpcheck.stats import pass_level
        with pass_level(self.pass_alpha):
            return self.fn(*args)


def _pool(workers: int):
    """joblib's Parallel over the local loky pool of ``workers`` processes (one configuration for every pass, so that
    loky reuses the same worker processes between passes, and :func:`prestart` starts the ones the passes use)."""
    from joblib import Parallel
    from joblib.parallel import LokyBackend
    # workers die with this process, even on SIGKILL (no orphan keeps computing; see _die_with_parent)
    backend_ = LokyBackend(initializer=_worker_init, initargs=(os.getpid(),))
    return Parallel(n_jobs=int(workers), backend=backend_, return_as="generator")


_PRESTARTED: list = []      # the warm-up tasks of prestart(), consumed before the next pass
_AT_EXIT: list = []         # [True] once drain_prestart is registered to run at exit


def prestart(workers: int, modules: Sequence[str] = ()) -> None:
    """Start the local pool of ``workers`` processes now, each importing ``modules`` (an audit's module, and the
    modules it lists in ``WORKER_IMPORTS``), without waiting: the workers' start-up (~0.5 s of imports each) then
    overlaps what this process does before its first pass instead of delaying that pass. The first :func:`run_chunks` of the process
    (or :func:`drain_prestart`) waits for these tasks; their results are discarded and an import that fails there
    fails again, with its message, in the pass that needs it. Results never depend on it (a warm-up computes
    nothing). A no-op for one worker."""
    if int(workers) < 2:
        return
    from joblib import delayed
    # what every chunk needs besides the audit's own code: the black box (its chunk functions, the event families)
    # and dpcheck.stats (the PASS level each task runs under): scipy.stats alone is ~0.2 s per worker
    modules = WORKER_MODULES + tuple(modules)
    if not _AT_EXIT:
        import atexit
        atexit.register(drain_prestart)     # a run that ends before its first pass leaves no warm-up waiting
        _AT_EXIT.append(True)
    _PRESTARTED.append(_pool(workers)(delayed(_import_quietly)(modules) for _ in range(int(workers))))


WORKER_MODULES = ("dpcheck.stats", "dpcheck.blackbox")     # imported by every prestarted worker


def drain_prestart() -> None:
    """Wait for the warm-up tasks of :func:`prestart` (a generator of joblib tasks dropped unconsumed would make joblib
    abort the pool's work)."""
    while _PRESTARTED:
        gen = _PRESTARTED.pop()
        try:
            for _ in gen:
                pass
        except Exception:          # noqa: BLE001 - a warm-up's failure is the pass's to report
            pass


def _import_quietly(modules: tuple) -> None:
    """Import ``modules`` and, for each, the modules it names in ``WORKER_IMPORTS`` (what its chunks need in a worker
    but imports only inside functions: an audit module's algorithms)."""
    import importlib
    for m in modules:
        try:
            mod = importlib.import_module(m)
            for dep in getattr(mod, "WORKER_IMPORTS", ()):
                importlib.import_module(dep)
        except Exception:          # noqa: BLE001 - see prestart
            pass


def _worker_init(parent_pid: int) -> None:
    """Initializer of the loky workers: :func:`_keep_grown_workers`, then :func:`_die_with_parent`."""
    _keep_grown_workers()
    _die_with_parent(parent_pid)


def _keep_grown_workers() -> None:
    """Lift loky's memory-leak heuristic in this worker (a worker whose RSS grew 300 MB past its size after its
    first task is replaced): a chunk's peak is bounded by design (dpcheck.limits checks it before the run), and a
    worker that ran a large chunk keeps its numpy arenas and the numba kernels it loaded, so the heuristic only
    restarted healthy workers (dp_nash_vi's JDP black box: each restart re-imported dpcheck and numba, ~2 s of
    an idle core per restart in a 17 s phase)."""
    try:
        from joblib.externals.loky import process_executor
        process_executor._MAX_MEMORY_LEAK_SIZE = 1 << 62
    except (ImportError, AttributeError):
        pass


def _die_with_parent(parent_pid: int) -> None:
    """On Linux, ask the kernel to SIGTERM this loky worker when the
    process that started it dies (prctl PR_SET_PDEATHSIG), so a killed ``dpcheck audit`` (even
    SIGKILL, which it cannot handle) leaves no worker finishing its chunk and idling for minutes.
    Elsewhere a no-op: joblib then stops the workers only when the parent exits normally.
    """
    import signal
    import sys
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGTERM), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


def _run_dask(fn, todo, seeds, args, scheduler, workers, store):
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise InputError("the dask backend needs dask.distributed: pip install 'dpcheck[dask]'") from None
    cluster = None
    if scheduler:
        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, TimeoutError) as e:
            raise InputError(f"cannot reach the dask scheduler at {scheduler!r}: {e}") from None
    else:
        # ":0": any free port for the scheduler's HTTP server (None still takes 8787, and a second run on the
        # machine then warned "Port 8787 is already in use")
        cluster = LocalCluster(n_workers=int(workers), threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address=":0")
        client = Client(cluster)
    try:
        import cloudpickle
        payload = cloudpickle.dumps((_InCallerContext.of(fn), tuple(args)))
        # sent once to every worker, not once per task: the target (a learner's tables, a function class)
        # can be megabytes, and embedded in every task it made graphs of tens of MB per pass
        payload = client.scatter(payload, broadcast=True)
        futures = {client.submit(_call_payload, payload, i, seeds[i], pure=False): i for i in todo}
        for fut in as_completed(futures):
            store(futures[fut], fut.result())
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _call_payload(payload: bytes, i, seed):
    """``fn(i, seed, *args)`` from a cloudpickle payload. dask pickles with plain pickle first, which sends
    the functions of a user's file by reference to a module a worker cannot import (the task then never
    runs and the audit waits forever); cloudpickle sends them by value (dpcheck.loading registers them)."""
    import cloudpickle
    fn, args = cloudpickle.loads(payload)
    return fn(i, seed, *args)


# ----------------------------------------------------------------------------- single results
def call_cache_key(label: str, fn, args=(), kwargs=None) -> str:
    """The cache key of ``fn(*args, **kwargs)`` (see :class:`ResultCache`); raises Unfingerprintable."""
    from dpcheck._version import __version__
    from dpcheck.fingerprint import fingerprint
    versions = (__version__, np.__version__, sys.version_info[:3])
    kw = tuple(sorted((kwargs or {}).items()))
    return fingerprint(CHUNK_FORMAT, "call", label, versions, fn, tuple(args), kw)


class ResultCache:
    """Finished expensive computations of one audit, read back on the next run of the same computation.

    A call ``fn(*args, **kwargs)`` is stored as a computation of one chunk
    (``<cache_dir>/<key[:16]>/chunk-000000.dpchunk``, written atomically; :mod:`dpcheck.cachefile`) under the chunk cache's keying
    discipline: the key (:func:`call_cache_key`) is a fingerprint of the label, ``fn`` (code, closure
    values, referenced globals and module constants, default arguments), the arguments (a seed is one of
    them) and the dpcheck / numpy / Python versions; the same read policy as :class:`ChunkCache` applies
    (damaged, foreign-key or shape/dtype-mismatched files, results ``validate`` rejects, or results whose
    computation read a file that has changed since, are recomputed, overwritten and named). ``fn`` must be
    a function of its arguments and the files it reads: what it does to them (a Generator it advances) is
    not replayed on a hit, and other state outside the object graph is not seen (dpcheck.fingerprint). Inputs that cannot be fingerprinted run uncached, and the report says why.

    ``report`` (a dict, e.g. ``ctx.config["result_cache"]``) receives ``hits``, ``computed``,
    ``recomputed`` ([{label, file, why}]) and ``calls`` ([{label, key, status: hit | computed |
    disabled, ...}]), updated after every call so that a streamed report shows what was read back.

    The active cache is not part of any computation's key: a function that calls :func:`cached_call`
    reaches it through a context variable, and its directory and running tally (hits so far) must not
    make the same computation key differently on a rerun (dpcheck.fingerprint's memo rule).
    """

    __fingerprint_memo__ = True

    def __init__(self, cache_dir, *, say: Callable[[str], None] | None = None, report: dict | None = None):
        self.cache_dir = cache_dir
        self.say = say or (lambda msg: None)
        self.report = report if report is not None else {}
        self.report.update({"hits": 0, "computed": 0, "recomputed": [], "calls": []})

    def call(self, label: str, fn: Callable[..., Any], *args, **kwargs):
        """``fn(*args, **kwargs)``, read back from the cache if this exact computation finished before."""
        return self.call_with(label, fn, args, kwargs)

    def call_with(self, label: str, fn: Callable[..., Any], args: Sequence = (), kwargs: dict | None = None,
                  validate: Callable[[Any], str | None] | None = None):
        """:meth:`call` with the arguments given as a tuple and a dict, and ``validate(result) -> None |
        reason``: a stored result it rejects is recomputed."""
        from dpcheck.fingerprint import Unfingerprintable
        kwargs = dict(kwargs or {})
        rep = self.report
        try:
            key = call_cache_key(label, fn, args, kwargs)
        except Unfingerprintable as e:
            why = f"its inputs cannot be fingerprinted ({e})"
            self.say(f"cache not used for {label}: {why}")
            rep["calls"].append({"label": label, "status": "disabled", "why": why})
            return fn(*args, **kwargs)
        store = ChunkCache(self.cache_dir, key, 1, label, self.say)
        ok, result = store.read(0, None if validate is None else (lambda i, r: validate(r)))
        rep["recomputed"].extend({"label": label, **r} for r in store.recomputed)
        entry = {"label": label, "key": key, "file": str(store.path(0))}
        if ok:
            self.say(f"cache: read back {label} from {store.path(0)}")
            rep["hits"] += 1
            rep["calls"].append({**entry, "status": "hit"})
            return result
        from dpcheck.filereads import record
        result, files = record(fn, *args, **kwargs)
        stored = store.write(0, result, files)
        rep["computed"] += 1
        extra = {"files_read": [f[0] for f in files]} if files else {}
        if not stored:
            extra["not_stored"] = store.not_stored[-1]["why"]
        rep["calls"].append({**entry, "status": "computed", **extra})
        return result


_ACTIVE: contextvars.ContextVar[ResultCache | None] = contextvars.ContextVar("dpcheck_result_cache", default=None)


def cached_call(label: str, fn: Callable[..., Any], /, *args, **kwargs):
    """``fn(*args, **kwargs)`` through the active :class:`ResultCache` (:func:`using_result_cache`,
    :func:`with_result_cache`); without one (no ``--cache``, or in a worker process) just the call.

    For the expensive computations of an audit that are not cut into chunks, deep inside functions
    that do not see the audit's context: the call site stays a function call."""
    cache = _ACTIVE.get()
    if cache is None:
        return fn(*args, **kwargs)
    return cache.call_with(label, fn, args, kwargs)


@contextlib.contextmanager
def using_result_cache(cache: ResultCache | None):
    """Make ``cache`` the one :func:`cached_call` uses inside the block (None: no caching)."""
    token = _ACTIVE.set(cache)
    try:
        yield cache
    finally:
        _ACTIVE.reset(token)


def with_result_cache(run: Callable):
    """Decorator for an audit's ``run(ctx)``: with ``ctx.options.cache_dir`` (``--cache DIR``), the
    :func:`cached_call` computations of the audit are stored there and read back on a rerun, and their
    use is reported in ``ctx.config["result_cache"]`` (see :class:`ResultCache`)."""
    @functools.wraps(run)
    def wrapped(ctx):
        cache_dir = getattr(ctx.options, "cache_dir", None)
        if cache_dir is None:
            with using_result_cache(None):
                return run(ctx)
        rep = ctx.config.setdefault("result_cache", {})
        with using_result_cache(ResultCache(cache_dir, say=ctx.progress, report=rep)):
            return run(ctx)
    return wrapped
