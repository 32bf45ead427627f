import json

from hypothesis import given, strategies as st

from dpcheck.checks import Check, clopper_pearson, combine, probability_check, invariant_check
from dpcheck.context import AuditContext, AuditOptions
from dpcheck import report as rpt


def _report(checks):
    ctx = AuditContext("t", AuditOptions())
    for c in checks:
        ctx.add(c)
    return ctx.report()


def test_views_render_from_json_only(tmp_path):
    plot = {"title": "regret", "kind": "line", "logx": True, "series": [
        {"label": "a", "x": [1, 10, 100], "y": [1, 3, 10], "lo": [0.5, 2, 8], "hi": [1.5, 4, 12]}]}
    c = Check(id="regret.exponent", kind="regret", verdict="pass", claim={"source": "Thm 1"},
              measured={"exponent": 0.5, "confidence": 0.95}, details={"plots": [plot], "note": "x"},
              reason="fine <&>")
    rep = json.loads(json.dumps(_report([c])))
    html = rpt.to_html(rep)
    assert "data:image/png;base64," in html and "fine &lt;&amp;&gt;" in html
    md = rpt.to_markdown(rep)
    assert "`regret.exponent`" in md and "Thm 1" in md
    xml = rpt.to_junit(rep)
    import xml.etree.ElementTree as ET
    root = ET.fromstring(xml)
    assert root.find("testsuite").get("tests") == "1"


def test_verdict_combination():
    assert combine(["pass", "pass"]) == "pass"
    assert combine(["pass", "inconclusive"]) == "inconclusive"
    assert combine(["inconclusive", "fail"]) == "fail"
    assert combine([]) == "inconclusive"


def test_probability_check_exact_binomial():
    # 0 failures in 100 runs: the 95% upper bound is about 0.036, below beta = 0.1
    assert probability_check(id="x", failures=0, runs=100, beta=0.1, alpha=0.05, claim={}).verdict == "pass"
    assert probability_check(id="x", failures=40, runs=100, beta=0.1, alpha=0.05, claim={}).verdict == "fail"
    assert probability_check(id="x", failures=1, runs=10, beta=0.1, alpha=0.05, claim={}).verdict == "inconclusive"


def test_invariant_check_reports_vacuity():
    c = invariant_check(id="assumption.optimism", violations=0, total=10, claim={}, vacuous="Q~ = H everywhere")
    assert c.verdict == "pass" and "vacuously" in c.reason and c.details["vacuous"]
    assert invariant_check(id="x", violations=1, total=10, claim={}).verdict == "fail"


@given(n=st.integers(1, 500), data=st.data())
def test_clopper_pearson_brackets_the_mle(n, data):
    k = data.draw(st.integers(0, n))
    lo, hi = clopper_pearson(k, n, 0.05)
    assert 0 <= lo <= k / n <= hi <= 1
    assert clopper_pearson(k, n, 0.05, side="lower") >= lo - 1e-12
