"""Seeded, chunked Monte Carlo on joblib (local) or dask.distributed.

Work is cut into chunks whose number and seeds depend only on the seed and the
amount of work, never on the number of workers: chunk i gets the i-th child of
``np.random.SeedSequence(seed).spawn(n_chunks)``. So ``--workers 1`` and
``--workers 2``, local or dask, give identical results.

Finished chunks can be streamed to a cache directory and are read back on the
next run with the same key (resume after an interruption).
"""
from __future__ import annotations

import hashlib
import os
import pickle
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


def _cache_path(cache_dir, key: str, i: int) -> Path:
    h = hashlib.sha256(key.encode()).hexdigest()[:16]
    return Path(cache_dir) / h / f"chunk-{i:06d}.pkl"


def run_chunks(fn: Callable[..., Any], n_chunks: int, seed, *, workers: int = 1, backend: str = "local",
               scheduler: str | None = None, args: Sequence = (), cache_dir=None, cache_key: str | None = None,
               progress: Callable[[int, int], None] | None = None) -> list:
    """Call ``fn(i, seed_sequence_i, *args)`` for i in range(n_chunks); results in chunk order.

    workers:   local processes (joblib's loky backend); 1 runs in this process.
    backend:   "local" (joblib) or "dask" (dask.distributed; ``scheduler`` is the
               address of a running scheduler, or None for a LocalCluster on loopback).
    cache_dir: if given with ``cache_key``, every finished chunk is written there and
               chunks already present are read back instead of recomputed.
    """
    if backend not in BACKENDS:
        raise InputError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if int(workers) < 1:
        raise InputError(f"workers must be >= 1, got {workers!r}")
    seeds = child_seeds(seed, n_chunks)
    results: list = [None] * n_chunks
    todo = list(range(n_chunks))
    if cache_dir is not None and cache_key is not None:
        remaining = []
        for i in todo:
            p = _cache_path(cache_dir, cache_key, i)
            if p.exists():
                with open(p, "rb") as f:
                    results[i] = pickle.load(f)
            else:
                remaining.append(i)
        todo = remaining

    def store(i, r):
        results[i] = r
        if cache_dir is not None and cache_key is not None:
            p = _cache_path(cache_dir, cache_key, i)
            p.parent.mkdir(parents=True, exist_ok=True)
            tmp = p.with_suffix(".tmp")
            with open(tmp, "wb") as f:
                pickle.dump(r, f)
            os.replace(tmp, p)
        if progress is not None:
            progress(sum(x is not None for x in results), n_chunks)

    if not todo:
        return results
    if backend == "dask":
        _run_dask(fn, todo, seeds, args, scheduler, workers, store)
    elif workers == 1 or len(todo) == 1:
        for i in todo:
            store(i, fn(i, seeds[i], *args))
    else:
        from joblib import Parallel, delayed
        par = Parallel(n_jobs=int(workers), backend="loky", return_as="generator")
        for i, r in zip(todo, par(delayed(fn)(i, seeds[i], *args) for i in todo)):
            store(i, r)
    return results


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
        cluster = LocalCluster(n_workers=int(workers), threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address=None)
        client = Client(cluster)
    try:
        import cloudpickle
        payload = cloudpickle.dumps((fn, tuple(args)))
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
