import os
from dpcheck import cachefile
import threading
from pathlib import Path

import numpy as np
import pytest

from dpcheck.errors import InputError
from dpcheck.parallel import run_chunks


def _draw(i, ss, n):
    return np.random.default_rng(ss).laplace(size=n).sum()


@pytest.mark.slow
def test_same_seed_same_results_for_any_worker_count():
    a = run_chunks(_draw, 6, 123, workers=1, args=(1000,))
    b = run_chunks(_draw, 6, 123, workers=2, args=(1000,))
    assert a == b
    c = run_chunks(_draw, 6, 124, workers=1, args=(1000,))
    assert a != c


def _pass_level(i, ss):
    from dpcheck.stats import pass_alpha
    return pass_alpha(0.001)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["local", "dask"])
def test_a_chunk_decides_at_the_callers_pass_level_in_any_worker(backend):
    """A check decided inside a chunk uses the audit's PASS level (dpcheck.stats.pass_level) in a worker
    process too: a context variable does not cross processes by itself, and --workers 2 turned
    assumption PASSes into INCONCLUSIVE when it did not."""
    if backend == "dask":
        pytest.importorskip("dask.distributed")
    from dpcheck.stats import pass_level
    with pass_level(0.05):
        one = run_chunks(_pass_level, 4, 0, workers=1)
        two = run_chunks(_pass_level, 4, 0, workers=2, backend=backend)
    assert one == two == [0.05] * 4
    assert run_chunks(_pass_level, 4, 0, workers=2) == [0.001] * 4      # outside an audit: the level given


def test_chunk_cache_resumes_without_recomputing(tmp_path):
    calls = []

    def fn(i, ss):
        calls.append(i)
        return float(np.random.default_rng(ss).random())

    first = run_chunks(fn, 4, 7, cache_dir=tmp_path, cache_key="k")
    assert calls == [0, 1, 2, 3]
    calls.clear()
    second = run_chunks(fn, 4, 7, cache_dir=tmp_path, cache_key="k")
    assert calls == [] and first == second


def test_bad_backend_and_workers():
    with pytest.raises(InputError):
        run_chunks(_draw, 2, 0, backend="spark", args=(10,))
    with pytest.raises(InputError):
        run_chunks(_draw, 2, 0, workers=0, args=(10,))


@pytest.mark.slow
def test_dask_backend_matches_local():
    pytest.importorskip("dask.distributed")
    a = run_chunks(_draw, 4, 5, args=(100,))
    b = run_chunks(_draw, 4, 5, backend="dask", workers=1, args=(100,))
    assert a == b


def _size(i, ss, big):
    return float(big[i]) + np.random.default_rng(ss).random()


@pytest.mark.slow
def test_dask_sends_large_arguments_once_not_with_every_chunk():
    """A chunk's arguments (the target: a learner's tables, a function class) can be megabytes. Embedded in
    every task they made dask graphs of tens of MB per pass (dask warned "Sending large graph", 45 MiB in
    private_gfa's dask test); scattered once, the graph stays small and the results are the same."""
    pytest.importorskip("dask.distributed")
    import warnings
    big = np.arange(2 * 10**6, dtype=float)            # 16 MB; 12 chunks would embed ~190 MB
    local = run_chunks(_size, 12, 3, args=(big,))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        on_dask = run_chunks(_size, 12, 3, backend="dask", workers=1, args=(big,))
    assert on_dask == local
    assert not [w for w in seen if "large graph" in str(w.message)], [str(w.message)[:80] for w in seen]


@pytest.mark.slow
def test_a_dask_run_beside_another_on_the_machine_does_not_warn_about_its_port():
    """dpcheck's local dask cluster takes any free port for the scheduler's HTTP server: with 8787 taken (by
    another run, here a bound socket) there is no "Port 8787 is already in use" warning."""
    pytest.importorskip("dask.distributed")
    import socket
    import warnings
    holder = socket.socket()
    try:
        holder.bind(("", 8787))
        holder.listen()
    except OSError:
        pass                                            # already taken by someone else: as good
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            run_chunks(_draw, 2, 0, backend="dask", workers=1, args=(10,))
    finally:
        holder.close()
    assert not [w for w in seen if "already in use" in str(w.message)], [str(w.message)[:80] for w in seen]


@pytest.mark.slow
def test_unreachable_dask_scheduler_is_bad_input():
    pytest.importorskip("dask.distributed")
    with pytest.raises(InputError, match="cannot reach the dask scheduler"):
        run_chunks(_draw, 2, 0, backend="dask", scheduler="tcp://127.0.0.1:9", args=(10,))


# ------------------------------------------------------------------ the chunk cache
def _sq(i, ss, scale):
    return np.random.default_rng(ss).normal(size=3) * scale


def _files(d):
    return sorted(p for p in Path(d).rglob("chunk-*.dpchunk"))


def test_cache_key_follows_args_seed_and_layout(tmp_path):
    rep = {}
    run_chunks(_sq, 3, 1, args=(1.0,), cache_dir=tmp_path, cache_report=rep)
    assert rep["computed"] == 3 and rep["hits"] == 0 and len(_files(tmp_path)) == 3
    for kw in (dict(args=(0.1,)), dict(seed=2), dict(n=4)):
        rep = {}
        out = run_chunks(_sq, kw.get("n", 3), kw.get("seed", 1), args=kw.get("args", (1.0,)), cache_dir=tmp_path,
                         cache_report=rep)
        assert rep["hits"] == 0, kw
        assert all(np.array_equal(a, b) for a, b in zip(out, run_chunks(_sq, kw.get("n", 3), kw.get("seed", 1),
                                                                         args=kw.get("args", (1.0,)))))
    rep = {}
    run_chunks(_sq, 3, 1, args=(1.0,), cache_dir=tmp_path, cache_report=rep)
    assert rep["hits"] == 3 and rep["computed"] == 0 and rep["recomputed"] == []


def test_a_changed_function_never_reads_the_old_chunks(tmp_path):
    def make(scale):
        def fn(i, ss):
            return float(np.random.default_rng(ss).random()) * scale
        return fn
    a = run_chunks(make(1.0), 2, 0, cache_dir=tmp_path)
    b = run_chunks(make(0.1), 2, 0, cache_dir=tmp_path)
    assert b == [x * 0.1 for x in a]


@pytest.mark.parametrize("damage", ["truncated", "garbage", "other_key", "wrong_shape"])
def test_damaged_chunks_are_recomputed_and_named(tmp_path, damage):
    fresh = run_chunks(_sq, 3, 5, args=(1.0,))
    run_chunks(_sq, 3, 5, args=(1.0,), cache_dir=tmp_path)
    target = [p for p in _files(tmp_path)][1]
    if damage == "truncated":
        target.write_bytes(target.read_bytes()[:40])
    elif damage == "garbage":
        target.write_bytes(b"\x00garbage bytes, not a pickle" * 10)
    elif damage == "other_key":
        other = tmp_path / "other"
        run_chunks(_sq, 3, 5, args=(2.0,), cache_dir=other)
        target.write_bytes(_files(other)[1].read_bytes())
    else:
        rec, result = cachefile.loads(target.read_bytes())
        target.write_bytes(cachefile.dumps(rec, result[:1]))   # a short result whose metadata still says 3
    said, rep = [], {}
    out = run_chunks(_sq, 3, 5, args=(1.0,), cache_dir=tmp_path, say=said.append, cache_report=rep)
    assert all(np.array_equal(a, b) for a, b in zip(out, fresh))
    assert rep["hits"] == 2 and rep["computed"] == 1
    assert [r["file"] for r in rep["recomputed"]] == [str(target)]
    assert any(str(target) in m and "recomputing" in m for m in said)
    rep = {}
    run_chunks(_sq, 3, 5, args=(1.0,), cache_dir=tmp_path, cache_report=rep)      # repaired on disk
    assert rep["hits"] == 3 and rep["recomputed"] == []


def test_validate_rejects_a_cached_result(tmp_path):
    run_chunks(_sq, 2, 5, args=(1.0,), cache_dir=tmp_path)
    rep = {}
    run_chunks(_sq, 2, 5, args=(1.0,), cache_dir=tmp_path, cache_report=rep,
               validate=lambda i, r: "too small" if i == 0 else None)
    assert rep["hits"] == 1 and rep["recomputed"][0]["why"] == "too small"


def test_unfingerprintable_work_runs_without_cache_and_says_so(tmp_path):
    lock = threading.Lock()
    said, rep = [], {}

    def fn(i, ss):
        with lock:
            return float(np.random.default_rng(ss).random())
    out = run_chunks(fn, 2, 5, cache_dir=tmp_path / "x", say=said.append, cache_report=rep)
    assert len(out) == 2 and not (tmp_path / "x").exists()
    assert "cannot be fingerprinted" in rep["disabled"] and any("cache not used" in m for m in said)


def test_unwritable_cache_dir_is_bad_input(tmp_path):
    f = tmp_path / "file"
    f.write_text("not a directory")
    with pytest.raises(InputError, match="cannot write the cache chunk"):
        run_chunks(_sq, 1, 0, args=(1.0,), cache_dir=f)


def test_cache_with_two_workers_matches_one_worker(tmp_path):
    one = run_chunks(_sq, 4, 9, args=(1.0,), cache_dir=tmp_path / "a")
    two = run_chunks(_sq, 4, 9, args=(1.0,), workers=2, cache_dir=tmp_path / "b")
    rep = {}
    again = run_chunks(_sq, 4, 9, args=(1.0,), workers=2, cache_dir=tmp_path / "a", cache_report=rep)
    assert rep["hits"] == 4
    assert all(np.array_equal(a, b) and np.array_equal(a, c) for a, b, c in zip(one, two, again))


def _killable(i, ss):
    # the kill comes from outside the computation (like a signal): not part of the cache key
    if os.environ.get("DPCHECK_TEST_KILL_AT") == str(i):
        raise KeyboardInterrupt("killed")
    return float(np.random.default_rng(ss).random())


def test_an_interrupted_run_resumes_from_its_finished_chunks(tmp_path, monkeypatch):
    monkeypatch.setenv("DPCHECK_TEST_KILL_AT", "3")
    with pytest.raises(KeyboardInterrupt):
        run_chunks(_killable, 5, 3, cache_dir=tmp_path)
    assert len(_files(tmp_path)) == 3                 # chunks 0-2 were streamed before the kill
    monkeypatch.delenv("DPCHECK_TEST_KILL_AT")
    rep = {}
    out = run_chunks(_killable, 5, 3, cache_dir=tmp_path, cache_report=rep)
    assert rep["hits"] == 3 and rep["computed"] == 2
    assert out == run_chunks(_killable, 5, 3)


_HELD = []


def _grow_and_report_pid(i, _seed):
    """A chunk that leaves 350 MB behind in its worker (as numpy arenas and loaded kernels do) and lasts past
    loky's 1 s memory-check delay."""
    import os
    import time
    _HELD.append(np.ones(350 * 2**20 // 8))
    time.sleep(1.2)
    return os.getpid()


@pytest.mark.slow
def test_workers_are_not_replaced_when_their_memory_grows():
    """loky replaces a worker whose RSS grew 300 MB past its size after its first task; each replacement
    re-imports dpcheck and numba in the middle of a phase. Our workers lift that heuristic (chunks are bounded
    by dpcheck.limits), so 6 chunks on 2 workers run in 2 processes."""
    pytest.importorskip("psutil")            # loky's memory check needs it; without it there is nothing to lift
    pids = run_chunks(_grow_and_report_pid, 6, 0, workers=2)
    assert len(set(pids)) == 2


def _modules_of_worker(i, ss, names):
    import sys
    return os.getpid(), sorted(n for n in names if n in sys.modules)


def test_prestarted_workers_import_their_modules_and_the_pass_that_follows_is_unchanged():
    """dpcheck.parallel.prestart starts the pool without waiting; its workers import the modules given (and the
    black box's); the first pass after it runs in those workers and returns what it returns without it."""
    from dpcheck import parallel
    mod = "dpcheck.audits.dp_apvi"                 # declares WORKER_IMPORTS
    from dpcheck.audits import dp_apvi
    parallel.prestart(1, (mod,))                   # one worker: nothing to start
    assert parallel._PRESTARTED == []
    parallel.prestart(2, (mod, "no_such_module_x"))  # an import that fails there is the pass's business
    assert len(parallel._PRESTARTED) == 1
    expected = [mod, "dpcheck.blackbox", "dpcheck.stats", *dp_apvi.WORKER_IMPORTS]
    got = run_chunks(_modules_of_worker, 4, 0, workers=2, args=(expected,))
    assert parallel._PRESTARTED == []              # the pass waited for the warm-up first
    assert all(sorted(names) == sorted(expected) for _, names in got)
    assert run_chunks(_draw, 4, 9, workers=2, args=(100,)) == run_chunks(_draw, 4, 9, workers=1, args=(100,))


def test_every_worker_import_an_audit_declares_exists():
    """A misspelt WORKER_IMPORTS entry would only cost time, silently: each one must import."""
    import importlib
    from importlib.metadata import entry_points
    for module in sorted({ep.module for ep in entry_points(group="dpcheck.audits")}):
        for dep in getattr(importlib.import_module(module), "WORKER_IMPORTS", ()):
            importlib.import_module(dep)


def test_a_run_starts_its_workers_when_it_starts_not_when_it_is_refused(monkeypatch):
    """dpcheck.api.Run prestarts the pool only when the run itself starts: a run refused for an option (or by the
    report lock) starts no worker and waits for none."""
    from dpcheck import api, parallel
    calls = []
    monkeypatch.setattr(parallel, "prestart", lambda w, mods=(): calls.append(("prestart", w, tuple(mods))))
    monkeypatch.setattr(parallel, "drain_prestart", lambda: calls.append(("drain",)))
    with pytest.raises(InputError):
        api.Run("laplace_example", {"workers": 2}, extra={"no_such_key": "1"})
    assert calls == []
    r = api.Run("laplace_example", {"workers": 2, "quick": True, "samples": 2000})
    assert calls == []
    r.run(r.ctx)
    assert calls[0] == ("prestart", 2, ("dpcheck.audits.examples",)) and calls[-1] == ("drain",)
