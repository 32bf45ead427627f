"""The diffprivlib audit: every mechanism of diffprivlib.mechanisms covered, each at its documented
guarantee; a mechanism run above its claim is caught."""
import pytest

import dpcheck
from dpcheck.audits import diffprivlib_audit as dl


def test_every_mechanism_of_diffprivlib_is_audited_or_said_why_not():
    import diffprivlib.mechanisms as dm
    public = {n for n in dir(dm) if n[:1].isupper() and isinstance(getattr(dm, n), type)}
    audited = {m.name for m in dl.MECHANISMS}
    assert audited | set(dl.NOT_AUDITED) | set(dl.BASES) == public
    assert not audited & set(dl.NOT_AUDITED)
    assert [r.id for r in dl.DiffprivlibAudit.claims] == [f"privacy.{m.name}" for m in dl.MECHANISMS]


@pytest.mark.parametrize("m", dl.MECHANISMS, ids=lambda m: m.name)
def test_each_target_draws_valid_outputs_from_the_seed(m):
    import numpy as np
    t = dl.target(m, 1.0)
    a = t.sample(m.pair[0], np.random.default_rng(7), 50)
    b = t.sample(m.pair[0], np.random.default_rng(7), 50)
    assert len(a) == 50 and np.array_equal(a, b)          # every draw follows dpcheck's generator
    assert t.claim.delta == m.delta and t.claim.epsilon == m.epsilon(1.0)


def test_a_mechanism_run_above_its_claim_is_caught():
    # diffprivlib's Laplace at eps = 1, claimed at eps = 0.25: a 4x excess
    laplace = next(m for m in dl.MECHANISMS if m.name == "Laplace")
    res = dpcheck.audit(dl.target(laplace, 1.0, claim_epsilon=0.25), samples=5_000, seed=1)
    assert res.verdict == "fail" and res.epsilon_lower_bound > 0.25


@pytest.mark.slow
def test_quick_audit_passes_diffprivlib(tmp_path):
    r = dpcheck.run("diffprivlib", quick=True, seed=3)
    assert r.verdict == "pass", r.reason()
    assert len(r.checks) == len(dl.MECHANISMS) and r.family["tests"] == len(dl.MECHANISMS)


def test_the_docs_table_is_rendered_from_a_report():
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location("t", Path(__file__).resolve().parents[2] / "scripts" / "diffprivlib_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rep = {"verdict": "fail", "run_id": "r1", "options": {"seed": 0}, "family": {"alpha": 0.05, "tests": 2, "alpha_per_check": 0.025},
           "config": {"diffprivlib": "0.6.6", "epsilon": 1.0, "samples_per_side": 50000, "not_audited": dl.NOT_AUDITED},
           "checks": [{"id": "privacy.Laplace", "verdict": "pass", "details": {},
                       "measured": {"epsilon_claimed": 1.0, "delta": 0.0, "epsilon_lower_bound": 0.93, "tightness": 0.93, "power": 1.05},
                       "claim": {"table": {"statement": "... on neighbouring inputs 0.0 vs 1.0"}}},
                      {"id": "privacy.Snapping", "verdict": "fail", "details": {},
                       "measured": {"epsilon_claimed": 1.0, "delta": 0.0, "epsilon_lower_bound": 1.7, "tightness": 1.7, "power": 1.05},
                       "claim": {"table": {"statement": "... on neighbouring inputs 0.0 vs 1.0"}}}]}
    text = mod.render(rep)
    assert "| Laplace | PASS | (1, 0) | 0.93 | 0.93 | 1.05 | 0.0 vs 1.0 |" in text
    assert "| Snapping | FAIL | (1, 0) | 1.7 |" in text and "Overall verdict: **FAIL**" in text
    assert "`Vector`" in text
