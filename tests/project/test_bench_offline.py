"""benchmarks/bench_offline.py: the run writes its JSON with both algorithms, their baselines and ratios
(structure only; no assertion on wall-clock figures)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_offline.py"


def test_tiny_benchmark_writes_ratios(tmp_path):
    spec = importlib.util.spec_from_file_location("bench_offline", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path / "offline.json"
    assert mod.main(["--transitions", "4000", "--repeats", "1", "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["schema"] == "dpcheck.bench_offline/1" and res["goal_ratio"] == 3.0
    tab, lin = res["tabular"], res["linear"]
    assert tab["shape"]["transitions"] == 4000 and lin["shape"]["transitions"] == 4000
    assert {"bincount", "DP-APVI"} <= set(tab["seconds"]) and {"gram", "gather+gram", "DP-VAPVI"} <= set(lin["seconds"])
    # the Gram floor is the fastest of its three implementations
    assert lin["seconds"]["gram"] == min(lin["seconds"][k] for k in
                                         ("gram per-h matmul", "gram batched matmul", "gram einsum"))
    assert tab["ratio"]["DP-APVI / bincount"] == tab["seconds"]["DP-APVI"] / tab["seconds"]["bincount"]
    assert lin["ratio"]["DP-VAPVI / gram"] == lin["seconds"]["DP-VAPVI"] / lin["seconds"]["gram"]
    assert isinstance(tab["within_goal"], bool) and isinstance(lin["within_goal"], bool)
