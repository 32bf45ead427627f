import numpy as np
import pytest

from dpcheck.errors import InputError
from dpcheck.parallel import run_chunks


def _draw(i, ss, n):
    return np.random.default_rng(ss).laplace(size=n).sum()


def test_same_seed_same_results_for_any_worker_count():
    a = run_chunks(_draw, 6, 123, workers=1, args=(1000,))
    b = run_chunks(_draw, 6, 123, workers=2, args=(1000,))
    assert a == b
    c = run_chunks(_draw, 6, 124, workers=1, args=(1000,))
    assert a != c


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


@pytest.mark.slow
def test_unreachable_dask_scheduler_is_bad_input():
    pytest.importorskip("dask.distributed")
    with pytest.raises(InputError, match="cannot reach the dask scheduler"):
        run_chunks(_draw, 2, 0, backend="dask", scheduler="tcp://127.0.0.1:9", args=(10,))
