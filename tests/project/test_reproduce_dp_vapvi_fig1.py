"""scripts/reproduce_dp_vapvi_fig1.py (Qiao & Wang 2022, Section 6 / Appendix F, S-1..S-3): structure of the written report on a
tiny configuration, and properties with known answers (DP-VAPVI at a huge rho is VAPVI up to negligible noise;
VAPVI's gap falls with K; the S-1..S-3 criteria on synthetic curves)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "reproduce_dp_vapvi_fig1.py"
TINY = ["--H", "4", "--K-grid", "5", "50", "500", "--rhos", "1", "1e9", "--runs", "6", "--tune-runs", "2",
        "--sweep-K", "500", "--sweep-runs", "2"]


def _module():
    spec = importlib.util.spec_from_file_location("reproduce_dp_vapvi_fig1", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _strict(const):
    raise ValueError(f"non-strict JSON constant {const}")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("fig1")
    assert _module().main(TINY + ["--out", str(out)]) == 0
    return out, json.loads((out / "results.json").read_text(), parse_constant=_strict)


@pytest.mark.slow
def test_tiny_run_writes_report_json_and_plot(tiny):
    out, res = tiny
    assert res["schema"] == "dpcheck.reproduction/1"
    meta = res["meta"]
    assert meta["command"] == "python scripts/reproduce_dp_vapvi_fig1.py " + " ".join(TINY + ["--out", str(out)])
    assert meta["K_grid"] == [5, 50, 500] and meta["runs"] == 6 and meta["cpu_seconds"] > 0
    assert meta["C"] in _module().C_GRID and meta["pevi_c"] in _module().PEVI_C_GRID
    labels = [r["label"] for r in res["results"]]
    assert labels == ["PEVI", "VAPVI", "VAPVI (theory additive)", "DP-VAPVI rho=1", "DP-VAPVI rho=1e+09",
                      "DP-VAPVI rho=1 privacy-correct",
                      "DP-VAPVI rho=1 ablation: variance step noise-free (g1, g2, K1 = E/2 I)",
                      "DP-VAPVI rho=1 ablation: regression step noise-free (g3, K2 = E/2 I)",
                      "PEVI c=1 (default constant)"]
    for r in res["results"]:
        m, lo, hi = (np.asarray(r[k]) for k in ("mean", "ci_low", "ci_high"))
        assert m.shape == (3,) and np.all(lo <= m) and np.all(m <= hi)
        assert np.asarray(r["gaps"]).shape == (6, 3) and np.all(np.asarray(r["gaps"]) >= -1e-9)
        assert np.allclose(np.asarray(r["gaps"]).mean(0), m, atol=1e-4)
    assert set(res["findings"]) == {"S-1", "S-2", "S-3"}
    assert all(isinstance(f["holds"], bool) for f in res["findings"].values())
    md = (out / "report.md").read_text()
    assert f"Regenerate (from the repository root): `{meta['command']}`" in md.splitlines()
    for lab in labels:
        assert f"| {lab} | " in md
    assert (out / "fig1.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_huge_budget_is_vapvi_and_the_gap_falls_with_K(tiny):
    _, res = tiny
    by = {r["label"]: r for r in res["results"]}
    vap = np.asarray(by["VAPVI"]["gaps"])
    # rho = 1e9: every noise std is ~1e-4 of the statistic scale -> VAPVI's policies, except where the noise
    # breaks VAPVI's exact ties (actions with equal estimates at K = 5): the mean gaps agree closely
    dp = np.asarray(by["DP-VAPVI rho=1e+09"]["gaps"])
    assert np.all(np.abs(dp.mean(0) - vap.mean(0)) <= 0.05)
    assert np.array_equal(dp[:, -1], vap[:, -1])
    assert vap[:, -1].mean() < vap[:, 0].mean()
    # rho = 1 is measurably worse than the noise-free run at K = 500 on the same datasets
    assert np.asarray(by["DP-VAPVI rho=1"]["gaps"])[:, -1].mean() > vap[:, -1].mean()
    assert res["findings"]["S-2"]["holds"]


def _synthetic(excess_at_end, pevi_level, runs=20, K=(5, 50, 500), rhos=(0.1, 1.0, 10.0)):
    rng = np.random.default_rng(0)
    vap = np.tile(np.array([4.0, 1.0, 0.1]), (runs, 1)) + 0.01 * rng.standard_normal((runs, len(K)))
    curves = {"VAPVI": vap, "PEVI": np.full((runs, len(K)), pevi_level)}
    for i, r in enumerate(rhos):
        excess = np.array([2.0, 1.0, excess_at_end]) / (1 + i)
        curves[f"DP-VAPVI rho={r:g}"] = vap + excess + 0.01 * rng.standard_normal((runs, len(K)))
    return curves, K, rhos


def test_criteria_accept_converging_curves_and_reject_flat_ones():
    ev = _module().evaluate
    curves, K, rhos = _synthetic(excess_at_end=0.05, pevi_level=10.0)
    f = ev(curves, K, 15.0, rhos)
    assert f["S-1"]["holds"] and f["S-2"]["holds"] and f["S-3"]["holds"]
    assert f["S-1"]["holds_at_budgets"] == ["0.1", "1", "10"]
    # an excess that does not shrink with K (and is not slight) fails S-1 at every budget
    curves, K, rhos = _synthetic(excess_at_end=5.0, pevi_level=0.0)
    f = ev(curves, K, 15.0, rhos)
    assert not f["S-1"]["holds"] and f["S-1"]["holds_at_budgets"] == []
    assert not f["S-3"]["holds"] and f["S-3"]["numbers"]["fraction_all_budgets"] == 0.0
    # a larger budget that is significantly worse breaks S-2
    curves, K, rhos = _synthetic(excess_at_end=0.05, pevi_level=10.0)
    curves["DP-VAPVI rho=10"] = curves["DP-VAPVI rho=0.1"] + 1.0
    assert not ev(curves, K, 15.0, rhos)["S-2"]["holds"]


def test_t_interval_known_answer():
    m, h = _module().t_interval(np.array([1.0, 2.0, 3.0]))
    assert m == pytest.approx(2.0)
    assert h == pytest.approx(4.302652729911275 / np.sqrt(3.0))     # t_{0.975, 2} * sd / sqrt(n)


def test_ablation_zeroes_exactly_the_named_noises():
    from dpcheck.algorithms.offline import DPVAPVI, appendix_f
    mod = _module()
    inst = appendix_f(np.random.default_rng(1), H=3)
    counts = inst.sample_counts(40, np.random.default_rng(2), runs=3, rewards=True)
    kw = dict(rho=1.0, C=0.1, Dpen=0.0, split=False)
    full = DPVAPVI(**kw).run(counts, inst.features, np.random.default_rng(3))
    same = mod.ablation(set(), **kw).run(counts, inst.features, np.random.default_rng(3))
    assert np.array_equal(full.policy, same.policy) and np.array_equal(full.values, same.values)
    part = mod.ablation({"g3", "N2"}, **kw).run(counts, inst.features, np.random.default_rng(3))
    assert not part.noise.g3.any() and not part.noise.N2.any()
    for k in ("g1", "g2", "N1"):                      # the other draws are the full run's, untouched
        assert np.array_equal(getattr(part.noise, k), getattr(full.noise, k))
    assert np.array_equal(part.statistics["sigma_matrix"], full.statistics["sigma_matrix"])
