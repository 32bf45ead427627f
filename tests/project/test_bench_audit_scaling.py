"""benchmarks/bench_audit_scaling.py: the table's arithmetic (speedup, ceiling) and the list of audits it measures by
default (no audit is run: the figures are made up, and nothing depends on wall-clock speed)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_audit_scaling.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_audit_scaling", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_ceiling_is_the_speedup_of_a_perfectly_packed_two_worker_run():
    b = _bench()
    # 10 s on one worker; the 2-worker run spent 12 CPU s: packed on 2 cores that is 6 s, so at most 10/6
    assert abs(b.ceiling({"wall_s": 10.0, "cpu_s": 10.0}, {"wall_s": 7.0, "cpu_s": 12.0}) - 10 / 6) < 1e-12


def test_table_names_the_audits_whose_ceiling_is_below_the_goal():
    b = _bench()
    rows = []
    for name, cpu2 in (("fits", 11.0), ("cannot", 14.0)):     # ceilings 10/5.5 = 1.82 and 10/7 = 1.43
        runs = [{"wall_s": 10.0, "cpu_s": 10.0}, {"wall_s": 7.0, "cpu_s": cpu2}]
        rows.append({"audit": name, "runs": runs, "speedup": 10 / 7, "same_report": True,
                     "ceiling": b.ceiling(*runs)})
    md = b.markdown(rows, {"quick": False, "command": "cmd", "cpus": 2, "load_before": [0], "load_after": [0]})
    assert "| fits | 10.0 | 7.0 | 1.43 | 10.0 | 11.0 | 5.0 | 1.82 | True |" in md
    assert "| cannot | 10.0 | 7.0 | 1.43 | 10.0 | 14.0 | 5.0 | 1.43 | True |" in md
    assert "Ceiling below the goal (unreachable by scheduling alone): cannot." in md


def test_default_list_is_the_ten_audits_of_the_scaling_goal():
    b = _bench()
    from dpcheck import registry
    assert len(b.ALGORITHM_AUDITS) == 10 and len(set(b.ALGORITHM_AUDITS)) == 10
    assert all(registry.find(name) is not None for name in b.ALGORITHM_AUDITS)
