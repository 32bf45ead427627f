"""dpcheck.sidework: a run with more than one worker renders the HTML's plots in a side process as the
checks arrive. The report must be the one the main process renders (byte for byte), whatever the side
process does: fail to start, raise, or never be used."""
import json
from concurrent.futures import Future

import pytest

from dpcheck import AuditTarget, Claim, api, report as rpt
from dpcheck.sidework import PlotPrefetch, SideProcess, plot_specs


def _report_with_plots() -> dict:
    """A finished report of a small black-box audit (its checks carry a histogram plot)."""
    target = AuditTarget("lap", lambda d, rng, n: d + rng.laplace(0.0, 1.0, n), [(0, 1)], Claim(epsilon=1.0))
    return api.run(target, samples=4000, seed=1).data


def test_side_process_renders_the_png_the_main_process_renders():
    rep = _report_with_plots()
    specs = list(plot_specs(rep))
    assert specs, "the black-box check carries a plot"
    pf = PlotPrefetch()
    try:
        pf.prefetch(rep)
        assert all(f is not None for f in pf.futures.values())          # submitted to the side process
        assert [pf.png(s) for s in specs] == [rpt._plot_png(s) for s in specs]
        assert rpt.to_html(rep, png=pf.png) == rpt.to_html(rep)
    finally:
        pf.close()
    assert pf.side._executor is None


def test_a_side_process_that_cannot_start_leaves_the_rendering_to_the_main_process(monkeypatch):
    import concurrent.futures

    def refuse(*a, **k):
        raise OSError("no processes here")
    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", refuse)
    rep = _report_with_plots()
    pf = PlotPrefetch()
    pf.prefetch(rep)
    assert pf.side._broken and all(f is None for f in pf.futures.values())
    assert rpt.to_html(rep, png=pf.png) == rpt.to_html(rep)
    pf.close()


def test_a_side_result_that_raises_is_rendered_again_here():
    rep = _report_with_plots()
    spec = next(plot_specs(rep))

    class Failing(SideProcess):
        def submit(self, fn, *args):
            f = Future()
            f.set_exception(RuntimeError("the side process died"))
            return f
    pf = PlotPrefetch(Failing())
    pf.prefetch(rep)
    assert pf.png(spec) == rpt._plot_png(spec)


def test_writer_prefetches_while_streaming_and_closes_at_finish(tmp_path):
    rep = _report_with_plots()
    calls = []

    class Recording(SideProcess):
        def submit(self, fn, *args):
            calls.append(args[0]["title"] if isinstance(args[0], dict) else None)
            f = Future()
            f.set_result(fn(*args))
            return f

        def close(self):
            calls.append("closed")
    running = dict(rep, status="running", complete=False, verdict="inconclusive")
    w = rpt.ReportWriter(tmp_path, "lap", plots=PlotPrefetch(Recording()))
    w.begin(running)
    n = len(list(plot_specs(rep)))
    assert len(calls) == n                                   # each plot submitted once, when streamed
    w.stream(running)
    assert len(calls) == n                                   # not twice
    paths = w.finish(rep)
    assert calls[-1] == "closed"
    plain = tmp_path / "plain"
    rpt.write_all(rep, plain, stem="lap")
    assert paths["html"].read_text() == (plain / "lap.html").read_text()


@pytest.mark.slow
def test_a_two_worker_run_writes_the_html_dpcheck_report_renders(tmp_path):
    """End to end: the HTML of a --workers 2 run (plots from the side process) is byte for byte the one
    `dpcheck report` renders from its JSON in one process."""
    from dpcheck.cli import main
    out = tmp_path / "run"
    assert main(["audit", "laplace_example", "--quick", "--samples", "20000", "--workers", "2",
                 "--force-workers", "--out", str(out), "--quiet"]) == 0
    html_run = (out / "laplace_example.html").read_text()
    again = tmp_path / "again"
    again.mkdir()
    (again / "laplace_example.json").write_text((out / "laplace_example.json").read_text())
    assert main(["report", str(again / "laplace_example.json")]) == 0
    assert (again / "laplace_example.html").read_text() == html_run
    assert "data:image/png;base64" in html_run
    assert json.loads((out / "laplace_example.json").read_text())["complete"] is True


def test_a_side_process_that_never_delivers_holds_the_report_back_at_most_the_wait(monkeypatch):
    rep = _report_with_plots()

    class Hanging(SideProcess):
        def submit(self, fn, *args):
            return Future()                                   # never completes
    pf = PlotPrefetch(Hanging())
    monkeypatch.setattr(PlotPrefetch, "WAIT", 0.2)
    pf.prefetch(rep)
    assert rpt.to_html(rep, png=pf.png) == rpt.to_html(rep)
