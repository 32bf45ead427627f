"""dpcheck.parallel.cached_call / ResultCache: one expensive computation (not cut into chunks) stored under
the chunk cache's keying discipline, read back on a rerun, validated on read, reported."""
import os
from dpcheck import cachefile
import threading
from pathlib import Path

import numpy as np
import pytest

from dpcheck.context import AuditContext, AuditOptions
from dpcheck.errors import InputError
from dpcheck.parallel import ResultCache, cached_call, using_result_cache, with_result_cache

def _batch(n, seed, *, scale=1.0):
    # counted in a file named by the environment: outside the object graph, so not part of the key
    with open(os.environ["DPCHECK_TEST_CALLS"], "a") as f:
        f.write(f"{n} {seed} {scale}\n")
    return np.random.default_rng(seed).normal(size=(n, 3)) * scale


def _calls():
    p = Path(os.environ["DPCHECK_TEST_CALLS"])
    return len(p.read_text().splitlines()) if p.exists() else 0


def _files(d):
    return sorted(Path(d).rglob("chunk-*.dpchunk"))


@pytest.fixture(autouse=True)
def _counter(tmp_path, monkeypatch):
    monkeypatch.setenv("DPCHECK_TEST_CALLS", str(tmp_path / "calls.txt"))


def test_without_an_active_cache_it_is_just_the_call(tmp_path):
    out = cached_call("t", _batch, 4, 1, scale=2.0)
    assert np.array_equal(out, _batch(4, 1, scale=2.0)) and _calls() == 2
    with using_result_cache(None):
        cached_call("t", _batch, 4, 1)
    assert _calls() == 3 and not _files(tmp_path)


def test_second_call_reads_back_the_identical_result_and_reports_it(tmp_path):
    rep, said = {}, []
    with using_result_cache(ResultCache(tmp_path, say=said.append, report=rep)):
        a = cached_call("t", _batch, 4, 1, scale=2.0)
        b = cached_call("t", _batch, 4, 1, scale=2.0)
    assert _calls() == 1
    assert a.dtype == b.dtype and a.tobytes() == b.tobytes()        # bit-identical
    assert rep["hits"] == 1 and rep["computed"] == 1 and rep["recomputed"] == []
    assert [c["status"] for c in rep["calls"]] == ["computed", "hit"]
    assert rep["calls"][0]["key"] == rep["calls"][1]["key"] and len(_files(tmp_path)) == 1
    assert any("read back t" in m for m in said)
    # a new cache object (a new process) over the same directory
    rep2 = {}
    with using_result_cache(ResultCache(tmp_path, report=rep2)):
        c = cached_call("t", _batch, 4, 1, scale=2.0)
    assert rep2["hits"] == 1 and _calls() == 1 and c.tobytes() == a.tobytes()


def test_key_follows_args_kwargs_label_and_code(tmp_path):
    cache = ResultCache(tmp_path)
    cache.call("t", _batch, 4, 1)
    for label, args, kw in [("t", (4, 2), {}), ("t", (5, 1), {}), ("t", (4, 1), {"scale": 0.1}), ("u", (4, 1), {})]:
        out = cache.call(label, _batch, *args, **kw)
        assert np.array_equal(out, _batch(*args, **kw))
    assert cache.report["hits"] == 0 and cache.report["computed"] == 5

    def make(scale):
        def fn(n):
            return np.ones(n) * scale
        return fn
    assert cache.call("f", make(1.0), 3).sum() == 3.0
    assert cache.call("f", make(0.1), 3).sum() == pytest.approx(0.3)   # a closure value changed: recomputed


@pytest.mark.parametrize("damage", ["truncated", "garbage", "other_key", "wrong_shape"])
def test_damaged_results_are_recomputed_and_named(tmp_path, damage):
    fresh = _batch(4, 3)
    ResultCache(tmp_path).call("t", _batch, 4, 3)
    (target,) = _files(tmp_path)
    if damage == "truncated":
        target.write_bytes(target.read_bytes()[:40])
    elif damage == "garbage":
        target.write_bytes(b"\x00not a pickle" * 10)
    elif damage == "other_key":
        other = tmp_path / "other"
        ResultCache(other).call("t", _batch, 4, 4)
        target.write_bytes(_files(other)[0].read_bytes())
    else:
        rec, result = cachefile.loads(target.read_bytes())
        target.write_bytes(cachefile.dumps(rec, result[:1]))      # consistent hash, short result
    said, rep = [], {}
    out = ResultCache(tmp_path, say=said.append, report=rep).call("t", _batch, 4, 3)
    assert out.tobytes() == fresh.tobytes()
    assert rep["hits"] == 0 and rep["computed"] == 1
    assert [(r["label"], r["file"]) for r in rep["recomputed"]] == [("t", str(target))]
    assert any(str(target) in m and "recomputing" in m for m in said)
    rep = {}
    ResultCache(tmp_path, report=rep).call("t", _batch, 4, 3)                     # repaired on disk
    assert rep["hits"] == 1 and rep["recomputed"] == []


def test_validate_rejects_a_stored_result(tmp_path):
    cache = ResultCache(tmp_path)
    cache.call("t", _batch, 4, 3)
    out = cache.call_with("t", _batch, (4, 3), validate=lambda r: "negative entries" if (r < 0).any() else None)
    assert out.tobytes() == _batch(4, 3).tobytes()
    assert cache.report["recomputed"][0]["why"] == "negative entries" and cache.report["hits"] == 0


def test_unfingerprintable_inputs_run_uncached_and_say_so(tmp_path):
    lock = threading.Lock()
    said = []
    cache = ResultCache(tmp_path / "x", say=said.append)
    assert cache.call("t", lambda lk, n: n + 1, lock, 2) == 3
    assert cache.call("t", lambda lk, n: n + 1, lock, 2) == 3
    assert not (tmp_path / "x").exists()
    assert [c["status"] for c in cache.report["calls"]] == ["disabled", "disabled"]
    assert "cannot be fingerprinted" in cache.report["calls"][0]["why"] and any("cache not used" in m for m in said)


def test_unwritable_cache_dir_is_bad_input(tmp_path):
    f = tmp_path / "file"
    f.write_text("not a directory")
    with pytest.raises(InputError, match="cannot write the cache chunk"):
        ResultCache(f).call("t", _batch, 2, 0)


def test_an_interrupted_audit_resumes_from_its_finished_calls(tmp_path):
    """The decorator: with --cache a rerun of the audit reads back what finished before the interruption."""
    stop = {"after": 2}

    @with_result_cache
    def audit(ctx):
        for i in range(4):
            if i == stop["after"]:
                raise KeyboardInterrupt
            ctx.config.setdefault("out", []).append(cached_call("a", _batch, 3, i).sum())

    ctx = AuditContext("t", AuditOptions(cache_dir=str(tmp_path)))
    with pytest.raises(KeyboardInterrupt):
        audit(ctx)
    assert ctx.config["result_cache"]["computed"] == 2 and _calls() == 2
    stop["after"] = None
    ctx2 = AuditContext("t", AuditOptions(cache_dir=str(tmp_path)))
    audit(ctx2)
    rc = ctx2.config["result_cache"]
    assert (rc["hits"], rc["computed"]) == (2, 2) and _calls() == 4
    plain = AuditContext("t", AuditOptions())
    audit(plain)
    assert "result_cache" not in plain.config and plain.config["out"] == ctx2.config["out"]
    assert cached_call("a", _batch, 3, 0) is not None and _calls() == 9       # no cache outside the audit


def _inner(n, seed):
    return cached_call("inner", _batch, n, seed)


def _outer(n, seed):
    # reaches the active cache through cached_call's context variable
    return _inner(n, seed) + 1.0


def test_a_computation_that_calls_cached_call_keys_the_same_whatever_the_cache_has_seen(tmp_path):
    """The active ResultCache (its directory, its running tally) is not part of a computation's key: a
    rerun of an outer cached computation that itself calls cached_call is read back, not recomputed."""
    for run in range(2):
        cache = ResultCache(tmp_path / "c0", report={})
        with using_result_cache(cache):
            cached_call("warm-up", _batch, 2, run)      # a different tally before the outer call each run
            cached_call("outer", _outer, 3, 7)
        outer = [c for c in cache.report["calls"] if c["label"] == "outer"]
        assert outer[0]["status"] == ("computed" if run == 0 else "hit")
    other = ResultCache(tmp_path / "elsewhere", report={})
    with using_result_cache(other):
        cached_call("outer", _outer, 3, 7)
    first = ResultCache(tmp_path / "c0", report={})
    with using_result_cache(first):
        cached_call("outer", _outer, 3, 7)
    key = {c["label"]: c for c in other.report["calls"]}["outer"]["key"]
    assert first.report["calls"] == [{**first.report["calls"][0], "status": "hit"}]
    assert first.report["calls"][0]["key"] == key          # a cache in another directory keys it the same
