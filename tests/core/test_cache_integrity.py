"""Issue 17: a cache that cannot give a false PASS.

- a mechanism that reads its noise scale from a file must not reuse chunks after the file changed
  (dpcheck.filereads; the probe: PASS where the truth is eps = 4);
- a flipped byte or an edited value in a chunk file is damage, recomputed and named (dpcheck.cachefile);
- a chunk file cannot run code when read: a pickle where a chunk is expected is rejected, not loaded;
- a declared memo table (dpcheck.fingerprint.WeakMemo) does not make a computation unfingerprintable.
"""
import json
import math
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dpcheck import AuditTarget, Claim, cachefile
from dpcheck.blackbox import CHUNK, audit
from dpcheck.checks import Check
from dpcheck.fingerprint import WeakMemo, fingerprint
from dpcheck.parallel import ResultCache, run_chunks

ROOT = Path(__file__).resolve().parents[2]
N = CHUNK + 4_464            # two chunks per side


def _chunks(d):
    return sorted(Path(d).rglob("chunk-*.dpchunk"))


def _strip(d):
    return {k: v for k, v in d.items() if k != "cache"}


def _cfg_mech(cfg):
    """The probe's mechanism: its Laplace scale is read from ``cfg`` on every call."""
    def mech(count, rng, size):
        with open(cfg) as f:
            scale = json.load(f)["scale"]
        return rng.laplace(float(count), scale, size)
    return mech


def _target(mech):
    return AuditTarget(name="cfg", mechanism=mech, pairs=[(0, 1)], claim=Claim(epsilon=1.0))


# ------------------------------------------------------------------ files the mechanism reads
@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_a_changed_config_file_is_never_reused(tmp_path, workers):
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"scale": 1.0}))
    cache = tmp_path / "cache"
    first = audit(_target(_cfg_mech(str(cfg))), samples=N, seed=3, cache_dir=cache, workers=workers)
    assert first.verdict == "pass" and first.cache["computed"] == 4
    assert first.cache["files_read"] == [str(cfg)]
    # the noise cut to a quarter in the file: the truth is eps = 4
    cfg.write_text(json.dumps({"scale": 0.25}))
    said = []
    second = audit(_target(_cfg_mech(str(cfg))), samples=N, seed=3, cache_dir=cache, workers=workers,
                   progress=said.append)
    fresh = audit(_target(_cfg_mech(str(cfg))), samples=N, seed=3)
    assert second.cache["hits"] == 0 and second.cache["computed"] == 4
    assert second.verdict == fresh.verdict == "fail" and second.epsilon_lower_bound > 2
    assert _strip(second.to_dict()) == fresh.to_dict()
    # the 2 selection chunks are named; the certification blocks are keyed by the events chosen, which the
    # new outputs changed, so they are computed under a new key (named too if the events were the same)
    assert len(second.cache["recomputed"]) >= 2
    assert all(f"the file {cfg} it read has changed" in r["why"] for r in second.cache["recomputed"])
    assert any("has changed" in m and "recomputing" in m for m in said)
    # unchanged since: read back
    third = audit(_target(_cfg_mech(str(cfg))), samples=N, seed=3, cache_dir=cache, workers=workers)
    assert third.cache["hits"] == 4 and _strip(third.to_dict()) == fresh.to_dict()


def test_a_relative_path_is_checked_in_the_folder_of_the_rerun(tmp_path, monkeypatch):
    for sub, scale in (("a", 1.0), ("b", 0.25)):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "cfg.json").write_text(json.dumps({"scale": scale}))
    cache = tmp_path / "cache"
    monkeypatch.chdir(tmp_path / "a")
    assert audit(_target(_cfg_mech("cfg.json")), samples=N, seed=3, cache_dir=cache).verdict == "pass"
    monkeypatch.chdir(tmp_path / "b")
    r = audit(_target(_cfg_mech("cfg.json")), samples=N, seed=3, cache_dir=cache)
    assert r.cache["hits"] == 0 and r.verdict == "fail"


def test_a_file_that_was_absent_must_still_be_absent(tmp_path):
    cfg = tmp_path / "override.json"

    def mech(count, rng, size):
        try:
            with open(cfg) as f:
                scale = json.load(f)["scale"]
        except FileNotFoundError:
            scale = 1.0
        return rng.laplace(float(count), scale, size)
    audit(_target(mech), samples=N, seed=3, cache_dir=tmp_path / "c")
    cfg.write_text(json.dumps({"scale": 0.25}))
    r = audit(_target(mech), samples=N, seed=3, cache_dir=tmp_path / "c")
    assert r.cache["hits"] == 0 and r.verdict == "fail"
    assert "absent -> sha256:" in r.cache["recomputed"][0]["why"]


def test_result_cache_keys_the_files_a_call_reads(tmp_path):
    data = tmp_path / "data.npy"
    np.save(data, np.arange(4.0))

    def total(path):
        return float(np.load(path).sum())
    cache = ResultCache(tmp_path / "c")
    assert cache.call("t", total, str(data)) == 6.0
    assert cache.report["calls"][-1]["files_read"] == [str(data)]
    assert cache.call("t", total, str(data)) == 6.0 and cache.report["hits"] == 1
    np.save(data, np.arange(5.0))
    assert cache.call("t", total, str(data)) == 10.0
    assert cache.report["hits"] == 1 and "has changed" in cache.report["recomputed"][0]["why"]


def test_files_written_or_in_libraries_are_not_keyed(tmp_path):
    out = tmp_path / "log.txt"

    def fn(i, ss):
        with open(out, "a") as f:                       # written, not read: not part of what the chunk depends on
            f.write("x")
        import json as _j                               # noqa: F401  (a library file, keyed by version)
        return np.random.default_rng(ss).random(2)
    rep = {}
    run_chunks(fn, 2, 0, cache_dir=tmp_path / "c", cache_report=rep)
    assert "files_read" not in rep
    rec, _ = cachefile.loads(_chunks(tmp_path / "c")[0].read_bytes())
    assert rec["files"] == []


_MODULE_LEVEL = """
import json, os
from dpcheck import AuditTarget, Claim
SCALE = json.load(open(os.path.join(os.path.dirname(__file__), "cfg.json")))["scale"]

def mech(count, rng, size):
    return rng.laplace(float(count), SCALE, size)

T = AuditTarget(name="user", mechanism=mech, pairs=[(0, 1)], claim=Claim(epsilon=1.0))
"""


def _cli(tmp_path, *extra):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "dpcheck.cli", "audit", f"{tmp_path / 'user_mech.py'}:T",
                        "--samples", str(N), "--quiet", "--cache", str(tmp_path / "cache"),
                        "--out", str(tmp_path / "out"), "--json", "-", *extra],
                       env=env, capture_output=True, text=True, cwd=tmp_path)
    return r.returncode, json.loads(r.stdout)["checks"][0]


@pytest.mark.slow
def test_cli_a_file_read_at_import_changes_the_key(tmp_path):
    # the value read at import is a module constant the mechanism names: the fingerprint holds it
    (tmp_path / "user_mech.py").write_text(_MODULE_LEVEL)
    (tmp_path / "cfg.json").write_text(json.dumps({"scale": 1.0}))
    code, c = _cli(tmp_path)
    assert code == 0 and c["verdict"] == "pass" and c["details"]["cache"]["computed"] == 4
    (tmp_path / "cfg.json").write_text(json.dumps({"scale": 0.25}))
    code, c = _cli(tmp_path)
    assert code == 1 and c["verdict"] == "fail" and c["details"]["cache"]["hits"] == 0
    code, c2 = _cli(tmp_path)
    assert c2["details"]["cache"]["hits"] == 4 and c2["measured"] == c["measured"]


_HIDDEN_AT_IMPORT = """
import os
from dpcheck import AuditTarget, Claim
# read at import into state the fingerprint cannot see (an environment variable: os is a library module)
os.environ["DPCHECK_TEST_SCALE"] = open(os.path.join(os.path.dirname(__file__), "cfg.txt")).read()

def mech(count, rng, size):
    return rng.laplace(float(count), float(os.environ["DPCHECK_TEST_SCALE"]), size)

T = AuditTarget(name="user", mechanism=mech, pairs=[(0, 1)], claim=Claim(epsilon=1.0))
"""


@pytest.mark.slow
def test_cli_files_read_at_import_are_part_of_the_key_of_the_file_s_functions(tmp_path):
    (tmp_path / "user_mech.py").write_text(_HIDDEN_AT_IMPORT)
    (tmp_path / "cfg.txt").write_text("1.0")
    code, c = _cli(tmp_path)
    assert code == 0 and c["details"]["cache"]["computed"] == 4
    code, c = _cli(tmp_path)
    assert code == 0 and c["details"]["cache"]["hits"] == 4
    (tmp_path / "cfg.txt").write_text("0.25")
    code, c = _cli(tmp_path)
    assert code == 1 and c["verdict"] == "fail" and c["details"]["cache"]["hits"] == 0


# ------------------------------------------------------------------ damaged files
def _fill(tmp_path):
    fresh = audit(_target(_cfg_mech_const()), samples=N, seed=5)
    audit(_target(_cfg_mech_const()), samples=N, seed=5, cache_dir=tmp_path / "c")
    # the victim: a selection chunk (the outputs themselves; the certification records hold only counts)
    return fresh, max(_chunks(tmp_path / "c"), key=lambda p: p.stat().st_size)


def _cfg_mech_const():
    def mech(count, rng, size):
        return rng.laplace(float(count), 1.0, size)
    return mech


def _rerun(tmp_path, fresh, victim):
    r = audit(_target(_cfg_mech_const()), samples=N, seed=5, cache_dir=tmp_path / "c")
    assert _strip(r.to_dict()) == fresh.to_dict()
    assert r.cache["hits"] == 3 and r.cache["computed"] == 1
    assert [x["file"] for x in r.cache["recomputed"]] == [str(victim)]
    return r.cache["recomputed"][0]["why"]


def test_one_flipped_byte_in_the_array_data_is_damage(tmp_path):
    fresh, victim = _fill(tmp_path)
    data = bytearray(victim.read_bytes())
    data[-CHUNK * 4] ^= 0x01               # inside the float64 outputs (the archive ends with its directory)
    victim.write_bytes(bytes(data))
    assert "content hash mismatch" in _rerun(tmp_path, fresh, victim)


def test_an_edited_value_is_damage(tmp_path):
    # a chunk of ResultCache whose result is a JSON tree: edit one figure in place, keep the rest
    def fn():
        return {"epsilon_lower_bound": 0.5, "verdict": "pass"}
    ResultCache(tmp_path).call("t", fn)
    (victim,) = _chunks(tmp_path)
    victim.write_bytes(victim.read_bytes().replace(b"'0.5'", b"'0.4'").replace(b'"0.5"', b'"0.4"'))
    assert b'"0.4"' in victim.read_bytes()
    rep = {}
    assert ResultCache(tmp_path, report=rep).call("t", fn) == {"epsilon_lower_bound": 0.5, "verdict": "pass"}
    assert rep["hits"] == 0 and rep["computed"] == 1
    assert "content hash mismatch" in rep["recomputed"][0]["why"]


def test_a_pickle_where_a_chunk_is_expected_is_not_loaded(tmp_path):
    fresh, victim = _fill(tmp_path)
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (os.mkdir, (str(marker),))
    victim.write_bytes(pickle.dumps({"format": "dpcheck.chunk/2", "result": Payload()}))
    assert "not a dpcheck chunk file" in _rerun(tmp_path, fresh, victim)
    assert not marker.exists()


def _forge(rec, tree, arrays):
    """A chunk file with a valid content hash around an arbitrary header and archive (an attacker's)."""
    import hashlib
    import io
    buf = io.BytesIO()
    np.savez(buf, **{f"a{i}": a for i, a in enumerate(arrays)})
    body = json.dumps({**rec, "result": tree, "arrays": len(arrays)}).encode() + b"\n" + buf.getvalue()
    return cachefile.MAGIC + hashlib.sha256(body).hexdigest().encode() + b"\n" + body


@pytest.mark.parametrize("craft", ["object_array", "foreign_class", "os_function"])
def test_a_consistent_crafted_file_cannot_run_code(tmp_path, craft):
    fresh, victim = _fill(tmp_path)
    marker = tmp_path / "pwned"
    rec, _ = cachefile.loads(victim.read_bytes())

    class Payload:
        def __reduce__(self):
            return (os.mkdir, (str(marker),))
    if craft == "object_array":           # a pickled object array inside the .npz
        data = _forge(rec, {"$": "nd", "i": 0}, [np.array([Payload()], dtype=object)])
        why = "unreadable arrays"
    elif craft == "foreign_class":
        data = _forge(rec, {"$": "obj", "cls": "subprocess:Popen", "v": {"args": ["mkdir", str(marker)]}}, [])
        why = "outside dpcheck's own packages"
    else:
        data = _forge(rec, {"$": "obj", "cls": "dpcheck.cachefile:os.mkdir", "v": {}}, [])
        why = "not a class the cache restores"
    victim.write_bytes(data)
    assert why in _rerun(tmp_path, fresh, victim)
    assert not marker.exists()


# ------------------------------------------------------------------ the codec
def _same(a, b):
    if isinstance(a, np.ndarray):
        return type(b) is np.ndarray and a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, np.generic):
        return type(a) is type(b) and a.tobytes() == b.tobytes()
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, Check):
        return all(_same(getattr(a, f), getattr(b, f)) for f in a.__dataclass_fields__)
    return a == b


_leaves = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=5)
           | st.binary(max_size=5) | st.complex_numbers(allow_nan=False)
           | st.builds(lambda n, k: (np.arange(n) % 3).astype(["f8", "i4", "u1", "?", "c16"][k]).reshape(-1, 1),
                       st.integers(0, 4), st.integers(0, 4))
           | st.builds(np.float32, st.floats(width=32)) | st.builds(np.int64, st.integers(-5, 5))
           | st.sampled_from([np.array(["a", "bc"]), np.zeros((0, 3))]))
_trees = st.recursive(_leaves, lambda kids: st.lists(kids, max_size=3) | st.tuples(kids, kids)
                      | st.dictionaries(st.text(max_size=3) | st.integers(), kids, max_size=3), max_leaves=12)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, derandomize=True)
@given(_trees)
def test_codec_round_trips_exactly(value):
    rec, back = cachefile.loads(cachefile.dumps({"k": 1}, value))
    assert rec == {"k": 1} and _same(value, back)


def test_codec_round_trips_dpcheck_records():
    c = Check(id="a.b", kind="privacy", verdict="pass", claim={"source": "Lemma 5.1"},
              measured={"eps": np.float64(0.25), "n": 3}, details={"pairs": [(0, 1)], "x": np.ones(2)})
    _, back = cachefile.loads(cachefile.dumps({}, [c, (c,)]))
    assert _same(c, back[0]) and _same(c, back[1][0]) and type(back[0]) is Check
    from dpcheck.algorithms.envs.tabular import TabularMDP
    P = np.zeros((1, 2, 1, 2))
    P[..., 1] = 1.0
    mdp = TabularMDP(P=P, r=np.full((1, 2, 1), 0.5), init=np.array([1.0, 0.0]), name="m")
    _, m2 = cachefile.loads(cachefile.dumps({}, mdp))
    assert type(m2) is TabularMDP and m2.name == "m" and not m2.P.flags.writeable
    assert all(_same(getattr(mdp, f), getattr(m2, f)) for f in ("P", "r", "init", "_cdf"))


def test_results_the_codec_cannot_hold_are_returned_not_stored(tmp_path):
    rep, said = {}, []
    cache = ResultCache(tmp_path, report=rep, say=said.append)
    out = cache.call("t", lambda: {"f": len})
    assert out == {"f": len} and not _chunks(tmp_path)
    assert "not stored" in rep["calls"][0]["not_stored"] and any("not stored" in m for m in said)
    r2 = {}
    run_chunks(lambda i, ss: np.array([object()]), 1, 0, cache_dir=tmp_path, cache_report=r2)
    assert r2["computed"] == 1 and "objects" in r2["not_stored"][0]["why"] and not _chunks(tmp_path)


# ------------------------------------------------------------------ memo tables (GFA)
def test_a_declared_memo_table_is_skipped_by_the_fingerprint():
    import weakref
    from dpcheck.algorithms.envs.tabular import TabularMDP
    from dpcheck.algorithms.gfa import evaluation

    class Key:
        pass
    plain, memo = weakref.WeakKeyDictionary(), WeakMemo()
    k = Key()
    plain[k] = memo[k] = 1
    with pytest.raises(TypeError):
        fingerprint(plain)
    before = fingerprint(evaluation.policy_returns)
    P = np.zeros((2, 2, 1, 2))
    P[..., 0] = 1.0
    mdp = TabularMDP(P=P, r=np.zeros((2, 2, 1)), init=np.array([1.0, 0.0]))
    evaluation.next_state_table(mdp)
    assert len(evaluation._NEXT_STATE_CACHE) >= 1
    assert fingerprint(evaluation.policy_returns) == before
    assert fingerprint(memo) != fingerprint({})            # still a typed node of the graph


@pytest.mark.slow
def test_private_gfa_quick_resumes_from_the_cache(tmp_path):
    from dpcheck.cli import main

    def run(tag):
        out = tmp_path / tag
        assert main(["audit", "private_gfa", "--quick", "--workers", "1", "--cache", str(tmp_path / "c"),
                     "--out", str(out), "--quiet"]) == 0
        return json.loads((out / "private_gfa.json").read_text())
    first, second = run("r1"), run("r2")
    # the regret batches are chunks of dpcheck.parallel.run_chunks: all computed, then all read back
    rg1, rg2 = first["config"]["regret_cache"], second["config"]["regret_cache"]
    assert "disabled" not in rg1 and rg1["chunks"] == rg1["computed"] > 0 and rg1["hits"] == 0
    assert rg2["hits"] == rg2["chunks"] == rg1["chunks"] and not rg2.get("recomputed")
    bb = [c["details"]["cache"] for c in second["checks"] if "cache" in c.get("details", {})]
    assert bb and all(u["hits"] == u["chunks"] for u in bb)
    strip = lambda rep: [(c["id"], c["verdict"], c["measured"]) for c in rep["checks"]]
    assert strip(first) == strip(second)


def test_the_recorder_itself_does_not_enter_a_key():
    # dpcheck.loading (reached from the built-in audits' privatizer specs) calls the recorder: its lock and its
    # list of running recorders must not make their computations unfingerprintable or change their key
    from dpcheck import filereads, loading
    before = fingerprint(loading.load_object)
    out, files = filereads.record(lambda: fingerprint(loading.load_object))
    assert out == before and files == []


# ------------------------------------------------------------------ keys independent of the process's history
def _fresh_process(script: str, *argv, cwd=ROOT, timeout=300):
    """Run ``script`` in a fresh interpreter (so every per-process memo starts empty); the JSON of its last
    line of output."""
    out = subprocess.run([sys.executable, "-c", script, *map(str, argv)], capture_output=True, text=True,
                         cwd=str(cwd), timeout=timeout)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


_LOADERS_SCRIPT = textwrap.dedent('''
    import json, sys
    from dpcheck.fingerprint import fingerprint
    from dpcheck.algorithms.privatizers.loader import (load_privatizer, load_offline_privatizer,
                                                       load_regression_privatizer)
    from dpcheck.algorithms.linear.loader import load_stream_privatizer
    from dpcheck.algorithms.gfa.selection import load_selection_mechanism
    loaders = dict(privatizer=load_privatizer, offline=load_offline_privatizer,
                   regression=load_regression_privatizer, stream=load_stream_privatizer,
                   selection=load_selection_mechanism)
    before = {k: fingerprint(f) for k, f in loaders.items()}
    ex = sys.argv[1]
    load_privatizer(ex + "/my_privatizer.py:GaussianTreePrivatizer", epsilon=1.0)
    load_stream_privatizer(ex + "/my_stream_privatizer.py:AnalyticGaussianTrees", epsilon=1.0, delta=0.1)
    load_selection_mechanism(ex + "/my_selection.py:PermuteAndFlip")
    load_offline_privatizer(ex + "/offline_privatizer.py:GeometricCountPrivatizer", epsilon=1.0)
    load_regression_privatizer(ex + "/regression_privatizer.py:SplitBudgetGaussian", rho=1.0)
    after = {k: fingerprint(f) for k, f in loaders.items()}
    print(json.dumps({k: before[k] == after[k] for k in loaders}))
''')


@pytest.mark.slow
def test_a_loaders_key_does_not_depend_on_the_plugins_this_process_loaded_before():
    """The loaders remember which plug-ins they loaded and probed (once per process). Those memos must not
    enter a cache key: once they did, a key depended on every plug-in loaded earlier in the process, so
    with an editable install (dpcheck walked as user code) a second in-process audit (the Python API, the
    pytest plugin, a notebook) recomputed chunks it had stored, and walking every remembered class made
    the key itself slow (the --cache rerun of dp_ucbvi took 48 CPU s instead of 11 after the suite's
    plug-in tests)."""
    same = _fresh_process(_LOADERS_SCRIPT, ROOT / "examples")
    assert same == {k: True for k in same} and len(same) == 5, same


_REPORT_WRITE_SCRIPT = """
import json, pathlib, sys, tempfile
from dpcheck import report
from dpcheck.fingerprint import fingerprint
before = fingerprint(report._atomic_write)
with tempfile.TemporaryDirectory() as d:
    report._atomic_write(pathlib.Path(d) / "r.json", "{}")
print(json.dumps(fingerprint(report._atomic_write) == before))
"""


def test_writing_a_report_does_not_change_the_keys_that_reach_the_report_writer():
    """The report writer reads the process's umask once and remembers it. Many check functions reach the
    writer in the object graph (through the Python API), so the memo must not enter a key: once it did,
    every such key changed after the process's first report (found by fingerprinting dpcheck's functions
    before and after in-process audits). A fresh process, so that the memo starts empty."""
    assert _fresh_process(_REPORT_WRITE_SCRIPT) is True


_PROBE_SCRIPT = '''
import importlib, inspect, json, os, pkgutil, sys
os.environ["MPLBACKEND"] = "Agg"
import dpcheck.algorithms, dpcheck.audits
from dpcheck.cli import main
from dpcheck.fingerprint import Unfingerprintable, fingerprint
funcs = {}
for pkg in (dpcheck.algorithms, dpcheck.audits):
    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
        mod = importlib.import_module(m.name)
        funcs.update({f"{m.name}.{n}": f for n, f in vars(mod).items()
                      if inspect.isfunction(f) and f.__module__ == m.name})
def keys():
    out = {}
    for k, f in funcs.items():
        try:
            out[k] = fingerprint(f)
        except Unfingerprintable:
            out[k] = None
    return out
before = keys()
ex, out = sys.argv[1], sys.argv[2]
for args in (["laplace_example"],
             ["offline_count_privatizer", "--privatizer", ex + "/offline_privatizer.py:GeometricCountPrivatizer"]):
    try:
        main(["audit", *args, "--quick", "--samples", "20000", "--workers", "1", "--out", out, "--quiet"])
    except SystemExit as e:
        assert e.code in (0, None), e.code
after = keys()
print(json.dumps({"functions": len(before), "changed": sorted(k for k in before if before[k] != after[k])}))
'''


@pytest.mark.slow
def test_no_module_level_functions_key_changes_after_in_process_audits(tmp_path):
    """The net under this section's other tests: fingerprint every module-level function of dpcheck.algorithms and
    dpcheck.audits (530), run two audits in the same process (the Python API's and the pytest plugin's
    situation: a black box, a plug-in loaded and probed, reports written), fingerprint them again. Any
    process-lifetime memo reachable from a key shows up here (the report writer's umask memo changed six)."""
    res = _fresh_process(_PROBE_SCRIPT, ROOT / "examples", tmp_path, cwd=tmp_path, timeout=600)
    assert res["functions"] > 400 and res["changed"] == [], res


@pytest.mark.slow
def test_an_audit_classs_key_does_not_depend_on_what_else_is_registered():
    """An audit class reaches the registry (Audit.register -> dpcheck.registry.register): a key holding one
    must not change when the process registers another audit (the first CLI run loads every built-in; the
    Python API and the pytest plugin register more)."""
    from dpcheck import registry
    from dpcheck.audits.examples import LaplaceExample
    registry.get("laplace_example")                  # the built-ins loaded, as in any audit run
    before = fingerprint(LaplaceExample)
    name = "zz_test_registered_later"
    try:
        registry.register(name, algorithm="a test audit", notion="DP", claim="nothing")(lambda ctx: None)
        assert name in registry._REGISTRY
        assert fingerprint(LaplaceExample) == before
    finally:
        registry._REGISTRY.pop(name, None)
