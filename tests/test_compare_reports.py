"""scripts/compare_reports.py: the before / after comparison of a refactored audit's reports."""
import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "compare_reports.py"


def _load():
    spec = importlib.util.spec_from_file_location("compare_reports", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _report(tmp_path, name, checks):
    p = tmp_path / name
    p.write_text(json.dumps({"checks": checks}))
    return str(p)


def test_identical_up_to_claim_and_reason_nan_equals_nan(tmp_path):
    cmp = _load()
    a = _report(tmp_path, "a.json", [{"id": "x", "verdict": "pass", "measured": {"s": float("nan"), "ci": [0.1, 0.2]},
                                      "reason": "r1", "claim": {}}])
    b = _report(tmp_path, "b.json", [{"id": "x", "verdict": "pass", "measured": {"s": float("nan"), "ci": [0.1, 0.2]},
                                      "reason": "r2", "claim": {"table": {}}}])
    assert cmp.main([a, b]) == 0


def test_a_changed_float_verdict_or_order_is_a_difference(tmp_path, capsys):
    cmp = _load()
    base = [{"id": "x", "verdict": "pass", "measured": {"s": 0.1}}, {"id": "y", "verdict": "pass", "measured": {}}]
    a = _report(tmp_path, "a.json", base)
    assert cmp.main([a, _report(tmp_path, "c.json", [dict(base[0], measured={"s": 0.10000000000000003}), base[1]])]) == 1
    assert cmp.main([a, _report(tmp_path, "d.json", [base[0], dict(base[1], verdict="fail")])]) == 1
    assert cmp.main([a, _report(tmp_path, "e.json", base[::-1])]) == 1
    assert cmp.main([a, _report(tmp_path, "f.json", [base[0], dict(base[1], measured={"n": 1})])]) == 1
    assert cmp.main([a, _report(tmp_path, "g.json", [dict(base[0], measured={"s": 1})])]) == 1   # int vs float, missing y
    assert "DIFFERENT" in capsys.readouterr().out
