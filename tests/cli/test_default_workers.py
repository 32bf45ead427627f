"""The command line's default --workers: every CPU the process may use ('auto'), or $DPCHECK_WORKERS. Results
are identical for any number of workers (tests/core/test_parallel.py), so the default only changes the time."""
import json

import pytest

import dpcheck
from dpcheck.cli import main
from dpcheck.errors import InputError
from dpcheck.options import cpu_limit, parse_workers


def _workers(tmp_path, *args):
    out = tmp_path / "r"
    code = main(["audit", "laplace_example", "--quick", "--seed", "1", "--out", str(out), "--quiet", *args])
    return code, json.loads((out / "laplace_example.json").read_text())["options"]["workers"]


def test_auto_is_every_usable_cpu():
    assert parse_workers("auto") == parse_workers(" AUTO ") == cpu_limit()
    assert parse_workers("3") == 3
    for bad in ("0", "-1", "two", "1.5"):
        with pytest.raises(InputError, match="--workers"):
            parse_workers(bad)


@pytest.mark.slow
def test_the_command_line_uses_every_cpu_unless_told(tmp_path, monkeypatch):
    monkeypatch.delenv("DPCHECK_WORKERS", raising=False)
    assert _workers(tmp_path) == (0, cpu_limit())
    assert _workers(tmp_path, "--workers", "1") == (0, 1)
    assert _workers(tmp_path, "--workers", "auto") == (0, cpu_limit())
    monkeypatch.setenv("DPCHECK_WORKERS", "1")
    assert _workers(tmp_path) == (0, 1)


def test_a_bad_environment_value_is_bad_input(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DPCHECK_WORKERS", "lots")
    assert main(["audit", "laplace_example", "--quick", "--out", str(tmp_path / "r"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "$DPCHECK_WORKERS" in err and "Traceback" not in err


def test_the_default_never_conflicts_with_options_that_need_one_process(tmp_path, monkeypatch):
    """--sequential draws in-process: the default leaves it at 1 worker instead of refusing the run."""
    monkeypatch.delenv("DPCHECK_WORKERS", raising=False)
    (tmp_path / "t.py").write_text(
        "from dpcheck import AuditTarget, Claim\nimport numpy as np\n"
        "def m(x, rng, n):\n    return x + rng.laplace(size=n)\n"
        "t = AuditTarget('lap', m, [(0, 1)], Claim(epsilon=1.0))\n")
    out = tmp_path / "r"
    assert main(["audit", f"{tmp_path / 't.py'}:t", "--sequential", "--samples", "2000", "--out", str(out),
                 "--quiet"]) == 0
    assert json.loads(next(out.glob("*.json")).read_text())["options"]["workers"] == 1


def test_the_python_api_keeps_one_worker_unless_asked(monkeypatch):
    """A library call does not start processes on its own: dpcheck.run's default stays 1."""
    monkeypatch.delenv("DPCHECK_WORKERS", raising=False)
    r = dpcheck.run("laplace_example", quick=True, seed=1)
    assert r.data["options"]["workers"] == 1
