"""--cache on the built-in audits: every black-box audit (and dp_nash_vi's regret runs) streams its
chunks, a rerun reads them back and reports the same checks, and the run says it used the cache."""
import json

import pytest

from dpcheck.cli import main


def _run(tmp_path, name, cache, tag, *extra):
    out = tmp_path / tag
    code = main(["audit", name, "--quick", "--workers", "1", "--cache", str(cache), "--out", str(out),
                 "--quiet", *extra])
    return code, json.loads((out / f"{name}.json").read_text())


def _checks(rep):
    return [(c["id"], c["verdict"], c["measured"]) for c in rep["checks"]]


def _cache_use(rep):
    return {c["id"]: c["details"]["cache"] for c in rep["checks"] if "cache" in c.get("details", {})}


@pytest.mark.slow
def test_dp_ucbvi_quick_rerun_reads_the_cache_and_reports_the_same(tmp_path):
    cache = tmp_path / "cache"
    code1, first = _run(tmp_path, "dp_ucbvi", cache, "r1")
    chunks = sorted(cache.rglob("chunk-*.dpchunk"))
    use1 = _cache_use(first)
    # the privatizer's stream and the agent's actions, each audited black box with the cache, and the
    # count-error batches (one chunk per (eps, K), reported on the eps check)
    assert {"privacy.privatizer.blackbox", "privacy.jdp.blackbox", "assumption.count_error_order_eps"} <= set(use1)
    assert all(u["computed"] == u["chunks"] and u["hits"] == 0 for u in use1.values())
    # plus one file per computation cached whole (regret curves, monitored batch, ...: dpcheck.parallel.cached_call),
    # plus the chunks of --quick's second regret look when it was taken (its record is in the run's config)
    esc = first["config"]["regret_sweep"].get("escalated", {}).get("cache")
    assert len(chunks) == (sum(u["chunks"] for u in use1.values()) + first["config"]["result_cache"]["computed"]
                           + (esc["chunks"] if esc else 0))
    assert len({u["key"] for u in use1.values()}) == len(use1)           # different checks, different chunks
    code2, second = _run(tmp_path, "dp_ucbvi", cache, "r2")
    assert code1 == code2
    assert _checks(first) == _checks(second)
    use2 = _cache_use(second)
    assert set(use2) == set(use1)
    assert all(u["hits"] == u["chunks"] and u["computed"] == 0 and u["recomputed"] == [] for u in use2.values())
    if esc:
        esc2 = second["config"]["regret_sweep"]["escalated"]["cache"]
        assert esc2["hits"] == esc2["chunks"] == esc["chunks"] and esc2["computed"] == 0
    rc = second["config"]["result_cache"]
    assert rc["computed"] == 0 and rc["recomputed"] == [] and rc["hits"] == len(rc["calls"]) > 0


@pytest.mark.slow
def test_dp_nash_vi_quick_caches_black_box_and_regret_runs(tmp_path):
    cache = tmp_path / "cache"
    code1, first = _run(tmp_path, "dp_nash_vi", cache, "r1", "--samples", "5000")
    # the regret runs are cached per chunk (the private runs of one horizon stacked: audits/lib/nash/regret.py)
    made = first["config"]["regret"]["cache"]
    assert made["computed"] == made["chunks"] > 0
    assert _cache_use(first)
    code2, second = _run(tmp_path, "dp_nash_vi", cache, "r2", "--samples", "5000")
    assert code1 == code2 and _checks(first) == _checks(second)
    reg = second["config"]["regret"]["cache"]
    assert reg["hits"] == reg["chunks"] == made["chunks"] and reg["computed"] == 0
    assert all(u["hits"] == u["chunks"] for u in _cache_use(second).values())
