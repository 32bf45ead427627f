"""The streamed black box (dpcheck/blackbox.py): memory independent of --samples, the same report for any
--workers / backend, the certification pass cached and validated like the outputs."""
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from examples import mechanisms as M  # noqa: E402

from dpcheck import AuditTarget, Claim, InputError  # noqa: E402
from dpcheck import cachefile  # noqa: E402
from dpcheck.blackbox import CHUNK, SELECTION_CAP, audit, sample_plan  # noqa: E402
from dpcheck.limits import check_sampling_memory, memory_limit_set, resident_outputs  # noqa: E402
from dpcheck.parallel import run_chunks  # noqa: E402

N = CHUNK + 4_464            # two chunks per side, the second short; the first holds both splits


def _strip(d):
    return {k: v for k, v in d.items() if k != "cache"}


def svt(eps: float, k: int = 10):
    """AboveThreshold over k queries (Dwork & Roth 2014, Algorithm 1, one positive answer): 1 at the first
    query whose noisy value reaches the noisy threshold, 0 before it, -1 after (int64: 8 k bytes)."""
    def mechanism(queries, rng, size):
        q = np.asarray(queries, dtype=float)
        thr = 2.0 + rng.laplace(0.0, 2.0 / eps, (size, 1))
        above = q + rng.laplace(0.0, 4.0 / eps, (size, q.size)) >= thr
        first = np.where(above.any(axis=1), above.argmax(axis=1), q.size)
        idx = np.arange(q.size)
        return np.where(idx < first[:, None], 0, np.where(idx == first[:, None], 1, -1)).astype(np.int64)
    return mechanism


def _svt_target(pairs=3):
    base = np.arange(10, dtype=float) / 5.0
    ps = [(base, base + np.eye(10)[i]) for i in range(pairs)]
    return AuditTarget(name="svt", mechanism=svt(1.0), pairs=ps, claim=Claim(epsilon=1.0))


TARGETS = {
    "laplace_2pairs_approx": AuditTarget(name="lap", mechanism=M.laplace_count(1.0), pairs=[(0, 1), (1, 3)],
                                         claim=Claim(epsilon=1.0, delta=1e-4)),
    "geometric_cells": AuditTarget(name="geo", mechanism=M.geometric(1.0), pairs=[(0, 1)], claim=Claim(epsilon=0.8)),
    "histogram_vector": AuditTarget(name="hist", mechanism=M.noisy_histogram(1.0),
                                    pairs=[(np.array([1, 2, 3, 4.]), np.array([1, 2, 3, 5.]))],
                                    claim=Claim(epsilon=1.0)),
}


# ------------------------------------------------------------------ workers and backends
@pytest.mark.parametrize("name", ["laplace_2pairs_approx",
                                  pytest.param("geometric_cells", marks=pytest.mark.slow),
                                  pytest.param("histogram_vector", marks=pytest.mark.slow)])
@pytest.mark.slow
def test_two_workers_give_the_report_of_one(name):
    t = TARGETS[name]
    one = audit(t, samples=N, seed=3, workers=1)
    two = audit(t, samples=N, seed=3, workers=2)
    assert one.to_dict() == two.to_dict()
    # the plot data (certification scores / cell counts gathered from the chunks) too
    assert repr(one.plots) == repr(two.plots)


@pytest.mark.slow
def test_dask_backend_gives_the_report_of_local():
    pytest.importorskip("dask.distributed")
    t = TARGETS["laplace_2pairs_approx"]
    assert audit(t, samples=N, seed=4, backend="dask", workers=2).to_dict() == audit(t, samples=N, seed=4).to_dict()


def test_the_certification_counts_equal_counts_over_the_whole_sample():
    # the streamed counts of the winning event, recounted here on the whole certification sample drawn at once
    t = TARGETS["laplace_2pairs_approx"]
    r = audit(t, samples=N, seed=5)
    from dpcheck.blackbox import _draw_chunk, _layout
    from dpcheck.parallel import child_seeds
    sizes, inputs, n = _layout(t, N)
    seeds = child_seeds(5, n)
    side = [np.concatenate([_draw_chunk(j * len(sizes) + c, seeds[j * len(sizes) + c], t, inputs, sizes)
                            for c in range(len(sizes))])[r.selection_samples:] for j in range(len(inputs))]
    row = r.pairs_table[r.pair]
    thr, upper = r.event["threshold"], r.event["tail"] == "upper"
    x, y = (side[2 * r.pair], side[2 * r.pair + 1]) if r.direction == "D->D'" else (side[2 * r.pair + 1],
                                                                                    side[2 * r.pair])
    count = (lambda v: int(np.count_nonzero(v >= thr))) if upper else (lambda v: int(np.count_nonzero(v <= thr)))
    assert (row["count_d"], row["count_dprime"]) == (count(x), count(y))
    assert row["n"] == x.shape[0] == N - r.selection_samples


# ------------------------------------------------------------------ memory
def _peak(samples, frac):
    t = AuditTarget(name="lap", mechanism=M.laplace_count(1.0), pairs=[(0, 1)], claim=Claim(epsilon=1.0))
    tracemalloc.start()
    try:
        r = audit(t, samples=samples, seed=0, selection_fraction=frac)
        return tracemalloc.get_traced_memory()[1], r
    finally:
        tracemalloc.stop()


def test_peak_memory_does_not_grow_with_samples():
    # the same selection sample (20000 per side), 10^5 vs 10^6 outputs per side: only the streamed
    # certification pass grows, and it holds one chunk at a time (the whole draw held 16 MB at 10^6)
    small, rs = _peak(10**5, 0.2)
    large, rl = _peak(10**6, 0.02)
    assert rs.selection_samples == rl.selection_samples == 20_000
    assert rl.certification_samples == 10**6 - 20_000
    assert large < 1.5 * small, (small, large)
    assert large < 8 * 10**6          # < half of the 2 x 10^6 x 8 bytes of the outputs


def test_selection_sample_is_capped():
    plan = sample_plan(Claim(epsilon=1.0), 10**8, 0.05)
    assert plan.selection == SELECTION_CAP and plan.certification == 10**8 - SELECTION_CAP
    # below 4 x the cap the split is the quarter it always was (reports there are unchanged)
    assert sample_plan(Claim(epsilon=1.0), 4 * SELECTION_CAP, 0.05).selection == SELECTION_CAP
    assert sample_plan(Claim(epsilon=1.0), 10**6, 0.05).selection == 250_000


def test_memory_estimate_is_independent_of_samples_and_pairs(monkeypatch):
    assert resident_outputs(10**8) == resident_outputs(10**7) == 2 * SELECTION_CAP + CHUNK
    assert resident_outputs(10**8, workers=2) == 2 * SELECTION_CAP + 2 * CHUNK
    t = _svt_target(3)
    # the case: three SVT pairs at 10^8 per side held 10^8 x 6 x 80 bytes = 44.7 GB; the stream
    # holds (2 x 2^20 + 2 x 65536) x 80 bytes = 170 MB, inside a 1 GB limit (1/6 of 6 GB available)
    monkeypatch.setenv("DPCHECK_MEMORY_LIMIT", "1G")
    check_sampling_memory(t, 10**8, workers=2)
    monkeypatch.setenv("DPCHECK_MEMORY_LIMIT", "100M")
    with pytest.raises(InputError, match=r"needs about 170 MB .* x 80 bytes; the 3 pair\(s\) are streamed"):
        check_sampling_memory(t, 10**8, workers=2)
    # the audit itself asks with its workers: the same refusal, before any draw
    with pytest.raises(InputError, match="170 MB"):
        audit(t, samples=10**8, workers=2)
    with memory_limit_set(float("inf")):
        check_sampling_memory(t, 10**12, workers=2)


@pytest.mark.slow
def test_svt_three_pairs_runs_streamed():
    r = audit(_svt_target(3), samples=N, seed=1)
    assert r.verdict in ("pass", "inconclusive") and len(r.pairs_table) == 3


# ------------------------------------------------------------------ the cache of the certification pass
def _count_chunks(d):
    return [p for p in sorted(Path(d).rglob("chunk-*.dpchunk"))
            if isinstance(cachefile.loads(p.read_bytes())[1], dict)]


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["counts_too_large", "not_a_record"])
def test_a_damaged_certification_chunk_is_recomputed(tmp_path, damage):
    t = TARGETS["laplace_2pairs_approx"]
    fresh = audit(t, samples=N, seed=6)
    first = audit(t, samples=N, seed=6, cache_dir=tmp_path)
    victims = _count_chunks(tmp_path)
    # 2 pairs x 2 selection chunks, 2 pairs x 2 sides x 1 certification block
    assert len(victims) == 4 and first.cache["computed"] == 4 + 4
    victim = victims[0]
    rec, result = cachefile.loads(victim.read_bytes())
    if damage == "counts_too_large":
        result = dict(result, counts=result["counts"] + CHUNK)
    else:
        result = np.zeros(3)
    rec["meta"] = ({"type": "dict", "len": 3} if isinstance(result, dict) else
                   {"type": "ndarray", "shape": [3], "dtype": result.dtype.str})
    victim.write_bytes(cachefile.dumps(rec, result))
    r = audit(t, samples=N, seed=6, cache_dir=tmp_path)
    assert _strip(r.to_dict()) == fresh.to_dict()
    assert r.cache["computed"] == 1 and [x["file"] for x in r.cache["recomputed"]] == [str(victim)]


def test_certification_cache_is_keyed_by_the_chosen_events(tmp_path):
    # another selection (the same chunks, other events): the selection chunks' outputs are the same and
    # are read back, the counts of the 4 certification blocks must not be
    t = TARGETS["laplace_2pairs_approx"]
    audit(t, samples=N, seed=7, cache_dir=tmp_path)
    other = audit(t, samples=N, seed=7, cache_dir=tmp_path, selection_fraction=0.2)
    assert other.cache["hits"] == 4 and other.cache["computed"] == 4
    assert _strip(other.to_dict()) == audit(t, samples=N, seed=7, selection_fraction=0.2).to_dict()


def test_blocks_draw_each_chunk_from_its_own_seed():
    # a certification block re-derives child seed i + k from the seed of chunk i: the same as spawning
    from dpcheck.parallel import child_seeds
    kids = child_seeds(9, 40)
    k = kids[17]
    again = np.random.SeedSequence(k.entropy, spawn_key=k.spawn_key[:-1] + (23,), pool_size=k.pool_size)
    assert np.array_equal(again.generate_state(8), kids[23].generate_state(8))


def test_many_blocks_per_side_give_the_counts_of_one_pass():
    # 40 chunks per side (5 blocks): the streamed counts equal those of the whole sample at once
    t = AuditTarget(name="lap", mechanism=M.laplace_count(1.0), pairs=[(0, 1)], claim=Claim(epsilon=1.0))
    s = 40 * CHUNK + 123
    r = audit(t, samples=s, seed=2, selection_fraction=0.05)
    from dpcheck.blackbox import _draw_chunk, _layout
    from dpcheck.parallel import child_seeds
    sizes, inputs, n = _layout(t, s)
    seeds = child_seeds(2, n)
    side = [np.concatenate([_draw_chunk(j * len(sizes) + c, seeds[j * len(sizes) + c], t, inputs, sizes)
                            for c in range(len(sizes))])[r.selection_samples:] for j in range(2)]
    row, thr = r.pairs_table[0], r.event["threshold"]
    x, y = (side[0], side[1]) if r.direction == "D->D'" else (side[1], side[0])
    cnt = (lambda v: int(np.count_nonzero(v >= thr))) if r.event["tail"] == "upper" else \
        (lambda v: int(np.count_nonzero(v <= thr)))
    assert (row["count_d"], row["count_dprime"]) == (cnt(x), cnt(y))
    # the plot shows the first PLOT_SAMPLES certification outputs, gathered across chunks
    from dpcheck.blackbox import PLOT_SAMPLES
    assert len(r.plots) == 1 and PLOT_SAMPLES < 2 * CHUNK


# ------------------------------------------------------------------ run_chunks: subsets and streaming
def _draw(i, ss, n):
    return np.random.default_rng(ss).normal(size=n)


def test_run_chunks_subset_and_stream_match_the_full_run():
    full = run_chunks(_draw, 6, 11, args=(5,))
    part = run_chunks(_draw, 6, 11, args=(5,), indices=[4, 1])
    assert part[0] is None and np.array_equal(part[4], full[4]) and np.array_equal(part[1], full[1])
    got = {}
    kept = run_chunks(_draw, 6, 11, args=(5,), indices=[5, 2, 3], on_result=got.__setitem__, workers=2)
    assert kept == [None] * 6 and sorted(got) == [2, 3, 5]
    assert all(np.array_equal(got[i], full[i]) for i in got)


# ------------------------------------------------------------------ each output drawn once
@pytest.mark.parametrize("samples", [100_000, 3 * CHUNK + 5, 4 * CHUNK])
def test_every_output_is_drawn_once_and_counted_where_it_falls(samples):
    """The selection pass draws whole chunks; the certification outputs in the last of them are counted from
    that draw, not drawn again (4 x CHUNK: the selection fills one chunk exactly, nothing is left over).
    The certified counts equal a brute-force count of the chosen event on the certification sample rebuilt
    from the chunk seeds (chunk i of input j: child j * chunks + i of the audit's seed)."""
    from dpcheck.blackbox import audit, sample_plan
    drawn = []

    def mech(d, rng, n):
        drawn.append(n)
        return d + rng.laplace(0.0, 1.0, n)
    t = AuditTarget("lap", mech, [(0, 1)], Claim(epsilon=1.0))
    r = audit(t, samples=samples, seed=3)
    from dpcheck.limits import PROBE_SIZE
    assert drawn[0] == PROBE_SIZE                          # the memory check's probe (its own rng)
    assert sum(drawn[1:]) == 2 * samples
    sizes = [CHUNK] * (samples // CHUNK) + ([samples % CHUNK] if samples % CHUNK else [])
    seeds = np.random.SeedSequence(3).spawn(2 * len(sizes))
    n_sel = sample_plan(t.claim, samples, 0.05).selection
    ev = r.event
    assert ev["family"] == "threshold" and ev["statistic"] == "output"
    got = []
    for j, d in enumerate((0, 1)):
        full = np.concatenate([d + np.random.default_rng(seeds[j * len(sizes) + c]).laplace(0.0, 1.0, sizes[c])
                               for c in range(len(sizes))])
        cert = full[n_sel:]
        got.append(int(np.count_nonzero(cert <= ev["threshold"] if ev["tail"] == "lower"
                                        else cert >= ev["threshold"])))
    first, second = (got if r.direction == "D->D'" else got[::-1])
    assert (ev["count_d"], ev["count_dprime"]) == (first, second)
