import json
import pytest

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


# ------------------------------------------------------------------ qualified passes, layout, readable plots
from dpcheck.checks import qualify  # noqa: E402


def _qualified_report():
    plot = {"title": "t", "kind": "line", "series": [{"label": "a", "x": [1, 2, 3], "y": [1, 2, 3]}]}
    vac = invariant_check(id="assumption.optimism", violations=0, total=10, claim={"source": "C17"},
                          vacuous="Q~ = H everywhere")
    uninf = qualify(Check(id="regret.exponent", kind="regret", verdict="pass", claim={"source": "Thm"},
                          measured={"exponent": 0.1, "confidence": 0.95}, details={"plots": [plot, plot]},
                          reason="exponent 0.1 <= 0.6"), "uninformative", "the regret saturates")
    legacy = Check(id="regret.explicit_bound", kind="regret", verdict="pass", claim={}, measured={},
                   details={"vacuous": "the constant is huge"}, reason="held (vacuously: huge constant)")
    plain = Check(id="privacy.dataflow", kind="privacy", verdict="pass", claim={}, measured={},
                  details={"plots": [plot]}, reason="held")
    return json.loads(json.dumps(_report([vac, uninf, legacy, plain])))


def test_qualified_passes_are_their_own_state_in_every_view():
    rep = _qualified_report()
    assert rep["verdict"] == "pass" and rep["complete"] is True    # the JSON verdict stays pass (exit 0)
    assert [rpt.qualifier(c) for c in rep["checks"]] == ["vacuous", "uninformative", "vacuous", None]
    assert rep["checks"][0]["details"]["qualifier"] == "vacuous"
    table = rpt.summary_table(rep)
    assert "PASS (vacuous)" in table and "PASS (uninformative)" in table
    assert "3 of them pass only vacuously or uninformatively" in table
    md = rpt.to_markdown(rep)
    assert "| **pass (vacuous)** | `assumption.optimism`" in md and "pass (uninformative)" in md
    html = rpt.to_html(rep)
    assert html.count("<td class='v qualified'>") == 3 and html.count("<td class='v pass'>") == 1
    assert ".qualified{" in html          # a colour of its own
    from dpcheck.context import exit_code
    assert exit_code(rep) == 0
    # a qualifier never dresses up a non-pass
    bad = dict(rep["checks"][0], verdict="fail")
    assert rpt.qualifier(bad) is None and rpt.verdict_label(bad) == "fail"


def test_qualify_rejects_unknown_kinds():
    import pytest
    c = Check(id="x", kind="regret", verdict="pass", claim={}, measured={})
    with pytest.raises(ValueError):
        qualify(c, "meh", "why")


def test_html_first_screen_order_and_plots_rendered_once():
    rep = _qualified_report()
    html = rpt.to_html(rep)
    i_banner, i_table = html.index("class='banner"), html.index("<table>")
    i_gallery, i_checks = html.index("class='gallery'"), html.index("<details class='check'")
    assert i_banner < i_table < i_gallery < i_checks     # verdict, summary, plots, then the details
    assert html.count("<img ") == 3                      # three plot specs, each embedded once
    assert html.index("<img ") > i_gallery and html.rindex("<img ") < i_checks
    assert "<details class='check' id='c0'>" in html     # details collapsed (failing checks open)


def test_incomplete_report_views_say_so():
    ctx = AuditContext("t", AuditOptions())
    ctx.add(Check(id="a", kind="assumption", verdict="pass", claim={}, measured={}))
    rep = ctx.report(error="interrupted (SIGTERM)", status="interrupted")
    assert "INCOMPLETE (interrupted)" in rpt.to_html(rep) and "INCOMPLETE (interrupted)" in rpt.to_markdown(rep)
    import xml.etree.ElementTree as ET
    suite = ET.fromstring(rpt.to_junit(rep)).find("testsuite")
    assert suite.get("errors") == "1" and suite.find("testcase[@name='audit']/error") is not None
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props == {"run_id": rep["run_id"], "status": "interrupted", "complete": "false", "verdict": "inconclusive"}


def _bars(n, series=1):
    return {"title": "max |N~ - N| / E per run", "xlabel": "run", "ylabel": "ratio", "kind": "bar",
            "series": [{"label": f"s{j}", "x": list(range(n)), "y": [((7 * i) % n) / n for i in range(n)]}
                       for j in range(series)]}


def test_plot_plan_keeps_many_bars_readable():
    p300 = rpt.plot_plan(_bars(300))
    assert p300["kind"] == "profile" and p300["bars"] == 0 and p300["categories"] == 300
    assert rpt.plot_plan(_bars(rpt.MAX_BARS))["kind"] == "bar"
    assert rpt.plot_plan(_bars(rpt.MAX_BARS + 1))["kind"] == "profile"
    p30 = rpt.plot_plan(_bars(30, series=2))
    assert p30 == {"kind": "bar", "categories": 30, "bars": 60, "rotate": True}
    assert rpt.plot_plan({"kind": "line", "series": [{"y": list(range(300))}]})["kind"] == "line"


def test_300_bar_spec_renders_without_300_bars(monkeypatch):
    from matplotlib.axes import Axes
    calls = {"bar": 0, "step": 0}
    real_bar, real_step = Axes.bar, Axes.step

    def bar(self, x, *a, **k):
        calls["bar"] += len(x)
        return real_bar(self, x, *a, **k)

    def step(self, *a, **k):
        calls["step"] += 1
        return real_step(self, *a, **k)

    monkeypatch.setattr(Axes, "bar", bar)
    monkeypatch.setattr(Axes, "step", step)
    assert rpt._plot_png(_bars(300))
    assert calls == {"bar": 0, "step": 1}               # one sorted profile, no bars
    assert rpt._plot_png(_bars(12, series=2))
    assert calls["bar"] == 24                            # grouped bars when few


def test_plots_with_inf_and_nan_points_still_render():
    # what an all-inf mechanism produced: x stored as "inf", y with nulls (NaN) -- it crashed the HTML writer
    bad = {"title": "pair 0", "kind": "hist", "logy": True, "threshold": "inf",
           "series": [{"label": "D", "x": ["inf"] * 5 + [1.0, 2.0], "y": [None] * 5 + [0.5, 0.5]}]}
    empty = {"title": "all inf", "kind": "line", "series": [{"x": ["inf"] * 3, "y": [1, 2, 3]}]}
    broken = {"title": "nonsense", "kind": "line", "series": [{"x": [{"a": 1}], "y": [[1, 2]]}]}
    rep = json.loads(json.dumps(_report([Check(id="privacy.blackbox", kind="privacy", verdict="pass", claim={},
                                               measured={}, details={"plots": [bad, empty, broken]})])))
    html = rpt.to_html(rep)
    assert html.count("<img ") >= 1 and "privacy.blackbox" in html


@pytest.mark.parametrize("ys,narrow", [([1e-4, 1e-2, 1.0, 10.0], False), ([0.3, 0.5, 0.7], True)])
def test_log_axes_have_plain_labels_and_minor_ticks_only_when_narrow(ys, narrow):
    # plain "%g" labels (matplotlib's default typesets each in mathtext, a third of the plotting time);
    # a range of a decade or more drops the minor ticks, a narrower one keeps them labelled, so the axis
    # always carries numbers
    pytest.importorskip("matplotlib")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    spec = {"title": "t", "kind": "line", "logy": True,
            "series": [{"label": "a", "x": list(range(len(ys))), "y": ys}]}
    fig = rpt.plot_figure(spec)
    FigureCanvasAgg(fig).draw()
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.yaxis.get_majorticklabels() + ax.yaxis.get_minorticklabels()
              if t.get_text()]
    assert labels and not any("$" in t for t in labels)
    assert all(float(t) > 0 for t in labels)
    minor = [t.get_text() for t in ax.yaxis.get_minorticklabels() if t.get_text()]
    assert bool(minor) == narrow
    assert (len(ax.yaxis.get_minorticklocs()) > 0) == narrow
