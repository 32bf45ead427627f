"""scripts/compare_reports.py: two reports match iff ids, kinds, verdicts and measured figures are equal."""
from __future__ import annotations

import copy
import importlib.util
import json
import math
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "compare_reports.py"


def _module():
    spec = importlib.util.spec_from_file_location("compare_reports", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


REPORT = {"verdict": "pass", "checks": [
    {"id": "a.x", "kind": "privacy", "verdict": "pass", "measured": {"eps": 0.5, "ci": [0.1, math.nan]},
     "claim": {"statement": "s"}, "details": {"n": 1}, "reason": "r"},
    {"id": "b.y", "kind": "regret", "verdict": "inconclusive", "measured": {"slope": 0.25}, "claim": {},
     "details": {}, "reason": ""}]}


def _run(tmp_path, a, b):
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(json.dumps(a))
    pb.write_text(json.dumps(b))
    return _module().main([str(pa), str(pb)])


def test_same_figures_match_even_with_nan_and_new_claim_details(tmp_path):
    b = copy.deepcopy(REPORT)
    b["checks"][0]["claim"]["table"] = {"source": "paper"}
    b["checks"][0]["details"]["plots"] = []
    b["checks"][1]["reason"] = "other words"
    assert _run(tmp_path, REPORT, b) == 0


def test_any_changed_figure_verdict_or_order_is_reported(tmp_path, capsys):
    for change in (lambda r: r["checks"][0]["measured"].update(eps=0.5 + 1e-15),
                   lambda r: r["checks"][1].update(verdict="pass"),
                   lambda r: r["checks"].reverse(),
                   lambda r: r["checks"].pop(),
                   lambda r: r["checks"][0].update(kind="whitebox")):
        b = copy.deepcopy(REPORT)
        change(b)
        assert _run(tmp_path, REPORT, b) == 1
    assert "differs" in capsys.readouterr().out


def test_any_order_matches_moved_checks_but_not_changed_ones(tmp_path):
    b = copy.deepcopy(REPORT)
    b["checks"].reverse()
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(json.dumps(REPORT))
    pb.write_text(json.dumps(b))
    assert _module().main(["--any-order", str(pa), str(pb)]) == 0
    b["checks"][0]["measured"]["slope"] = 0.5
    pb.write_text(json.dumps(b))
    assert _module().main(["--any-order", str(pa), str(pb)]) == 1
    b = copy.deepcopy(REPORT)
    b["checks"].pop()
    pb.write_text(json.dumps(b))
    assert _module().main([str(pa), "--any-order", str(pb)]) == 1
