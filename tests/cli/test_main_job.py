"""The README's first command, end to end: `dpcheck audit dp_nash_vi` on built-in defaults.

This is what a newcomer and every CI pipeline runs first; it must pass (exit 0) on the reference
implementation and leave the JSON, Markdown, HTML (with plots) and JUnit reports behind.
"""
import json
import os
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_main_job_passes_on_defaults_and_writes_reports(tmp_path):
    from dpcheck.options import cpu_limit
    env = {k: v for k, v in os.environ.items() if k != "DPCHECK_WORKERS"}      # the true default: every CPU
    out = subprocess.run([sys.executable, "-m", "dpcheck", "audit", "dp_nash_vi", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    rep = json.loads((tmp_path / "dp_nash_vi.json").read_text())
    assert rep["schema"] == "dpcheck.report/1" and rep["verdict"] == "pass" and rep["complete"]
    assert rep["options"]["workers"] == cpu_limit()
    kinds = {c["kind"] for c in rep["checks"]}
    assert kinds == {"privacy", "whitebox", "assumption", "regret"}
    for c in rep["checks"]:
        assert c["verdict"] == "pass", c["id"]
        assert "confidence" in c["measured"], c["id"]
        if c["kind"] == "privacy":
            assert {"epsilon_lower_bound", "samples"} <= set(c["measured"]), c["id"]
    html = (tmp_path / "dp_nash_vi.html").read_text()
    assert html.count("data:image/png;base64,") >= 5
    assert (tmp_path / "dp_nash_vi.md").exists() and (tmp_path / "dp_nash_vi.junit.xml").exists()
    assert "overall: PASS" in out.stdout
