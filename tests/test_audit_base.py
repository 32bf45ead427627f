"""dpcheck.audit: the claim table, the execution options handed whole, soften / vacuous, list --claims."""
import numpy as np
import pytest

from dpcheck import AuditTarget, Claim, registry
from dpcheck.audit import Audit, ClaimRow, ExecutionOptions
from dpcheck.checks import FAIL, INCONCLUSIVE, PASS, Check
from dpcheck.cli import main
from dpcheck.context import AuditContext, AuditOptions


def _check(id, verdict=PASS):
    return Check(id=id, kind="assumption", verdict=verdict, claim={"statement": "s"}, measured={"confidence": 1.0},
                 reason="r")


class _Two(Audit):
    name = "_audit_base_two"
    algorithm = "test"
    notion = "DP"
    summary = "nothing"
    uses = ("seed", "alpha", "samples", "workers", "backend", "scheduler", "cache_dir", "quick")
    claims = (ClaimRow("assumption.a", "assumption", "A holds", "Paper, Lemma 1", "run"),
              ClaimRow("privacy.blackbox*", "privacy", "eps-DP", "Paper, Theorem 2", "run"))

    def run(self):
        self.add(_check("assumption.a"))
        tgt = AuditTarget(name="lap", mechanism=lambda d, rng, n: rng.laplace(d, 1.0, n), pairs=[(0, 1)],
                          claim=Claim(epsilon=1.0))
        c, res = self.blackbox(tgt, id="privacy.blackbox.x", samples=self.exe.pick(4000, 2000))
        self.add(c)
        self.config["seen"] = {"samples": res.samples, "seed_a": self.int_seed("a")}


_Two.register()


def test_claim_rows_reach_the_report_and_list(tmp_path, capsys):
    assert main(["audit", "_audit_base_two", "--out", str(tmp_path), "--quiet", "--quick"]) == 0
    import json
    rep = json.loads((tmp_path / "_audit_base_two.json").read_text())
    ids = [c["id"] for c in rep["checks"]]
    assert ids == ["assumption.a", "privacy.blackbox.x"]
    assert rep["checks"][0]["claim"]["table"] == {"statement": "A holds", "source": "Paper, Lemma 1", "method": "run"}
    assert rep["checks"][1]["claim"]["table"]["source"] == "Paper, Theorem 2"   # a family row (trailing *)
    assert rep["config"]["seen"]["samples"] == 2000                                # --quick size through exe.pick
    capsys.readouterr()
    assert main(["list", "--claims", "_audit_base_two"]) == 0
    out = capsys.readouterr().out
    assert "assumption.a" in out and "Paper, Lemma 1" in out and "[run]" in out
    assert main(["list", "--claims", "nope"]) == 2


def test_a_check_outside_the_table_is_refused():
    class Bad(_Two):
        name = "_audit_base_bad"

        def run(self):
            self.add(_check("assumption.not_in_table"))
    ctx = AuditContext("_audit_base_bad", AuditOptions())
    with pytest.raises(ValueError, match="not in its claim table"):
        Bad(ctx).run()


def test_the_table_is_checked_at_registration():
    class Dup(_Two):
        name = "_audit_base_dup"
        claims = (ClaimRow("a.b", "assumption", "x", "y", "run"), ClaimRow("a.b", "assumption", "x", "y", "run"))
    with pytest.raises(ValueError, match="duplicate"):
        Dup.register()

    class NoMethod(_Two):
        name = "_audit_base_nomethod"
        claims = (ClaimRow("a.b", "assumption", "x", "y", "check_that_does_not_exist"),)
    with pytest.raises(ValueError, match="does not have"):
        NoMethod.register()
    with pytest.raises(ValueError, match="kind"):
        ClaimRow("a.b", "rates", "x", "y", "run")
    assert "_audit_base_dup" not in registry.load()


def test_execution_options_are_passed_whole():
    ctx = AuditContext("t", AuditOptions(seed=3, alpha=0.1, samples=500, workers=2, cache_dir="/tmp/c", quick=True))
    e = ExecutionOptions.from_context(ctx)
    assert (e.seed, e.alpha, e.samples, e.workers, e.cache_dir, e.quick) == (3, 0.1, 500, 2, "/tmp/c", True)
    assert e.parallel()["cache_dir"] == "/tmp/c" and e.parallel()["workers"] == 2
    assert e.pick(10, 1) == 1


def test_soften_and_vacuous():
    f = _check("x.y", FAIL)
    assert Audit.soften(f).verdict == INCONCLUSIVE and "practical mode" in Audit.soften(f).reason
    assert Audit.soften(f, practical=False).verdict == FAIL
    assert Audit.soften(_check("x.y")).verdict == PASS
    v = Audit.vacuous(_check("x.y"), "bonus saturated at H")
    assert v.verdict == PASS and v.details["qualifier"] == "vacuous"
    assert Audit.vacuous(f, "why").details.get("qualifier") is None      # a FAIL is never qualified away
    assert Audit.vacuous(_check("x.y"), None).details.get("qualifier") is None


def test_seeds_depend_only_on_the_seed_and_the_key():
    a = _Two(AuditContext("t", AuditOptions(seed=5)))
    b = _Two(AuditContext("t", AuditOptions(seed=5)))
    c = _Two(AuditContext("t", AuditOptions(seed=6)))
    assert a.int_seed("x", 1) == b.int_seed("x", 1) != c.int_seed("x", 1)
    assert a.int_seed("x", 1) != a.int_seed("x", 2)
    assert np.array_equal(a.rng("k").random(3), b.rng("k").random(3))


def test_defaults_are_declared_once_and_resolved_in_one_place():
    from dpcheck.audit import Defaults
    from dpcheck.errors import InputError

    class WithDefaults(_Two):
        name = "_audit_base_defaults"
        defaults = Defaults(epsilon=0.5, samples=(3000, 300), samples_for=(("privacy.blackbox.data", (900, 90)),))

    def audit(**kw):
        return WithDefaults(AuditContext("t", AuditOptions(**kw)))
    a = audit()
    assert a.epsilon == 0.5 and a.samples() == 3000 and a.samples("privacy.blackbox.data") == 900
    q = audit(quick=True)
    assert q.samples() == 300 and q.samples("privacy.blackbox.data") == 90 and q.samples("other") == 300
    g = audit(epsilon="2", samples=777, quick=True)            # the command line overrides every default
    assert g.epsilon == 2.0 and g.samples() == 777 and g.samples("privacy.blackbox.data") == 777
    assert _Two(AuditContext("t", AuditOptions())).epsilon is None     # nothing declared, nothing invented
    # a default is checked by the option layer's own parser
    for bad in (0, -1.0, float("inf"), True):
        with pytest.raises(InputError, match="epsilon"):
            Defaults(epsilon=bad)
    with pytest.raises(InputError, match="samples"):
        Defaults(samples=(10**6, 5))


def test_every_builtin_audit_declares_its_defaults_and_resolves_none_itself():
    """The epsilon / samples defaults live in each audit's Defaults: no audit module (or its library) falls
    back on a literal when --epsilon or --samples is absent, and none re-validates --epsilon."""
    import re
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    for f in sorted((root / "audits").rglob("*.py")):
        src = f.read_text()
        assert not re.search(r"epsilon is not None else \d", src), f
        assert not re.search(r"samples is not None else", src), f
        assert "--epsilon must" not in src, f
    for name in ("dp_ucbvi", "dp_nash_vi", "dp_apvi", "dp_vapvi", "private_gfa", "private_linopt_vi",
                 "central_privatizer", "local_privatizer", "offline_laplace_privatizer", "laplace_example"):
        cls = next(c for c in _audit_classes() if getattr(c, "name", None) == name)
        assert cls.defaults is not None and cls.defaults.samples is not None, name


def _audit_classes():
    registry.load()
    out, todo = [], [Audit]
    while todo:
        c = todo.pop()
        out.append(c)
        todo.extend(c.__subclasses__())
    return out


def test_the_black_box_sample_plan_is_one_function():
    """dpcheck.blackbox.sample_plan is what audit() spends, and what the plug-in search projects with."""
    from dpcheck.audits.lib import privatizers as pa
    from dpcheck.blackbox import audit, sample_plan
    tgt = AuditTarget(name="lap", mechanism=lambda d, rng, n: rng.laplace(d, 1.0, n), pairs=[(0, 1)],
                      claim=Claim(epsilon=1.0, delta=1e-3))
    res = audit(tgt, samples=4000, seed=1)
    plan = sample_plan(tgt.claim, 4000, 0.05, pairs=1)
    assert (res.selection_samples, res.certification_samples) == (plan.selection, plan.certification) == (1000, 3000)
    assert plan.alpha_bound == 0.05 * 0.5 / 2 and plan.alpha_profile > 0
    n_cert, a_b, _ = pa._search_plan(tgt.claim, 4000, 0.05)
    assert (n_cert, a_b) == (plan.certification, plan.alpha_bound)
    src = (__import__("pathlib").Path(pa.__file__)).read_text()
    assert "selection_fraction" not in src and "LB_ALPHA_SHARE" not in src
