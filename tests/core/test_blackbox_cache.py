"""The black-box audit's chunk cache (--cache) and the validation of mechanism outputs.

A CI gate must never say PASS wrongly: a cache may only hand back outputs that the current
mechanism would produce again, and outputs the auditor cannot handle must stop the run.
"""
import json
import os
from dpcheck import cachefile
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from examples import mechanisms as M  # noqa: E402

from dpcheck import AuditTarget, Claim, MechanismError  # noqa: E402
from dpcheck.blackbox import CHUNK, audit  # noqa: E402
from dpcheck.cli import main  # noqa: E402

N = CHUNK + 4_464            # 70,000: two chunks per side, the second short
# the cache holds the selection pass (chunk 0 of each side: the outputs) and the certification pass (one
# block of both chunks per side: their event counts; chunk 0 holds both splits): 4 chunk files
FILES = 4


def target(mech, name="t", **kw):
    return AuditTarget(name=name, mechanism=mech, pairs=[(0, 1)], claim=Claim(epsilon=1.0), **kw)


def _strip(d):
    return {k: v for k, v in d.items() if k != "cache"}


def _chunks(d):
    return sorted(Path(d).rglob("chunk-*.dpchunk"))


def _output_chunks(d):
    # the selection pass's chunk files (mechanism outputs), not the certification pass's event counts
    return [p for p in _chunks(d) if isinstance(cachefile.loads(p.read_bytes())[1], np.ndarray)]


# ------------------------------------------------------------------ the cache
def test_second_run_reads_every_chunk_and_gives_the_same_result(tmp_path):
    first = audit(target(M.laplace_count(1.0)), samples=N, seed=2, cache_dir=tmp_path)
    assert first.cache["computed"] == FILES and first.cache["hits"] == 0 and len(_chunks(tmp_path)) == FILES
    said = []
    again = audit(target(M.laplace_count(1.0)), samples=N, seed=2, cache_dir=tmp_path, progress=said.append)
    assert again.cache["hits"] == FILES and again.cache["computed"] == 0 and again.cache["recomputed"] == []
    assert any("read back" in m for m in said)
    assert _strip(again.to_dict()) == _strip(first.to_dict())
    assert _strip(first.to_dict()) == audit(target(M.laplace_count(1.0)), samples=N, seed=2).to_dict()
    assert again.to_check().details["cache"]["hits"] == FILES


def test_a_changed_mechanism_never_reuses_chunks(tmp_path):
    audit(target(M.laplace_count(1.0)), samples=N, seed=2, cache_dir=tmp_path)

    def broken(d, rng, size):
        raise RuntimeError("new code: must be called")
    with pytest.raises(MechanismError, match="new code"):
        audit(target(broken), samples=N, seed=2, cache_dir=tmp_path)


def test_noise_cut_to_a_tenth_fails_with_the_cache_as_without(tmp_path):
    # the users' report: audit with --cache, cut the noise to a tenth (a closure value), rerun: PASS
    good = audit(target(M.laplace_count(1.0)), samples=N, seed=3, cache_dir=tmp_path)
    assert good.verdict == "pass"
    leaky = M.laplace_count(1.0, scale_factor=0.1)
    cached = audit(target(leaky), samples=N, seed=3, cache_dir=tmp_path)
    fresh = audit(target(leaky), samples=N, seed=3)
    assert cached.cache["hits"] == 0
    assert cached.verdict == fresh.verdict == "fail"
    assert _strip(cached.to_dict()) == fresh.to_dict()


def test_other_samples_seed_or_pairs_do_not_share_chunks(tmp_path):
    audit(target(M.laplace_count(1.0)), samples=N, seed=2, cache_dir=tmp_path)
    assert audit(target(M.laplace_count(1.0)), samples=N + 1, seed=2, cache_dir=tmp_path).cache["hits"] == 0
    assert audit(target(M.laplace_count(1.0)), samples=N, seed=4, cache_dir=tmp_path).cache["hits"] == 0
    t = AuditTarget(name="t", mechanism=M.laplace_count(1.0), pairs=[(0, 2)], claim=Claim(epsilon=1.0))
    assert audit(t, samples=N, seed=2, cache_dir=tmp_path).cache["hits"] == 0


def _rewrite(path, f):
    # a consistent file (content hash recomputed) with other values: validation must still catch them
    rec, result = cachefile.loads(path.read_bytes())
    result = f(result)
    rec["meta"] = {"type": "ndarray", "shape": list(result.shape), "dtype": result.dtype.str}
    path.write_bytes(cachefile.dumps(rec, result))


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["ten_outputs", "truncated_file", "garbage", "other_key", "inf", "complex"])
def test_a_damaged_chunk_is_recomputed_named_and_the_result_unchanged(tmp_path, damage):
    fresh = audit(target(M.laplace_count(1.0)), samples=N, seed=5)
    audit(target(M.laplace_count(1.0)), samples=N, seed=5, cache_dir=tmp_path / "c")
    victim = _output_chunks(tmp_path / "c")[0]
    if damage == "ten_outputs":               # a valid chunk, right key, 10 outputs instead of 65,536
        _rewrite(victim, lambda r: r[:10])
    elif damage == "truncated_file":
        victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
    elif damage == "garbage":
        victim.write_bytes(os.urandom(4096))
    elif damage == "other_key":
        audit(target(M.laplace_count(2.0)), samples=N, seed=5, cache_dir=tmp_path / "o")
        victim.write_bytes(_output_chunks(tmp_path / "o")[0].read_bytes())
    elif damage == "inf":
        _rewrite(victim, lambda r: np.where(np.arange(r.size) == 7, np.inf, r))
    else:
        _rewrite(victim, lambda r: r + 1j)
    said = []
    r = audit(target(M.laplace_count(1.0)), samples=N, seed=5, cache_dir=tmp_path / "c", progress=said.append)
    assert _strip(r.to_dict()) == fresh.to_dict()
    assert r.cache["hits"] == FILES - 1 and r.cache["computed"] == 1
    assert [x["file"] for x in r.cache["recomputed"]] == [str(victim)]
    assert any(str(victim) in m and "recomputing" in m for m in said)


def test_unfingerprintable_mechanism_runs_without_cache_and_says_so(tmp_path):
    import threading
    lock = threading.Lock()

    def mech(d, rng, size):
        with lock:
            return rng.laplace(d, 1.0, size)
    said = []
    r = audit(target(mech), samples=N, seed=2, cache_dir=tmp_path, progress=said.append)
    assert "cannot be fingerprinted" in r.cache["disabled"] and not _chunks(tmp_path)
    assert any("cache not used" in m for m in said)
    assert _strip(r.to_dict()) == audit(target(mech), samples=N, seed=2).to_dict()


@pytest.mark.slow
def test_cache_with_two_workers_is_identical(tmp_path):
    one = audit(target(M.laplace_count(1.0)), samples=N, seed=6, cache_dir=tmp_path / "a", workers=1)
    two = audit(target(M.laplace_count(1.0)), samples=N, seed=6, cache_dir=tmp_path / "b", workers=2)
    back = audit(target(M.laplace_count(1.0)), samples=N, seed=6, cache_dir=tmp_path / "a", workers=2)
    assert back.cache["hits"] == FILES
    assert _strip(one.to_dict()) == _strip(two.to_dict()) == _strip(back.to_dict())


_USER_FILE = """
from dpcheck import AuditTarget, Claim
SCALE = {scale}

def mech(count, rng, size):
    return rng.laplace(float(count), SCALE, size)

T = AuditTarget(name="user", mechanism=mech, pairs=[(0, 1)], claim=Claim(epsilon=1.0))
"""


def _cli(tmp_path, scale, hashseed):
    f = tmp_path / "user_mech.py"
    f.write_text(_USER_FILE.format(scale=scale))
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONHASHSEED=str(hashseed))
    r = subprocess.run([sys.executable, "-m", "dpcheck.cli", "audit", f"{f}:T", "--samples", str(N), "--quiet",
                        "--cache", str(tmp_path / "cache"), "--out", str(tmp_path / "out"), "--json", "-"],
                       env=env, capture_output=True, text=True)
    return r.returncode, json.loads(r.stdout) if r.stdout.strip() else None, r.stderr


@pytest.mark.slow
def test_cli_module_constant_cut_to_a_tenth_in_a_new_process(tmp_path):
    # across processes (user files get a per-process module name): same file hits, edited file misses
    code, rep, _ = _cli(tmp_path, 1.0, 1)
    assert code == 0 and rep["checks"][0]["details"]["cache"]["computed"] == FILES
    code, rep2, _ = _cli(tmp_path, 1.0, 2)
    assert code == 0 and rep2["checks"][0]["details"]["cache"]["hits"] == FILES
    assert rep2["checks"][0]["measured"] == rep["checks"][0]["measured"]
    code, rep3, _ = _cli(tmp_path, 0.1, 3)
    assert code == 1 and rep3["checks"][0]["verdict"] == "fail"
    assert rep3["checks"][0]["details"]["cache"]["hits"] == 0


# ------------------------------------------------------------------ output validation
@pytest.mark.parametrize("mech,match", [
    # the real part leaks eps ~ 100; complex is refused, not silently cast
    (lambda d, rng, n: rng.laplace(100.0 * d, 1.0, n) + 1j * rng.laplace(0, 1, n), "complex"),
    (lambda d, rng, n: np.array([object()] * n), "objects"),
    (lambda d, rng, n: np.where(np.arange(n) == n - 3, np.inf, rng.laplace(d, 1.0, n)), r"1 infinite"),
    (lambda d, rng, n: np.full(n, -np.inf), r"\d+ infinite value"),
    (lambda d, rng, n: np.where(np.arange(n) == 5, np.nan, rng.laplace(d, 1.0, n)), r"1 NaN .*first in output 5"),
    (lambda d, rng, n: np.stack([rng.laplace(d, 1, n), np.where(np.arange(n) == 0, np.inf, 0.0)], -1), "infinite"),
    (lambda d, rng, n: np.full(n, np.datetime64("2020-01-01")), "dtype datetime64"),
    (lambda d, rng, n: np.zeros((n, 0)), "empty outputs"),
    (lambda d, rng, n: rng.laplace(d, 1.0, 10), r"shape \(10,\); expected"),
])
def test_unusable_outputs_are_a_mechanism_error_naming_target_and_problem(mech, match):
    with pytest.raises(MechanismError, match=match) as e:
        audit(target(mech, name="leaky-thing"), samples=N, seed=0)
    msg = str(e.value)
    assert "'leaky-thing'" in msg and "\n" not in msg


def test_per_call_complex_outputs_refused():
    with pytest.raises(MechanismError, match="complex"):
        audit(AuditTarget.from_single("pc", lambda d, rng: complex(rng.laplace(d), 0.0), [(0, 1)],
                                      Claim(epsilon=1.0)), samples=100, seed=0)


def test_labels_booleans_and_integers_are_accepted():
    for mech in (lambda d, rng, n: np.where(rng.random(n) < 0.5 + 0.1 * d, "a", "b"),
                 lambda d, rng, n: rng.random(n) < 0.5 + 0.1 * d,
                 lambda d, rng, n: (rng.integers(0, 3, n) + (rng.random(n) < 0.1 * d)) % 3):
        r = audit(target(mech), samples=2_000, seed=0)
        assert r.output_kind == "discrete" and r.verdict in ("pass", "inconclusive")


def test_cli_all_inf_mechanism_exits_2_with_one_line(tmp_path, capsys):
    f = tmp_path / "inf_mech.py"
    f.write_text(textwrap.dedent("""
        import numpy as np
        from dpcheck import AuditTarget, Claim
        T = AuditTarget(name="allinf", mechanism=lambda d, rng, n: np.full(n, np.inf), pairs=[(0, 1)],
                        claim=Claim(epsilon=1.0))
    """))
    code = main(["audit", f"{f}:T", "--samples", "1000", "--quiet", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and "'allinf'" in err[0] and "infinite" in err[0] and "Traceback" not in err[0]
