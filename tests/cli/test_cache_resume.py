"""Issue 9 acceptance: `dpcheck audit NAME --cache DIR` killed (SIGKILL) half-way resumes to the identical
report. The killed runs are separate processes (the cache keys must agree across processes); the reference
is a complete run without the cache at the same seed."""
import json
import os
from dpcheck import cachefile
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[2]


def _start(name, cache, out, *extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return subprocess.Popen([sys.executable, "-m", "dpcheck.cli", "audit", name, "--quick", "--workers", "1",
                             "--cache", str(cache), "--out", str(out), "--quiet", *extra],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _streamed(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):              # not written yet (the report is replaced atomically or not at all)
        return None


def _labels(cache):
    out = []
    for p in cache.rglob("chunk-*.dpchunk"):
        try:
            out.append(cachefile.loads(p.read_bytes())[0]["label"])
        except Exception:
            pass
    return out


def _kill_when(proc, ready, timeout=600):
    """SIGKILL ``proc`` as soon as ``ready()``; the run must still be going (it is killed half-way)."""
    t0 = time.monotonic()
    while not ready():
        assert proc.poll() is None, "the audit ended before the kill point"
        assert time.monotonic() - t0 < timeout, "the kill point was never reached"
        time.sleep(0.05)
    assert proc.poll() is None, "the audit finished before it could be killed half-way"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL


def _complete(name, tag, tmp_path, cache, *extra):
    """A run to the end with --cache, in a fresh process like the killed ones (in this process the
    suite's conftest wraps dpcheck.context.family_error, and a computation's key covers the code it
    reaches, so an in-process rerun would rightly key differently). The reference, a complete run
    without the cache, runs in-process: conftest's quick_audit, shared with the audit's end-to-end test."""
    out = tmp_path / tag
    code = _start(name, cache, out, *extra).wait(timeout=1800)
    return code, json.loads((out / f"{name}.json").read_text())


def _comparable(rep):
    """Every check in full, except where its numbers came from (details.cache: the chunk cache's use)."""
    out = []
    for c in rep["checks"]:
        c = dict(c)
        c["details"] = {k: v for k, v in c.get("details", {}).items() if k != "cache"}
        out.append(c)
    return out


def _stored_keys(cache):
    return {p.parent.name for p in cache.rglob("chunk-*.dpchunk")}


def _assert_nothing_stored_was_recomputed(rep, stored):
    """A call whose result a killed run had already stored is read back, whatever ran before it in
    either process (the key must not depend on what the process did earlier)."""
    again = [c["label"] for c in rep["config"]["result_cache"]["calls"]
             if c["status"] != "hit" and c.get("key", "")[:16] in stored]
    assert again == [], f"stored results recomputed: {again}"


def _ids(rep):
    return [c["id"] for c in (rep or {}).get("checks", [])]


@pytest.mark.slow
@pytest.mark.xdist_group("dp_ucbvi")
def test_dp_ucbvi_killed_twice_resumes_to_the_identical_report(tmp_path, quick_audit):
    cache = tmp_path / "cache"
    # 1. killed after Assumption 3.1's checks (the monitored batch) are in the streamed report
    p1 = tmp_path / "k1" / "dp_ucbvi.json"
    proc = _start("dp_ucbvi", cache, p1.parent)
    _kill_when(proc, lambda: "assumption.monotone" in _ids(_streamed(p1)))
    assert "regret.exponent.jdp" not in _ids(_streamed(p1))
    # 2. resumed, killed again in the middle of the regret curves (a curve stored, the check not yet reported)
    p2 = tmp_path / "k2" / "dp_ucbvi.json"
    proc = _start("dp_ucbvi", cache, p2.parent)
    _kill_when(proc, lambda: "dp_ucbvi.regret_curves" in _labels(cache))
    second = _streamed(p2)
    rc2 = second["config"]["result_cache"]
    assert {c["label"] for c in rc2["calls"] if c["status"] == "hit"} >= {"dp_ucbvi.monitored_run"}
    assert "regret.exponent.jdp" not in _ids(second)
    # 3. resumed to completion (in this process: the keys agree across processes)
    stored = _stored_keys(cache)
    code3, third = _complete("dp_ucbvi", "r3", tmp_path, cache)
    code0, ref = quick_audit("dp_ucbvi")
    assert third["complete"] is True and code3 == code0
    assert _comparable(third) == _comparable(ref)
    assert [(c["id"], c["verdict"], c["measured"]) for c in third["checks"]] == \
           [(c["id"], c["verdict"], c["measured"]) for c in ref["checks"]]
    rc = third["config"]["result_cache"]
    hits = [c["label"] for c in rc["calls"] if c["status"] == "hit"]
    assert "dp_ucbvi.monitored_run" in hits and rc["recomputed"] == []
    # the regret curves are chunks (one per configuration): those the second kill left stored are read back,
    # the rest computed
    curves = next(c["details"]["cache"] for c in third["checks"] if c["id"] == "regret.exponent.jdp")
    assert curves["hits"] >= 1 and curves["computed"] >= 1 and curves["hits"] + curves["computed"] == curves["chunks"]
    _assert_nothing_stored_was_recomputed(third, stored)
    # the black-box audits (finished before the first kill) and the count-error batches (chunks, finished
    # before the second) are read back whole
    bb = {c["id"]: c["details"]["cache"] for c in third["checks"]
          if "cache" in c.get("details", {}) and not c["id"].startswith("regret.")}
    assert {"privacy.privatizer.blackbox", "privacy.jdp.blackbox", "assumption.count_error_order_eps"} <= set(bb)
    assert all(u["hits"] == u["chunks"] and u["computed"] == 0 for u in bb.values())
    # a fourth run reads everything back
    _, fourth = _complete("dp_ucbvi", "r4", tmp_path, cache)
    assert _comparable(fourth) == _comparable(ref)
    assert fourth["config"]["result_cache"]["computed"] == 0
    curves = next(c["details"]["cache"] for c in fourth["checks"] if c["id"] == "regret.exponent.jdp")
    assert curves["hits"] == curves["chunks"] and curves["computed"] == 0


@pytest.mark.slow
@pytest.mark.xdist_group("dp_nash_vi")
def test_dp_nash_vi_killed_in_its_regret_runs_resumes_to_the_identical_report(tmp_path, quick_audit):
    cache = tmp_path / "cache"
    extra = ("--samples", "5000")
    p1 = tmp_path / "k1" / "dp_nash_vi.json"
    proc = _start("dp_nash_vi", cache, p1.parent, *extra)
    # after both assumption batches are reported and two regret runs are stored (they share one pool of chunks)
    _kill_when(proc, lambda: ("assumption.certificate.practical" in _ids(_streamed(p1))
                              and _labels(cache).count("dp_nash_vi:assumptions+regret") >= 4))
    stored = _stored_keys(cache)
    code2, resumed = _complete("dp_nash_vi", "r2", tmp_path, cache, *extra)
    code0, ref = quick_audit("dp_nash_vi", *extra)
    assert resumed["complete"] is True and code2 == code0
    assert _comparable(resumed) == _comparable(ref)
    _assert_nothing_stored_was_recomputed(resumed, stored)
    reg = resumed["config"]["regret"]["cache"]
    assert reg["hits"] >= 4 and reg["computed"] >= 1 and reg["hits"] + reg["computed"] == reg["chunks"]
