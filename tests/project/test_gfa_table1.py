"""scripts/reproduce_private_gfa_table1.py (He & Zhou 2026, Appendix D, Table 1; docs/private_gfa.md): the plateau metric on
curves with known answers, the E1-E4 evaluation on the paper's own numbers, and a tiny end-to-end run."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "reproduce_private_gfa_table1.py"


@pytest.fixture(scope="module")
def table1():
    spec = importlib.util.spec_from_file_location("reproduce_private_gfa_table1", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_plateau_known_answers(table1):
    K = 100
    step = np.cumsum(np.r_[np.ones(10), np.zeros(K - 10)])        # regret 1 for 10 episodes, then 0
    assert table1.plateau(step) == 10                                # Reg(10) = 10 >= 0.95 * 10, Reg(9) = 9 < 9.5
    linear = np.cumsum(np.ones(K))
    assert table1.plateau(linear) == 95                              # first k with k >= 95
    assert table1.plateau(np.zeros(K)) == 1                          # no regret: plateau at once
    both = np.stack([step, linear])
    assert table1.plateau(both).tolist() == [10, 95]                 # batched over runs


def test_plateau_matches_gfarun(table1):
    """The script's metric is GFARun.plateau_episode / per_run_plateaus (Appendix D, Table 1) on the same run."""
    from dpcheck.algorithms.gfa import appendix_d, poc_default
    inst = appendix_d("easy", H=2)
    res = poc_default("non_private_no_batch", inst.fclass, 30).run(inst.mdp, 30, np.random.default_rng(3), runs=5,
                                                                   record=False)
    assert table1.plateau(res.cumulative_regret.mean(axis=0)) == res.plateau_episode()
    assert table1.plateau(res.cumulative_regret).tolist() == res.per_run_plateaus().tolist()


def _grid_from(table1, numbers, spread=0.0):
    """A grid whose plateaus are ``numbers`` and whose bootstrap samples are the plateau +- spread."""
    grid, rng = {}, np.random.default_rng(0)
    for kind in table1.KINDS:
        grid[kind] = {}
        for m in table1.METHODS:
            v = numbers[kind][m]
            grid[kind][m] = {"plateau": v, "plateau_ci": [v - spread, v + spread],
                             "_boot": v + spread * rng.uniform(-1, 1, 400)}
    return grid


def test_evaluate_on_the_papers_numbers(table1):
    """Table 1 itself satisfies E1-E3 and matches E4 in all 8 cells."""
    f = table1.evaluate(_grid_from(table1, table1.PAPER))
    assert f["E1"]["status"] == f["E2"]["status"] == f["E3"]["status"] == "resolved"
    assert f["E4"]["cells_inside_ci"] == 8 and f["E4"]["status"] == "matches"
    # hard: batching gap 3 < privacy gap 53
    assert f["E3"]["differences"]["hard"]["batching_gap"] == 3
    assert f["E3"]["differences"]["hard"]["privacy_gap"] == 53


def test_evaluate_detects_violations(table1):
    nums = json.loads(json.dumps(table1.PAPER))
    nums["easy"]["private_eps_8"], nums["easy"]["private_eps_5"] = 127, 37       # eps=5 faster than eps=8
    f = table1.evaluate(_grid_from(table1, nums))
    assert f["E1"]["status"] == "fails" and f["E1"]["per_instance"] == {"easy": "fails", "hard": "resolved"}
    assert f["E2"]["per_method"]["private_eps_8"] == "fails"                   # hard 87 < easy 127
    assert f["E2"]["per_method"]["private_eps_5"] == "resolved"                # hard 218 > easy 37
    assert f["E4"]["cells_inside_ci"] == 6
    # overlapping intervals: the ordering holds on the point estimates but is not resolved
    f = table1.evaluate(_grid_from(table1, table1.PAPER, spread=20.0))
    assert f["E1"]["status"] == "holds"


@pytest.mark.slow
def test_tiny_end_to_end(table1, tmp_path):
    """H = 2 (27 hypotheses), K = 40, 4 runs: structure of results.json / report.md, and determinism."""
    argv = ["--H", "2", "--K", "40", "--runs", "4", "--boot", "50", "--no-robustness", "--seed", "5"]
    assert table1.main(argv + ["--out", str(tmp_path / "a")]) == 0
    assert table1.main(argv + ["--out", str(tmp_path / "b")]) == 0
    a = json.loads((tmp_path / "a" / "results.json").read_text())
    b = json.loads((tmp_path / "b" / "results.json").read_text())
    for res in (a, b):                                                           # timings differ, figures not
        for cells in res["table"].values():
            for c in cells.values():
                c.pop("cpu_seconds")
    assert a["table"] == b["table"] and a["findings"] == b["findings"]            # seeds fixed
    assert a["meta"]["class_size"] == 27 and a["meta"]["K"] == 40
    assert set(a["findings"]) == {"E1", "E2", "E3", "E4"}
    for kind in ("easy", "hard"):
        assert set(a["table"][kind]) == set(table1.METHODS)
        for m, c in a["table"][kind].items():
            assert 1 <= c["plateau"] <= 40 and c["plateau_ci"][0] <= c["plateau_ci"][1]
            assert len(c["per_run"]) == 4 and all(1 <= p <= 40 for p in c["per_run"])
            assert c["per_run_mean"] == pytest.approx(np.mean(c["per_run"]))
        assert a["table"][kind]["non_private_no_batch"]["B"] == 1
        assert a["table"][kind]["non_private_batched"]["B"] == 7                  # ceil(sqrt(40))
        assert a["table"][kind]["private_eps_8"]["B"] == 4                        # ceil(40^0.6 / 8^0.4)
    report = (tmp_path / "a" / "report.md").read_text()
    lines = report.splitlines()
    assert lines[2].startswith("| claim or cell | paper | ours | holds? | why |")   # the report opens with its table
    assert any(x.startswith("Regenerate: `python scripts/reproduce_private_gfa_table1.py --H 2") for x in lines)
    assert "| private eps=5 |" in report and "**E3**" in report
